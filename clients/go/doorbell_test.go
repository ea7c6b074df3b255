package interruptsidecar_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// The cancel doorbell, against the scripted daemon and a scripted doorbell socket: the
// test decides what the daemon writes on each path and in which order, so it can ring
// the doorbell while the stream stays silent (the cancel can then only have come through
// the doorbell) and check that the second copy of a cancel changes nothing.

const doorbellToken = "0123456789abcdef0123456789abcdef"

// fakeDoorbell is the daemon's doorbell socket, driven by the test.
type fakeDoorbell struct {
	path     string
	listener *net.UnixListener
}

func startDoorbell(t *testing.T) *fakeDoorbell {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "s.sock.doorbell")
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Close() })
	return &fakeDoorbell{path: path, listener: listener}
}

func (b *fakeDoorbell) grant() *pb.Doorbell {
	return &pb.Doorbell{Path: b.path, Token: doorbellToken}
}

// answer accepts the tool's connection and checks that it wrote the token.
func (b *fakeDoorbell) answer(t *testing.T) net.Conn {
	t.Helper()
	_ = b.listener.SetDeadline(time.Now().Add(wait))
	conn, err := b.listener.Accept()
	if err != nil {
		t.Fatalf("the tool did not connect to the doorbell: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(wait))
	token := make([]byte, len(doorbellToken))
	if _, err := io.ReadFull(conn, token); err != nil || string(token) != doorbellToken {
		t.Fatalf("token %q (%v), want %q", token, err, doorbellToken)
	}
	return conn
}

// dialled reports whether any connection reached the doorbell. Call it after the run is
// closed: Close waits for the doorbell's goroutine, so a connection it made is in the
// listener's backlog by then and Accept returns it at once; the deadline only bounds the
// look when there is none.
func (b *fakeDoorbell) dialled(t *testing.T) bool {
	t.Helper()
	_ = b.listener.SetDeadline(time.Now().Add(50 * time.Millisecond))
	conn, err := b.listener.Accept()
	if err == nil {
		_ = conn.Close()
		return true
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("accept: %v", err)
	}
	return false
}

func ring(t *testing.T, conn net.Conn, cancel *pb.Cancel) {
	t.Helper()
	body, err := proto.Marshal(cancel)
	if err != nil {
		t.Fatal(err)
	}
	writeFrame(t, conn, uint32(len(body)), body)
}

func writeFrame(t *testing.T, conn net.Conn, length uint32, body []byte) {
	t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, length)
	if _, err := conn.Write(append(frame, body...)); err != nil {
		t.Fatalf("ring: %v", err)
	}
}

// expectHangUp waits for the tool to close its end of the doorbell (the fake daemon
// never closes its own, so EOF can only be the tool's doing).
func expectHangUp(t *testing.T, conn net.Conn) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	n, err := conn.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("the tool did not hang up the doorbell: read %d, %v", n, err)
	}
}

func waitClosed(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	if done == nil {
		t.Fatalf("%s: no doorbell was opened", what)
	}
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s: timed out", what)
	}
}

// closeRun closes the run and checks that it took the doorbell's goroutine with it.
func closeRun(t *testing.T, run *sidecar.Run) {
	t.Helper()
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if done := sidecar.DoorbellDone(run); done != nil {
		select {
		case <-done:
		default:
			t.Fatal("the doorbell's goroutine outlived Close")
		}
	}
}

func attachedWith(grant *pb.Doorbell, cancelled bool, reason pb.InterruptReason) *pb.SidecarMessage {
	return &pb.SidecarMessage{Message: &pb.SidecarMessage_Attached{Attached: &pb.Attached{
		ExecutionId: "exec-1", ToolId: "tool-1", Cancelled: cancelled, Reason: reason, Doorbell: grant,
	}}}
}

