package conformance.register_after_trip;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.await;
import static conformance.support.Driverlib.awaitCancel;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;
import java.util.concurrent.CountDownLatch;

/** register_after_trip, Java: see README.md beside this file. */
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
        awaitCancel(run.signal(), "the cancel");
        emit("cancelled", "reason", run.signal().getReason().orElseThrow().name());
        // THREAD_INTERRUPT interrupted this thread at the trip (before the wait returned).
        if (!Thread.interrupted()) {
          throw Driverlib.fail("the THREAD_INTERRUPT worker was not interrupted at the trip");
        }
        CountDownLatch ran = new CountDownLatch(1);
        run.registrar().register("late", ran::countDown);
        await(ran, "the terminator 'late' to run");
        emit("terminator_ran", "terminator_id", "late");
        run.unwind(ToolOutcome.INTERRUPTED);
      }
    });
  }
}
