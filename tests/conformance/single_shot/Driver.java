package conformance.single_shot;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.awaitCancel;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.waitGo;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;
import java.util.concurrent.atomic.AtomicInteger;

/** single_shot, Java: see README.md beside this file. */
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
        AtomicInteger notifications = new AtomicInteger();
        run.signal().onCancel(notifications::incrementAndGet);
        emit("attached", "cancelled", run.signal().isCancelled());
        awaitCancel(run.signal(), "the cancel");
        emit("cancelled", "reason", run.signal().getReason().orElseThrow().name());
        waitGo();
        emit("final", "reason", run.signal().getReason().orElseThrow().name(), "notifications", notifications.get());
        run.unwind(ToolOutcome.INTERRUPTED);
      }
    });
  }
}
