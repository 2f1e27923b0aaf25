"""Which sentences of a README are not in the documentation: ``python -m docsgen.moved OLD_README.md``.

The manual moved from README.md into docs/ (issue 44). A branch that still edits the old, long README can be ported
by running this on its README: every sentence (and every line of its code blocks) that README.md and docs/**/*.md do
not hold, word for word, is printed with the old section it came from, so each can be placed on its page. Links and
whitespace are ignored in the comparison; a sentence reworded on purpose shows up too, so read the list.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.:;!?])\s+|\n\n|\n\|")


def _normal(text: str) -> str:
    return _LINK.sub("]", " ".join(text.split()))


def missing(old: str, docs: str) -> list[tuple[str, str]]:
    """(section, sentence) of ``old`` that ``docs`` does not hold."""
    held = _normal(docs)
    found, section = [], "(top)"
    for part in re.split(r"(^#{1,4} [^\n]*$|^```\w*\n(?s:.*?)^```$)", old, flags=re.M):
        if part.startswith("#"):
            section = part.lstrip("#").strip()
            continue
        if part.startswith("```"):
            pieces = [line for line in part.splitlines()[1:-1] if line.strip()]
        else:
            pieces = [piece for piece in _SENTENCE_END.split(part) if len(piece.strip()) >= 25]
        found += [(section, piece.strip()) for piece in pieces if _normal(piece) not in held]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    docs = "\n".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    gaps = missing(Path(argv[0]).read_text(encoding="utf-8"), docs)
    for section, sentence in gaps:
        print(f"[{section}] {' '.join(sentence.split())}")
    print(f"{len(gaps)} sentences or code lines not in README.md and docs/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
