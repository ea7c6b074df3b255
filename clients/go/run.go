package interruptsidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// DefaultTimeout bounds the attach handshake and each terminator request.
const DefaultTimeout = 10 * time.Second

// Options configure [Attach]. The zero value attaches a NON_INTERRUPTIBLE tool with the
// address and token from the environment.
type Options struct {
	// Behavior is how the tool takes an interrupt; zero means NonInterruptible.
	Behavior Behavior
	// ToolName and ToolCallID identify the tool run to the daemon (for observation).
	ToolName   string
	ToolCallID string
	// Address of the daemon (unix:///abs/path.sock or HOST:PORT); empty means
	// INTERRUPT_SIDECAR_ADDRESS, else the daemon's default socket ([DefaultAddress]).
	Address string
	// Token is the execution's attach token; empty means INTERRUPT_SIDECAR_TOKEN.
	// With neither, the run is a no-op (see [Attach]).
	Token string
	// PID reported in hello; zero means this process's.
	PID int
	// Timeout bounds the handshake and each terminator request; zero means
	// DefaultTimeout, negative means no limit.
	Timeout time.Duration
	// DialOptions are added to the gRPC client's (after insecure transport credentials:
	// the daemon listens on a unix socket or loopback).
	DialOptions []grpc.DialOption
	// DisableDoorbell never asks the daemon for the cancel doorbell, as
	// INTERRUPT_SIDECAR_DOORBELL=0 does. Otherwise an interruptible tool attached over a
	// unix socket asks for it: the daemon then also writes the cancel on a raw unix socket,
	// ahead of the same cancel on the stream, and the run trips on whichever comes first.
	DisableDoorbell bool
	// Logger receives the client's warnings (a stream lost, a refused request no call
	// waited for, a failed terminator); nil means slog.Default().
	Logger *slog.Logger
}

// Run is one tool run attached to an execution (or running without a sidecar).
// Its methods are safe for concurrent use.
type Run struct {
	behavior Behavior
	log      *slog.Logger

	ctx       context.Context
	cancelCtx context.CancelCauseFunc
	tripped   chan struct{}
	tripOnce  sync.Once
	trip      atomic.Pointer[CancelledError] // set once, before ctx is cancelled and tripped closed

	stream *toolStream // nil in no-op mode
	runner *terminatorRunner

	address     string
	executionID string
	toolID      string
	grace       time.Duration

	mu        sync.Mutex
	callbacks map[string]func()
	live      []Terminator // registration order, like the daemon's
	nextID    int
	unwound   bool

	closeOnce sync.Once
}

