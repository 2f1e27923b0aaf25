"""Writes with an idempotency key happen once, on both engines (:mod:`pcmem.memory.write_records`): the record is
kept in the write's transaction, a second run answers the first outcome, records hold no text, and they are pruned
by the writes themselves. The resend across processes is tests/api/test_exactly_once.py."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from fakes import TextHashEmbedder

import pcmem
from pcmem.compose.runtime import SyncRuntime
from pcmem.store import common


class SettableClock:
    """A clock the test moves: each call is one second after the previous one, plus what the test adds."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> SettableClock:
    return SettableClock()


@pytest.fixture
def runtime(backend, clock) -> SyncRuntime:
    return SyncRuntime(backend, embedder=TextHashEmbedder(), clock=clock)


@pytest.fixture
def scope(runtime):
    return runtime.memory.for_scope("project")


def _recorded(backend, key: str):
    with backend.write("project") as tx:
        return tx.recorded_write(key)


#: Each keyed write, after a seed; ``again``: another agent's write in between, which a second run must not undo.
WRITES = {
    "remember": (lambda s: None, lambda s, k: s.remember("a note", idempotency_key=k),
                 lambda s: s.remember("another note")),
    "upsert": (lambda s: s.remember("Lisbon", entry_id="city"),
               lambda s, k: s.remember("Braga", entry_id="city", upsert=True, idempotency_key=k),
               lambda s: s.remember("Porto", entry_id="city", upsert=True)),
    "unchanged upsert": (lambda s: s.remember("Lisbon", entry_id="city"),
                         lambda s, k: s.remember("Lisbon", entry_id="city", upsert=True, idempotency_key=k),
                         lambda s: s.remember("Porto", entry_id="city", upsert=True)),
    "revise": (lambda s: s.remember("Lisbon", entry_id="city"),
               lambda s, k: s.revise("city", text="Braga", expected_version=1, idempotency_key=k),
               lambda s: s.revise("city", text="Porto", expected_version=2)),
    "retire": (lambda s: s.remember("Lisbon", entry_id="city"),
               lambda s, k: s.retire("city", expected_version=1, idempotency_key=k),
               lambda s: s.reactivate("city", expected_version=1)),
    "reactivate": (lambda s: (s.remember("Lisbon", entry_id="city"), s.retire("city", expected_version=1)),
                   lambda s, k: s.reactivate("city", expected_version=1, idempotency_key=k),
                   lambda s: s.retire("city", expected_version=1)),
    "forget": (lambda s: s.remember("555-0100", entry_id="phone"), lambda s, k: s.forget("phone", idempotency_key=k),
               lambda s: s.remember("555-0199", entry_id="phone")),
    "forget_scope": (lambda s: s.remember("555-0100", entry_id="phone"),
                     lambda s, k: s.forget_scope(idempotency_key=k), lambda s: s.remember("written after")),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_keyed_write_sent_again_answers_its_first_outcome_and_changes_nothing(scope, name):
    seed, write, other = WRITES[name]
    seed(scope)
    first = write(scope, f"key-{name.replace(' ', '-')}")
    other(scope)
    revisions, entries = scope.revisions(), scope.list(state="all").entries
    assert write(scope, f"key-{name.replace(' ', '-')}") == first
    assert scope.revisions() == revisions and scope.list(state="all").entries == entries


def test_a_key_names_one_write(runtime, scope):
    scope.remember("Lisbon", entry_id="city", idempotency_key="k1")
    with pytest.raises(pcmem.InputError, match="idempotency_key 'k1' was used for another write"):
        scope.revise("city", text="Braga", expected_version=1, idempotency_key="k1")
    with pytest.raises(pcmem.InputError, match="was used for another write"):  # the same write, another scope
        runtime.memory.for_scope("other").remember("Lisbon", entry_id="city", idempotency_key="k1")
    with pytest.raises(pcmem.InputError, match="idempotency_key must be 1..128 printable ASCII"):
        scope.remember("x", idempotency_key="with space")


def test_a_refused_write_records_nothing_and_runs_again(backend, scope):
    """A refusal commits nothing: sent again, it runs on the store as it is then."""
    scope.remember("Lisbon", entry_id="city")
    with pytest.raises(pcmem.RevisionConflictError):
        scope.revise("city", text="Braga", expected_version=2, idempotency_key="r1")
    assert _recorded(backend, "r1") is None
    scope.revise("city", text="Lisbon!", expected_version=1)
    assert scope.revise("city", text="Braga", expected_version=2, idempotency_key="r1").memory.revision == 3


def test_records_hold_ids_not_text(backend, scope):
    written = scope.remember("my secret is 4242", entry_id="secret", metadata={"pin": "4242"}, reason="pin 4242",
                             idempotency_key="w1")
    scope.forget("secret", idempotency_key="f1")
    for key in ("w1", "f1"):
        record = _recorded(backend, key)
        assert record is not None and "4242" not in record.outcome and "4242" not in record.fingerprint
    assert written.citations[0].entry_id == "secret"


def test_a_remember_the_gate_skipped_records_its_duplicates_without_their_text(backend, runtime):
    from pcmem.types.decision import DecisionOutcome, DecisionResult

    class Always:
        policy_id = "test.always-yes"

        def evaluate(self, request):  # noqa: ANN001, ANN202
            return DecisionResult(outcome=DecisionOutcome.YES, policy_id=self.policy_id)

    scope = runtime.memory.for_scope("project")
    scope.remember("We deploy on Fridays.")
    runtime.use_write_gate(Always())
    first = scope.remember("We deploy on Fridays!", idempotency_key="g1")
    assert [d.text for d in first.duplicates] == ["We deploy on Fridays!"] and not first.citations
    record = _recorded(backend, "g1")
    assert record is not None and "Fridays" not in record.outcome
    assert scope.remember("We deploy on Fridays!", idempotency_key="g1") == first


def test_records_are_dropped_after_their_time_by_later_writes(backend, scope, clock, monkeypatch):
    monkeypatch.setattr(common, "PRUNE_EVERY", 1)
    scope.remember("first", idempotency_key="old")
    clock.now += timedelta(hours=23)
    scope.remember("second", idempotency_key="younger")
    assert _recorded(backend, "old") is not None  # 23 hours: kept
    clock.now += timedelta(hours=2)
    scope.remember("third", idempotency_key="newest")
    assert _recorded(backend, "old") is None  # over 24 hours
    assert _recorded(backend, "younger") is not None


def test_past_the_most_kept_the_oldest_go_but_never_one_younger_than_an_hour(backend, scope, clock, monkeypatch):
    monkeypatch.setattr(common, "PRUNE_EVERY", 1)
    monkeypatch.setattr(common, "RECORDS_KEPT_AT_MOST", 2)
    for number in range(4):
        scope.remember(f"note {number}", idempotency_key=f"k{number}")  # seconds apart: all younger than an hour
    assert all(_recorded(backend, f"k{number}") is not None for number in range(4))
    clock.now += timedelta(hours=2)
    scope.remember("note 4", idempotency_key="k4")
    clock.now += timedelta(minutes=1)
    scope.remember("note 5", idempotency_key="k5")
    kept = [number for number in range(6) if _recorded(backend, f"k{number}") is not None]
    assert kept == [4, 5]  # k4 and k5 are the newest two; the four older ones are over an hour old


def test_two_threads_sending_one_keyed_write_in_one_group_apply_it_once(tmp_path):
    """The second copy runs in the same transaction as the first (group commit) and must see its record."""
    with pcmem.open(tmp_path / "g.duckdb", embedder=None) as opened:
        scope = opened.memory.for_scope("g")
        results: list[pcmem.WriteResult] = []
        with opened.backend.write_groups.held():
            threads = [threading.Thread(target=lambda: results.append(scope.remember("once", idempotency_key="same")))
                       for _ in range(2)]
            for thread in threads:
                thread.start()
            while opened.backend.write_groups.queued() < 2:
                threading.Event().wait(0.01)
        for thread in threads:
            thread.join(30)
        assert len(results) == 2 and results[0] == results[1]
        assert [e.entry.text for e in scope.list().entries] == ["once"]


def test_a_duckdb_store_from_before_recorded_writes_gets_them_on_open(tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    with pcmem.open(path, embedder=None) as opened:
        opened.memory.for_scope("p").remember("Deploys happen on Thursdays.")
    with duckdb.connect(str(path)) as db:  # rewind the file to before migration 0009
        db.execute("DROP TABLE recorded_writes")
        db.execute("DELETE FROM pcmem_migrations WHERE name >= '0009'")
    with pcmem.open(path, embedder=None) as opened:
        scope = opened.memory.for_scope("p")
        first = scope.remember("Lunch is at noon.", idempotency_key="after-upgrade")
        assert scope.remember("Lunch is at noon.", idempotency_key="after-upgrade") == first
        assert len(scope.list().entries) == 2


def test_a_seekdb_store_of_schema_version_2_gets_recorded_writes_on_open(seekdb_url):
    from pcmem.store.seekdb.connector import Connector, parse
    from pcmem.store.seekdb.schema import SCHEMA_VERSION, meta

    with pcmem.open(seekdb_url, embedder=None) as opened:
        opened.memory.for_scope("p").remember("Deploys happen on Thursdays.")
    db = Connector(parse(seekdb_url)).connect()
    try:  # rewind the store to schema version 2
        db.run("DROP TABLE recorded_writes")
        db.run("UPDATE pcmem_meta SET meta_value = '2' WHERE meta_key = 'schema_version'")
    finally:
        db.close()
    with pcmem.open(seekdb_url, embedder=None) as opened:
        scope = opened.memory.for_scope("p")
        first = scope.remember("Lunch is at noon.", idempotency_key="after-upgrade")
        assert scope.remember("Lunch is at noon.", idempotency_key="after-upgrade") == first
        assert len(scope.list().entries) == 2
    db = Connector(parse(seekdb_url)).connect()
    try:
        assert meta(db, "schema_version") == SCHEMA_VERSION == "3"
    finally:
        db.close()
