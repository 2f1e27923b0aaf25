"""Model files that ship inside PyPI wheels: locate them without running the packages' code, verify by sha256,
assemble them into the cache atomically.

Some of these wheels have unrelated names (they are only transport for the bytes), so pcmem never imports them: it
finds files through ``importlib`` metadata and trusts nothing but the pinned sha256.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from pcmem.private_files import make_private_folders
from pcmem.types.progress import Progress

_CHUNK = 1 << 20
_verified: set[tuple[str, int, int, int, str]] = set()  # (path, inode, size, mtime_ns, sha): hash once per process
_verified_lock = threading.Lock()


def package_dir(module: str) -> Path | None:
    """The folder of an installed top-level package, found without importing it."""
    spec = importlib.util.find_spec(module)
    for root in (spec.submodule_search_locations or []) if spec else []:
        return Path(root)
    return None


def distribution_file(distribution: str, suffix: str) -> Path | None:
    """The one file of an installed distribution whose name ends with ``suffix`` (from its RECORD)."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    matches = [f for f in files if str(f).endswith(suffix) and "dist-info" not in str(f)]
    if len(matches) != 1:
        return None
    path = Path(str(matches[0].locate()))
    return path if path.is_file() else None


def _stat_key(path: Path, sha256: str) -> tuple[str, int, int, int, str]:
    st = path.stat()
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns, sha256)


def _chunks(paths: Sequence[Path], progress: Progress | None) -> Iterator[bytes]:
    """The bytes of ``paths`` concatenated, in 1 MiB chunks, reporting (done, total) as they are read."""
    total = sum(p.stat().st_size for p in paths)
    done = 0
    for path in paths:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                done += len(chunk)
                yield chunk
                if progress:
                    progress(done, total)


def sha256_of(paths: Sequence[Path], progress: Progress | None = None) -> str:
    """sha256 of the concatenation of ``paths``."""
    digest = hashlib.sha256()
    for chunk in _chunks(paths, progress):
        digest.update(chunk)
    return digest.hexdigest()


def is_intact(path: Path, sha256: str, progress: Progress | None = None) -> bool:
    """True when ``path`` exists with the pinned full sha256; hashed again only if the file changed on disk."""
    if not path.is_file():
        return False
    key = _stat_key(path, sha256)
    with _verified_lock:
        if key in _verified:
            return True
    if sha256_of([path], progress) != sha256:
        return False
    with _verified_lock:
        _verified.add(key)
    return True


def write_atomically(target: Path, sources: bytes | Sequence[Path], progress: Progress | None = None) -> None:
    """Write ``target`` from bytes or the concatenation of files, via a temp file and ``os.replace``, so racing
    processes only ever see a complete file."""
    make_private_folders(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(sources, bytes):
                out.write(sources)
            else:
                for chunk in _chunks(sources, progress):
                    out.write(chunk)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
