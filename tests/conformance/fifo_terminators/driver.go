// Command driver is the Go driver of the fifo_terminators conformance scenario (see README.md).
package main

import (
	"sync"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.ThreadInterrupt)
	defer run.Close()
	ids := []string{"first", "second", "third"}
	var mu sync.Mutex
	var order []string
	all := make(chan struct{})
	for _, id := range ids {
		terminatorID := id
		_, err := run.RegisterTerminator(terminatorID, func() {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, terminatorID)
			if len(order) == len(ids) {
				close(all)
			}
		})
		if err != nil {
			driverlib.Fail("register %s: %v", terminatorID, err)
		}
	}
	driverlib.Emit("registered", map[string]any{"terminator_ids": ids})
	driverlib.Await(all, "run of all three terminators")
	mu.Lock()
	ran := append([]string(nil), order...)
	mu.Unlock()
	driverlib.Emit("terminators_ran", map[string]any{"order": ran})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
