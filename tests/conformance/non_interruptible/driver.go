// Command driver is the Go driver of the non_interruptible conformance scenario (see README.md).
package main

import (
	"context"

	"google.golang.org/grpc/status"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run, err := sidecar.Attach(context.Background(), sidecar.Options{ToolName: driverlib.ToolName, Timeout: driverlib.Limit})
	if err != nil {
		driverlib.Fail("attach: %v", err)
	}
	defer run.Close()
	driverlib.Emit("attached", map[string]any{"cancelled": run.Cancelled()})
	_, err = run.RegisterTerminator("refused", func() {})
	if err == nil {
		driverlib.Fail("registering a terminator in NON_INTERRUPTIBLE was accepted")
	}
	driverlib.Emit("register", map[string]any{"refused": true, "code": sidecar.CodeName(status.Code(err))})
	driverlib.WaitGo()
	driverlib.Emit("final", map[string]any{"cancelled": run.Cancelled() || run.Context().Err() != nil})
	if err := run.Unwound(sidecar.Completed, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
