"""Writing LoCoMo conversations into a store through the public API (one scope per conversation, one entry per
dialog turn, entry id = dialog id), and what that costs against the bare embedder on the same texts."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pcmem.compose.runtime import SyncRuntime
from pcmem.types.memory import NewEntry, RememberRequest
from pcmem.types.progress import Progress
from pcmem_bench.locomo_data import Conversation

ALONE_SAMPLE = 600  # texts the bare embedder embeds for the ingest ratio (evenly spread over what was written)


def ingest(runtime: SyncRuntime, conversations: Sequence[Conversation], progress: Progress | None = None) -> float | None:
    """Write each conversation into its scope (skipped when already there); returns entries per second written
    (None when everything was already there)."""
    return ingest_measured(runtime, conversations, progress)["ingest_entries_per_s"]


def ingest_measured(runtime: SyncRuntime, conversations: Sequence[Conversation], progress: Progress | None = None,
                    alone_sample: int = 0) -> dict[str, Any]:
    """:func:`ingest`, then (``alone_sample`` > 0) the runtime's bare embedder on up to that many of the written texts,
    evenly spread: entries/s of both and their ratio (ingest ÷ embedder alone; 1.0 means pcmem adds nothing)."""
    written: list[str] = []
    if alone_sample > 0 and runtime.embedder is not None:
        runtime.embedder.embed_query("warm up")  # load the model first: neither rate includes loading it
    started = time.perf_counter()
    for done, conversation in enumerate(conversations, start=1):
        memory = runtime.memory.for_scope(conversation.scope)
        if memory.head() is None:
            entries = tuple(
                NewEntry(entry_id=turn.dia_id, kind="dialog-turn", text=turn.entry_text(),
                         metadata={"dia_id": turn.dia_id, "session": turn.session, "date_time": turn.date_time})
                for turn in conversation.turns if turn.text or turn.caption
            )
            memory.remember(RememberRequest(entries=entries, expected_revision=0))
            written += [entry.text for entry in entries]
        if progress:
            progress(done, len(conversations))
    elapsed = time.perf_counter() - started
    out: dict[str, Any] = {"ingest_entries": len(written),
                           "ingest_entries_per_s": len(written) / elapsed if written else None}
    if written and alone_sample > 0 and runtime.embedder is not None:
        step = max(1, len(written) // alone_sample)
        sample = written[::step][:alone_sample]
        started = time.perf_counter()
        runtime.embedder.embed_documents(sample)
        alone = len(sample) / (time.perf_counter() - started)
        out.update(embedder_alone_texts=len(sample), embedder_alone_entries_per_s=alone,
                   ratio_ingest_vs_embedder=out["ingest_entries_per_s"] / alone)
    return out
