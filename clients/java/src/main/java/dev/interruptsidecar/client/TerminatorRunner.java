package dev.interruptsidecar.client;

import java.lang.System.Logger.Level;
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
      report.accept(terminatorId, "terminator '" + terminatorId + "' is not registered by this tool");
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
        report.accept(terminatorId, "");
        return;
      }
      Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
      if (cause instanceof IllegalStateException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      LOG.log(Level.WARNING, "terminator '" + terminatorId + "' failed: " + describe(cause));
      report.accept(terminatorId, describe(cause));
    });
    try {
      run.get(SEQUENTIAL_WINDOW_MS, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException expected) {
      // Still running (it finishes in the background), or failed (reported above).
    } catch (InterruptedException stopped) {
      Thread.currentThread().interrupt();
    }
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
