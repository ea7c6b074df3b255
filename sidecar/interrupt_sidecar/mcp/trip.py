"""What the bridge says at a trip: to the server (cancel) and to the agent (the answer).

Texts are short and fixed per reason: the daemon's ``detail`` (free text from whoever
interrupted) stays with the daemon, so nothing secret crosses into the server's or the
model's context.
"""

from __future__ import annotations

from typing import Any

from interrupt_sidecar_client import Cancellation, InterruptReason

from interrupt_sidecar.mcp import jsonrpc

REASON_TEXT: dict[InterruptReason, str] = {
    InterruptReason.USER_SIGINT: "the user interrupted the turn",
    InterruptReason.NOW_PRIORITY_INPUT: "the user sent new input that takes priority",
    InterruptReason.BUDGET_EXCEEDED: "the turn ran out of its time budget",
    InterruptReason.PARENT_CANCELLED: "the parent task was cancelled",
    InterruptReason.TASK_CANCELLED: "the task was cancelled",
    InterruptReason.SYSTEM_SHUTDOWN: "the system is shutting down",
    InterruptReason.LEASE_LOST: "the agent stopped renewing its lease",
    InterruptReason.SESSION_RELEASED: "the session was released",
    InterruptReason.HOLDER_LOST: "the agent holding the turn was lost",
}


def reason_text(cancellation: Cancellation) -> str:
    return REASON_TEXT.get(cancellation.reason, "the turn was interrupted")


def server_cancel(request_id: Any, cancellation: Cancellation) -> dict[str, Any]:
    """``notifications/cancelled`` for a request the server is working on."""
    return jsonrpc.notification(
        "notifications/cancelled", {"requestId": request_id, "reason": f"interrupted: {reason_text(cancellation)}"}
    )


def task_cancel(bridge_id: str, task_id: str) -> dict[str, Any]:
    """``tasks/cancel`` for a request that became a task (2025-11-25): a task is cancelled by
    its own request, not by ``notifications/cancelled``."""
    return jsonrpc.request(bridge_id, "tasks/cancel", {"taskId": task_id})


def agent_answer(method: str, request_id: Any, cancellation: Cancellation, era: jsonrpc.Era) -> dict[str, Any]:
    """The one answer the agent gets for its interrupted request.

    ``tools/call``: a tool *result* with ``isError`` (the model reads it and moves on, as
    it would any failed tool); other requests: the JSON-RPC error for a cancelled request.
    """
    text = f"Interrupted: {reason_text(cancellation)} ({cancellation.reason.name}). The tool call was stopped."
    if method == "tools/call":
        value: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if era is jsonrpc.Era.STATELESS:
            value["resultType"] = "complete"
        return jsonrpc.result(request_id, value)
    return jsonrpc.error(request_id, jsonrpc.REQUEST_CANCELLED, text, {"reason": cancellation.reason.name})
