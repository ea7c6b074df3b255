"""The pure domain: signals, executions, terminator registries, the coordinator.

No gRPC, no asyncio, no OS calls. Effects leave through the ``ExecutionEffects``
port, time comes in through ``Clock``.
"""
