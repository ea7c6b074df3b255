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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

  /**
   * The single_shot race (issue 27): the tripping thread descheduled between the hooks and the
   * listeners let a waiter report before a listener registered before the trip had run. Here the
   * listener holds the trip at that point on a latch, while the test looks at what a waiter
   * sees: with waiters woken before the listeners, await(0) is already true.
   */
  @Test
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  void waitersWakeOnlyAfterTheListenersRegisteredBeforeTheTrip() throws Exception {
    CancellationSource source = new CancellationSource();
    DefaultCancellationSignal signal = (DefaultCancellationSignal) source.signal();
    List<String> order = new CopyOnWriteArrayList<>();
    CountDownLatch listenerEntered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    signal.addTripHook(() -> order.add("hook"));
    signal.onCancel(() -> {
      order.add("listener");
      listenerEntered.countDown();
      Uninterruptibly.await(release, Duration.ofSeconds(10));
      order.add("listener done");
    });
    CompletableFuture<Cancellation> future = signal.whenCancelled();
    AtomicReference<List<String>> waiterSaw = new AtomicReference<>();
    Thread waiter = new Thread(() -> {
      try {
        signal.await();
        waiterSaw.set(List.copyOf(order));
      } catch (InterruptedException unexpected) {
        waiterSaw.set(List.of("interrupted"));
      }
    }, "waiter");
    waiter.start();
    Thread tripper = new Thread(() -> source.cancel(InterruptReason.USER_SIGINT), "tripper");
    tripper.start();

    assertTrue(listenerEntered.await(5, TimeUnit.SECONDS));
    // The trip is inside the listener: it reads as cancelled, its hooks have run, and no
    // waiter may have woken.
    assertTrue(signal.isCancelled());
    assertTrue(signal.awaitTrip(Duration.ZERO), "the stream's reader waits for the hooks only");
    assertFalse(signal.await(Duration.ZERO), "a waiter woke before the listener had run");
    assertFalse(future.isDone(), "whenCancelled() completed before the listener had run");
    assertTrue(waiter.isAlive());

    release.countDown();
    assertTrue(signal.await(Duration.ofSeconds(5)));
    assertEquals(List.of("hook", "listener", "listener done"), order);
    assertEquals(InterruptReason.USER_SIGINT, future.get(5, TimeUnit.SECONDS).reason());
    waiter.join(5_000);
    tripper.join(5_000);
    assertEquals(List.of("hook", "listener", "listener done"), waiterSaw.get());
  }

  @Test
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  void aListenerThatWaitsOnItsOwnSignalDoesNotDeadlock() throws Exception {
    CancellationSource source = new CancellationSource();
    CancellationSignal signal = source.signal();
    List<String> ran = new CopyOnWriteArrayList<>();
    signal.onCancel(() -> {
      try {
        // On the tripping thread: waiting for the listeners would be waiting for itself.
        ran.add("await " + signal.await().reason());
        ran.add("timed " + signal.await(Duration.ofSeconds(5)));
        ran.add("future " + signal.whenCancelled().join().reason());
        signal.onCancel(() -> ran.add("nested")); // tripped: runs at once, here
        ran.add("trip again " + source.cancel(InterruptReason.NOW_PRIORITY_INPUT));
      } catch (InterruptedException unexpected) {
        ran.add("interrupted");
      }
    });
    signal.onCancel(() -> ran.add("second"));
    assertTrue(source.cancel(InterruptReason.TASK_CANCELLED));
    assertEquals(List.of("await TASK_CANCELLED", "timed true", "future TASK_CANCELLED", "nested",
        "trip again false", "second"), ran);
  }

  @Test
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  void aListenerAddedWhileTheTripRunsRunsOnceOnItsOwnThread() throws Exception {
    CancellationSource source = new CancellationSource();
    CancellationSignal signal = source.signal();
    CountDownLatch listenerEntered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean firstDone = new AtomicBoolean();
    signal.onCancel(() -> {
      listenerEntered.countDown();
      Uninterruptibly.await(release, Duration.ofSeconds(10));
      firstDone.set(true);
    });
    Thread tripper = new Thread(() -> source.cancel(InterruptReason.USER_SIGINT), "tripper");
    tripper.start();
    assertTrue(listenerEntered.await(5, TimeUnit.SECONDS));

    AtomicInteger late = new AtomicInteger();
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    signal.onCancel(() -> {
      late.incrementAndGet();
      ranOn.set(Thread.currentThread());
    });
    // The trip had taken its listeners already: this one ran at once, here, while the
    // trip's own listener still runs.
    assertEquals(1, late.get());
    assertEquals(Thread.currentThread(), ranOn.get());
    assertFalse(firstDone.get());

    release.countDown();
    assertTrue(signal.await(Duration.ofSeconds(5)));
    assertTrue(firstDone.get());
    tripper.join(5_000);
    assertEquals(1, late.get());
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
