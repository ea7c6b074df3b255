// Command driver is the Go driver of the stale_execution conformance scenario (see README.md).
package main

import (
	"context"
	"fmt"
	"os"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	staleToken := os.Getenv("CONFORMANCE_STALE_TOKEN")
	if staleToken == "" {
		driverlib.Fail("CONFORMANCE_STALE_TOKEN is not set")
	}
	staleOptions := driverlib.Options(sidecar.Cooperative)
	staleOptions.Token = staleToken
	stale, err := sidecar.Attach(context.Background(), staleOptions)
	if err != nil {
		driverlib.Fail("attach with the stale token: %v", err)
	}
	defer stale.Close()
	current, err := sidecar.Attach(context.Background(), driverlib.Options(sidecar.Cooperative))
	if err != nil {
		driverlib.Fail("attach with the current token: %v", err)
	}
	defer current.Close()
	driverlib.Emit("attached", map[string]any{"stale_cancelled": stale.Cancelled(), "current_cancelled": current.Cancelled()})
	driverlib.Await(stale.Context().Done(), "cancel of the stale execution")
	driverlib.Emit("stale_cancelled", map[string]any{"reason": driverlib.Cancellation(stale).Reason.String()})
	driverlib.WaitGo()
	driverlib.Emit("current", map[string]any{"cancelled": current.Context().Err() != nil})
	driverlib.Await(current.Context().Done(), "cancel of the current execution")
	driverlib.Emit("current_cancelled", map[string]any{"reason": driverlib.Cancellation(current).Reason.String()})
	// The stale execution has ended: the daemon may have closed its stream already.
	if err := stale.Unwound(sidecar.Interrupted, ""); err != nil {
		fmt.Fprintln(os.Stderr, "stale unwound:", err)
	}
	if err := current.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
