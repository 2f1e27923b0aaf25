"""The chaos campaign's proxy-drop retry trial (#38): every write a client sends again after losing its answer is
applied once and answered with the outcome of that one application.

Per round: an owner process holds a new store; a same-user proxy on its socket (:mod:`pcmem_bench.drop_proxy`) lets
the owner run one write to its COMMIT and reply, then drops the client's connection before the reply — what an owner
killed between COMMIT and reply looks like. The client (this process, or a ``pcmem`` CLI process) finds the owner
again and sends the write again. Every retried operation runs so: remember, a keyed upsert, revise, retire,
reactivate, forget, forget_scope (of a scope and of the store), each once alone and once with another agent's
conflicting write between the first run and the resend; then a forget through the CLI, and a write whose owner is
SIGKILLed after the drop, so the resend goes to the process that took the file over.

Counted: **applied twice** — the scope moved by more revisions than the write and the other agent's made (a second
application is a revision of its own: a remember again, a forget of the key's next entry, a stale upsert); **wrong
outcomes** — the answer the client got differs from the one the owner gave the first time (or is an error).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pcmem
from pcmem.errors import PcmemError
from pcmem_bench import crash, programs
from pcmem_bench.drop_proxy import DropProxy, once, operation_is
from pcmem_bench.tally import Tally

Scope = Any
Other = Callable[[DropProxy, str], None]


@dataclass(frozen=True)
class Retried:
    """One write as the trial runs it: what is written first, the write, another agent's conflicting write."""

    operation: str
    seed: Callable[[Scope], object]
    write: Callable[[Scope, Any], pcmem.WriteResult]
    other: Other


def _agent(op: str, **args: Any) -> Other:
    """Another agent's write to the scope, straight to the owner."""
    return lambda proxy, scope: _answered(proxy.call_owner({"op": op, "scope": scope, "args": args,
                                                             "rerank": None}))


def _answered(answer: dict[str, Any]) -> None:
    if "result" not in answer:
        raise RuntimeError(f"the other agent's write failed: {answer.get('error')}")


def _two(scope: Scope) -> None:
    scope.remember("Lisbon", entry_id="city")
    scope.retire("city", expected_version=1)


RETRIED: dict[str, Retried] = {
    "remember": Retried("remember", lambda s: None, lambda s, _: s.remember("a plain note"),
                        _agent("scope.remember", request="another agent's note")),
    "keyed upsert": Retried("remember", lambda s: s.remember("Lisbon", entry_id="city"),
                            lambda s, _: s.remember("Braga", entry_id="city", upsert=True),
                            _agent("scope.remember", request="Porto", entry_id="city", upsert=True)),
    "revise": Retried("revise", lambda s: s.remember("Lisbon", entry_id="city"),
                      lambda s, _: s.revise("city", text="Braga", expected_version=1),
                      _agent("scope.revise", request="city", text="Porto", expected_version=2)),
    "retire": Retried("retire", lambda s: s.remember("Lisbon", entry_id="city"),
                      lambda s, _: s.retire("city", expected_version=1),
                      _agent("scope.reactivate", request="city", expected_version=1)),
    "reactivate": Retried("reactivate", _two, lambda s, _: s.reactivate("city", expected_version=1),
                          _agent("scope.retire", request="city", expected_version=1)),
    "forget": Retried("forget", lambda s: s.remember("555-0100", entry_id="phone"), lambda s, _: s.forget("phone"),
                      _agent("scope.remember", request="555-0199", entry_id="phone")),
    "forget_scope": Retried("forget_scope", lambda s: s.remember("555-0100", entry_id="phone"),
                            lambda s, _: s.forget_scope(), _agent("scope.remember", request="written after")),
    "store forget_scope": Retried("forget_scope", lambda s: s.remember("555-0100", entry_id="phone"),
                                  lambda s, memory: memory.forget_scope(s.scope),
                                  _agent("scope.remember", request="written after")),
}


class _Round:
    """One owner process, the proxy in front of it and this process as its client."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = subprocess.Popen(programs.command("store_holder", str(path), "none"), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.owner.stdout is not None
        if not self.owner.stdout.readline().startswith("ready"):
            raise RuntimeError("the owner did not start")
        self.proxy = DropProxy(path, drop=lambda _request: False)
        self.proxy.start()
        self.client = pcmem.open(path, embedder=None)

    def head(self, scope: str) -> int:
        memory = self.client.memory.for_scope(scope).head()
        return 0 if memory is None else memory.revision

    def close(self) -> None:
        self.client.close()
        self.proxy.stop()
        if self.owner.poll() is None and self.owner.stdin is not None:
            self.owner.stdin.close()
            self.owner.wait(timeout=120)


def _judge(tally: Tally, name: str, proxy: DropProxy, got: pcmem.WriteResult | None, moved: int, expected: int
           ) -> None:
    """Count one trial: the write's answer against the dropped first one, the scope's move against one write's."""
    tally.operations += 1
    if len(proxy.dropped) != 1 or "result" not in proxy.dropped[0][1]:
        tally.untyped_errors.append(f"{name}: the proxy dropped {len(proxy.dropped)} answers (want 1 result)")
        return
    first = pcmem.WriteResult.model_validate(proxy.dropped[0][1]["result"])
    if got is not None:
        tally.acknowledged += 1
    if moved > expected:
        tally.applied_twice += 1
        tally.notes.append(f"{name}: the scope moved {moved} revisions, {expected} expected")
    elif got != first:
        tally.wrong_outcomes += 1
        tally.notes.append(f"{name}: answered {got!r:.200}, the first run answered {first!r:.200}")
    elif got is not None:
        tally.found += 1


