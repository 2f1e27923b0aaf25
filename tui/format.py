"""Small pure formatters. Entry texts, ids and scopes are user data: they become ``Text``, never markup."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text

from pcmem import Citation, MemoryHit, SearchPage


def preview(text: str, width: int, style: str = "") -> Text:
    """One line of at most ``width`` terminal cells (CJK takes two): whitespace collapsed, an ellipsis when cut."""
    line = Text(" ".join(text.split()), style=style, no_wrap=True)
    line.truncate(width, overflow="ellipsis")
    return line


def one_line(text: str, style: str = "") -> Text:
    """The text on one line, whitespace collapsed, uncut: a list table cuts it to its column when it draws it."""
    return Text(" ".join(text.split()), style=style, no_wrap=True, end="")


def when(moment: datetime) -> str:
    """Store times are UTC; shown as UTC so every terminal (and every snapshot) reads the same."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def plain(value: object, style: str = "") -> Text:
    return Text(str(value), style=style)


def hit_detail(hit: MemoryHit, width: int = 76, why: str = "") -> Text:
    """A hit's citation first, on lines of its own so it can be read and copied whole, then why it is where it is
    (each channel's rank and measure), then its text: the box is a few lines high, and a long text below the
    citation cut off its ``ver_…`` part, the part one copies."""
    return Text.assemble(citation_text(hit.citation, width), "\n", (f"{why}\n", "dim") if why else "", hit.text)


def citation_text(citation: Citation, width: int) -> Text:
    """The citation on one line when it fits, else broken after its ``/`` separators, never inside an id."""
    whole = str(citation)
    if len(whole) <= width:
        return Text(whole, style="cyan", no_wrap=True)
    parts = [f"{citation.artifact_id}@{citation.revision}/", f"{citation.entry_id}/", citation.entry_version_id]
    lines, line = [], ""
    for part in parts:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return Text("\n".join(lines), style="cyan", no_wrap=True, overflow="ellipsis")



def duration(ms: float) -> str:
    """A time a person reads at a glance: ``420 ms``, ``12.3 s``, ``4 min 06 s`` (a rerank under load can take
    minutes, and ``latency 246469 ms`` had to be counted digit by digit)."""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def state_text(state: str) -> Text:
    return Text(state, style="dim" if state == "retired" else "green")


def count_cell(number: int) -> Text:
    """A number in a table column, right-aligned so the digits line up."""
    return Text(str(number), justify="right")


def count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def scope_of(page: SearchPage, citation: Citation) -> str:
    """The scope a hit was read from: a search over several scopes fuses their hits, and each citation names its
    scope's memory artifact."""
    return next(memory.scope for memory in page.memories if memory.artifact_id == citation.artifact_id)


def searched(page: SearchPage) -> str:
    """Where a search looked: ``revision 3`` for one scope, ``'a' r3 + 'b' r1`` for several."""
    if len(page.memories) == 1:
        return f"revision {page.memories[0].revision}"
    return " + ".join(f"{memory.scope!r} r{memory.revision}" for memory in page.memories)
