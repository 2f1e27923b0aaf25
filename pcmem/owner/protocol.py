"""The wire between a store's owner and its clients: length-prefixed JSON frames over a Unix socket.

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON (never pickle: a frame is data, not code).
The client opens with a hello carrying :data:`PROTOCOL_VERSION` and the store file's identity; the owner answers
with its own, or refuses (another version, another file). Then each request is one frame and its answer one frame:
``{"op", "scope", "args", "rerank"}`` → ``{"result"}`` or ``{"error": {"type", "message", "fields"}}``. Errors cross
as the pcmem error class's name, message and the fields the class carries; the client raises the same class.

Standard library only (no pydantic): a ``pcmem search`` answered by the owner speaks this without importing it
(:mod:`pcmem.owner.dial`). The reranker a client names is :class:`pcmem.owner.rerank_spec.RerankSpec`.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Protocol

from pcmem import errors
from pcmem.errors import PcmemError, StoreError

#: 2: every write carries an idempotency key and is sent again after a lost answer (pcmem.memory.write_records); a
#: request carries its caller's settings; an owner listens in the account's folder, not the environment's.
PROTOCOL_VERSION = 2
MAX_FRAME_BYTES = 256 * 1024 * 1024
_LENGTH = struct.Struct(">I")


class Channel(Protocol):
    """What frames travel on: a socket, or :class:`pcmem.owner.dial.WatchedConnection` (a socket that looks at the
    owner while it waits), or another transport's connection (:mod:`pcmem.owner.transport`)."""

    def sendall(self, data: bytes, /) -> Any: ...

    def recv(self, count: int, /) -> bytes: ...


class ConnectionLost(Exception):
    """The other side closed the connection (or it broke) before a whole frame arrived. Internal to this package."""


class Encoded:
    """A result already encoded as JSON (UTF-8 bytes), which :func:`send_frame` puts in its frame as it is.

    Why: the owner's answer is a pydantic value; its ``dump_json`` writes the JSON directly, where building the Python
    values (``dump_python``) for ``json.dumps`` cost the owner several times as long, on every call it serves (``pcmem
    bench clients``; docs/benchmarks/serving.md). The bytes are the same JSON the other way would send."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def send_frame(sock: Channel, message: dict[str, Any]) -> None:
    result = message.get("result")
    if isinstance(result, Encoded) and len(message) == 1:
        data = b'{"result":' + result.data + b"}"
    else:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise errors.InputError(f"a message of {len(data)} bytes is over the {MAX_FRAME_BYTES}-byte frame limit")
    sock.sendall(_LENGTH.pack(len(data)) + data)


def recv_frame(sock: Channel) -> dict[str, Any]:
    """The next frame's JSON object. Anything else — over the size limit, not UTF-8, not JSON, nested deeper than the
    parser recurses (100,000 ``[`` printed a RecursionError traceback on the owner's stderr), not an object — is a
    broken connection (ConnectionLost), as is the other side closing it."""
    (length,) = _LENGTH.unpack(_recv_exactly(sock, _LENGTH.size))
    if length > MAX_FRAME_BYTES:
        raise ConnectionLost(f"a frame of {length} bytes is over the limit")
    try:
        message = json.loads(_recv_exactly(sock, length))
    except (ValueError, RecursionError):  # not UTF-8 or not JSON; nested deeper than the parser's recursion limit
        raise ConnectionLost("a frame that is not JSON") from None
    if not isinstance(message, dict):
        raise ConnectionLost("a frame that is not a JSON object")
    return message


def _recv_exactly(sock: Channel, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        try:
            chunk = sock.recv(count - len(chunks))
        except OSError as error:
            raise ConnectionLost(str(error)) from None
        if not chunk:
            raise ConnectionLost("closed by the other side")
        chunks += chunk
    return bytes(chunks)


def hello(identity: list[int]) -> dict[str, Any]:
    return {"pcmem": PROTOCOL_VERSION, "identity": identity}


def check_hello(message: dict[str, Any], identity: list[int]) -> str | None:
    """Why a hello does not match this side (``None``: it does)."""
    if message.get("pcmem") != PROTOCOL_VERSION:
        return f"protocol version {message.get('pcmem')!r}, this side speaks {PROTOCOL_VERSION}"
    if message.get("identity") != identity:
        return f"the file {message.get('identity')!r}, this side serves {identity!r}"
    return None


def encode_error(error: BaseException) -> dict[str, Any]:
    """A pcmem error as its class name, message and fields; anything else as a StoreError naming it."""
    if not isinstance(error, PcmemError):
        return {"type": "StoreError", "message": f"the owning process failed: {type(error).__name__}: {error}",
                "fields": {}}
    fields: dict[str, Any] = {}
    for name, value in vars(error).items():
        if callable(getattr(value, "model_dump", None)):  # a pcmem value (pydantic is not imported here)
            fields[name] = value.model_dump(mode="json")
        elif value is None or isinstance(value, (str, int, float, bool)):
            fields[name] = value
    return {"type": type(error).__name__, "message": str(error), "fields": fields}


def decode_error(payload: dict[str, Any]) -> PcmemError:
    """The error the owner raised, as the same pcmem class (an unknown name becomes a StoreError)."""
    kind = getattr(errors, str(payload.get("type")), None)
    if not (isinstance(kind, type) and issubclass(kind, PcmemError)):
        kind = StoreError
    message = str(payload.get("message", "the owning process failed"))
    fields = dict(payload.get("fields") or {})
    if isinstance(fields.get("tombstone"), dict):
        from pcmem.types.memory import Tombstone

        fields["tombstone"] = Tombstone.model_validate(fields["tombstone"])
    try:
        return kind(message, **fields)
    except TypeError:  # a class that takes only the message
        error = kind(message)
        error.__dict__.update(fields)
        return error
