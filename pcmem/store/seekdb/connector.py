"""Where a seekdb store lives, and connections to it.

``seekdb:///abs/data/dir`` (or ``seekdb:relative/dir``) is embedded seekdb: the engine runs inside this process on
that data directory (≈ 190 MB even when empty). seekdb allows **one embedded instance per process**, so every
backend of the process must use the same directory (several databases in it are fine: ``?database=NAME``, default
``pcmem``), and only one process can open a directory at a time (pcmem holds an advisory lock on it: seekdb itself
does not stop a second process). The embedded engine listens on a private Unix
socket only; pcmem never starts a network server.

``seekdb://user:password@host:port/database?tenant=NAME`` is a seekdb server or an OceanBase cluster, reached over
the MySQL protocol with ``pymysql`` (the driver ``pyseekdb`` itself uses for servers). The login is
``user@tenant`` as OceanBase expects (tenant defaults to ``sys``, seekdb's; an OceanBase cluster names its tenant,
and a proxy may need ``user@tenant#cluster`` — pass the whole login as ``user`` and omit ``tenant`` then).
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pcmem import private_files
from pcmem.errors import ConfigurationError, InputError, StoreError
from pcmem.settings import store_scheme
from pcmem.store.seekdb.sql import Connection, EmbeddedConnection, ServerConnection

DEFAULT_DATABASE = "pcmem"
DEFAULT_PORT = 2881
_DATABASE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
INSTALL_HINT = "install the seekdb extra: pip install 'pcmem[seekdb]'"


@dataclass(frozen=True)
class SeekdbTarget:
    database: str
    path: Path | None = None  # embedded data directory
    host: str | None = None
    port: int = DEFAULT_PORT
    user: str = "root"
    password: str = ""
    tenant: str | None = "sys"

    @property
    def embedded(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        """For messages: never includes the password."""
        if self.path is not None:
            return f"seekdb:///{str(self.path).lstrip('/')}?database={self.database}"
        return f"seekdb://{self.user}@{self.host}:{self.port}/{self.database}"


#: The URL schemes of seekdb targets (an OceanBase cluster speaks seekdb's protocol).
SCHEMES = ("seekdb:", "oceanbase:")


def is_seekdb_url(target: str) -> bool:
    return store_scheme(target) in SCHEMES


def parse(url: str) -> SeekdbTarget:
    """Parse a ``seekdb:`` connection string (see the module docstring); raises InputError when malformed."""
    if not is_seekdb_url(url):
        raise InputError(f"not a seekdb connection string: {url!r}")
    parts = urlsplit(url)
    query = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
    unknown = set(query) - {"database", "tenant"}
    if unknown:
        raise InputError(f"unknown seekdb option(s) {sorted(unknown)}; known: database, tenant")
    if parts.netloc:  # seekdb://[user[:password]@]host[:port]/database
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise InputError(f"bad port in {url!r}") from None
        database = unquote(parts.path.strip("/")) or query.get("database") or DEFAULT_DATABASE
        tenant = query.get("tenant", None if parts.username and "@" in unquote(parts.username) else "sys")
        target = SeekdbTarget(database=database, host=parts.hostname, port=port,
                              user=unquote(parts.username or "root"), password=unquote(parts.password or ""),
                              tenant=tenant or None)
    else:
        raw = unquote(parts.path)
        if not raw:
            raise InputError(f"{url!r} names no data directory: use seekdb:///abs/path or seekdb://host:port/db")
        target = SeekdbTarget(database=query.get("database") or DEFAULT_DATABASE, path=Path(raw).expanduser().resolve())
    if not _DATABASE_NAME.fullmatch(target.database):
        raise InputError(f"seekdb database name {target.database!r} must be 1..64 letters, digits or underscores")
    return target


# --- embedded instance ----------------------------------------------------------------------------------------------

_instance_lock = threading.Lock()
_instance: tuple[Path, Any] | None = None


def open_embedded_directory() -> Path | None:
    """The data directory of this process's embedded seekdb, when one is open (a new store must use it)."""
    with _instance_lock:
        return _instance[0] if _instance is not None else None


