"""Shape checks for every request field, with messages a person can act on.

State checks (does it exist, is it allowed now) belong to the domain; these
only refuse what is malformed, out of range or too large.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from interrupt_sidecar.domain.execution import RemoteParent
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, ToolOutcome
from interrupt_sidecar.errors import InvalidArgument

_ID = re.compile(r"[\x21-\x7e]{1,128}")
_LABEL_KEY = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_./-]{0,62})?")
MAX_DETAIL_BYTES = 1024
MAX_NAME_CHARS = 256
MAX_LABELS = 64
MAX_LABEL_VALUE_CHARS = 256

NS_PER_S = 1_000_000_000
MAX_GRACE_NS = 3600 * NS_PER_S
MAX_BUDGET_NS = 30 * 86400 * NS_PER_S
MIN_LEASE_NS = 100_000_000
MAX_LEASE_NS = 86400 * NS_PER_S
MAX_KILL_AFTER_NS = 3600 * NS_PER_S


def identifier(value: str, field: str, *, required: bool) -> str:
    """An id: 1-128 printable ASCII characters without spaces."""
    if not value:
        if required:
            raise InvalidArgument(f"{field} is required")
        return value
    if not _ID.fullmatch(value):
        raise InvalidArgument(f"{field} must be 1-128 printable ASCII characters without spaces, got {_preview(value)}")
    return value


def text(value: str, field: str, *, max_chars: int = MAX_NAME_CHARS) -> str:
    if len(value) > max_chars:
        raise InvalidArgument(f"{field} is {len(value)} characters long; at most {max_chars} are allowed")
    return value


def detail(value: str, field: str = "detail") -> str:
    # A character is at most 4 bytes in UTF-8: a short string needs no encoding to pass.
    if len(value) * 4 <= MAX_DETAIL_BYTES:
        return value
    size = len(value.encode())
    if size > MAX_DETAIL_BYTES:
        raise InvalidArgument(f"{field} is {size} bytes long; at most {MAX_DETAIL_BYTES} are allowed")
    return value


def labels(value: Mapping[str, str]) -> dict[str, str]:
    if len(value) > MAX_LABELS:
        raise InvalidArgument(f"labels has {len(value)} entries; at most {MAX_LABELS} are allowed")
    for key, item in value.items():
        if not _LABEL_KEY.fullmatch(key):
            raise InvalidArgument(
                f"label key {_preview(key)} must be 1-63 characters of letters, digits, '_', '.', '-', '/', "
                "starting with a letter or digit"
            )
        if len(item) > MAX_LABEL_VALUE_CHARS:
            raise InvalidArgument(f"label {key!r} has a value of {len(item)} characters; at most 256 are allowed")
    return dict(value)


def duration_ns(d: Duration, field: str, *, minimum_ns: int, maximum_ns: int) -> int:
    """A set Duration as nanoseconds, within [minimum_ns, maximum_ns]."""
    if not -999_999_999 <= d.nanos <= 999_999_999 or (d.seconds > 0 > d.nanos) or (d.seconds < 0 < d.nanos):
        raise InvalidArgument(f"{field} is not a valid Duration (seconds={d.seconds}, nanos={d.nanos})")
    ns = d.seconds * NS_PER_S + d.nanos
    if ns < 0:
        raise InvalidArgument(f"{field} must not be negative, got {ns / NS_PER_S:g}s")
    if not minimum_ns <= ns <= maximum_ns:
        raise InvalidArgument(
            f"{field} must be between {_human(minimum_ns)} and {_human(maximum_ns)}, got {_human(ns)}"
        )
    return ns


#: A dict lookup rather than ``InterruptReason(value)``: this runs on every Interrupt,
#: before its cancel is written, and the Enum call costs several times as much.
_REASONS: dict[int, InterruptReason] = {int(r): r for r in InterruptReason}


def reason(value: int) -> InterruptReason:
    found = _REASONS.get(value)
    if found is not None:
        return found
    if value == 0:
        raise InvalidArgument("reason is required: every interrupt must say why (e.g. INTERRUPT_REASON_USER_SIGINT)")
    raise InvalidArgument(f"reason {value} is not an InterruptReason (1-9)")


#: Dict lookups, as for reasons: every tool's hello and unwound pass through these.
_BEHAVIORS: dict[int, InterruptBehavior] = {int(b): b for b in InterruptBehavior}
_OUTCOMES: dict[int, ToolOutcome] = {int(o): o for o in ToolOutcome}


def behavior(value: int) -> InterruptBehavior:
    """Unset (0) means NON_INTERRUPTIBLE, the documented default."""
    if value == 0:
        return InterruptBehavior.NON_INTERRUPTIBLE
    found = _BEHAVIORS.get(value)
    if found is None:
        raise InvalidArgument(f"behavior {value} is not an InterruptBehavior (0-4)")
    return found


def outcome(value: int) -> ToolOutcome:
    found = _OUTCOMES.get(value)
    if found is None:
        raise InvalidArgument(f"outcome {value} is not a ToolOutcome (0-3)")
    return found


def _human(ns: int) -> str:
    if ns >= NS_PER_S:
        return f"{ns / NS_PER_S:g}s"
    return f"{ns / 1e6:g}ms"


def _preview(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def remote_parent(value: pb.RemoteParent) -> RemoteParent:
    """A parent in another daemon: where it is, which execution, and how long it may vanish."""
    address = value.address.strip()
    if not address:
        raise InvalidArgument("remote_parent.address is required: the parent daemon's HOST:PORT or unix:///path")
    text(address, "remote_parent.address")
    return RemoteParent(
        address=address,
        execution_id=identifier(value.execution_id, "remote_parent.execution_id", required=True),
        credential=text(value.credential, "remote_parent.credential", max_chars=4096),
        unreachable_after_ns=(
            duration_ns(
                value.unreachable_after,
                "remote_parent.unreachable_after",
                minimum_ns=MIN_LEASE_NS,
                maximum_ns=MAX_LEASE_NS,
            )
            if value.HasField("unreachable_after")
            else None
        ),
        keep_running_when_unreachable=value.keep_running_when_unreachable,
        tls=value.tls,
    )
