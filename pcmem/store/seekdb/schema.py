"""The seekdb schema: the same insert-only truth as the DuckDB file, plus engine-native search projections.

Truth (insert-only): ``revisions``, ``entry_versions``, ``entry_events``. Projections kept in the write transaction,
O(change) per write: ``memories`` (head revision and active/retired counts per scope), ``head_entries`` (latest
event per entry), ``fts_docs`` (one row per *active head* version, with a FULLTEXT index) and one vector table per
embedding profile (``pcmem_vec_<key>``: every embedded version with an ``active`` flag that mirrors head_entries,
with an HNSW cosine index).

DDL is not transactional in seekdb (it commits implicitly), so tables are created with ``IF NOT EXISTS`` and the
format marker is written last: a database interrupted while being set up is simply set up again on the next open.
Identifiers compare bytewise (``utf8mb4_bin``), so ``ORDER BY entry_id`` is the bytewise order the port promises.
Scopes are keyed by the SHA-256 of their text because MySQL collations ignore trailing spaces in comparisons.
"""

from __future__ import annotations

import hashlib

from pcmem.analysis import DEFAULT_ANALYZER
from pcmem.errors import StoreFormatError, StoreVersionError
from pcmem.store.seekdb.sql import Connection, render
from pcmem.types.embedding import EmbeddingProfile

FORMAT_MARKER = "pcmem-store-seekdb"
SCHEMA_VERSION = "3"
_TABLE_OPTIONS = "DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"
# A write's idempotency key and outcome, kept with the write (pcmem.memory.write_records): ids only, no text.
_RECORDED_WRITES = f"""CREATE TABLE IF NOT EXISTS recorded_writes (
        idempotency_key VARCHAR(128) PRIMARY KEY,
        scope VARCHAR(1024) NOT NULL,
        operation VARCHAR(16) NOT NULL,
        fingerprint CHAR(64) NOT NULL,
        outcome LONGTEXT NOT NULL,
        recorded_at DATETIME(6) NOT NULL,
        KEY recorded_writes_by_time (recorded_at)) {_TABLE_OPTIONS}"""
#: schema version → the statements that bring a store of it to the next version (DDL commits on its own; each step
#: is safe to run again after an interruption, see :func:`_upgrade`).
_UPGRADES = {
    "1": ("ALTER TABLE revisions ADD COLUMN reason VARCHAR(2048) NULL",),  # why a write was made (its reason)
    "2": (_RECORDED_WRITES,),
}
VECTOR_TABLE_PREFIX = "pcmem_vec_"

# Ids are printable ASCII of at most 128 characters; artifact/version ids are generated (short).
_TABLES = (
    """CREATE TABLE IF NOT EXISTS pcmem_meta (
        meta_key VARCHAR(64) PRIMARY KEY, meta_value VARCHAR(1024) NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS memories (
        artifact_id VARCHAR(128) PRIMARY KEY,
        scope_key CHAR(64) NOT NULL,
        scope VARCHAR(1024) NOT NULL,
        head_revision BIGINT NOT NULL,
        active_count BIGINT NOT NULL,
        retired_count BIGINT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NOT NULL,
        UNIQUE KEY memories_by_scope (scope_key))""",
    """CREATE TABLE IF NOT EXISTS revisions (
        artifact_id VARCHAR(128) NOT NULL,
        revision BIGINT NOT NULL,
        operation VARCHAR(16) NOT NULL,
        change_count BIGINT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        reason VARCHAR(2048) NULL,
        PRIMARY KEY (artifact_id, revision))""",
    """CREATE TABLE IF NOT EXISTS entry_versions (
        entry_version_id VARCHAR(128) PRIMARY KEY,
        artifact_id VARCHAR(128) NOT NULL,
        entry_id VARCHAR(128) NOT NULL,
        version BIGINT NOT NULL,
        kind VARCHAR(256) NOT NULL,
        text LONGTEXT NOT NULL,
        content_hash VARCHAR(128) NOT NULL,
        metadata LONGTEXT NOT NULL,
        created_in_revision BIGINT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        KEY entry_versions_by_artifact (artifact_id, entry_version_id))""",
    """CREATE TABLE IF NOT EXISTS entry_events (
        artifact_id VARCHAR(128) NOT NULL,
        revision BIGINT NOT NULL,
        entry_id VARCHAR(128) NOT NULL,
        entry_version_id VARCHAR(128) NOT NULL,
        state VARCHAR(16) NOT NULL,
        PRIMARY KEY (artifact_id, entry_id, revision),
        KEY entry_events_by_revision (artifact_id, revision))""",
    """CREATE TABLE IF NOT EXISTS head_entries (
        artifact_id VARCHAR(128) NOT NULL,
        entry_id VARCHAR(128) NOT NULL,
        entry_version_id VARCHAR(128) NOT NULL,
        state VARCHAR(16) NOT NULL,
        PRIMARY KEY (artifact_id, entry_id),
        KEY head_entries_by_version (entry_version_id))""",
    # body: the analysed terms as engine tokens (see fulltext.py), split by the whitespace parser; no stopwords
    # apply because every token carries a prefix, and min_token_size=1 keeps one-character terms (CJK).
    """CREATE TABLE IF NOT EXISTS fts_docs (
        entry_version_id VARCHAR(128) PRIMARY KEY,
        artifact_id VARCHAR(128) NOT NULL,
        entry_id VARCHAR(128) NOT NULL,
        body LONGTEXT NOT NULL,
        KEY fts_docs_by_artifact (artifact_id),
        FULLTEXT INDEX fts_docs_body (body) WITH PARSER space PARSER_PROPERTIES=(min_token_size=1, max_token_size=84))""",
    # role: 'active' (what searches use) or 'pending' (an embedder switch in progress).
    """CREATE TABLE IF NOT EXISTS embedding_profiles (
        role VARCHAR(16) PRIMARY KEY,
        model_id VARCHAR(512) NOT NULL,
        dimension INT NOT NULL,
        normalized TINYINT NOT NULL,
        table_name VARCHAR(64) NOT NULL)""",
)


