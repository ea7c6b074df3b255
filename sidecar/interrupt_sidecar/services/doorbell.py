"""The cancel doorbell: a raw unix socket that carries each tool's cancel ahead of its stream.

Why: a gRPC stream message costs the daemon a pass through grpc (framing, HTTP/2, its
completion queue) on its one event loop and reaches the tool after the client's grpc has
done the same; a raw socket write is one syscall and its reader wakes at once. (The
benchmark measures both paths.) A tool that asks for a doorbell in its hello gets a path and a one-time token in
``attached``; it connects, writes the token, and the daemon writes the cancel there the
moment the execution trips, before the stream's own cancel. The stream stays authoritative
(the cancel still follows on it, and everything else only goes there): the doorbell makes
the cancel earlier, never different, so a tool that cannot use it loses nothing.

Frame: a 4-byte big-endian length, then a serialized ``Cancel``. It is the only thing ever
written; the daemon closes the connection when the tool's stream ends. A connection closed
without a frame means "no doorbell cancel" (the stream ended, the token was wrong, or the
daemon is shutting down): read the stream.

Everything here runs on the event loop thread: the tokens, the lines and the listener are
touched only from loop callbacks and the gRPC handlers, so no locks are needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import struct
from collections.abc import Callable
from pathlib import Path

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

log = logging.getLogger(__name__)

#: Length of a token: 16 random bytes as lowercase hex.
TOKEN_LENGTH = 32
#: A connection that has not written its token by then is closed.
TOKEN_TIMEOUT_S = 5.0
#: Connections still owing their token. At this many the listener stops accepting until
#: one is done: later ones wait in the kernel's backlog rather than being refused (a burst of
#: thousands of tools attaching at once is normal), and a silent connection holds its slot
#: for TOKEN_TIMEOUT_S at most, so nobody can pin the daemon's descriptors.
MAX_PENDING = 1024
#: How long accepting pauses when the daemon is out of descriptors.
_EMFILE_PAUSE_S = 0.1
_LENGTH = struct.Struct(">I")


def cancel_frame(cancel: pb.Cancel) -> bytes:
    """The doorbell's bytes for ``cancel``: its length, then the message."""
    body = cancel.SerializeToString()
    return _LENGTH.pack(len(body)) + body


class DoorbellLine:
    """One tool's doorbell: a token until the tool connects, then a socket until its stream ends.

    ``ring`` may come before the tool connects (a trip right after attach); the frame is
    kept and written the moment the token arrives. Only the first ring is written.
    """

    __slots__ = ("_done", "_frame", "_listener", "_on_rung", "_sock", "claimed", "token")

    def __init__(self, listener: DoorbellListener, token: str, on_rung: Callable[[], None]) -> None:
        self.token = token
        self._on_rung = on_rung
        #: A connection has proved the token: it is never accepted again.
        self.claimed = False
        self._listener = listener
        self._sock: socket.socket | None = None
        self._frame: bytes | None = None
        self._done = False

    def ring(self, frame: bytes) -> None:
        """Write ``frame`` (a :func:`cancel_frame`) now, or as soon as the tool connects.
        Never blocks; only the first ring counts."""
        if self._done or self._frame is not None:
            return
        self._frame = frame
        if self._sock is not None:
            self._write()

    def connected(self, sock: socket.socket) -> None:
        """The tool has connected and proved the token (the listener calls this once)."""
        self.claimed = True
        if self._done:
            sock.close()
            return
        self._sock = sock
        if self._frame is not None:
            self._write()

    def close(self) -> None:
        """The stream ended: withdraw the token and hang up (after the frame, if it rang)."""
        if self._done:
            return
        self._done = True
        self._listener._withdraw(self.token)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _write(self) -> None:
        sock, frame = self._sock, self._frame
        assert sock is not None and frame is not None
        # A fresh connection's send buffer always has room for a frame this small, so a
        # non-blocking send writes it whole or fails; either way nothing more is written
        # (the stream's cancel follows regardless). The connection stays open until the
        # stream ends: closing it now would wake the tool a second time, for the EOF, in
        # the middle of a fan-out.
        try:
            sent = sock.send(frame)
        except OSError:
            return
        if sent == len(frame):
            self._on_rung()


