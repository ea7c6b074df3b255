package conformance.idiom;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.WAIT;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.CancellationSignal;
import dev.interruptsidecar.client.CancelledExecutionException;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolRun;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * idiom, Java: see README.md beside this file. The Java idiom: {@code checkpoint()} returns
 * while not cancelled, {@code onCancel} wakes the waiting tool, and {@code checkpoint()} then
 * throws a {@link CancelledExecutionException} that carries the reason.
 */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      try (ToolRun run = ToolRun.attach(InterruptBehavior.COOPERATIVE, TOOL_NAME)) {
        CancellationSignal signal = run.signal();
        signal.checkpoint(); // returns: not yet cancelled
        emit("before", "cancelled", false);
        CountDownLatch woken = new CountDownLatch(1);
        signal.onCancel(woken::countDown);
        if (!woken.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
          throw Driverlib.fail("timed out after " + WAIT.toSeconds() + "s waiting for onCancel");
        }
        try {
          signal.checkpoint();
          throw Driverlib.fail("checkpoint() returned after the cancel");
        } catch (CancelledExecutionException cancelled) {
          emit("after", "cancelled", true, "reason", cancelled.getReason().name());
        }
      }
    });
  }
}