// Attach attaches this tool run to its execution. The run's [Run.Context] is derived
// from ctx and is cancelled, with a [*CancelledError] as its cause, the moment the
// execution trips (at once if it already has) — for behaviours that receive the
// cancel; a NON_INTERRUPTIBLE tool only sees the state it attached in. Always
// [Run.Close] the run.
//
// Without a token (Options.Token and INTERRUPT_SIDECAR_TOKEN both empty) the run is a
// no-op: nothing is dialled, its context is only cancelled by ctx or Close, and
// terminators are accepted as the behaviour allows and never run, so the tool runs
// unchanged outside an agent.
//
// An interruptible tool attached over a unix socket also asks for the cancel doorbell,
// which brings the same cancel ahead of the stream (see Options.DisableDoorbell).
//
// ctx bounds the handshake only; the stream lives until Close. A refused attach is an
// [*Error]: Unauthenticated, InvalidArgument, NotFound, PermissionDenied; Unavailable
// when the daemon cannot be reached; DeadlineExceeded after Options.Timeout.
func Attach(ctx context.Context, opts Options) (*Run, error) {
	behavior := opts.Behavior.normalized()
	if behavior < NonInterruptible || behavior > ExternallyTerminated {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("unknown behavior %d", int32(opts.Behavior))}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	run := &Run{behavior: behavior, log: logger, tripped: make(chan struct{}), callbacks: map[string]func(){}}
	run.ctx, run.cancelCtx = context.WithCancelCause(ctx)
	token := opts.Token
	if token == "" {
		token = env(TokenEnv)
	}
	if token == "" {
		return run, nil
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	pid := opts.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	address := ResolveAddress(opts.Address)
	hello := &pb.Hello{
		AttachToken: token,
		ToolName:    opts.ToolName,
		ToolCallId:  opts.ToolCallID,
		Behavior:    pb.InterruptBehavior(behavior),
		Pid:         int32(pid),
		Doorbell:    doorbellWanted(opts.DisableDoorbell, address, behavior),
	}
	stream, attached, err := openStream(ctx, address, hello, timeout, behavior.ReceivesCancel(), opts.DialOptions, logger)
	if err != nil {
		run.cancelCtx(err)
		return nil, err
	}
	run.stream = stream
	run.address = address
	run.executionID = attached.GetExecutionId()
	run.toolID = attached.GetToolId()
	if attached.GetGrace() != nil {
		run.grace = attached.GetGrace().AsDuration()
	}
	run.runner = newTerminatorRunner(run.callbackFor, stream.reportResult, logger)
	stream.start(run.onCancel, run.runner.submit)
	if attached.GetCancelled() {
		// Normally the cancel that followed attached tripped it already; a
		// NON_INTERRUPTIBLE tool is never sent one but sees the state it attached in.
		reason := Reason(attached.GetReason())
		if reason == ReasonUnspecified {
			reason = ReasonUserSigint
		}
		run.tripWith(&CancelledError{Reason: reason})
	}
	return run, nil
}

// onCancel is how a Cancel reaches the run, from the stream or the cancel doorbell: the
// daemon writes the same cancel to both, so whichever arrives first trips the run and
// tripWith ignores the other (its fields are the same, so nothing is lost).
func (r *Run) onCancel(cancel *pb.Cancel) {
	cancelled := &CancelledError{Reason: Reason(cancel.GetReason()), Detail: cancel.GetDetail()}
	if cancel.GetTrippedAt() != nil {
		cancelled.TrippedAt = cancel.GetTrippedAt().AsTime()
	}
	if cancel.GetGraceDeadline() != nil {
		cancelled.GraceDeadline = cancel.GetGraceDeadline().AsTime()
	}
	r.tripWith(cancelled)
}

// tripWith trips the run once; later calls change nothing (the first reason wins).
//
// In order: the cancellation is set (Cancellation, Cancelled); the context is cancelled
// (its Done closes, its cause is set, and each context.AfterFunc listener is started in a
// goroutine of its own); Done closes. Done closed last means that whoever waits on either
// channel finds the other's side of the trip in place: Done used to close first, so a tool
// woken by it could read a nil Context().Err() and return a nil cause. The listeners
// themselves cannot be waited for here: context.AfterFunc gives no way to know when they end.
func (r *Run) tripWith(cancelled *CancelledError) {
	r.tripOnce.Do(func() {
		r.trip.Store(cancelled)
		r.cancelCtx(cancelled)
		if testHookTrip != nil {
			testHookTrip(r)
		}
		close(r.tripped)
	})
}

// testHookTrip, when set (by the package's tests only), runs inside a trip between the
// context's cancel and Done closing: where the trip's order can be looked at.
var testHookTrip func(*Run)

// Context is cancelled when the execution trips (cause: a [*CancelledError]), when the
// ctx given to [Attach] is, or when the run is closed (cause: [ErrRunClosed]). Use
// context.AfterFunc on it for an on-cancel listener, and pass it to the tool's work.
//
// A trip sets [Run.Cancellation] first, then cancels the context, then closes
// [Run.Done]. An AfterFunc listener runs in a goroutine of its own, started when the
// context is cancelled: nothing orders it before the code woken by Context().Done() or
// Done(), so a tool that needs a listener's effect waits for the listener itself (a
// channel it closes).
func (r *Run) Context() context.Context { return r.ctx }

// Done is closed when the execution trips, and only then (unlike Context().Done()). It
// closes after the context is cancelled: once it has, Context().Err() is not nil.
func (r *Run) Done() <-chan struct{} { return r.tripped }

// Cancellation is the execution's cancellation, or nil while it has not tripped. It is set
// before the context is cancelled, so it is known to whoever sees the context cancelled by
// the trip.
func (r *Run) Cancellation() *CancelledError {
	return r.trip.Load()
}

// Cancelled reports whether the execution has tripped.
func (r *Run) Cancelled() bool { return r.Cancellation() != nil }

// Behavior is the behaviour the tool declared.
func (r *Run) Behavior() Behavior { return r.behavior }

// Attached is true when the run is attached to a daemon, false in no-op mode.
func (r *Run) Attached() bool { return r.stream != nil }

// Address is the daemon's address ("" in no-op mode).
func (r *Run) Address() string { return r.address }

// ExecutionID is the execution attached to ("" in no-op mode).
func (r *Run) ExecutionID() string { return r.executionID }

// ToolID is the id the daemon gave this tool run ("" in no-op mode).
func (r *Run) ToolID() string { return r.toolID }

// Grace is how long after the trip the tool has to report unwound before it counts as
// a grace overrun (zero when not known).
func (r *Run) Grace() time.Duration { return r.grace }

// Terminators are the live terminators, in registration order.
func (r *Run) Terminators() []Terminator {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Terminator(nil), r.live...)
}

