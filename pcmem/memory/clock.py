"""The clock a store's revisions are stamped with: a module of its own so that ``pcmem.open_async``'s signature can
name the default without importing the Memory service (see :mod:`pcmem.compose.async_runtime`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)
