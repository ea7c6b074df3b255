package interruptsidecar_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// These tests drive the client's wire state machine from a scripted in-process grpc-go
// server; the conformance suite (tests/conformance) runs the client against the real daemon.

const wait = 5 * time.Second

type fakeDaemon struct {
	pb.UnimplementedToolChannelServiceServer
	address string
	streams chan *serverStream
	server  *grpc.Server
}

// serverStream is the daemon's end of one Attach stream, driven by the test.
type serverStream struct {
	t      *testing.T
	stream grpc.BidiStreamingServer[pb.ToolMessage, pb.SidecarMessage]
	recv   chan *pb.ToolMessage // closed when the tool half-closes or the stream ends
	end    chan error
}

// shortTempDir is a temporary directory with a short path: unix socket paths are
// limited to 108 bytes, which t.TempDir() can exceed.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "isgo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startDaemon serves the fake daemon on a unix socket, like the real daemon's default.
func startDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	socket := filepath.Join(shortTempDir(t), "s.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, listener, "unix://"+socket)
}

// startTCPDaemon serves the fake daemon on loopback TCP.
func startTCPDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, listener, listener.Addr().String())
}

func serve(t *testing.T, listener net.Listener, address string) *fakeDaemon {
	t.Helper()
	daemon := &fakeDaemon{address: address, streams: make(chan *serverStream, 4), server: grpc.NewServer()}
	pb.RegisterToolChannelServiceServer(daemon.server, daemon)
	go func() { _ = daemon.server.Serve(listener) }()
	t.Cleanup(daemon.server.Stop)
	return daemon
}

func (d *fakeDaemon) Attach(stream grpc.BidiStreamingServer[pb.ToolMessage, pb.SidecarMessage]) error {
	s := &serverStream{stream: stream, recv: make(chan *pb.ToolMessage, 64), end: make(chan error, 1)}
	halfClosed := make(chan struct{})
	go func() {
		defer close(halfClosed)
		defer close(s.recv)
		for {
			message, err := stream.Recv()
			if err != nil {
				return
			}
			s.recv <- message
		}
	}()
	d.streams <- s
	select {
	case err := <-s.end:
		return err
	case <-halfClosed: // like the daemon: the tool's side ended, so does the stream
		return nil
	case <-stream.Context().Done():
		return nil
	}
}

func (d *fakeDaemon) next(t *testing.T) *serverStream {
	t.Helper()
	select {
	case s := <-d.streams:
		s.t = t
		return s
	case <-time.After(wait):
		t.Fatal("no Attach stream")
		return nil
	}
}

func (s *serverStream) expect(want string) *pb.ToolMessage {
	s.t.Helper()
	select {
	case message, ok := <-s.recv:
		if !ok {
			s.t.Fatalf("the stream ended, expected %s", want)
		}
		if got := string(message.ProtoReflect().WhichOneof(message.ProtoReflect().Descriptor().Oneofs().ByName("message")).Name()); got != want {
			s.t.Fatalf("got %s (%v), expected %s", got, message, want)
		}
		return message
	case <-time.After(wait):
		s.t.Fatalf("no %s from the tool", want)
		return nil
	}
}

func (s *serverStream) send(message *pb.SidecarMessage) {
	s.t.Helper()
	if err := s.stream.Send(message); err != nil {
		s.t.Fatalf("send %v: %v", message, err)
	}
}

func (s *serverStream) attached(cancelled bool, reason pb.InterruptReason) {
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_Attached{Attached: &pb.Attached{
		ExecutionId: "exec-1", ToolId: "tool-1", Cancelled: cancelled, Reason: reason,
	}}})
}

func (s *serverStream) cancel(reason pb.InterruptReason, detail string, at time.Time) {
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_Cancel{Cancel: &pb.Cancel{
		Reason: reason, Detail: detail, TrippedAt: timestamppb.New(at),
	}}})
}

// attach runs Attach against the fake daemon, playing the daemon's handshake.
func attach(t *testing.T, d *fakeDaemon, behavior sidecar.Behavior, handshake func(*serverStream)) (*sidecar.Run, *serverStream) {
	t.Helper()
	run, s, _ := attachWith(t, d, sidecar.Options{Behavior: behavior}, handshake)
	return run, s
}