// IsUnwound reports whether the run has been reported unwound.
func (r *Run) IsUnwound() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unwound
}

func (r *Run) callbackFor(terminatorID string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callbacks[terminatorID]
}

// terminatorSpec is what is registered with the daemon.
type terminatorSpec struct {
	kind      TerminatorKind
	pgid      int
	signal    syscall.Signal
	killAfter time.Duration
}

// RegisterTerminator registers fn as a callback terminator (THREAD_INTERRUPT and
// EXTERNALLY_TERMINATED only): when the execution trips the daemon sends
// run_terminator, the client calls fn in a goroutine of its own and reports the result
// (a panic is a failure). Terminators run once, in registration order; one still
// running after 250 ms no longer holds up the next. Registering after the trip runs it
// at once. A run closed after the trip still runs it and reports its result first (see
// [Run.Close]). fn must be idempotent, quick and non-blocking.
//
// id "" means a fresh id ("callback-1", ...). Returns once the daemon acknowledged it;
// refusals are [*Error]s: FailedPrecondition (the behaviour forbids it, or the run has
// unwound — checked locally and by the daemon), AlreadyExists, InvalidArgument,
// Unavailable when the stream to the daemon has ended.
func (r *Run) RegisterTerminator(id string, fn func()) (Terminator, error) {
	if fn == nil {
		return Terminator{}, &Error{Code: codes.InvalidArgument, Message: "a terminator needs a function"}
	}
	return r.register(id, "callback", terminatorSpec{kind: CallbackTerminator}, fn)
}

// ProcessGroupOptions configure a process-group terminator.
type ProcessGroupOptions struct {
	// ID of the terminator; "" means "pgid-<pgid>" (or a fresh variant of it).
	ID string
	// Signal sent to the whole group at the trip; zero means SIGTERM.
	Signal syscall.Signal
	// KillAfter is when SIGKILL follows Signal; zero means the execution's grace.
	KillAfter time.Duration
}

