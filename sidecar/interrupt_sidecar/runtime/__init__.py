"""The asyncio runtime: the trip path, its timers, and the watch hub. No gRPC."""
