package conformance.attach_after_trip;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;

/** attach_after_trip, Java: see README.md beside this file. */
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
        // No waiting: attach returns with the signal as the daemon reported it.
        emit("attached", "cancelled", run.signal().isCancelled(),
            "reason", run.signal().getReason().map(Enum::name).orElse(null));
        run.unwind(ToolOutcome.INTERRUPTED);
      }
    });
  }
}
