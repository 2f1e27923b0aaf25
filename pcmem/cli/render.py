"""Output for people and for scripts. Every command prints either rich text or, with ``--json``, one JSON document."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

    #: stdout and stderr consoles, made on first use (a ``--json`` call never imports rich).
    console: Console
    err_console: Console

F = TypeVar("F", bound=Callable[..., Any])


def _make_console(stderr: bool = False) -> Console:
    from rich.console import Console

    # markup and emoji codes off: entry texts, ids and scopes are user data, never rich markup ("[/]" must print).
    made = Console(stderr=stderr, highlight=False, markup=False, emoji=False)
    if not made.is_terminal:
        made.width = 200  # piped output: don't fold citations and ids at rich's 80-column default
    return made


def __getattr__(name: str) -> Any:
    if name in ("console", "err_console"):
        made = globals()[name] = _make_console(stderr=name == "err_console")  # later lookups find the global
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The ``--scope`` option of every command that works on one scope.
scope_option = click.option("--scope", "-s", required=True, help="The scope (one Memory per scope).")


def json_option(function: F) -> F:
    """The ``--json`` flag every command takes."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")(function)


def to_jsonable(value: Any) -> Any:
    """A pcmem value (a pydantic model) as its model dumps it to JSON; lists and dicts of them likewise. Recognised
    by its ``model_dump``: a command printing JSON it received (a search the owner answered) imports no pydantic."""
    if callable(getattr(value, "model_dump", None)):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    return value


def emit_json(value: Any) -> None:
    click.echo(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2))


def preview(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(title: str | None, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> None:
    from rich.table import Table

    grid = Table(title=title, title_justify="left", show_edge=False, header_style="bold")
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*(str(cell) for cell in row))
    (globals().get("console") or __getattr__("console")).print(grid)
