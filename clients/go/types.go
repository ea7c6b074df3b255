package interruptsidecar

import (
	"strings"

	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// Behavior is how a tool takes an interrupt, declared once when it attaches.
type Behavior int32

const (
	// NonInterruptible (the default) is never sent the cancel and may not register
	// terminators. For short, atomic work.
	NonInterruptible Behavior = Behavior(pb.InterruptBehavior_INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE)
	// Cooperative is sent the cancel (the run's context is cancelled) and returns early.
	// It may not register terminators.
	Cooperative Behavior = Behavior(pb.InterruptBehavior_INTERRUPT_BEHAVIOR_COOPERATIVE)
	// ThreadInterrupt is sent the cancel; in Go the worker is interrupted the Go way, by
	// cancelling the run's context. It may register callback terminators.
	ThreadInterrupt Behavior = Behavior(pb.InterruptBehavior_INTERRUPT_BEHAVIOR_THREAD_INTERRUPT)
	// ExternallyTerminated is sent the cancel and may register callback terminators and
	// process groups, which the daemon signals itself.
	ExternallyTerminated Behavior = Behavior(pb.InterruptBehavior_INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)
)

// String is the behaviour's name, e.g. "COOPERATIVE".
func (b Behavior) String() string {
	if b == 0 {
		return NonInterruptible.String()
	}
	return strings.TrimPrefix(pb.InterruptBehavior(b).String(), "INTERRUPT_BEHAVIOR_")
}

func (b Behavior) normalized() Behavior {
	if b == 0 {
		return NonInterruptible
	}
	return b
}

// ReceivesCancel reports whether the daemon sends this behaviour the cancel.
func (b Behavior) ReceivesCancel() bool {
	return b == Cooperative || b == ThreadInterrupt || b == ExternallyTerminated
}

// MayRegisterCallbacks reports whether this behaviour may register callback terminators.
func (b Behavior) MayRegisterCallbacks() bool {
	return b == ThreadInterrupt || b == ExternallyTerminated
}

// MayRegisterProcessGroups reports whether this behaviour may register process groups.
func (b Behavior) MayRegisterProcessGroups() bool {
	return b == ExternallyTerminated
}

// Reason is why an execution was cancelled. It is for observation (messages, logs):
// what a tool does depends only on "cancelled".
type Reason int32

// The nine reasons, numbered as on the wire.
const (
	ReasonUnspecified      Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_UNSPECIFIED)
	ReasonUserSigint       Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT)
	ReasonNowPriorityInput Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_NOW_PRIORITY_INPUT)
	ReasonBudgetExceeded   Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_BUDGET_EXCEEDED)
	ReasonParentCancelled  Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_PARENT_CANCELLED)
	ReasonTaskCancelled    Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_TASK_CANCELLED)
	ReasonSystemShutdown   Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_SYSTEM_SHUTDOWN)
	ReasonLeaseLost        Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_LEASE_LOST)
	ReasonSessionReleased  Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_SESSION_RELEASED)
	ReasonHolderLost       Reason = Reason(pb.InterruptReason_INTERRUPT_REASON_HOLDER_LOST)
)

// String is the reason's name without its prefix, e.g. "USER_SIGINT".
func (r Reason) String() string {
	return strings.TrimPrefix(pb.InterruptReason(r).String(), "INTERRUPT_REASON_")
}

// Outcome is how a tool's run ended, as the tool reports it with [Run.Unwound].
type Outcome int32

const (
	// Completed: the work finished normally.
	Completed Outcome = Outcome(pb.ToolOutcome_TOOL_OUTCOME_COMPLETED)
	// Interrupted: the work stopped early because of the cancel.
	Interrupted Outcome = Outcome(pb.ToolOutcome_TOOL_OUTCOME_INTERRUPTED)
	// Failed: the work failed for a reason of its own.
	Failed Outcome = Outcome(pb.ToolOutcome_TOOL_OUTCOME_FAILED)
)

// String is the outcome's name, e.g. "INTERRUPTED".
func (o Outcome) String() string {
	return strings.TrimPrefix(pb.ToolOutcome(o).String(), "TOOL_OUTCOME_")
}

// TerminatorKind is what a terminator does at the trip.
type TerminatorKind int

const (
	// CallbackTerminator: the daemon sends run_terminator and the client calls the function.
	CallbackTerminator TerminatorKind = iota + 1
	// ProcessGroupTerminator: the daemon signals the process group itself, then SIGKILLs it.
	ProcessGroupTerminator
)

// String is "callback" or "process_group".
func (k TerminatorKind) String() string {
	switch k {
	case CallbackTerminator:
		return "callback"
	case ProcessGroupTerminator:
		return "process_group"
	}
	return "unknown"
}

// Terminator is a registered terminator; pass its ID to [Run.UnregisterTerminator].
type Terminator struct {
	ID   string
	Kind TerminatorKind
	// PGID is the process group of a ProcessGroupTerminator.
	PGID int
}
