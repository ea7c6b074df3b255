"""The coordinator: every execution the daemon owns, by id, context and token."""

from __future__ import annotations

import threading
from collections import OrderedDict

from interrupt_sidecar.domain.execution import Execution, ExecutionEffects, ExecutionLimits, RemoteParent
from interrupt_sidecar.domain.types import Clock, Instant, InterruptReason
from interrupt_sidecar.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
)
from interrupt_sidecar.record import Record, init_field

TOKEN_PREFIX = "ist1"


class ExecutionSpec(Record):
    """What BeginExecution asks for, already validated for shape."""

    __slots__ = (
        "budget_ns",
        "context_id",
        "execution_id",
        "grace_ns",
        "labels",
        "lease_ttl_ns",
        "parent_execution_id",
        "remote_parent",
        "session_id",
        "task_id",
    )
    execution_id: str
    parent_execution_id: str
    context_id: str
    grace_ns: int | None
    budget_ns: int | None
    lease_ttl_ns: int | None
    labels: dict[str, str]
    session_id: str
    task_id: str
    remote_parent: RemoteParent | None

    def __init__(
        self,
        execution_id: str = "",
        parent_execution_id: str = "",
        context_id: str = "",
        grace_ns: int | None = None,
        budget_ns: int | None = None,
        lease_ttl_ns: int | None = None,
        labels: dict[str, str] | None = None,
        session_id: str = "",
        task_id: str = "",
        remote_parent: RemoteParent | None = None,
    ) -> None:
        init_field(self, "execution_id", execution_id)
        init_field(self, "parent_execution_id", parent_execution_id)
        init_field(self, "context_id", context_id)
        init_field(self, "grace_ns", grace_ns)
        init_field(self, "budget_ns", budget_ns)
        init_field(self, "lease_ttl_ns", lease_ttl_ns)
        init_field(self, "labels", {} if labels is None else labels)  # a dict of its own, as a default_factory
        init_field(self, "session_id", session_id)
        init_field(self, "task_id", task_id)
        init_field(self, "remote_parent", remote_parent)


class InterruptOutcome(Record):
    """What an interrupt did to one execution it targeted."""

    __slots__ = ("execution_id", "reason", "tripped")
    execution_id: str
    tripped: bool
    reason: InterruptReason

    def __init__(self, execution_id: str, tripped: bool, reason: InterruptReason) -> None:
        init_field(self, "execution_id", execution_id)
        init_field(self, "tripped", tripped)
        init_field(self, "reason", reason)


class CoordinatorLimits(Record):
    """How many executions the coordinator keeps, live and ended."""

    __slots__ = ("ended_retention", "execution", "max_live_executions")
    max_live_executions: int
    #: Ended executions remembered for GetExecution / ListExecutions.
    ended_retention: int
    execution: ExecutionLimits

    def __init__(
        self, max_live_executions: int = 100_000, ended_retention: int = 4_096, execution: ExecutionLimits | None = None
    ) -> None:
        init_field(self, "max_live_executions", max_live_executions)
        init_field(self, "ended_retention", ended_retention)
        init_field(self, "execution", ExecutionLimits() if execution is None else execution)


#: The limits of a coordinator built without any.
DEFAULT_LIMITS = CoordinatorLimits()


