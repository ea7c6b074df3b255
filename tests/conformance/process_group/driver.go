// Command driver is the Go driver of the process_group conformance scenario (see README.md).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
)

func main() {
	run, err := sidecar.Attach(context.Background(), options(sidecar.ExternallyTerminated))
	if err != nil {
		fail("attach: %v", err)
	}
	defer run.Close()
	proc, err := run.StartProcess(exec.Command("sleep", "300"), sidecar.ProcessGroupOptions{})
	if err != nil {
		fail("start sleep 300: %v", err)
	}
	defer proc.Close()
	emit("started", map[string]any{"pid": proc.Pid(), "pgid": proc.Pgid()})
	await(run.Context().Done(), "cancel")
	emit("cancelled", map[string]any{"reason": cancellation(run).Reason.String()})
	exited := make(chan struct{})
	go func() {
		// The daemon killed it: the exit status says "signal: terminated".
		_ = proc.Wait()
		close(exited)
	}()
	await(exited, "exit of the child")
	emit("child_exited", map[string]any{})
	if err := run.Unwound(sidecar.Interrupted, ""); err != nil {
		fail("unwound: %v", err)
	}
}

// The conformance driver's plumbing (PROTOCOL.md): one JSON object per line on stdout,
// every wait bounded by ten seconds, any failure an "error" step and exit status 1.

const limit = 10 * time.Second

func options(behavior sidecar.Behavior) sidecar.Options {
	return sidecar.Options{Behavior: behavior, ToolName: "conformance-go", Timeout: limit}
}

func emit(step string, fields map[string]any) {
	fields["step"] = step
	line, err := json.Marshal(fields)
	if err != nil {
		fail("encode step %s: %v", step, err)
	}
	_, _ = os.Stdout.Write(append(line, '\n'))
}

func fail(format string, args ...any) {
	line, _ := json.Marshal(map[string]any{"step": "error", "message": fmt.Sprintf(format, args...)})
	_, _ = os.Stdout.Write(append(line, '\n'))
	os.Exit(1)
}

func await(done <-chan struct{}, what string) {
	select {
	case <-done:
	case <-time.After(limit):
		fail("no %s within %s", what, limit)
	}
}

func waitGo() {
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	select {
	case line := <-lines:
		if line != "go" {
			fail("expected go on stdin, got %q", line)
		}
	case <-time.After(limit):
		fail("no go on stdin within %s", limit)
	}
}

func cancellation(run *sidecar.Run) *sidecar.CancelledError {
	cancelled, ok := sidecar.Cancellation(run.Context())
	if !ok {
		fail("the run's context was cancelled without a CancelledError cause: %v", context.Cause(run.Context()))
	}
	return cancelled
}
