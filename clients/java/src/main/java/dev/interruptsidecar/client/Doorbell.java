package dev.interruptsidecar.client;

import com.google.protobuf.InvalidProtocolBufferException;
import interrupt.v1.Interrupt;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * The tool's end of the cancel doorbell: a unix socket on which the daemon rings the cancel
 * ahead of the {@code Attach} stream.
 *
 * <p>A tool that asked for it in {@code hello} gets a path and a one-time token in {@code
 * attached}. It connects, writes the token, and the daemon writes the cancel there the moment
 * the execution trips (at once if it already has): a 4-byte big-endian length, then a
 * serialized {@code interrupt.v1.Cancel}. Nothing else is ever written; the daemon hangs up
 * when the stream ends, or at once for a wrong or used token. The same cancel always follows
 * on the stream, which stays authoritative: the doorbell only makes it earlier, so anything
 * going wrong here (no socket, a hang-up before a whole frame, a malformed frame) is logged at
 * debug level and the stream's cancel is used.
 *
 * <p>One daemon thread per run connects and then blocks in {@code read}: a blocked read is
 * woken by the kernel the moment the frame lands, which is the point of the doorbell (a
 * selector or executor hand-off would add a wake-up of its own). {@link #close} closes the
 * socket, which ends a blocked connect or read at once.
 */
final class Doorbell {
  private static final System.Logger LOG = System.getLogger(Doorbell.class.getName());

  /** A Cancel is a few dozen bytes (its detail at most 1 KiB): a longer frame is garbage. */
  static final int MAX_FRAME = 64 * 1024;

  private final String path;
  private final byte[] token;
  private final Consumer<Cancellation> onCancel;
  /** Created before the reader starts, so that {@link #close} never races its creation. */
  private final SocketChannel socket;
  private final Thread reader;
  private volatile boolean rang;

  private Doorbell(Interrupt.Doorbell grant, SocketChannel socket, Consumer<Cancellation> onCancel) {
    this.path = grant.getPath();
    // The daemon refuses a token that is not the one it handed out: a mangled one only
    // costs the doorbell, never the run.
    this.token = grant.getToken().getBytes(StandardCharsets.US_ASCII);
    this.onCancel = onCancel;
    this.socket = socket;
    this.reader = new Thread(this::ring, "interrupt-sidecar-doorbell");
    this.reader.setDaemon(true);
  }

  /**
   * Starts connecting to the doorbell of {@code grant} on a thread of its own; never blocks.
   *
   * @param onCancel called at most once, on the doorbell's thread, with the rung cancel
   * @return the doorbell, or null when not even a socket could be created
   */
  static Doorbell open(Interrupt.Doorbell grant, Consumer<Cancellation> onCancel) {
    SocketChannel socket;
    try {
      socket = SocketChannel.open(StandardProtocolFamily.UNIX);
    } catch (IOException | UnsupportedOperationException noSocket) {
      LOG.log(Level.DEBUG, "no cancel doorbell (" + noSocket + "); the stream's cancel will do");
      return null;
    }
    Doorbell doorbell = new Doorbell(grant, socket, onCancel);
    doorbell.reader.start();
    return doorbell;
  }

  private void ring() {
    Cancellation cancel = null;
    try {
      cancel = read();
    } catch (ClosedChannelException closed) {
      // close() (the stream or the run ended first), also during a blocked connect or read.
    } catch (IOException | RuntimeException failure) {
      // RuntimeException: a path no socket address can hold (InvalidPathException), or a
      // timestamp beyond Instant's range in a garbled frame.
      LOG.log(Level.DEBUG, "cancel doorbell at " + path + ": " + failure + "; the stream's cancel will do");
    } finally {
      // The frame is the only thing the daemon ever writes: hang up before handing it on.
      close();
    }
    if (cancel != null) {
      onCancel.accept(cancel);
    }
  }

  /** Connects, proves the token and reads one frame; null when the daemon hung up without one. */
  private Cancellation read() throws IOException {
    socket.connect(UnixDomainSocketAddress.of(path));
    ByteBuffer out = ByteBuffer.wrap(token);
    while (out.hasRemaining()) {
      socket.write(out);
    }
    ByteBuffer header = ByteBuffer.allocate(Integer.BYTES);
    if (!readFully(header)) {
      // The stream ended, the token was refused, or the daemon is stopping: the stream says
      // which, and carries the cancel if there is one.
      LOG.log(Level.DEBUG, "the cancel doorbell hung up without a cancel");
      return null;
    }
    int length = header.getInt(0); // big-endian, ByteBuffer's default
    if (length < 0 || length > MAX_FRAME) {
      LOG.log(Level.DEBUG, "the cancel doorbell sent a " + Integer.toUnsignedString(length)
          + "-byte frame; ignoring it for the stream's cancel");
      return null;
    }
    ByteBuffer body = ByteBuffer.allocate(length);
    if (!readFully(body)) {
      LOG.log(Level.DEBUG, "the cancel doorbell hung up in the middle of a frame");
      return null;
    }
    try {
      Cancellation cancel = ToolStream.cancellation(Interrupt.Cancel.parseFrom(body.array()));
      rang = true;
      return cancel;
    } catch (InvalidProtocolBufferException malformed) {
      LOG.log(Level.DEBUG, "the cancel doorbell sent a malformed cancel (" + malformed.getMessage()
          + "); ignoring it for the stream's");
      return null;
    }
  }

  private boolean readFully(ByteBuffer into) throws IOException {
    while (into.hasRemaining()) {
      if (socket.read(into) < 0) {
        return false;
      }
    }
    return true;
  }

  /** Hangs up, or stops connecting: a blocked connect or read ends at once. Idempotent, never blocks. */
  void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // Closing a unix socket does not fail in a way anyone could act on.
    }
  }

  /**
   * {@link #close()}, then waits (uninterruptibly, at most {@code timeout}) for the doorbell's
   * thread to end, so that nothing of the doorbell outlives the run. The thread may be running
   * the signal's listeners: a listener that closes the run does not wait for itself.
   */
  void close(Duration timeout) {
    close();
    if (Thread.currentThread() != reader && !Uninterruptibly.join(reader, timeout)) {
      LOG.log(Level.DEBUG, "the cancel doorbell's thread is still running (a slow cancellation listener?)");
    }
  }

  /** Whether the socket is still open (for tests: closed once the run or stream ended). */
  boolean isOpen() {
    return socket.isOpen();
  }

  /** Whether a whole, valid cancel frame was read. */
  boolean rang() {
    return rang;
  }

  /** The thread that connects and reads (for tests: ended once closed). */
  Thread thread() {
    return reader;
  }

  @Override
  public String toString() {
    return "Doorbell[" + path + (rang ? ", rang" : "") + (socket.isOpen() ? "" : ", closed") + "]";
  }
}