class Coordinator:
    """Owns the executions. Begin, interrupt (by id or context), end, look up.

    Attach tokens are ``ist1.<token id>.<secret>``: the id finds the execution,
    the secret (stored only as a SHA-256 digest, compared in constant time)
    proves the caller was handed the token.
    """

    def __init__(
        self,
        effects: ExecutionEffects,
        clock: Clock,
        *,
        default_grace_ns: int,
        limits: CoordinatorLimits = DEFAULT_LIMITS,
    ) -> None:
        self._effects = effects
        self._clock = clock
        self.default_grace_ns = default_grace_ns
        self._limits = limits
        self._lock = threading.Lock()
        self._live: dict[str, Execution] = {}
        self._ended: OrderedDict[str, Execution] = OrderedDict()
        self._by_context: dict[str, dict[str, Execution]] = {}
        self._children: dict[str, dict[str, Execution]] = {}
        self._by_session: dict[str, dict[str, Execution]] = {}
        self._by_task: dict[str, dict[str, Execution]] = {}
        self._tokens: dict[str, tuple[bytes, Execution]] = {}
        self._token_of: dict[str, str] = {}

    # -- begin ---------------------------------------------------------------

    def begin(self, spec: ExecutionSpec) -> tuple[Execution, str]:
        """Create an execution with a fresh signal. Returns it and its attach token."""
        # secrets, hashlib and hmac load here, on the first BeginExecution, not on the way to
        # "ready" (with random and _hashlib, ~2 ms there): a restart's recovery needs none.
        import secrets

        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        execution = self._create(spec, token_id, _digest(secret), begun_wall_ns=None)
        return execution, f"{TOKEN_PREFIX}.{token_id}.{secret}"

    def restore(self, spec: ExecutionSpec, token_id: str, token_digest: bytes, begun_wall_ns: int) -> Execution:
        """Re-create an execution from the journal after a restart, with its id, its token
        (tools reattach with the token they hold) and its original begin time (a budget
        keeps running from there; a lease starts afresh).

        It does not follow its parent yet: the caller first re-trips it with its journaled
        trip (reason, detail, time), then calls ``follow_parent``. Linked at once, a parent
        restored tripped would cascade into it with a new PARENT_CANCELLED trip stamped
        now, and the journaled trip time would be lost."""
        return self._create(spec, token_id, token_digest, begun_wall_ns=begun_wall_ns)

    def follow_parent(self, execution: Execution) -> None:
        """Trip ``execution`` (PARENT_CANCELLED) when its parent here trips, or now if it has."""
        parent = self._live.get(execution.parent_execution_id) if execution.parent_execution_id else None
        if parent is not None:
            # Registered after the child is live, so a parent that trips concurrently
            # either sees the child in _children or this listener runs at once; either
            # way the child trips exactly once.
            parent.signal.on_cancel(lambda trip: self._cascade(execution, trip.detail))

    def _create(
        self, spec: ExecutionSpec, token_id: str, token_digest: bytes, *, begun_wall_ns: int | None
    ) -> Execution:
        with self._lock:
            if len(self._live) >= self._limits.max_live_executions:
                raise ResourceExhausted(
                    f"the daemon holds {self._limits.max_live_executions} live executions; end finished ones first"
                )
            # 128 random bits, as uuid4 has (the uuid module would load libuuid at start-up).
            execution_id = spec.execution_id
            if not execution_id:
                import secrets  # loaded by the first begin, not at start-up (see begin)

                execution_id = f"exec-{secrets.token_hex(16)}"
            if execution_id in self._live or execution_id in self._ended:
                raise AlreadyExists(
                    f"execution {execution_id!r} exists already; a new turn needs a new id (or leave it empty)"
                )
            parent = None
            if spec.parent_execution_id:
                parent = self._live.get(spec.parent_execution_id)
                if parent is None:
                    if spec.parent_execution_id in self._ended:
                        raise FailedPrecondition(f"parent execution {spec.parent_execution_id!r} has ended")
                    raise NotFound(f"parent execution {spec.parent_execution_id!r} does not exist")
            execution = Execution(
                execution_id=execution_id,
                context_id=spec.context_id,
                parent_execution_id=spec.parent_execution_id,
                labels=dict(spec.labels),
                grace_ns=spec.grace_ns if spec.grace_ns is not None else self.default_grace_ns,
                budget_ns=spec.budget_ns,
                lease_ttl_ns=spec.lease_ttl_ns,
                clock=self._clock,
                effects=self._effects,
                limits=self._limits.execution,
            )
            execution.token_id = token_id
            execution.token_digest = token_digest
            execution.session_id = spec.session_id
            execution.task_id = spec.task_id
            execution.remote_parent = spec.remote_parent
            if spec.session_id:
                self._by_session.setdefault(spec.session_id, {})[execution_id] = execution
            if spec.task_id:
                self._by_task.setdefault(spec.task_id, {})[execution_id] = execution
            if begun_wall_ns is not None:
                now = execution.begun_at
                execution.begun_at = Instant(now.mono_ns - max(0, now.wall_ns - begun_wall_ns), begun_wall_ns)
            self._live[execution_id] = execution
            if spec.context_id:
                self._by_context.setdefault(spec.context_id, {})[execution_id] = execution
            if parent is not None:
                self._children.setdefault(parent.execution_id, {})[execution_id] = execution
            self._tokens[token_id] = (token_digest, execution)
            self._token_of[execution_id] = token_id
        try:
            self._effects.begun(execution)
        except BaseException:
            # The effects refused it (the journal could not write it ahead): the begin
            # fails, so the execution must never have existed.
            with self._lock:
                self._live.pop(execution_id, None)
                self._unindex(execution)
            raise
        if begun_wall_ns is None:
            self.follow_parent(execution)
        return execution

    def _cascade(self, child: Execution, detail: str) -> None:
        if not child.ended:
            child.trip(InterruptReason.PARENT_CANCELLED, detail)

    # -- interrupt -----------------------------------------------------------

    def interrupt_execution(self, execution_id: str, reason: InterruptReason, detail: str) -> InterruptOutcome:
        execution = self.live(execution_id)
        tripped, trip = execution.trip(reason, detail)
        return InterruptOutcome(execution_id, tripped, trip.reason)

    def interrupt_context(self, context_id: str, reason: InterruptReason, detail: str) -> list[InterruptOutcome]:
        """Trip every live execution of ``context_id`` and no other."""
        with self._lock:
            targets = list(self._by_context.get(context_id, {}).values())
        return self._trip_all(targets, reason, detail)

    def interrupt_session(self, session_id: str, reason: InterruptReason, detail: str) -> list[InterruptOutcome]:
        """Trip every live execution of ``session_id`` (the session was released)."""
        with self._lock:
            targets = list(self._by_session.get(session_id, {}).values())
        return self._trip_all(targets, reason, detail)

    def interrupt_task(self, task_id: str, reason: InterruptReason, detail: str) -> list[InterruptOutcome]:
        """Trip every live execution of the scheduled task ``task_id``."""
        with self._lock:
            targets = list(self._by_task.get(task_id, {}).values())
        return self._trip_all(targets, reason, detail)

    @staticmethod
    def _trip_all(targets: list[Execution], reason: InterruptReason, detail: str) -> list[InterruptOutcome]:
        outcomes = []
        for execution in targets:
            tripped, trip = execution.trip(reason, detail)
            outcomes.append(InterruptOutcome(execution.execution_id, tripped, trip.reason))
        return outcomes

    def interrupt_all(self, reason: InterruptReason, detail: str) -> list[InterruptOutcome]:
        """Trip every live execution (daemon shutdown)."""
        with self._lock:
            targets = list(self._live.values())
        outcomes = []
        for execution in targets:
            tripped, trip = execution.trip(reason, detail)
            outcomes.append(InterruptOutcome(execution.execution_id, tripped, trip.reason))
        return outcomes

    # -- end -----------------------------------------------------------------

    def end(self, execution_id: str) -> Execution:
        """End an execution: its registrars close, its token stops working.
        Idempotent for an execution still remembered.

        A child may not outlive its parent: the parent's live children (and theirs) are
        tripped with PARENT_CANCELLED and ended first, deepest first."""
        with self._lock:
            children = list(self._children.get(execution_id, {}).values())
        for child in children:
            if not child.ended:
                child.trip(InterruptReason.PARENT_CANCELLED, f"parent execution {execution_id!r} ended")
                self.end(child.execution_id)
        with self._lock:
            execution = self._live.pop(execution_id, None)
            if execution is None:
                ended = self._ended.get(execution_id)
                if ended is not None:
                    return ended
                raise NotFound(f"execution {execution_id!r} does not exist (or ended long ago)")
            self._unindex(execution)
            self._ended[execution_id] = execution
            forgotten = [
                self._ended.popitem(last=False)[1] for _ in range(len(self._ended) - self._limits.ended_retention)
            ]
        execution.end()
        for old in forgotten:
            old.forget()
        return execution

    def _unindex(self, execution: Execution) -> None:
        """Drop ``execution`` from every index but ``_live``/``_ended``. Holds the lock."""
        execution_id = execution.execution_id
        if execution.context_id:
            siblings = self._by_context.get(execution.context_id, {})
            siblings.pop(execution_id, None)
            if not siblings:
                self._by_context.pop(execution.context_id, None)
        if execution.parent_execution_id:
            siblings_of_child = self._children.get(execution.parent_execution_id, {})
            siblings_of_child.pop(execution_id, None)
            if not siblings_of_child:
                self._children.pop(execution.parent_execution_id, None)
        for index, key in ((self._by_session, execution.session_id), (self._by_task, execution.task_id)):
            if key:
                members = index.get(key, {})
                members.pop(execution_id, None)
                if not members:
                    index.pop(key, None)
        token_id = self._token_of.pop(execution_id, None)
        if token_id is not None:
            self._tokens.pop(token_id, None)

    # -- look-ups ------------------------------------------------------------

    def live(self, execution_id: str) -> Execution:
        """A live execution, or NotFound / FailedPrecondition (ended)."""
        execution = self._live.get(execution_id)
        if execution is not None:
            return execution
        if execution_id in self._ended:
            raise FailedPrecondition(f"execution {execution_id!r} has ended")
        raise NotFound(f"execution {execution_id!r} does not exist")

    def get(self, execution_id: str) -> Execution:
        """A live or remembered ended execution."""
        execution = self._live.get(execution_id) or self._ended.get(execution_id)
        if execution is None:
            raise NotFound(f"execution {execution_id!r} does not exist (or ended long ago)")
        return execution

    def list(self, context_id: str = "", include_ended: bool = False) -> list[Execution]:
        with self._lock:
            found = list(self._live.values())
            if include_ended:
                found.extend(self._ended.values())
        if context_id:
            found = [e for e in found if e.context_id == context_id]
        return found

    @property
    def live_count(self) -> int:
        return len(self._live)

    def resolve_token(self, token: str) -> Execution:
        """The live execution an attach token grants.

        Empty → Unauthenticated; malformed → InvalidArgument; anything else that
        grants nothing (unknown, wrong secret, execution ended) → PermissionDenied.
        """
        if not token:
            raise Unauthenticated(
                "hello.attach_token is empty: pass the token BeginExecution returned (INTERRUPT_SIDECAR_TOKEN)"
            )
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
            raise InvalidArgument(
                f"hello.attach_token is not an attach token (expected '{TOKEN_PREFIX}.<id>.<secret>' "
                "as returned by BeginExecution)"
            )
        # One answer for an unknown id, a wrong secret and an ended execution: a caller
        # without the right token learns nothing about which executions exist.
        import hmac

        entry = self._tokens.get(parts[1])
        if entry is None or not hmac.compare_digest(entry[0], _digest(parts[2])):
            raise PermissionDenied(
                "the attach token does not grant a live execution (it ended, it is from another daemon, "
                "or it was mistyped); ask the agent for the current one"
            )
        return entry[1]


def _digest(secret: str) -> bytes:
    import hashlib

    return hashlib.sha256(secret.encode()).digest()
