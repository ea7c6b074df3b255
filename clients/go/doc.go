// Package interruptsidecar is the Go client of interrupt-sidecar: a tool attaches to the
// execution (an agent turn or a task) it runs in and is told, through a
// [context.Context], the moment that execution is cancelled.
//
//	run, err := interruptsidecar.Attach(ctx, interruptsidecar.Options{
//		Behavior: interruptsidecar.Cooperative,
//		ToolName: "grep",
//	})
//	if err != nil {
//		return err
//	}
//	defer run.Close()
//	for _, path := range paths {
//		if err := run.Context().Err(); err != nil {
//			return context.Cause(run.Context()) // a *CancelledError with the reason
//		}
//		scan(path)
//	}
//
// The daemon's address and the execution's attach token come from [Options], else from
// INTERRUPT_SIDECAR_ADDRESS and INTERRUPT_SIDECAR_TOKEN. Without a token the run is a
// no-op: its context is never cancelled by the sidecar and its terminators never run,
// so a tool runs unchanged outside an agent.
//
// Over a unix socket an interruptible tool also takes its cancel from the daemon's cancel
// doorbell, a raw unix socket that carries it ahead of the gRPC stream; the run trips once
// either way. INTERRUPT_SIDECAR_DOORBELL=0 or [Options].DisableDoorbell turns it off.
//
// Refusals and transport failures are [*Error] values carrying the gRPC status code
// (status.Code(err) works on them); a cancellation is a [*CancelledError], which is not
// an [*Error].
package interruptsidecar