// attachWithDoorbell attaches an interruptible tool over the unix socket and grants it
// the doorbell.
func attachWithDoorbell(t *testing.T, bell *fakeDoorbell, opts sidecar.Options) (*sidecar.Run, *serverStream) {
	t.Helper()
	t.Setenv(sidecar.DoorbellEnv, "")
	run, s, hello := attachWith(t, startDaemon(t), opts, func(s *serverStream) { s.send(attachedWith(bell.grant(), false, 0)) })
	if !hello.GetDoorbell() {
		t.Fatal("hello did not ask for the doorbell")
	}
	if !sidecar.DoorbellOpened(run) {
		t.Fatal("the granted doorbell was not opened")
	}
	return run, s
}

func sendCancel(s *serverStream, cancel *pb.Cancel) {
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_Cancel{Cancel: cancel}})
}

// barrier returns once the client's stream reader has handled everything sent before
// it: run_terminator for an unknown id is answered (with an error) in stream order.
func barrier(s *serverStream) {
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_RunTerminator{RunTerminator: &pb.RunTerminator{TerminatorId: "barrier"}}})
	if result := s.expect("terminator_result").GetTerminatorResult(); result.GetTerminatorId() != "barrier" {
		s.t.Fatalf("terminator_result = %v", result)
	}
}

// notifications counts the runs of an on-cancel listener (context.AfterFunc on the run's
// context, as the README says), which run in goroutines of their own.
type notifications chan struct{}

func listen(run *sidecar.Run) notifications {
	n := make(notifications, 4)
	context.AfterFunc(run.Context(), func() { n <- struct{}{} })
	return n
}

// once checks that the listener ran, and ran once. Call it after the second copy of the
// cancel was handled: a second trip would have run its listeners by then (before Done).
func (n notifications) once(t *testing.T) {
	t.Helper()
	select {
	case <-n:
	case <-time.After(wait):
		t.Fatal("the on-cancel listener did not run")
	}
	if len(n) != 0 {
		t.Fatalf("the on-cancel listener ran %d more times", len(n))
	}
}

// waitTripped waits for the trip: Done, then the context (cancelled before Done is
// closed, so the second wait returns at once).
func waitTripped(t *testing.T, run *sidecar.Run) {
	t.Helper()
	timeout := time.After(wait)
	for _, done := range []<-chan struct{}{run.Done(), run.Context().Done()} {
		select {
		case <-done:
		case <-timeout:
			t.Fatal("the run did not trip")
		}
	}
}

// warnings collects what the client logs at Info and above: a failing doorbell must not
// get that far.
type warnings struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *warnings) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func TestTheDoorbellIsAskedForOverUnixSocketsByInterruptibleTools(t *testing.T) {
	unix, tcp := startDaemon(t), startTCPDaemon(t)
	for _, tc := range []struct {
		name     string
		daemon   *fakeDaemon
		env      string
		opts     sidecar.Options
		doorbell bool
	}{
		{"cooperative over unix", unix, "", sidecar.Options{Behavior: sidecar.Cooperative}, true},
		{"thread interrupt", unix, "", sidecar.Options{Behavior: sidecar.ThreadInterrupt}, true},
		{"externally terminated", unix, "", sidecar.Options{Behavior: sidecar.ExternallyTerminated}, true},
		{"any other env value", unix, "1", sidecar.Options{Behavior: sidecar.Cooperative}, true},
		{"non-interruptible: never sent the cancel", unix, "", sidecar.Options{}, false},
		{"opted out by env 0", unix, "0", sidecar.Options{Behavior: sidecar.Cooperative}, false},
		{"opted out by env off", unix, " OFF ", sidecar.Options{Behavior: sidecar.Cooperative}, false},
		{"opted out by DisableDoorbell", unix, "", sidecar.Options{Behavior: sidecar.Cooperative, DisableDoorbell: true}, false},
		{"over TCP", tcp, "", sidecar.Options{Behavior: sidecar.Cooperative}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(sidecar.DoorbellEnv, tc.env)
			run, _, hello := attachWith(t, tc.daemon, tc.opts, untripped)
			if hello.GetDoorbell() != tc.doorbell {
				t.Fatalf("hello.doorbell = %v, want %v", hello.GetDoorbell(), tc.doorbell)
			}
			closeRun(t, run)
		})
	}
}

