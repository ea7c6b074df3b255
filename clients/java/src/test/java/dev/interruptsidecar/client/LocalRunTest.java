package dev.interruptsidecar.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Runs without a daemon: no-op mode, and an in-process CancellationSource. */
class LocalRunTest {

  @Test
  void withoutATokenTheRunIsANoOp() {
    assumeTrue(System.getenv(SidecarAddress.TOKEN_ENV) == null, "INTERRUPT_SIDECAR_TOKEN is set");
    try (ToolRun run = ToolRun.attach(InterruptBehavior.EXTERNALLY_TERMINATED, "noop")) {
      assertFalse(run.isAttached());
      assertSame(NoopCancellationSignal.INSTANCE, run.signal());
      assertTrue(run.executionId().isEmpty());
      TerminatorRegistration registration = run.registrar().register(() -> {
        throw new AssertionError("never runs in no-op mode");
      });
      assertEquals(TerminatorRegistration.Kind.CALLBACK, registration.kind());
      run.registrar().unregister(registration.terminatorId());
      run.registrar().unregister(registration.terminatorId()); // idempotent
    }
    try (ToolRun run = ToolRun.attach(InterruptBehavior.COOPERATIVE)) {
      assertThrows(FailedPreconditionException.class, () -> run.registrar().register(() -> { }));
      assertTrue(InterruptAccess.registrarOf(run).isEmpty());
    }
    assertSame(NoopCancellationSignal.INSTANCE, InterruptAccess.signalOf(null));
  }

  @Test
  void terminatorsRunOnceInOrderAtTheTripAndAtOnceAfterIt() throws Exception {
    CancellationSource source = new CancellationSource();
    List<String> ran = new CopyOnWriteArrayList<>();
    CountDownLatch all = new CountDownLatch(4);
    try (ToolRun run = ToolRun.builder().behavior(InterruptBehavior.THREAD_INTERRUPT).source(source)
        .interruptWorker(false).attach()) {
      for (String id : List.of("a", "b", "c")) {
        run.registrar().register(id, () -> {
          ran.add(id);
          all.countDown();
        });
      }
      assertThrows(AlreadyExistsException.class, () -> run.registrar().register("a", () -> { }));
      run.registrar().register("gone", () -> ran.add("gone"));
      run.registrar().unregister("gone");
      assertThrows(FailedPreconditionException.class, () -> run.registrar().registerProcessGroup(4242));

      source.cancel(InterruptReason.USER_SIGINT);
      run.registrar().register("late", () -> {
        ran.add("late");
        all.countDown();
      });
      assertTrue(all.await(5, TimeUnit.SECONDS));
      assertEquals(List.of("a", "b", "c", "late"), ran);

      run.unwind(ToolOutcome.INTERRUPTED);
      assertThrows(FailedPreconditionException.class, () -> run.registrar().register(() -> { }));
    }
  }

  @Test
  void threadInterruptInterruptsTheWorkerAtTheTrip() {
    CancellationSource source = new CancellationSource();
    try (ToolRun run = ToolRun.builder().behavior(InterruptBehavior.THREAD_INTERRUPT).source(source).attach()) {
      CompletableFutureTimer.after(Duration.ofMillis(50), () -> source.cancel(InterruptReason.NOW_PRIORITY_INPUT));
      InterruptedException interrupted = assertThrows(InterruptedException.class, () -> Thread.sleep(10_000));
      assertTrue(interrupted != null && run.signal().isCancelled());
      assertEquals(InterruptReason.NOW_PRIORITY_INPUT, run.signal().getReason().orElseThrow());
    }
    assertFalse(Thread.interrupted(), "the interrupt was consumed by the sleep");
  }

  @Test
  void attachingAfterTheTripInterruptsTheWorkerAtOnce() {
    CancellationSource source = new CancellationSource();
    source.cancel(InterruptReason.TASK_CANCELLED);
    try (ToolRun run = ToolRun.builder().behavior(InterruptBehavior.THREAD_INTERRUPT).source(source).attach()) {
      assertTrue(Thread.interrupted());
      assertTrue(run.signal().isCancelled());
    }
  }

  @Test
  void callDerivesTheOutcomeFromHowTheToolEnded() throws Exception {
    CancellationSource source = new CancellationSource();
    source.cancel(InterruptReason.USER_SIGINT);
    ToolRun.Builder builder = ToolRun.builder().behavior(InterruptBehavior.COOPERATIVE).source(source);
    assertThrows(CancelledExecutionException.class, () -> builder.call(run -> {
      run.signal().checkpoint();
      return "unreachable";
    }));
    assertEquals("done", builder.call(run -> "done"));
  }

  /** A tiny timer for tests. */
  static final class CompletableFutureTimer {
    private CompletableFutureTimer() {}

    static void after(Duration delay, Runnable action) {
      java.util.concurrent.CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS).execute(action);
    }
  }
}
