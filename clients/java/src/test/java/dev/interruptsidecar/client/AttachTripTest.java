package dev.interruptsidecar.client;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import interrupt.v1.Interrupt;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A THREAD_INTERRUPT tool whose cancel races the end of its attach, against {@link
 * DoorbellTest.FakeSidecar}. The trip comes from the stream's reader as the daemon's would; the
 * seams {@code ToolRun.Builder#beforePublish} (between building the run and publishing it to the
 * trip hook) and {@link DefaultCancellationSignal#afterTripped} (between the trip's state change
 * and its hooks) put it exactly where each test says, with latches: no timing.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AttachTripTest {
  private static final Duration WAIT = Duration.ofSeconds(5);

  private Path dir;
  private DoorbellTest.FakeSidecar sidecar;

  @BeforeEach
  void start() throws IOException {
    dir = Files.createTempDirectory("isc-java-attach");
    sidecar = new DoorbellTest.FakeSidecar(dir.resolve("s.sock"));
  }

  @AfterEach
  void stop() throws IOException {
    // The worker is this thread: leave no interrupt behind for whatever JUnit runs next.
    Thread.interrupted();
    sidecar.close();
    Files.deleteIfExists(dir.resolve("s.sock"));
    Files.deleteIfExists(dir);
  }

  /** A THREAD_INTERRUPT tool whose worker is the attaching thread (the default): this one. */
  private ToolRun.Builder tool() {
    return ToolRun.builder().address(sidecar.address).token("attach-token")
        .behavior(InterruptBehavior.THREAD_INTERRUPT).doorbell(false).toolName("attach-trip-test");
  }

  /** Has the fake write a cancel on the stream: the reader thread trips the signal. */
  private void sendCancel() {
    Interrupt.Cancel cancel = Interrupt.Cancel.newBuilder()
        .setReason(Interrupt.InterruptReason.INTERRUPT_REASON_USER_SIGINT).setDetail("raced").build();
    try {
      sidecar.send(Interrupt.SidecarMessage.newBuilder().setCancel(cancel).build());
    } catch (Exception failure) {
      throw new IllegalStateException("could not write the cancel", failure);
    }
  }

  @Test
  void aTripWhoseHooksRunAfterTheRunIsPublishedStillInterruptsTheWorker() {
    // The trip turns isCancelled() true (its step 1), then waits before its hooks until the run
    // is published and attach() has returned: the interleaving in which the hook, finding the
    // run, once deferred to a flag the attaching thread had already set on seeing isCancelled(),
    // and nobody interrupted the worker.
    CountDownLatch tripped = new CountDownLatch(1);
    CountDownLatch attached = new CountDownLatch(1);
    ToolRun run;
    try {
      run = tool().beforePublish(built -> {
        DefaultCancellationSignal signal = (DefaultCancellationSignal) built.signal();
        signal.afterTripped(() -> {
          tripped.countDown();
          Uninterruptibly.await(attached, WAIT);
        });
        sendCancel();
        assertTrue(Uninterruptibly.await(tripped, WAIT), "the stream's cancel started the trip");
        assertTrue(signal.isCancelled());
      }).attach();
    } finally {
      attached.countDown(); // on failure too: the reader must not stay parked in the seam
    }
    try (run) {
      DefaultCancellationSignal signal = (DefaultCancellationSignal) run.signal();
      // The hooks run before hooksRun opens; whatever they do to this thread is done by then.
      assertTrue(signal.awaitTrip(WAIT), "the trip ran its hooks");
      assertTrue(Thread.interrupted(), "the trip's hook interrupted the worker");
    }
  }

  @Test
  void aTripWhoseHooksRunBeforeTheRunIsPublishedInterruptsTheWorker() {
    // The other order: the whole trip happens while the hook cannot find the run yet, so the
    // hook interrupts the worker itself (and the shared flag keeps the run from doing it again).
    try (ToolRun run = tool().beforePublish(built -> {
      sendCancel();
      assertTrue(((DefaultCancellationSignal) built.signal()).awaitTrip(WAIT), "the trip ran its hooks");
      assertTrue(Thread.currentThread().isInterrupted(), "interrupted before the run was published");
    }).attach()) {
      assertTrue(run.signal().isCancelled());
      assertTrue(Thread.interrupted(), "still interrupted when attach() returns: the tool handles it");
      assertFalse(Thread.currentThread().isInterrupted());
    }
  }
}