// RegisterProcessGroup registers a process group the daemon itself signals at the trip
// (EXTERNALLY_TERMINATED only): opts.Signal to the whole group, then SIGKILL after
// opts.KillAfter. The daemon pins the group's identity now and re-checks it before each
// signal. See [Run.StartProcess] for the usual way to get a group.
func (r *Run) RegisterProcessGroup(pgid int, opts ProcessGroupOptions) (Terminator, error) {
	if err := r.checkKind(ProcessGroupTerminator); err != nil {
		return Terminator{}, err
	}
	if pgid <= 1 {
		return Terminator{}, &Error{Code: codes.InvalidArgument,
			Message: fmt.Sprintf("process group %d cannot be a terminator: a pgid must be greater than 1", pgid)}
	}
	spec := terminatorSpec{kind: ProcessGroupTerminator, pgid: pgid, signal: opts.Signal, killAfter: opts.KillAfter}
	return r.register(opts.ID, fmt.Sprintf("pgid-%d", pgid), spec, nil)
}

func (r *Run) register(requested, prefix string, spec terminatorSpec, fn func()) (Terminator, error) {
	r.mu.Lock()
	if err := r.checkKindLocked(spec.kind); err != nil {
		r.mu.Unlock()
		return Terminator{}, err
	}
	id, err := r.newIDLocked(prefix, requested)
	if err != nil {
		r.mu.Unlock()
		return Terminator{}, err
	}
	terminator := Terminator{ID: id, Kind: spec.kind}
	if spec.kind == ProcessGroupTerminator {
		terminator.PGID = spec.pgid
	}
	// The function goes in first: the daemon may send run_terminator (registration
	// after the trip) right after it acknowledges the registration.
	if fn != nil {
		r.callbacks[id] = fn
	}
	r.live = append(r.live, terminator)
	r.mu.Unlock()

	if r.stream != nil {
		err = r.stream.register(id, spec)
	} else if spec.kind == ProcessGroupTerminator {
		err = checkLocalGroup(spec.pgid)
	}
	if err != nil {
		r.mu.Lock()
		r.removeLocked(id)
		r.mu.Unlock()
		return Terminator{}, err
	}
	return terminator, nil
}

func (r *Run) removeLocked(id string) {
	delete(r.callbacks, id)
	for i, terminator := range r.live {
		if terminator.ID == id {
			r.live = append(r.live[:i:i], r.live[i+1:]...)
			return
		}
	}
}

func (r *Run) checkKind(kind TerminatorKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkKindLocked(kind)
}

func (r *Run) checkKindLocked(kind TerminatorKind) error {
	switch {
	case r.unwound:
		return &Error{Code: codes.FailedPrecondition, Message: "the tool's run has unwound; " +
			"terminators can only be registered during the run"}
	case kind == ProcessGroupTerminator && !r.behavior.MayRegisterProcessGroups():
		return &Error{Code: codes.FailedPrecondition, Message: "the tool declared " + r.behavior.String() +
			": only EXTERNALLY_TERMINATED tools may register process-group terminators"}
	case kind == CallbackTerminator && !r.behavior.MayRegisterCallbacks():
		return &Error{Code: codes.FailedPrecondition, Message: "the tool declared " + r.behavior.String() +
			": only THREAD_INTERRUPT and EXTERNALLY_TERMINATED tools may register terminators"}
	}
	return nil
}

func (r *Run) newIDLocked(prefix, requested string) (string, error) {
	taken := func(id string) bool {
		for _, terminator := range r.live {
			if terminator.ID == id {
				return true
			}
		}
		return false
	}
	if requested != "" {
		if taken(requested) {
			return "", &Error{Code: codes.AlreadyExists, TerminatorID: requested,
				Message: fmt.Sprintf("terminator %q is already registered", requested)}
		}
		return requested, nil
	}
	for {
		r.nextID++
		candidate := fmt.Sprintf("%s-%d", prefix, r.nextID)
		if !taken(candidate) {
			return candidate, nil
		}
	}
}

// UnregisterTerminator unregisters a terminator so it no longer runs. Idempotent (an
// unknown id is fine); a no-op once the run has unwound.
func (r *Run) UnregisterTerminator(id string) error {
	r.mu.Lock()
	if r.unwound {
		r.mu.Unlock()
		return nil
	}
	r.removeLocked(id)
	r.mu.Unlock()
	if r.stream == nil {
		return nil
	}
	return r.stream.unregister(id)
}

