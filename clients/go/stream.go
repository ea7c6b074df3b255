package interruptsidecar

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// unwindTimeout is how long Close waits for the daemon to end the stream after the
// tool half-closed it, so the daemon reads unwound before the call is cancelled.
const unwindTimeout = 2 * time.Second

// writeSettle is how long a failed write waits for the reader to learn why the stream
// ended (Send only says io.EOF; Recv has the status).
const writeSettle = time.Second

type answerKind int

const (
	anyAnswer answerKind = iota
	answerRegistered
	answerUnregistered
)

type waiter struct {
	kind answerKind
	done chan *Error // buffered 1; nil means acknowledged
}

// toolStream is the client end of one ToolChannelService.Attach stream.
//
// One reader goroutine is the only consumer of the stream; it never runs tool code
// that could block it: a cancel trips the run (whose listeners run in goroutines of
// their own), run_terminator is queued for the terminator runner, and answers settle
// waiters. Writes are serialized by sendMu (grpc-go allows one sender at a time).
// A granted cancel doorbell feeds the same cancel to the same onCancel, usually first.
type toolStream struct {
	address string
	timeout time.Duration
	log     *slog.Logger
	conn    *grpc.ClientConn
	call    grpc.BidiStreamingClient[pb.ToolMessage, pb.SidecarMessage]
	stop    context.CancelFunc // cancels the call

	sendMu     sync.Mutex
	closedSend bool // under sendMu

	mu          sync.Mutex
	pending     map[string][]*waiter
	endErr      *Error // why the stream ended; set once, under mu
	finishing   bool   // the run is ending: the stream's end is expected
	writeFailed bool

	ended      chan struct{} // closed when endErr is set
	readerDone chan struct{}
	started    atomic.Bool
	early      *pb.SidecarMessage // read during the handshake, dispatched by start
	grant      *pb.Doorbell       // the cancel doorbell granted at attach, opened by start
	doorbell   *doorbell          // set by start (before the reader runs); nil without one

	// The trip's run_terminator requests, for ending a run after the trip (see
	// awaitRunsAsked). At the trip the daemon asks, on this stream and after the cancel,
	// to run every callback terminator it holds for this tool; the cancel doorbell brings
	// the cancel ahead of all of that, so the run's work may end before those requests
	// are read. All three are under mu.
	callbacksHeld map[string]struct{} // callback registrations acknowledged, not unregistered
	runsAsked     map[string]struct{} // run_terminator read (since any unregistration)
	runAsked      chan struct{}       // closed (and replaced) when runsAsked grows

	onCancel        func(*pb.Cancel)
	onRunTerminator func(string)
}

// openStream dials the daemon, sends hello and reads attached (and the cancel that
// follows it when an interruptible tool attaches after the trip). ctx and timeout
// bound the handshake only; the stream itself lives until close.
func openStream(ctx context.Context, address string, hello *pb.Hello, timeout time.Duration, expectCancel bool,
	dialOptions []grpc.DialOption, logger *slog.Logger,
) (*toolStream, *pb.Attached, error) {
	what := "attach to the sidecar at " + address
	options := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOptions...)
	conn, err := grpc.NewClient(grpcTarget(address), options...)
	if err != nil {
		return nil, nil, &Error{Code: codes.InvalidArgument, Message: what + ": " + err.Error()}
	}
	callCtx, stop := context.WithCancel(context.Background())
	s := &toolStream{
		address:    address,
		timeout:    timeout,
		log:        logger,
		conn:       conn,
		stop:       stop,
		pending:    map[string][]*waiter{},
		ended:      make(chan struct{}),
		readerDone: make(chan struct{}),

		callbacksHeld: map[string]struct{}{},
		runsAsked:     map[string]struct{}{},
		runAsked:      make(chan struct{}),
	}
	var timedOut atomic.Bool
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			timedOut.Store(true)
			stop()
		})
	}
	unhook := context.AfterFunc(ctx, stop)
	attached, err := s.handshake(callCtx, hello, expectCancel, what)
	interrupted := !unhook()
	if timer != nil && !timer.Stop() {
		interrupted = true
	}
	if err == nil && interrupted {
		err = &Error{Code: codes.Canceled, Message: what + ": interrupted"}
	}
	if err != nil {
		stop()
		_ = conn.Close()
		switch {
		case timedOut.Load():
			return nil, nil, &Error{Code: codes.DeadlineExceeded,
				Message: what + ": no answer to hello within " + timeout.String()}
		case ctx.Err() != nil:
			return nil, nil, context.Cause(ctx)
		}
		return nil, nil, err
	}
	return s, attached, nil
}

