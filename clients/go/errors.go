package interruptsidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is everything the sidecar refuses or the client cannot do: a refused Attach
// (the stream ends with a status), a refused request on the stream (a ChannelError),
// or a transport failure. Code is the gRPC status code; [status.Code] and
// [status.FromError] work on it, and errors.Is matches the Err* sentinels by code:
//
//	if errors.Is(err, interruptsidecar.ErrFailedPrecondition) { ... }
type Error struct {
	// Code is the gRPC status the daemon answered with (or the client's own verdict,
	// e.g. Unavailable when the stream ended, FailedPrecondition for a local refusal).
	Code codes.Code
	// Message is the daemon's message, prefixed with what the client was doing.
	Message string
	// TerminatorID names the terminator concerned, when there is one.
	TerminatorID string
	// ConnectionLost is true when the tool's stream ended before the run did: the
	// daemon went away, or ended the stream. Code is then Unavailable.
	ConnectionLost bool
}

// Error returns the message followed by the code's canonical name.
func (e *Error) Error() string {
	if e.Message == "" {
		return CodeName(e.Code)
	}
	return fmt.Sprintf("%s (%s)", e.Message, CodeName(e.Code))
}

// GRPCStatus makes [status.Code] and [status.FromError] see the code.
func (e *Error) GRPCStatus() *status.Status {
	return status.New(e.Code, e.Message)
}

// Is matches the sentinels (ErrNotFound, ...) by code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Message == "" && t.TerminatorID == "" && t.Code == e.Code && (!t.ConnectionLost || e.ConnectionLost)
}

// Sentinels to match with errors.Is; each stands for every *Error of its code.
var (
	// ErrInvalidArgument: a malformed request (bad field, pgid <= 1, malformed token).
	ErrInvalidArgument = &Error{Code: codes.InvalidArgument}
	// ErrNotFound: unknown token, execution ended, no such process group.
	ErrNotFound = &Error{Code: codes.NotFound}
	// ErrAlreadyExists: a terminator with that id is registered already.
	ErrAlreadyExists = &Error{Code: codes.AlreadyExists}
	// ErrFailedPrecondition: the behaviour forbids it, or the run has unwound.
	ErrFailedPrecondition = &Error{Code: codes.FailedPrecondition}
	// ErrPermissionDenied: wrong token secret.
	ErrPermissionDenied = &Error{Code: codes.PermissionDenied}
	// ErrUnauthenticated: empty attach token.
	ErrUnauthenticated = &Error{Code: codes.Unauthenticated}
	// ErrResourceExhausted: a daemon limit was reached.
	ErrResourceExhausted = &Error{Code: codes.ResourceExhausted}
	// ErrUnavailable: the daemon cannot be reached, or the stream to it ended.
	ErrUnavailable = &Error{Code: codes.Unavailable}
	// ErrConnectionLost: the tool's stream ended before the run did (also ErrUnavailable).
	ErrConnectionLost = &Error{Code: codes.Unavailable, ConnectionLost: true}
	// ErrDeadlineExceeded: the daemon did not answer within Options.Timeout.
	ErrDeadlineExceeded = &Error{Code: codes.DeadlineExceeded}
)

var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName is a gRPC code's canonical name, e.g. "FAILED_PRECONDITION".
func CodeName(code codes.Code) string {
	if name, ok := codeNames[code]; ok {
		return name
	}
	return fmt.Sprintf("CODE_%d", uint32(code))
}

// errorFor is the error for a status code number from a ChannelError.
func errorFor(code int32, message, terminatorID string) *Error {
	c := codes.Code(uint32(code))
	if _, known := codeNames[c]; !known || code < 0 {
		message = fmt.Sprintf("%s [status %d]", message, code)
		c = codes.Unknown
	}
	return &Error{Code: c, Message: message, TerminatorID: terminatorID}
}

// connectionLost is the error for requests after the stream ended.
func connectionLost(message string) *Error {
	return &Error{Code: codes.Unavailable, Message: message, ConnectionLost: true}
}

// errorFromRPC maps an error returned by a gRPC call; what says what was being done.
func errorFromRPC(err error, what string) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	if errors.Is(err, io.EOF) {
		return connectionLost(what + ": the daemon closed the stream")
	}
	st := status.Convert(err)
	message := st.Message()
	if message == "" {
		message = "no details"
	}
	return &Error{Code: st.Code(), Message: what + ": " + message}
}

// CancelledError is the cause of a run's context once its execution tripped:
// context.Cause(run.Context()) returns it. It is not an [*Error]: it is how a tool
// learns it was cancelled, not a failure of the sidecar. It unwraps to
// [context.Canceled], so errors.Is(cause, context.Canceled) holds.
type CancelledError struct {
	// Reason is the execution's reason: the first one it tripped with.
	Reason Reason
	// Detail is the interrupt's free text (empty when the daemon did not send one,
	// e.g. for a NON_INTERRUPTIBLE tool that attached after the trip).
	Detail string
	// TrippedAt is when the execution tripped (zero when not known).
	TrippedAt time.Time
	// GraceDeadline is when the tool must have reported unwound (zero when not known).
	GraceDeadline time.Time
}

// Error says "execution cancelled: REASON (detail)".
func (e *CancelledError) Error() string {
	text := "execution cancelled: " + e.Reason.String()
	if e.Detail != "" {
		text += " (" + e.Detail + ")"
	}
	return text
}

// Unwrap returns context.Canceled.
func (e *CancelledError) Unwrap() error { return context.Canceled }

// Cancellation returns the execution's cancellation when ctx (a run's context, or one
// derived from it) was cancelled because the execution tripped.
func Cancellation(ctx context.Context) (*CancelledError, bool) {
	var cancelled *CancelledError
	if errors.As(context.Cause(ctx), &cancelled) {
		return cancelled, true
	}
	return nil, false
}

// ErrRunClosed is the cause of a run's context when [Run.Close] ended it before any trip.
var ErrRunClosed = errors.New("interrupt-sidecar: the tool run was closed")
