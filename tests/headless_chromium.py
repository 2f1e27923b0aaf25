"""Headless Chromium driven over the Chrome DevTools protocol on a pipe (``--remote-debugging-pipe``: file descriptors
3 and 4, JSON messages ended by a NUL), so the browser opens no debugging port and the test needs no client library.

One page (a tab) is attached; what it logs, throws and requests is recorded from the moment it is attached.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

#: Flags that keep Chromium from reaching the network by itself (updates, sync, field trials, first-run pages). Even
#: with them, Chromium 156 still looked up update.googleapis.com, clients2.google.com, accounts.google.com and
#: content-autofill.googleapis.com (seen with strace): the resolver rule answers every name but the local site's
#: address "not found" without a DNS query. A page that asks for another host still shows in the requests it made.
QUIET = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-extensions",
         "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
         "--disable-client-side-phishing-detection", "--disable-domain-reliability", "--metrics-recording-only",
         "--no-default-browser-check", "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


class Browser:
    def __init__(self, chromium: str, profile: Path) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # The browser reads commands on fd 3 and writes answers on fd 4; the shell puts the pipes there.
        script = f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}' + "".join(
            f" {fd}<&-" for fd in (to_browser, from_browser) if fd not in (3, 4))  # (a pipe may already be 3 or 4)
        self.process = subprocess.Popen(["bash", "-c", script, chromium, *QUIET, "--remote-debugging-pipe",
                                         f"--user-data-dir={profile}", "about:blank"],
                                        pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL,
                                        stderr=None if os.environ.get("PCMEM_TEST_CHROMIUM_LOG") else subprocess.DEVNULL,
                                        start_new_session=True)
        os.close(to_browser)
        os.close(from_browser)
        self._next_id = 0
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._reader, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _reader(self) -> None:
        buffer = b""
        while chunk := os.read(self._read, 1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        answer = self._answers.get(message["id"])
                    if answer is not None:
                        answer.put(message)
                else:
                    self.events.append(message)

    def call(self, method: str, *, session: bool = False, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send a command (to the attached page with ``session``) and return its result; an error raises."""
        with self._lock:
            self._next_id += 1
            number = self._next_id
            self._answers[number] = answer = queue.Queue()
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        reply = answer.get(timeout=timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, timeout: float = 30) -> None:
        """Navigate and wait for the page's load event."""
        seen = len(self.events)
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(event.get("method") == "Page.loadEventFired" for event in self.events[seen:]):
                return
            time.sleep(0.02)
        raise TimeoutError(f"{url} did not load in {timeout} s")

    def wait_for(self, expression: str, timeout: float = 15) -> Any:
        """Evaluate ``expression`` until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"still false after {timeout} s: {expression}")

    def errors(self) -> list[str]:
        """What the pages logged as errors or threw, so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails'].get('text')} "
                             f"{params['exceptionDetails'].get('exception', {}).get('description', '')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {[arg.get('value') for arg in params.get('args', [])]}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(f"log: {params['entry'].get('text')} ({params['entry'].get('url', '')})")
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                found.append(f"failed to load: {params.get('errorText')} ({params.get('requestId')})")
        return found

    def requested(self) -> list[str]:
        """Every URL the pages requested, so far."""
        return [event["params"]["request"]["url"] for event in self.events
                if event.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, queue.Empty, OSError):
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait(10)
        os.close(self._write)
        os.close(self._read)
