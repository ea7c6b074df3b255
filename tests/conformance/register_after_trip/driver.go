// Command driver is the Go driver of the register_after_trip conformance scenario (see README.md).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
)

func main() {
	run, err := sidecar.Attach(context.Background(), options(sidecar.ThreadInterrupt))
	if err != nil {
		fail("attach: %v", err)
	}
	defer run.Close()
	emit("attached", map[string]any{"cancelled": run.Context().Err() != nil})
	await(run.Context().Done(), "cancel")
	emit("cancelled", map[string]any{"reason": cancellation(run).Reason.String()})
	ran := make(chan struct{})
	var once sync.Once
	if _, err := run.RegisterTerminator("late", func() { once.Do(func() { close(ran) }) }); err != nil {
		fail("register late: %v", err)
	}
	await(ran, "run of terminator late")
	emit("terminator_ran", map[string]any{"terminator_id": "late"})
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
