"""``pcmem doctor``: who holds the store, whether pcmem processes can reach it — from this environment, and from a
scrubbed one (``env -i``), which is how MCP hosts start ``pcmem mcp``.

The scrubbed check runs a real process: this pcmem (the command ``pcmem mcp install`` writes into hosts) with an empty
environment and ``doctor --owner-probe``, which tries to reach the store's owner the way every pcmem client does
(:func:`reach_owner`) and prints what it found as JSON.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pcmem import system
from pcmem.cli.doctor_findings import Finding, fail, info, ok, warn

#: Seconds the scrubbed probe may take (a cold Python and pcmem's client code; far less on an idle machine).
PROBE_TIMEOUT = 20.0
#: What to do when a scrubbed pcmem and this one look for owners in different places. Owners listen in the account's
#: own folder (its home from the password database, not $HOME), so only a change of account or of pcmem can do it.
_SPLIT_FIX = ("run every pcmem process of this store as the same user and the same pcmem version; if they are, "
              "report it: the owner's folder comes from the account, not the environment")


@dataclass(frozen=True)
class OwnerReach:
    """What a pcmem process finds when it looks for a store's owner."""

    socket: str | None  # where it looks (None: it cannot say, see error)
    pid: int | None  # the owner that answered, if one did
    error: str | None  # why it could not ask (an unsafe runtime folder, an owner speaking another protocol)


def reach_owner(path: Path) -> OwnerReach:
    """Look for the owner of the store file at ``path`` as a client does (:func:`pcmem.owner.dial.dial`: every place
    an owner may listen, greeted with the protocol's hello). One function, so the rendezvous can change without doctor
    changing."""
    from pcmem.errors import PcmemError
    from pcmem.owner import address, dial, transport

    identity = address.FileIdentity.of(path)
    if identity is None:
        return OwnerReach(None, None, f"no file at {path}")
    try:
        places = transport.current().places(identity, create=False)
    except PcmemError as unusable:  # the pipe's key cannot be read or made (pcmem.owner.pipes)
        return OwnerReach(None, None, str(unusable))
    if not places.addresses:
        return OwnerReach(None, None, "; ".join(places.refused) or "no pcmem owner of yours has listened here yet")
    try:
        found = dial.dial(identity)
    except PcmemError as refused:
        return OwnerReach(str(places.addresses[0]), None, str(refused))
    if found is None:
        return OwnerReach(str(places.addresses[0]), None, None)
    connection, pid, where = found
    connection.close()
    return OwnerReach(str(where), pid, None)


def older_owner(path: Path) -> str | None:
    """What answers for ``path`` where older pcmem versions listened (their runtime folders), if anything does."""
    from pcmem.owner import address, dial

    identity = address.FileIdentity.of(path)
    return None if identity is None else dial.older_owner(identity)


def probe_output(path: Path) -> str:
    """What ``pcmem doctor --owner-probe`` prints."""
    return json.dumps(asdict(reach_owner(path)))


def start_scrubbed_probe(path: Path) -> subprocess.Popen[str] | None:
    """This pcmem, started with an empty environment (as ``env -i`` does), asked to reach the owner of ``path``."""
    if system.KIND == "windows":
        return None  # its rendezvous needs no environment at all (pcmem.owner.pipes): see _scrubbed_finding
    from pcmem.cli.mcp_hosts import pcmem_launcher

    command, args = pcmem_launcher()
    try:
        return subprocess.Popen([command, *args, "--db", str(path), "doctor", "--owner-probe"], env={},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError:
        return None


def finish_probe(probe: subprocess.Popen[str] | None) -> OwnerReach | str:
    """The scrubbed process's answer, or why there is none."""
    if probe is None:
        return "could not start pcmem with an empty environment"
    try:
        out, err = probe.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return f"pcmem started with an empty environment did not answer within {PROBE_TIMEOUT:g} s"
    try:
        return OwnerReach(**json.loads(out))
    except (ValueError, TypeError):
        return f"pcmem started with an empty environment failed (exit {probe.returncode}): {err.strip()[-300:]}"


def owner_findings(path: Path, holder: int | None, here: OwnerReach, scrubbed: OwnerReach | str) -> list[Finding]:
    from pcmem.owner.processes import describe

    who = describe(holder)
    data: dict[str, Any] = {"holder": holder, "socket": here.socket, "owner_pid": here.pid}
    if holder is None:
        found = ok("owner", "no process holds the store: the next pcmem process to open it serves the others", **data)
    elif here.pid is not None:
        found = ok("owner", f"served by {who} to other pcmem processes ({here.socket})", **data)
    elif here.error is not None:
        found = fail("owner", f"held by {who}, which pcmem cannot ask: {here.error}",
                     "use one pcmem version for every process of a store; close that one", **data)
    elif isinstance(scrubbed, OwnerReach) and scrubbed.pid is not None:
        found = fail("owner", f"held by {who}, which serves it where only a scrubbed environment looks "
                              f"({scrubbed.socket}, not {here.socket}): commands here wait, then fail (exit 10)",
                     _SPLIT_FIX, **data)
    elif (older := older_owner(path)) is not None:
        found = fail("owner", f"held by {who}, an older pcmem: {older}; commands here wait, then fail (exit 10)",
                     "use one pcmem version for every process of a store: restart that one with this pcmem", **data)
    else:
        found = fail("owner", f"held by {who}, which does not serve it to other pcmem processes (an older pcmem, "
                              "or a program that opened the file itself): pcmem commands wait, then fail (exit 10)",
                     "close it there", **data)
    return [found, _scrubbed_finding(holder, here, scrubbed)]


def _scrubbed_finding(holder: int | None, here: OwnerReach, scrubbed: OwnerReach | str) -> Finding:
    check = "owner.scrubbed"
    if system.KIND == "windows":
        return info(check, "not asked on Windows: owners meet through a named pipe named from your key, which every "
                           "process finds through the system's own folder lookup, not the environment", None)
    if isinstance(scrubbed, str):
        return warn(check, f"cannot tell whether a host's pcmem would reach the owner: {scrubbed}")
    data = {"socket": scrubbed.socket, "owner_pid": scrubbed.pid, "error": scrubbed.error}
    if scrubbed.error is not None and scrubbed.socket is None:
        return fail(check, f"a pcmem started with an empty environment (as MCP hosts start servers) cannot look for "
                           f"owners: {scrubbed.error}", None, **data)
    if scrubbed.error is not None:
        return info(check, f"a pcmem started with an empty environment finds the same owner, and is refused too: "
                           f"{scrubbed.error}", None, **data)
    if holder is None:
        if scrubbed.socket == here.socket:
            return ok(check, "a pcmem started with an empty environment (as MCP hosts start servers) looks for the "
                             "owner where this one does", **data)
        return warn(check, f"a pcmem started with an empty environment (as MCP hosts start servers) looks for owners "
                           f"at {scrubbed.socket}, this one at {here.socket}: a host's pcmem mcp and this terminal "
                           "would not share one owner", _SPLIT_FIX, **data)
    if scrubbed.pid is not None:
        return ok(check, "the owner is reachable from an empty environment too (as MCP hosts start servers)", **data)
    if here.pid is not None:
        return fail(check, f"a pcmem started with an empty environment (as MCP hosts start servers) does not reach the "
                           f"owner (it looks at {scrubbed.socket}): a host's pcmem mcp would wait, then fail (exit 10)",
                    _SPLIT_FIX, **data)
    return info(check, "not reachable from an empty environment either", None, **data)
