"""``pcmem search`` and ``pcmem reindex``."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import click

from pcmem.cli import owner_reads, render
from pcmem.cli.fusion_command import SOURCES
from pcmem.cli.rerank_option import rerank_option
from pcmem.errors import InputError, StoreError
from pcmem.rerank_policies import model_policy_names
from pcmem.settings import SEARCH_FUSIONS
from pcmem.validation import metadata_filter
from pcmem.vocabulary import MAX_SEARCH_LIMIT, SEARCH_MODES, SearchMode

if TYPE_CHECKING:
    from pcmem.rerank.choice import RerankerChoice


def _print_page(page: dict[str, Any], query: str) -> None:
    """A search's page as a table, from the page as its model dumps it to JSON: what the owner sends, so a search it
    answered (:mod:`pcmem.cli.owner_reads`) prints exactly what one searched here prints."""
    if not page["memories"]:
        render.console.print("no memory in this scope yet: nothing to search")
        return
    where = ", ".join(f"{m['scope']!r} @ revision {m['revision']}" for m in page["memories"])
    fused = "" if page["fusion"] == "rrf" else f", fusion {page['fusion']}"
    hits = page["hits"]
    header = f"{len(hits)} hits for {query!r} in {where} (mode {page['mode']}{fused})"
    if not hits:  # an empty table only wraps its title into a narrow column
        render.console.print(f"no hits for {query!r} in {where} (mode {page['mode']}): no entry passed admission "
                             "(enough query terms, or cosine ≥ 0.3)")
        return
    trace = page["rerank"]
    coarse_rank = {_cited(hit): rank for rank, hit in enumerate(trace["candidates"], start=1)} if trace else {}
    render.table(
        header,
        ("#", "coarse", "score", "via", "entry", "text") if trace else ("#", "score", "via", "entry", "text"),
        [((rank, coarse_rank.get(_cited(hit), "")) if trace else (rank,))
         + (f"{hit['score']:.4f}", "+".join(hit["matched_by"]), hit["citation"]["entry_id"],
            render.preview(hit["text"], 56))
         for rank, hit in enumerate(hits, start=1)],
    )
    if page["fusion"] != "rrf":
        parameters = ", ".join(f"{name}={value}" for name, value in page["fusion_parameters"].items())
        render.console.print(f"fusion {page['fusion']}({parameters}), {SOURCES[page['fusion_source']]}: a "
                             "non-contract option (the contract's is rrf)")
    if trace:
        usage = trace["usage"]
        render.console.print(
            f"rerank {trace['policy_id']}: kept {len(trace['selected_ranks'])} of {len(trace['candidates'])} "
            f"(ranks {list(trace['selected_ranks'])}), discarded {trace['discarded_rank_count']}, "
            f"fallback {'yes' if trace['used_fallback'] else 'no'}, {trace['latency_ms']:.0f} ms, "
            f"{usage['requests']} requests, {usage['input_tokens']}+{usage['output_tokens']} tokens"
            + (f", {trace['decision_calls']} decisions" if trace["decision_calls"] is not None else "")
            + (f", cosine under {trace['embedder']}" if trace["embedder"] else "")
        )


def _cited(hit: dict[str, Any]) -> tuple[str, str]:
    """A hit's identity in a page's JSON (its memory and entry version): a reranked hit is one of the coarse pool's."""
    return hit["citation"]["artifact_id"], hit["citation"]["entry_version_id"]


def _where(pairs: tuple[str, ...]) -> dict[str, Any] | None:
    """``--where KEY=JSON`` pairs as a metadata filter (see :func:`pcmem.validation.metadata_filter`)."""
    return metadata_filter(pairs)


@click.command()
@click.option("--scope", "-s", "scopes", required=True, multiple=True,
              help="The scope to search; repeat it to search several scopes in one RRF.")
@click.option("--kind", "kinds", multiple=True, help="Only entries of this kind (repeatable).")
@click.option("--where", "where", multiple=True, metavar="KEY=JSON",
              help='Only entries whose metadata KEY equals the JSON value, e.g. --where user=\'"ana"\' (repeatable).')