// Unwound reports the tool's run ended, with its outcome and an optional detail. The
// run's terminators are forgotten and later registrations refused
// (FailedPrecondition); the stream stays open until [Run.Close], so a run_terminator
// the daemon sent before it read unwound still runs. Idempotent: only the first call
// reports.
func (r *Run) Unwound(outcome Outcome, detail string) error {
	r.mu.Lock()
	if r.unwound {
		r.mu.Unlock()
		return nil
	}
	r.unwound = true
	r.live = nil
	r.mu.Unlock()
	if r.stream == nil {
		return nil
	}
	return r.stream.unwound(outcome, detail)
}

// OutcomeFor is the outcome to report for a run whose work returned err: Completed for
// nil (Interrupted when an interruptible run's execution tripped), Interrupted for a
// cancellation (context.Canceled, which a [*CancelledError] is), Failed otherwise.
func (r *Run) OutcomeFor(err error) Outcome {
	switch {
	case err == nil && r.Cancelled() && r.behavior.ReceivesCancel():
		return Interrupted
	case err == nil:
		return Completed
	case errors.Is(err, context.Canceled):
		return Interrupted
	}
	return Failed
}

// Finish reports the run unwound with the outcome for err ([Run.OutcomeFor]; err's text
// as the detail) and closes it:
//
//	defer func() { run.Finish(err) }()
func (r *Run) Finish(err error) error {
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	unwoundErr := r.Unwound(r.OutcomeFor(err), detail)
	return errors.Join(unwoundErr, r.Close())
}

// Close ends the run: reports it unwound if that was not done ([Run.OutcomeFor](nil)),
// lets the terminators the trip asked for report their results (below), half-closes the
// stream and gives the daemon up to two seconds to end it, closes the connection, and
// cancels the run's context (cause [ErrRunClosed] unless it tripped). Errors of a stream
// that already ended are ignored. Idempotent.
//
// After the trip Close first waits, up to two seconds, until the daemon has asked to run
// every callback terminator it acknowledged (it asks for all of them at the trip), then
// until each run asked for has reported its result, each for 250 ms at most (as one
// terminator holds up the next): a tool whose work returns the moment it sees the cancel
// still has its terminators run and their failures reported.
func (r *Run) Close() error {
	r.closeOnce.Do(func() {
		if err := r.Unwound(r.OutcomeFor(nil), ""); err != nil && !errors.Is(err, ErrUnavailable) {
			r.log.Warn("interrupt-sidecar: could not report unwound", "error", err)
		}
		if r.stream != nil {
			if r.Cancelled() {
				// The trip asks for every callback terminator on the stream, behind the
				// cancel; when the doorbell brought the cancel, the work may have ended
				// before those requests were even read. The daemon has queued them all by
				// the time the doorbell rings, and it still reads results after unwound,
				// so waiting here (after unwound, before the half-close) loses nothing.
				r.stream.awaitRunsAsked(unwindTimeout)
			}
			// Terminators the daemon has asked for report their results before the
			// half-close: after it, a result (a failure above all) could not be written.
			r.runner.settle()
			r.stream.close()
			r.runner.close()
		}
		r.mu.Lock()
		r.callbacks = map[string]func(){}
		r.mu.Unlock()
		r.cancelCtx(ErrRunClosed)
	})
	return nil
}

// checkLocalGroup checks a process group registered without a daemon (no-op mode) the
// way the daemon would refuse the obvious mistakes.
func checkLocalGroup(pgid int) error {
	if pgid == syscall.Getpgrp() {
		return &Error{Code: codes.InvalidArgument,
			Message: fmt.Sprintf("process group %d is this process's own group; refusing to register it", pgid)}
	}
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return &Error{Code: codes.NotFound, Message: fmt.Sprintf("process group %d does not exist", pgid)}
	}
	return nil
}

var _ io.Closer = (*Run)(nil)
