"""``?``: every key of every screen, read from the screens' own BINDINGS so it cannot go stale."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.screens.trace import TraceScreen

INTRO = (
    "pcmem keeps every revision: browsing never changes the store; remember, retire and reactivate write a new "
    "revision (retire and reactivate ask first). Long work runs in the background; errors show in the status line."
)
KEY_WIDTH = 8


TABLE_KEYS = [Binding("j,down", "down", "Next row"), Binding("k,up", "up", "Previous row"),
              Binding("g,home", "first", "First row"), Binding("G,end", "last", "Last row"),
              Binding("pageup,pagedown", "page", "Page up/down"),
              Binding("ctrl+f,space", "page", "Page down"), Binding("ctrl+b", "page", "Page up"),
              Binding("ctrl+d,ctrl+u", "half_page", "Half a page down/up"),
              Binding("slash", "filter", "Filter the rows shown (enter keeps it; esc clears it)"),
              Binding("colon", "jump", "Jump to a row number, or the next row holding a text")]


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it was opened from first, then the ones that work everywhere, then the others."""

    BINDINGS = [Binding("escape,question_mark,q,f1", "close", "Close")]

    def __init__(self, current: type | None = None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="help-box"):
            yield Static(Text(INTRO), id="help-intro")
            yield Static(self._keys(), id="help-keys")

    def _keys(self) -> Text:
        screens: list[tuple[str, type[Screen]]] = [("scopes", ScopesScreen), ("entries", EntriesScreen), ("entry", EntryScreen),
                   ("search", SearchScreen), ("trace", TraceScreen)]
        here = [(f"this screen: {title}", screen.BINDINGS) for title, screen in screens if screen is self.current]
        others = [(title, screen.BINDINGS) for title, screen in screens if screen is not self.current]
        everywhere = [*self.app.BINDINGS, Binding("escape", "back", "One layer back: filter, scrolling, work, screen"),
                      *TABLE_KEYS]
        sections = [*here, ("everywhere (lists: j/k, g/G, Home/End, / filter, : jump)", everywhere), *others]
        text = Text()
        for title, bindings in sections:
            text.append(f"{title}\n", style="bold underline")
            text.append_text(self._lines(bindings))
        return text

    def _lines(self, bindings: Iterable[BindingType]) -> Text:
        lines = Text()
        for binding in Binding.make_bindings(bindings):
            lines.append(f"{self.app.get_key_display(binding):>{KEY_WIDTH}}  ", style="bold cyan")
            lines.append(f"{binding.description or binding.action}\n")
        return lines

    def action_close(self) -> None:
        self.dismiss(None)
