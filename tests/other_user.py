"""A real second local user (``useradd``; tests run as root here and in CI) for the tests that pcmem's files are
never readable by anyone else, not even for an instant (issue #38). The probe itself — another user opening every
file that appears in a folder — is the chaos campaign's (:mod:`pcmem_bench.creation_race`)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from pcmem_bench import creation_race

PROBE_USER = "pcmem-probe"
shared_folder = creation_race.shared_folder


def other_user() -> pwd.struct_passwd:
    """The probe user, created once; skips the test when this process cannot act as another user."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to act as a second local user (useradd, setuid)")
    try:
        return pwd.getpwnam(PROBE_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd")
    if useradd is None:
        pytest.skip("useradd is not installed")
    done = subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PROBE_USER],
                          capture_output=True, text=True)
    if done.returncode not in (0, 9):  # 9: made meanwhile by a parallel run
        pytest.fail(f"useradd failed: {done.stderr}")
    return pwd.getpwnam(PROBE_USER)


class Probe(creation_race.Probe):
    """The other user polling ``folder`` until :meth:`stop`, which returns the handles it obtained."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, other_user())

    def stop(self) -> dict[str, int]:  # type: ignore[override]
        tries, handles = super().stop()
        assert tries > 100, f"the probe hardly ran ({tries} opens)"
        return handles
