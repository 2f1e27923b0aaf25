"""Issue 26 item 10: a paging cursor is signed with the store's own secret, so whatever a client hands back is a page
of the scope it asked for or an InputError — never a traceback, another scope's data, or a revision past the head.

Cursors before this change carried an unkeyed hash prefix: anyone could edit one and sign it again (``_unkeyed``
below makes exactly such a cursor).
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil

import duckdb
import pytest
from fakes import read_only_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcmem
from pcmem import InputError, InvalidCursorError, ListRequest, NewEntry, RememberRequest

NOT_VALID = "this cursor is not valid for this scope; start again without a cursor"


def _unkeyed(fields: dict) -> str:
    """A cursor signed the way pcmem did before cursors were keyed (sha256 prefix of the body, no secret)."""
    body = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    return base64.urlsafe_b64encode(f"{digest}:{body}".encode()).decode().rstrip("=")


def _seed(scope, prefix: str, count: int) -> None:
    scope.remember(RememberRequest(entries=tuple(NewEntry(text=f"{prefix} note {i}", entry_id=f"{prefix}{i}")
                                                 for i in range(count))))


@pytest.fixture(scope="module")
def two_scopes(tmp_path_factory):
    """Scope ``a`` (three revisions) and scope ``b``, with a list and a changes cursor of ``a``."""
    path = tmp_path_factory.mktemp("cursors") / "c.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        a, b = runtime.memory.for_scope("a"), runtime.memory.for_scope("b")
        for _ in range(3):
            _seed(a, f"r{a.head().revision + 1 if a.head() else 1}-", 3)
        _seed(b, "b", 5)
        cursors = {"list": a.list(ListRequest(limit=2)).next_cursor, "changes": a.changes(0, limit=2).next_cursor}
        yield runtime, a, b, cursors


def _forged(artifact_id: str, head: int) -> dict[str, dict]:
    """The fields the unkeyed cursors held, for each read: what a client would edit and sign again."""
    return {
        "list": {"k": "list", "a": artifact_id, "r": head, "s": "active", "h": head, "after": "r1-1"},
        "changes": {"k": "changes", "a": artifact_id, "r": head, "since": 0, "after_revision": 1,
                    "after_entry": "r1-1"},
    }


def _use(scope, kind: str, cursor: object):
    return scope.list(ListRequest(limit=2, cursor=cursor)) if kind == "list" else scope.changes(0, limit=2,
                                                                                                 cursor=cursor)


def _answer_is_own_or_input_error(scope, kind: str, cursor: object) -> None:
    try:
        page = _use(scope, kind, cursor)
    except InputError:
        return
    own = scope.head()
    assert page.memory is not None and page.memory.artifact_id == own.artifact_id
    assert page.memory.revision <= own.revision
    if kind == "list":
        assert all(entry.citation.artifact_id == own.artifact_id for entry in page.entries)


_json_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                         st.text(max_size=12), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                                                    st.integers(),
                                                                                                    max_size=2))


@st.composite
def _edits(draw, cursor: str, fields: dict) -> str:
    """A string edit, a byte edit under the base64, or the fields edited and signed again without the key."""
    how = draw(st.sampled_from(["insert", "delete", "replace", "truncate", "bytes", "resign"]))
    if how == "resign":
        edited = dict(fields)
        key = draw(st.sampled_from(sorted(edited) + ["extra"]))
        if draw(st.booleans()) and key in edited:
            del edited[key]
        else:
            edited[key] = draw(_json_values)
        return _unkeyed(edited)
    if how == "bytes":
        raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        at = draw(st.integers(0, len(raw) - 1))
        raw[at] ^= draw(st.integers(1, 255))
        return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    at = draw(st.integers(0, len(cursor)))
    if how == "truncate":
        return cursor[:at]
    if how == "delete":
        return cursor[:at] + cursor[at + draw(st.integers(1, 8)):]
    piece = draw(st.text(min_size=1, max_size=4))
    return cursor[:at] + piece + cursor[at + (len(piece) if how == "replace" else 0):]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(["list", "changes"]))
def test_an_edited_cursor_is_an_input_error_or_a_page_of_the_scope_asked(two_scopes, data, kind):
    _, a, b, cursors = two_scopes
    fields = _forged(a.head().artifact_id, a.head().revision)[kind]
    edited = data.draw(_edits(cursors[kind], fields))
    _answer_is_own_or_input_error(a, kind, edited)
    _answer_is_own_or_input_error(b, kind, edited)


@pytest.mark.parametrize(("kind", "edit"), [
    ("list", {}),  # unedited: a cursor issued before cursors were keyed is refused the same way
    ("list", {"r": "x"}),  # ValueError before
    ("list", {"h": None}),  # TypeError before
    ("list", {"after": [1]}),  # a page of a listing nobody issued before
    ("list", {"r": 99}),  # RevisionNotFoundError before
    ("changes", {"r": 99}),  # a page pinned past the head before
    ("changes", {"after_revision": None}),
])
def test_a_cursor_edited_and_signed_again_is_refused_in_one_line(two_scopes, kind, edit):
    _, a, _, _ = two_scopes
    fields = {**_forged(a.head().artifact_id, a.head().revision)[kind], **edit}
    with pytest.raises(InvalidCursorError) as refused:
        _use(a, kind, _unkeyed(fields))
    assert str(refused.value) == NOT_VALID


def test_a_cursor_missing_a_field_is_refused(two_scopes):
    _, a, _, _ = two_scopes
    fields = _forged(a.head().artifact_id, a.head().revision)["list"]
    del fields["h"]  # KeyError before
    with pytest.raises(InvalidCursorError, match="start again without a cursor"):
        _use(a, "list", _unkeyed(fields))


@pytest.mark.parametrize("cursor", [5, b"abc", "", "€€€", "x" * 100_000, "====", "YQ"])
def test_a_cursor_that_is_no_cursor_at_all_is_an_input_error(two_scopes, cursor):
    _, a, _, _ = two_scopes
    with pytest.raises(InputError):
        _use(a, "changes", cursor)
    with pytest.raises(InputError):
        _use(a, "list", cursor)


def test_a_cursor_of_another_scope_is_refused(two_scopes):
    _, a, b, cursors = two_scopes
    for kind in ("list", "changes"):
        with pytest.raises(InvalidCursorError) as refused:
            _use(b, kind, cursors[kind])
        assert str(refused.value) == NOT_VALID


def test_a_cursor_pinned_past_the_head_of_a_restored_copy_is_refused(tmp_path):
    """The store is put back from an older copy: the cursors a client still holds name revisions that are gone."""
    path, backup = tmp_path / "m.duckdb", tmp_path / "backup.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        _seed(scope, "a", 5)
        assert scope.list(ListRequest(limit=2)).next_cursor  # the store has its secret from now on
    shutil.copy(path, backup)
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        _seed(scope, "b", 5)
        _seed(scope, "c", 5)
        pinned = {"list": scope.list(ListRequest(limit=2)).next_cursor, "changes": scope.changes(0, limit=2).next_cursor}
    shutil.copy(backup, path)
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        assert scope.head().revision == 1
        for kind, cursor in pinned.items():
            with pytest.raises(InvalidCursorError) as refused:
                _use(scope, kind, cursor)
            assert str(refused.value) == NOT_VALID


def test_cursors_stay_valid_after_the_store_is_closed_and_opened_again(tmp_path):
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        _seed(scope, "a", 5)
        cursor = scope.list(ListRequest(limit=2)).next_cursor
    connection = duckdb.connect(str(path), read_only=True)
    (secret,) = connection.execute("SELECT value FROM pcmem_meta WHERE key = 'paging_secret'").fetchone()
    connection.close()
    assert len(secret) == 64 and secret not in cursor
    with pcmem.open(path, embedder=None) as runtime:
        page = runtime.memory.for_scope("s").list(ListRequest(limit=2, cursor=cursor))
        assert [e.entry.entry_id for e in page.entries] == ["a2", "a3"]


def test_a_read_only_store_without_a_secret_pages_within_the_process(tmp_path, monkeypatch):
    """A store made before cursors were keyed, opened read-only: it cannot keep a secret, so this process signs with
    one of its own (never an unkeyed cursor)."""
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        _seed(runtime.memory.for_scope("s"), "a", 5)
    with read_only_file(path, monkeypatch):
        before = path.read_bytes()
        with pcmem.open(path, embedder=None) as runtime:
            scope = runtime.memory.for_scope("s")
            pages = [scope.list(ListRequest(limit=2))]
            while pages[-1].next_cursor:
                pages.append(scope.list(ListRequest(limit=2, cursor=pages[-1].next_cursor)))
            assert [e.entry.entry_id for p in pages for e in p.entries] == [f"a{i}" for i in range(5)]
        assert path.read_bytes() == before
