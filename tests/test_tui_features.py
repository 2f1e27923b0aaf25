# ruff: noqa: F811 - the fixtures of test_tui are imported, and tests take them by name
"""What a lazygit/k9s user looks for in the TUI (issue #32): the embedder loading in the background, forget with a
confirmation, search across scopes with filters, comparing any two versions, the Remember dialog's id, metadata and
upsert, scrolling the entry text, ``$EDITOR``, search history.

Real stores (the seeded template of ``test_tui``), Textual's pilot; no timings.
"""

from __future__ import annotations

import threading

from test_tui import (  # noqa: F401 - fixtures used by name
    SIZE,
    FrozenClock,
    _no_model_from_the_environment,
    _status_bar_clock,
    app,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    runtime,
    search,
    seeded_template,
    settle,
    status,
    store_path,
    text_of,
)

import pcmem
from pcmem.testing import HashEmbedder
from pcmem_tui.app import make_app
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.widgets import StoreBar


class GatedEmbedder(HashEmbedder):
    """A model that takes as long as the test says: ``embed_query`` waits for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.queries: list[str] = []

    def embed_query(self, text: str):  # noqa: ANN201 - the port's signature
        self.gate.wait(30)
        self.queries.append(text)
        return super().embed_query(text)


def bar(app) -> str:  # noqa: ANN001
    return str(app.screen.query_one(StoreBar).render())


# --- 1. the embedder loads in the background at start-up -----------------------------------------------------------


async def test_the_embedder_loads_in_the_background_at_start_up_and_the_status_bar_says_so(tmp_path):
    embedder = GatedEmbedder()
    with pcmem.open_sync(tmp_path / "m.duckdb", embedder=embedder, clock=FrozenClock()) as runtime:
        runtime.memory.for_scope("notes").remember("Buy oolong tea for Marco.")
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            try:
                while not isinstance(app.screen, ScopesScreen) or not app.screen.query_one("#scopes").row_count:
                    await pilot.pause(0.05)
                assert f"loading {embedder.profile.describe()}…" in bar(app)  # browsing works meanwhile
            finally:
                embedder.gate.set()
            await settle(pilot)
            assert embedder.queries == ["warm up"]  # loaded before any search asked for it
            assert "loading" not in bar(app)


class BrokenEmbedder(HashEmbedder):
    def embed_query(self, text: str):  # noqa: ANN201
        raise pcmem.EmbeddingError("cannot load the embedding model from /nowhere")


async def test_an_embedder_that_cannot_load_is_said_once_in_the_status_bar(tmp_path):
    with pcmem.open_sync(tmp_path / "m.duckdb", embedder=BrokenEmbedder(), clock=FrozenClock()) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=(160, 30)) as pilot:
            await settle(pilot)
            assert "⚠ embedder not loaded (cannot load the embedding model from /nowhere)" in bar(app)
