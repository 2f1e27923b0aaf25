"""Hostile input for ``pcmem bench chaos``: hypothesis generates text, metadata, JSONL files and CLI arguments.

Each case is accepted, or refused with a typed pcmem error (CLI: a one-line ``pcmem: error:`` or a click usage
error, exit status 2..14); anything else — another exception, a traceback, exit status 1 — is counted as untyped.
Most cases go through the library's validation (fast); one in :data:`CLI_ONE_IN` through the real CLI on a real
store file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pcmem.errors import PcmemError

CLI_ONE_IN = 20  # one case in 20 goes through the real CLI (≈ 0.1 s each); the rest through the library (≈ 1 ms)
_CONTROL = [chr(c) for c in [*range(0, 32), 127, *range(0x80, 0xA0)]]
_ODD = ["\u200b", "\ufeff", "\u2028", "\u2029", "\u202e", "\U0001f600", "e\u0301", "\ud800", "-", "--", "--help",
        "'; DROP TABLE memories; --", "fts_main_fts_docs", "%s", "{}", "[]", "\\", '"', "\x00", "\x1b[2J"]


def _strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    char = st.one_of(st.characters(codec="utf-8"), st.sampled_from(_CONTROL),
                     st.sampled_from([odd for odd in _ODD if len(odd) == 1]))
    text = st.one_of(st.text(char, max_size=60), st.sampled_from(_ODD),
                     st.lists(st.sampled_from(_ODD), max_size=4).map("".join),
                     st.integers(1, 9000).map(lambda n: "x" * n))
    json_value = st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-10**50, 10**50), st.floats(allow_nan=True),
                  st.text(char, max_size=20)),
        lambda children: st.one_of(st.lists(children, max_size=4),
                                   st.dictionaries(st.text(char, max_size=8), children, max_size=4)),
        max_leaves=20)
    raw_json = st.one_of(
        json_value.map(lambda v: json.dumps(v, ensure_ascii=False, allow_nan=True)),
        st.integers(1, 70000).map(lambda n: "[" * n),
        st.integers(1, 6000).map(lambda n: '{"n": ' + "9" * n + "}"),
        st.text(char, max_size=40),
    )
    record = st.fixed_dictionaries({"text": st.one_of(text, json_value)},
                                   optional={"kind": text, "metadata": json_value, "entry_id": text,
                                             "extra": json_value})
    line = st.one_of(record.map(lambda r: json.dumps(r, ensure_ascii=False)), raw_json, st.text(char, max_size=40))
    return {"text": text, "raw_json": raw_json, "jsonl": st.lists(line, min_size=0, max_size=6), "char": char}


def run(workdir: Path, cases: int, cli_main: Any, seed: int = 0):  # noqa: ANN201 - returns a Tally
    """``cli_main``: the click group to drive (``pcmem.cli.main``; the CLI sits above this layer, so it is passed in)."""
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as fixed_seed
        from hypothesis import strategies as st
    except ImportError:  # pragma: no cover - the test extra is installed wherever the campaign runs
        from pcmem.errors import ConfigurationError

        raise ConfigurationError("the hostile-input campaign needs hypothesis: pip install 'pcmem[test]'") from None
    from click.testing import CliRunner

    from pcmem.types.memory import Citation, NewEntry
    from pcmem.validation import normalize_text, parse_metadata_json, validate_scope
    from pcmem_bench.tally import Tally

    tally = Tally(f"hostile input: {cases} hypothesis cases (text, metadata, JSONL, CLI arguments)")
    store = workdir / "hostile.duckdb"
    runner = CliRunner()
    counter = [0]
    acknowledged: list[tuple[str, Citation]] = []
    s = _strategies()

    def library(kind: str, value: Any) -> None:
        tally.operations += 1
        try:
            if kind == "text":
                normalize_text(value)
                validate_scope(value)
                NewEntry(text=value)
            else:
                parse_metadata_json(value)
        except PcmemError as error:
            tally.typed_errors[type(error).__name__] += 1
        except Exception as error:  # noqa: BLE001 - counting them is the point
            tally.untyped_errors.append(f"{kind}: {type(error).__name__}: {str(error)[:120]} for {value!r:.80}")

    def cli(args: list[str], input: str | None = None) -> None:
        tally.operations += 1
        # A process receives bytes on stdin: a lone surrogate arrives as its UTF-8-ish bytes, not as a str.
        stdin = None if input is None else input.encode("utf-8", "surrogatepass")
        try:
            result = runner.invoke(cli_main, ["--db", str(store), *args], input=stdin)
        except Exception as error:  # noqa: BLE001 - the harness itself must not stop the campaign
            tally.untyped_errors.append(f"cli {args[:3]!r:.100}: {type(error).__name__}: {str(error)[:120]}")
            return
        if result.exit_code == 0:
            if args[0] in ("remember", "import"):  # run with --json: the citations of what was acknowledged
                try:
                    written = json.loads(result.stdout)
                except ValueError:
                    return  # e.g. TEXT was "--help": click printed the help, nothing was written
                scope = written["memory"]["scope"]
                for citation in written["citations"]:
                    acknowledged.append((scope, Citation(**citation)))
            return
        output = result.stderr if hasattr(result, "stderr") else result.output
        typed = result.exit_code in range(2, 15) and isinstance(result.exception, SystemExit)
        if typed and "Traceback" not in result.output:
            first = output.strip().splitlines()[-1] if output.strip() else ""
            # A click usage error is one line too; it ends by pointing at the command's --help.
            tally.typed_errors["UsageError" if first.endswith("--help'.") else f"exit {result.exit_code}"] += 1
        else:
            tally.untyped_errors.append(f"cli {args[:3]!r:.100}: exit {result.exit_code}, "
                                        f"{type(result.exception).__name__}: {str(result.exception)[:120]}")

    @settings(max_examples=cases, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @fixed_seed(seed)
    @given(st.integers(0, CLI_ONE_IN - 1), s["text"], s["raw_json"], s["jsonl"], s["text"], s["text"])
    def case(route: int, text: str, raw: str, lines: list[str], scope: str, query: str) -> None:
        counter[0] += 1
        if route:
            library("text", text)
            library("metadata", raw)
            return
        if counter[0] % 3 == 0:
            source = workdir / "hostile.jsonl"
            source.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
            cli(["import", "--scope", "hostile", str(source), "--json"])
        elif counter[0] % 3 == 1:
            cli(["remember", "--scope", scope or "s", "--metadata", raw, text or "-", "--json"], input=query)
        else:
            cli(["search", "--scope", "hostile", "--mode", "fts", query or "q"])

    case()
    tally.acknowledged = len(acknowledged)
    if acknowledged:
        from pcmem_bench.tally import verify

        for scope in sorted({scope for scope, _ in acknowledged}):
            verify(store, scope, [c for s, c in acknowledged if s == scope], tally)
    return tally
