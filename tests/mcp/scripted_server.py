"""A scripted MCP stdio server for the race tests, where the timing must be in the test's hands.

It logs every line it receives to ``$SCRIPTED_LOG``. ``initialize`` is answered once the
file ``$SCRIPTED_HOLD_INIT`` exists (at once when unset); ``ping`` at once; ``tools/call``
of ``wait`` once the file named by its ``release`` argument exists (a result with the text
``released``), of ``now`` at once; a call with a ``task`` in its params becomes a task (a
``CreateTaskResult`` at once, 2025-11-25). A batch (a JSON array) is answered as one array.
``tasks/cancel`` is answered with the task cancelled. Everything else is logged only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

_out = threading.Lock()


def send(message: dict[str, Any] | list[dict[str, Any]]) -> None:
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
        data = json.loads(line)
        if isinstance(data, list):
            for message in data:
                log.write(json.dumps(message) + "\n")
            answers = [a for a in (handle(m) for m in data) if a is not None]
            if answers:
                send(answers)
            continue
        log.write(line if line.endswith("\n") else line + "\n")
        answer = handle(data)
        if answer is not None:
            send(answer)


def handle(message: dict[str, Any]) -> dict[str, Any] | None:
    """Answer now (returned), later (a thread sends it), or never (None)."""
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }
        after(os.environ.get("SCRIPTED_HOLD_INIT"), {"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "ping":
        return {"jsonrpc": "2.0", "id": request_id, "result": {}}
    elif method == "tasks/cancel":
        task = {"taskId": message["params"]["taskId"], "status": "cancelled"}
        return {"jsonrpc": "2.0", "id": request_id, "result": task}
    elif method == "tools/call":
        params = message["params"]
        if "task" in params:
            task = {"taskId": f"task-{request_id}", "status": "working", "createdAt": "2026-01-01T00:00:00Z"}
            return {"jsonrpc": "2.0", "id": request_id, "result": {"task": task}}
        if params["name"] == "wait":
            after(params["arguments"]["release"], text(request_id, "released"))
        else:
            return text(request_id, "now")
    return None


if __name__ == "__main__":
    main()
