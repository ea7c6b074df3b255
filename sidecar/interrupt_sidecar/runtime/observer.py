"""The observation port: what the trip path and the services report, and to whom.

The runtime never imports a metrics library. It calls a :class:`TripObserver`
at each observation point; the daemon wires in the Prometheus implementation
(``interrupt_sidecar.metrics``) when metrics are enabled, and :data:`NOOP_OBSERVER`
otherwise.

Rules for every method, because they run on the trip path:

- called on the daemon's event-loop thread; must not block, await or raise;
- arguments are values the caller already holds (enums, ints): no formatting,
  no allocation on the caller's side;
- latencies are integer nanoseconds; implementations convert;
- labels an implementation derives must stay bounded: reasons, behaviours,
  kinds and causes, never execution ids or PIDs (those go in exemplars).
- latency observations happen after the thing they time (the cancel written,
  the tool's report read, the group gone), never before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal, Protocol

from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason

#: What an ``Interrupt`` request found, per targeted execution.
InterruptOutcomeLabel = Literal["tripped", "already_tripped", "not_found", "ended"]
INTERRUPT_OUTCOMES: Final[tuple[InterruptOutcomeLabel, ...]] = ("tripped", "already_tripped", "not_found", "ended")

#: Which credential a refused caller needed: the agent's (coordinator) or a tool's (attach token).
AuthRole = Literal["coordinator", "tool"]
AUTH_ROLES: Final[tuple[AuthRole, ...]] = ("coordinator", "tool")

#: What kind of terminator ran or failed.
TerminatorKind = Literal["callback", "process_group"]
TERMINATOR_KINDS: Final[tuple[TerminatorKind, ...]] = ("callback", "process_group")

#: Why the daemon refused to register or to signal a process group.
#:
#: ``invalid_pgid``: pgid <= 1; ``own_group``: the daemon's own group (or one
#: containing the daemon); ``init_group``: the group of the namespace's PID 1;
#: ``not_found``: no live member; ``foreign_uid``: a member runs as a uid
#: outside the allowed set; ``identity_changed``: the pgid now names another
#: group than the one pinned at registration (PID reuse), found before a signal;
#: ``other``: anything the OS edge did not classify.
RefusalCause = Literal[
    "invalid_pgid", "own_group", "init_group", "not_found", "foreign_uid", "identity_changed", "other"
]
REFUSAL_CAUSES: Final[tuple[RefusalCause, ...]] = (
    "invalid_pgid",
    "own_group",
    "init_group",
    "not_found",
    "foreign_uid",
    "identity_changed",
    "other",
)


class TripObserver(Protocol):
    """Receives the daemon's observations. See the module docstring for the rules."""

    # -- gauges ----------------------------------------------------------------

    def execution_begun(self) -> None:
        """An execution was begun (active executions +1)."""

    def execution_ended(self) -> None:
        """An execution ended (active executions -1)."""

    def tool_attached(self, behavior: InterruptBehavior) -> None:
        """A tool stream attached with ``behavior`` (attached streams +1)."""

    def tool_detached(self, behavior: InterruptBehavior) -> None:
        """A tool stream of ``behavior`` detached (attached streams -1)."""

    # -- interrupts and trips --------------------------------------------------

    def interrupt_requested(self, reason: InterruptReason, outcome: InterruptOutcomeLabel) -> None:
        """An ``Interrupt`` request with ``reason`` had ``outcome`` for one target."""

    def doorbell_rung(self) -> None:
        """A tool's cancel was written to its doorbell (ahead of its stream)."""

    def tripped(self, reason: InterruptReason) -> None:
        """An execution tripped (by any path: RPC, budget, lease, cascade, shutdown)."""

    def cancel_delivered(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        """The cancel was written to a tool's stream ``latency_ns`` after the trip
        (after the tool's attach, for a tool that attached after the trip)."""

    def tool_unwound(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        """A tool reported unwound ``latency_ns`` after the trip (or its late attach)."""

    def grace_overrun(self, reason: InterruptReason, behavior: InterruptBehavior) -> None:
        """A tool did not report unwound within its grace."""

    # -- terminators and process groups ----------------------------------------

    def terminator_run(self, kind: TerminatorKind) -> None:
        """A terminator was run: a callback sent to its tool, or a group signalled."""

    def terminator_failed(self, kind: TerminatorKind) -> None:
        """A terminator failed: the tool reported a callback error, or a group
        could not be signalled or survived SIGKILL."""

    def process_group_signalled(self, reason: InterruptReason) -> None:
        """A process group was sent its polite signal at the trip."""

    def escalated(self, reason: InterruptReason) -> None:
        """A process group outlived its ``kill_after`` and was sent SIGKILL."""

    def process_tree_gone(self, reason: InterruptReason, latency_ns: int, escalated: bool, execution_id: str) -> None:
        """Every process of a signalled group (and its descendants) is gone,
        ``latency_ns`` after the trip; ``escalated`` when SIGKILL was needed."""

    def process_group_refused(self, cause: RefusalCause) -> None:
        """The daemon refused to register or to signal a process group."""

    # -- ownership losses ------------------------------------------------------

    def holder_lost(self) -> None:
        """The daemon found an execution's holder gone and tripped it with HOLDER_LOST."""

    def lease_lost(self) -> None:
        """An execution's lease ran out unrenewed and it tripped with LEASE_LOST."""

    # -- authentication ----------------------------------------------------------

    def auth_denied(self, role: AuthRole, code: str) -> None:
        """A caller was refused for ``role`` with gRPC status ``code`` (a status name)."""


class NoopObserver:
    """Observes nothing: the default when metrics are off."""

    def execution_begun(self) -> None:
        pass

    def execution_ended(self) -> None:
        pass

    def tool_attached(self, behavior: InterruptBehavior) -> None:
        pass

    def tool_detached(self, behavior: InterruptBehavior) -> None:
        pass

    def interrupt_requested(self, reason: InterruptReason, outcome: InterruptOutcomeLabel) -> None:
        pass

    def doorbell_rung(self) -> None:
        pass

    def tripped(self, reason: InterruptReason) -> None:
        pass

    def cancel_delivered(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        pass

    def tool_unwound(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        pass

    def grace_overrun(self, reason: InterruptReason, behavior: InterruptBehavior) -> None:
        pass

    def terminator_run(self, kind: TerminatorKind) -> None:
        pass

    def terminator_failed(self, kind: TerminatorKind) -> None:
        pass

    def process_group_signalled(self, reason: InterruptReason) -> None:
        pass

    def escalated(self, reason: InterruptReason) -> None:
        pass

    def process_tree_gone(self, reason: InterruptReason, latency_ns: int, escalated: bool, execution_id: str) -> None:
        pass

    def process_group_refused(self, cause: RefusalCause) -> None:
        pass

    def holder_lost(self) -> None:
        pass

    def lease_lost(self) -> None:
        pass

    def auth_denied(self, role: AuthRole, code: str) -> None:
        pass


NOOP_OBSERVER: Final[TripObserver] = NoopObserver()


#: The names of :class:`TripObserver`'s methods (``NoopObserver`` implements each one).
OBSERVATIONS: Final[frozenset[str]] = frozenset(name for name in vars(NoopObserver) if not name.startswith("_"))


class DeferredObserver:
    """Stands in for an observer that does not exist yet, then becomes it.

    The daemon builds its Prometheus registry right after printing ``ready``
    (``prometheus_client`` and its HTTP stack are a fifth of its start-up), but the
    recovery before ``ready`` and the first RPCs after it already observe. Until
    :meth:`hand_over`, each observation is recorded; ``hand_over`` replays them into the
    real observer, in order, and binds the real observer's methods on this object, so
    everything that kept a reference to it (the trip path, sessions, the auth
    interceptor) calls them directly from then on: a method found on the instance, as
    cheap as on the real object. Loop thread only, like every observer.
    """

    def __init__(self) -> None:
        self._recorded: list[tuple[str, tuple[object, ...]]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        # Reached only for names not bound on the instance: before hand_over.
        if name not in OBSERVATIONS:
            raise AttributeError(name)
        recorded = self._recorded

        def record(*args: object) -> None:
            recorded.append((name, args))

        return record

    def hand_over(self, observer: TripObserver) -> None:
        """Replay what was observed into ``observer``, then forward everything to it."""
        for name, args in self._recorded:
            getattr(observer, name)(*args)
        self._recorded.clear()
        for name in OBSERVATIONS:
            setattr(self, name, getattr(observer, name))


def refusal_cause(err: BaseException) -> RefusalCause:
    """The bounded cause of a process-group refusal raised by the OS edge.

    The OS edge names the rule that refused in the error's ``cause``; anything
    else (an error it did not classify) is ``other``. Never raises.
    """
    cause = getattr(err, "cause", None)
    for known in REFUSAL_CAUSES:
        if cause == known:
            return known
    return "other"
