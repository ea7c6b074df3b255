// Command driver is the Go driver of the single_shot conformance scenario (see README.md).
package main

import (
	"context"
	"sync"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.Cooperative)
	defer run.Close()
	var mu sync.Mutex
	notifications := 0
	notified := make(chan struct{})
	context.AfterFunc(run.Context(), func() {
		mu.Lock()
		defer mu.Unlock()
		notifications++
		if notifications == 1 {
			close(notified)
		}
	})
	driverlib.Emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	driverlib.Await(run.Context().Done(), "cancel")
	driverlib.Await(notified, "on-cancel notification")
	driverlib.Emit("cancelled", map[string]any{"reason": driverlib.Cancellation(run).Reason.String()})
	driverlib.WaitGo()
	mu.Lock()
	count := notifications
	mu.Unlock()
	driverlib.Emit("final", map[string]any{"reason": driverlib.Cancellation(run).Reason.String(), "notifications": count})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