class DoorbellListener:
    """The doorbell's unix socket, its outstanding tokens and connections owing one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: dict[str, DoorbellLine] = {}
        #: Connections that have not yet written a whole token: fd -> (socket, bytes so far, timer).
        self._pending: dict[int, tuple[socket.socket, bytearray, asyncio.TimerHandle]] = {}
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Whether the listening socket is watched (off at the pending cap, or out of fds).
        self.accepting = False

    @property
    def open_lines(self) -> int:
        """Lines neither rung nor closed (their stream is open), connected or not."""
        return len(self._lines)

    def start(self) -> None:
        """Bind and listen (owner-only from the first instant, like the gRPC socket).

        The path's directory must exist and the path be free: the server prepares it as it
        does the gRPC socket's (owner-only directory, a stale socket file removed, a live
        one refused). Raises OSError when it cannot bind.
        """
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        except OSError:
            sock.close()
            raise
        finally:
            os.umask(old_umask)
        os.chmod(self.path, stat.S_IRUSR | stat.S_IWUSR)
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
        self._sock, self._loop = sock, loop
        self._set_accepting(True)

    def line(self, on_rung: Callable[[], None] = lambda: None) -> DoorbellLine:
        """A new line with a fresh one-time token; ``on_rung`` is called once its frame is written."""
        token = os.urandom(TOKEN_LENGTH // 2).hex()  # secrets.token_hex, without importing secrets
        line = DoorbellLine(self, token, on_rung)
        self._lines[token] = line
        return line

    def close(self) -> None:
        """Stop listening, hang up on every connection and remove the socket file."""
        if self._sock is not None and self._loop is not None:
            self._set_accepting(False)
            self._sock.close()
            self._sock = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for fd in list(self._pending):
            self._drop_pending(fd)
        for line in list(self._lines.values()):
            line.close()

    # -- loop callbacks --------------------------------------------------------------------

    def _withdraw(self, token: str) -> None:
        self._lines.pop(token, None)

    def _set_accepting(self, on: bool) -> None:
        if self._sock is None or self._loop is None or on == self.accepting:
            return
        if on:
            self._loop.add_reader(self._sock.fileno(), self._accept)
        else:
            self._loop.remove_reader(self._sock.fileno())
        self.accepting = on

    def _accept(self) -> None:
        assert self._sock is not None and self._loop is not None
        while len(self._pending) < MAX_PENDING:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:
                # Out of descriptors, most likely. The listening socket stays readable while
                # connections wait, so keep watching it and the loop would spin: pause.
                log.warning("doorbell: accept failed (%s); pausing %.1fs", err, _EMFILE_PAUSE_S)
                self._set_accepting(False)
                self._loop.call_later(_EMFILE_PAUSE_S, self._set_accepting, True)
                return
            conn.setblocking(False)
            fd = conn.fileno()
            timer = self._loop.call_later(TOKEN_TIMEOUT_S, self._drop_pending, fd)
            self._pending[fd] = (conn, bytearray(), timer)
            self._loop.add_reader(fd, self._read_token, fd)
            self._read_token(fd)  # the tool writes its token on connect: usually it is here already
        self._set_accepting(False)  # at the cap: the rest wait in the backlog for a free slot

    def _read_token(self, fd: int) -> None:
        entry = self._pending.get(fd)
        if entry is None:  # dropped (timed out, or the listener closed) since the event was queued
            return
        conn, got, _ = entry
        try:
            chunk = conn.recv(TOKEN_LENGTH - len(got))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # hung up before the whole token
            self._drop_pending(fd)
            return
        got += chunk
        if len(got) < TOKEN_LENGTH:
            return
        self._take_pending(fd)
        line = self._lines.get(got.decode("ascii", "replace"))
        if line is None or line.claimed:
            conn.close()  # unknown, used or withdrawn: nothing to say
            return
        line.connected(conn)

    def _take_pending(self, fd: int) -> socket.socket:
        assert self._loop is not None
        conn, _, timer = self._pending.pop(fd)
        timer.cancel()
        self._loop.remove_reader(fd)
        if not self.accepting and len(self._pending) < MAX_PENDING:
            self._set_accepting(True)  # a slot is free (no-op once the listener is closed)
        return conn

    def _drop_pending(self, fd: int) -> None:
        if fd in self._pending:
            self._take_pending(fd).close()
