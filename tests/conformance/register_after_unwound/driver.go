// Command driver is the Go driver of the register_after_unwound conformance scenario (see README.md).
package main

import (
	"errors"

	"google.golang.org/grpc/status"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.ThreadInterrupt)
	defer run.Close()
	driverlib.Emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	if err := run.Unwound(sidecar.Completed, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
	_, err := run.RegisterTerminator("too_late", func() {})
	if !errors.Is(err, sidecar.ErrFailedPrecondition) {
		driverlib.Fail("registering after unwound: expected FAILED_PRECONDITION, got %v", err)
	}
	driverlib.Emit("register", map[string]any{"refused": true, "code": sidecar.CodeName(status.Code(err))})
}
