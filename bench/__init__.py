"""The interrupt-sidecar benchmark suite: ``python -m bench`` (see ``bench/README.md``).

Every figure is measured beside its floor (a bare grpc.aio server, a raw asyncio socket,
a bare ``killpg`` + ``waitpid``) in the same run and reported as a ratio to it.
"""
