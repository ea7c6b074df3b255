package dev.interruptsidecar.client;

import java.util.Optional;

/**
 * The tool's point of view on a run it may or may not have: never null, never a surprise.
 *
 * <pre>{@code
 * CancellationSignal signal = InterruptAccess.signalOf(run);      // NOOP when run is null
 * InterruptAccess.registrarOf(run).ifPresent(r -> r.register(future::cancel));
 * }</pre>
 */
public final class InterruptAccess {
  private InterruptAccess() {}

  /**
   * The run's signal, or the never-cancelled {@link NoopCancellationSignal#INSTANCE}.
   *
   * @param run a run, or null (a unit test, a tool called outside an agent)
   * @return never null
   */
  public static CancellationSignal signalOf(ToolRun run) {
    return run == null ? NoopCancellationSignal.INSTANCE : run.signal();
  }

  /**
   * The run's registrar, only for behaviours that may register terminators (THREAD_INTERRUPT,
   * EXTERNALLY_TERMINATED) and while the run is open: an accidental registration elsewhere
   * becomes an empty Optional, quietly ignored.
   *
   * @param run a run, or null
   * @return the registrar, or empty
   */
  public static Optional<TerminatorRegistrar> registrarOf(ToolRun run) {
    if (run == null || !run.behavior().mayRegisterCallbacks() || run.registrar().isClosed()) {
      return Optional.empty();
    }
    return Optional.of(run.registrar());
  }
}
