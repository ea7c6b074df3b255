"""``interrupt-sidecar mcp -- CMD ARGS...``: any MCP stdio server, interruptible with no code change.

A top layer beside the CLI, and a *client* of the daemon like ``interrupt-sidecar run``:
it attaches each tool call over gRPC with the Python client and kills processes through
the OS edge's ``/proc`` reader (``interrupt_sidecar.osedge.procfs``), nothing else of the
daemon. ``jsonrpc`` is the framing and the protocol eras, ``turns`` how a request finds
its turn (and its run with the daemon), ``tracking`` the requests in flight, ``trip``
what is said at a trip, ``processes`` what a call started and how it is killed,
``server`` the server process, ``stdio`` the agent's side, ``bridge`` the session that ties them, ``command`` the
subcommand (the CLI imports ``interrupt_sidecar.mcp.command``; this package imports
nothing, so its modules can import each other through it without a circle). Users' guide:
docs/mcp.md.
"""
