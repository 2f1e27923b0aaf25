"""The creation race (issue #38): another local user polls a folder while pcmem creates stores in it, and must never
obtain a handle on any file there — store, log, migrate destination, staging copy — under the usual umask or umask
000. A handle opened while a file is still readable stays valid after a chmod, so only a file born private is safe.

The other user is a forked child of this process that drops to another uid (root only: :func:`probe_user`), so no
other interpreter has to be reachable by that user; :mod:`tests.test_private_files` uses the same probe.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pcmem_bench import programs
from pcmem_bench.tally import Tally

#: Who plays the other user in the campaign: present on every Linux and BSD, owns nothing pcmem makes.
CAMPAIGN_USER = "nobody"


def probe_user(name: str = CAMPAIGN_USER) -> pwd.struct_passwd | None:
    """The user the probe becomes, or None when this process cannot become another user (not root)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


@contextlib.contextmanager
def shared_folder(mode: int = 0o755) -> Iterator[Path]:
    """A folder another user can enter and list (a test's or campaign's own temporary folder is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="pcmem-private-", dir="/tmp"))
    os.chmod(folder, mode)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _poll(folder: Path, stop: int, report: int) -> None:
    """The other user's loop: until ``stop`` is readable, open everything in ``folder`` and one level below; write
    ``ready`` after the first pass, then the handles obtained (regular files opened) as JSON."""
    handles: dict[str, int] = {}
    tries = 0

    def attempt(path: str) -> None:
        nonlocal tries
        tries += 1
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(descriptor).st_mode):
                handles[path] = handles.get(path, 0) + 1
        finally:
            os.close(descriptor)

    ready = False
    while not select.select([stop], [], [], 0)[0]:
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            attempt(path)
            try:
                inside = os.listdir(path)
            except OSError:
                inside = []
            for other in inside:
                attempt(os.path.join(path, other))
        if not ready:
            ready = True
            os.write(report, b"ready\n")
    os.write(report, json.dumps({"tries": tries, "handles": handles}).encode() + b"\n")


class Probe:
    """Another user opening everything in ``folder``, from construction to :meth:`stop`: a forked child that drops
    to ``user`` (no new interpreter: the other user may not be allowed to run this one, e.g. one under /root)."""

    def __init__(self, folder: Path, user: pwd.struct_passwd) -> None:
        stop_read, self._stop = os.pipe()
        report_read, report_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child never returns into the caller
            status = 1
            try:
                os.close(self._stop)
                os.close(report_read)
                os.setgroups([])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
                _poll(folder, stop_read, report_write)
                status = 0
            finally:
                os._exit(status)
        os.close(stop_read)
        os.close(report_write)
        self._lines = os.fdopen(report_read, "r")
        if self._lines.readline().strip() != "ready":
            raise RuntimeError("the probe did not start")

    def stop(self) -> tuple[int, dict[str, int]]:
        """(opens tried, handles obtained by path)."""
        os.close(self._stop)
        line = self._lines.readline()
        self._lines.close()
        _, status = os.waitpid(self.pid, 0)
        if status != 0 or not line:
            raise RuntimeError("the probe failed")
        result = json.loads(line)
        return result["tries"], result["handles"]


def _pcmem(*args: str) -> list[str]:
    return [sys.executable, "-m", "pcmem", *args]


def trial(rounds: int = 2) -> Tally:
    """``rounds`` CLI remembers into new stores (one in new nested folders), a library open, and a migrate, under
    umask 022 and umask 000, each watched by another user: handles obtained must be 0, modes 0600/0700."""
    tally = Tally("creation race: another user polls new stores")
    started = time.perf_counter()
    user = probe_user()
    if user is None:
        tally.notes.append(f"skipped: needs root and a user {CAMPAIGN_USER!r} to act as another local user")
        return tally
    for umask in (0o022, 0o000):
        with shared_folder(0o777 if umask == 0 else 0o755) as folder:
            _round(folder, umask, rounds, user, tally)
    tally.seconds = time.perf_counter() - started
    return tally


def _round(folder: Path, umask: int, rounds: int, user: pwd.struct_passwd, tally: Tally) -> None:
    written = {folder / "nested" / "deeper" / "cli-0.duckdb": "secret 0"}
    written.update({folder / f"cli-{number}.duckdb": f"secret {number}" for number in range(1, rounds)})
    commands = [_pcmem("--db", str(path), "remember", "--scope", "s", text) for path, text in written.items()]
    commands.append(programs.command("library_creator", str(folder / "library.duckdb")))
    commands.append(_pcmem("migrate", "--from", str(next(iter(written))), "--to", str(folder / "copy.duckdb")))
    probe = Probe(folder, user)
    try:
        for command in commands:
            tally.operations += 1
            done = subprocess.run(command, capture_output=True, text=True, umask=umask, timeout=300)
            if done.returncode != 0:
                tally.untyped_errors.append(f"umask {umask:03o}: {' '.join(command[2:5])} failed: {done.stderr[-300:]}")
            elif "remember" in command:
                tally.acknowledged += 1
    finally:
        tries, handles = probe.stop()
    tally.notes.append(f"umask {umask:03o}: {tries} opens tried by {user.pw_name}, {sum(handles.values())} handles")
    tally.checks_failed += [f"umask {umask:03o}: {user.pw_name} opened {path} {count} times"
                            for path, count in handles.items()]
    tally.checks_failed += [f"umask {umask:03o}: {path} is {oct(stat.S_IMODE(path.lstat().st_mode))}"
                            for path in folder.rglob("*") if stat.S_IMODE(path.lstat().st_mode) not in (0o600, 0o700)]
    tally.checks += 1
    for path, text in written.items():
        found = subprocess.run(_pcmem("--db", str(path), "list", "--scope", "s"), capture_output=True, text=True)
        tally.found += text in found.stdout
