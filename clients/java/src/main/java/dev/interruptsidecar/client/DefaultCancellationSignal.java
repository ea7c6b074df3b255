package dev.interruptsidecar.client;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The signal the client trips: from the daemon's cancel, or from a {@link CancellationSource}.
 * Tools see it as a {@link CancellationSignal}; only this package can trip it.
 *
 * <p>A trip, on the tripping thread: (1) {@link #cancellation} is set, under {@link #lock},
 * with the hooks and listeners taken; (2) the hooks run; {@link #hooksRun} opens; (3) the
 * listeners run, in registration order; (4) {@link #woken} opens and {@link #wokenFuture}
 * completes: the waiters wake. Waking last is the point: a thread that waited for the cancel
 * and goes on to act (to report, say) must find the effect of every listener registered before
 * the trip, however long the tripping thread is descheduled between two of the steps.
 */
final class DefaultCancellationSignal implements CancellationSignal {
  private static final System.Logger LOG = System.getLogger(DefaultCancellationSignal.class.getName());

  private final Object lock = new Object();
  /** Opens when the trip's hooks have run (step 2): what {@link #awaitTrip} waits for. */
  private final CountDownLatch hooksRun = new CountDownLatch(1);
  /** Opens when the trip's listeners have run too (step 4): what {@link #await} waits for. */
  private final CountDownLatch woken = new CountDownLatch(1);
  /** Completed with {@link #woken}: the source of {@link #whenCancelled}'s futures. */
  private final CompletableFuture<Cancellation> wokenFuture = new CompletableFuture<>();
  /** Insertion-ordered: the order listeners run in. Guarded by {@link #lock}. */
  private final Map<Long, Runnable> listeners = new LinkedHashMap<>();
  /** Run at the trip before waiters wake (THREAD_INTERRUPT). Guarded by {@link #lock}. */
  private final List<Runnable> tripHooks = new ArrayList<>();

  private long nextKey;
  private volatile Cancellation cancellation;
  /**
   * The thread running the trip's hooks and listeners, from step 1 until the waiters wake; null
   * before and after. A hook or listener that waits for the signal it is being run by would
   * otherwise wait for itself: on this thread the waits return at once (the listeners before
   * it have run; the ones after it cannot have, and can't be waited for from here).
   */
  private volatile Thread tripper;
  /** Tests only: run by the trip between its step 1 (tripped, hooks taken) and its hooks. */
  private volatile Runnable afterTripped;

  @Override
  public boolean isCancelled() {
    return cancellation != null;
  }

  @Override
  public Optional<InterruptReason> getReason() {
    Cancellation current = cancellation;
    return current == null ? Optional.empty() : Optional.of(current.reason());
  }

  @Override
  public String getDetail() {
    Cancellation current = cancellation;
    return current == null ? "" : current.detail();
  }

  @Override
  public Optional<Cancellation> getCancellation() {
    return Optional.ofNullable(cancellation);
  }

  @Override
  public void checkpoint() {
    Cancellation current = cancellation;
    if (current != null) {
      throw new CancelledExecutionException(current);
    }
  }

  @Override
  public void onCancel(Runnable listener) {
    Objects.requireNonNull(listener, "listener");
    synchronized (lock) {
      if (cancellation == null) {
        listeners.put(nextKey++, listener);
        return;
      }
    }
    call(listener);
  }

  /** Adds a listener unless tripped; returns its key for {@link #removeListener}, or -1. */
  long addListenerIfUntripped(Runnable listener) {
    synchronized (lock) {
      if (cancellation != null) {
        return -1;
      }
      long key = nextKey++;
      listeners.put(key, listener);
      return key;
    }
  }

  void removeListener(long key) {
    synchronized (lock) {
      listeners.remove(key);
    }
  }

  /**
   * Adds a hook that runs at the trip before any waiter wakes and before the listeners, so
   * that whoever sees the trip also sees its effect. Returns false (not added) once tripped.
   */
  boolean addTripHook(Runnable hook) {
    synchronized (lock) {
      if (cancellation != null) {
        return false;
      }
      tripHooks.add(hook);
      return true;
    }
  }

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    if (isTripper()) {
      return true;
    }
    return woken.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  @Override
  public Cancellation await() throws InterruptedException {
    if (!isTripper()) {
      woken.await();
    }
    return cancellation;
  }

  @Override
  public CompletableFuture<Cancellation> whenCancelled() {
    // Not the interface's listener-based default: a future completed by a listener would wake
    // whoever waits on it before the listeners registered after whenCancelled() have run.
    if (isTripper()) {
      return CompletableFuture.completedFuture(cancellation); // join() here must not hang
    }
    return wokenFuture.copy();
  }

  private boolean isTripper() {
    return tripper == Thread.currentThread();
  }

  /**
   * Waits (uninterruptibly, at most {@code timeout}) until a trip has run its hooks. The
   * listeners may still be running: the stream's reader waits here for the doorbell's thread,
   * and must not wait on tools' listeners (which may be waiting on the stream).
   */
  boolean awaitTrip(Duration timeout) {
    return isTripper() || Uninterruptibly.await(hooksRun, timeout);
  }

  /**
   * Trips the signal: hooks, then listeners, then the waiters wake (see the class comment).
   * Later calls change nothing.
   *
   * @return true for the call that tripped it
   */
  boolean trip(Cancellation tripWith) {
    Objects.requireNonNull(tripWith, "cancellation");
    List<Runnable> hooks;
    List<Runnable> toRun;
    synchronized (lock) {
      if (cancellation != null) {
        return false;
      }
      tripper = Thread.currentThread();
      cancellation = tripWith;
      // Taken under the lock: a listener added from here on sees the trip and runs itself
      // (on the adding thread, maybe before these), so each listener runs exactly once.
      hooks = new ArrayList<>(tripHooks);
      tripHooks.clear();
      toRun = new ArrayList<>(listeners.values());
      listeners.clear();
    }
    try {
      Runnable seam = afterTripped;
      if (seam != null) {
        seam.run();
      }
      hooks.forEach(DefaultCancellationSignal::call);
      hooksRun.countDown();
      toRun.forEach(DefaultCancellationSignal::call);
    } finally {
      // call() contains whatever a hook or listener throws short of a checked exception thrown
      // sneakily; whatever happened, the waiters must wake, or they would wait forever.
      hooksRun.countDown();
      tripper = null;
      woken.countDown();
      wokenFuture.complete(tripWith);
    }
    return true;
  }

  /** Tests only: {@code seam} runs in the trip after its state change (step 1), before its hooks. */
  void afterTripped(Runnable seam) {
    afterTripped = seam;
  }

  private static void call(Runnable listener) {
    // A failing listener must stop neither the ones after it nor the trip itself.
    try {
      listener.run();
    } catch (RuntimeException | Error failure) {
      LOG.log(Level.WARNING, "cancellation listener " + listener + " failed", failure);
    }
  }

  @Override
  public String toString() {
    Cancellation current = cancellation;
    return "CancellationSignal[" + (current == null ? "not cancelled" : "cancelled " + current.reason()) + "]";
  }
}
