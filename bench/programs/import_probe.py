"""``import pcmem`` in a fresh process; prints which of the modules named on the command line it pulled in.

Usage: ``import_probe.py MODULE...`` (``pcmem bench startup`` passes its HEAVY list)."""

import sys

import pcmem  # noqa: F401 - importing it is what is measured

print(" ".join(m for m in sys.argv[1:] if m in sys.modules))
