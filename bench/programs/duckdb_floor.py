"""The floor of a cold ``pcmem search --mode fts``: Python importing DuckDB, opening the store read-only and running
one query over the full-text index tables. Usage: ``duckdb_floor.py STORE`` (``pcmem bench startup``)."""

import sys

import duckdb

db = duckdb.connect(sys.argv[1], read_only=True)
db.execute("SELECT count(*) FROM fts_main_fts_docs.terms").fetchall()
