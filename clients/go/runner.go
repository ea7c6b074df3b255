package interruptsidecar

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// sequentialWindow is how long one running callback terminator holds up the next one
// at most: a terminator that hangs delays the others by that much only, and finishes
// (or not) in the background.
const sequentialWindow = 250 * time.Millisecond

// terminatorRunner runs callback terminators off the stream reader, one after the
// other in the order the daemon asked for them, each in a goroutine of its own, and
// reports each outcome (a panic is a failure) to the daemon.
type terminatorRunner struct {
	lookup func(string) func()
	report func(terminatorID, failure string)
	log    *slog.Logger

	mu     sync.Mutex
	queue  []string
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newTerminatorRunner(lookup func(string) func(), report func(string, string), logger *slog.Logger) *terminatorRunner {
	r := &terminatorRunner{
		lookup: lookup,
		report: report,
		log:    logger,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go r.work()
	return r
}

// submit queues one run; it never blocks (it is called by the stream reader).
func (r *terminatorRunner) submit(terminatorID string) {
	r.mu.Lock()
	r.queue = append(r.queue, terminatorID)
	r.mu.Unlock()
	r.poke()
}

func (r *terminatorRunner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *terminatorRunner) work() {
	defer close(r.done)
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return
			}
			<-r.wake
			continue
		}
		terminatorID := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		r.start(terminatorID)
	}
}

func (r *terminatorRunner) start(terminatorID string) {
	callback := r.lookup(terminatorID)
	if callback == nil {
		go r.report(terminatorID, fmt.Sprintf("terminator %q is not registered by this tool", terminatorID))
		return
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		failure := call(callback)
		if failure != "" {
			r.log.Warn("interrupt-sidecar: terminator failed", "terminator_id", terminatorID, "error", failure)
		}
		r.report(terminatorID, failure)
	}()
	timer := time.NewTimer(sequentialWindow)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
	}
}

func call(callback func()) (failure string) {
	defer func() {
		if p := recover(); p != nil {
			failure = fmt.Sprintf("panic: %v", p)
		}
	}()
	callback()
	return ""
}

// close starts every run asked for so far, then stops the worker. Started terminators
// finish on their own.
func (r *terminatorRunner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.poke()
	<-r.done
}
