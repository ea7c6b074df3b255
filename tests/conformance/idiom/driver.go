// Command driver is the Go driver of the idiom conformance scenario (see README.md).
package main

import (
	"context"
	"errors"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.Cooperative)
	defer run.Close()
	ctx := run.Context() // from here on, only the standard idiom
	driverlib.Emit("before", map[string]any{"cancelled": ctx.Err() != nil})
	select {
	case <-ctx.Done():
	case <-time.After(driverlib.Limit):
		driverlib.Fail("no cancel within %s", driverlib.Limit)
	}
	var cancelled *sidecar.CancelledError
	if !errors.As(context.Cause(ctx), &cancelled) {
		driverlib.Fail("context.Cause is not a *CancelledError: %v", context.Cause(ctx))
	}
	driverlib.Emit("after", map[string]any{"cancelled": ctx.Err() != nil, "reason": cancelled.Reason.String()})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
