package conformance.register_after_unwound;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.refusalCode;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;

/**
 * register_after_unwound, Java: see README.md beside this file. {@code unwind} closes the
 * registrar and keeps the stream open until {@code close}; the refusal comes from the client
 * itself, with the daemon's code (PROTOCOL.md allows that).
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
      try (ToolRun run = ToolRun.attach(InterruptBehavior.THREAD_INTERRUPT, TOOL_NAME)) {
        emit("attached", "cancelled", run.signal().isCancelled());
        run.unwind(ToolOutcome.COMPLETED);
        String code = refusalCode(() -> run.registrar().register("too_late", () -> { }));
        emit("register", "refused", true, "code", code);
      }
    });
  }
}
