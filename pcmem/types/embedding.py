"""Embedding values: the profile that names a vector space."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EmbeddingProfile:
    """Identifies a vector space. Vectors are only comparable when two profiles are equal."""

    model_id: str
    dimension: int
    normalized: bool

    def describe(self) -> str:
        return f"{self.model_id} ({self.dimension}d{', normalised' if self.normalized else ''})"
