package dev.interruptsidecar.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CancellationSignalTest {

  @Test
  void tripsOnceAndKeepsTheFirstReason() {
    CancellationSource source = new CancellationSource();
    CancellationSignal signal = source.signal();
    assertFalse(signal.isCancelled());
    assertEquals(Optional.empty(), signal.getReason());
    signal.checkpoint();

    assertTrue(source.cancel(InterruptReason.USER_SIGINT, "Ctrl+C"));
    assertFalse(source.cancel(InterruptReason.NOW_PRIORITY_INPUT, "later"));

    assertTrue(signal.isCancelled());
    assertEquals(Optional.of(InterruptReason.USER_SIGINT), signal.getReason());
    assertEquals("Ctrl+C", signal.getDetail());
    CancelledExecutionException thrown = assertThrows(CancelledExecutionException.class, signal::checkpoint);
    assertEquals(InterruptReason.USER_SIGINT, thrown.getReason());
    assertEquals("Ctrl+C", thrown.getDetail());
    assertEquals("execution cancelled: USER_SIGINT (Ctrl+C)", thrown.getMessage());
    assertFalse(SidecarException.class.isAssignableFrom(CancelledExecutionException.class));
  }

  @Test
  void listenersRunOnceInRegistrationOrderAndAFailingOneStopsNoOther() {
    CancellationSource source = new CancellationSource();
    List<String> ran = new CopyOnWriteArrayList<>();
    source.signal().onCancel(() -> ran.add("first"));
    source.signal().onCancel(() -> {
      throw new IllegalStateException("listener bug");
    });
    source.signal().onCancel(() -> ran.add("third"));
    source.cancel(InterruptReason.TASK_CANCELLED);
    source.cancel(InterruptReason.TASK_CANCELLED);
    assertEquals(List.of("first", "third"), ran);

    // Registered after the trip: runs at once, on this thread.
    Thread caller = Thread.currentThread();
    source.signal().onCancel(() -> ran.add(Thread.currentThread() == caller ? "late-here" : "late-elsewhere"));
    assertEquals(List.of("first", "third", "late-here"), ran);
  }

  @Test
  void awaitIsAnInterruptibleSleepThatEndsAtTheTrip() throws Exception {
    CancellationSource source = new CancellationSource();
    assertFalse(source.signal().await(Duration.ofMillis(20)));
    CompletableFuture<Cancellation> future = source.signal().whenCancelled();
    CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS)
        .execute(() -> source.cancel(InterruptReason.BUDGET_EXCEEDED));
    assertTrue(source.signal().await(Duration.ofSeconds(5)));
    assertEquals(InterruptReason.BUDGET_EXCEEDED, future.get(1, TimeUnit.SECONDS).reason());
    assertEquals(InterruptReason.BUDGET_EXCEEDED, source.signal().await().reason());
  }

  @Test
  void theNoopSignalIsNeverCancelled() throws Exception {
    CancellationSignal noop = NoopCancellationSignal.INSTANCE;
    noop.onCancel(() -> {
      throw new AssertionError("a no-op signal never runs listeners");
    });
    noop.checkpoint();
    assertFalse(noop.isCancelled());
    assertFalse(noop.await(Duration.ofMillis(5)));
    assertEquals("", noop.getDetail());
    assertFalse(noop.whenCancelled().isDone());
  }

  @Test
  void reasonsAndBehavioursCarryTheWireNumbers() {
    assertEquals(1, InterruptReason.USER_SIGINT.number());
    assertEquals(9, InterruptReason.HOLDER_LOST.number());
    assertEquals(Optional.of(InterruptReason.LEASE_LOST), InterruptReason.fromNumber(7));
    assertEquals(Optional.empty(), InterruptReason.fromNumber(0));
    assertEquals(4, InterruptBehavior.EXTERNALLY_TERMINATED.number());
    assertFalse(InterruptBehavior.NON_INTERRUPTIBLE.receivesCancel());
    assertFalse(InterruptBehavior.COOPERATIVE.mayRegisterCallbacks());
    assertTrue(InterruptBehavior.THREAD_INTERRUPT.mayRegisterCallbacks());
    assertFalse(InterruptBehavior.THREAD_INTERRUPT.mayRegisterProcessGroups());
  }

  @Test
  void statusCodesMapToTheirExceptions() {
    assertTrue(SidecarException.forCode(9, "no", "t") instanceof FailedPreconditionException);
    assertEquals("t", SidecarException.forCode(9, "no", "t").terminatorId());
    assertTrue(SidecarException.forCode(14, "gone", "") instanceof UnavailableException);
    assertTrue(SidecarException.forCode(16, "who", "") instanceof UnauthenticatedException);
    assertTrue(new ConnectionLostException("ended") instanceof UnavailableException);
    SidecarException unknown = SidecarException.forCode(99, "odd", "");
    assertEquals(io.grpc.Status.Code.UNKNOWN, unknown.code());
    assertTrue(unknown.getMessage().contains("[status 99]"));
  }
}
