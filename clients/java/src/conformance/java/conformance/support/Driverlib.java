package conformance.support;

import dev.interruptsidecar.client.CancellationSignal;
import dev.interruptsidecar.client.SidecarException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What the Java conformance drivers share: the runner conversation of
 * tests/conformance/PROTOCOL.md (JSON steps on stdout, "go" on stdin, 10 s waits).
 */
public final class Driverlib {
  /** The tool name every Java driver attaches with. */
  public static final String TOOL_NAME = "conformance-java";
  /** Every wait inside a driver gives up after this. */
  public static final Duration WAIT = Duration.ofSeconds(10);

  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  private Driverlib() {}

  /** A driver's script. */
  @FunctionalInterface
  public interface Script {
    /**
     * Runs the scenario.
     *
     * @throws Exception anything unexpected: reported as an error step
     */
    void run() throws Exception;
  }

  /**
   * Runs a driver's script: exit 0 when it finishes, an error step and exit 1 on any failure.
   *
   * @param script the scenario
   */
  public static void main(Script script) {
    try {
      script.run();
    } catch (Throwable failure) {
      emit("error", "message", failure.toString());
      OUT.flush();
      System.exit(1);
    }
    OUT.flush();
    System.exit(0);
  }

  /**
   * Prints one step as a JSON line, flushed at once.
   *
   * @param step the step's name
   * @param fields alternating keys and values (String, Boolean, Number, List)
   */
  public static synchronized void emit(String step, Object... fields) {
    StringBuilder line = new StringBuilder("{\"step\":").append(json(step));
    for (int i = 0; i + 1 < fields.length; i += 2) {
      line.append(',').append(json(fields[i])).append(':').append(json(fields[i + 1]));
    }
    OUT.println(line.append('}'));
    OUT.flush();
  }

  private static String json(Object value) {
    if (value == null) {
      return "null";
    }
    if (value instanceof Boolean || value instanceof Number) {
      return value.toString();
    }
    if (value instanceof List<?> list) {
      StringBuilder out = new StringBuilder("[");
      for (Object item : list) {
        out.append(out.length() > 1 ? "," : "").append(json(item));
      }
      return out.append(']').toString();
    }
    StringBuilder out = new StringBuilder("\"");
    for (char c : value.toString().toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }

  /**
   * Prints an error step and exits 1.
   *
   * @param message what went wrong
   * @return never returns; declared for {@code throw fail(...)}
   */
  public static AssertionError fail(String message) {
    emit("error", "message", message);
    System.exit(1);
    return new AssertionError(message);
  }

  /** Blocks until the runner sends {@code go} on stdin (within {@link #WAIT}). */
  public static void waitGo() {
    CompletableFuture<String> line = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try {
        line.complete(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine());
      } catch (java.io.IOException failure) {
        line.completeExceptionally(failure);
      }
    }, "stdin");
    reader.setDaemon(true);
    reader.start();
    String got;
    try {
      got = uninterruptibly(() -> line.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    } catch (Exception failure) {
      throw fail("expected 'go' on stdin within " + WAIT.toSeconds() + "s: " + failure);
    }
    if (got == null || !got.strip().equals("go")) {
      throw fail("expected 'go' on stdin, got " + got);
    }
  }

  /**
   * Waits for the signal to trip (within {@link #WAIT}). A THREAD_INTERRUPT run interrupts
   * this thread at the trip: the wait goes on, and the interrupt status is left set.
   *
   * @param signal the run's signal
   * @param what what is awaited, for the error message
   */
  public static void awaitCancel(CancellationSignal signal, String what) {
    boolean cancelled;
    try {
      cancelled = uninterruptibly(() -> signal.await(WAIT));
    } catch (Exception failure) {
      throw fail("waiting for " + what + ": " + failure);
    }
    if (!cancelled) {
      throw fail("timed out after " + WAIT.toSeconds() + "s waiting for " + what);
    }
  }

  /**
   * Waits for a latch (within {@link #WAIT}), keeping on through interrupts.
   *
   * @param latch the latch
   * @param what what is awaited, for the error message
   */
  public static void await(CountDownLatch latch, String what) {
    boolean done;
    try {
      done = uninterruptibly(() -> latch.await(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    } catch (Exception failure) {
      throw fail("waiting for " + what + ": " + failure);
    }
    if (!done) {
      throw fail("timed out after " + WAIT.toSeconds() + "s waiting for " + what);
    }
  }

  /**
   * Runs a registration that must be refused; returns the gRPC code name it was refused with.
   *
   * @param register the registration
   * @return e.g. {@code FAILED_PRECONDITION}
   */
  public static String refusalCode(Runnable register) {
    try {
      register.run();
    } catch (SidecarException refused) {
      return refused.code().name();
    }
    throw fail("the registration was accepted");
  }

  /** A wait that an interrupt does not end (it is retried; the status is restored after). */
  private interface Wait<T> {
    T get() throws Exception;
  }

  private static <T> T uninterruptibly(Wait<T> wait) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return wait.get();
        } catch (InterruptedException again) {
          interrupted = true;
          if (System.nanoTime() > deadline) {
            throw again;
          }
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
