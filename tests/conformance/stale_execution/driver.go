// Command driver is the Go driver of the stale_execution conformance scenario (see README.md).
package main

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

func main() {
	staleToken := os.Getenv("CONFORMANCE_STALE_TOKEN")
	if staleToken == "" {
		fail("CONFORMANCE_STALE_TOKEN is not set")
	}
	staleOptions := options(sidecar.Cooperative)
	staleOptions.Token = staleToken
	stale, err := sidecar.Attach(context.Background(), staleOptions)
	if err != nil {
		fail("attach with the stale token: %v", err)
	}
	defer stale.Close()
	current, err := sidecar.Attach(context.Background(), options(sidecar.Cooperative))
	if err != nil {
		fail("attach with the current token: %v", err)
	}
	defer current.Close()
	emit("attached", map[string]any{"stale_cancelled": stale.Cancelled(), "current_cancelled": current.Cancelled()})
	await(stale.Context().Done(), "cancel of the stale execution")
	emit("stale_cancelled", map[string]any{"reason": cancellation(stale).Reason.String()})
	waitGo()
	emit("current", map[string]any{"cancelled": current.Context().Err() != nil})
	await(current.Context().Done(), "cancel of the current execution")
	emit("current_cancelled", map[string]any{"reason": cancellation(current).Reason.String()})
	// The stale execution has ended: the daemon may have closed its stream already.
	if err := stale.Unwound(sidecar.Interrupted, ""); err != nil {
		fmt.Fprintln(os.Stderr, "stale unwound:", err)
	}
	if err := current.Unwound(sidecar.Interrupted, ""); err != nil {
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
