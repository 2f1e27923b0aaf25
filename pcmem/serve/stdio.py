"""``pcmem mcp``: the MCP tools over this process's stdin and stdout, until the client closes stdin or a stop signal.

The MCP SDK reads stdin in an anyio worker thread, which a cancel has to wait for: a server whose client was silent
could not stop until the client wrote again. :class:`StdinLines` reads in a daemon thread instead (it never holds
the process), so a stop signal is served at once: no new request is read, the calls in flight get
:data:`~pcmem.serve.shutdown.GRACE_SECONDS` to be answered, then the input ends as if the client had closed it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from pcmem.serve.mcp_tools import build_server
from pcmem.serve.operations import MemoryApi
from pcmem.serve.shutdown import GRACE_SECONDS, SIGNAL_POLL_SECONDS, StopSignals


def _claim_stdin() -> int:
    """A private copy of fd 0, with fd 0 pointed at /dev/null, as the SDK does: nothing else in the process (a
    library, a child process) can take bytes meant for the protocol. Started without stdin (fd 0 closed, so fd 0 may
    now be any file the process opened, e.g. the store), fd 0 is left alone and the input is over at once."""
    null = os.open(os.devnull, os.O_RDONLY)
    if sys.stdin is None or not _is_fd_0(sys.stdin):
        return null
    private = os.dup(0)
    os.dup2(null, 0)
    os.close(null)
    return private


def _is_fd_0(stream: TextIO) -> bool:
    try:
        return stream.fileno() == 0
    except (OSError, ValueError):
        return False


class StdinLines:
    """The client's lines (UTF-8, undecodable bytes replaced, as the SDK reads them), as an async iterator."""

    def __init__(self) -> None:
        self._fd = _claim_stdin()
        self._send, self._receive = anyio.create_memory_object_stream[str](0)
        self._reading = True
        self._waiting: anyio.CancelScope | None = None
        self._ended = anyio.Event()
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(token,), name="pcmem-mcp-stdin", daemon=True).start()

    def _read(self, token: anyio.lowlevel.EventLoopToken) -> None:
        pending = b""
        try:
            while chunk := os.read(self._fd, 65536):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    anyio.from_thread.run(self._send.send, line.decode("utf-8", "replace"), token=token)
            if pending:
                anyio.from_thread.run(self._send.send, pending.decode("utf-8", "replace"), token=token)
            anyio.from_thread.run_sync(self._send.close, token=token)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.RunFinishedError):
            return  # the server stopped first (or stdin failed): nobody is reading any more

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self._reading:
            with anyio.CancelScope() as self._waiting:
                try:
                    return await self._receive.receive()
                except anyio.EndOfStream:
                    raise StopAsyncIteration from None
        await self._ended.wait()
        raise StopAsyncIteration

    def stop_reading(self) -> None:
        """Read no further request; the lines end at :meth:`end`."""
        self._reading = False
        if self._waiting is not None:
            self._waiting.cancel()

    def end(self) -> None:
        self.stop_reading()
        self._ended.set()
        self._receive.close()


async def _stop_when_asked(stop: anyio.Event, lines: StdinLines, api: MemoryApi) -> None:
    await stop.wait()
    lines.stop_reading()
    with anyio.move_on_after(GRACE_SECONDS):
        while api.running:
            await anyio.sleep(0.02)
    lines.end()


async def _poll_signals() -> None:
    while True:
        await anyio.sleep(SIGNAL_POLL_SECONDS)


async def run_stdio(api: MemoryApi, stops: StopSignals) -> None:
    """Serve the tools until the client closes stdin, or a stop signal (see the module docstring)."""
    from mcp.server.stdio import stdio_server

    server = build_server(api)
    loop = asyncio.get_running_loop()
    stop = anyio.Event()
    lines = StdinLines()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_stop_when_asked, stop, lines, api)
        tasks.start_soon(_poll_signals)
        with stops.serving(lambda: loop.call_soon_threadsafe(stop.set)):
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                await server.run(read_stream, write_stream, server.create_initialization_options())
        tasks.cancel_scope.cancel()
