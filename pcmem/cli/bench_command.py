"""``pcmem bench``: the benchmarks and campaigns live in the ``pcmem_bench`` package (source folder ``bench/``), outside
the runtime package. This is pcmem's one way into it, and it loads only when a ``bench`` command is looked up."""

from __future__ import annotations

import click

from pcmem.errors import ConfigurationError

MISSING = "pcmem bench needs the pcmem_bench package, which this installation of pcmem leaves out; install pcmem " \
          "from its source tree (pip install .) to get it"


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
