package dev.interruptsidecar.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Timestamp;
import interrupt.v1.Interrupt;
import interrupt.v1.ToolChannelServiceGrpc;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The cancel doorbell against a fake daemon: a gRPC server on a private unix socket that
 * answers hello as each test says and writes on the stream only when told, beside a doorbell
 * socket the test drives by hand. What the real daemon does is covered in {@link DaemonTest}.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DoorbellTest {
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static final String TOKEN = "0123456789abcdef0123456789abcdef";

  private Path dir;
  private FakeSidecar sidecar;
  private ServerSocketChannel doorbellServer;
  private Path doorbellPath;
  private final ExecutorService background = Executors.newCachedThreadPool(runnable -> {
    Thread thread = new Thread(runnable, "doorbell-test");
    thread.setDaemon(true);
    return thread;
  });

  @BeforeEach
  void start() throws IOException {
    dir = Files.createTempDirectory("isc-java-doorbell");
    sidecar = new FakeSidecar(dir.resolve("s.sock"));
    doorbellPath = dir.resolve("s.sock.doorbell");
    doorbellServer = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    doorbellServer.bind(UnixDomainSocketAddress.of(doorbellPath));
  }

  @AfterEach
  void stop() throws IOException {
    background.shutdownNow();
    doorbellServer.close();
    sidecar.close();
    Files.deleteIfExists(doorbellPath);
    Files.deleteIfExists(dir.resolve("s.sock"));
    Files.deleteIfExists(dir);
  }

  private ToolRun.Builder tool(InterruptBehavior behavior) {
    return ToolRun.builder().address(sidecar.address).token("attach-token").behavior(behavior).toolName("doorbell-test");
  }

  private static Interrupt.Doorbell grant(Path path) {
    return Interrupt.Doorbell.newBuilder().setPath(path.toString()).setToken(TOKEN).build();
  }

  private static Interrupt.Cancel cancel(String detail) {
    return Interrupt.Cancel.newBuilder()
        .setReason(Interrupt.InterruptReason.INTERRUPT_REASON_BUDGET_EXCEEDED)
        .setDetail(detail)
        .setTrippedAt(Timestamp.newBuilder().setSeconds(1_700_000_000).setNanos(123_000_000))
        .setGraceDeadline(Timestamp.newBuilder().setSeconds(1_700_000_000).setNanos(623_000_000))
        .build();
  }

  private static Cancellation expected(String detail) {
    return new Cancellation(InterruptReason.BUDGET_EXCEEDED, detail,
        Optional.of(Instant.ofEpochSecond(1_700_000_000, 123_000_000)),
        Optional.of(Instant.ofEpochSecond(1_700_000_000, 623_000_000)));
  }

  private static byte[] frame(Interrupt.Cancel cancel) {
    byte[] body = cancel.toByteArray();
    return ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body).array();
  }

  /** Accepts the tool's doorbell connection and checks that it proves the granted token. */
  private SocketChannel acceptDoorbell() throws Exception {
    SocketChannel connection = CompletableFuture.supplyAsync(() -> {
      try {
        return doorbellServer.accept();
      } catch (IOException failure) {
        throw new IllegalStateException(failure);
      }
    }, background).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    ByteBuffer token = ByteBuffer.allocate(TOKEN.length());
    while (token.hasRemaining()) {
      assertTrue(connection.read(token) >= 0, "the tool hung up before writing its token");
    }
    assertEquals(TOKEN, new String(token.array(), StandardCharsets.US_ASCII));
    return connection;
  }

  /** Waits (at most {@link #WAIT}) for the tool to hang up its doorbell: true on EOF. */
  private boolean hungUp(SocketChannel connection) throws Exception {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return connection.read(ByteBuffer.allocate(1)) < 0;
      } catch (IOException reset) {
        return true;
      }
    }, background).get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static void write(SocketChannel connection, byte[] bytes) throws IOException {
    ByteBuffer out = ByteBuffer.wrap(bytes);
    while (out.hasRemaining()) {
      connection.write(out);
    }
  }

  private static void poll(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
      Thread.sleep(5);
    }
  }

  @Test
  void aCancelRungOnTheDoorbellAloneTripsTheRunOnce() throws Exception {
    // The fake never writes a cancel on the stream until told: only the doorbell can trip it.
    sidecar.grant = grant(doorbellPath);
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).attach()) {
      assertTrue(sidecar.hellos.poll(WAIT.toSeconds(), TimeUnit.SECONDS).getDoorbell(), "hello asks for the doorbell");
      AtomicInteger listenerRuns = new AtomicInteger();
      run.signal().onCancel(listenerRuns::incrementAndGet);
      SocketChannel connection = acceptDoorbell();
      write(connection, frame(cancel("rung")));

      assertTrue(run.signal().await(WAIT));
      assertEquals(expected("rung"), run.signal().getCancellation().orElseThrow());
      assertEquals(Optional.of(ToolStream.CancelPath.DOORBELL), run.stream().cancelPath());
      assertTrue(run.stream().doorbell().rang());
      // The client hangs up once it has the frame: nothing else is ever written there.
      assertTrue(hungUp(connection));

      // The stream's copy (the daemon always sends it) is a duplicate.
      sidecar.send(Interrupt.SidecarMessage.newBuilder().setCancel(cancel("rung")).build());
      poll(() -> run.stream().cancelsHandled() == 2, "the stream's cancel was handled");
      assertEquals(1, listenerRuns.get());
      assertEquals(expected("rung"), run.signal().getCancellation().orElseThrow());
      assertEquals(Optional.of(ToolStream.CancelPath.DOORBELL), run.stream().cancelPath());
    }
  }

  @Test
  void aDoorbellRungAfterTheStreamsCancelIsADuplicate() throws Exception {
    sidecar.grant = grant(doorbellPath);
    try (ToolRun run = tool(InterruptBehavior.THREAD_INTERRUPT).interruptWorker(false).attach()) {
      AtomicInteger listenerRuns = new AtomicInteger();
      run.signal().onCancel(listenerRuns::incrementAndGet);
      SocketChannel connection = acceptDoorbell();
      sidecar.send(Interrupt.SidecarMessage.newBuilder().setCancel(cancel("streamed")).build());
      assertTrue(run.signal().await(WAIT));
      assertEquals(Optional.of(ToolStream.CancelPath.STREAM), run.stream().cancelPath());

      write(connection, frame(cancel("streamed")));
      poll(() -> run.stream().cancelsHandled() == 2, "the doorbell's cancel was handled");
      assertEquals(1, listenerRuns.get());
      assertEquals(expected("streamed"), run.signal().getCancellation().orElseThrow());
    }
  }

  @Test
  void aRunAskedForAfterTheWorkEndedIsReportedBeforeTheHalfClose() throws Exception {
    // The race of a doorbell cancel: the worker it wakes ends the run (unwound, close) before
    // the stream's run_terminator has been read. Here the fake asks for the run only once it
    // has read the tool's unwound, and the terminator is still running when close() is called:
    // its result must still be written before the half-close.
    sidecar.grant = grant(doorbellPath);
    sidecar.askAfterUnwound = "slow";
    ToolRun run = tool(InterruptBehavior.THREAD_INTERRUPT).interruptWorker(false).attach();
    try {
      run.registrar().register("slow", () -> {
        // Waits for the half-close (bounded): a client that does not wait for this result
        // half-closes first, and the result can no longer be written.
        sidecar.halfClosed.await(100, TimeUnit.MILLISECONDS);
        throw new IllegalStateException("the child would not stop");
      });
      SocketChannel connection = acceptDoorbell();
      write(connection, frame(cancel("rung")));
      assertTrue(run.signal().await(WAIT));
      assertEquals(Optional.of(ToolStream.CancelPath.DOORBELL), run.stream().cancelPath());
      run.close(); // the work ended the moment the cancel reached it
      assertTrue(sidecar.halfClosed.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the tool half-closed");
    } finally {
      run.close(); // idempotent
    }
    assertEquals(List.of("register_terminator slow", "unwound TOOL_OUTCOME_INTERRUPTED",
        "terminator_result slow IllegalStateException: the child would not stop", "half-close"), sidecar.received());
  }

  @Test
  void aDoorbellThatNeverRingsIsClosedWhenTheRunEnds() throws Exception {
    sidecar.grant = grant(doorbellPath);
    Doorbell doorbell;
    SocketChannel connection;
    try (ToolRun run = tool(InterruptBehavior.EXTERNALLY_TERMINATED).attach()) {
      connection = acceptDoorbell();
      doorbell = run.stream().doorbell();
      assertNotNull(doorbell);
      assertTrue(doorbell.isOpen());
      assertTrue(doorbell.thread().isAlive(), "blocked reading the doorbell");
    }
    assertFalse(doorbell.isOpen());
    assertFalse(doorbell.thread().isAlive(), "close() waits for the doorbell's thread");
    assertTrue(hungUp(connection));
  }

  @Test
  void theDoorbellIsClosedWhenTheStreamEnds() throws Exception {
    sidecar.grant = grant(doorbellPath);
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).attach()) {
      SocketChannel connection = acceptDoorbell();
      sidecar.endStream();
      assertTrue(run.stream().awaitEnd(WAIT));
      assertTrue(hungUp(connection));
      assertFalse(run.stream().doorbell().isOpen());
      assertFalse(run.signal().isCancelled(), "a lost stream is no cancel");
    }
  }

  @Test
  void anExecutionTrippedBeforeAttachIsCancelledOnce() throws Exception {
    // As the daemon does: 'attached' says cancelled, the cancel follows on the stream at once,
    // and the doorbell rings the moment the tool connects.
    sidecar.grant = grant(doorbellPath);
    sidecar.trippedWith = cancel("late");
    CompletableFuture<SocketChannel> rung = CompletableFuture.supplyAsync(() -> {
      try {
        SocketChannel connection = acceptDoorbell();
        write(connection, frame(cancel("late")));
        return connection;
      } catch (Exception failure) {
        throw new IllegalStateException(failure);
      }
    }, background);
    AtomicInteger listenerRuns = new AtomicInteger();
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).attach()) {
      // attach() waits for the cancel that follows 'attached': the run starts with all of it.
      assertTrue(run.signal().isCancelled());
      assertEquals(expected("late"), run.signal().getCancellation().orElseThrow());
      run.signal().onCancel(listenerRuns::incrementAndGet); // runs at once, once
      rung.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      poll(() -> run.stream().cancelsHandled() == 2, "both cancels were handled");
      assertEquals(1, listenerRuns.get());
      assertTrue(run.stream().cancelPath().isPresent());
      assertEquals(expected("late"), run.signal().getCancellation().orElseThrow());
    }
  }

  @Test
  void aDoorbellThatCannotBeReachedLeavesTheStream() throws Exception {
    sidecar.grant = grant(dir.resolve("nobody.doorbell"));
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).attach()) {
      Doorbell doorbell = run.stream().doorbell();
      assertNotNull(doorbell);
      assertTrue(Uninterruptibly.join(doorbell.thread(), WAIT), "gives up at once");
      assertFalse(doorbell.isOpen());
      sidecar.send(Interrupt.SidecarMessage.newBuilder().setCancel(cancel("streamed")).build());
      assertTrue(run.signal().await(WAIT));
      assertEquals(expected("streamed"), run.signal().getCancellation().orElseThrow());
      assertEquals(Optional.of(ToolStream.CancelPath.STREAM), run.stream().cancelPath());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"oversized", "truncated", "malformed", "absurd", "silent"})
  void aBadFrameIsIgnoredForTheStreamsCancel(String how) throws Exception {
    sidecar.grant = grant(doorbellPath);
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).attach()) {
      SocketChannel connection = acceptDoorbell();
      switch (how) {
        case "oversized":
          write(connection, ByteBuffer.allocate(4).putInt(Doorbell.MAX_FRAME + 1).array());
          assertTrue(hungUp(connection), "the client hangs up on garbage");
          break;
        case "truncated":
          write(connection, new byte[] {0, 0, 0, 10, 8, 1});
          connection.close();
          break;
        case "malformed":
          write(connection, new byte[] {0, 0, 0, 3, (byte) 0xff, (byte) 0xff, (byte) 0xff});
          assertTrue(hungUp(connection), "the client hangs up on garbage");
          break;
        case "absurd": // well-formed, but no Instant can hold its time
          write(connection, frame(cancel("absurd").toBuilder()
              .setTrippedAt(Timestamp.newBuilder().setSeconds(Long.MAX_VALUE)).build()));
          assertTrue(hungUp(connection), "the client hangs up on garbage");
          break;
        default: // a hang-up without a frame: a refused token, say
          connection.close();
      }
      Doorbell doorbell = run.stream().doorbell();
      assertTrue(Uninterruptibly.join(doorbell.thread(), WAIT));
      assertFalse(doorbell.rang());
      assertFalse(run.signal().isCancelled());
      sidecar.send(Interrupt.SidecarMessage.newBuilder().setCancel(cancel("streamed")).build());
      assertTrue(run.signal().await(WAIT));
      assertEquals(expected("streamed"), run.signal().getCancellation().orElseThrow());
      assertEquals(Optional.of(ToolStream.CancelPath.STREAM), run.stream().cancelPath());
    }
  }

  @Test
  void optingOutAsksForNoDoorbellAndIgnoresAGrant() throws Exception {
    sidecar.grant = grant(doorbellPath); // granted regardless: the client must not use it
    try (ToolRun run = tool(InterruptBehavior.COOPERATIVE).doorbell(false).attach()) {
      assertFalse(sidecar.hellos.poll(WAIT.toSeconds(), TimeUnit.SECONDS).getDoorbell());
      assertNull(run.stream().doorbell());
    }
    try (ToolRun run = tool(InterruptBehavior.NON_INTERRUPTIBLE).attach()) {
      assertFalse(sidecar.hellos.poll(WAIT.toSeconds(), TimeUnit.SECONDS).getDoorbell(), "never sent a cancel");
      assertNull(run.stream().doorbell());
    }
  }

  @Test
  void theDoorbellIsAskedForOnlyOverUnixAndUnlessTurnedOff() {
    String unix = "unix:///run/s.sock";
    InterruptBehavior cooperative = InterruptBehavior.COOPERATIVE;
    assertTrue(SidecarAddress.wantsDoorbell(null, unix, cooperative, null));
    assertTrue(SidecarAddress.wantsDoorbell(null, "unix:/run/s.sock", cooperative, null));
    assertTrue(SidecarAddress.wantsDoorbell(null, unix, cooperative, "1"));
    for (String off : new String[] {"0", "false", "FALSE", "no", "off"}) {
      assertFalse(SidecarAddress.wantsDoorbell(null, unix, cooperative, off), off);
    }
    assertTrue(SidecarAddress.wantsDoorbell(true, unix, cooperative, "0"), "the option beats the environment");
    assertFalse(SidecarAddress.wantsDoorbell(false, unix, cooperative, null));
    assertFalse(SidecarAddress.wantsDoorbell(true, "127.0.0.1:50051", cooperative, null), "never over TCP");
    assertFalse(SidecarAddress.wantsDoorbell(true, unix, InterruptBehavior.NON_INTERRUPTIBLE, null));
    for (InterruptBehavior behavior : InterruptBehavior.values()) {
      assertEquals(behavior.receivesCancel(), SidecarAddress.wantsDoorbell(null, unix, behavior, null), behavior.name());
    }
  }

  @Test
  void theEnvironmentTurnsTheDoorbellOff() throws Exception {
    // The environment of this JVM cannot be changed: ask a fresh one what hello it would send.
    assertEquals("true", helloDoorbellIn(null));
    assertEquals("false", helloDoorbellIn("0"));
    assertEquals("false", helloDoorbellIn("off"));
  }

  private static String helloDoorbellIn(String doorbellEnv) throws Exception {
    String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classPath, HelloProbe.class.getName());
    builder.environment().remove(SidecarAddress.DOORBELL_ENV);
    if (doorbellEnv != null) {
      builder.environment().put(SidecarAddress.DOORBELL_ENV, doorbellEnv);
    }
    Process probe = builder.redirectErrorStream(true).start();
    try (InputStream out = probe.getInputStream()) {
      assertTrue(probe.waitFor(20, TimeUnit.SECONDS), "the probe ended");
      assertEquals(0, probe.exitValue());
      return new String(out.readAllBytes(), StandardCharsets.UTF_8).strip();
    } finally {
      probe.destroyForcibly();
    }
  }

  /** Run by {@link #theEnvironmentTurnsTheDoorbellOff} in a JVM of its own. */
  static final class HelloProbe {
    private HelloProbe() {}

    public static void main(String[] args) {
      Interrupt.Hello hello = ToolRun.builder().behavior(InterruptBehavior.COOPERATIVE)
          .hello("attach-token", "unix:///run/s.sock");
      System.out.println(hello.getDoorbell());
    }
  }

  /**
   * A ToolChannelService on a unix socket: answers hello with {@link #grant} and registrations
   * with their acknowledgement, writes when told, and records what the tool sent.
   */
  static final class FakeSidecar extends ToolChannelServiceGrpc.ToolChannelServiceImplBase implements AutoCloseable {
    final String address;
    final BlockingQueue<Interrupt.Hello> hellos = new LinkedBlockingQueue<>();
    /** The doorbell 'attached' grants (whatever hello asked), or null. */
    volatile Interrupt.Doorbell grant;
    /** When set, the execution tripped before the attach: 'attached' says so and this follows. */
    volatile Interrupt.Cancel trippedWith;
    /**
     * When set, the fake asks to run this terminator (cancel, then run_terminator, as the
     * daemon's trip does) only once it has read the tool's unwound: the stream's copy of the
     * trip comes late.
     */
    volatile String askAfterUnwound;
    /** Counted down when the tool half-closes its stream. */
    final CountDownLatch halfClosed = new CountDownLatch(1);
    /** What the tool sent after hello, in order, and "half-close". Guarded by itself. */
    private final List<String> received = new ArrayList<>();
    private final CompletableFuture<StreamObserver<Interrupt.SidecarMessage>> tool = new CompletableFuture<>();
    private final EventLoopGroup group;
    private final Server server;

    FakeSidecar(Path socket) throws IOException {
      address = "unix://" + socket;
      group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
      server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
          .channelType(EpollServerDomainSocketChannel.class)
          .bossEventLoopGroup(group)
          .workerEventLoopGroup(group)
          .addService(this)
          .build()
          .start();
    }

    @Override
    public StreamObserver<Interrupt.ToolMessage> attach(StreamObserver<Interrupt.SidecarMessage> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(Interrupt.ToolMessage message) {
          if (!message.hasHello()) {
            answer(message, out);
            return;
          }
          hellos.add(message.getHello());
          Interrupt.Attached.Builder attached = Interrupt.Attached.newBuilder()
              .setExecutionId("exec-1").setToolId("tool-1");
          if (grant != null) {
            attached.setDoorbell(grant);
          }
          Interrupt.Cancel tripped = trippedWith;
          if (tripped != null) {
            attached.setCancelled(true).setReason(tripped.getReason());
          }
          synchronized (FakeSidecar.this) {
            out.onNext(Interrupt.SidecarMessage.newBuilder().setAttached(attached).build());
            if (tripped != null) {
              out.onNext(Interrupt.SidecarMessage.newBuilder().setCancel(tripped).build());
            }
          }
          tool.complete(out);
        }

        @Override
        public void onError(Throwable error) {
          // The tool went away: nothing to clean up in a fake.
        }

        @Override
        public void onCompleted() {
          record("half-close");
          halfClosed.countDown();
          end(out);
        }
      };
    }

    private void answer(Interrupt.ToolMessage message, StreamObserver<Interrupt.SidecarMessage> out) {
      switch (message.getMessageCase()) {
        case REGISTER_TERMINATOR -> {
          String id = message.getRegisterTerminator().getTerminatorId();
          record("register_terminator " + id);
          write(out, Interrupt.SidecarMessage.newBuilder()
              .setTerminatorRegistered(Interrupt.TerminatorRegistered.newBuilder().setTerminatorId(id)).build());
        }
        case UNREGISTER_TERMINATOR -> {
          String id = message.getUnregisterTerminator().getTerminatorId();
          record("unregister_terminator " + id);
          write(out, Interrupt.SidecarMessage.newBuilder()
              .setTerminatorUnregistered(Interrupt.TerminatorUnregistered.newBuilder().setTerminatorId(id)).build());
        }
        case UNWOUND -> {
          record("unwound " + message.getUnwound().getOutcome());
          String late = askAfterUnwound;
          if (late != null) {
            write(out, Interrupt.SidecarMessage.newBuilder().setCancel(cancel("rung")).build());
            write(out, Interrupt.SidecarMessage.newBuilder()
                .setRunTerminator(Interrupt.RunTerminator.newBuilder().setTerminatorId(late)).build());
          }
        }
        case TERMINATOR_RESULT -> record("terminator_result " + message.getTerminatorResult().getTerminatorId()
            + " " + message.getTerminatorResult().getError());
        default -> record(message.getMessageCase().name());
      }
    }

    private void record(String what) {
      synchronized (received) {
        received.add(what);
      }
    }

    /** What the tool sent after hello, so far. */
    List<String> received() {
      synchronized (received) {
        return List.copyOf(received);
      }
    }

    private synchronized void write(StreamObserver<Interrupt.SidecarMessage> out, Interrupt.SidecarMessage message) {
      out.onNext(message);
    }

    /** Writes on the (one) tool stream. */
    void send(Interrupt.SidecarMessage message) throws Exception {
      StreamObserver<Interrupt.SidecarMessage> out = tool.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      synchronized (this) {
        out.onNext(message);
      }
    }

    /** Ends the (first) tool stream, as the daemon does when the execution ends. */
    void endStream() throws Exception {
      end(tool.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    }

    private synchronized void end(StreamObserver<Interrupt.SidecarMessage> out) {
      try {
        out.onCompleted();
      } catch (IllegalStateException alreadyEnded) {
        // Ended by the test before the tool's half-close.
      }
    }

    @Override
    public void close() {
      server.shutdownNow();
      try {
        server.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }
}
