"""Claude Code itself, offline: run it against a scripted Anthropic Messages API on loopback.

Run as ``unshare -n python claude_host.py CONFIG`` (a network namespace with nothing but
loopback, so nothing it tries can leave the machine). It brings ``lo`` up, serves the
Messages API on 127.0.0.1 from this process and runs the CLI (``claude -p``) with that URL,
its telemetry and non-essential traffic off, and a private HOME. CONFIG (JSON):

* ``claude``: the CLI; ``args``: its arguments; ``home``: its HOME; ``env``: more variables;
* ``command``: what the scripted model asks the Bash tool to run, once, as ``toolu_host``
  (or ``call``: ``{"name", "input"}`` of another tool);
* ``log``: where every request body the API received is appended (one JSON per line);
* ``sdk`` (instead of ``args``): run the docs' Claude Agent SDK example on the CLI instead
  (``module``, ``token_file``, ``address``; see :func:`sdk_chat`).

The model answers a request whose last message carries a ``tool_result`` with the text
``done``, any other with the Bash call (a request without tools, e.g. a title, with ``ok``).
Exits with the CLI's code.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL_USE_ID = "toolu_host"


def reply(request: dict[str, Any], call: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The scripted model: (content blocks, stop reason) for a Messages API request."""
    messages = request.get("messages") or [{}]
    last = messages[-1].get("content")
    answered = isinstance(last, list) and any(block.get("type") == "tool_result" for block in last)
    if answered or not request.get("tools"):
        return [{"type": "text", "text": "done" if answered else "ok"}], "end_turn"
    return [{"type": "tool_use", "id": TOOL_USE_ID, **call}], "tool_use"


def sse(blocks: list[dict[str, Any]], stop: str, model: str) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = []
    message = {"id": "msg_host", "type": "message", "role": "assistant", "model": model, "content": []}
    usage = {"input_tokens": 10, "output_tokens": 1}
    events.append(("message_start", {"type": "message_start", "message": {**message, "usage": usage}}))
    for index, block in enumerate(blocks):
        start: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    ending = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    events.append(("message_delta", ending))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def serve(call: dict[str, Any], log: str) -> ThreadingHTTPServer:
    lock = threading.Lock()

    class Api(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            with lock, open(log, "a") as handle:
                handle.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                self._send(200, "application/json", json.dumps({"input_tokens": 10}).encode())
                return
            blocks, stop = reply(body, call)
            model = str(body.get("model", "claude-test"))
            if body.get("stream"):
                self._send(200, "text/event-stream", sse(blocks, stop, model))
            else:
                message = {"id": "msg_host", "type": "message", "role": "assistant", "model": model}
                result: dict[str, Any] = {**message, "content": blocks, "stop_reason": stop, "stop_sequence": None}
                result["usage"] = {"input_tokens": 10, "output_tokens": 5}
                self._send(200, "application/json", json.dumps(result).encode())

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}")

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def host(directory: Path, command: str = "", **config: Any) -> tuple[list[str], Path]:
    """The argv that runs this script on a CONFIG of ``config`` (``claude``: the CLI the
    installed SDK bundles, a HOME and an API log in ``directory``; ``command`` for the
    scripted model), in a network namespace of its own; and the API's request log."""
    import claude_agent_sdk

    home, log = directory / "home", directory / "api.log"
    home.mkdir(exist_ok=True)
    claude = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    full = {"claude": str(claude), "home": str(home), "log": str(log), "command": command, **config}
    path = directory / "host.json"
    path.write_text(json.dumps(full))
    return ["unshare", "--net", sys.executable, str(Path(__file__)), str(path)], log


def tool_results(log: Path) -> list[dict[str, Any]]:
    """The tool_result blocks Claude Code sent the model, from the API's request log."""
    results = []
    for line in log.read_text().splitlines():
        for message in json.loads(line)["body"].get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                results += [block for block in content if block.get("type") == "tool_result"]
    return results


def main() -> int:
    with open(sys.argv[1]) as handle:
        config = json.load(handle)
    # Only loopback exists in this namespace; bring it up so the API can listen on it.
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    call = config.get("call") or {"name": "Bash", "input": {"command": config["command"]}}
    server = serve(call, config["log"])
    env = {
        "PATH": os.environ["PATH"],
        "HOME": config["home"],
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "ANTHROPIC_API_KEY": "sk-ant-offline-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        **config.get("env", {}),
    }
    if "sdk" in config:
        code = asyncio.run(sdk_chat(config, env))
    else:
        code = subprocess.run(
            [config["claude"], *config["args"]], env=env, stdin=subprocess.DEVNULL, timeout=120
        ).returncode
    server.shutdown()
    return code


async def sdk_chat(config: dict[str, Any], env: dict[str, str]) -> int:
    """The docs' Claude Agent SDK example (a module at ``sdk.module``): its ``options`` and
    ``chat`` with a ``ClaudeSDKClient`` on this CLI; prints the ``ResultMessage``'s subtype
    and ``is_error`` as JSON."""
    from claude_agent_sdk import ClaudeSDKClient

    sdk = config["sdk"]
    spec = importlib.util.spec_from_file_location("claude_sdk_example", sdk["module"])
    assert spec is not None and spec.loader is not None
    example: Any = importlib.util.module_from_spec(spec)  # the example's own names
    spec.loader.exec_module(example)
    example.TOKEN_FILE = sdk["token_file"]  # the docs' /run/agent/turn-token, here
    options = example.options({}, cli_path=config["claude"], env=env, allowed_tools=["Bash"])
    async with ClaudeSDKClient(options) as client:
        result = await example.chat(client, "run it", sdk["address"])
    print(json.dumps({"subtype": getattr(result, "subtype", None), "is_error": getattr(result, "is_error", None)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
