package conformance.leave_at_trip;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.WAIT;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.CancellationSignal;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolRun;

/** leave_at_trip, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      ToolRun run = ToolRun.attach(InterruptBehavior.THREAD_INTERRUPT, TOOL_NAME);
      CancellationSignal signal = run.signal();
      try (run) {
        run.registrar().register("slow_failing", () -> {
          Thread.sleep(100); // still running when the work has already ended
          throw new IllegalStateException("the child would not stop");
        });
        emit("registered", "terminator_id", "slow_failing");
        // THREAD_INTERRUPT: the trip interrupts this thread, which leaves the block at once;
        // leaving it reports unwound (INTERRUPTED, since the tool was cancelled) and closes.
        Thread.sleep(WAIT.toMillis());
        throw Driverlib.fail("the trip did not interrupt the work within " + WAIT.toSeconds() + "s");
      } catch (InterruptedException interrupted) {
        emit("ended", "reason", signal.getReason().orElseThrow().name());
      }
    });
  }
}
