"""Configuration: every environment variable pcmem reads (:data:`pcmem.settings.ENVIRONMENT`), the validated runtime
settings (:class:`pcmem.config.RuntimeConfig`, :class:`pcmem.config.InferenceConfig`: their defaults, bounds and the
``#:`` comment above each field) and the variables pcmem sets to stay offline (:mod:`pcmem.offline`)."""

from __future__ import annotations

import ast
import inspect
from typing import Any

from docsgen.schema_table import cell


def reference() -> str:
    from pcmem import config, offline, settings

    fields = {**_fields(config.RuntimeConfig), **_fields(config.InferenceConfig)}
    by_variable = {variable: field for field, variable in
                   {**settings.RUNTIME_CONFIG_ENVS, **settings.INFERENCE_CONFIG_ENVS}.items()}
    parts = ["## Environment variables", "",
             "Precedence everywhere: an explicit argument or option > the environment variable > the default.", "",
             "| variable | unset means | what it sets |", "|---|---|---|"]
    for variable in settings.ENVIRONMENT:
        default, meaning = variable.default, variable.meaning
        if variable.name in by_variable:
            field = fields[by_variable[variable.name]]
            default = field["default"] if field["default"] != "none" or not default else default
            meaning = f"{meaning} Field `{field['owner']}.{field['name']}`{field['bounds']}."
        parts.append(f"| `{variable.name}` | {cell(default)} | {cell(meaning)} |")
    for model in (config.RuntimeConfig, config.InferenceConfig):
        parts += ["", f"## {model.__name__}", "", cell(inspect.getdoc(model) or ""), "",
                  f"`pcmem.{model.__name__}(...)`, or `{model.__name__}.from_env()` from the variables above; "
                  "a bad value is a `ConfigurationError`.", "",
                  "| field | variable | default | what it sets |", "|---|---|---|---|"]
        for field in _fields(model).values():
            name = settings.RUNTIME_CONFIG_ENVS.get(field["name"]) or settings.INFERENCE_CONFIG_ENVS[field["name"]]
            parts.append(f"| `{field['name']}` | `{name}` | {field['default']}{field['bounds']} | "
                         f"{cell(field['comment'])} |")
    parts += ["", "## Set by pcmem", "",
              "`import pcmem` sets these where you left them unset (a value you set is never changed; see "
              "[Offline](../guides/offline-and-files.md#offline)):", "",
              "| variable | value | where |", "|---|---|---|"]
    parts += [f"| `{name}` | `{value}` | every process that imports pcmem |"
              for name, value in offline.TELEMETRY_OFF.items()]
    parts += [f"| `{name}` | `{value}` | the processes pcmem runs (CLI, TUI, servers, benchmarks) and their children |"
              for name, value in offline.OWN_PROCESS.items()]
    return "\n".join(parts) + "\n"


def _fields(model: Any) -> dict[str, dict[str, str]]:
    comments = _comments(model)
    fields = {}
    for name, info in model.model_fields.items():
        bounds = [f"{symbol} {getattr(item, attribute)}" for item in info.metadata
                  for attribute, symbol in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))
                  if getattr(item, attribute, None) is not None]
        shown = str(info.default).lower() if isinstance(info.default, bool) else info.default
        default = "none" if info.default is None else f"`{shown}`"
        fields[name] = {"name": name, "owner": model.__name__, "default": default,
                        "bounds": f" ({', '.join(bounds)})" if bounds else "", "comment": comments.get(name, "")}
    return fields


def _comments(model: Any) -> dict[str, str]:
    """Each field's ``#:`` comment lines, read from the class's source."""
    source = inspect.getsource(model).splitlines()
    tree = ast.parse("\n".join(source))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            line = node.lineno - 2
            while line >= 0 and source[line].strip().startswith("#:"):
                above.insert(0, source[line].strip()[2:].strip())
                line -= 1
            found[node.target.id] = " ".join(above)
    return found
