package dev.interruptsidecar.client;

import java.time.Duration;
import java.util.Optional;

/**
 * The signal of a tool that runs outside any agent: never cancelled. Listeners are dropped,
 * since they could never run; waiting sleeps until the timeout.
 */
public final class NoopCancellationSignal implements CancellationSignal {
  /** The one instance. */
  public static final NoopCancellationSignal INSTANCE = new NoopCancellationSignal();

  private NoopCancellationSignal() {}

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public Optional<InterruptReason> getReason() {
    return Optional.empty();
  }

  @Override
  public String getDetail() {
    return "";
  }

  @Override
  public Optional<Cancellation> getCancellation() {
    return Optional.empty();
  }

  @Override
  public void checkpoint() {}

  @Override
  public void onCancel(Runnable listener) {}

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    Thread.sleep(timeout.toMillis(), (int) (timeout.toNanos() % 1_000_000));
    return false;
  }

  @Override
  public Cancellation await() throws InterruptedException {
    Object never = new Object();
    synchronized (never) {
      while (true) {
        never.wait();
      }
    }
  }

  @Override
  public String toString() {
    return "NoopCancellationSignal";
  }
}
