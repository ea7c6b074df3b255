package conformance.daemon_restart;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.refusalCode;
import static conformance.support.Driverlib.waitGo;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolRun;

/**
 * daemon_restart, Java: see README.md beside this file. The client does not reconnect: the
 * registration fails with {@code ConnectionLostException} (UNAVAILABLE), and closing a dead
 * stream does not throw.
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
        waitGo();
        String code = refusalCode(() -> run.registrar().register("after_restart", () -> { }));
        emit("after_restart", "error_code", code, "cancelled", run.signal().isCancelled());
      }
    });
  }
}