func (s *toolStream) handshake(ctx context.Context, hello *pb.Hello, expectCancel bool, what string) (*pb.Attached, error) {
	call, err := pb.NewToolChannelServiceClient(s.conn).Attach(ctx)
	if err != nil {
		return nil, errorFromRPC(err, what)
	}
	s.call = call
	// io.EOF: the daemon already ended the call; Recv reports why.
	if err := call.Send(&pb.ToolMessage{Message: &pb.ToolMessage_Hello{Hello: hello}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, errorFromRPC(err, what)
	}
	first, err := call.Recv()
	if err != nil {
		return nil, errorFromRPC(err, what)
	}
	attached := first.GetAttached()
	if attached == nil {
		if refusal := first.GetError(); refusal != nil {
			return nil, errorFor(refusal.GetCode(), "attach refused: "+refusal.GetMessage(), "")
		}
		return nil, &Error{Code: codes.Unknown, Message: what + ": expected 'attached' from the daemon"}
	}
	// The doorbell only makes a cancel earlier: it is of no use when the execution has
	// tripped already (the cancel is read below, or attached itself trips the run), so it
	// is not even dialled then. Nor is a grant used that this client did not ask for.
	if grant := attached.GetDoorbell(); hello.GetDoorbell() && grant.GetPath() != "" && !attached.GetCancelled() {
		s.grant = grant
	}
	if attached.GetCancelled() && expectCancel {
		// The daemon sends the cancel right after attached to an interruptible tool;
		// reading it here means the run starts with the full cancellation.
		second, err := call.Recv()
		if err != nil {
			return nil, errorFromRPC(err, what)
		}
		s.early = second
	}
	return attached, nil
}

// start dispatches what the handshake read past attached, opens the cancel doorbell if
// one was granted, then starts the reader. onCancel and onRunTerminator run on the reader
// goroutine (onCancel also on the doorbell's) and must not block; onCancel must take
// only the first of the two copies of a cancel.
func (s *toolStream) start(onCancel func(*pb.Cancel), onRunTerminator func(string)) {
	s.onCancel = onCancel
	s.onRunTerminator = onRunTerminator
	if s.early != nil {
		s.dispatch(s.early)
		s.early = nil
	}
	if s.grant != nil {
		s.doorbell = openDoorbell(s.grant, onCancel, s.log)
	}
	s.started.Store(true)
	go s.readLoop()
}

func (s *toolStream) readLoop() {
	defer close(s.readerDone)
	for {
		message, err := s.call.Recv()
		if err != nil {
			s.end(err)
			return
		}
		s.dispatch(message)
	}
}

func (s *toolStream) end(err error) {
	s.mu.Lock()
	var why *Error
	code := status.Code(err)
	switch {
	case errors.Is(err, io.EOF):
		why = connectionLost("the tool's stream to the sidecar has ended")
	case code == codes.Unavailable || code == codes.Canceled || (code == codes.Internal && s.writeFailed):
		// The connection broke (the daemon died), or we cancelled the call: no status
		// from the daemon to report, the stream is simply gone.
		why = connectionLost("the tool's stream to the sidecar has ended: " + status.Convert(err).Message())
	default:
		why = errorFromRPC(err, "the tool's stream to the sidecar ended")
	}
	s.endErr = why
	pending := s.pending
	s.pending = map[string][]*waiter{}
	finishing := s.finishing
	close(s.ended)
	s.mu.Unlock()
	if s.doorbell != nil {
		// The daemon rings no more once the stream has ended (it hangs up too).
		s.doorbell.stop()
	}
	for _, waiters := range pending {
		for _, w := range waiters {
			w.done <- why
		}
	}
	if !finishing {
		s.log.Warn("interrupt-sidecar: the tool stream ended before the run did", "address", s.address, "error", why)
	}
}

func (s *toolStream) dispatch(message *pb.SidecarMessage) {
	switch m := message.GetMessage().(type) {
	case *pb.SidecarMessage_Cancel:
		s.onCancel(m.Cancel)
	case *pb.SidecarMessage_RunTerminator:
		terminatorID := m.RunTerminator.GetTerminatorId()
		// Queued first, then marked: once awaitRunsAsked sees it asked, the runner has
		// it, so the settle that follows waits for its result.
		s.onRunTerminator(terminatorID)
		s.markRunAsked(terminatorID)
	case *pb.SidecarMessage_TerminatorRegistered:
		s.resolve(m.TerminatorRegistered.GetTerminatorId(), answerRegistered, nil)
	case *pb.SidecarMessage_TerminatorUnregistered:
		s.resolve(m.TerminatorUnregistered.GetTerminatorId(), answerUnregistered, nil)
	case *pb.SidecarMessage_Error:
		refusal := m.Error
		err := errorFor(refusal.GetCode(), refusal.GetMessage(), refusal.GetTerminatorId())
		if refusal.GetTerminatorId() == "" || !s.resolve(refusal.GetTerminatorId(), anyAnswer, err) {
			s.log.Warn("interrupt-sidecar: the sidecar refused a request of this tool", "error", err)
		}
	default: // attached again, or a message newer than this client
		s.log.Debug("interrupt-sidecar: ignoring a sidecar message", "message", message)
	}
}

// resolve settles the oldest waiter for the terminator (of kind, or any kind for errors).
func (s *toolStream) resolve(terminatorID string, kind answerKind, err *Error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiters := s.pending[terminatorID]
	for i, w := range waiters {
		if kind == anyAnswer || w.kind == kind {
			s.removeLocked(terminatorID, i)
			w.done <- err
			return true
		}
	}
	return false
}

func (s *toolStream) removeLocked(terminatorID string, i int) {
	waiters := append(s.pending[terminatorID][:i:i], s.pending[terminatorID][i+1:]...)
	if len(waiters) == 0 {
		delete(s.pending, terminatorID)
	} else {
		s.pending[terminatorID] = waiters
	}
}

func (s *toolStream) forget(terminatorID string, w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, candidate := range s.pending[terminatorID] {
		if candidate == w {
			s.removeLocked(terminatorID, i)
			return
		}
	}
}

func (s *toolStream) endError() *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endErr
}

