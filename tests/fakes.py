"""Test doubles and small fixtures' helpers shared by the test packages (import them: ``from fakes import ...``).

The fixtures themselves are in conftest.py; a test module imports from here, never from a conftest.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pcmem.testing import HashEmbedder


class TickingClock:
    """A deterministic clock: each call is one second after the previous one."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def TextHashEmbedder(dimension: int = 16, model_id: str = "test/hash") -> HashEmbedder:  # noqa: N802 - a class once
    """Deterministic unit vectors from the whole text's hash (the embedder is not what these tests are about)."""
    return HashEmbedder(model_id, dimension, by="text")


@contextlib.contextmanager
def read_only_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``path`` read-only (mode 0400) for the block, then writable again. Root ignores file modes, so there pcmem
    is made to see the file as another user would."""
    from pcmem.store.duckdb import files

    os.chmod(path, 0o400)
    if os.access(path, os.W_OK):
        monkeypatch.setattr(files, "writable", lambda _path: False)
    try:
        yield
    finally:
        os.chmod(path, 0o600)


def locomo_file(path):
    """A tiny locomo10.json-shaped file (one conversation, malformed evidence ids on purpose) at ``path``."""
    conversation = {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a beagle called Biscuit last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started pottery classes on Tuesdays."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Look at this.", "blip_caption": "a photo of a dog"},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery teacher moved the class to Thursdays."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit learned to sit yesterday."},
        ],
    }
    qa = [
        {"question": "What is the name of Ana's dog?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
        {"question": "When are Ben's pottery classes now?", "answer": "Thursdays", "evidence": ["D2:1; D1:2"],
         "category": 2},
        {"question": "What did Biscuit learn?", "answer": "to sit", "evidence": ["D:2:2", "D9:9"], "category": 1},
        {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
    ]
    path.write_text(json.dumps([{"sample_id": "t-1", "conversation": conversation, "qa": qa}]))
    return path
