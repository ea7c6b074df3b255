package dev.interruptsidecar.client;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A read-only, single-shot view of an execution's cancellation.
 *
 * <ul>
 *   <li>Thread-safe: every method can be called from any thread.
 *   <li>Single-shot: once cancelled it stays cancelled, with its first reason. There is no reset;
 *       a new turn is a new execution with a new signal.
 *   <li>Listeners ({@link #onCancel}) run once each, in registration order, on the thread that
 *       trips the signal (for an attached run, a gRPC thread or the cancel doorbell's thread,
 *       whichever brought the cancel first); one registered after the trip runs
 *       at once, on the registering thread. A listener must be quick and non-blocking; one that
 *       throws is logged and stops no other.
 * </ul>
 *
 * <p>A tool gets its signal from its {@link ToolRun}, or from {@link InterruptAccess#signalOf}.
 * Outside an agent it is {@link NoopCancellationSignal#INSTANCE}, never cancelled, so a tool
 * can always poll without a null check.
 */
public interface CancellationSignal {

  /**
   * Whether the execution has been cancelled.
   *
   * @return true once cancelled
   */
  boolean isCancelled();

  /**
   * The first reason the execution was cancelled with.
   *
   * @return the reason, empty while not cancelled
   */
  Optional<InterruptReason> getReason();

  /**
   * The interrupt's free-text detail.
   *
   * @return the detail; "" while not cancelled, or when none was given
   */
  String getDetail();

  /**
   * Everything known about the cancellation (reason, detail, trip time, grace deadline).
   *
   * @return the cancellation, empty while not cancelled
   */
  Optional<Cancellation> getCancellation();

  /**
   * Throws if cancelled; otherwise does nothing. Call it at loop and stage boundaries.
   *
   * @throws CancelledExecutionException carrying the reason, once cancelled
   */
  void checkpoint();

  /**
   * Runs {@code listener} at the trip, or now (on this thread) if the signal has tripped.
   *
   * @param listener quick, non-blocking code; called at most once
   */
  void onCancel(Runnable listener);

  /**
   * Waits until cancelled, at most {@code timeout}: an interruptible sleep.
   *
   * @param timeout how long to wait at most
   * @return true when cancelled, false when the time ran out first
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  boolean await(Duration timeout) throws InterruptedException;

  /**
   * Waits until cancelled, however long that takes.
   *
   * @return the cancellation
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  Cancellation await() throws InterruptedException;

  /**
   * A future completed with the cancellation at the trip (at once if already cancelled).
   * Completing or cancelling the returned future does not affect the signal.
   *
   * @return a fresh future; never completes for a signal that never trips
   */
  default CompletableFuture<Cancellation> whenCancelled() {
    CompletableFuture<Cancellation> future = new CompletableFuture<>();
    onCancel(() -> getCancellation().ifPresent(future::complete));
    return future;
  }
}
