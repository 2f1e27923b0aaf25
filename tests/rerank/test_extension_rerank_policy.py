"""Adding a rerank policy is one declaration (pcmem.rerank_policies) plus its builder: a policy declared here, in the
test, is offered by ``--rerank`` on search, serve and mcp (choices and help), built by the library and the owner's
RerankSpec, and reranks a real search end to end. CONTRIBUTING.md shows the same steps."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import pytest
from click.testing import CliRunner

import pcmem
from pcmem import rerank_policies
from pcmem.cli import main
from pcmem.compose.rerankers import RerankBuild
from pcmem.owner.rerank_spec import RerankSpec
from pcmem.rerank_policies import RerankPolicyDeclaration
from pcmem.types.progress import Progress
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.search import MemoryHit


class Reverse:
    """The coarse pool, last first: a policy whose effect a test can see."""

    policy_id = "test.rerank.reverse.v1"

    def rerank(self, query: str, candidates: Sequence[MemoryHit], limit: int,
               progress: Progress | None = None) -> MemoryRerankDecision:
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1))[:limit])


def build_reverse(build: RerankBuild) -> Reverse:
    assert build.rerank_embedder is None  # the policy does not take one, so none reaches it
    return Reverse()


DECLARED = RerankPolicyDeclaration("reverse", "the coarse pool, last first", build_reverse, needs_model=False)


@pytest.fixture
def reverse() -> Iterator[RerankPolicyDeclaration]:
    rerank_policies.register(DECLARED)
    try:
        yield DECLARED
    finally:
        rerank_policies.unregister(DECLARED.name)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "rerank.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        scoped = runtime.memory.for_scope("s")
        for number, text in enumerate(("deploys go out on friday", "the friday deploy needs a review",
                                       "deploys on friday are frozen in december")):
            scoped.remember(pcmem.RememberRequest(entries=(pcmem.NewEntry(entry_id=f"e{number}", text=text),)))
    return path


def test_a_declared_policy_is_offered_by_every_rerank_option(reverse):
    runner = CliRunner()
    for command in (["search", "--help"], ["serve", "--help"], ["mcp", "--help"]):
        shown = runner.invoke(main, command, terminal_width=400).output
        assert "|reverse]" in shown and "reverse (the coarse pool, last first)" in shown, command
    assert "reverse" in rerank_policies.policy_names() and "reverse" not in rerank_policies.model_policy_names()
    assert RerankSpec(policy="reverse").policy == "reverse"  # what a client sends its store's owner


def test_a_declared_policy_reranks_a_search_from_the_command_line(reverse, store):
    def search(rerank: str) -> dict:
        done = CliRunner().invoke(main, ["--db", str(store), "search", "--scope", "s", "--mode", "fts", "--rerank",
                                         rerank, "--json", "friday deploys"])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)

    coarse, reversed_ = search("none"), search("reverse")
    assert [hit["citation"] for hit in reversed_["hits"]] == [hit["citation"] for hit in coarse["hits"]][::-1]
    assert reversed_["rerank"]["policy_id"] == Reverse.policy_id


def test_a_declared_policy_is_built_by_the_library(reverse, store):
    with pcmem.open(store, embedder=None) as runtime:
        reranker = runtime.build_reranker("reverse", runtime.inference)
        page = runtime.memory.for_scope("s").search(pcmem.SearchMemoryRequest(query="friday deploys", mode="fts"),
                                                    reranker=reranker)
        assert page.rerank is not None and page.rerank.policy_id == Reverse.policy_id
    with pytest.raises(pcmem.ConfigurationError, match="embedding policy only"):
        pcmem.build_reranker("reverse", pcmem.InferenceConfig(), rerank_embedder="minilm-l6-int8")


def test_an_undeclared_policy_is_refused_everywhere(store):
    with pytest.raises(pcmem.InputError, match="unknown rerank policy 'reverse'; known: listwise"):
        pcmem.build_reranker("reverse", pcmem.InferenceConfig())
    with pytest.raises(ValueError, match="unknown rerank policy"):
        RerankSpec(policy="reverse")
    done = CliRunner().invoke(main, ["--db", str(store), "search", "--scope", "s", "--rerank", "reverse", "x"])
    assert done.exit_code == 2 and "'reverse' is not one of 'none', 'listwise'" in done.output


def test_a_declared_name_cannot_be_declared_twice(reverse):
    with pytest.raises(pcmem.InputError, match="already declared"):
        rerank_policies.register(RerankPolicyDeclaration("listwise", "again", build_reverse))
    with pytest.raises(pcmem.InputError, match="already declared"):
        rerank_policies.register(RerankPolicyDeclaration("none", "no", build_reverse))