def _lock_directory(path: Path, timeout: float) -> int:
    """Hold an exclusive advisory lock on the data directory for the process's lifetime.

    seekdb itself lets a second process open a directory that another process is using (both opens
    succeed), which would corrupt it; pcmem refuses instead, after retrying for ``timeout`` seconds."""
    try:
        import fcntl  # Unix only, like embedded seekdb itself
    except ImportError:
        raise StoreError("embedded seekdb runs on Linux and macOS only: use a seekdb server here "
                         "(--db seekdb://USER@HOST:PORT/DB)") from None

    fd = os.open(path / ".pcmem-embedded.lock", os.O_RDWR | os.O_CREAT, private_files.FILE_MODE)
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise StoreError(
                    f"the embedded seekdb directory {path} is in use by another process (one process at a time; "
                    "run a seekdb server to share a store)"
                ) from None
            time.sleep(0.1)


def _embedded_instance(path: Path, lock_timeout: float = 10.0) -> Any:
    global _instance
    with _instance_lock:
        if _instance is not None:
            if _instance[0] != path:
                raise ConfigurationError(
                    f"embedded seekdb is already open on {_instance[0]} in this process; one process can open one "
                    f"embedded data directory (use ?database=NAME for several stores in it)"
                )
            return _instance[1]
        try:
            import pylibseekdb
        except ImportError:
            raise ConfigurationError(f"embedded seekdb needs pylibseekdb (Linux only); {INSTALL_HINT}") from None
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} is a file, not a seekdb data directory")
        try:
            private_files.make_private_folders(path)  # 0700, the missing parents too (the data inside is seekdb's)
        except OSError as error:
            raise StoreError(f"cannot create the seekdb data directory {path}: {error.strerror}") from None
        lock = _lock_directory(path, lock_timeout)
        try:
            instance = pylibseekdb.open(db_dir=str(path))
        except Exception as error:  # the binding raises SeekdbError or RuntimeError
            os.close(lock)
            raise StoreError(f"cannot open embedded seekdb at {path}: {error}") from error
        atexit.register(instance.close)
        _instance = (path, instance)
        return instance


def _require_pyseekdb() -> None:
    try:
        import pyseekdb  # noqa: F401  (the extra; pcmem talks SQL through its drivers)
    except ImportError:
        raise ConfigurationError(f"the seekdb backend needs pyseekdb; {INSTALL_HINT}") from None


class Connector:
    """Opens connections to one database of a target (creating the database on first use)."""

    def __init__(self, target: SeekdbTarget, lock_timeout: float = 10.0) -> None:
        _require_pyseekdb()
        self.target = target
        self._instance = _embedded_instance(target.path, lock_timeout) if target.path is not None else None
        bootstrap = self._raw_connect(None)
        try:
            bootstrap.run(f"CREATE DATABASE IF NOT EXISTS `{target.database}`")
        finally:
            bootstrap.close()

    def connect(self) -> Connection:
        connection = self._raw_connect(self.target.database)
        # Each read runs in a transaction: repeatable read gives it one snapshot across its statements.
        connection.run("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return connection

    def drop_database(self) -> None:
        """Delete the whole store (tests and `pcmem migrate` cleanup only)."""
        connection = self._raw_connect(None)
        try:
            connection.run(f"DROP DATABASE IF EXISTS `{self.target.database}`")
        finally:
            connection.close()

    def _raw_connect(self, database: str | None) -> Connection:
        target = self.target
        if self._instance is not None:
            try:
                return EmbeddedConnection(self._instance.connect(database=database or "test", autocommit=True))
            except Exception as error:
                raise StoreError(f"cannot connect to embedded seekdb database {database!r}: {error}") from error
        import pymysql

        login = f"{target.user}@{target.tenant}" if target.tenant else target.user
        try:
            raw = pymysql.connect(host=target.host, port=target.port, user=login, password=target.password,
                                  database=database, charset="utf8mb4", autocommit=True, connect_timeout=10)
        except pymysql.MySQLError as error:
            raise StoreError(f"cannot connect to {target.describe()}: {error}") from error
        return ServerConnection(raw)
