"""What pcmem reads from macOS's kernel, checked against bytes laid out by hand as macOS lays them out (#41), and the
``ps`` pcmem asks on macOS, run here (procps answers ``-o stat= -p PID`` with the same letters as BSD's ps).

- ``struct xucred`` (``<sys/ucred.h>``): ``u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]``,
  native (little-endian on both Mac architectures), 2 bytes of padding after ``cr_ngroups``: 76 bytes.
- ``struct flock`` (``<sys/fcntl.h>``): ``off_t l_start; off_t l_len; pid_t l_pid; short l_type; short l_whence``:
  24 bytes; Linux's puts ``l_type``/``l_whence`` first (32 bytes on x86_64, of which F_GETLK reads 28 here).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from pcmem import system
from pcmem.owner import processes
from pcmem.owner.transport import parse_xucred
from pcmem.store.duckdb.lock_probe import FLOCK_LAYOUTS, pack_probe, unpack_answer

pytestmark = pytest.mark.skipif(sys.byteorder != "little", reason="the bytes below are little-endian, as on Macs")


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "little")


def test_the_peer_uid_is_read_from_a_struct_xucred() -> None:
    groups = b"".join(_u32(gid) for gid in (20, 12, 61)) + bytes(4 * 13)
    raw = _u32(0) + _u32(501) + (3).to_bytes(2, "little") + b"\0\0" + groups
    assert len(raw) == 76
    assert parse_xucred(raw) == 501
    assert parse_xucred(_u32(1) + raw[4:]) is None, "another xucred version is not guessed at"
    assert parse_xucred(raw[:40]) is None, "a short answer is not read past its end"


def test_the_lock_probe_speaks_macos_struct_flock() -> None:
    macos, linux = FLOCK_LAYOUTS["macos"], FLOCK_LAYOUTS["linux"]
    f_wrlck, f_unlck, seek_set = 3, 2, 0  # macOS's values (<sys/fcntl.h>)
    assert pack_probe(macos, f_wrlck, seek_set) == bytes(8) + bytes(8) + bytes(4) + b"\x03\0" + b"\0\0"
    held = (100).to_bytes(8, "little") + bytes(8) + _u32(4242) + b"\x03\0" + b"\0\0"
    assert unpack_answer(macos, held) == (f_wrlck, 4242)
    free = bytes(16) + _u32(0) + b"\x02\0" + b"\0\0"
    assert unpack_answer(macos, free) == (f_unlck, 0)
    linux_held = b"\x01\0" + b"\0\0" + bytes(4) + bytes(8) + bytes(8) + _u32(4242)
    assert unpack_answer(linux, linux_held) == (1, 4242)


def test_off_linux_a_process_state_comes_from_ps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system, "KIND", "macos")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert processes.state(child.pid) == "running"
        assert "time.sleep(600)" in processes.command_line(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        processes._ps_seen.clear()  # the last answer is reused for a moment: ask again now
        assert processes.state(child.pid) == "stopped"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        processes._ps_seen.clear()
        assert processes.state(child.pid) == "gone"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=60)
    monkeypatch.setattr(system, "KIND", "windows")
    assert processes.state(os.getpid()) == "unknown", "Windows has no stopped state: nothing is asked"
