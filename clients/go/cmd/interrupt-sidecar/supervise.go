package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// The supervised mode (the Python wrapper's supervisor.py). The order is what makes it safe:
//
//  1. CMD's process group already exists, gated (gate.go);
//  2. attach to the daemon; unreachable or refused: CMD never runs;
//  3. already tripped: CMD never runs;
//  4. register the group (EXTERNALLY_TERMINATED): from here the daemon can kill it;
//  5. open the gate: CMD runs; SIGINT/SIGTERM/SIGHUP to the wrapper go to its group;
//  6. CMD exits: every descendant left over is terminated, then SIGKILLed;
//  7. report unwound with the outcome, and turn it all into the wrapper's exit code.

const (
	// attachTimeout bounds the attach (hello → attached) and each registration.
	attachTimeout = 10 * time.Second
	// settleTimeout bounds the GetExecution that settles whether a trip preceded CMD's exit.
	settleTimeout = 2 * time.Second
	// defaultGrace is the clean-up grace when neither --kill-after nor the execution's grace is known.
	defaultGrace = 500 * time.Millisecond
)

// supervisor owns CMD's process: it reaps it (and re-parented orphans) and forwards signals.
type supervisor struct {
	options *runOptions
	child   *gatedChild

	mu        sync.Mutex
	exited    bool // CMD (or the gated child) has been reaped
	status    syscall.WaitStatus
	exitedAt  time.Time
	done      chan struct{} // closed when exited
	forwarded map[syscall.Signal]bool
}

// reap collects every exited child: CMD, and orphans re-parented to the subreaper. Under
// mu, so no signal goes to CMD's group between its reaping and exited being set.
func (s *supervisor) reap() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid == s.child.pid && !s.exited {
			s.exited, s.status, s.exitedAt = true, status, time.Now()
			close(s.done)
		}
	}
}

// commandRunning is true until CMD (or the gated child) has been reaped. While it is
// unreaped its pid cannot be recycled, so its pid is still a safe pgid to signal.
func (s *supervisor) commandRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.exited
}

func (s *supervisor) signalGroup(signal syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.exited {
		_ = syscall.Kill(-s.child.pgid(), signal)
	}
}

func (s *supervisor) forward(signal syscall.Signal) {
	s.mu.Lock()
	s.forwarded[signal] = true
	s.mu.Unlock()
	s.signalGroup(signal)
}

// onCancel is COOPERATIVE's cancel: --signal to the group (and SIGCONT, so a stopped
// command can act on it). No SIGKILL: CMD decides how to return early.
func (s *supervisor) onCancel() {
	s.signalGroup(s.options.signal)
	if s.options.signal != syscall.SIGKILL && s.options.signal != syscall.SIGCONT {
		s.signalGroup(syscall.SIGCONT)
	}
}

