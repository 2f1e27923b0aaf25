"""The rerank policies (``--rerank``), each declared once: its name, what the help texts say about it, whether it needs
a local generation model, whether it takes a second embedder, and the function that builds it.

Every list of policies is derived from these declarations: the command line's and the servers' ``--rerank`` choices
and help, :data:`RERANK_POLICIES` and :data:`MODEL_RERANK_POLICIES`, the owner's :class:`RerankSpec`, the
benchmarks'. Plain values without pydantic, so a ``pcmem search`` that the store's owner answers reads them for free;
the builder is a ``module:function`` reference, imported only when a reranker is built (it loads a model).

A new policy is one :class:`RerankPolicyDeclaration` in :data:`_BUILT_IN` (or :func:`register` from a plugin or a
test) plus its builder: a function that takes a :class:`pcmem.compose.rerankers.RerankBuild` and returns a
:class:`~pcmem.rerank.port.MemoryReranker` (CONTRIBUTING.md, "Extension points").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from pcmem.errors import InputError

#: A rerank policy's name: one of the declared policies (see :func:`policy_names`).
RerankPolicy: TypeAlias = str
#: What ``--rerank`` also accepts: no rerank, even when the environment configures one.
NO_RERANK = "none"


@dataclass(frozen=True, slots=True)
class RerankPolicyDeclaration:
    """One rerank policy: everything pcmem needs to offer it, describe it and build it."""

    name: str
    #: One clause for help texts (``--rerank``'s help lists each policy with it).
    summary: str
    #: ``"module:function"`` (imported when first built) or the function itself: takes a ``RerankBuild`` (the
    #: inference settings, progress, the second embedder, state shared by one run) and returns the reranker.
    build: str | Callable[[Any], Any]
    #: Whether it runs on the configured local generation model (``--model``): callers show model progress for it.
    needs_model: bool = True
    #: Whether ``--rerank-embedder`` (a second embedder) applies to it.
    takes_embedder: bool = False

    def builder(self) -> Callable[[Any], Any]:
        """The build function, imported now if it was declared by reference."""
        if not isinstance(self.build, str):
            return self.build
        module, _, function = self.build.partition(":")
        built: Callable[[Any], Any] = getattr(importlib.import_module(module), function)
        return built


_BUILD = "pcmem.compose.rerank_builds"
_BUILT_IN = (
    RerankPolicyDeclaration("listwise", "a local model orders the pool in one call", f"{_BUILD}:listwise"),
    RerankPolicyDeclaration("decision", "a local model keeps or drops each candidate", f"{_BUILD}:decision"),
    RerankPolicyDeclaration("decision-fill", "decision, then the coarse order fills the page",
                            f"{_BUILD}:decision_fill"),
    RerankPolicyDeclaration("embedding", "cosine under the store's embedder or --rerank-embedder; no model",
                            f"{_BUILD}:embedding", needs_model=False, takes_embedder=True),
)
_declared: dict[str, RerankPolicyDeclaration] = {policy.name: policy for policy in _BUILT_IN}

#: The policies pcmem ships (a plugin's or a test's registered ones are in :func:`policy_names`).
RERANK_POLICIES: tuple[RerankPolicy, ...] = tuple(policy.name for policy in _BUILT_IN)
#: The shipped policies that need a generation model (``--model``).
MODEL_RERANK_POLICIES: tuple[RerankPolicy, ...] = tuple(policy.name for policy in _BUILT_IN if policy.needs_model)


def builder_modules() -> tuple[str, ...]:
    """The modules the shipped policies' builders are declared in: imported by name when a reranker is built, so a
    bundler (pcmem's PyInstaller hook) must be told to include them."""
    return tuple(sorted({policy.build.partition(":")[0] for policy in _BUILT_IN if isinstance(policy.build, str)}))


def register(policy: RerankPolicyDeclaration) -> None:
    """Offer ``policy`` everywhere a policy can be named, from now on in this process. InputError when its name is
    taken (by another policy, or by ``none``)."""
    if policy.name in _declared or policy.name == NO_RERANK:
        raise InputError(f"a rerank policy named {policy.name!r} is already declared")
    _declared[policy.name] = policy


def unregister(name: RerankPolicy) -> None:
    """Withdraw a policy :func:`register` added (the shipped ones stay)."""
    if name not in RERANK_POLICIES:
        _declared.pop(name, None)


def declarations() -> tuple[RerankPolicyDeclaration, ...]:
    """Every declared policy, the shipped ones first."""
    return tuple(_declared.values())


def policy_names() -> tuple[RerankPolicy, ...]:
    return tuple(_declared)


def model_policy_names() -> tuple[RerankPolicy, ...]:
    return tuple(policy.name for policy in _declared.values() if policy.needs_model)


def named(name: object) -> RerankPolicyDeclaration:
    """The declaration of policy ``name``; InputError naming the known ones otherwise."""
    policy = _declared.get(name) if isinstance(name, str) else None
    if policy is None:
        raise InputError(f"unknown rerank policy {name!r}; known: {', '.join(_declared)}")
    return policy


def help_text() -> str:
    """``--rerank``'s help: each policy with its summary, from the declarations."""
    listed = "; ".join(f"{policy.name} ({policy.summary})" for policy in _declared.values())
    return f"Rerank the coarse pool: {listed}; {NO_RERANK} turns a configured rerank off."
