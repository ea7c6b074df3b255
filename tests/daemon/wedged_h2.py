"""A peer that never reads, made exact: a raw HTTP/2 client that grants the daemon a stream
flow-control window of zero, so every message the daemon writes to its streams waits
forever (a real grpc client's window opens as its buffers drain; this one's never does).

Hand-written frames (RFC 9113) over a unix socket, no HTTP/2 library: the preface, a
SETTINGS frame with ``INITIAL_WINDOW_SIZE = 0``, then per stream a HEADERS frame (HPACK
literals, never indexed, so nothing needs a table) and one DATA frame carrying the request.
A thread answers the daemon's SETTINGS and PING (an unanswered ping or settings frame could
make grpc drop the connection, ending the wedge) and never sends WINDOW_UPDATE."""

from __future__ import annotations

import socket
import struct
import threading

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _SETTINGS, _PING = 0x0, 0x1, 0x4, 0x6
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4
_INITIAL_WINDOW_SIZE = 0x4


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _literal(name: str, value: str) -> bytes:
    # "Literal Header Field without Indexing — New Name"; every string here is < 127 bytes.
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


class WedgedPeer:
    """One connection to a unix socket whose streams the daemon can never write to."""

    def __init__(self, socket_path: str) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(socket_path)
        self._send_lock = threading.Lock()
        self._next_stream = 1
        self._send(_PREFACE + _frame(_SETTINGS, 0, 0, struct.pack(">HI", _INITIAL_WINDOW_SIZE, 0)))
        self._reader = threading.Thread(target=self._answer, daemon=True)
        self._reader.start()

    def open_stream(self, path: str, request: bytes, end_stream: bool = True) -> None:
        """Call ``path`` (``/package.Service/Method``) with one serialized request message."""
        stream, self._next_stream = self._next_stream, self._next_stream + 2
        headers = b"".join(
            _literal(k, v)
            for k, v in (
                (":method", "POST"),
                (":scheme", "http"),
                (":path", path),
                (":authority", "localhost"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
            )
        )
        message = b"\x00" + struct.pack(">I", len(request)) + request
        self._send(
            _frame(_HEADERS, _END_HEADERS, stream, headers)
            + _frame(_DATA, _END_STREAM if end_stream else 0, stream, message)
        )

    def _send(self, data: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(data)

    def _answer(self) -> None:
        try:
            while True:
                header = self._recv(9)
                length = int.from_bytes(header[:3], "big")
                kind, flags = header[3], header[4]
                payload = self._recv(length)
                if kind == _SETTINGS and not flags & _ACK:
                    self._send(_frame(_SETTINGS, _ACK, 0, b""))
                elif kind == _PING and not flags & _ACK:
                    self._send(_frame(_PING, _ACK, 0, payload))
        except OSError:
            return  # closed: by close(), or by the daemon on its way out

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._sock.recv(n - len(data))
            if not chunk:
                raise ConnectionResetError("peer closed")
            data += chunk
        return data

    def close(self) -> None:
        with self._send_lock:
            self._sock.close()