def _library_trial(run: _Round, tally: Tally, name: str, scope_name: str, between: bool) -> None:
    retried = RETRIED[name]
    scope = run.client.memory.for_scope(scope_name)
    retried.seed(scope)
    before = run.head(scope_name)
    run.proxy.dropped.clear()
    run.proxy.drop = once(operation_is(retried.operation))
    run.proxy.between = (lambda _r, _a: retried.other(run.proxy, scope_name)) if between else None
    got = _attempt(tally, lambda: retried.write(scope, run.client.memory))
    run.proxy.drop = lambda _request: False
    _judge(tally, f"{name}{' + another write' if between else ''}", run.proxy, got, run.head(scope_name) - before,
           2 if between else 1)


def _cli_trial(run: _Round, tally: Tally, cli: list[str]) -> None:
    """``pcmem forget`` whose answer is lost while another agent writes the key again."""
    scope = run.client.memory.for_scope("cli")
    scope.remember("555-0100", entry_id="phone")
    before = run.head("cli")
    run.proxy.dropped.clear()
    run.proxy.drop = once(operation_is("forget"))
    run.proxy.between = lambda _r, _a: RETRIED["forget"].other(run.proxy, "cli")
    done = subprocess.run([*cli, "--db", str(run.path), "forget", "-s", "cli", "phone", "--yes", "--json"],
                          capture_output=True, text=True, timeout=300)
    run.proxy.drop = lambda _request: False
    got = None
    if done.returncode == 0:
        got = pcmem.WriteResult.model_validate(json.loads(done.stdout))
    elif "Traceback" in done.stderr:
        tally.untyped_errors.append(f"CLI forget: {done.stderr.strip()[-300:]}")
    else:
        tally.typed_errors[done.stderr.strip()[:60]] += 1
    _judge(tally, "CLI forget + another write", run.proxy, got, run.head("cli") - before, 2)


def _takeover_trial(run: _Round, tally: Tally, name: str) -> None:
    """The owner is SIGKILLed after the dropped answer: the resend goes to this process, which takes the file over."""
    retried = RETRIED[name]
    scope = run.client.memory.for_scope("takeover")
    retried.seed(scope)
    before = run.head("takeover")
    run.proxy.dropped.clear()

    def kill(_request: dict[str, Any], _answer: dict[str, Any]) -> None:
        run.owner.send_signal(signal.SIGKILL)
        run.owner.wait(timeout=60)

    run.proxy.drop = once(operation_is(retried.operation))
    run.proxy.between = kill
    got = _attempt(tally, lambda: retried.write(scope, run.client.memory))
    if run.client.owner_pid is not None:
        tally.untyped_errors.append(f"{name} after a kill: the client did not take the file over")
    _judge(tally, f"{name} resent to a new owner", run.proxy, got, run.head("takeover") - before, 1)


def _attempt(tally: Tally, call: Callable[[], pcmem.WriteResult]) -> pcmem.WriteResult | None:
    try:
        return call()
    except PcmemError as error:
        tally.typed_errors[type(error).__name__] += 1
    except Exception as error:  # noqa: BLE001 - counting them is the point of the campaign
        tally.untyped_errors.append(f"{type(error).__name__}: {error}")
    return None


def run(workdir: Path, rounds: int, seed: int = 0) -> Tally:
    """``rounds`` rounds, each on a store and owner of its own (see the module docstring)."""
    tally = Tally(f"proxy-drop retries: {rounds} rounds x ({len(RETRIED)} writes alone and with another agent's "
                  "write between, a CLI forget, a resend to a new owner)")
    rng = random.Random(seed)
    cli = [str(Path(sys.executable).with_name("pcmem"))]
    if not Path(cli[0]).exists():
        cli = [sys.executable, "-m", "pcmem"]
    for number in range(rounds):
        current = _Round(workdir / f"retry-{number}.duckdb")
        try:
            names = list(RETRIED)
            rng.shuffle(names)
            for index, name in enumerate(names):
                for between in (False, True):
                    _library_trial(current, tally, name, f"s{index}-{int(between)}", between)
            _cli_trial(current, tally, cli)
            _takeover_trial(current, tally, rng.choice(names))
        finally:
            current.close()
        _check_store(current.path, tally)
    return tally


def _check_store(path: Path, tally: Tally) -> None:
    """``check`` of the round's store once every process let it go (the killed owner's log replayed)."""
    tally.checks += 1
    with pcmem.open(path, embedder=None) as runtime:
        report = crash._file_backend(runtime).check()
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))


def main(argv: list[str] | None = None) -> None:
    """``python -m pcmem_bench.retry_trial [--rounds N]``: the trial alone, as JSON (the campaign runs it too)."""
    import argparse
    import tempfile
    import time

    parser = argparse.ArgumentParser(description="The chaos campaign's proxy-drop retry trial, alone.")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pcmem-retry-") as tmp:
        tally = run(Path(tmp), args.rounds)
    tally.seconds = time.perf_counter() - started
    print(json.dumps(tally.as_dict()))
    if not tally.ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
