"""The TUI's screenshots in the docs are the TUI's own (issue 44): ``python -m docsgen.screenshots`` drives the real app
through Textual's pilot and saves its screens as SVG; made again here, they must be the committed files byte for
byte. When the TUI changes on purpose, run that command and read the new screenshots before committing them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from docs_pages import DOCS, ROOT, pages

ASSETS = DOCS / "assets"


def test_the_committed_screenshots_are_what_the_tui_draws_now(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "docsgen.screenshots", str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    made = sorted(path.name for path in tmp_path.glob("*.svg"))
    assert made == sorted(path.name for path in ASSETS.glob("tui-*.svg")) and len(made) >= 3
    stale = [name for name in made if (tmp_path / name).read_bytes() != (ASSETS / name).read_bytes()]
    assert not stale, f"{stale} differ from what the TUI draws: run `python -m docsgen.screenshots` and read the diff"


def test_every_screenshot_is_shown_and_names_no_web_font():
    shown = {match for page in pages() for match in re.findall(r"assets/(tui-[\w-]+\.svg)", page.read_text("utf-8"))}
    assert shown == {path.name for path in ASSETS.glob("tui-*.svg")}
    for path in ASSETS.glob("tui-*.svg"):
        assert not re.search(r"https?://(?!www\.textualize\.io|www\.w3\.org)", path.read_text(encoding="utf-8")), path.name
