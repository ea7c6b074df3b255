package conformance.cancel_delivered;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.awaitCancel;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolRun;

/** cancel_delivered, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      // Leaving the try block reports unwound: INTERRUPTED, since the tool was cancelled.
      try (ToolRun run = ToolRun.attach(InterruptBehavior.COOPERATIVE, TOOL_NAME)) {
        emit("attached", "cancelled", run.signal().isCancelled());
        awaitCancel(run.signal(), "the cancel");
        emit("cancelled", "reason", run.signal().getReason().orElseThrow().name(), "detail", run.signal().getDetail());
      }
    });
  }
}
