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
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

#: How long close() waits for the serving loop between two wake-up connections.
_WAKE_EVERY_S = 0.05


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr for every scrape."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class MetricsServer:
    """Serves ``registry`` at ``/metrics`` on ``host:port`` from a daemon thread."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

        class Server(ThreadingWSGIServer):
            address_family = family

        self._httpd = make_server(host, port, make_wsgi_app(registry), Server, handler_class=_QuietHandler)
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
