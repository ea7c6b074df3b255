"""A scripted MCP stdio server for the race tests, where the timing must be in the test's hands.

It logs every line it receives to ``$SCRIPTED_LOG``. ``initialize`` is answered once the
file ``$SCRIPTED_HOLD_INIT`` exists (at once when unset); ``ping`` at once; ``tools/call``
of ``wait`` once the file named by its ``release`` argument exists (a result with the text
``released``), of ``now`` at once. Everything else is logged and otherwise ignored.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

_out = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def after(path: str | None, answer: dict[str, Any]) -> None:
    def wait() -> None:
        while path and not os.path.exists(path):
            time.sleep(0.0005)
        send(answer)

    threading.Thread(target=wait, daemon=True).start()


def text(request_id: Any, value: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": value}]}}


def main() -> None:
    log = open(os.environ["SCRIPTED_LOG"], "a", buffering=1)  # noqa: SIM115 (open for the process's life)
    for line in sys.stdin:
        log.write(line if line.endswith("\n") else line + "\n")
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"},
            }
            after(os.environ.get("SCRIPTED_HOLD_INIT"), {"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/call":
            params = message["params"]
            if params["name"] == "wait":
                after(params["arguments"]["release"], text(request_id, "released"))
            else:
                send(text(request_id, "now"))


if __name__ == "__main__":
    main()