@click.option("--created-from", type=click.DateTime(), default=None, help="Only versions created at/after (UTC).")
@click.option("--created-before", type=click.DateTime(), default=None, help="Only versions created before (UTC).")
@click.option("--mode", type=click.Choice(SEARCH_MODES), default="auto", show_default=True,
              help="auto = hybrid when vectors are available, else full-text.")
@click.option("--limit", "-n", type=click.IntRange(1, MAX_SEARCH_LIMIT), default=10, show_default=True)
@click.option("--fusion", type=click.Choice(SEARCH_FUSIONS), default=None,
              help="How hybrid fuses its channels: rrf (the contract's), or non-contract for more recall: "
                   "weighted-rrf (a weight per channel, small k) or convex (weighted min-max normalised scores) "
                   "(default: $PCMEM_SEARCH_FUSION, else the store's default, see `pcmem fusion`, else rrf).")
@rerank_option("(Default: as configured by the environment.)")
@click.option("--rerank-embedder", metavar="PRESET|DIR", default=None,
              help="--rerank embedding: order by this embedder's cosine instead of the store's own "
                   "(e.g. embeddinggemma-300m over a MiniLM store).")
@click.option("--model", metavar="PROVIDER:NAME", default=None,
              help="Generation model, e.g. llama-cpp:qwen2.5-coder-1.5b-instruct or llama-cpp:/path/model.gguf "
                   "(default: $POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL).")
@click.argument("query")
@render.json_option
def search(scopes: tuple[str, ...], kinds: tuple[str, ...], where: tuple[str, ...], created_from: datetime | None,
           created_before: datetime | None, mode: str, limit: int, fusion: str | None, rerank: str | None, rerank_embedder: str | None,
           model: str | None, query: str,
           as_json: bool) -> None:
    """Search a scope's head revision: BM25 full-text + vectors, fused with RRF, optionally reranked.

    \b
    Examples:
      pcmem search --scope pcmem-demo "when do releases go out?"
      pcmem search --scope pcmem-demo --rerank listwise --model llama-cpp:smollm2-135m-instruct "release day"
      pcmem search --scope user:ana --scope project --kind decision --where source='"standup"' "release day"
    """
    store = click.get_current_context().obj
    page = owner_reads.search_answered(
        store, scopes, query, limit=limit, mode=cast(SearchMode, mode), fusion=fusion,
        filtered=owner_reads.filtered(kinds, where, created_from, created_before), rerank=rerank,
        rerank_embedder=rerank_embedder, model=model)
    if page is None:
        page = _search_here(store, scopes, kinds, where, created_from, created_before, mode, limit, fusion, rerank,
                            rerank_embedder, model, query, as_json)
    if as_json:
        render.emit_json(page)
    else:
        _print_page(page, query)


def _search_here(store: Any, scopes: tuple[str, ...], kinds: tuple[str, ...], where: tuple[str, ...],
                 created_from: datetime | None, created_before: datetime | None, mode: str, limit: int,
                 fusion: str | None, rerank: str | None, rerank_embedder: str | None, model: str | None, query: str,
                 as_json: bool) -> dict[str, Any]:
    """The search through the library (this process owns the store, or is its owner's full client): its page as
    the model dumps it to JSON."""
    from pcmem.cli.progress import progress_bar
    from pcmem.config import InferenceConfig
    from pcmem.store.port import searching_once
    from pcmem.types.search import SearchMemoryRequest

    request = SearchMemoryRequest(  # validate before loading any model
        query=query, limit=limit, mode=mode, kinds=list(kinds) or None, metadata=_where(where),
        created_from=created_from, created_before=created_before, fusion=fusion)
    reranking = rerank is not None and rerank != "none"
    runtime = store.open(create=False, embeds=mode != "fts" or reranking)
    # no --rerank: as the environment configures it; --rerank none: no rerank, whatever the environment says
    reranker: RerankerChoice = "none" if rerank == "none" else "default"
    if reranking:  # beside an owner this only names the reranker: the owning process loads and runs the model
        inference = InferenceConfig.from_env(generation_model=model)
        with progress_bar("verifying model", enabled=not as_json and runtime.owner_pid is None,
                          bytes_=True) as advance:
            reranker = runtime.build_reranker(rerank, inference, advance,
                                              rerank_embedder=rerank_embedder)
    # one search and the process exits: no in-process search view is built for it (see searching_once)
    with progress_bar("reranking", enabled=not as_json and rerank in model_policy_names()) as advance, \
            searching_once():
        if len(scopes) == 1:
            page = runtime.memory.for_scope(scopes[0]).search(request, reranker=reranker, progress=advance)
        else:
            page = runtime.memory.search(request, scopes=scopes, reranker=reranker, progress=advance)
    return cast(dict[str, Any], page.model_dump(mode="json"))


