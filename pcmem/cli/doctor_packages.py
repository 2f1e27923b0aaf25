"""``pcmem doctor``: versions, pcmem's pinned dependencies, DuckDB and its full-text extension, and the extras.

Everything is read from the installed distributions' metadata (:mod:`importlib.metadata`) and found with
``importlib.util.find_spec``, which imports nothing: pcmem's own requirements and extras come from its metadata, so a
renamed or new extra needs no change here (only :data:`EXTRA_USES` words what an extra is for). Each installed
dependency is compared with the version range pcmem declares for it (a forced install — ``--no-deps``, a later
``pip install duckdb==…`` — can leave one outside it).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Declared
from packaging.version import InvalidVersion, Version

from pcmem import __version__
from pcmem.cli.doctor_findings import Finding, fail, info, ok, warn

#: What each extra is for, in words (an extra not listed here is described by its requirements).
EXTRA_USES = {
    "serve": "pcmem serve (HTTP) and pcmem mcp (MCP for desktop agents)",
    "llm": "local rerank and decision models on llama.cpp (--model llama-cpp:NAME)",
    "seekdb": "stores on OceanBase seekdb (--db seekdb://...)",
    "langchain": "the LangChain retriever (pcmem.integrations.langchain)",
    "llama-index": "the LlamaIndex retriever (pcmem.integrations.llama_index)",
    "tui": "pcmem tui",
    "model-smollm2": "the smollm2-135m-instruct model's wheels",
    "model-qwen-05b": "the qwen2.5-coder-0.5b-instruct model's wheels",
    "model-qwen-15b": "the qwen2.5-coder-1.5b-instruct model's wheels",
    "mpnet-build": "the one-time build of the mpnet embedders (pcmem models prepare mpnet-base-int8)",
    "gemma-build": "the one-time conversion of embeddinggemma-300m",
}
#: Extras that are not for users (the test suite's tools).
_NOT_FOR_USERS = frozenset({"test", "dev", "docs"})


@dataclass(frozen=True)
class Requirement:
    name: str
    specifier: str  # the declared version range ("" when any version will do)
    extra: str | None

    def admits(self, version: str) -> bool:
        try:
            return Version(version) in Declared(f"{self.name}{self.specifier}").specifier
        except (InvalidVersion, InvalidRequirement):
            return True  # a version string no range can judge (a local build): not reported as wrong


def requirements(distribution: str = "pcmem") -> list[Requirement]:
    """``distribution``'s requirements as its metadata lists them."""
    found = []
    for text in importlib.metadata.requires(distribution) or []:
        try:
            declared = Declared(text)
        except InvalidRequirement:
            continue
        extra = next((value for marker in [str(declared.marker or "")]
                      for value in re.findall(r"""extra\s*==\s*['"]([^'"]+)['"]""", marker)), None)
        found.append(Requirement(_canonical(declared.name), str(declared.specifier), extra))
    return found


@functools.cache  # the extras share requirements (llama-cpp-python is in four)
def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def importable(name: str) -> bool:
    """Whether the distribution ``name`` is installed and ``import`` finds its modules (a distribution whose
    metadata is there but whose package is gone or hidden is not)."""
    if installed_version(name) is None:
        return False
    modules = _top_level_modules(name)
    return not modules or any(_findable(module) for module in modules)


def versions() -> Finding:
    parts = [f"pcmem {__version__}", f"Python {platform.python_version()} ({sys.executable})"]
    for name in ("duckdb", "onnxruntime", "llama-cpp-python"):
        version = installed_version(name)
        parts.append(f"{name} {version}" if version else f"{name} not installed")
    return ok("versions", ", ".join(parts), pcmem=__version__, python=platform.python_version(),
              executable=sys.executable, duckdb=installed_version("duckdb"),
              onnxruntime=installed_version("onnxruntime"), llama_cpp_python=installed_version("llama-cpp-python"))


