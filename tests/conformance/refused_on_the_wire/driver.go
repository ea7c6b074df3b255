// Command driver is the Go driver of the refused_on_the_wire conformance scenario (see
// README.md). It speaks the protocol with the generated stubs (clients/go/gen), because
// the client library refuses these registrations itself without asking the daemon.
package main

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

// stream is one Attach stream whose answers arrive on a channel, so every wait is bounded.
type stream struct {
	call    pb.ToolChannelService_AttachClient
	answers chan *pb.SidecarMessage
	ended   chan error
}

func attach(client pb.ToolChannelServiceClient, behavior pb.InterruptBehavior) *stream {
	call, err := client.Attach(context.Background())
	if err != nil {
		driverlib.Fail("open the Attach stream: %v", err)
	}
	s := &stream{call: call, answers: make(chan *pb.SidecarMessage, 16), ended: make(chan error, 1)}
	go func() {
		for {
			answer, err := call.Recv()
			if err != nil {
				s.ended <- err
				return
			}
			s.answers <- answer
		}
	}()
	s.send(&pb.ToolMessage{Message: &pb.ToolMessage_Hello{Hello: &pb.Hello{
		AttachToken: os.Getenv("INTERRUPT_SIDECAR_TOKEN"),
		ToolName:    driverlib.ToolName,
		Behavior:    behavior,
		Pid:         int32(os.Getpid()),
	}}})
	if s.receive("attached").GetAttached() == nil {
		driverlib.Fail("the first answer is not attached")
	}
	driverlib.Emit("attached", map[string]any{"behavior": strings.TrimPrefix(behavior.String(), "INTERRUPT_BEHAVIOR_")})
	return s
}

func (s *stream) send(message *pb.ToolMessage) {
	if err := s.call.Send(message); err != nil {
		driverlib.Fail("send %v: %v", message, err)
	}
}

func (s *stream) receive(what string) *pb.SidecarMessage {
	select {
	case answer := <-s.answers:
		return answer
	case err := <-s.ended:
		driverlib.Fail("the stream ended (%v) before %s", err, what)
	case <-time.After(driverlib.Limit):
		driverlib.Fail("no %s within %s", what, driverlib.Limit)
	}
	return nil
}

func (s *stream) register(terminatorID string) {
	s.send(&pb.ToolMessage{Message: &pb.ToolMessage_RegisterTerminator{RegisterTerminator: &pb.RegisterTerminator{
		TerminatorId: terminatorID,
		Kind:         &pb.RegisterTerminator_Callback{Callback: &pb.CallbackTerminator{}},
	}}})
}

// expectRefusal reads the answer to registering terminatorID: it must be the daemon's error.
func (s *stream) expectRefusal(terminatorID string) {
	answer := s.receive("the answer to registering " + terminatorID)
	if answer.GetTerminatorRegistered() != nil {
		driverlib.Fail("the daemon accepted the registration of %s", terminatorID)
	}
	refusal := answer.GetError()
	if refusal == nil {
		driverlib.Fail("expected an error for %s, got %v", terminatorID, answer)
	}
	driverlib.Emit("refused", map[string]any{
		"terminator_id": refusal.GetTerminatorId(),
		"code":          sidecar.CodeName(codes.Code(refusal.GetCode())),
		"message":       refusal.GetMessage(),
	})
}

// close half-closes the stream and waits for the daemon to end it.
func (s *stream) close() {
	if err := s.call.CloseSend(); err != nil {
		driverlib.Fail("half-close: %v", err)
	}
	select {
	case answer := <-s.answers:
		driverlib.Fail("unexpected message before the stream ended: %v", answer)
	case err := <-s.ended:
		if err != io.EOF {
			driverlib.Fail("the stream ended with an error: %v", err)
		}
	case <-time.After(driverlib.Limit):
		driverlib.Fail("the daemon did not end the stream within %s of the half-close", driverlib.Limit)
	}
}

func main() {
	conn, err := grpc.NewClient(os.Getenv("INTERRUPT_SIDECAR_ADDRESS"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		driverlib.Fail("dial: %v", err)
	}
	defer conn.Close()
	client := pb.NewToolChannelServiceClient(conn)

	s := attach(client, pb.InterruptBehavior_INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE)
	s.register("refused")
	s.expectRefusal("refused")
	s.close()

	s = attach(client, pb.InterruptBehavior_INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)
	s.register("accepted")
	registered := s.receive("the answer to registering accepted").GetTerminatorRegistered()
	if registered == nil {
		driverlib.Fail("the daemon did not accept the registration of accepted")
	}
	driverlib.Emit("registered", map[string]any{"terminator_id": registered.GetTerminatorId()})
	// No wait in between: unwound has no answer, and the daemon reads a stream in order.
	s.send(&pb.ToolMessage{Message: &pb.ToolMessage_Unwound{Unwound: &pb.Unwound{Outcome: pb.ToolOutcome_TOOL_OUTCOME_COMPLETED}}})
	s.register("too_late")
	s.expectRefusal("too_late")
	s.close()
}
