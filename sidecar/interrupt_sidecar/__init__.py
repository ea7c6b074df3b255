"""interrupt-sidecar: a language-neutral cancellation daemon over gRPC.

Layers, arrows pointing down only:

* ``cli``, ``config``, ``server``  — command line, frozen configuration, wiring
* ``services``                     — gRPC services; status codes mapped here
* ``runtime``                      — the asyncio trip path, timers, watch hub
* ``domain`` | ``osedge``          — pure semantics | process groups (OS calls)
"""

__version__ = "0.1.0"
