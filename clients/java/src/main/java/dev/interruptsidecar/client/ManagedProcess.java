package dev.interruptsidecar.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A child process in a process group of its own, registered with the daemon as a
 * process-group terminator (EXTERNALLY_TERMINATED tools only).
 *
 * <pre>{@code
 * try (ManagedProcess child = run.registrar().startProcess(new ProcessBuilder("make", "test"))) {
 *   int code = child.waitFor();
 * }
 * }</pre>
 *
 * <p>The JDK cannot call {@code setsid()}/{@code setpgid()} for a child, so the command is
 * started through {@code setsid} (util-linux): a JVM's child is never a group leader, so {@code
 * setsid} makes it the leader of a new session and group in place and execs the command with the
 * same pid — the group id is the child's pid. {@link #start} waits until the child leads its
 * group, then registers it. At the trip the daemon sends the group the signal (SIGTERM by
 * default), then SIGKILL after {@code killAfter} (default: the execution's grace).
 *
 * <p>{@link #waitFor()} unregisters the group once the child has ended; {@link #close()}
 * unregisters it, SIGKILLs whatever is left of the group (the child, and grandchildren that
 * stayed in the group), then reaps the child. A group id cannot be reused while any member
 * lives, so this never signals a stranger.
 */
public final class ManagedProcess implements AutoCloseable {
  /** SIGTERM's number on Linux: the default signal sent at the trip. */
  public static final int SIGTERM = 15;
  /** SIGKILL's number on Linux: the escalation. */
  public static final int SIGKILL = 9;

  private static final System.Logger LOG = System.getLogger(ManagedProcess.class.getName());
  private static final Duration GROUP_TIMEOUT = Duration.ofSeconds(5);

  private final Process process;
  private final TerminatorRegistrar registrar;
  private volatile TerminatorRegistration registration;

  private ManagedProcess(Process process, TerminatorRegistrar registrar) {
    this.process = process;
    this.registrar = registrar;
  }

  /**
   * Starts {@code builder}'s command in a new process group and registers the group.
   *
   * <p>Everything else about {@code builder} (directory, environment, redirects) applies; its
   * command is prefixed with {@code setsid} for the start only and restored afterwards.
   *
   * @param registrar an EXTERNALLY_TERMINATED run's registrar
   * @param builder the process to start
   * @param signal the signal the daemon sends the group at the trip (e.g. {@link #SIGTERM})
   * @param killAfter when SIGKILL follows; null for the execution's grace
   * @param terminatorId the terminator's id, or null for a fresh one
   * @return the running, registered child
   * @throws IOException when the process cannot be started
   * @throws FailedPreconditionException when the behaviour forbids process groups or the run is over
   */
  public static ManagedProcess start(TerminatorRegistrar registrar, ProcessBuilder builder, int signal,
      Duration killAfter, String terminatorId) throws IOException {
    Objects.requireNonNull(builder, "builder");
    // Refuse before starting anything.
    if (registrar instanceof Registrar own) {
      own.check(TerminatorRegistration.Kind.PROCESS_GROUP);
    } else if (registrar.isClosed() || !registrar.behavior().mayRegisterProcessGroups()) {
      throw new FailedPreconditionException(
          "only an open EXTERNALLY_TERMINATED run may register process groups", "");
    }
    List<String> command = builder.command();
    if (command.isEmpty()) {
      throw new IllegalArgumentException("the ProcessBuilder has no command");
    }
    List<String> wrapped = new ArrayList<>(command.size() + 1);
    wrapped.add(setsid());
    wrapped.addAll(command);
    Process process;
    synchronized (builder) {
      builder.command(wrapped);
      try {
        process = builder.start();
      } finally {
        builder.command(command);
      }
    }
    ManagedProcess managed = new ManagedProcess(process, registrar);
    long pid = process.pid();
    try {
      awaitOwnGroup(process);
      managed.registration = registrar.registerProcessGroup(terminatorId, (int) pid, signal, killAfter);
    } catch (NotFoundException gone) {
      if (ProcessGroups.running(pid)) {
        managed.killGroup();
        reap(process);
        throw gone;
      }
      LOG.log(Level.DEBUG, "child " + pid + " exited before its group could be registered");
    } catch (RuntimeException | Error failure) {
      managed.killGroup();
      reap(process);
      throw failure;
    }
    return managed;
  }

  private static String setsid() throws IOException {
    for (String candidate : new String[] {"/usr/bin/setsid", "/bin/setsid"}) {
      if (Files.isExecutable(Path.of(candidate))) {
        return candidate;
      }
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(":")) {
        Path candidate = Path.of(dir.isEmpty() ? "." : dir, "setsid");
        if (Files.isExecutable(candidate)) {
          return candidate.toString();
        }
      }
    }
    throw new IOException("setsid (util-linux) is not installed: it is how the child gets a process group of its own");
  }

  /** Waits until {@code setsid} has made the child lead its own group (or the child ended). */
  private static void awaitOwnGroup(Process process) {
    long pid = process.pid();
    long deadline = System.nanoTime() + GROUP_TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      Optional<Long> pgid = ProcessGroups.pgid(pid);
      if (pgid.isEmpty() || pgid.get() == pid || !ProcessGroups.running(pid)) {
        return;
      }
      Thread.onSpinWait();
      try {
        Thread.sleep(1);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    if (ProcessGroups.pgid(pid).map(pgid -> pgid != pid).orElse(false)) {
      throw new IllegalStateException("child " + pid + " did not get a process group of its own");
    }
  }

  /**
   * The child.
   *
   * @return the {@link Process}
   */
  public Process process() {
    return process;
  }

  /**
   * The child's pid.
   *
   * @return the pid
   */
  public long pid() {
    return process.pid();
  }

  /**
   * The child's process group: its pid, since it leads the group.
   *
   * @return the pgid
   */
  public long pgid() {
    return process.pid();
  }

  /**
   * The group's registration with the daemon.
   *
   * @return the registration; empty once released, or when the child ended before it
   */
  public Optional<TerminatorRegistration> registration() {
    return Optional.ofNullable(registration);
  }

  /**
   * Waits for the child to exit, then unregisters its group.
   *
   * @return the exit code
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  public int waitFor() throws InterruptedException {
    int code = process.waitFor();
    release();
    return code;
  }

  /**
   * Waits at most {@code timeout} for the child to exit; unregisters its group if it did.
   *
   * @param timeout how long at most
   * @param unit the unit of {@code timeout}
   * @return true when the child has exited
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
    boolean exited = process.waitFor(timeout, unit);
    if (exited) {
      release();
    }
    return exited;
  }

  /** SIGKILLs every live member of the child's group now (a no-op once it is gone). */
  public void killGroup() {
    ProcessGroups.signal(pgid(), SIGKILL);
  }

  /** Unregisters the group (idempotent; quiet once the run has closed or the daemon is gone). */
  public void release() {
    TerminatorRegistration current = registration;
    registration = null;
    if (current == null) {
      return;
    }
    if (registrar instanceof Registrar own) {
      own.unregisterQuietly(current.terminatorId());
    } else {
      try {
        registrar.unregister(current.terminatorId());
      } catch (FailedPreconditionException | UnavailableException quiet) {
        LOG.log(Level.DEBUG, "unregistering " + current.terminatorId() + ": " + quiet.getMessage());
      }
    }
  }

  /** Unregisters the group, SIGKILLs whatever is left of it, and reaps the child. */
  @Override
  public void close() {
    try {
      release();
    } finally {
      killGroup();
      reap(process);
    }
  }

  private static void reap(Process process) {
    boolean interrupted = false;
    while (true) {
      try {
        process.waitFor();
        break;
      } catch (InterruptedException again) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
