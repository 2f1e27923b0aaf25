"""Every error class lives in pcmem.errors, so an error the owner raises reaches its client as its own class (the
client finds it there by name), with its message and exit status — never as a plain StoreError. Checked through a
real owner process and a client of it: the owner's remember is made to raise the class its text names."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import pcmem
import pcmem.errors

ROOT = Path(__file__).resolve().parents[2]

#: An owner whose remember raises the pcmem error its text names (the fault is injected in the owner's process).
OWNER = """
import functools, sys, pcmem, pcmem.errors
from pcmem.memory.scoped import SyncScopedMemory

@functools.wraps(SyncScopedMemory.remember)  # the owner reads the method's signature
def remember(self, request, **options):
    text = request.entries[0].text  # the owner is sent the request the client built
    raise getattr(pcmem.errors, text)(f"raised in the owner: {text}")

SyncScopedMemory.remember = remember
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    print("ready", flush=True)
    sys.stdin.read()
"""

#: The classes that lived beside the code raising them (and so crossed the socket as StoreError).
MOVED = ["UnsafeRuntimeFolderError", "DestinationNotEmptyError", "SnapshotMoved", "DuplicateKeyError"]


def test_every_pcmem_error_class_is_defined_in_pcmem_errors():
    import importlib
    import pkgutil

    outside = []
    for module in pkgutil.walk_packages(pcmem.__path__, "pcmem."):
        if module.name.endswith("__main__") or module.name.startswith("pcmem.integrations"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if inspect.isclass(value) and issubclass(value, pcmem.errors.PcmemError) \
                    and value.__module__ != "pcmem.errors":
                outside.append(f"{value.__module__}.{value.__name__}")
    assert outside == []


def test_an_error_the_owner_raises_reaches_its_client_as_its_own_class(tmp_path):
    path = tmp_path / "s.duckdb"
    pcmem.open(path, embedder=None).close()
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        with pcmem.open(path, embedder=None) as runtime:
            assert runtime.owner_pid == owner.pid
            scope = runtime.memory.for_scope("s")
            for name in [*MOVED, "StoreLockedError", "InputError"]:
                kind = getattr(pcmem.errors, name)
                with pytest.raises(kind, match=f"raised in the owner: {name}") as raised:
                    scope.remember(name)
                assert type(raised.value) is kind and raised.value.exit_code == kind.exit_code
    finally:
        owner.communicate(input="", timeout=60)
