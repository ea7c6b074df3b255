package dev.interruptsidecar.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Terminators without a daemon, run at the trip of an in-process signal.
 *
 * <p>Used in no-op mode (the signal never trips, so nothing ever runs) and with {@link
 * ToolRun.Builder#source}. Like the daemon: callbacks and process groups run once, in
 * registration order, at the trip, or at once when registered after it. Process groups get
 * their signal at the trip and SIGKILL after {@code killAfter} (default: the source's grace),
 * best-effort, without the daemon's identity pinning.
 */
final class LocalBackend implements Backend {
  private record Group(int pgid, int signal, Duration killAfter) {}

  private final TerminatorRunner runner;
  private final Duration grace;
  /** Insertion-ordered: the run order. Guarded by this; values are null for callbacks. */
  private final Map<String, Group> specs = new LinkedHashMap<>();
  private boolean fired;

  LocalBackend(DefaultCancellationSignal signal, TerminatorRunner runner, Duration grace) {
    this.runner = runner;
    this.grace = grace;
    if (signal != null) {
      signal.onCancel(this::tripped);
    }
  }

  @Override
  public void registerCallback(String terminatorId) {
    if (store(terminatorId, null)) {
      runner.submit(terminatorId);
    }
  }

  @Override
  public void registerProcessGroup(String terminatorId, int pgid, int signal, Duration killAfter) {
    if (ProcessGroups.members(pgid).isEmpty()) {
      throw new NotFoundException("process group " + pgid + " does not exist", terminatorId);
    }
    Group group = new Group(pgid, signal, killAfter);
    if (store(terminatorId, group)) {
      run(group);
    }
  }

  /** Keeps the spec for the trip; true when the trip has happened (run it now instead). */
  private synchronized boolean store(String terminatorId, Group group) {
    if (fired) {
      return true;
    }
    specs.put(terminatorId, group);
    return false;
  }

  @Override
  public synchronized void unregister(String terminatorId) {
    specs.remove(terminatorId);
  }

  synchronized void close() {
    specs.clear();
  }

  private void tripped() {
    List<Map.Entry<String, Group>> toRun;
    synchronized (this) {
      fired = true;
      toRun = new ArrayList<>(specs.entrySet());
      specs.clear();
    }
    for (Map.Entry<String, Group> entry : toRun) {
      if (entry.getValue() == null) {
        runner.submit(entry.getKey());
      } else {
        run(entry.getValue());
      }
    }
  }

  private void run(Group group) {
    ProcessGroups.signal(group.pgid(), group.signal());
    Duration after = group.killAfter() != null ? group.killAfter() : grace;
    CompletableFuture.delayedExecutor(after.toMillis(), TimeUnit.MILLISECONDS)
        .execute(() -> ProcessGroups.signal(group.pgid(), ManagedProcess.SIGKILL));
  }
}
