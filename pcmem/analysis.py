"""Text analysis: the terms both the full-text index and queries are made of.

``v1`` is upstream's "analyzer v1": NFC + casefold; runs of letters, digits and underscore are word terms;
runs of CJK characters become single-character terms plus adjacent-pair bigrams, so Chinese and Japanese text is
searchable without a dictionary segmenter. Upstream applies the CJK rule to ideographs; pcmem also applies it to
kana, because a Japanese kana run has no spaces and would otherwise be one unsearchable token.

``v2`` is v1 plus English stopword removal and Snowball stemming of Latin-script word terms ("deploys" finds
"deploy"). Stopwords matter twice: BM25 stops rewarding "the", and admission, which counts distinct matched query
terms, stops counting them. A store records which analyzer built its index; new stores use v2.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

_CJK = (
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # Katakana (+ phonetic extensions, half-width)
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs (Ext A, unified, compatibility)
    "\U00020000-\U0003134f"  # CJK ideographs, supplementary planes
)
_WORD_RUN = re.compile(r"\w+")
_SEGMENT = re.compile(f"([{_CJK}]+)|([^{_CJK}]+)")
_LATIN_WORD = re.compile(r"[a-zß-ÿ]+")

# A compact English stopword list (function words only; negations such as "not" and "no" are kept on purpose).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves s t d ll m re ve""".split()
)


def _cjk_terms(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def analyze_v1(text: str) -> list[str]:
    """All terms of ``text`` in order, with repeats (term frequency matters to BM25)."""
    terms: list[str] = []
    folded = unicodedata.normalize("NFC", text).casefold()
    for word in _WORD_RUN.findall(folded):
        for cjk, other in _SEGMENT.findall(word):
            terms.extend(_cjk_terms(cjk) if cjk else [other])
    return terms


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    from py_rust_stemmers import SnowballStemmer

    return SnowballStemmer("english").stem_word


@lru_cache(maxsize=65536)
def _stem(term: str) -> str:
    return _stemmer()(term) if _LATIN_WORD.fullmatch(term) else term


def analyze_v2(text: str) -> list[str]:
    return [_stem(term) for term in analyze_v1(text) if term not in STOPWORDS]


@dataclass(frozen=True)
class Analyzer:
    name: str
    analyze: Callable[[str], list[str]]

    def query_terms(self, query: str) -> list[str]:
        """The distinct terms of a query, in first-seen order: the set Q that admission counts against."""
        return list(dict.fromkeys(self.analyze(query)))


ANALYZERS = {"v1": Analyzer("v1", analyze_v1), "v2": Analyzer("v2", analyze_v2)}
DEFAULT_ANALYZER = "v2"

# Upstream's analyzer under its historical names.
analyze = analyze_v1


def query_terms(query: str) -> list[str]:
    return ANALYZERS["v1"].query_terms(query)
