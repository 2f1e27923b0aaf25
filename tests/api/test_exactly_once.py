"""A write whose answer is lost is sent again and applied once, with the first outcome (#38 item 4).

Real parts: the store's owner is another process, and between it and this process (its client) sits a same-user
proxy on the owner's socket (:mod:`pcmem_bench.drop_proxy`) that lets the owner run a write to its COMMIT and reply,
then drops the connection before the reply arrives — what an owner killed between its COMMIT and its reply looks
like. The client finds the owner again and sends the write again. Each write must be applied once and answered with
the outcome of that one application, also when another agent writes in between, when the resend reaches a new owner
that took the file over, and through the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pcmem
from pcmem_bench.drop_proxy import DropProxy, once, operation_is

OWNER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # short: a socket path has ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("PCMEM_LOCK_TIMEOUT", "10")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


class Owner:
    """The process that holds the store, with the dropping proxy in front of it and this process as its client."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().startswith("ready"), self.process.stderr
        self.proxy = DropProxy(path, drop=lambda _request: False)
        self.proxy.start()  # before the client connects: every connection of the client goes through it
        self.runtime = pcmem.open(path, embedder=None)
        assert type(self.runtime).__name__ == "ClientRuntime"

    def drop_first(self, operation: str, between: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
                   ) -> None:
        """Drop the answer of the next ``operation`` request (after the owner ran it); run ``between`` then."""
        self.proxy.drop = once(operation_is(operation))
        self.proxy.between = between

    def agent(self, op: str, scope: str, **args: Any) -> dict[str, Any]:
        """Another agent's call, straight to the owner (as its own client would send it)."""
        answer = self.proxy.call_owner({"op": op, "scope": scope, "args": args, "rerank": None})
        assert "result" in answer, answer
        return answer["result"]

    def close(self) -> None:
        self.runtime.close()
        self.proxy.stop()
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=60)


@pytest.fixture
def owner(tmp_path) -> Iterator[Owner]:
    running = Owner(tmp_path / "store.duckdb")
    yield running
    running.close()


def first_answer(owner: Owner, *, resent_to_it: bool = True) -> pcmem.WriteResult:
    """The answer the owner gave the first time, which the proxy dropped (the client sent the request again to the
    same owner, through the proxy, unless ``resent_to_it`` is false)."""
    assert len(owner.proxy.dropped) == 1, owner.proxy.dropped
    request, answer = owner.proxy.dropped[0]
    assert "result" in answer, answer  # the write ran to its end the first time
    if resent_to_it:
        sent = [r for r in owner.proxy.requests if r.get("op") == request["op"]]
        assert sent[-2:] == [request, request]  # sent again, word for word: the same idempotency key
    return pcmem.WriteResult.model_validate(answer["result"])


def head(owner: Owner, scope: str) -> int:
    memory = owner.runtime.memory.for_scope(scope).head()
    return 0 if memory is None else memory.revision


