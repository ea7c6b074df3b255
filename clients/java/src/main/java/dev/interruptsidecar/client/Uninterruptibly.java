package dev.interruptsidecar.client;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * Bounded waits that a {@link Thread#interrupt()} does not cut short: the client's own short
 * waits (handshake, acknowledgements) must complete for a THREAD_INTERRUPT worker that is
 * being interrupted. The interrupt status is restored afterwards.
 */
final class Uninterruptibly {
  private Uninterruptibly() {}

  static <T> T get(Future<T> future, Duration timeout) throws ExecutionException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException again) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  static boolean join(Thread thread, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          long left = deadline - System.nanoTime();
          if (left > 0) {
            TimeUnit.NANOSECONDS.timedJoin(thread, left);
          }
          return !thread.isAlive();
        } catch (InterruptedException again) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  static boolean await(CountDownLatch latch, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return latch.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException again) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Waits on {@code monitor} until {@code done} holds, checked while holding it (whoever changes
   * what it reads calls {@code monitor.notifyAll()}), or until {@code timeout} has passed.
   *
   * @return whether {@code done} held
   */
  static boolean waitFor(Object monitor, BooleanSupplier done, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    boolean interrupted = false;
    try {
      synchronized (monitor) {
        while (!done.getAsBoolean()) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return false;
          }
          try {
            TimeUnit.NANOSECONDS.timedWait(monitor, left);
          } catch (InterruptedException again) {
            interrupted = true;
          }
        }
        return true;
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
