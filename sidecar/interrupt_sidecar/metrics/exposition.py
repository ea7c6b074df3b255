"""The ``/metrics`` endpoint: prometheus_client's WSGI app on a thread that sleeps between scrapes.

``prometheus_client.start_http_server`` runs ``serve_forever()`` with its default poll
interval, so its thread wakes twice a second with nothing to do: on an idle daemon that
was the only thread of ours that woke at all. Here the thread blocks in ``select`` until a
scrape arrives (``poll_interval=None``), and :meth:`MetricsServer.close` wakes it itself:
``shutdown()`` only sets a flag the loop reads after ``select`` returns, so a connection
is made until the loop has seen it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from wsgiref.simple_server import WSGIRequestHandler

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

#: How long close() waits for the serving loop between two wake-up connections.
_WAKE_EVERY_S = 0.05


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr for every scrape."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class MetricsServer:
    """Serves ``registry`` at ``/metrics`` from a daemon thread, on ``listener``.

    ``listener`` is a TCP socket already bound and listening (the daemon binds it before
    ``ready`` and serves it after); the server owns it from here and closes it.
    """

    def __init__(self, listener: socket.socket, registry: CollectorRegistry) -> None:
        class Server(ThreadingWSGIServer):
            address_family = listener.family

            def server_bind(self) -> None:
                # HTTPServer/WSGIServer.server_bind without the bind: the socket given
                # replaces the one socketserver made (closed unused).
                self.socket.close()
                self.socket = listener
                self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])
                self.setup_environ()

            def server_activate(self) -> None:
                pass  # already listening

        self._httpd = Server(listener.getsockname()[:2], _QuietHandler)
        self._httpd.set_app(make_wsgi_app(registry))
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": None}, name="metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port (returns once the serving thread has left its loop)."""
        stopper = threading.Thread(target=self._httpd.shutdown, name="metrics-shutdown", daemon=True)
        stopper.start()
        # shutdown() may set its flag after a wake-up connection was already served, so
        # connect until the loop has seen the flag.
        host, port = self._httpd.server_address[:2]
        while stopper.is_alive():
            with contextlib.suppress(OSError):
                socket.create_connection((str(host), int(port)), timeout=1.0).close()
            stopper.join(_WAKE_EVERY_S)
        self._httpd.server_close()
        self._thread.join(1.0)
