"""``pcmem demo`` and how a command chooses its store (``--db``, ``PCMEM_DB``, the per-user default).

End-to-end through click's CliRunner, each test on its own store file under ``tmp_path`` (helpers: tests/cli_runner.py;
seeded stores: tests/cli/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import (
    SCOPE,
    entries_by_id,
    head,
    invoke,
    ok,
    remember,
    run,
    run_json,
    scopes,
    store_bytes,
    store_path,
)

from pcmem.cli.demo_data import DEMO_EDITS, DEMO_ENTRIES, DEMO_SCOPE

# --- 7. demo --------------------------------------------------------------------------------------------------------


def _demo_expectations() -> tuple[int, int, int]:
    """(active, retired, head) that seeding DEMO_ENTRIES then applying DEMO_EDITS must produce."""
    retired = {entry_id for op, entry_id, _ in DEMO_EDITS if op == "retire"}
    return len(DEMO_ENTRIES) - len(retired), len(retired), 1 + len(DEMO_EDITS)


def test_demo_expectations_match_the_documented_numbers() -> None:
    assert _demo_expectations() == (17, 1, 3)


def test_demo_seeds_the_demo_scope(tmp_path: Path, demo: dict[str, Any]) -> None:
    active, retired, head_revision = _demo_expectations()
    assert demo["created"] is True
    assert demo["page"]["memory"]["scope"] == DEMO_SCOPE
    assert demo["page"]["memory"]["revision"] == head_revision

    summary = scopes(tmp_path)[DEMO_SCOPE]
    assert (summary["active_count"], summary["retired_count"], summary["head_revision"]) == (
        active, retired, head_revision,
    )

    page = entries_by_id(demo["page"])
    edited = {entry_id for _, entry_id, _ in DEMO_EDITS}
    assert set(page) == {entry_id for entry_id, *_ in DEMO_ENTRIES}
    for entry_id, kind, text, metadata in DEMO_ENTRIES:
        entry = page[entry_id]["entry"]
        assert (entry["kind"], entry["metadata"]) == (kind, metadata)
        if entry_id not in edited:
            assert (entry["text"], entry["version"], page[entry_id]["state"]) == (text, 1, "active")
    for op, entry_id, text in DEMO_EDITS:
        if op == "revise":
            assert (page[entry_id]["entry"]["text"], page[entry_id]["entry"]["version"]) == (text, 2)
            assert page[entry_id]["state"] == "active"
        else:
            assert page[entry_id]["state"] == "retired"

    # Revision 1 is the original import: everything active at version 1.
    original = entries_by_id(run_json(tmp_path, "list", "--scope", DEMO_SCOPE, "--revision", "1", "--all"))
    assert {(e["state"], e["entry"]["version"]) for e in original.values()} == {("active", 1)}
    assert {eid: e["entry"]["text"] for eid, e in original.items()} == {eid: text for eid, _, text, _ in DEMO_ENTRIES}


def test_demo_twice_leaves_the_scope_unchanged(tmp_path: Path, demo: dict[str, Any]) -> None:
    before = store_bytes(tmp_path)
    again = run_json(tmp_path, "demo")
    assert again["created"] is False
    assert again["db"] == str(store_path(tmp_path))
    assert again["page"] == demo["page"]  # same head revision, same entries
    assert again["page"]["memory"]["revision"] == _demo_expectations()[2]
    text_run = ok(run(tmp_path, "demo"))
    assert "already present" in text_run.stdout
    assert head(tmp_path, DEMO_SCOPE) == _demo_expectations()[2]
    assert store_bytes(tmp_path) == before


def test_demo_into_a_custom_scope(tmp_path: Path) -> None:
    active, retired, head_revision = _demo_expectations()
    assert run_json(tmp_path, "demo", "--scope", "sandbox")["created"] is True
    summary = scopes(tmp_path)
    assert list(summary) == ["sandbox"]
    assert (summary["sandbox"]["active_count"], summary["sandbox"]["retired_count"]) == (active, retired)
    assert summary["sandbox"]["head_revision"] == head_revision


def test_demo_does_not_touch_an_existing_scope_of_that_name(tmp_path: Path) -> None:
    remember(tmp_path, DEMO_SCOPE, "My own entry.", "--id", "mine")
    result = run_json(tmp_path, "demo")
    assert result["created"] is False
    assert result["page"]["memory"]["revision"] == 1
    assert list(entries_by_id(result["page"])) == ["mine"]


# --- 8. PCMEM_DB ------------------------------------------------------------------------------------------------------


def test_pcmem_db_env_selects_the_store(tmp_path: Path) -> None:
    path = tmp_path / "from-env.duckdb"
    env = {"PCMEM_DB": str(path)}

    where = json.loads(ok(invoke(["where", "--json"], env=env)).stdout)
    assert where == {"db": str(path), "exists": False}

    ok(invoke(["remember", "--scope", SCOPE, "--id", "env-entry", "Via the environment."], env=env))
    assert path.is_file()
    assert json.loads(ok(invoke(["where", "--json"], env=env)).stdout) == {"db": str(path), "exists": True}

    # The same file opened explicitly holds the entry.
    shown = json.loads(ok(invoke(["--db", str(path), "show", "--scope", SCOPE, "env-entry", "--json"])).stdout)
    assert shown["entry"]["text"] == "Via the environment."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from-env.duckdb"]


def test_db_option_wins_over_pcmem_db(tmp_path: Path) -> None:
    env_path, option_path = tmp_path / "env.duckdb", tmp_path / "option.duckdb"
    result = invoke(["--db", str(option_path), "where", "--json"], env={"PCMEM_DB": str(env_path)})
    assert json.loads(ok(result).stdout) == {"db": str(option_path), "exists": False}


def test_where_falls_back_to_the_per_user_default(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    where = json.loads(ok(invoke(["where", "--json"], env=env)).stdout)
    assert where == {"db": str(tmp_path / "xdg" / "pcmem" / "memory.duckdb"), "exists": False}
    assert not (tmp_path / "xdg").exists()  # `where` never opens (or creates) the store

    plain = ok(invoke(["where"], env=env))
    assert plain.stdout == where["db"] + "\n"
