package conformance.process_group;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.WAIT;
import static conformance.support.Driverlib.awaitCancel;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ManagedProcess;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;
import java.util.concurrent.TimeUnit;

/** process_group, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      try (ToolRun run = ToolRun.attach(InterruptBehavior.EXTERNALLY_TERMINATED, TOOL_NAME)) {
        try (ManagedProcess child = run.registrar().startProcess(new ProcessBuilder("sleep", "300"))) {
          emit("started", "pid", child.pid(), "pgid", child.pgid());
          awaitCancel(run.signal(), "the cancel");
          emit("cancelled", "reason", run.signal().getReason().orElseThrow().name());
          // The daemon kills the group; this tool does not signal the child.
          if (!child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw Driverlib.fail("the child " + child.pid() + " was still running " + WAIT.toSeconds()
                + "s after the cancel");
          }
          emit("child_exited");
        }
        run.unwind(ToolOutcome.INTERRUPTED);
      }
    });
  }
}