func (s *toolStream) write(message *pb.ToolMessage) error {
	if err := s.endError(); err != nil {
		return err
	}
	s.sendMu.Lock()
	if s.closedSend {
		s.sendMu.Unlock()
		return connectionLost("the tool's stream to the sidecar was closed")
	}
	err := s.call.Send(message)
	s.sendMu.Unlock()
	if err == nil {
		return nil
	}
	// A write racing the end of the stream fails with io.EOF (or INTERNAL); the reader
	// learns the real status a moment later.
	s.mu.Lock()
	s.writeFailed = true
	s.mu.Unlock()
	select {
	case <-s.ended:
	case <-time.After(writeSettle):
	}
	if ended := s.endError(); ended != nil {
		return ended
	}
	return errorFromRPC(err, "write to the sidecar")
}

// request writes a registration or unregistration and waits for its answer.
func (s *toolStream) request(message *pb.ToolMessage, terminatorID string, kind answerKind) error {
	w := &waiter{kind: kind, done: make(chan *Error, 1)}
	s.mu.Lock()
	if s.endErr != nil {
		err := s.endErr
		s.mu.Unlock()
		return err
	}
	s.pending[terminatorID] = append(s.pending[terminatorID], w)
	s.mu.Unlock()
	if err := s.write(message); err != nil {
		s.forget(terminatorID, w)
		return err
	}
	var expired <-chan time.Time
	if s.timeout > 0 {
		timer := time.NewTimer(s.timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case err := <-w.done:
		if err != nil {
			return err
		}
		return nil
	case <-expired:
		s.forget(terminatorID, w)
		return &Error{Code: codes.DeadlineExceeded, TerminatorID: terminatorID,
			Message: "the sidecar did not answer for terminator " + strconv.Quote(terminatorID) + " within " + s.timeout.String()}
	}
}

func (s *toolStream) register(terminatorID string, spec terminatorSpec) error {
	request := &pb.RegisterTerminator{TerminatorId: terminatorID}
	if spec.kind == ProcessGroupTerminator {
		group := &pb.ProcessGroupTerminator{Pgid: int32(spec.pgid), Signal: int32(spec.signal)}
		if spec.killAfter > 0 {
			group.KillAfter = durationpb.New(spec.killAfter)
		}
		request.Kind = &pb.RegisterTerminator_ProcessGroup{ProcessGroup: group}
	} else {
		request.Kind = &pb.RegisterTerminator_Callback{Callback: &pb.CallbackTerminator{}}
	}
	message := &pb.ToolMessage{Message: &pb.ToolMessage_RegisterTerminator{RegisterTerminator: request}}
	if err := s.request(message, terminatorID, answerRegistered); err != nil {
		return err
	}
	if spec.kind == CallbackTerminator {
		// The daemon holds it now: at the trip (or at once, after one) it asks to run it.
		// That run_terminator may already have been read (it follows the answer at once
		// after the trip): runsAsked then has it, and nothing is waited for.
		s.mu.Lock()
		s.callbacksHeld[terminatorID] = struct{}{}
		s.mu.Unlock()
	}
	return nil
}

func (s *toolStream) unregister(terminatorID string) error {
	request := &pb.UnregisterTerminator{TerminatorId: terminatorID}
	message := &pb.ToolMessage{Message: &pb.ToolMessage_UnregisterTerminator{UnregisterTerminator: request}}
	if err := s.request(message, terminatorID, answerUnregistered); err != nil {
		return err
	}
	// A run the daemon asked for before this unregistration has been read already (the
	// stream keeps the daemon's order); a later registration under the id runs anew.
	s.mu.Lock()
	delete(s.callbacksHeld, terminatorID)
	delete(s.runsAsked, terminatorID)
	s.mu.Unlock()
	return nil
}

// markRunAsked records a run_terminator (on the reader, once the run is queued) and
// wakes awaitRunsAsked.
func (s *toolStream) markRunAsked(terminatorID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runsAsked[terminatorID] = struct{}{}
	close(s.runAsked)
	s.runAsked = make(chan struct{})
}

// awaitRunsAsked is for a run that ends after the trip: it waits, at most timeout, until
// the daemon has asked to run every callback terminator it acknowledged (and that was not
// unregistered since), or the stream has ended.
//
// This is the race it closes: the trip writes the cancel and then one run_terminator per
// callback terminator on this stream, but the cancel doorbell delivers its copy of the
// cancel ahead of all of them. The run's context is cancelled, the tool's work returns at
// once (as it should) and the run goes straight to Close, before the reader has even seen
// those requests. Once Close half-closes the stream, a terminator's result can no longer be
// written and the daemon never learns that it failed.
func (s *toolStream) awaitRunsAsked(timeout time.Duration) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.endErr != nil || s.allRunsAskedLocked() {
			s.mu.Unlock()
			return
		}
		asked := s.runAsked
		s.mu.Unlock()
		select {
		case <-asked: // one more request: check again
		case <-s.ended: // nothing more will be asked
		case <-timer.C:
			s.log.Debug("interrupt-sidecar: the sidecar did not ask to run every terminator in time", "timeout", timeout)
			return
		}
	}
}

