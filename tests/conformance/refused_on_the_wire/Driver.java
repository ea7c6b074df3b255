package conformance.refused_on_the_wire;

import static conformance.support.Driverlib.TOOL_NAME;
import static conformance.support.Driverlib.WAIT;
import static conformance.support.Driverlib.emit;
import static conformance.support.Driverlib.fail;

import conformance.support.Driverlib;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import interrupt.v1.Interrupt.CallbackTerminator;
import interrupt.v1.Interrupt.ChannelError;
import interrupt.v1.Interrupt.Hello;
import interrupt.v1.Interrupt.InterruptBehavior;
import interrupt.v1.Interrupt.RegisterTerminator;
import interrupt.v1.Interrupt.SidecarMessage;
import interrupt.v1.Interrupt.ToolMessage;
import interrupt.v1.Interrupt.ToolOutcome;
import interrupt.v1.Interrupt.Unwound;
import interrupt.v1.ToolChannelServiceGrpc;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * refused_on_the_wire, Java: see README.md beside this file. It speaks the protocol with the
 * generated stubs ({@code interrupt.v1}), because the client's registrar refuses these
 * registrations itself without asking the daemon.
 */
public final class Driver {
  private Driver() {}

  /** How a stream ended: {@code error} is null when the daemon ended it with OK. */
  private record Ended(Throwable error) {}

  /** One Attach stream whose answers queue up, so every read is a bounded wait. */
  private static final class Stream {
    private final BlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    private final StreamObserver<ToolMessage> requests;

    Stream(ManagedChannel channel) {
      requests = ToolChannelServiceGrpc.newStub(channel).attach(new StreamObserver<SidecarMessage>() {
        @Override
        public void onNext(SidecarMessage message) {
          answers.add(message);
        }

        @Override
        public void onError(Throwable error) {
          answers.add(new Ended(error));
        }

        @Override
        public void onCompleted() {
          answers.add(new Ended(null));
        }
      });
    }

    void send(ToolMessage message) {
      requests.onNext(message);
    }

    private Object next(String what) throws InterruptedException {
      Object next = answers.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      if (next == null) {
        throw fail("no " + what + " within " + WAIT.toSeconds() + "s");
      }
      return next;
    }

    SidecarMessage receive(String what) throws InterruptedException {
      Object next = next(what);
      if (next instanceof Ended ended) {
        throw fail("the stream ended (" + ended.error() + ") before " + what);
      }
      return (SidecarMessage) next;
    }

    void register(String terminatorId) {
      send(ToolMessage.newBuilder()
          .setRegisterTerminator(RegisterTerminator.newBuilder()
              .setTerminatorId(terminatorId)
              .setCallback(CallbackTerminator.getDefaultInstance()))
          .build());
    }

    /** The answer to registering {@code terminatorId} must be the daemon's error. */
    void expectRefusal(String terminatorId) throws InterruptedException {
      SidecarMessage answer = receive("the answer to registering " + terminatorId);
      if (answer.hasTerminatorRegistered()) {
        throw fail("the daemon accepted the registration of " + terminatorId);
      }
      if (!answer.hasError()) {
        throw fail("expected an error for " + terminatorId + ", got " + answer);
      }
      ChannelError error = answer.getError();
      emit("refused",
          "terminator_id", error.getTerminatorId(),
          "code", Status.fromCodeValue(error.getCode()).getCode().name(),
          "message", error.getMessage());
    }

    /** Half-closes the stream and waits for the daemon to end it. */
    void close() throws InterruptedException {
      requests.onCompleted();
      Object next = next("end of the stream after the half-close");
      if (!(next instanceof Ended ended)) {
        throw fail("unexpected message before the stream ended: " + next);
      }
      if (ended.error() != null) {
        throw fail("the stream ended with an error: " + ended.error());
      }
    }
  }

  private static Stream attach(ManagedChannel channel, InterruptBehavior behavior) throws InterruptedException {
    Stream stream = new Stream(channel);
    stream.send(ToolMessage.newBuilder()
        .setHello(Hello.newBuilder()
            .setAttachToken(System.getenv("INTERRUPT_SIDECAR_TOKEN"))
            .setToolName(TOOL_NAME)
            .setBehavior(behavior)
            .setPid((int) ProcessHandle.current().pid()))
        .build());
    if (!stream.receive("attached").hasAttached()) {
      throw fail("the first answer is not attached");
    }
    emit("attached", "behavior", behavior.name().replaceFirst("^INTERRUPT_BEHAVIOR_", ""));
    return stream;
  }

  /**
   * Runs the scenario.
   *
   * @param args unused
   */
  public static void main(String[] args) {
    Driverlib.main(() -> {
      ManagedChannel channel = Grpc.newChannelBuilder(
          System.getenv("INTERRUPT_SIDECAR_ADDRESS"), InsecureChannelCredentials.create()).build();
      try {
        Stream stream = attach(channel, InterruptBehavior.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE);
        stream.register("refused");
        stream.expectRefusal("refused");
        stream.close();

        stream = attach(channel, InterruptBehavior.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED);
        stream.register("accepted");
        SidecarMessage answer = stream.receive("the answer to registering accepted");
        if (!answer.hasTerminatorRegistered()) {
          throw fail("the daemon did not accept the registration of accepted: " + answer);
        }
        emit("registered", "terminator_id", answer.getTerminatorRegistered().getTerminatorId());
        // No wait in between: unwound has no answer, and the daemon reads a stream in order.
        stream.send(ToolMessage.newBuilder()
            .setUnwound(Unwound.newBuilder().setOutcome(ToolOutcome.TOOL_OUTCOME_COMPLETED))
            .build());
        stream.register("too_late");
        stream.expectRefusal("too_late");
        stream.close();
      } finally {
        channel.shutdownNow();
        channel.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      }
    });
  }
}
