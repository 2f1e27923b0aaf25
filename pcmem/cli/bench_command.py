"""``pcmem bench``: the benchmarks and campaigns live in the ``pcmem_bench`` package (source folder ``bench/``), a
distribution of its own (pcmem-bench), so an app that depends on pcmem does not get them. This is pcmem's one way
into it, and it loads only when a ``bench`` command is looked up."""

from __future__ import annotations

import click

from pcmem.errors import ConfigurationError

MISSING = "pcmem bench needs the benchmarks, a distribution of their own (pcmem-bench): from a checkout of pcmem, " \
          "pip install ./bench"


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
               add_help_option=False)
def _absent() -> None:
    """Benchmarks and campaigns (not installed: needs the pcmem_bench package)."""
    raise ConfigurationError(MISSING)


def register(group: click.Group) -> None:
    try:
        from pcmem_bench.cli import bench
    except ModuleNotFoundError as error:
        if error.name != "pcmem_bench":
            raise
        group.add_command(_absent, "bench")
        return
    group.add_command(bench)