// allRunsAskedLocked reports whether callbacksHeld ⊆ runsAsked.
func (s *toolStream) allRunsAskedLocked() bool {
	for terminatorID := range s.callbacksHeld {
		if _, asked := s.runsAsked[terminatorID]; !asked {
			return false
		}
	}
	return true
}

// reportResult tells the daemon how a callback terminator went (best-effort).
func (s *toolStream) reportResult(terminatorID, failure string) {
	result := &pb.TerminatorResult{TerminatorId: terminatorID, Error: failure}
	if err := s.write(&pb.ToolMessage{Message: &pb.ToolMessage_TerminatorResult{TerminatorResult: result}}); err != nil {
		s.log.Debug("interrupt-sidecar: could not report a terminator result", "terminator_id", terminatorID, "error", err)
	}
}

func (s *toolStream) unwound(outcome Outcome, detail string) error {
	message := &pb.ToolMessage{Message: &pb.ToolMessage_Unwound{Unwound: &pb.Unwound{
		Outcome: pb.ToolOutcome(outcome), Detail: detail,
	}}}
	return s.write(message)
}

// close half-closes the stream, gives the daemon unwindTimeout to end it (so it reads
// everything sent), then cancels the call, closes the doorbell and the connection. Call
// once.
func (s *toolStream) close() {
	s.mu.Lock()
	s.finishing = true
	ended := s.endErr != nil
	s.mu.Unlock()
	if !ended && s.started.Load() {
		s.sendMu.Lock()
		s.closedSend = true
		err := s.call.CloseSend()
		s.sendMu.Unlock()
		if err == nil {
			select {
			case <-s.ended:
			case <-time.After(unwindTimeout):
				s.log.Debug("interrupt-sidecar: the sidecar did not end the tool stream in time", "timeout", unwindTimeout)
			}
		}
	}
	s.stop()
	if s.started.Load() {
		<-s.readerDone
	}
	if s.doorbell != nil {
		s.doorbell.close()
	}
	_ = s.conn.Close()
}
