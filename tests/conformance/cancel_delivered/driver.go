// Command driver is the Go driver of the cancel_delivered conformance scenario (see README.md).
package main

import (
	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.Cooperative)
	defer run.Close()
	driverlib.Emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	driverlib.Await(run.Context().Done(), "cancel")
	cancelled := driverlib.Cancellation(run)
	driverlib.Emit("cancelled", map[string]any{"reason": cancelled.Reason.String(), "detail": cancelled.Detail})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