// attachWith is attach with more options (the test sets ToolName, Address, Token and
// Timeout); it also returns the hello the daemon read.
func attachWith(t *testing.T, d *fakeDaemon, opts sidecar.Options, handshake func(*serverStream)) (*sidecar.Run, *serverStream, *pb.Hello) {
	t.Helper()
	type result struct {
		run *sidecar.Run
		err error
	}
	done := make(chan result, 1)
	opts.ToolName, opts.Address, opts.Token, opts.Timeout = "unit", d.address, "token-1", wait
	go func() {
		run, err := sidecar.Attach(context.Background(), opts)
		done <- result{run, err}
	}()
	s := d.next(t)
	hello := s.expect("hello").GetHello()
	if hello.GetAttachToken() != "token-1" || hello.GetToolName() != "unit" || hello.GetPid() != int32(os.Getpid()) {
		t.Fatalf("unexpected hello %v", hello)
	}
	if want := pb.InterruptBehavior(opts.Behavior); opts.Behavior != 0 && hello.GetBehavior() != want {
		t.Fatalf("hello.behavior = %v, want %v", hello.GetBehavior(), want)
	}
	handshake(s)
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * wait):
		t.Fatal("Attach did not return")
	}
	if r.err != nil {
		t.Fatalf("attach: %v", r.err)
	}
	t.Cleanup(func() { _ = r.run.Close() })
	return r.run, s, hello
}

func untripped(s *serverStream) { s.attached(false, 0) }

func TestCancelReachesTheContextWithItsCause(t *testing.T) {
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.Cooperative, untripped)
	if run.ExecutionID() != "exec-1" || run.ToolID() != "tool-1" || !run.Attached() {
		t.Fatalf("run = %s %s %v", run.ExecutionID(), run.ToolID(), run.Attached())
	}
	if run.Context().Err() != nil || run.Cancelled() {
		t.Fatal("cancelled before the trip")
	}
	notifications := make(chan struct{}, 4)
	context.AfterFunc(run.Context(), func() { notifications <- struct{}{} })
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.cancel(pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT, "ctrl-c", at)
	s.cancel(pb.InterruptReason_INTERRUPT_REASON_NOW_PRIORITY_INPUT, "again", at) // ignored: single-shot
	select {
	case <-run.Context().Done():
	case <-time.After(wait):
		t.Fatal("the context was not cancelled")
	}
	cancelled, ok := sidecar.Cancellation(run.Context())
	if !ok || cancelled.Reason != sidecar.ReasonUserSigint || cancelled.Detail != "ctrl-c" || !cancelled.TrippedAt.Equal(at) {
		t.Fatalf("cause = %v", context.Cause(run.Context()))
	}
	if !errors.Is(context.Cause(run.Context()), context.Canceled) {
		t.Fatal("the cause does not unwrap to context.Canceled")
	}
	<-notifications
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	unwound := s.expect("unwound").GetUnwound()
	if unwound.GetOutcome() != pb.ToolOutcome_TOOL_OUTCOME_INTERRUPTED {
		t.Fatalf("outcome = %v", unwound.GetOutcome())
	}
	if len(notifications) != 0 || run.Cancellation().Reason != sidecar.ReasonUserSigint {
		t.Fatal("tripped more than once")
	}
}

// Whoever a trip wakes, through Done or through the context, finds the rest of the trip
// in place: the context cancelled, the cancellation set. Done used to close first, so a
// tool woken by it could read a nil Context().Err(). The hook holds the tripping goroutine
// between its two releases (where a loaded machine may deschedule it) while the test looks.
func TestATripClosesDoneOnlyOnceTheContextIsCancelled(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(sidecar.SetTripHook(func(*sidecar.Run) {
		close(reached)
		<-release
	}))
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.Cooperative, untripped)
	t.Cleanup(letGo) // before the run's Close, should the test end early
	s.cancel(pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT, "ctrl-c", time.Now())
	select {
	case <-reached:
	case <-time.After(wait):
		t.Fatal("the run did not trip")
	}
	func() {
		defer letGo()
		select {
		case <-run.Done():
			if run.Context().Err() == nil {
				t.Error("Done was closed before the context was cancelled")
			}
		default:
		}
		select {
		case <-run.Context().Done():
			if c := run.Cancellation(); c == nil || c.Reason != sidecar.ReasonUserSigint {
				t.Errorf("the context was cancelled before the cancellation was set: %v", c)
			}
		default:
		}
		if run.Cancellation() == nil {
			t.Error("the trip is under way and the cancellation is not set")
		}
	}()
	select {
	case <-run.Done():
	case <-time.After(wait):
		t.Fatal("Done was not closed")
	}
	if _, ok := sidecar.Cancellation(run.Context()); !ok {
		t.Fatalf("cause = %v", context.Cause(run.Context()))
	}
}

func TestAttachAfterTheTripIsCancelledAtOnce(t *testing.T) {
	d := startDaemon(t)
	run, _ := attach(t, d, sidecar.Cooperative, func(s *serverStream) {
		s.attached(true, pb.InterruptReason_INTERRUPT_REASON_TASK_CANCELLED)
		s.cancel(pb.InterruptReason_INTERRUPT_REASON_TASK_CANCELLED, "late", time.Now())
	})
	cancelled, ok := sidecar.Cancellation(run.Context())
	if !ok || cancelled.Reason != sidecar.ReasonTaskCancelled || cancelled.Detail != "late" {
		t.Fatalf("cause = %v", context.Cause(run.Context()))
	}
}