func TestAnOptedOutToolIgnoresADoorbellItWasGranted(t *testing.T) {
	t.Setenv(sidecar.DoorbellEnv, "0")
	bell := startDoorbell(t)
	run, s, hello := attachWith(t, startDaemon(t), sidecar.Options{Behavior: sidecar.Cooperative},
		func(s *serverStream) { s.send(attachedWith(bell.grant(), false, 0)) })
	if hello.GetDoorbell() || sidecar.DoorbellOpened(run) {
		t.Fatalf("hello.doorbell = %v, opened = %v", hello.GetDoorbell(), sidecar.DoorbellOpened(run))
	}
	sendCancel(s, &pb.Cancel{Reason: pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT})
	waitTripped(t, run)
	closeRun(t, run)
	if bell.dialled(t) {
		t.Fatal("an opted-out tool connected to the doorbell")
	}
}

func TestTheCancelTripsOnceWhicheverPathComesFirst(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	deadline := at.Add(3 * time.Second)
	cancel := &pb.Cancel{
		Reason: pb.InterruptReason_INTERRUPT_REASON_NOW_PRIORITY_INPUT, Detail: "new input",
		TrippedAt: timestamppb.New(at), GraceDeadline: timestamppb.New(deadline),
	}
	want := &sidecar.CancelledError{Reason: sidecar.ReasonNowPriorityInput, Detail: "new input", TrippedAt: at, GraceDeadline: deadline}

	t.Run("doorbell first", func(t *testing.T) {
		bell := startDoorbell(t)
		run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.ThreadInterrupt})
		notified := listen(run)
		conn := bell.answer(t)
		ring(t, conn, cancel)
		// The stream has sent no cancel yet: the run can only trip through the doorbell.
		waitTripped(t, run)
		if !sidecar.DoorbellRang(run) {
			t.Fatal("tripped, but not by the doorbell")
		}
		first := run.Cancellation()
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("cancellation = %#v, want %#v", first, want)
		}
		if cause, ok := sidecar.Cancellation(run.Context()); !ok || cause != first {
			t.Fatalf("context cause = %v", context.Cause(run.Context()))
		}
		expectHangUp(t, conn) // nothing else is ever rung: the tool hangs up after the frame
		sendCancel(s, cancel) // the authoritative copy, now a duplicate
		barrier(s)
		notified.once(t)
		if run.Cancellation() != first {
			t.Fatalf("the stream's copy tripped again: %v", run.Cancellation())
		}
		closeRun(t, run)
		if outcome := s.expect("unwound").GetUnwound().GetOutcome(); outcome != pb.ToolOutcome_TOOL_OUTCOME_INTERRUPTED {
			t.Fatalf("outcome = %v", outcome)
		}
	})

	t.Run("stream first", func(t *testing.T) {
		bell := startDoorbell(t)
		run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.ThreadInterrupt})
		notified := listen(run)
		conn := bell.answer(t)
		sendCancel(s, cancel)
		waitTripped(t, run)
		first := run.Cancellation()
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("cancellation = %#v, want %#v", first, want)
		}
		if sidecar.DoorbellRang(run) {
			t.Fatal("the doorbell rang before it was rung")
		}
		ring(t, conn, cancel) // late: a duplicate
		waitClosed(t, sidecar.DoorbellDone(run), "the doorbell's goroutine after the frame")
		if !sidecar.DoorbellRang(run) {
			t.Fatal("the late frame was not read")
		}
		notified.once(t)
		if run.Cancellation() != first {
			t.Fatalf("the doorbell's copy tripped again: %v", run.Cancellation())
		}
		closeRun(t, run)
	})
}

