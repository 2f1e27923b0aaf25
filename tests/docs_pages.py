"""The documentation's pages and their code blocks, for the tests that run or check them (README.md and docs/**/*.md).

A fenced block is ```LANGUAGE … ```. A block is marked by an HTML comment on the line right above its fence
(invisible on GitHub and in the site): ``<!-- run in a fresh store -->`` asks for a ``bash`` block to run as written
(tests/docs/test_docs_examples.py). Indented blocks are not examples (the run records under docs/figures quote logs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUN_MARKER = "<!-- run in a fresh store -->"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository, e.g. docs/guides/search.md
    line: int  # of the opening fence
    language: str
    code: str
    marker: str | None  # the HTML comment on the line above the fence, if any

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the site."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def page_text(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def section(relative: str, heading: str) -> str:
    """The text of ``relative`` from the heading line ``heading`` (e.g. ``## Keys``) to the next heading of its level
    or above."""
    text = page_text(relative)
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n") + 1
    ends = [match.start() for match in re.finditer(rf"^#{{1,{level}}} ", text[start + len(heading):], re.M)]
    return text[start:start + len(heading) + ends[0]] if ends else text[start:]


def blocks(language: str | None = None, page: str | None = None) -> list[Block]:
    """Every fenced block (of ``language``, on ``page``) in page order."""
    found = []
    for path in pages():
        relative = path.relative_to(ROOT).as_posix()
        if page is not None and relative != page:
            continue
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if language is not None and match.group(1) != language:
                continue
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            found.append(Block(relative, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                               before if before.startswith("<!--") else None))
    return found
