"""The full-text channel on seekdb: the engine's BM25 (``MATCH ... AGAINST``) over pcmem-analysed tokens.

Both backends must see the same terms, so the engine never analyses text itself: pcmem's analyzer (the store's,
recorded in pcmem_meta) turns a text into terms, and each term becomes one *engine token*, ``_`` + term, joined by
spaces into ``fts_docs.body``, indexed by the whitespace parser. The prefix matters: seekdb's parsers drop the
InnoDB stopwords ("a", "the", "www", "de", ...) even with the whitespace parser, and a prefixed token is never a
stopword. Tokens longer than the parser's 84-character limit would be dropped silently, so a long term becomes its
first 48 characters plus a digest (the same mapping applies to queries, so it still matches exactly).

Candidates: BM25 by the engine in natural-language mode (any query term matches), restricted in SQL to the scope's
rows of ``fts_docs`` — which holds only active head versions — top ``limit`` by score, ties bytewise by
(entry_id, entry_version_id). Admission needs the number of *distinct query terms* each candidate contains; the
engine does not report it, so it is computed here from the candidate's stored tokens (at most ``limit`` bodies,
which the same query returns). Scores differ from DuckDB's: a different BM25 implementation (its own IDF smoothing
and statistics); ranks, admission and the fused result are what the two backends are compared on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pcmem.analysis import Analyzer
from pcmem.store.seekdb.sql import Connection, quote
from pcmem.types.search import Candidate

_MAX_PLAIN_CHARS = 48


def engine_token(term: str) -> str:
    if len(term) <= _MAX_PLAIN_CHARS:
        return "_" + term
    return "_" + term[:_MAX_PLAIN_CHARS] + "_" + hashlib.sha256(term.encode()).hexdigest()[:24]


def body(text: str, analyzer: Analyzer) -> str:
    """The indexed document of one entry version's text."""
    return " ".join(engine_token(term) for term in analyzer.analyze(text))


def search(db: Connection, artifact_id: str, terms: Sequence[str], limit: int) -> list[Candidate]:
    tokens = list(dict.fromkeys(engine_token(term) for term in terms))
    if not tokens:
        return []
    against = quote(" ".join(tokens))
    rows = db.run(
        f"""SELECT entry_id, entry_version_id, body, MATCH(body) AGAINST({against}) AS score
            FROM fts_docs
            WHERE artifact_id = {quote(artifact_id)} AND MATCH(body) AGAINST({against})
            ORDER BY score DESC, entry_id, entry_version_id
            LIMIT {int(limit)}"""
    )
    wanted = set(tokens)
    found = []
    for entry_id, version_id, stored, score in rows:
        matched = len(wanted.intersection(stored.split()))
        found.append(Candidate(artifact_id, entry_id, version_id, float(score), matched))
    return found