func TestAToolAttachedAfterTheTripIsCancelledOnce(t *testing.T) {
	t.Setenv(sidecar.DoorbellEnv, "")
	bell := startDoorbell(t)
	at := time.Now().UTC()
	run, s, hello := attachWith(t, startDaemon(t), sidecar.Options{Behavior: sidecar.Cooperative}, func(s *serverStream) {
		s.send(attachedWith(bell.grant(), true, pb.InterruptReason_INTERRUPT_REASON_TASK_CANCELLED))
		sendCancel(s, &pb.Cancel{Reason: pb.InterruptReason_INTERRUPT_REASON_TASK_CANCELLED, Detail: "late", TrippedAt: timestamppb.New(at)})
	})
	if !hello.GetDoorbell() {
		t.Fatal("hello did not ask for the doorbell")
	}
	// Attach returns with the stream's cancel in hand; the doorbell could only repeat it,
	// so it is not dialled (a doorbell that rang would also be a duplicate, see above).
	want := &sidecar.CancelledError{Reason: sidecar.ReasonTaskCancelled, Detail: "late", TrippedAt: at}
	if got := run.Cancellation(); !reflect.DeepEqual(got, want) {
		t.Fatalf("cancellation = %#v, want %#v", got, want)
	}
	if sidecar.DoorbellOpened(run) {
		t.Fatal("the doorbell was opened for an execution that had tripped already")
	}
	sendCancel(s, &pb.Cancel{Reason: pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT, Detail: "again"}) // never sent twice; ignored if it were
	barrier(s)
	if got := run.Cancellation(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tripped again: %#v", got)
	}
	closeRun(t, run)
	if bell.dialled(t) {
		t.Fatal("the tool connected to the doorbell")
	}
}

func TestTheDoorbellIsClosedWhenTheRunEnds(t *testing.T) {
	t.Run("at Close", func(t *testing.T) {
		bell := startDoorbell(t)
		run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.Cooperative})
		conn := bell.answer(t)
		closeRun(t, run)
		expectHangUp(t, conn)
		if run.Cancelled() {
			t.Fatal("closing the doorbell cancelled the run")
		}
		s.expect("unwound")
	})

	t.Run("when the stream ends", func(t *testing.T) {
		bell := startDoorbell(t)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // the lost stream's warning is expected
		run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.Cooperative, Logger: quiet})
		conn := bell.answer(t)
		s.end <- nil // the daemon ends the stream (and would hang up the doorbell; the fake does not)
		expectHangUp(t, conn)
		waitClosed(t, sidecar.DoorbellDone(run), "the doorbell's goroutine after the stream ended")
		if run.Cancelled() || sidecar.DoorbellRang(run) {
			t.Fatal("the end of the stream cancelled the run")
		}
		closeRun(t, run)
	})

	t.Run("before it connected", func(t *testing.T) {
		bell := startDoorbell(t)
		run, _ := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.Cooperative})
		closeRun(t, run) // whether the goroutine was dialling, writing or reading: it is gone
	})
}

func TestADoorbellFailureFallsBackToTheStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		// daemon plays the doorbell's side; nil: no socket at the granted path.
		daemon func(t *testing.T, conn net.Conn)
	}{
		{"no socket", nil},
		{"hung up at once (a wrong or used token)", func(t *testing.T, conn net.Conn) { _ = conn.Close() }},
		{"hung up inside the length", func(t *testing.T, conn net.Conn) {
			_, _ = conn.Write([]byte{0, 0})
			_ = conn.Close()
		}},
		{"hung up inside the cancel", func(t *testing.T, conn net.Conn) {
			writeFrame(t, conn, 40, []byte{0x08, 0x01})
			_ = conn.Close()
		}},
		{"an oversized frame", func(t *testing.T, conn net.Conn) { writeFrame(t, conn, 1<<20, nil) }},
		{"a malformed cancel", func(t *testing.T, conn net.Conn) { writeFrame(t, conn, 1, []byte{0x0f}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bell := startDoorbell(t)
			if tc.daemon == nil {
				_ = bell.listener.Close() // removes the socket file: connect fails
			}
			logged := &warnings{}
			run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.Cooperative, Logger: logged.logger()})
			if tc.daemon != nil {
				tc.daemon(t, bell.answer(t))
			}
			waitClosed(t, sidecar.DoorbellDone(run), "the doorbell's goroutine after the failure")
			if run.Cancelled() || sidecar.DoorbellRang(run) {
				t.Fatalf("a failed doorbell tripped the run: %v", run.Cancellation())
			}
			sendCancel(s, &pb.Cancel{Reason: pb.InterruptReason_INTERRUPT_REASON_BUDGET_EXCEEDED, Detail: "from the stream"})
			waitTripped(t, run)
			if c := run.Cancellation(); c.Reason != sidecar.ReasonBudgetExceeded || c.Detail != "from the stream" {
				t.Fatalf("cancellation = %#v", c)
			}
			if text := logged.String(); text != "" {
				t.Fatalf("a failed doorbell was logged above debug: %s", text)
			}
			closeRun(t, run)
		})
	}
}

// The doorbell brings the cancel ahead of the stream's run_terminator requests: a tool
// whose work ends the moment it sees the cancel reaches Finish before the stream has
// asked for its terminators. The run must still wait for that request (the daemon asks
// for every callback terminator it acknowledged), run the terminator, and write its
// result before it half-closes the stream: after that the failure would be lost.
func TestARunThatEndsAtTheDoorbellsCancelStillReportsItsTerminators(t *testing.T) {
	bell := startDoorbell(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // the terminator's failure is expected
	run, s := attachWithDoorbell(t, bell, sidecar.Options{Behavior: sidecar.ThreadInterrupt, Logger: quiet})
	conn := bell.answer(t)
	registered := make(chan error, 1)
	go func() {
		_, err := run.RegisterTerminator("slow_failing", func() {
			time.Sleep(100 * time.Millisecond) // the terminator under test is slow: still running when the work has ended
			panic("the child would not stop")
		})
		registered <- err
	}()
	s.expect("register_terminator")
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_TerminatorRegistered{
		TerminatorRegistered: &pb.TerminatorRegistered{TerminatorId: "slow_failing"}}})
	select {
	case err := <-registered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("the registration did not return")
	}

	cancel := &pb.Cancel{Reason: pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT, TrippedAt: timestamppb.Now()}
	ring(t, conn, cancel) // the stream stays silent for now
	waitTripped(t, run)
	finished := make(chan error, 1)
	go func() { finished <- run.Finish(context.Cause(run.Context())) }() // the work ends at once

	// Only once the run has reported unwound does the stream bring the trip's messages.
	if outcome := s.expect("unwound").GetUnwound().GetOutcome(); outcome != pb.ToolOutcome_TOOL_OUTCOME_INTERRUPTED {
		t.Fatalf("outcome = %v", outcome)
	}
	sendCancel(s, cancel)
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_RunTerminator{RunTerminator: &pb.RunTerminator{TerminatorId: "slow_failing"}}})
	result := s.expect("terminator_result").GetTerminatorResult()
	if result.GetTerminatorId() != "slow_failing" || !strings.Contains(result.GetError(), "would not stop") {
		t.Fatalf("terminator_result = %v", result)
	}
	select {
	case message, ok := <-s.recv:
		if ok {
			t.Fatalf("unexpected %v after the result", message)
		}
	case <-time.After(wait):
		t.Fatal("Finish did not half-close the stream")
	}
	select {
	case err := <-finished:
		if err != nil {
			t.Fatalf("finish: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Finish did not return")
	}
}
