package dev.interruptsidecar.client;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

/**
 * Registers terminators for the tool's run: the tool → daemon write path.
 *
 * <p>Only {@link InterruptBehavior#THREAD_INTERRUPT} and {@link
 * InterruptBehavior#EXTERNALLY_TERMINATED} tools may register callbacks, and only
 * EXTERNALLY_TERMINATED tools process groups; otherwise, and once the registrar is closed (the
 * run unwound, or {@link #close()}), registering throws {@link FailedPreconditionException}
 * (checked by the client, and by the daemon). Registering after the trip is allowed: the
 * terminator runs at once. Terminators run once per trip, in registration order. Unregistering
 * is idempotent.
 *
 * <p>Registering waits for the daemon's acknowledgement (at most the run's request timeout)
 * and is not interruptible: a THREAD_INTERRUPT worker interrupted meanwhile keeps its interrupt
 * status, and the registration still completes.
 */
public interface TerminatorRegistrar extends AutoCloseable {

  /**
   * The behaviour the tool declared; decides what may be registered.
   *
   * @return the behaviour
   */
  InterruptBehavior behavior();

  /**
   * Whether the registrar is closed: by {@link #close()}, or because the run unwound.
   *
   * @return true once closed
   */
  boolean isClosed();

  /**
   * The live terminators, in registration order.
   *
   * @return a snapshot
   */
  List<TerminatorRegistration> terminators();

  /**
   * Registers a callback terminator under a fresh id.
   *
   * @param terminator the callback
   * @return the registration, once the daemon acknowledged it
   * @throws FailedPreconditionException when the behaviour forbids it or the run is over
   */
  default TerminatorRegistration register(Terminator terminator) {
    return register(null, terminator);
  }

  /**
   * Registers a callback terminator under a chosen id.
   *
   * @param terminatorId the id (unique among live terminators), or null for a fresh one
   * @param terminator the callback
   * @return the registration, once the daemon acknowledged it
   * @throws FailedPreconditionException when the behaviour forbids it or the run is over
   * @throws AlreadyExistsException when the id is taken
   */
  TerminatorRegistration register(String terminatorId, Terminator terminator);

  /**
   * Registers a process group the daemon kills at the trip: SIGTERM to the whole group, then
   * SIGKILL after the execution's grace (EXTERNALLY_TERMINATED only).
   *
   * @param pgid the process group (greater than 1)
   * @return the registration
   * @throws NotFoundException when no such group exists
   */
  default TerminatorRegistration registerProcessGroup(int pgid) {
    return registerProcessGroup(null, pgid, ManagedProcess.SIGTERM, null);
  }

  /**
   * Registers a process group the daemon kills at the trip (EXTERNALLY_TERMINATED only).
   *
   * @param terminatorId the id, or null for a fresh one
   * @param pgid the process group (greater than 1)
   * @param signal the signal sent at the trip (e.g. {@link ManagedProcess#SIGTERM})
   * @param killAfter when SIGKILL follows; null for the execution's grace
   * @return the registration
   * @throws NotFoundException when no such group exists
   */
  TerminatorRegistration registerProcessGroup(String terminatorId, int pgid, int signal, Duration killAfter);

  /**
   * Unregisters a terminator so it no longer runs. Idempotent; a no-op once closed.
   *
   * @param terminatorId the id
   */
  void unregister(String terminatorId);

  /**
   * Unregisters every registration of this callback. Idempotent; a no-op once closed.
   *
   * @param terminator the callback given to {@link #register}
   */
  void unregister(Terminator terminator);

  /**
   * Starts a process in a process group of its own and registers the group (see {@link
   * ManagedProcess}). EXTERNALLY_TERMINATED only.
   *
   * @param builder the process to start; its command is prefixed with {@code setsid} for the start
   * @return the running process
   * @throws IOException when the process cannot be started
   */
  default ManagedProcess startProcess(ProcessBuilder builder) throws IOException {
    return ManagedProcess.start(this, builder, ManagedProcess.SIGTERM, null, null);
  }

  /**
   * Unregisters every live terminator and refuses later registrations. Idempotent. The run
   * closes its registrar when it unwinds.
   */
  @Override
  void close();
}