#: Every write a client sends again: (operation, what to write first, the write).
WRITES: dict[str, tuple[str, Callable[[Any], object], Callable[[Any, Any], pcmem.WriteResult]]] = {
    "remember": ("remember", lambda s: None, lambda s, _: s.remember("a plain note")),
    "keyed upsert": ("remember", lambda s: s.remember("Lisbon", entry_id="city"),
                     lambda s, _: s.remember("Braga", entry_id="city", upsert=True)),
    "revise": ("revise", lambda s: s.remember("Lisbon", entry_id="city"),
               lambda s, _: s.revise("city", text="Braga", expected_version=1)),
    "retire": ("retire", lambda s: s.remember("Lisbon", entry_id="city"),
               lambda s, _: s.retire("city", expected_version=1)),
    "reactivate": ("reactivate", lambda s: (s.remember("Lisbon", entry_id="city"), s.retire("city", expected_version=1)),
                   lambda s, _: s.reactivate("city", expected_version=1)),
    "forget": ("forget", lambda s: s.remember("555-0100", entry_id="phone"), lambda s, _: s.forget("phone")),
    "forget_scope": ("forget_scope", lambda s: s.remember("555-0100", entry_id="phone"),
                     lambda s, _: s.forget_scope()),
    "store forget_scope": ("forget_scope", lambda s: s.remember("555-0100", entry_id="phone"),
                           lambda s, memory: memory.forget_scope(s.scope)),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_every_write_whose_answer_is_lost_is_applied_once_with_its_first_outcome(owner, name):
    operation, before, write = WRITES[name]
    scope = owner.runtime.memory.for_scope("w")
    before(scope)
    revision = head(owner, "w")
    owner.drop_first(operation)
    result = write(scope, owner.runtime.memory)
    assert result == first_answer(owner)  # the outcome of the one application, not of a second run
    assert head(owner, "w") == revision + 1  # one revision: applied once


def test_a_resent_forget_does_not_erase_the_entry_another_agent_wrote_under_the_key(owner):
    """The resent forget('phone') erased the other agent's newer phone~2 and returned its citation."""
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("555-0100", entry_id="phone")
    owner.drop_first("forget", lambda _r, _a: owner.agent("scope.remember", "p", request="555-0199", entry_id="phone"))
    result = scope.forget("phone")
    assert result == first_answer(owner)
    assert [c.entry_id for c in result.citations] == ["phone"] and not result.unchanged  # what it erased
    assert [(e.entry.entry_id, e.entry.text) for e in scope.list().entries] == [("phone~2", "555-0199")]


def test_a_resent_upsert_does_not_write_a_stale_value_over_a_newer_one(owner):
    """History was Lisbon → Braga → Porto → Braga."""
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("Lisbon", entry_id="city")
    owner.drop_first("remember", lambda _r, _a: owner.agent("scope.remember", "p", request="Porto", entry_id="city",
                                                            upsert=True))
    result = scope.remember("Braga", entry_id="city", upsert=True)
    assert result == first_answer(owner)
    assert [e.entry.text for e in scope.history("city").events] == ["Lisbon", "Braga", "Porto"]


def test_a_resent_revise_that_was_applied_is_not_reported_as_a_conflict(owner):
    """The revise with expected_version was applied, and the resend answered RevisionConflictError."""
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("Lisbon", entry_id="city")
    owner.drop_first("revise", lambda _r, _a: owner.agent("scope.revise", "p", request="city", text="Porto",
                                                          expected_version=2))
    result = scope.revise("city", text="Braga", expected_version=1)
    assert result == first_answer(owner)
    assert [e.entry.text for e in scope.history("city").events] == ["Lisbon", "Braga", "Porto"]


def test_a_resent_retire_answers_its_first_outcome_after_another_agent_reactivated(owner):
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("Lisbon", entry_id="city")
    owner.drop_first("retire", lambda _r, _a: owner.agent("scope.reactivate", "p", request="city", expected_version=1))
    result = scope.retire("city", expected_version=1)
    assert result == first_answer(owner)
    assert scope.get_entry("city").state == "active"  # the other agent's reactivate stands


def test_a_resent_remember_and_forget_scope_leave_what_another_agent_wrote_since(owner):
    scope = owner.runtime.memory.for_scope("p")
    owner.drop_first("remember", lambda _r, _a: owner.agent("scope.remember", "p", request="the other note"))
    result = scope.remember("my note")
    assert result == first_answer(owner)
    assert sorted(e.entry.text for e in scope.list().entries) == ["my note", "the other note"]
    owner.proxy.dropped.clear()
    owner.drop_first("forget_scope", lambda _r, _a: owner.agent("scope.remember", "p", request="written after"))
    erased = scope.forget_scope()
    assert erased == first_answer(owner) and len(erased.citations) == 2
    assert [e.entry.text for e in scope.list().entries] == ["written after"]


def test_a_write_resent_to_the_process_that_took_the_file_over_is_answered_not_applied_again(owner):
    """The owner is killed after the COMMIT, before its reply: the client takes the file over and resends to itself;
    the record of the write, committed with it in the file, answers."""
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("555-0100", entry_id="phone")

    def kill(_request: dict[str, Any], _answer: dict[str, Any]) -> None:
        owner.process.send_signal(signal.SIGKILL)
        owner.process.wait(timeout=30)

    owner.drop_first("forget", kill)
    result = scope.forget("phone")
    assert result == first_answer(owner, resent_to_it=False)
    assert owner.runtime.owner_pid is None  # this process owns the store now
    assert [c.entry_id for c in result.citations] == ["phone"] and head(owner, "p") == 2
    owner.drop_first("remember", kill)  # nothing drops any more: this process answers itself
    assert scope.remember("555-0199", entry_id="phone").citations[0].entry_id == "phone~2"


def test_the_cli_forget_prints_what_it_erased_when_its_answer_was_lost(owner):
    """The CLI printed 'unchanged' after its own forget erased the entry."""
    scope = owner.runtime.memory.for_scope("p")
    scope.remember("555-0100", entry_id="phone")
    owner.drop_first("forget", lambda _r, _a: owner.agent("scope.remember", "p", request="555-0199", entry_id="phone"))
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(owner.path), "forget", "-s", "p", "phone",
                           "--yes", "--json"], capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    printed = pcmem.WriteResult.model_validate(json.loads(done.stdout))
    assert printed == first_answer(owner)
    assert not printed.unchanged and [c.entry_id for c in printed.citations] == ["phone"]
    assert [e.entry.entry_id for e in scope.list().entries] == ["phone~2"]


def test_every_write_crosses_with_its_own_idempotency_key_and_a_given_one_is_kept(owner):
    scope = owner.runtime.memory.for_scope("k")
    scope.remember("one")
    scope.remember("two")
    scope.remember("three", idempotency_key="my-key-1")
    scope.list()
    keys = [r["args"].get("idempotency_key") for r in owner.proxy.requests if r["op"] == "scope.remember"]
    assert len(set(keys)) == 3 and all(keys) and keys[2] == "my-key-1"
    assert all("idempotency_key" not in r["args"] for r in owner.proxy.requests if r["op"] == "scope.list")
    again = scope.remember("three", idempotency_key="my-key-1")  # the caller's own key, sent again by the caller
    assert again.memory.revision == 3 and len(scope.list().entries) == 3
