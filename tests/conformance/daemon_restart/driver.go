// Command driver is the Go driver of the daemon_restart conformance scenario (see README.md).
package main

import (
	"google.golang.org/grpc/status"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.ThreadInterrupt)
	defer run.Close() // reporting unwound on the dead stream fails quietly
	driverlib.Emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	driverlib.WaitGo()
	_, err := run.RegisterTerminator("after_restart", func() {})
	if err == nil {
		driverlib.Fail("registering on the dead stream succeeded")
	}
	driverlib.Emit("after_restart", map[string]any{"error_code": sidecar.CodeName(status.Code(err)), "cancelled": run.Cancelled()})
}
