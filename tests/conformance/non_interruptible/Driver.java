package conformance.non_interruptible;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.refusalCode;
import static conformance.support.Driverlib.waitGo;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;

/** non_interruptible, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      // No behaviour declared: the client's default, NON_INTERRUPTIBLE.
      try (ToolRun run = ToolRun.builder().toolName(TOOL_NAME).attach()) {
        emit("attached", "cancelled", run.signal().isCancelled());
        String code = refusalCode(() -> run.registrar().register("refused", () -> { }));
        emit("register", "refused", true, "code", code);
        waitGo();
        emit("final", "cancelled", run.signal().isCancelled());
        run.unwind(ToolOutcome.COMPLETED);
      }
    });
  }
}
