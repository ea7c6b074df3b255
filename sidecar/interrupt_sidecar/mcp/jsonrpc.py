"""JSON-RPC on MCP's stdio transport: one message (or one batch) per line, and the protocol eras.

The bridge passes every line through *byte for byte* unless it must touch it, so a line is
parsed to look at it, and the original bytes are what is forwarded. Only lines the bridge
writes itself (answers, cancels, probes) are serialized here.

Eras (how a session starts and what it can say), detected from the traffic itself:

* ``HANDSHAKE`` — revisions 2024-11-05 … 2025-11-25: ``initialize`` → result →
  ``notifications/initialized``; ``ping`` exists; 2025-03-26 alone has JSON-RPC batches;
  2025-11-25 adds tasks (``tasks/cancel``).
* ``STATELESS`` — revision 2026-07-28: no handshake; every request carries its protocol
  version and the client's capabilities in ``_meta``; ``server/discover`` replaces both the
  handshake and ``ping``.

A client that speaks both (the Python SDK 2.x) probes ``server/discover`` first and falls
back to ``initialize`` when the server does not know it: the first message alone does not
settle the era, the server's answer does (see :class:`EraTracker`).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

#: The ``_meta`` keys of the stateless era's per-request envelope.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"

#: Revisions of the stateless era (no handshake, no ping).
STATELESS_REVISIONS = frozenset({"2026-07-28"})

#: JSON-RPC error code for a request answered as cancelled (the code the SDKs use for it).
REQUEST_CANCELLED = -32800
#: JSON-RPC internal error: the bridge answers with it when the server it forwarded to is gone.
INTERNAL_ERROR = -32603


class Era(enum.Enum):
    UNKNOWN = "unknown"
    HANDSHAKE = "handshake"
    STATELESS = "stateless"


@dataclass(slots=True)
class Message:
    """One JSON-RPC message as parsed (``data``); the bridge never re-serializes it to forward it."""

    data: dict[str, Any]

    @property
    def method(self) -> str | None:
        method = self.data.get("method")
        return method if isinstance(method, str) else None

    @property
    def has_id(self) -> bool:
        return "id" in self.data and self.data["id"] is not None

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.has_id

    @property
    def is_notification(self) -> bool:
        return self.method is not None and not self.has_id

    @property
    def is_response(self) -> bool:
        return self.method is None and self.has_id and ("result" in self.data or "error" in self.data)

    @property
    def key(self) -> str:
        """The id as a dictionary key: ``1`` and ``"1"`` are different ids in JSON-RPC."""
        return id_key(self.data.get("id"))

    @property
    def params(self) -> dict[str, Any]:
        params = self.data.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}


@dataclass(slots=True)
class Line:
    """One line of the stream: a message, a batch of messages, or something not JSON-RPC."""

    raw: bytes
    messages: list[Message] = field(default_factory=list)
    batch: bool = False

    @property
    def opaque(self) -> bool:
        """Not JSON-RPC (or not JSON): forwarded untouched, never looked at again."""
        return not self.messages


def id_key(request_id: Any) -> str:
    return json.dumps(request_id, separators=(",", ":"))


def parse_line(raw: bytes) -> Line:
    """Parse one line (without its newline). Anything unparseable is opaque, never an error:
    the bridge must not be the one that breaks a session."""
    line = Line(raw)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return line
    if isinstance(data, dict):
        line.messages.append(Message(data))
    elif isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        line.batch = True
        line.messages.extend(Message(item) for item in data)
    return line


def encode(data: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """One line for the wire (compact, UTF-8, newline-terminated)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def reassemble(line: Line, keep: list[Message]) -> bytes | None:
    """The line with only ``keep`` of its messages: the original bytes when nothing was
    removed, None when nothing is left, else the kept messages re-encoded."""
    if len(keep) == len(line.messages):
        return line.raw + b"\n"
    if not keep:
        return None
    if line.batch:
        return encode([m.data for m in keep])
    return encode(keep[0].data)


def request(request_id: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


class EraTracker:
    """Learns the session's era from the traffic, and keeps what a restarted server needs.

    The handshake era is settled by a *result* to ``initialize``, the stateless era by a
    result to ``server/discover`` or by any request whose ``_meta`` names a stateless
    revision. The agent's ``initialize`` request and ``notifications/initialized`` are
    kept, to be replayed to a restarted server; so is the stateless envelope, for probes.
    """

    def __init__(self) -> None:
        self.era = Era.UNKNOWN
        self.protocol_version: str | None = None
        self.initialize: dict[str, Any] | None = None
        self.initialized_sent = False
        self.envelope: dict[str, Any] | None = None
        self._pending: dict[str, str] = {}  # id key → "initialize" | "server/discover"

    def from_agent(self, message: Message) -> None:
        method = message.method
        if message.is_request and method in ("initialize", "server/discover"):
            self._pending[message.key] = method
            if method == "initialize":
                self.initialize = message.data
        elif method == "notifications/initialized":
            self.initialized_sent = True
        meta = message.meta
        version = meta.get(PROTOCOL_VERSION_META)
        if isinstance(version, str) and version in STATELESS_REVISIONS:
            self.envelope = {k: v for k, v in meta.items() if k.startswith("io.modelcontextprotocol/")}
            if method != "server/discover":  # a probe's envelope is not yet an agreement
                self._settle(Era.STATELESS, version)

    def from_server(self, message: Message) -> None:
        if not message.is_response:
            return
        method = self._pending.pop(message.key, None)
        if method is None or "result" not in message.data:
            return
        value = message.data["result"]
        if not isinstance(value, dict):
            return
        if method == "initialize":
            version = value.get("protocolVersion")
            self._settle(Era.HANDSHAKE, version if isinstance(version, str) else None)
        else:
            versions = value.get("supportedVersions")
            if isinstance(versions, list) and any(v in STATELESS_REVISIONS for v in versions):
                self._settle(Era.STATELESS, next(v for v in versions if v in STATELESS_REVISIONS))

    def _settle(self, era: Era, version: str | None) -> None:
        self.era = era
        if version is not None:
            self.protocol_version = version

    def probe(self, request_id: str) -> dict[str, Any] | None:
        """A request that any live server answers at once, in this era (None: none known yet)."""
        if self.era is Era.STATELESS:
            meta = dict(self.envelope or {})
            meta.setdefault(PROTOCOL_VERSION_META, self.protocol_version or "2026-07-28")
            meta.setdefault(CLIENT_CAPABILITIES_META, {})
            return request(request_id, "server/discover", {"_meta": meta})
        if self.era is Era.HANDSHAKE:
            return request(request_id, "ping")
        return None
