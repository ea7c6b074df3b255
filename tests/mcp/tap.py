"""A recording pipe between an MCP client and the process it starts: ``python tap.py LOG -- CMD ARGS...``.

Copies the client's stdin to CMD and CMD's stdout to the client, line by line, unchanged,
and appends every line CMD sends to the client to LOG. The tests read LOG to check what
the agent was sent, independently of the bridge (and of the SDK, which silently ignores a
second answer to one request). Exits with CMD's status; a signal is passed on to CMD.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    assert separator == "--" and command, "usage: tap.py LOG -- CMD ARGS..."
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child_in, child_out = child.stdin, child.stdout

    def upstream() -> None:
        for line in sys.stdin.buffer:
            try:
                child_in.write(line)
                child_in.flush()
            except BrokenPipeError:
                break
        child_in.close()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda n, _frame: child.send_signal(n))
    threading.Thread(target=upstream, daemon=True).start()
    with open(log_path, "ab", buffering=0) as log:
        for line in child_out:
            log.write(line)
            os.write(1, line)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
