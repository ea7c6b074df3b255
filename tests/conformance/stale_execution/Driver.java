package conformance.stale_execution;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.awaitCancel;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.waitGo;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolRun;

/** stale_execution, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      String staleToken = System.getenv("CONFORMANCE_STALE_TOKEN");
      if (staleToken == null) {
        throw Driverlib.fail("CONFORMANCE_STALE_TOKEN is not set");
      }
      try (ToolRun stale = ToolRun.builder().behavior(InterruptBehavior.COOPERATIVE).toolName(TOOL_NAME)
              .token(staleToken).attach();
          ToolRun current = ToolRun.attach(InterruptBehavior.COOPERATIVE, TOOL_NAME)) {
        emit("attached", "stale_cancelled", stale.signal().isCancelled(),
            "current_cancelled", current.signal().isCancelled());
        awaitCancel(stale.signal(), "the stale execution's cancel");
        emit("stale_cancelled", "reason", stale.signal().getReason().orElseThrow().name());
        waitGo();
        emit("current", "cancelled", current.signal().isCancelled());
        awaitCancel(current.signal(), "the current execution's cancel");
        emit("current_cancelled", "reason", current.signal().getReason().orElseThrow().name());
      } // both unwind (INTERRUPTED: they were cancelled) as the block ends
    });
  }
}
