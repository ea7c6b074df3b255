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
 *   <li>Waiters wake after the listeners: {@link #await()}, {@link #await(Duration)} and {@link
 *       #whenCancelled()}'s futures return or complete only once every listener registered
 *       before the trip has run (returned or thrown). So a thread that waited for the cancel
 *       sees the effect of those listeners. The state reads ({@link #isCancelled}, {@link
 *       #getCancellation}, {@link #checkpoint}) show the trip from its first moment, before the
 *       listeners have run, so polling gives no such guarantee: wait instead (once cancelled,
 *       {@code await()} only waits for the listeners still running).
 * </ul>
 *
 * <p>The trip in order: the signal reads as cancelled; a {@link InterruptBehavior#THREAD_INTERRUPT}
 * run's worker is interrupted; the listeners run; the waiters wake. The worker is interrupted
 * first because the interrupt must reach it wherever it blocks: code woken by the {@link
 * InterruptedException} rather than by {@code await()} may run before the listeners have, and
 * calls {@code await()} (which then returns as soon as they have) if it needs their effect.
 *
 * <p>A listener may use the signal: on the tripping thread, where the listeners run, {@code
 * await()} returns at once and {@code whenCancelled()} is already complete, since waiting there
 * for the listeners after it would wait forever. It must not wait for another thread that
 * waits on the signal. A listener registered while the trip is under way, from another thread,
 * runs at once on that thread, possibly before the trip's own listeners have finished; it
 * still runs exactly once.
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
   * Waits until cancelled, at most {@code timeout}: an interruptible sleep. Returns once the
   * listeners registered before the trip have run (at once on the tripping thread).
   *
   * @param timeout how long to wait at most
   * @return true when cancelled, false when the time ran out first
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  boolean await(Duration timeout) throws InterruptedException;

  /**
   * Waits until cancelled, however long that takes. Returns once the listeners registered
   * before the trip have run (at once on the tripping thread).
   *
   * @return the cancellation
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  Cancellation await() throws InterruptedException;

  /**
   * A future completed with the cancellation at the trip (at once if already cancelled), when
   * {@link #await()} would return: after the listeners registered before the trip have run.
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
