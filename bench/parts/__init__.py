"""One module per part of issue 7's list; each exposes ``async def run(ctx) -> dict``."""
