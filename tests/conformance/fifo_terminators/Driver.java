package conformance.fifo_terminators;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.await;
import static conformance.support.Driverlib.emit;

import conformance.support.Driverlib;
import dev.interruptsidecar.client.InterruptBehavior;
import dev.interruptsidecar.client.ToolOutcome;
import dev.interruptsidecar.client.ToolRun;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/** fifo_terminators, Java: see README.md beside this file. */
public final class Driver {
  private Driver() {}

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      List<String> ids = List.of("first", "second", "third");
      try (ToolRun run = ToolRun.attach(InterruptBehavior.THREAD_INTERRUPT, TOOL_NAME)) {
        List<String> order = new CopyOnWriteArrayList<>();
        CountDownLatch allRan = new CountDownLatch(ids.size());
        for (String id : ids) {
          // register() returns once the daemon acknowledged it.
          run.registrar().register(id, () -> {
            order.add(id);
            allRan.countDown();
          });
        }
        emit("registered", "terminator_ids", ids);
        await(allRan, "all three terminators");
        emit("terminators_ran", "order", List.copyOf(order));
        Thread.interrupted(); // the THREAD_INTERRUPT interrupt of this worker, handled
        run.unwind(ToolOutcome.INTERRUPTED);
      }
    });
  }
}
