package dev.interruptsidecar.client;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The signal the client trips: from the daemon's cancel, or from a {@link CancellationSource}.
 * Tools see it as a {@link CancellationSignal}; only this package can trip it.
 */
final class DefaultCancellationSignal implements CancellationSignal {
  private static final System.Logger LOG = System.getLogger(DefaultCancellationSignal.class.getName());

  private final Object lock = new Object();
  private final CountDownLatch tripped = new CountDownLatch(1);
  /** Insertion-ordered: the order listeners run in. Guarded by {@link #lock}. */
  private final Map<Long, Runnable> listeners = new LinkedHashMap<>();
  /** Run at the trip before waiters wake (THREAD_INTERRUPT). Guarded by {@link #lock}. */
  private final List<Runnable> tripHooks = new ArrayList<>();

  private long nextKey;
  private volatile Cancellation cancellation;

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
    return tripped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  @Override
  public Cancellation await() throws InterruptedException {
    tripped.await();
    return cancellation;
  }

  /**
   * Waits (uninterruptibly, at most {@code timeout}) until a trip has run its hooks: the
   * point where {@link #await(Duration)} returns. Listeners may still be running.
   */
  boolean awaitTrip(Duration timeout) {
    return Uninterruptibly.await(tripped, timeout);
  }

  /**
   * Trips the signal. Later calls change nothing.
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
      cancellation = tripWith;
      // Taken under the lock: a listener added from here on sees the trip and runs itself,
      // so each listener runs exactly once.
      hooks = new ArrayList<>(tripHooks);
      tripHooks.clear();
      toRun = new ArrayList<>(listeners.values());
      listeners.clear();
    }
    hooks.forEach(DefaultCancellationSignal::call);
    tripped.countDown();
    toRun.forEach(DefaultCancellationSignal::call);
    return true;
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
