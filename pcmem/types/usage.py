"""Portable usage accounting for model calls."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Requests made and tokens read and written by a model (summed over calls)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        result = cls()
        for usage in usages:
            result = result + usage
        return result