// wait is CMD's wait status, once reaped. SIGCHLD reaps; the ticker only makes sure a
// signal dropped from a full channel cannot leave it waiting.
func (s *supervisor) wait() syscall.WaitStatus {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for waiting := true; waiting; {
		select {
		case <-s.done:
			waiting = false
		case <-ticker.C:
			s.reap()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// abort does not run CMD: it closes the gate and collects the gated child.
func (s *supervisor) abort() {
	s.child.abort()
	s.mu.Lock()
	if !s.exited {
		_ = syscall.Kill(s.child.pid, syscall.SIGKILL) // it never exec'd: nothing to be polite to
	}
	s.mu.Unlock()
	s.wait()
}

func (s *supervisor) cleanUp(grace time.Duration) {
	killDescendants(os.Getpid(), grace, s.reap)
}

// runSupervised starts CMD gated, then attaches, registers, releases and supervises it.
func runSupervised(options *runOptions) int {
	if err := becomeSubreaper(); err != nil {
		say("cannot become a child subreaper, so descendants could escape: %s", err)
		return exitInternal
	}
	// Pdeathsig belongs to the thread that forks: this goroutine keeps its thread for good.
	runtime.LockOSThread()
	// Taken from before the fork: a Ctrl+C from here on is forwarded to the group instead
	// of killing the wrapper half-way; SIGCHLD reaps.
	signals := make(chan os.Signal, 64)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	child, err := spawnGated(options.command)
	if err != nil {
		say("cannot start the command: %s", err)
		return exitInternal
	}
	sup := &supervisor{options: options, child: child, done: make(chan struct{}), forwarded: map[syscall.Signal]bool{}}
	stop := make(chan struct{})
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		for {
			select {
			case received := <-signals:
				if received == syscall.SIGCHLD {
					sup.reap()
				} else {
					sup.forward(received.(syscall.Signal))
				}
			case <-stop:
				return
			}
		}
	}()
	// A child that died before SIGCHLD was caught left only a zombie: collect it.
	sup.reap()
	defer func() {
		if sup.commandRunning() { // an internal error: never leave CMD behind
			sup.signalGroup(syscall.SIGKILL)
			sup.abort()
		}
		grace := time.Duration(0)
		if options.hasKillAfter {
			grace = options.killAfter
		}
		sup.cleanUp(grace)
		close(stop)
		<-handled
	}()
	return supervise(options, sup)
}

func supervise(options *runOptions, sup *supervisor) int {
	child := sup.child
	dial := []grpc.DialOption(nil)
	if options.token == "" {
		// An explicit --token "": sent as it is, so the daemon refuses it (as the Python
		// wrapper's is); the Go client reads an empty Options.Token as "use the environment".
		dial = append(dial, grpc.WithStreamInterceptor(blankToken))
		options.token = "-"
	}
	run, err := sidecar.Attach(context.Background(), sidecar.Options{
		Behavior:    options.behavior,
		ToolName:    options.toolName,
		ToolCallID:  options.toolCallID,
		Address:     options.address,
		Token:       options.token,
		Timeout:     attachTimeout,
		DialOptions: dial,
		Logger:      slog.New(&stderrHandler{}),
	})
	if err != nil {
		sup.abort()
		if unreachable(err) {
			say("cannot reach the daemon; the command was not run: %s", err)
			return exitUnreachable
		}
		say("the daemon refused the attach; the command was not run: %s", err)
		return exitRefused
	}
	defer run.Close()
	defer run.Unwound(sidecar.Failed, "the wrapper failed") // a no-op once unwound

	if cancelled := run.Cancellation(); cancelled != nil {
		// Tripped before the tool attached: the turn is over, do not start its work.
		return notStarted(sup, run, cancelled)
	}
	switch options.behavior {
	case sidecar.ExternallyTerminated:
		group := sidecar.ProcessGroupOptions{Signal: options.signal, KillAfter: options.killAfter}
		if options.hasKillAfter && options.killAfter == 0 {
			// The client reads a zero KillAfter as "the execution's grace"; --kill-after 0
			// means at once, so the shortest duration there is.
			group.KillAfter = time.Nanosecond
		}
		if _, err := run.RegisterProcessGroup(child.pgid(), group); err != nil {
			if unreachable(err) {
				sup.abort()
				say("lost the daemon while registering the process group; the command was not run: %s", err)
				_ = run.Unwound(sidecar.Failed, "could not register the process group")
				return exitUnreachable
			}
			sup.reap() // the refusal may be "no live member": was the gated child killed?
			if sup.commandRunning() {
				sup.abort()
				say("the daemon refused the process group; the command was not run: %s", err)
				_ = run.Unwound(sidecar.Failed, fmt.Sprintf("process group refused: %s", err))
				return exitRefused
			}
			// The gated child died before the registration (a forwarded signal): the
			// refusal (no live member) is a consequence, not the story. Fall through.
		}
	case sidecar.Cooperative:
		go func() {
			select {
			case <-run.Done():
				sup.onCancel()
			case <-sup.done:
			}
		}()
	}
	if cancelled := run.Cancellation(); cancelled != nil {
		// Tripped while registering: the daemon ran the terminator at once, killing the
		// gated child. CMD must not start now.
		return notStarted(sup, run, cancelled)
	}

	var takeBack func()
	if sup.commandRunning() {
		takeBack = handTerminal(child.pgid())
	}
	if child.release() {
		if errno := child.execError(); errno != 0 {
			sup.wait()
			if takeBack != nil {
				takeBack()
			}
			say("cannot run %s: %s", pythonRepr(options.command[0]), strerror(errno))
			_ = run.Unwound(sidecar.Failed, "cannot execute: "+strerror(errno))
			return execFailureCode(errno)
		}
	} else {
		child.abort()
	}
	status := sup.wait()
	if takeBack != nil {
		takeBack()
	}
	sup.mu.Lock()
	exitedAt := sup.exitedAt
	sup.mu.Unlock()
	cancelled := run.Cancellation()
	if cancelled == nil && options.behavior.ReceivesCancel() && run.ExecutionID() != "" {
		cancelled = trippedBefore(options, run.ExecutionID(), exitedAt)
	}

	grace := defaultGrace
	if options.hasKillAfter {
		grace = options.killAfter
	} else if run.Grace() > 0 {
		grace = run.Grace()
	}
	sup.cleanUp(grace)

	if cancelled != nil {
		say("interrupted %s", cancellation(cancelled))
		_ = run.Unwound(sidecar.Interrupted, cancellation(cancelled))
		return exitInterrupted
	}
	switch {
	case status.Signaled() && sup.wasForwarded(status.Signal()):
		_ = run.Unwound(sidecar.Interrupted, signalName(status.Signal())+" forwarded to the command")
	case status.Signaled():
		_ = run.Unwound(sidecar.Failed, "killed by "+signalName(status.Signal()))
	case status.ExitStatus() == 0:
		_ = run.Unwound(sidecar.Completed, "")
	default:
		_ = run.Unwound(sidecar.Failed, fmt.Sprintf("exit status %d", status.ExitStatus()))
	}
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

func (s *supervisor) wasForwarded(signal syscall.Signal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forwarded[signal]
}

// notStarted ends a run whose execution tripped before CMD could start: exit 124.
func notStarted(sup *supervisor, run *sidecar.Run, cancelled *sidecar.CancelledError) int {
	sup.abort()
	say("interrupted %s (before the command started)", cancellation(cancelled))
	_ = run.Unwound(sidecar.Interrupted, "cancelled before the command started")
	return exitInterrupted
}

// unreachable is whether err means "no daemon to talk to" (exit 4) rather than a refusal (5).
func unreachable(err error) bool {
	return errors.Is(err, sidecar.ErrUnavailable) || errors.Is(err, sidecar.ErrDeadlineExceeded)
}

// cancellation is why the execution was cancelled, as `run` reports it: "REASON: detail", or "REASON" without a detail.
func cancellation(cancelled *sidecar.CancelledError) string {
	if cancelled.Detail != "" {
		return cancelled.Reason.String() + ": " + cancelled.Detail
	}
	return cancelled.Reason.String()
}

// trippedBefore is whether the execution tripped before CMD exited, per the daemon.
//
// The daemon writes the cancel to the tool's stream before it signals the group, but the
// wrapper may reap the killed command before it has read that message. The daemon's stamped
// trip time settles it; a trip that races CMD's own exit within the reaping delay may be
// reported either way.
func trippedBefore(options *runOptions, executionID string, exitedAt time.Time) *sidecar.CancelledError {
	conn, err := dialCoordinator(options.address)
	if err != nil {
		return nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(withCredential(context.Background()), settleTimeout)
	defer cancel()
	answer, err := pb.NewCoordinatorServiceClient(conn).GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: executionID})
	if err != nil {
		return nil
	}
	info := answer.GetExecution()
	if !info.GetCancelled() || info.GetReason() == pb.InterruptReason_INTERRUPT_REASON_UNSPECIFIED {
		return nil
	}
	cancelled := &sidecar.CancelledError{Reason: sidecar.Reason(info.GetReason()), Detail: info.GetDetail()}
	if info.GetTrippedAt() != nil {
		cancelled.TrippedAt = info.GetTrippedAt().AsTime()
		if cancelled.TrippedAt.After(exitedAt) {
			return nil
		}
	}
	return cancelled
}

// blankToken sends hello with an empty attach token (see supervise).
func blankToken(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption,
) (grpc.ClientStream, error) {
	stream, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &blankTokenStream{stream}, nil
}

type blankTokenStream struct{ grpc.ClientStream }

func (s *blankTokenStream) SendMsg(message any) error {
	if hello := message.(*pb.ToolMessage).GetHello(); hello != nil {
		hello.AttachToken = ""
	}
	return s.ClientStream.SendMsg(message)
}

// stderrHandler prints the client's warnings on stderr as lines of the wrapper's, as the
// Python client's logging does without configuration (warnings and above, the message).
type stderrHandler struct{ attrs []slog.Attr }

func (h *stderrHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

func (h *stderrHandler) Handle(_ context.Context, record slog.Record) error {
	line := record.Message
	record.Attrs(func(attr slog.Attr) bool {
		line += " " + attr.String()
		return true
	})
	say("%s", line)
	return nil
}

func (h *stderrHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &stderrHandler{attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *stderrHandler) WithGroup(string) slog.Handler { return h }
