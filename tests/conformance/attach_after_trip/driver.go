// Command driver is the Go driver of the attach_after_trip conformance scenario (see README.md).
package main

import (
	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.Cooperative)
	defer run.Close()
	fields := map[string]any{"cancelled": run.Context().Err() != nil}
	if cancelled, ok := sidecar.Cancellation(run.Context()); ok {
		fields["reason"] = cancelled.Reason.String()
	}
	driverlib.Emit("attached", fields)
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