func TestNonInterruptibleSeesTheStateItAttachedIn(t *testing.T) {
	d := startDaemon(t)
	run, _ := attach(t, d, 0, func(s *serverStream) { s.attached(true, pb.InterruptReason_INTERRUPT_REASON_BUDGET_EXCEEDED) })
	if run.Behavior() != sidecar.NonInterruptible {
		t.Fatalf("behavior = %v", run.Behavior())
	}
	if c := run.Cancellation(); c == nil || c.Reason != sidecar.ReasonBudgetExceeded {
		t.Fatalf("cancellation = %v", c)
	}
	_, err := run.RegisterTerminator("", func() {})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("register: %v", err)
	}
}

func TestTerminatorsRunInOrderAndReportTheirResults(t *testing.T) {
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.ThreadInterrupt, untripped)
	var mu sync.Mutex
	var order []string
	for _, id := range []string{"first", "second", "panics"} {
		registered := make(chan error, 1)
		go func() {
			_, err := run.RegisterTerminator(id, func() {
				mu.Lock()
				order = append(order, id)
				mu.Unlock()
				if id == "panics" {
					panic("boom")
				}
			})
			registered <- err
		}()
		request := s.expect("register_terminator").GetRegisterTerminator()
		if request.GetTerminatorId() != id || request.GetCallback() == nil {
			t.Fatalf("register = %v", request)
		}
		s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_TerminatorRegistered{
			TerminatorRegistered: &pb.TerminatorRegistered{TerminatorId: id}}})
		if err := <-registered; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(run.Terminators()); got != 3 {
		t.Fatalf("%d live terminators", got)
	}
	for _, id := range []string{"first", "second", "panics", "unknown"} {
		s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_RunTerminator{RunTerminator: &pb.RunTerminator{TerminatorId: id}}})
	}
	results := map[string]string{}
	for range 4 {
		result := s.expect("terminator_result").GetTerminatorResult()
		results[result.GetTerminatorId()] = result.GetError()
	}
	if results["first"] != "" || results["second"] != "" || results["panics"] != "panic: boom" || results["unknown"] == "" {
		t.Fatalf("results = %v", results)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 3 || order[0] != "first" || order[1] != "second" || order[2] != "panics" {
		t.Fatalf("order = %v", order)
	}
}

func TestARefusalOnTheStreamIsAnError(t *testing.T) {
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.ExternallyTerminated, untripped)
	registered := make(chan error, 1)
	go func() {
		_, err := run.RegisterProcessGroup(4242, sidecar.ProcessGroupOptions{KillAfter: time.Second})
		registered <- err
	}()
	request := s.expect("register_terminator").GetRegisterTerminator()
	group := request.GetProcessGroup()
	if request.GetTerminatorId() != "pgid-4242-1" || group.GetPgid() != 4242 || group.GetKillAfter().AsDuration() != time.Second {
		t.Fatalf("register = %v", request)
	}
	s.send(&pb.SidecarMessage{Message: &pb.SidecarMessage_Error{Error: &pb.ChannelError{
		Code: int32(codes.NotFound), Message: "no such process group", TerminatorId: request.GetTerminatorId()}}})
	err := <-registered
	var refusal *sidecar.Error
	if !errors.As(err, &refusal) || refusal.Code != codes.NotFound || refusal.TerminatorID != "pgid-4242-1" ||
		!errors.Is(err, sidecar.ErrNotFound) {
		t.Fatalf("err = %#v", err)
	}
	if len(run.Terminators()) != 0 {
		t.Fatal("a refused terminator stayed live")
	}
	if _, err := run.RegisterProcessGroup(1, sidecar.ProcessGroupOptions{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("pgid 1: %v", err)
	}
}

func TestUnwoundClosesTheRegistrarAndKeepsTheStream(t *testing.T) {
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.ThreadInterrupt, untripped)
	if err := run.Unwound(sidecar.Completed, "done"); err != nil {
		t.Fatal(err)
	}
	unwound := s.expect("unwound").GetUnwound()
	if unwound.GetOutcome() != pb.ToolOutcome_TOOL_OUTCOME_COMPLETED || unwound.GetDetail() != "done" {
		t.Fatalf("unwound = %v", unwound)
	}
	_, err := run.RegisterTerminator("too_late", func() {})
	if !errors.Is(err, sidecar.ErrFailedPrecondition) {
		t.Fatalf("register after unwound: %v", err)
	}
	if err := run.Unwound(sidecar.Failed, ""); err != nil { // idempotent: not sent again
		t.Fatal(err)
	}
	_ = run.Close()
	select {
	case message, ok := <-s.recv:
		if ok {
			t.Fatalf("unexpected %v after unwound", message)
		}
	case <-time.After(wait):
		t.Fatal("Close did not half-close the stream")
	}
	if !errors.Is(context.Cause(run.Context()), sidecar.ErrRunClosed) {
		t.Fatalf("cause after Close = %v", context.Cause(run.Context()))
	}
}

