"""Text analysis, "analyzer v1" (SPEC §2): the terms both the index and queries are made of.

NFC + casefold; runs of letters, digits and underscore are word terms; runs of CJK characters become single-character
terms plus adjacent-pair bigrams, so Chinese and Japanese text is searchable without a dictionary segmenter.
Upstream applies the CJK rule to ideographs; pcmem also applies it to kana, because a Japanese kana run has no
spaces and would otherwise be one unsearchable token ("ドキュメントは" would not match "ドキュメント").
"""

from __future__ import annotations

import re
import unicodedata

_CJK = (
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # Katakana (+ phonetic extensions, half-width)
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs (Ext A, unified, compatibility)
    "\U00020000-\U0003134f"  # CJK ideographs, supplementary planes
)
_WORD_RUN = re.compile(r"\w+")
_SEGMENT = re.compile(f"([{_CJK}]+)|([^{_CJK}]+)")


def _cjk_terms(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def analyze(text: str) -> list[str]:
    """All terms of ``text`` in order, with repeats (term frequency matters to BM25)."""
    terms: list[str] = []
    folded = unicodedata.normalize("NFC", text).casefold()
    for word in _WORD_RUN.findall(folded):
        for cjk, other in _SEGMENT.findall(word):
            terms.extend(_cjk_terms(cjk) if cjk else [other])
    return terms


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in first-seen order: the set Q that admission counts against."""
    return list(dict.fromkeys(analyze(query)))
