"""Benchmarks. Each prints ratios against a reference measured in the same run (these machines are shared and
noisy, so absolute numbers alone mean little)."""


def slug(name: str) -> str:
    """``name`` made safe inside a file or database name (letters, digits, ``-`` and ``_``; the last 60 characters,
    where model paths differ)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[-60:]