@click.command()
@click.option("--analyzer", type=click.Choice(["v1", "v2"]), default=None,
              help="Also rebuild the full-text index with this analyzer (v1: upstream exact; v2: + stopwords, stemming).")
@click.option("--embedder", "embedder_choice", metavar="PRESET|DIR", default=None,
              help="Switch the store to this embedding model (see `pcmem models`). Old vectors stay in use until "
                   "every entry has a new one; an interrupted switch resumes when run again.")
@click.option("--rerank-embedder", "rerank_choice", metavar="PRESET|DIR|none", default=None,
              help="Instead: keep this second embedder's vectors for `--rerank embedding` (the store's secondary "
                   "profile; replaces another one, `none` drops it) and embed what is missing. Resumable.")
@render.json_option
def reindex(analyzer: str | None, embedder_choice: str | None, rerank_choice: str | None, as_json: bool) -> None:
    """Embed every active entry lacking a vector, or switch the store to another embedding model.

    \b
    Examples:
      pcmem reindex
      pcmem reindex --embedder mpnet-base-int8
      pcmem reindex --rerank-embedder embeddinggemma-300m
      pcmem reindex --analyzer v1
    """
    from pcmem.cli.progress import progress_bar

    runtime = click.get_current_context().obj.runtime
    if rerank_choice is not None:
        if analyzer is not None or embedder_choice is not None:
            raise InputError("--rerank-embedder runs on its own: reindex with --embedder/--analyzer separately")
        _reindex_secondary(runtime, rerank_choice, as_json)
        return
    if analyzer is not None:
        from pcmem.cli.check_command import require_file_maintenance

        repaired = require_file_maintenance(runtime.backend, "reindex --analyzer").repair(analyzer=analyzer)
        if repaired.damaged_blocks:  # left unchanged: the file has damaged blocks (`pcmem check` says what to do)
            raise StoreError(f"the index was not rebuilt: {repaired.problems[0]}; run `pcmem check`")
    with progress_bar("embedding", enabled=not as_json) as advance:
        report = runtime.reindex(advance, embedder=embedder_choice)
    result = {
        "analyzer": runtime.backend.analyzer.name,
        "profile": report.profile.describe(),
        "previous_profile": report.previous_profile.describe() if report.previous_profile else None,
        "switched": report.switched,
        "embedded": report.embedded,
        "seconds": round(report.seconds, 3),
        "entries_per_second": round(report.embedded / report.seconds, 1) if report.seconds and report.embedded else None,
    }
    if as_json:
        render.emit_json(result)
    else:
        switched = f" (switched from {result['previous_profile']})" if report.switched else ""
        render.console.print(f"embedded {report.embedded} entries with {result['profile']} in {result['seconds']} s"
                             + switched)


def _reindex_secondary(runtime: Any, choice: str, as_json: bool) -> None:
    from pcmem.cli.progress import progress_bar

    with progress_bar("embedding (secondary)", enabled=not as_json) as advance:
        report = runtime.reindex_secondary(advance, embedder=choice)
    if report is None:
        result: dict[str, Any] = {"secondary_profile": None}
        message = "the store keeps no secondary embedding profile now"
    else:
        result = {
            "secondary_profile": report.profile.describe(),
            "previous_secondary_profile": report.previous_profile.describe() if report.previous_profile else None,
            "embedded": report.embedded,
            "seconds": round(report.seconds, 3),
        }
        replaced = f" (replacing {result['previous_secondary_profile']})" if report.switched and \
            report.previous_profile else ""
        message = (f"embedded {report.embedded} entries with {result['secondary_profile']} in {result['seconds']} s "
                   f"as the secondary profile{replaced}: `--rerank embedding` reads them")
    if as_json:
        render.emit_json(result)
    else:
        render.console.print(message)


def register(group: click.Group) -> None:
    group.add_command(search)
    group.add_command(reindex)
