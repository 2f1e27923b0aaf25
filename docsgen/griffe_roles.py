"""A griffe extension for the Python API reference: pcmem's docstrings name other code with Sphinx roles
(``:class:`SyncRuntime```, ``:mod:`pcmem.settings```, ``:meth:`remember```), which mkdocstrings shows as written; here
each becomes inline code (``SyncRuntime``), the way the rest of the site writes names. Loaded by mkdocstrings
(mkdocs.yml: ``extensions``)."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_ROLE = re.compile(r":(?:py:)?(?:mod|class|meth|func|attr|data|exc|obj|const):`~?([^`]+)`")


class SphinxRoles(Extension):
    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(lambda match: f"`{match.group(1)}`", obj.docstring.value)