func TestALostStreamIsUnavailableAndDoesNotCancel(t *testing.T) {
	d := startDaemon(t)
	run, s := attach(t, d, sidecar.ThreadInterrupt, untripped)
	s.end <- status.Error(codes.Unavailable, "daemon going away")
	deadline := time.Now().Add(wait)
	for {
		_, err := run.RegisterTerminator("after", func() {})
		if errors.Is(err, sidecar.ErrConnectionLost) && status.Code(err) == codes.Unavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("register on a lost stream: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if run.Cancelled() || run.Context().Err() != nil {
		t.Fatal("losing the daemon cancelled the run")
	}
}

func TestARefusedAttachMapsTheStatus(t *testing.T) {
	d := startDaemon(t)
	done := make(chan error, 1)
	go func() {
		_, err := sidecar.Attach(context.Background(), sidecar.Options{Address: d.address, Token: "bad"})
		done <- err
	}()
	s := d.next(t)
	s.expect("hello")
	s.end <- status.Error(codes.PermissionDenied, "wrong secret")
	err := <-done
	if !errors.Is(err, sidecar.ErrPermissionDenied) {
		t.Fatalf("err = %v", err)
	}
}

func TestAnUnansweredHelloTimesOut(t *testing.T) {
	d := startDaemon(t)
	_, err := sidecar.Attach(context.Background(), sidecar.Options{Address: d.address, Token: "t", Timeout: 100 * time.Millisecond})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v", err)
	}
}

func TestAnUnreachableDaemonIsUnavailable(t *testing.T) {
	_, err := sidecar.Attach(context.Background(), sidecar.Options{Address: "unix:///nonexistent/s.sock", Token: "t"})
	if !errors.Is(err, sidecar.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestWithoutATokenTheRunIsANoOp(t *testing.T) {
	t.Setenv(sidecar.TokenEnv, "")
	t.Setenv(sidecar.AddressEnv, "unix:///nonexistent/s.sock")
	run, err := sidecar.Attach(context.Background(), sidecar.Options{Behavior: sidecar.ExternallyTerminated})
	if err != nil {
		t.Fatal(err)
	}
	if run.Attached() || run.Cancelled() {
		t.Fatal("a no-op run is attached or cancelled")
	}
	if _, err := run.RegisterTerminator("", func() { t.Error("a no-op terminator ran") }); err != nil {
		t.Fatal(err)
	}
	proc, err := run.StartProcess(exec.Command("sleep", "30"), sidecar.ProcessGroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if proc.Pgid() != proc.Pid() || len(run.Terminators()) != 2 {
		t.Fatalf("pgid %d pid %d terminators %v", proc.Pgid(), proc.Pid(), run.Terminators())
	}
	if pgid, _ := syscall.Getpgid(proc.Pid()); pgid != proc.Pid() {
		t.Fatalf("the child is in group %d", pgid)
	}
	if err := proc.Close(); err != nil { // SIGKILLs the group and reaps it
		t.Fatal(err)
	}
	if proc.Cmd.ProcessState == nil || proc.Cmd.ProcessState.Success() {
		t.Fatalf("the child was not killed: %v", proc.Cmd.ProcessState)
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = run.RegisterTerminator("", func() {})
	if !errors.Is(err, sidecar.ErrFailedPrecondition) {
		t.Fatalf("register after Close: %v", err)
	}
	cooperative, _ := sidecar.Attach(context.Background(), sidecar.Options{Behavior: sidecar.Cooperative})
	defer cooperative.Close()
	if _, err := cooperative.StartProcess(exec.Command("true"), sidecar.ProcessGroupOptions{}); !errors.Is(err, sidecar.ErrFailedPrecondition) {
		t.Fatalf("StartProcess in COOPERATIVE: %v", err)
	}
}

func TestNames(t *testing.T) {
	for got, want := range map[string]string{
		sidecar.ReasonNowPriorityInput.String(): "NOW_PRIORITY_INPUT",
		sidecar.Behavior(0).String():            "NON_INTERRUPTIBLE",
		sidecar.ThreadInterrupt.String():        "THREAD_INTERRUPT",
		sidecar.Interrupted.String():            "INTERRUPTED",
		sidecar.CodeName(codes.Unavailable):     "UNAVAILABLE",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}
