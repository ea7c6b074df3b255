package interruptsidecar

// What the tests of package interruptsidecar_test may see of a run's cancel doorbell.

// DoorbellOpened reports whether the run dialled a cancel doorbell.
func DoorbellOpened(r *Run) bool { return r.stream != nil && r.stream.doorbell != nil }

// DoorbellRang reports whether a whole, valid cancel frame was read from the doorbell
// and handed to the run (whether or not the stream's copy had tripped it already).
func DoorbellRang(r *Run) bool { return DoorbellOpened(r) && r.stream.doorbell.rang.Load() }

// DoorbellDone is closed once the doorbell's goroutine has returned and its socket is
// closed; nil when no doorbell was opened.
func DoorbellDone(r *Run) <-chan struct{} {
	if !DoorbellOpened(r) {
		return nil
	}
	return r.stream.doorbell.done
}

// SetTripHook makes hook run inside each trip, between the context's cancel and Done
// closing, until the returned function restores the previous hook. Not for parallel tests.
func SetTripHook(hook func(*Run)) (restore func()) {
	previous := testHookTrip
	testHookTrip = hook
	return func() { testHookTrip = previous }
}
