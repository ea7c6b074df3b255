// Command driver is the Go driver of the leave_at_trip conformance scenario (see README.md).
package main

import (
	"context"
	"errors"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

// slowFailing is still running when the work has already ended, and then fails.
func slowFailing() {
	time.Sleep(100 * time.Millisecond)
	panic("the child would not stop")
}

// tool is the tool the way the client's README writes one: the work gets the run's
// context and returns as soon as it is cancelled, and the deferred Finish reports unwound
// (INTERRUPTED) and closes the run, without waiting for the terminator itself.
func tool() (cancelled *sidecar.CancelledError, err error) {
	run := driverlib.Attach(sidecar.ThreadInterrupt)
	defer func() { err = errors.Join(err, run.Finish(err)) }()
	if _, err := run.RegisterTerminator("slow_failing", slowFailing); err != nil {
		driverlib.Fail("register slow_failing: %v", err)
	}
	driverlib.Emit("registered", map[string]any{"terminator_id": "slow_failing"})
	select {
	case <-run.Context().Done():
	case <-time.After(driverlib.Limit):
		driverlib.Fail("the trip did not reach the work within %s", driverlib.Limit)
	}
	cancelled = driverlib.Cancellation(run)
	return cancelled, context.Cause(run.Context())
}

func main() {
	cancelled, err := tool()
	var problem *sidecar.Error
	if errors.As(err, &problem) || !errors.Is(err, context.Canceled) {
		driverlib.Fail("the run did not end with its cancellation: %v", err)
	}
	driverlib.Emit("ended", map[string]any{"reason": cancelled.Reason.String()})
}
