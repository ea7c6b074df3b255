package dev.interruptsidecar.client;

import com.google.protobuf.Timestamp;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import interrupt.v1.Interrupt;
import interrupt.v1.ToolChannelServiceGrpc;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The client end of one tool's {@code Attach} stream: the handshake, the reader, serialized
 * writes, and the registrar's backend.
 *
 * <p>The reader (gRPC's callback thread) never runs tool code that could block it: a cancel
 * trips the signal (whose listeners must be quick), a run_terminator goes to the {@link
 * TerminatorRunner}, and answers complete futures. Writes are serialized by one lock (a gRPC
 * call's request observer is not thread-safe).
 *
 * <p>The cancel doorbell: when {@code attached} grants one, a {@link Doorbell} starts reading it
 * on its own thread. The cancel then comes twice, the doorbell's copy usually first; whichever
 * arrives first trips the signal and the other is a duplicate (the daemon sends the same
 * cancel on both, so the cancellation is the same either way). The doorbell is closed when the
 * stream ends and when the tool closes the stream.
 *
 * <p>The doorbell's head start has a cost at the run's end: at the trip the daemon writes the
 * cancel and then one {@code run_terminator} per callback terminator it holds, all on the
 * stream, so a worker woken by the doorbell can finish before those requests are read. {@link
 * #awaitRunsAsked} lets the run's end wait for them: a result reported after the half-close
 * is lost.
 */
final class ToolStream implements Backend {
  private static final System.Logger LOG = System.getLogger(ToolStream.class.getName());

  private enum Answer { REGISTERED, UNREGISTERED }

  private record Pending(Answer answer, CompletableFuture<Void> future) {}

  /** Where a cancel came from. */
  enum CancelPath { STREAM, DOORBELL }

  /** How long closing waits for the doorbell's thread (which may be running listeners) to end. */
  private static final Duration DOORBELL_JOIN = Duration.ofSeconds(1);

  private final ManagedChannel channel;
  private final String address;
  private final Duration requestTimeout;
  private final DefaultCancellationSignal signal;
  private final Consumer<String> onRunTerminator;
  private final Object writeLock = new Object();
  /** Guarded by itself. */
  private final Map<String, Deque<Pending>> pending = new HashMap<>();
  private final CompletableFuture<Interrupt.Attached> attached = new CompletableFuture<>();
  private final CountDownLatch ended = new CountDownLatch(1);
  private ClientCallStreamObserver<Interrupt.ToolMessage> requests;
  /** Why the stream ended, for requests made afterwards. */
  private volatile SidecarException endError;
  /** Set once the tool is done with the stream: its end is then expected. */
  private volatile boolean finishing;
  /** Whether hello asked for the doorbell: a grant is only taken up then. */
  private volatile boolean askedForDoorbell;
  private final Object doorbellLock = new Object();
  /** The granted doorbell, kept after it is closed. Guarded by {@link #doorbellLock}. */
  private Doorbell doorbell;
  /** Set when the stream ended or was closed: no doorbell is opened after. Guarded by {@link #doorbellLock}. */
  private boolean doorbellClosed;
  /** The path that delivered the cancel first; the other one's copy is dropped. */
  private final AtomicReference<CancelPath> cancelledBy = new AtomicReference<>();
  private final AtomicInteger cancelsHandled = new AtomicInteger();
  /** Guards {@link #callbacksHeld} and {@link #runsAsked}; notified on each run asked and at the end. */
  private final Object runs = new Object();
  /** Callback terminators the daemon acknowledged and that were not unregistered since. */
  private final Set<String> callbacksHeld = new HashSet<>();
  /** Callback terminators the daemon asked to run (and that were not unregistered since). */
  private final Set<String> runsAsked = new HashSet<>();

  /** {@code signal} is tripped by the first cancel, from the stream or the doorbell. */
  ToolStream(ManagedChannel channel, String address, Duration requestTimeout,
      DefaultCancellationSignal signal, Consumer<String> onRunTerminator) {
    this.channel = channel;
    this.address = address;
    this.requestTimeout = requestTimeout;
    this.signal = signal;
    this.onRunTerminator = onRunTerminator;
  }

  // -- handshake ---------------------------------------------------------------------------

  /** Sends hello and waits (uninterruptibly, at most {@code timeout}) for {@code attached}. */
  Interrupt.Attached attach(Interrupt.Hello hello, Duration timeout) {
    askedForDoorbell = hello.getDoorbell();
    ToolChannelServiceGrpc.newStub(channel).attach(new Reader());
    write(Interrupt.ToolMessage.newBuilder().setHello(hello).build());
    try {
      return Uninterruptibly.get(attached, timeout);
    } catch (TimeoutException late) {
      close();
      throw new DeadlineExceededException(
          "attach to the sidecar at " + address + ": no answer to hello within " + seconds(timeout), "");
    } catch (ExecutionException refused) {
      close();
      throw (SidecarException) refused.getCause();
    }
  }

  /** Waits (uninterruptibly, at most {@code timeout}) until the stream has ended. */
  boolean awaitEnd(Duration timeout) {
    return Uninterruptibly.await(ended, timeout);
  }

  boolean hasEnded() {
    return ended.getCount() == 0;
  }

  // -- reading -----------------------------------------------------------------------------

  private final class Reader
      implements ClientResponseObserver<Interrupt.ToolMessage, Interrupt.SidecarMessage> {
    @Override
    public void beforeStart(ClientCallStreamObserver<Interrupt.ToolMessage> requestStream) {
      requests = requestStream;
    }

    @Override
    public void onNext(Interrupt.SidecarMessage message) {
      dispatch(message);
    }

    @Override
    public void onError(Throwable error) {
      Status status = Status.fromThrowable(error);
      SidecarException refusal = SidecarException.fromStatus(status, "attach to the sidecar at " + address, error);
      attached.completeExceptionally(refusal);
      end(lost(status, error));
    }

    @Override
    public void onCompleted() {
      attached.completeExceptionally(
          new ConnectionLostException("attach to the sidecar at " + address + ": the daemon closed the stream"));
      end(new ConnectionLostException("the tool's stream to the sidecar at " + address + " has ended"));
    }
  }

  private SidecarException lost(Status status, Throwable cause) {
    String what = "the tool's stream to the sidecar at " + address + " ended";
    switch (status.getCode()) {
      case UNAVAILABLE:
      case CANCELLED:
      case UNKNOWN:
      case INTERNAL:
        // The daemon went away (killed, restarted) or the connection broke: not a refusal.
        ConnectionLostException lost = new ConnectionLostException(
            what + ": " + (status.getDescription() != null ? status.getDescription() : status.getCode()));
        lost.initCause(cause);
        return lost;
      default:
        return SidecarException.fromStatus(status, what, cause);
    }
  }

  private void end(SidecarException why) {
    if (endError == null) {
      endError = why;
    }
    // A refused or failed attach is thrown to the caller; only a lost run is worth a warning.
    if (!finishing && attached.isDone() && !attached.isCompletedExceptionally()) {
      LOG.log(Level.WARNING, why.getMessage());
    }
    failPending(endError);
    // The daemon hangs up the doorbell too; closing our end now frees its thread at once.
    closeDoorbell(null);
    ended.countDown();
    synchronized (runs) {
      runs.notifyAll(); // nothing more will be asked: awaitRunsAsked stops waiting
    }
  }

  private void dispatch(Interrupt.SidecarMessage message) {
    switch (message.getMessageCase()) {
      case ATTACHED:
        Interrupt.Attached answer = message.getAttached();
        if (askedForDoorbell && answer.hasDoorbell()) {
          // Before the caller wakes: an execution that already tripped rings it on connect.
          openDoorbell(answer.getDoorbell());
        }
        attached.complete(answer);
        break;
      case CANCEL:
        cancelled(cancellation(message.getCancel()), CancelPath.STREAM);
        break;
      case RUN_TERMINATOR:
        String terminatorId = message.getRunTerminator().getTerminatorId();
        // Queued with the runner before it counts as asked: once awaitRunsAsked sees it, the
        // runner's settle() must already know of the run, or the run's end could half-close
        // between the two and lose the result.
        onRunTerminator.accept(terminatorId);
        synchronized (runs) {
          runsAsked.add(terminatorId);
          runs.notifyAll();
        }
        break;
      case TERMINATOR_REGISTERED:
        resolve(message.getTerminatorRegistered().getTerminatorId(), Answer.REGISTERED, null);
        break;
      case TERMINATOR_UNREGISTERED:
        resolve(message.getTerminatorUnregistered().getTerminatorId(), Answer.UNREGISTERED, null);
        break;
      case ERROR:
        Interrupt.ChannelError refusal = message.getError();
        if (!attached.isDone()) {
          attached.completeExceptionally(
              SidecarException.forCode(refusal.getCode(), "attach refused: " + refusal.getMessage(), ""));
          return;
        }
        SidecarException error = SidecarException.forCode(
            refusal.getCode(), refusal.getMessage(), refusal.getTerminatorId());
        if (refusal.getTerminatorId().isEmpty() || !resolve(refusal.getTerminatorId(), null, error)) {
          LOG.log(Level.WARNING, "the sidecar refused a request of this tool: " + error.getMessage());
        }
        break;
      default:
        LOG.log(Level.DEBUG, "ignoring sidecar message " + message.getMessageCase());
    }
  }

  /** A cancel from either path: the first trips the signal, the second is a duplicate. */
  private void cancelled(Cancellation cancellation, CancelPath via) {
    try {
      if (cancelledBy.compareAndSet(null, via)) {
        signal.trip(cancellation);
        return;
      }
      LOG.log(Level.DEBUG, "the cancel on the " + via + " duplicates the one on the " + cancelledBy.get());
      if (via == CancelPath.STREAM) {
        // The doorbell's thread is tripping the signal (its hooks are quick): let it finish
        // before reading on, so that what follows the cancel on the stream (run_terminator)
        // finds the signal tripped, as it would without a doorbell.
        signal.awaitTrip(requestTimeout);
      }
    } finally {
      cancelsHandled.incrementAndGet();
    }
  }

  // -- the doorbell ------------------------------------------------------------------------

  private void openDoorbell(Interrupt.Doorbell grant) {
    synchronized (doorbellLock) {
      if (doorbellClosed || doorbell != null) {
        return;
      }
      doorbell = Doorbell.open(grant, cancel -> cancelled(cancel, CancelPath.DOORBELL));
    }
  }

  /** Closes the doorbell (for good) and, with a {@code wait}, waits that long for its thread. */
  private void closeDoorbell(Duration wait) {
    Doorbell open;
    synchronized (doorbellLock) {
      doorbellClosed = true;
      open = doorbell;
    }
    if (open != null) {
      if (wait == null) {
        open.close();
      } else {
        open.close(wait);
      }
    }
  }

  /** The granted doorbell, open or closed; null when none was granted (or it could not be opened). */
  Doorbell doorbell() {
    synchronized (doorbellLock) {
      return doorbell;
    }
  }

  /** Which path delivered the cancel first, once one has. */
  Optional<CancelPath> cancelPath() {
    return Optional.ofNullable(cancelledBy.get());
  }

  /** How many cancels (from both paths) have been handled: 2 once a doorbell's and the stream's both have. */
  int cancelsHandled() {
    return cancelsHandled.get();
  }

  static Cancellation cancellation(Interrupt.Cancel cancel) {
    // The daemon refuses unset reasons, so 0 (or a reason newer than this client) is not
    // expected; keep the cancel, which is what matters, under a generic reason.
    InterruptReason reason = InterruptReason.fromNumber(cancel.getReasonValue()).orElse(InterruptReason.USER_SIGINT);
    return new Cancellation(reason, cancel.getDetail(),
        cancel.hasTrippedAt() ? Optional.of(instant(cancel.getTrippedAt())) : Optional.empty(),
        cancel.hasGraceDeadline() ? Optional.of(instant(cancel.getGraceDeadline())) : Optional.empty());
  }

  static Instant instant(Timestamp timestamp) {
    return Instant.ofEpochSecond(timestamp.getSeconds(), timestamp.getNanos());
  }

  /** Settles the oldest pending request for the terminator (of kind {@code answer}; any for errors). */
  private boolean resolve(String terminatorId, Answer answer, SidecarException error) {
    Pending settled = null;
    synchronized (pending) {
      Deque<Pending> waiting = pending.get(terminatorId);
      if (waiting == null) {
        return false;
      }
      for (Iterator<Pending> it = waiting.iterator(); it.hasNext(); ) {
        Pending candidate = it.next();
        if (answer == null || candidate.answer() == answer) {
          it.remove();
          settled = candidate;
          break;
        }
      }
      if (waiting.isEmpty()) {
        pending.remove(terminatorId);
      }
    }
    if (settled == null) {
      return false;
    }
    if (error == null) {
      settled.future().complete(null);
    } else {
      settled.future().completeExceptionally(error);
    }
    return true;
  }

  private void failPending(SidecarException error) {
    synchronized (pending) {
      pending.values().forEach(waiting -> waiting.forEach(p -> p.future().completeExceptionally(error)));
      pending.clear();
    }
  }

  // -- writing -----------------------------------------------------------------------------

  private void write(Interrupt.ToolMessage message) {
    SidecarException ended = endError;
    if (ended != null) {
      throw ended;
    }
    synchronized (writeLock) {
      try {
        requests.onNext(message);
      } catch (IllegalStateException closed) {
        SidecarException why = endError;
        throw why != null ? why : new ConnectionLostException("the tool's stream to the sidecar has ended");
      }
    }
  }

  private void request(Interrupt.ToolMessage message, String terminatorId, Answer answer) {
    SidecarException ended = endError;
    if (ended != null) {
      throw ended;
    }
    Pending waiting = new Pending(answer, new CompletableFuture<>());
    synchronized (pending) {
      pending.computeIfAbsent(terminatorId, id -> new ArrayDeque<>()).add(waiting);
    }
    try {
      // The stream may have ended between the check and the enqueue: fail rather than wait.
      if (endError != null) {
        throw endError;
      }
      write(message);
      Uninterruptibly.get(waiting.future(), requestTimeout);
    } catch (TimeoutException late) {
      throw new DeadlineExceededException("the sidecar did not answer for terminator '" + terminatorId
          + "' within " + seconds(requestTimeout), terminatorId);
    } catch (ExecutionException refused) {
      throw (SidecarException) refused.getCause();
    } finally {
      synchronized (pending) {
        Deque<Pending> queue = pending.get(terminatorId);
        if (queue != null && queue.remove(waiting) && queue.isEmpty()) {
          pending.remove(terminatorId);
        }
      }
    }
  }

  @Override
  public void registerCallback(String terminatorId) {
    Interrupt.RegisterTerminator register = Interrupt.RegisterTerminator.newBuilder()
        .setTerminatorId(terminatorId)
        .setCallback(Interrupt.CallbackTerminator.getDefaultInstance())
        .build();
    request(Interrupt.ToolMessage.newBuilder().setRegisterTerminator(register).build(), terminatorId, Answer.REGISTERED);
    synchronized (runs) {
      callbacksHeld.add(terminatorId); // the daemon holds it: it will ask for it at the trip
    }
  }

  @Override
  public void registerProcessGroup(String terminatorId, int pgid, int signal, Duration killAfter) {
    Interrupt.ProcessGroupTerminator.Builder group =
        Interrupt.ProcessGroupTerminator.newBuilder().setPgid(pgid).setSignal(signal);
    if (killAfter != null) {
      group.setKillAfter(com.google.protobuf.Duration.newBuilder()
          .setSeconds(killAfter.getSeconds()).setNanos(killAfter.getNano()));
    }
    Interrupt.RegisterTerminator register = Interrupt.RegisterTerminator.newBuilder()
        .setTerminatorId(terminatorId).setProcessGroup(group).build();
    request(Interrupt.ToolMessage.newBuilder().setRegisterTerminator(register).build(), terminatorId, Answer.REGISTERED);
  }

  @Override
  public void unregister(String terminatorId) {
    Interrupt.UnregisterTerminator unregister =
        Interrupt.UnregisterTerminator.newBuilder().setTerminatorId(terminatorId).build();
    request(Interrupt.ToolMessage.newBuilder().setUnregisterTerminator(unregister).build(), terminatorId,
        Answer.UNREGISTERED);
    // A run asked for before the unregistration has been read already (the stream keeps the
    // daemon's order); a later registration under the same id is asked for anew.
    synchronized (runs) {
      callbacksHeld.remove(terminatorId);
      runsAsked.remove(terminatorId);
    }
  }

  /**
   * After the trip: waits (uninterruptibly, at most {@code timeout}) until the daemon has asked
   * to run every callback terminator it holds for this tool, or the stream has ended.
   *
   * <p>The daemon asks for each of them at the trip, after the cancel, on this stream. The
   * doorbell's copy of the cancel comes ahead of all that: a worker it interrupts can reach
   * the end of its run before those requests are read, and once the tool half-closes their
   * results could no longer be reported.
   *
   * @return false when the timeout passed first
   */
  boolean awaitRunsAsked(Duration timeout) {
    return Uninterruptibly.waitFor(runs, () -> runsAsked.containsAll(callbacksHeld) || hasEnded(), timeout);
  }

  /** Tells the daemon how a callback terminator went (best-effort once the run is over). */
  void reportResult(String terminatorId, String error) {
    Interrupt.TerminatorResult result =
        Interrupt.TerminatorResult.newBuilder().setTerminatorId(terminatorId).setError(error).build();
    try {
      write(Interrupt.ToolMessage.newBuilder().setTerminatorResult(result).build());
    } catch (SidecarException failure) {
      LOG.log(Level.DEBUG, "could not report the result of terminator " + terminatorId + ": " + failure.getMessage());
    }
  }

  // -- the end -----------------------------------------------------------------------------

  /** Reports unwound; the stream stays open (run_terminator messages already sent still run). */
  void unwound(ToolOutcome outcome, String detail) {
    Interrupt.Unwound unwound = Interrupt.Unwound.newBuilder()
        .setOutcomeValue(outcome.number()).setDetail(detail).build();
    write(Interrupt.ToolMessage.newBuilder().setUnwound(unwound).build());
  }

  /** Half-closes, gives the daemon {@code timeout} to end the stream, then closes. */
  void finish(Duration timeout) {
    finishing = true;
    try {
      if (endError == null) {
        synchronized (writeLock) {
          requests.onCompleted();
        }
        // Cancelling the call at once could drop the unwound on the daemon's side: let it
        // read everything and end the stream itself.
        if (!awaitEnd(timeout)) {
          LOG.log(Level.DEBUG, "the sidecar did not end the tool stream within " + seconds(timeout));
        }
      }
    } catch (IllegalStateException alreadyClosed) {
      LOG.log(Level.DEBUG, "the tool stream was already closed");
    } finally {
      close();
    }
  }

  /** Drops the stream and the channel. Idempotent. */
  void close() {
    finishing = true;
    if (requests != null && !hasEnded()) {
      requests.cancel("the tool closed its stream", null);
    }
    failPending(new ConnectionLostException("the tool's stream to the sidecar was closed"));
    closeDoorbell(DOORBELL_JOIN);
    channel.shutdownNow();
  }

  private static String seconds(Duration duration) {
    return duration.toMillis() / 1000.0 + "s";
  }
}
