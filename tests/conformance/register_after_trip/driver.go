// Command driver is the Go driver of the register_after_trip conformance scenario (see README.md).
package main

import (
	"sync"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.ThreadInterrupt)
	defer run.Close()
	driverlib.Emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	driverlib.Await(run.Context().Done(), "cancel")
	driverlib.Emit("cancelled", map[string]any{"reason": driverlib.Cancellation(run).Reason.String()})
	ran := make(chan struct{})
	var once sync.Once
	if _, err := run.RegisterTerminator("late", func() { once.Do(func() { close(ran) }) }); err != nil {
		driverlib.Fail("register late: %v", err)
	}
	driverlib.Await(ran, "run of terminator late")
	driverlib.Emit("terminator_ran", map[string]any{"terminator_id": "late"})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
