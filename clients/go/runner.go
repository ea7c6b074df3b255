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
	// idle is closed while the queue is empty and no run is being started (see settle);
	// submit replaces it with an open one.
	idle   chan struct{}
	isIdle bool
	wake   chan struct{}
	done   chan struct{}
}

func newTerminatorRunner(lookup func(string) func(), report func(string, string), logger *slog.Logger) *terminatorRunner {
	r := &terminatorRunner{
		lookup: lookup,
		report: report,
		log:    logger,
		idle:   make(chan struct{}),
		isIdle: true,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	close(r.idle)
	go r.work()
	return r
}

// submit queues one run; it never blocks (it is called by the stream reader).
func (r *terminatorRunner) submit(terminatorID string) {
	r.mu.Lock()
	r.queue = append(r.queue, terminatorID)
	if r.isIdle {
		r.idle = make(chan struct{})
		r.isIdle = false
	}
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
			if !r.isIdle {
				r.isIdle = true
				close(r.idle)
			}
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

// start runs one terminator in a goroutine of its own and waits until it has reported
// its result, or for sequentialWindow at most.
func (r *terminatorRunner) start(terminatorID string) {
	callback := r.lookup(terminatorID)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if callback == nil {
			r.report(terminatorID, fmt.Sprintf("terminator %q is not registered by this tool", terminatorID))
			return
		}
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

// settle waits until every run asked for so far has started and has reported its result
// (written it to the stream), except those still running after sequentialWindow, which
// finish in the background as they do between terminators. So it is bounded: each run
// holds it up for sequentialWindow at most.
//
// Closing the run half-closes the stream, after which no result can be written: a run
// whose work ended at the trip gets here while the terminators the trip asked for are
// still running (or still queued behind one another), and their results, a failure
// above all, would be lost.
func (r *terminatorRunner) settle() {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	<-idle
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
