"""``--rerank``, as ``pcmem search``, ``pcmem serve`` and ``pcmem mcp`` take it: its choices and its help are read
from the declared policies (:mod:`pcmem.rerank_policies`) when the command parses or shows its help, so a policy
registered after the command was defined (a plugin's, a test's) is offered like the shipped ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from pcmem import rerank_policies


class PolicyChoice(click.Choice):
    """``none`` or a declared policy, looked up each time (click keeps a fixed tuple)."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return (rerank_policies.NO_RERANK, *rerank_policies.policy_names())

    @choices.setter
    def choices(self, _fixed: Sequence[str]) -> None:
        pass  # click.Choice.__init__ assigns the tuple it was given; the declarations are the list


class _PolicyOption(click.Option):
    """Its help lists each policy with its summary, then what the command adds (``more``)."""

    def __init__(self, *args: Any, more: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.more = more

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = " ".join(filter(None, (rerank_policies.help_text(), self.more)))
        return super().get_help_record(ctx)


def rerank_option(more: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--rerank`` option; ``more`` ends its help (e.g. what the command does when it is not given)."""
    return click.option("--rerank", cls=_PolicyOption, type=PolicyChoice(), default=None, more=more)
