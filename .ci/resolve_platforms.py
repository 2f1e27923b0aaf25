"""Does pcmem's runtime dependency set install on every platform docs/guides/platforms.md promises? (issue 41)

pip's own resolver answers for a platform this machine is not — wheels only, nothing installed:
``pip install --dry-run --ignore-installed --only-binary=:all: --platform TAG… --python-version X.Y --target DIR REQS``.
pip does not widen one tag to the older ones a platform also runs (macOS 14 runs 11.0-13.0 wheels, manylinux_2_28
runs manylinux2014), so each platform lists the tags its wheels come with. The requirements are read from
pyproject.toml, so a new dependency or bound is checked the day it is written.

Exit status 1 when a promised platform does not resolve, or when one the table says cannot (``EXPECTED_TO_FAIL``)
starts to: the table must then be corrected. Run by .ci/run; ``--verbose`` prints what each resolved to.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.11", "3.12", "3.13", "3.14")


def _mac(arch: str, newest: int) -> list[str]:
    """The macOS tags a Mac on ``newest`` runs: every release from 10.9 (x86_64) or 11.0 (arm64) up to it."""
    releases = ([f"10_{minor}" for minor in range(9, 16)] if arch == "x86_64" else []) + \
        [f"{major}_0" for major in range(11, newest + 1)]
    return [f"macosx_{release}_{kind}" for release in releases for kind in (arch, "universal2")]


def _linux(arch: str) -> list[str]:
    return [f"manylinux_2_{minor}_{arch}" for minor in (17, 24, 26, 27, 28, 31, 34)] + [f"manylinux2014_{arch}"]


PLATFORMS: dict[str, list[str]] = {
    "Linux x86_64 (glibc 2.34+)": _linux("x86_64"),
    "Linux aarch64 (glibc 2.34+)": _linux("aarch64"),
    "Windows x64": ["win_amd64"],
    "macOS 13 arm64": _mac("arm64", 13),
    "macOS 14+ arm64": _mac("arm64", 14),
    "macOS 13+ x86_64": _mac("x86_64", 13),
    "Windows ARM64": ["win_arm64"],
}

#: Platforms the table says pcmem does not install on, and why (the resolver must keep failing there).
EXPECTED_TO_FAIL: dict[tuple[str, str], str] = {
    **{("Windows ARM64", python): "no duckdb-extension-fts, pyarrow or py-rust-stemmers wheel for win_arm64"
       for python in PYTHONS},
    # onnxruntime stopped building for Intel Macs and for macOS 13 at 1.23.2, which has no Python 3.14 wheel
    ("macOS 13 arm64", "3.14"): "onnxruntime: no cp314 wheel below macOS 14",
    ("macOS 13+ x86_64", "3.14"): "onnxruntime: no cp314 wheel for Intel macOS",
}


def runtime_requirements() -> list[str]:
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def resolve(platform: str, python: str, requirements: list[str]) -> tuple[bool, str]:
    """(resolved, pip's last lines or the versions it chose)."""
    tags = [arg for tag in PLATFORMS[platform] for arg in ("--platform", tag)]
    with tempfile.TemporaryDirectory() as target:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
             "--quiet", "--report", "-", "--python-version", python, *tags, "--target", target, *requirements],
            capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
        return False, "\n".join(lines[-4:])
    import json

    chosen = {item["metadata"]["name"].lower(): item["metadata"]["version"]
              for item in json.loads(result.stdout)["install"]}
    return True, " ".join(f"{name}=={chosen[name]}" for name in ("duckdb", "onnxruntime", "numpy", "pyarrow")
                          if name in chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print what each platform resolved to")
    args = parser.parse_args()
    requirements = runtime_requirements()
    cases = [(platform, python) for platform in PLATFORMS for python in PYTHONS]
    with ThreadPoolExecutor(4) as pool:  # pip waits on the index most of the time
        outcomes = list(pool.map(lambda case: resolve(*case, requirements), cases))
    wrong = 0
    for (platform, python), (resolved, detail) in zip(cases, outcomes):
        expected_failure = EXPECTED_TO_FAIL.get((platform, python))
        if resolved and expected_failure is None:
            print(f"ok        {platform}, Python {python}" + (f": {detail}" if args.verbose else ""))
        elif not resolved and expected_failure is not None:
            print(f"ok        {platform}, Python {python}: does not install, as the table says ({expected_failure})")
        elif resolved:
            wrong += 1
            print(f"CHANGED   {platform}, Python {python} now resolves ({detail}): update EXPECTED_TO_FAIL and the "
                  "platform table (docs/guides/platforms.md)")
        else:
            wrong += 1
            print(f"FAILED    {platform}, Python {python} does not resolve:\n{detail}")
    print(f"{len(cases) - wrong} of {len(cases)} platform and Python pairs as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
