// Command driver is the Go driver of the process_group conformance scenario (see README.md).
package main

import (
	"os/exec"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	"github.com/interrupt-sidecar/interrupt-sidecar/tests/conformance/driverlib"
)

func main() {
	run := driverlib.Attach(sidecar.ExternallyTerminated)
	defer run.Close()
	proc, err := run.StartProcess(exec.Command("sleep", "300"), sidecar.ProcessGroupOptions{})
	if err != nil {
		driverlib.Fail("start sleep 300: %v", err)
	}
	defer proc.Close()
	driverlib.Emit("started", map[string]any{"pid": proc.Pid(), "pgid": proc.Pgid()})
	driverlib.Await(run.Context().Done(), "cancel")
	driverlib.Emit("cancelled", map[string]any{"reason": driverlib.Cancellation(run).Reason.String()})
	exited := make(chan struct{})
	go func() {
		// The daemon killed it: the exit status says "signal: terminated".
		_ = proc.Wait()
		close(exited)
	}()
	driverlib.Await(exited, "exit of the child")
	driverlib.Emit("child_exited", map[string]any{})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		driverlib.Fail("unwound: %v", err)
	}
}