def scope_key(scope: str) -> str:
    return hashlib.sha256(scope.encode()).hexdigest()


def vector_table(profile: EmbeddingProfile) -> str:
    digest = hashlib.sha256(f"{profile.model_id}\0{profile.dimension}\0{profile.normalized}".encode()).hexdigest()
    return VECTOR_TABLE_PREFIX + digest[:16]


def create_vector_table(db: Connection, profile: EmbeddingProfile) -> str:
    name = vector_table(profile)
    dimension = int(profile.dimension)
    if not 1 <= dimension <= 16000:
        raise StoreFormatError(f"embedding dimension {dimension} is outside what seekdb vectors support (1..16000)")
    db.run(
        f"""CREATE TABLE IF NOT EXISTS {name} (
            entry_version_id VARCHAR(128) PRIMARY KEY,
            artifact_id VARCHAR(128) NOT NULL,
            entry_id VARCHAR(128) NOT NULL,
            active TINYINT NOT NULL,
            vec VECTOR({dimension}) NOT NULL,
            KEY {name}_by_scope (artifact_id, active),
            VECTOR INDEX {name}_hnsw (vec) WITH (distance=cosine, type=hnsw, lib=vsag)
        ) {_TABLE_OPTIONS}"""
    )
    return name


def drop_table(db: Connection, name: str) -> None:
    if not name.startswith(VECTOR_TABLE_PREFIX):
        raise StoreFormatError(f"refusing to drop {name!r}: not a pcmem vector table")
    db.run(f"DROP TABLE IF EXISTS {name}")


def _tables(db: Connection) -> set[str]:
    return {row[0] for row in db.run("SHOW TABLES")}


def ensure(db: Connection) -> str:
    """Create or verify the schema; return the name of the full-text analyzer the store's index uses."""
    tables = _tables(db)
    if tables and "pcmem_meta" not in tables:
        raise StoreFormatError(
            f"this seekdb database belongs to something else (it has tables {sorted(tables)[:5]} but no pcmem marker)"
        )
    marker = meta(db, "format") if tables else None
    if marker is None:
        for statement in _TABLES:
            db.run(f"{statement} {_TABLE_OPTIONS}")
        db.run(_RECORDED_WRITES)
        set_meta(db, "schema_version", SCHEMA_VERSION)
        if meta(db, "fts_analyzer") is None:
            set_meta(db, "fts_analyzer", DEFAULT_ANALYZER)
        set_meta(db, "format", FORMAT_MARKER)
    elif marker != FORMAT_MARKER:
        raise StoreFormatError(f"this seekdb database has a pcmem_meta table but format {marker!r}")
    version = _upgrade(db, meta(db, "schema_version"))
    if version != SCHEMA_VERSION:
        raise StoreVersionError(
            f"this seekdb store has schema version {version}; this pcmem knows {SCHEMA_VERSION}: upgrade pcmem"
        )
    _drop_orphan_vector_tables(db)
    return meta(db, "fts_analyzer") or DEFAULT_ANALYZER


def _upgrade(db: Connection, version: str | None) -> str | None:
    """Bring an older schema version up to :data:`SCHEMA_VERSION`, step by step; return the version reached. A step
    interrupted after its DDL is run again on the next open: a column that exists already is not added twice."""
    while version in _UPGRADES:
        for statement in _UPGRADES[version]:
            if statement.startswith("CREATE TABLE IF NOT EXISTS") or not _column_exists(db, statement):
                db.run(statement)
        version = str(int(version) + 1)
        set_meta(db, "schema_version", version)
    return version


def _column_exists(db: Connection, statement: str) -> bool:
    """Whether the column an ``ALTER TABLE t ADD COLUMN c ...`` statement adds is already there."""
    words = statement.split()
    table, column = words[2], words[5]
    return any(row[0] == column for row in db.run(f"SHOW COLUMNS FROM {table}"))


def _drop_orphan_vector_tables(db: Connection) -> None:
    """A profile switch drops the old table after its commit; a crash in between leaves it behind (harmless)."""
    used = {row[0] for row in db.run("SELECT table_name FROM embedding_profiles")}
    for table in _tables(db):
        if table.startswith(VECTOR_TABLE_PREFIX) and table not in used:
            drop_table(db, table)


def meta(db: Connection, key: str) -> str | None:
    rows = db.run(render("SELECT meta_value FROM pcmem_meta WHERE meta_key = %s", key))
    return rows[0][0] if rows else None


def set_meta(db: Connection, key: str, value: str) -> None:
    db.run(render("REPLACE INTO pcmem_meta (meta_key, meta_value) VALUES (%s, %s)", key, value))


def add_meta(db: Connection, key: str, value: str) -> None:
    """Set ``key`` unless it is set already (another process may have set it first: that value stays)."""
    db.run(render("INSERT IGNORE INTO pcmem_meta (meta_key, meta_value) VALUES (%s, %s)", key, value))
