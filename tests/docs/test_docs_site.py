"""The documentation site builds offline in strict mode and works in a browser (issue 44).

The build (``mkdocs build --strict``: a broken link or anchor, a page missing from the navigation or a generator
that fails stops it) runs under ``strace -f``: it must not connect anywhere, loopback included. The built site is
then served on 127.0.0.1 and every page is loaded in headless Chromium (Debian's ``chromium`` package; .ci/run
installs it) over the DevTools protocol: each page renders its title and its images, the search finds a word typed
into it, no page logs an error, and no page requests anything but the local site (no web font, no CDN, no script).
Skipped, with the reason, where mkdocs, strace or Chromium is missing.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_pages import ROOT
from headless_chromium import Browser

pytestmark = pytest.mark.slow
pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")

STRACE = shutil.which("strace")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_NETWORK = re.compile(r"\b(connect|sendto|sendmsg|sendmmsg)\(.*sa_family=AF_INET6?\b")


def _strace_works() -> bool:
    return STRACE is not None and subprocess.run([STRACE, "-f", "-qq", "-e", "trace=none", "true"],
                                                 capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str | None]:
    """The site, built once, and the build's network calls as strace saw them (None: built without strace)."""
    out = tmp_path_factory.mktemp("docs-site")
    site, trace = out / "site", out / "trace.txt"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    traced = _strace_works()
    if traced:
        command = [STRACE, "-f", "-qq", "-s", "0", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(trace),
                   "--", *command]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return site, trace.read_text() if traced else None


def test_the_site_builds_in_strict_mode_with_every_page(built: tuple[Path, str | None]) -> None:
    site, _ = built
    pages = sorted(path.relative_to(site).parent.as_posix() for path in site.rglob("index.html"))
    sources = sorted("." if page.name == "index.md" and page.parent == ROOT / "docs"
                     else page.relative_to(ROOT / "docs").with_suffix("").as_posix().removesuffix("/index")
                     for page in (ROOT / "docs").rglob("*.md"))
    assert pages == sources
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert 'id="pcmem-mcp-install"' in cli and "--dry-run" in cli  # generated, not the page's bare marker
    assert "<!-- generated:" not in "".join(path.read_text("utf-8") for path in site.rglob("*.html"))


def test_the_build_connects_nowhere(built: tuple[Path, str | None]) -> None:
    _, trace = built
    if trace is None:
        pytest.skip("strace is not installed or cannot trace here (apt-get install strace; .ci/run installs it)")
    assert not [line for line in trace.splitlines() if _NETWORK.search(line)]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def served(built: tuple[Path, str | None]) -> Iterator[str]:
    site, _ = built
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    opened = Browser(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


def test_every_page_renders_with_no_error_and_no_request_beyond_the_site(built, served: str, browser: Browser):
    site, _ = built
    pages = sorted(path.relative_to(site).parent.as_posix() for path in site.rglob("index.html"))
    for page in pages:
        url = served if page == "." else f"{served}{page}/"
        browser.open(url)
        title = browser.evaluate("document.querySelector('article h1') && document.querySelector('article h1')"
                                 ".textContent.trim()")
        assert title, f"{url}: no title"
        broken = browser.wait_for("Promise.all([...document.images].map(i => i.decode().then(() => 0, () => 1)))"
                                  ".then(r => 'n' + r.reduce((a, b) => a + b, 0))")
        assert broken == "n0", f"{url}: an image did not load"
    assert len(pages) >= 30
    assert not browser.errors()
    outside = [url for url in browser.requested() if not url.startswith((served, "data:", "blob:", "about:"))]
    assert not outside, outside


def test_the_search_finds_a_word_typed_into_it(served: str, browser: Browser):
    browser.open(f"{served}guides/search/")
    browser.evaluate("document.querySelector('label[for=__search]').click()")
    browser.wait_for("document.activeElement === document.querySelector('input.md-search__input')")
    browser.call("Input.insertText", session=True, text="tombstone")
    found = browser.wait_for("[...document.querySelectorAll('.md-search-result__item a')].map(a => a.href).join(' ')")
    assert "guides/forgetting/" in found
    meta = browser.evaluate("document.querySelector('.md-search-result__meta').textContent")
    assert re.match(r"\d+ matching documents?", meta), meta
    assert not browser.errors()
