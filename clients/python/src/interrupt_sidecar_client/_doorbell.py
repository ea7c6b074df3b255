"""The tool's end of the cancel doorbell: a unix socket on which the daemon rings the cancel early.

A tool that asked for it in hello gets a path and a one-time token in ``attached``. It
connects, writes the token, and the daemon writes the cancel there the moment the
execution trips (at once, if it already has) as a 4-byte big-endian length followed by a
serialized ``interrupt.v1.Cancel``. A raw socket write reaches the tool well before the
same cancel on the Attach stream, which still follows and stays authoritative: the
doorbell only makes the cancel earlier, so anything going wrong here (no socket, a hang-up
without a frame, a malformed frame) is logged at debug and the stream's cancel is used.

The frame is read in the protocol's ``data_received`` callback, which hands the cancel
over at once: no task has to be woken to read it, which is the point of the doorbell.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from asyncio.trsock import TransportSocket
from collections.abc import Callable

from google.protobuf.message import DecodeError

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2
from interrupt_sidecar_client._types import Cancellation, cancellation_from_pb

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
#: A Cancel is a few dozen bytes (its detail is at most 1 KiB): a longer frame is garbage.
MAX_FRAME = 64 * 1024


class DoorbellClient(asyncio.Protocol):
    """One tool run's doorbell connection. Create, open and close it on the stream's loop.

    ``on_cancel`` is called at most once, on the loop, with the rung cancel. The connection
    is closed right after the frame (nothing else is ever written), on a bad frame, when
    the daemon hangs up, and by :meth:`close`.
    """

    def __init__(self, grant: interrupt_pb2.Doorbell, on_cancel: Callable[[Cancellation], object]) -> None:
        self.path = grant.path
        # The daemon refuses a token that is not what it handed out; a mangled one only
        # costs the doorbell, never the run.
        self._token = grant.token.encode("ascii", "replace")
        self._on_cancel = on_cancel
        self._buffer = bytearray()
        self._transport: asyncio.BaseTransport | None = None
        self._connecting: asyncio.Task[None] | None = None
        # Resolved when the socket is closed (connection_lost), for aclose() to wait on.
        self._lost: asyncio.Future[None] | None = None
        self._closed = False
        #: The client end's socket once connected (tests check that it gets closed).
        self.socket: TransportSocket | None = None
        #: True once a whole, valid cancel frame has been read.
        self.rang = False

    @property
    def closed(self) -> bool:
        """True once closed (by :meth:`close`, after the frame, or when the daemon hung up)."""
        return self._closed

    @property
    def connecting(self) -> asyncio.Task[None] | None:
        """The connect task (None before :meth:`open`); done once connected, failed or closed."""
        return self._connecting

    def open(self) -> None:
        """Start connecting in a task of its own: never blocks, never raises."""
        self._connecting = asyncio.get_running_loop().create_task(self._connect(), name="interrupt-sidecar doorbell")

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_unix_connection(lambda: self, self.path)
        except Exception as error:  # OSError, in practice; whatever it is, the stream is still there
            log.debug("no cancel doorbell at %r (%s); the stream's cancel will do", self.path, error)
            self._closed = True

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._lost = asyncio.get_running_loop().create_future()
        if self._closed:  # closed while connecting: hang up at once
            transport.close()
            return
        self._transport = transport
        self.socket = transport.get_extra_info("socket")
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self._token)

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self._buffer += data
        if len(self._buffer) < _LENGTH.size:
            return
        (length,) = _LENGTH.unpack_from(self._buffer)
        if length > MAX_FRAME:
            log.debug("the cancel doorbell sent a %d-byte frame; ignoring it for the stream's cancel", length)
            self.close()
            return
        end = _LENGTH.size + length
        if len(self._buffer) < end:
            return
        try:
            cancel = interrupt_pb2.Cancel.FromString(bytes(self._buffer[_LENGTH.size : end]))
        except DecodeError as error:
            log.debug("the cancel doorbell sent a malformed cancel (%s); ignoring it for the stream's", error)
            self.close()
            return
        if not cancel.reason or not cancel.HasField("tripped_at"):
            # The daemon always sets both; anything else (an empty frame decodes as an
            # empty Cancel) is not its cancel, and must not cancel a run the stream does not.
            log.debug("the cancel doorbell sent a cancel without a reason or trip time; ignoring it")
            self.close()
            return
        # The frame is the only thing the daemon ever writes: hang up before handing it on.
        self.rang = True
        self.close()
        self._on_cancel(cancellation_from_pb(cancel))

    def eof_received(self) -> bool | None:
        if not self.rang:
            # The stream ended, the token was refused, or the daemon is stopping: the
            # stream says which, and carries the cancel if there is one.
            log.debug("the cancel doorbell hung up without a cancel")
        self.close()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._transport = None
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    # -- the end ---------------------------------------------------------------------

    def close(self) -> None:
        """Hang up, or stop connecting. Idempotent; callable from any loop callback."""
        self._closed = True
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        if self._transport is not None:
            # The socket itself closes on the loop's next turn (connection_lost).
            self._transport.close()
            self._transport = None

    async def aclose(self) -> None:
        """:meth:`close`, then wait until the connect task is over and the socket closed.

        The transport closes its socket on the loop's next turn; waiting for it means no
        descriptor outlives the run, whatever the caller does with the loop afterwards.
        """
        self.close()
        connecting = self._connecting
        if connecting is not None and not connecting.done():
            try:
                await connecting
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        if self._lost is not None:
            await asyncio.shield(self._lost)
