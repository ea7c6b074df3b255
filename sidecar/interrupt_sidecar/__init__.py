"""interrupt-sidecar: a language-neutral cancellation daemon over gRPC.

Layers, arrows pointing down only (``tests/test_layers.py`` places every module):

* ``cli``                                — the command line
* ``wrapper``, ``top``, ``demo``         — subcommands that are clients of the daemon over gRPC
* ``server``, ``loops``                  — wiring, the event loop chosen by name
* ``config``                             — the frozen configuration
* ``services``, ``federation``           — gRPC services and clients; status codes mapped here
* ``metrics``                            — the Prometheus observer of the trip path
* ``runtime``, ``gc_pacer``              — the asyncio trip path, timers, watch hub
* ``domain`` | ``osedge``                — pure semantics | process groups (OS calls)
* ``errors``, ``record``                 — the root exception type, the immutable record type; usable by every layer
"""

__version__ = "0.1.0"