def dependencies() -> Finding:
    """pcmem's own requirements are installed, each in the version range pcmem declares."""
    wrong, missing = [], []
    checked = [req for req in requirements() if req.extra is None]
    for req in checked:
        version = installed_version(req.name)
        if version is None:
            missing.append(req.name)
        elif not req.admits(version):
            wrong.append(f"{req.name} {version} (pcmem needs {req.specifier})")
    if not missing and not wrong:
        return ok("dependencies", f"all {len(checked)} of pcmem's dependencies are installed, in its version ranges")
    fixes = [f"'{req.name}{req.specifier}'" for req in checked
             if req.name in missing or any(w.startswith(f"{req.name} ") for w in wrong)]
    summary = "; ".join(filter(None, [f"missing: {', '.join(missing)}" if missing else "",
                                      f"other versions: {', '.join(wrong)}" if wrong else ""]))
    return fail("dependencies", f"pcmem's dependencies are not as it needs them ({summary})",
                f"pip install {' '.join(fixes)}", missing=missing, other_versions=wrong)


def duckdb_fts() -> Finding:
    """DuckDB and the full-text extension built for exactly that DuckDB (``LOAD`` refuses any other), found on disk
    without importing DuckDB."""
    duckdb, fts = installed_version("duckdb"), installed_version("duckdb-extension-fts")
    declared = {req.name: req for req in requirements() if req.extra is None}
    if duckdb and all(declared[name].admits(duckdb) for name in ("duckdb", "duckdb-extension-fts") if name in declared):
        fix = f"pip install 'duckdb=={duckdb}' 'duckdb-extension-fts=={duckdb}'"  # every release in range has both
    else:
        fix = "pip install " + " ".join(f"'{name}{declared[name].specifier}'" for name in ("duckdb", "duckdb-extension-fts")
                                        if name in declared)
    if duckdb is None or fts is None:
        return fail("duckdb.fts", f"DuckDB {duckdb or 'is not installed'}, its full-text extension "
                                  f"{fts or 'is not installed'}", fix)
    spec = importlib.util.find_spec("duckdb_extension_fts")
    binary = Path(spec.origin).parent / "extensions" / f"v{duckdb}" / "fts.duckdb_extension" if spec and spec.origin \
        else None
    if fts != duckdb or binary is None or not binary.is_file():
        return fail("duckdb.fts", f"the full-text extension {fts} does not fit DuckDB {duckdb} (no {binary})", fix)
    return ok("duckdb.fts", f"DuckDB {duckdb} with its full-text extension {fts}", binary=str(binary))


def extras() -> list[Finding]:
    """One finding per extra of pcmem's metadata: installed (✓), not installed (·), or broken (!: a requirement whose
    metadata is there but whose modules ``import`` cannot find — removed by hand, or hidden)."""
    by_extra: dict[str, list[str]] = {}
    for req in requirements():
        if req.extra is not None and req.extra not in _NOT_FOR_USERS:
            by_extra.setdefault(req.extra, []).append(req.name)
    findings = []
    for extra, names in by_extra.items():
        absent = [name for name in names if installed_version(name) is None]
        broken = [name for name in names if name not in absent and not importable(name)]
        use = EXTRA_USES.get(extra, ", ".join(names))
        install = f"pip install 'pcmem[{extra}]'"
        data = {"extra": extra, "installed": not absent and not broken, "missing": absent + broken}
        if broken:
            findings.append(warn(f"extras.{extra}", f"extra {extra} ({use}): {', '.join(broken)} is installed but "
                                 "cannot be imported", f"pip install --force-reinstall {' '.join(broken)}", **data))
        elif absent:
            findings.append(info(f"extras.{extra}", f"extra {extra} not installed: {use}", install, **data))
        else:
            findings.append(ok(f"extras.{extra}", f"extra {extra} installed: {use}", **data))
    return findings


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_modules(name: str) -> list[str]:
    """The top-level modules a distribution installs (its ``top_level.txt``, else its RECORD's top entries)."""
    distribution = importlib.metadata.distribution(name)
    listed = distribution.read_text("top_level.txt")
    if listed:
        return [module for module in listed.split() if module.isidentifier()]
    modules = set()
    for file in distribution.files or []:
        top = file.parts[0] if file.parts else ""
        if top in ("..", "__pycache__") or top.endswith((".dist-info", ".data", ".pth")):
            continue
        module = top.split(".")[0] if len(file.parts) == 1 else top
        if module.isidentifier():
            modules.add(module)
    return sorted(modules)


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
