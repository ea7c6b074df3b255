package dev.interruptsidecar.client;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** The run's {@link TerminatorRegistrar}: checks locally, then forwards to a {@link Backend}. */
final class Registrar implements TerminatorRegistrar {
  private static final System.Logger LOG = System.getLogger(Registrar.class.getName());

  private final InterruptBehavior behavior;
  private final Backend backend;
  /** The callbacks, looked up by the terminator runner (any thread). */
  private final Map<String, Terminator> callbacks = new ConcurrentHashMap<>();
  /** Insertion-ordered, like the daemon's: the order terminators run in. Guarded by this. */
  private final Map<String, TerminatorRegistration> live = new LinkedHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private volatile boolean closed;

  Registrar(InterruptBehavior behavior, Backend backend) {
    this.behavior = behavior;
    this.backend = backend;
  }

  @Override
  public InterruptBehavior behavior() {
    return behavior;
  }

  @Override
  public boolean isClosed() {
    return closed;
  }

  @Override
  public synchronized List<TerminatorRegistration> terminators() {
    return List.copyOf(live.values());
  }

  Terminator callbackFor(String terminatorId) {
    return callbacks.get(terminatorId);
  }

  @Override
  public TerminatorRegistration register(String terminatorId, Terminator terminator) {
    Objects.requireNonNull(terminator, "terminator");
    check(TerminatorRegistration.Kind.CALLBACK);
    TerminatorRegistration registration;
    synchronized (this) {
      registration = new TerminatorRegistration(
          newId("callback", terminatorId), TerminatorRegistration.Kind.CALLBACK, OptionalInt.empty());
      live.put(registration.terminatorId(), registration);
    }
    // The callback goes in first: the daemon may send run_terminator (registration after the
    // trip) before, or right after, it acknowledges the registration.
    callbacks.put(registration.terminatorId(), terminator);
    add(registration, () -> backend.registerCallback(registration.terminatorId()));
    return registration;
  }

  @Override
  public TerminatorRegistration registerProcessGroup(
      String terminatorId, int pgid, int signal, Duration killAfter) {
    check(TerminatorRegistration.Kind.PROCESS_GROUP);
    if (pgid <= 1) {
      throw new InvalidArgumentException(
          "process group " + pgid + " cannot be a terminator: a pgid must be greater than 1", "");
    }
    if (killAfter != null && killAfter.isNegative()) {
      throw new IllegalArgumentException("killAfter cannot be negative: " + killAfter);
    }
    TerminatorRegistration registration;
    synchronized (this) {
      registration = new TerminatorRegistration(
          newId("pgid-" + pgid, terminatorId), TerminatorRegistration.Kind.PROCESS_GROUP, OptionalInt.of(pgid));
      live.put(registration.terminatorId(), registration);
    }
    add(registration, () -> backend.registerProcessGroup(registration.terminatorId(), pgid, signal, killAfter));
    return registration;
  }

  @Override
  public void unregister(String terminatorId) {
    if (closed) {
      return;
    }
    synchronized (this) {
      if (live.remove(terminatorId) == null) {
        return; // never registered, or unregistered already: idempotent
      }
    }
    callbacks.remove(terminatorId);
    backend.unregister(terminatorId);
  }

  @Override
  public void unregister(Terminator terminator) {
    List<String> matching = new ArrayList<>();
    callbacks.forEach((id, callback) -> {
      if (callback == terminator) {
        matching.add(id);
      }
    });
    matching.forEach(this::unregister);
  }

  /** Unregisters, ignoring a closed run or a lost stream (for clean-up paths). */
  void unregisterQuietly(String terminatorId) {
    try {
      unregister(terminatorId);
    } catch (FailedPreconditionException | UnavailableException | DeadlineExceededException quiet) {
      LOG.log(Level.DEBUG, "unregistering " + terminatorId + ": " + quiet.getMessage());
    }
  }

  @Override
  public void close() {
    List<String> ids;
    synchronized (this) {
      if (closed) {
        return;
      }
      ids = new ArrayList<>(live.keySet());
      closeLocal(true);
    }
    for (String id : ids) {
      try {
        backend.unregister(id);
      } catch (SidecarException failure) {
        LOG.log(Level.DEBUG, "unregistering " + id + " on close: " + failure.getMessage());
      }
    }
  }

  /**
   * Closes without telling the backend (the run's unwound closes it daemon-side). With {@code
   * forget} false the callbacks stay reachable: a run_terminator the daemon sent before it read
   * the tool's unwound must still run the terminator it names.
   */
  synchronized void closeLocal(boolean forget) {
    closed = true;
    live.clear();
    if (forget) {
      callbacks.clear();
    }
  }

  void check(TerminatorRegistration.Kind kind) {
    if (closed) {
      throw new FailedPreconditionException(
          "the terminator registrar is closed (the tool's run has unwound, or close() was called);"
              + " terminators can only be registered during the run", "");
    }
    if (kind == TerminatorRegistration.Kind.PROCESS_GROUP && !behavior.mayRegisterProcessGroups()) {
      throw new FailedPreconditionException("the tool declared " + behavior
          + ": only EXTERNALLY_TERMINATED tools may register process-group terminators", "");
    }
    if (kind == TerminatorRegistration.Kind.CALLBACK && !behavior.mayRegisterCallbacks()) {
      throw new FailedPreconditionException("the tool declared " + behavior
          + ": only THREAD_INTERRUPT and EXTERNALLY_TERMINATED tools may register terminators", "");
    }
  }

  private String newId(String prefix, String requested) {
    if (requested == null) {
      while (true) {
        String candidate = prefix + "-" + ids.incrementAndGet();
        if (!live.containsKey(candidate)) {
          return candidate;
        }
      }
    }
    if (requested.isEmpty()) {
      throw new InvalidArgumentException("a terminator id cannot be empty", "");
    }
    if (live.containsKey(requested)) {
      throw new AlreadyExistsException("terminator '" + requested + "' is already registered", requested);
    }
    return requested;
  }

  private void add(TerminatorRegistration registration, Runnable send) {
    try {
      send.run();
    } catch (RuntimeException failure) {
      synchronized (this) {
        live.remove(registration.terminatorId());
      }
      callbacks.remove(registration.terminatorId());
      throw failure;
    }
  }
}
