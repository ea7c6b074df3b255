// Package driverlib is what the Go conformance drivers (<scenario>/driver.go) share: the
// runner conversation of PROTOCOL.md. One JSON object per line on stdout, every wait
// bounded by ten seconds, any failure an "error" step and exit status 1.
//
// It is not a scenario (it has no README.md), so the runner never starts it, and
// `go build -o <dir>/ ./...` writes no executable for it.
package driverlib

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
)

// ToolName is the tool_name every Go driver attaches with.
const ToolName = "conformance-go"

// Limit bounds every wait of a driver.
const Limit = 10 * time.Second

// Options are the attach options of a driver with the given behaviour.
func Options(behavior sidecar.Behavior) sidecar.Options {
	return sidecar.Options{Behavior: behavior, ToolName: ToolName, Timeout: Limit}
}

// Attach attaches to the scenario's execution (INTERRUPT_SIDECAR_ADDRESS and
// INTERRUPT_SIDECAR_TOKEN) with the given behaviour, or fails with "attach: <error>".
func Attach(behavior sidecar.Behavior) *sidecar.Run {
	run, err := sidecar.Attach(context.Background(), Options(behavior))
	if err != nil {
		Fail("attach: %v", err)
	}
	return run
}

// Emit prints one step as a JSON line on stdout. It adds the "step" key to fields.
func Emit(step string, fields map[string]any) {
	fields["step"] = step
	line, err := json.Marshal(fields)
	if err != nil {
		Fail("encode step %s: %v", step, err)
	}
	_, _ = os.Stdout.Write(append(line, '\n'))
}

// Fail prints an "error" step with the formatted message and exits 1.
func Fail(format string, args ...any) {
	line, _ := json.Marshal(map[string]any{"step": "error", "message": fmt.Sprintf(format, args...)})
	_, _ = os.Stdout.Write(append(line, '\n'))
	os.Exit(1)
}

// Await waits for done to close, or fails after Limit ("no <what> within 10s").
func Await(done <-chan struct{}, what string) {
	select {
	case <-done:
	case <-time.After(Limit):
		Fail("no %s within %s", what, Limit)
	}
}

// WaitGo waits for the runner's "go" line on stdin, or fails after Limit.
func WaitGo() {
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	select {
	case line := <-lines:
		if line != "go" {
			Fail("expected go on stdin, got %q", line)
		}
	case <-time.After(Limit):
		Fail("no go on stdin within %s", Limit)
	}
}

// Cancellation is the CancelledError that cancelled run's context; it fails when the
// context was cancelled without one.
func Cancellation(run *sidecar.Run) *sidecar.CancelledError {
	cancelled, ok := sidecar.Cancellation(run.Context())
	if !ok {
		Fail("the run's context was cancelled without a CancelledError cause: %v", context.Cause(run.Context()))
	}
	return cancelled
}
