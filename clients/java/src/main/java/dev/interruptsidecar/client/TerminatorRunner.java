package dev.interruptsidecar.client;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * Runs callback terminators off the stream's reader thread, in the order they are asked for.
 *
 * <p>One dispatcher thread takes the runs in order; each callback runs on a worker thread of
 * its own, and the next one starts when it is done — or after {@link #SEQUENTIAL_WINDOW_MS} at
 * most, so a terminator that hangs holds up the others by that much only, while it finishes in
 * the background. The outcome of each goes to {@code report} ({@code terminator_result}).
 *
 * <p>{@link #settle} lets the run's end wait for those reports: a worker interrupted at the
 * trip ends its run while its terminators are still running, and once the stream is
 * half-closed a result can no longer be written.
 */
final class TerminatorRunner {
  /** How long one running terminator holds up the next one, at most. */
  static final long SEQUENTIAL_WINDOW_MS = 250;

  private static final System.Logger LOG = System.getLogger(TerminatorRunner.class.getName());
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final String STOP = new String("stop"); // compared by identity

  private final Function<String, Terminator> lookup;
  private final BiConsumer<String, String> report;
  private final LinkedBlockingQueue<String> queue = new LinkedBlockingQueue<>();
  private final ExecutorService workers = Executors.newCachedThreadPool(daemonThreads("worker"));
  private Thread dispatcher;
  /** Guards {@link #asked} and {@link #reported}; notified on each report. */
  private final Object progress = new Object();
  /** Runs submitted so far. */
  private long asked;
  /** Runs whose result has been reported (or whose report was attempted). */
  private long reported;

  TerminatorRunner(Function<String, Terminator> lookup, BiConsumer<String, String> report) {
    this.lookup = lookup;
    this.report = report;
  }

  /** Queues one run; any thread. */
  synchronized void submit(String terminatorId) {
    if (dispatcher == null) {
      dispatcher = daemonThreads("dispatcher").newThread(this::work);
      dispatcher.start();
    }
    synchronized (progress) {
      asked++;
    }
    queue.add(terminatorId);
  }

  private void work() {
    while (true) {
      String terminatorId;
      try {
        terminatorId = queue.take();
      } catch (InterruptedException stopped) {
        return;
      }
      if (terminatorId == STOP) {
        return;
      }
      start(terminatorId);
    }
  }

  private void start(String terminatorId) {
    Terminator terminator = lookup.apply(terminatorId);
    if (terminator == null) {
      reportOnce(terminatorId, "terminator '" + terminatorId + "' is not registered by this tool");
      return;
    }
    CompletableFuture<Void> run = CompletableFuture.runAsync(() -> {
      try {
        terminator.terminate();
      } catch (RuntimeException unchecked) {
        throw unchecked;
      } catch (Exception checked) {
        throw new IllegalStateException(checked);
      }
    }, workers);
    run.whenComplete((ignored, failure) -> {
      if (failure == null) {
        reportOnce(terminatorId, "");
        return;
      }
      Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
      if (cause instanceof IllegalStateException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      LOG.log(Level.WARNING, "terminator '" + terminatorId + "' failed: " + describe(cause));
      reportOnce(terminatorId, describe(cause));
    });
    try {
      run.get(SEQUENTIAL_WINDOW_MS, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException expected) {
      // Still running (it finishes in the background), or failed (reported above).
    } catch (InterruptedException stopped) {
      Thread.currentThread().interrupt();
    }
  }

  /** Reports one run's result, and counts it as reported for {@link #settle}. */
  private void reportOnce(String terminatorId, String error) {
    try {
      report.accept(terminatorId, error);
    } finally {
      synchronized (progress) {
        reported++;
        progress.notifyAll();
      }
    }
  }

  /**
   * Waits (uninterruptibly, at most {@code timeoutMillis}) until every run asked for so far has
   * started and its result has been reported. The run's end calls it before half-closing the
   * stream: a result written after the half-close is lost.
   *
   * @return false when the timeout passed first (a terminator still running reports later,
   *     best-effort)
   */
  boolean settle(long timeoutMillis) {
    // Uninterruptibly: a THREAD_INTERRUPT worker being interrupted keeps its status for the tool.
    return Uninterruptibly.waitFor(progress, () -> reported >= asked, Duration.ofMillis(timeoutMillis));
  }

  static String describe(Throwable error) {
    String text = error.getMessage();
    String name = error.getClass().getSimpleName();
    return text == null || text.isEmpty() ? name : name + ": " + text;
  }

  /** Starts every run asked for so far, then stops. Started terminators finish on their own. */
  void close(long timeoutMillis) {
    Thread thread;
    synchronized (this) {
      thread = dispatcher;
      queue.add(STOP);
    }
    if (thread != null) {
      try {
        thread.join(timeoutMillis);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    workers.shutdown();
  }

  private static java.util.concurrent.ThreadFactory daemonThreads(String role) {
    return task -> {
      Thread thread = new Thread(task, "interrupt-sidecar-terminator-" + role + "-" + THREADS.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }
}
