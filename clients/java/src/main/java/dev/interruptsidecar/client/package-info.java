/**
 * The Java client of interrupt-sidecar: a tool attaches to the execution (an agent turn or a
 * task) it runs in and is told the moment that execution is cancelled.
 *
 * <p>A tool attaches with {@link dev.interruptsidecar.client.ToolRun#attach(InterruptBehavior)}
 * (or {@link dev.interruptsidecar.client.ToolRun#builder()}), which reads {@code
 * INTERRUPT_SIDECAR_ADDRESS} and {@code INTERRUPT_SIDECAR_TOKEN}, and then uses the run's
 * {@link dev.interruptsidecar.client.CancellationSignal} and {@link
 * dev.interruptsidecar.client.TerminatorRegistrar}. Without a token the run is a no-op: its
 * signal never trips and nothing is ever terminated, so the tool runs unchanged outside an
 * agent. Agents use {@link dev.interruptsidecar.client.Coordinator}.
 *
 * <p>Every failure that concerns the sidecar is a {@link
 * dev.interruptsidecar.client.SidecarException} naming its gRPC status; the cancel itself is a
 * {@link dev.interruptsidecar.client.CancelledExecutionException}, which is not one.
 */
package dev.interruptsidecar.client;
