"""The command-line reference, generated from the click commands themselves: each command's usage, help text,
options and arguments (as ``--help`` prints them) and its exit statuses.

Exit statuses: every command ends 0 when done and with its error's status otherwise (one table for all commands,
:mod:`pcmem.errors` and docs/reference/exit-statuses.md); what a command adds (``check`` and ``doctor`` exit 1 when
they find problems) is the sentence of its own help that says so, quoted here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator

import click

#: A sentence of a command's help that gives one of its own exit statuses ("Exits 1 when ...", "(exit 7)").
_EXIT_SENTENCE = re.compile(r"[^.]*\b(?:[Ee]xit status|[Ee]xits|exit \d+)[^.]*\.")
_RST_LITERAL = re.compile(r"``([^`]+)``")
#: An example line: a ``pcmem`` command, perhaps after ``VAR=value`` settings.
_COMMAND_LINE = re.compile(r"^(?:\w+=\S*\s+)*pcmem\s")


def reference() -> str:
    """The whole reference page's generated part, as Markdown."""
    from pcmem.cli import main

    root = click.Context(main, info_name="pcmem", **main.context_settings)
    parts = [_global_options(main, root)]
    for context, command in _commands(main, root):
        parts.append(_command(context, command))
    if not _has_bench(main, root):
        parts.append("`pcmem bench …` is not listed: the benchmarks are the `pcmem-bench` distribution "
                     "(`pip install ./bench`), which was not installed where this page was built.")
    return "\n\n".join(parts) + "\n"


def command_paths() -> list[str]:
    """Every command's full name (``pcmem mcp install``), for tests."""
    from pcmem.cli import main

    root = click.Context(main, info_name="pcmem", **main.context_settings)
    return [context.command_path for context, _ in _commands(main, root)]


def _commands(group: click.Group, parent: click.Context) -> Iterator[tuple[click.Context, click.Command]]:
    for name in group.list_commands(parent):
        try:
            command = group.get_command(parent, name)
        except click.ClickException:  # `bench` without pcmem-bench installed says how to get it
            continue
        if command is None or command.hidden:
            continue
        context = click.Context(command, parent=parent, info_name=name)
        yield context, command
        if isinstance(command, click.Group):
            yield from _commands(command, context)


def _has_bench(group: click.Group, root: click.Context) -> bool:
    return any(context.command_path.startswith("pcmem bench ") for context, _ in _commands(group, root))


def _global_options(main: click.Group, root: click.Context) -> str:
    lines = ["## pcmem", "", "```text", _usage(main, root), "```", "", _help(main.help or ""), "",
             "Options every command takes, given before the command's name (`pcmem --db team.duckdb list …`):", ""]
    lines += _options(main, root)
    return "\n".join(lines)


def _command(context: click.Context, command: click.Command) -> str:
    depth = context.command_path.count(" ") + 1
    lines = [f"{'#' * min(depth, 4)} {context.command_path}", "", "```text", _usage(command, context), "```", ""]
    lines += [_help(command.help or ""), ""]
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    if arguments:
        lines += ["| argument | |", "|---|---|"]
        lines += [f"| `{param.make_metavar(context)}` | {'required' if param.required else 'optional'}"
                  f"{', repeatable' if param.nargs == -1 else ''} |" for param in arguments]
        lines.append("")
    lines += _options(command, context)
    if isinstance(command, click.Group):
        names = command.list_commands(context)
        lines += ["", "Commands: " + ", ".join(f"[`{name}`](#{_anchor(f'{context.command_path} {name}')})"
                                                for name in names) + "."]
    lines += ["", _exit_statuses(command.help or "")]
    return "\n".join(lines)


def _usage(command: click.Command, context: click.Context) -> str:
    pieces = command.collect_usage_pieces(context)
    return " ".join([context.command_path, *pieces])


def _options(command: click.Command, context: click.Context) -> list[str]:
    rows = ["| option | what it does |", "|---|---|"]
    for param in command.get_params(context):
        record = param.get_help_record(context)
        if record is None:
            continue
        names, text = record
        rows.append(f"| `{names}` | {_cell(text)} |")
    return rows


def _help(text: str) -> str:
    """click's help as Markdown: ``\\b`` paragraphs (kept as written: examples) become code blocks."""
    out: list[str] = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            body = paragraph[1:].strip("\n").splitlines()
            title = body[0].strip() if body and not body[0].startswith(" ") else None
            code = [line[2:] if line.startswith("  ") else line for line in (body[1:] if title else body)]
            if title:
                out.append(f"*{title.rstrip(':')}:*")
            out.append("```text\n" + "\n".join(code) + "\n```")
        else:
            out.append(_RST_LITERAL.sub(r"`\1`", " ".join(paragraph.split())))
    return "\n\n".join(out)


def _exit_statuses(text: str) -> str:
    own = " ".join(sentence.strip() for sentence in _EXIT_SENTENCE.findall(" ".join(text.split())))
    common = ("Exit status: 0 when done; otherwise the status of the error, as the "
              "[exit statuses](exit-statuses.md) table gives it (2 for a usage error).")
    return f"{common} {own}".strip() if own else common


def _cell(text: str) -> str:
    return _RST_LITERAL.sub(r"`\1`", " ".join(text.split())).replace("|", "\\|")


def _anchor(title: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (lower case, spaces to dashes)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def help_examples() -> list[tuple[str, str]]:
    """Every example line of every command's help (its ``\\b`` paragraphs), with the command it belongs to: tests
    parse each ``pcmem`` command in them with the real commands."""
    from pcmem.cli import main

    root = click.Context(main, info_name="pcmem", **main.context_settings)
    found = []
    for context, command in [(root, main), *_commands(main, root)]:
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            if paragraph.startswith("\b"):
                lines = paragraph[1:].replace("\\\n", " ").splitlines()
                found += [(context.command_path, line.strip()) for line in lines if _COMMAND_LINE.match(line.strip())]
    return found
