package dev.interruptsidecar.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import interrupt.v1.Interrupt;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Against the real daemon ({@code .venv/bin/interrupt-sidecar} of the repository, or the
 * {@code interruptSidecar.daemon} property) on a private unix socket. Skipped when the
 * daemon is not installed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DaemonTest {
  private static Process daemon;
  private static Path socketDir;
  private static String address;
  private static Coordinator coordinator;

  @BeforeAll
  static void startDaemon() throws IOException, InterruptedException {
    assumeTrue(!Boolean.getBoolean("interruptSidecar.skipDaemonTests"), "daemon tests skipped");
    String configured = System.getProperty("interruptSidecar.daemon", "");
    Path executable = configured.isEmpty()
        ? Path.of("").toAbsolutePath().resolve("../../.venv/bin/interrupt-sidecar").normalize() : Path.of(configured);
    assumeTrue(Files.isExecutable(executable), "no daemon at " + executable + " (make install-test)");
    socketDir = Files.createTempDirectory("isc-java-test");
    address = "unix://" + socketDir.resolve("s.sock");
    daemon = new ProcessBuilder(executable.toString(), "serve", "--listen", address, "--metrics-listen", "")
        .redirectError(Path.of("target", "daemon-test.log").toFile()).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(daemon.getInputStream(), StandardCharsets.UTF_8));
    String ready = out.readLine();
    assertTrue(ready != null && ready.startsWith("ready "), "daemon said: " + ready);
    coordinator = new Coordinator(address);
  }

  @AfterAll
  static void stopDaemon() throws InterruptedException {
    if (coordinator != null) {
      coordinator.close();
    }
    if (daemon != null) {
      daemon.destroy();
      daemon.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private static ToolRun.Builder tool(Coordinator.BegunExecution execution, InterruptBehavior behavior) {
    return ToolRun.builder().address(address).token(execution.attachToken()).behavior(behavior).toolName("java-test");
  }

  @Test
  void aCooperativeToolIsSentTheCancelAndTheDaemonSeesItUnwind() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    Iterator<Interrupt.ExecutionEvent> events = coordinator.watch(turn.executionId());
    try (ToolRun run = tool(turn, InterruptBehavior.COOPERATIVE).attach()) {
      assertTrue(run.isAttached());
      assertEquals(turn.executionId(), run.executionId().orElseThrow());
      assertFalse(run.signal().isCancelled());
      Coordinator.InterruptOutcome first = coordinator.interrupt(turn.executionId(), InterruptReason.USER_SIGINT, "why");
      assertTrue(first.tripped());
      assertTrue(run.signal().await(Duration.ofSeconds(5)));
      assertEquals("why", run.signal().getDetail());
      assertTrue(run.signal().getCancellation().orElseThrow().graceDeadline().isPresent());
      Coordinator.InterruptOutcome second =
          coordinator.interrupt(turn.executionId(), InterruptReason.NOW_PRIORITY_INPUT, "");
      assertFalse(second.tripped());
      assertEquals(InterruptReason.USER_SIGINT, second.reason().orElseThrow());
    }
    boolean unwound = false;
    while (!unwound && events.hasNext()) {
      Interrupt.ExecutionEvent event = events.next();
      if (event.hasToolUnwound()) {
        assertEquals(Interrupt.ToolOutcome.TOOL_OUTCOME_INTERRUPTED, event.getToolUnwound().getOutcome());
        unwound = true;
      }
    }
    assertTrue(unwound);
    assertTrue(coordinator.end(turn.executionId()).ended());
  }

  @Test
  void theDaemonRefusesWhatTheBehaviourForbidsAndWhatComesAfterTheRun() {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    try (ToolRun run = tool(turn, InterruptBehavior.THREAD_INTERRUPT).interruptWorker(false).attach()) {
      run.registrar().register("one", () -> { });
      // Skip the client's own check: ask the daemon itself for a process group.
      Registrar registrar = (Registrar) run.registrar();
      assertThrows(FailedPreconditionException.class,
          () -> ((Backend) extractBackend(registrar)).registerProcessGroup("pg", 4242, 15, null));
      run.unwind(ToolOutcome.COMPLETED);
      assertThrows(FailedPreconditionException.class, () -> run.registrar().register("two", () -> { }));
    }
    coordinator.end(turn.executionId());
  }

  private static Object extractBackend(Registrar registrar) {
    try {
      java.lang.reflect.Field field = Registrar.class.getDeclaredField("backend");
      field.setAccessible(true);
      return field.get(registrar);
    } catch (ReflectiveOperationException impossible) {
      throw new AssertionError(impossible);
    }
  }

  @Test
  void callbackTerminatorsRunOnTheTripAndAfterIt() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    try (ToolRun run = tool(turn, InterruptBehavior.THREAD_INTERRUPT).attach()) {
      CountDownLatch ran = new CountDownLatch(2);
      run.registrar().register("before", ran::countDown);
      // The interrupt comes from another thread, as from an agent: the trip interrupts this
      // (the registering) thread, which would otherwise race the Interrupt call's own answer.
      Thread agent = new Thread(
          () -> coordinator.interrupt(turn.executionId(), InterruptReason.TASK_CANCELLED, ""));
      agent.start();
      assertThrows(InterruptedException.class, () -> Thread.sleep(10_000), "the worker is interrupted");
      agent.join(5_000);
      run.registrar().register("after", ran::countDown);
      assertTrue(ran.await(5, TimeUnit.SECONDS));
    }
    coordinator.end(turn.executionId());
  }

  @Test
  void theDaemonKillsAProcessGroupStartedByTheHelper() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(
        new Coordinator.BeginOptions(null, null, null, Duration.ofMillis(200), null, null, null));
    try (ToolRun run = tool(turn, InterruptBehavior.EXTERNALLY_TERMINATED).attach();
        ManagedProcess child = run.registrar().startProcess(
            new ProcessBuilder("sh", "-c", "trap '' TERM; sleep 300 & wait"))) {
      assertEquals(child.pid(), ProcessGroups.pgid(child.pid()).orElseThrow());
      assertEquals(TerminatorRegistration.Kind.PROCESS_GROUP, child.registration().orElseThrow().kind());
      coordinator.interrupt(turn.executionId(), InterruptReason.USER_SIGINT, "");
      // The shell ignores SIGTERM: the SIGKILL after kill_after (the 200 ms grace) ends it.
      assertTrue(child.waitFor(10, TimeUnit.SECONDS));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!ProcessGroups.members(child.pgid()).isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertTrue(ProcessGroups.members(child.pgid()).isEmpty(), "the whole group is gone");
    }
    coordinator.end(turn.executionId());
  }

  @Test
  void refusedAttachesMapToTheirStatus() {
    assertThrows(UnauthenticatedException.class, () -> ToolRun.builder().address(address).token("").attach());
    assertThrows(SidecarException.class, () -> ToolRun.builder().address(address).token("nonsense").attach());
    String nowhere = "unix://" + socketDir.resolve("nobody.sock");
    UnavailableException unavailable = assertThrows(UnavailableException.class,
        () -> ToolRun.builder().address(nowhere).token("x").timeout(Duration.ofSeconds(5)).attach());
    assertEquals(io.grpc.Status.Code.UNAVAILABLE, unavailable.code());
  }

  @Test
  void aToolAttachingAfterTheTripStartsCancelled() {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    coordinator.interrupt(turn.executionId(), InterruptReason.BUDGET_EXCEEDED, "late");
    try (ToolRun run = tool(turn, InterruptBehavior.COOPERATIVE).attach()) {
      assertTrue(run.signal().isCancelled());
      assertEquals(InterruptReason.BUDGET_EXCEEDED, run.signal().getReason().orElseThrow());
      assertEquals("late", run.signal().getDetail());
    }
    try (ToolRun run = tool(turn, InterruptBehavior.NON_INTERRUPTIBLE).attach()) {
      assertTrue(run.signal().isCancelled(), "sees the state it attached in");
    }
    coordinator.end(turn.executionId());
  }

  private static void poll(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
      Thread.sleep(5);
    }
  }

  @Test
  void overAUnixSocketTheDoorbellRingsTheCancelAndItCountsOnce() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    Doorbell doorbell;
    try (ToolRun run = tool(turn, InterruptBehavior.COOPERATIVE).attach()) {
      // Granted: hello asked for it (a unix address, a behaviour sent the cancel).
      doorbell = run.stream().doorbell();
      assertNotNull(doorbell, "the daemon granted a doorbell");
      AtomicInteger listenerRuns = new AtomicInteger();
      run.signal().onCancel(listenerRuns::incrementAndGet);
      coordinator.interrupt(turn.executionId(), InterruptReason.USER_SIGINT, "rung");
      assertTrue(run.signal().await(Duration.ofSeconds(5)));
      // The daemon writes the same cancel on the doorbell and on the stream: both arrive, one counts.
      poll(() -> run.stream().cancelsHandled() == 2, "the doorbell's and the stream's cancels were handled");
      assertTrue(doorbell.rang(), "the doorbell carried a cancel");
      assertEquals(1, listenerRuns.get());
      Cancellation cancellation = run.signal().getCancellation().orElseThrow();
      assertEquals(InterruptReason.USER_SIGINT, cancellation.reason());
      assertEquals("rung", cancellation.detail());
      assertEquals(coordinator.get(turn.executionId()).trippedAt(), cancellation.trippedAt());
      assertTrue(cancellation.graceDeadline().orElseThrow().isAfter(cancellation.trippedAt().orElseThrow()));
      assertTrue(run.stream().cancelPath().isPresent());
    }
    assertFalse(doorbell.isOpen());
    assertFalse(doorbell.thread().isAlive());
    coordinator.end(turn.executionId());
  }

  @Test
  void aDoorbellOfAnExecutionTrippedBeforeAttachRingsAtOnceAndCountsOnce() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    coordinator.interrupt(turn.executionId(), InterruptReason.BUDGET_EXCEEDED, "late");
    Doorbell doorbell;
    try (ToolRun run = tool(turn, InterruptBehavior.THREAD_INTERRUPT).interruptWorker(false).attach()) {
      doorbell = run.stream().doorbell();
      assertNotNull(doorbell);
      assertEquals("late", run.signal().getDetail(), "the full cancel, not just attached's reason");
      AtomicInteger listenerRuns = new AtomicInteger();
      run.signal().onCancel(listenerRuns::incrementAndGet);
      poll(() -> run.stream().cancelsHandled() == 2, "the doorbell's and the stream's cancels were handled");
      assertTrue(doorbell.rang(), "rung on connect");
      assertEquals(1, listenerRuns.get());
      assertEquals(InterruptReason.BUDGET_EXCEEDED, run.signal().getReason().orElseThrow());
      assertEquals("late", run.signal().getDetail());
    }
    assertFalse(doorbell.isOpen());
    coordinator.end(turn.executionId());
  }

  @Test
  void aToolThatOptsOutGetsNoDoorbellAndTheStreamsCancel() throws Exception {
    Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
    try (ToolRun run = tool(turn, InterruptBehavior.COOPERATIVE).doorbell(false).attach()) {
      assertNull(run.stream().doorbell(), "not asked, not granted");
      coordinator.interrupt(turn.executionId(), InterruptReason.USER_SIGINT, "");
      assertTrue(run.signal().await(Duration.ofSeconds(5)));
      assertEquals(ToolStream.CancelPath.STREAM, run.stream().cancelPath().orElseThrow());
      // The counter moves after the signal's hooks have run, so the awaiting thread can get
      // here first: wait for it rather than read it once. (With no doorbell there is no
      // second copy, so the count never passes 1 on the way.)
      poll(() -> run.stream().cancelsHandled() == 1, "the stream's cancel was handled");
    }
    try (ToolRun run = tool(turn, InterruptBehavior.NON_INTERRUPTIBLE).attach()) {
      assertNull(run.stream().doorbell(), "a tool never sent the cancel has no use for one");
    }
    coordinator.end(turn.executionId());
  }
}
