package dev.interruptsidecar.client;

import interrupt.v1.Interrupt;
import io.grpc.ManagedChannel;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One tool run attached to its execution (or running without a sidecar): the run's {@link
 * CancellationSignal} and {@link TerminatorRegistrar}.
 *
 * <pre>{@code
 * try (ToolRun run = ToolRun.attach(InterruptBehavior.COOPERATIVE, "grep")) {
 *   for (Path file : files) {
 *     if (run.signal().isCancelled()) {
 *       return "Grep interrupted: " + run.signal().getReason().orElseThrow();
 *     }
 *     scan(file);
 *   }
 * }
 * }</pre>
 *
 * <p>{@link #close()} reports {@code unwound} to the daemon (unless {@link #unwind} did
 * already), closes the registrar and the stream. Its outcome is {@link ToolOutcome#INTERRUPTED}
 * when an interruptible tool was cancelled, {@link ToolOutcome#COMPLETED} otherwise; {@link
 * Builder#call} derives it from how the tool's code ended instead. After the trip, closing
 * first lets the callback terminators finish their part: it waits (at most 2 s) until the
 * daemon has asked to run each one it holds, then (at most 250 ms) until the ones asked for
 * have reported their results, so a terminator that fails while the work is already ending is
 * not lost.
 *
 * <p>{@link InterruptBehavior#THREAD_INTERRUPT}: at the trip the client calls {@link
 * Thread#interrupt()} on the worker — the thread that attached, unless {@link
 * Builder#interruptThread} names another — so a blocking call ({@code Thread.sleep}, {@code
 * Future.get}, {@code Process.waitFor}, ...) throws {@link InterruptedException}. It fires at
 * most once, and only until the run unwinds; attaching after the trip interrupts the worker at
 * once. The client does not clear the interrupt status: the tool handles it.
 */
public final class ToolRun implements AutoCloseable {
  /** How long closing waits for the daemon to end the stream after the tool's unwound. */
  static final Duration UNWIND_TIMEOUT = Duration.ofSeconds(2);

  private static final System.Logger LOG = System.getLogger(ToolRun.class.getName());

  private final CancellationSignal signal;
  private final Registrar registrar;
  private final TerminatorRunner runner;
  private final InterruptBehavior behavior;
  private final ToolStream stream;
  private final LocalBackend local;
  private final String address;
  private final String executionId;
  private final String toolId;
  private final Duration grace;
  private final Thread worker;
  /**
   * Set by whoever interrupts the worker, so that it is interrupted at most once. Attached to a
   * daemon, it is shared with the trip hook {@link Builder#attach()} adds before the handshake:
   * the hook interrupts the worker itself while the run is not built yet, through {@link
   * #interruptWorker()} once it is, and whichever of the two gets here first interrupts.
   */
  private final AtomicBoolean workerInterrupted;
  private final AtomicBoolean unwound = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean armed;

  private ToolRun(Builder options, CancellationSignal signal, Registrar registrar, TerminatorRunner runner,
      ToolStream stream, LocalBackend local, Interrupt.Attached attached, Duration grace, Thread worker,
      AtomicBoolean workerInterrupted) {
    this.signal = signal;
    this.registrar = registrar;
    this.runner = runner;
    this.behavior = options.behavior;
    this.stream = stream;
    this.local = local;
    this.address = stream != null ? options.resolvedAddress : null;
    this.executionId = attached != null ? attached.getExecutionId() : null;
    this.toolId = attached != null ? attached.getToolId() : null;
    this.grace = grace;
    this.worker = worker;
    this.workerInterrupted = workerInterrupted;
    this.armed = worker != null;
  }

  /**
   * Attaches with a behaviour, configured from the environment ({@code INTERRUPT_SIDECAR_ADDRESS},
   * {@code INTERRUPT_SIDECAR_TOKEN}, {@code INTERRUPT_SIDECAR_DOORBELL}); a no-op run without a token.
   *
   * @param behavior how the tool takes the interrupt
   * @return the run; close it (try-with-resources) when the tool is done
   * @throws SidecarException when the daemon refuses the attach or cannot be reached
   */
  public static ToolRun attach(InterruptBehavior behavior) {
    return builder().behavior(behavior).attach();
  }

  /**
   * Attaches with a behaviour and a tool name (for the daemon's events and metrics).
   *
   * @param behavior how the tool takes the interrupt
   * @param toolName the tool's name
   * @return the run
   * @throws SidecarException when the daemon refuses the attach or cannot be reached
   */
  public static ToolRun attach(InterruptBehavior behavior, String toolName) {
    return builder().behavior(behavior).toolName(toolName).attach();
  }

  /**
   * Options for attaching: behaviour, names, address, token, timeouts.
   *
   * @return a fresh builder (behaviour NON_INTERRUPTIBLE, timeout 10 s)
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The execution's cancellation signal.
   *
   * @return the signal ({@link NoopCancellationSignal#INSTANCE} outside an agent)
   */
  public CancellationSignal signal() {
    return signal;
  }

  /**
   * Where the tool registers terminators (refuses unless the behaviour allows them).
   *
   * @return the registrar
   */
  public TerminatorRegistrar registrar() {
    return registrar;
  }

  /**
   * The behaviour the tool declared.
   *
   * @return the behaviour
   */
  public InterruptBehavior behavior() {
    return behavior;
  }

  /**
   * Whether the run is attached to a daemon.
   *
   * @return false in no-op mode and with a local {@link CancellationSource}
   */
  public boolean isAttached() {
    return stream != null;
  }

  /**
   * The daemon's address.
   *
   * @return the address, empty when not attached
   */
  public Optional<String> address() {
    return Optional.ofNullable(address);
  }

  /**
   * The execution attached to.
   *
   * @return its id, empty when not attached
   */
  public Optional<String> executionId() {
    return Optional.ofNullable(executionId);
  }

  /**
   * The id the daemon gave this tool run.
   *
   * @return the id, empty when not attached
   */
  public Optional<String> toolId() {
    return Optional.ofNullable(toolId);
  }

  /**
   * How long after the trip the tool has to unwind before it counts as a grace overrun.
   *
   * @return the execution's grace, when known
   */
  public Optional<Duration> grace() {
    return Optional.ofNullable(grace);
  }

  /**
   * Whether the run has been reported unwound (its registrar is then closed).
   *
   * @return true once unwound
   */
  public boolean isUnwound() {
    return unwound.get();
  }

  /**
   * Reports the run's end with an outcome: closes the registrar (later registrations are
   * refused with {@link FailedPreconditionException}) and sends {@code unwound}, keeping the
   * stream open until {@link #close()}: callback terminators the daemon asks for still run,
   * and report their results, until then. Idempotent; a stream that is gone is logged, not
   * thrown.
   *
   * @param outcome how the run ended
   * @param detail free text for people and logs ("" for none)
   */
  public void unwind(ToolOutcome outcome, String detail) {
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(detail, "detail");
    if (!unwound.compareAndSet(false, true)) {
      return;
    }
    armed = false;
    // Refuse registrations now, but keep the callbacks until the stream has ended:
    // run_terminator messages the daemon sent before reading unwound still run.
    registrar.closeLocal(false);
    if (stream != null) {
      try {
        stream.unwound(outcome, detail);
      } catch (SidecarException failure) {
        LOG.log(Level.WARNING, "could not report unwound to the sidecar: " + failure.getMessage());
      }
    }
  }

  /**
   * Reports the run's end with an outcome and no detail; see {@link #unwind(ToolOutcome, String)}.
   *
   * @param outcome how the run ended
   */
  public void unwind(ToolOutcome outcome) {
    unwind(outcome, "");
  }

  /**
   * Unwinds (unless done already: INTERRUPTED when an interruptible tool was cancelled, else
   * COMPLETED), closes the registrar and the stream. After the trip it first waits (bounded:
   * 2 s, then 250 ms) until the daemon has asked for every callback terminator it holds and
   * their results are reported. Idempotent; not cut short by an interrupt; never throws for a
   * lost daemon.
   */
  @Override
  public void close() {
    unwind(defaultOutcome(), "");
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      if (stream != null) {
        if (signal.isCancelled()) {
          // The trip asks for every callback terminator, on the stream, after the cancel. When
          // the doorbell brought the cancel, the worker it interrupted can get here before
          // those requests are read: wait for them (or the stream's end), or their results
          // would come after the half-close below, and be lost.
          stream.awaitRunsAsked(UNWIND_TIMEOUT);
        }
        // Terminators the daemon asked for (one may still be running: the work ended at the
        // trip without waiting for it) report their results before the half-close.
        runner.settle(TerminatorRunner.SEQUENTIAL_WINDOW_MS);
        stream.finish(UNWIND_TIMEOUT);
      }
      runner.close(UNWIND_TIMEOUT.toMillis());
    } finally {
      registrar.closeLocal(true);
      if (local != null) {
        local.close();
      }
    }
  }

  /** The stream (tests: its doorbell and which path delivered the cancel); null when not attached. */
  ToolStream stream() {
    return stream;
  }

  private ToolOutcome defaultOutcome() {
    // An interruptible tool that returns after the cancel has most likely stopped early.
    return signal.isCancelled() && behavior.receivesCancel() ? ToolOutcome.INTERRUPTED : ToolOutcome.COMPLETED;
  }

  private void interruptWorker() {
    if (armed && workerInterrupted.compareAndSet(false, true)) {
      worker.interrupt();
    }
  }

  @Override
  public String toString() {
    String where = stream != null ? "execution " + executionId : "no sidecar";
    return "ToolRun[" + behavior + ", " + where + ", " + signal + "]";
  }

  /**
   * The code of a tool run by {@link Builder#call}.
   *
   * @param <T> what the tool returns
   */
  @FunctionalInterface
  public interface Body<T> {
    /**
     * Runs the tool.
     *
     * @param run the attached run
     * @return the tool's result
     * @throws Exception anything; it decides the outcome reported
     */
    T apply(ToolRun run) throws Exception;
  }

  /** Options for attaching a tool run. Not thread-safe; {@link #attach()} may be called again. */
  public static final class Builder {
    private InterruptBehavior behavior = InterruptBehavior.NON_INTERRUPTIBLE;
    private String toolName = "";
    private String toolCallId = "";
    private String address;
    private String token;
    private CancellationSource source;
    private Integer pid;
    private Duration timeout = Duration.ofSeconds(10);
    private boolean interruptWorker = true;
    private Thread interruptThread;
    private Boolean doorbell;
    private String resolvedAddress;
    /** Tests only: run by {@link #attach()} between building the run and publishing it to the trip hook. */
    private Consumer<ToolRun> beforePublish;

    private Builder() {}

    /**
     * How the tool takes the interrupt (default NON_INTERRUPTIBLE).
     *
     * @param value the behaviour
     * @return this
     */
    public Builder behavior(InterruptBehavior value) {
      this.behavior = Objects.requireNonNull(value, "behavior");
      return this;
    }

    /**
     * The tool's name, for the daemon's events and metrics.
     *
     * @param value the name
     * @return this
     */
    public Builder toolName(String value) {
      this.toolName = Objects.requireNonNull(value, "toolName");
      return this;
    }

    /**
     * The agent's id of this tool call, for the daemon's events.
     *
     * @param value the id
     * @return this
     */
    public Builder toolCallId(String value) {
      this.toolCallId = Objects.requireNonNull(value, "toolCallId");
      return this;
    }

    /**
     * The daemon's address (default: {@code INTERRUPT_SIDECAR_ADDRESS}, else the daemon's default socket).
     *
     * @param value {@code unix:///abs/path.sock} or {@code HOST:PORT}
     * @return this
     */
    public Builder address(String value) {
      this.address = value;
      return this;
    }

    /**
     * The attach token (default: {@code INTERRUPT_SIDECAR_TOKEN}; without one the run is a no-op).
     *
     * @param value the token from {@code BeginExecution}
     * @return this
     */
    public Builder token(String value) {
      this.token = value;
      return this;
    }

    /**
     * Follow an in-process signal instead of a daemon (tests): listeners, THREAD_INTERRUPT and
     * terminators behave as with the daemon.
     *
     * @param value the source
     * @return this
     */
    public Builder source(CancellationSource value) {
      this.source = value;
      return this;
    }

    /**
     * The pid reported to the daemon (default: this process).
     *
     * @param value a pid
     * @return this
     */
    public Builder pid(int value) {
      this.pid = value;
      return this;
    }

    /**
     * How long attaching, and each registrar request, waits for the daemon (default 10 s).
     *
     * @param value the timeout
     * @return this
     */
    public Builder timeout(Duration value) {
      this.timeout = Objects.requireNonNull(value, "timeout");
      return this;
    }

    /**
     * Whether a THREAD_INTERRUPT run interrupts its worker thread at the trip (default true).
     * With false, only the signal and terminators remain.
     *
     * @param value whether to interrupt
     * @return this
     */
    public Builder interruptWorker(boolean value) {
      this.interruptWorker = value;
      return this;
    }

    /**
     * The worker a THREAD_INTERRUPT run interrupts (default: the thread that calls {@link #attach()}).
     *
     * @param value the thread
     * @return this
     */
    public Builder interruptThread(Thread value) {
      this.interruptThread = value;
      return this;
    }

    /**
     * Whether to ask the daemon for the cancel doorbell, a raw unix socket on which the cancel
     * arrives ahead of the stream (default: {@code INTERRUPT_SIDECAR_DOORBELL}, on unless it is
     * {@code 0}, {@code false}, {@code no} or {@code off}). It is only ever asked for over a
     * {@code unix:} address and by a behaviour that is sent the cancel; the stream's cancel
     * follows regardless, so turning it off costs only the head start.
     *
     * @param value whether to ask
     * @return this
     */
    public Builder doorbell(boolean value) {
      this.doorbell = value;
      return this;
    }

    /**
     * Attaches this tool run to its execution.
     *
     * @return the run; close it when the tool is done
     * @throws SidecarException when the daemon refuses the attach ({@link UnauthenticatedException},
     *     {@link InvalidArgumentException}, {@link NotFoundException}, {@link
     *     PermissionDeniedException}) or cannot be reached ({@link UnavailableException}, {@link
     *     DeadlineExceededException})
     */
    public ToolRun attach() {
      Thread worker = behavior == InterruptBehavior.THREAD_INTERRUPT && interruptWorker
          ? (interruptThread != null ? interruptThread : Thread.currentThread()) : null;
      if (source != null) {
        if (address != null || token != null) {
          throw new IllegalArgumentException("pass either a source (an in-process signal) or address/token (a sidecar)");
        }
        return local(source.defaultSignal(), source.grace(), worker);
      }
      String resolvedToken = SidecarAddress.resolveToken(token);
      if (resolvedToken == null) {
        return local(null, null, null);
      }
      resolvedAddress = SidecarAddress.resolve(address);
      DefaultCancellationSignal signal = new DefaultCancellationSignal();
      AtomicReference<Registrar> registrarRef = new AtomicReference<>();
      AtomicReference<ToolStream> streamRef = new AtomicReference<>();
      TerminatorRunner runner = new TerminatorRunner(
          id -> registrarRef.get().callbackFor(id), (id, error) -> streamRef.get().reportResult(id, error));
      Interrupt.Hello hello = hello(resolvedToken, resolvedAddress);
      ManagedChannel channel = SidecarAddress.open(resolvedAddress);
      ToolStream stream = new ToolStream(channel, resolvedAddress, timeout, signal, runner::submit);
      streamRef.set(stream);
      Registrar registrar = new Registrar(behavior, stream);
      registrarRef.set(registrar);
      AtomicReference<ToolRun> runRef = new AtomicReference<>();
      // Created before the hook and given to the run: the one record of the interrupt. The hook
      // is the only way the trip reaches the worker, and it may run at any point of what
      // follows (the stream's reader trips the signal); with the flag shared, the hook's own
      // interrupt (run not published yet) and the run's (published) exclude each other. Not
      // guessed from isCancelled(): that turns true at the trip's first step, before the hooks
      // run, so a run published in between would count as interrupted and never be.
      AtomicBoolean workerInterrupted = new AtomicBoolean();
      if (worker != null) {
        // Armed before the handshake: a cancel that arrives with 'attached' interrupts too.
        signal.addTripHook(() -> {
          ToolRun run = runRef.get();
          if (run != null) {
            run.interruptWorker(); // checks 'armed': not once the run has unwound
          } else if (workerInterrupted.compareAndSet(false, true)) {
            // During the handshake (or before the run is published): not built, so not
            // unwound either, and the worker is interrupted here.
            worker.interrupt();
          }
        });
      }
      Interrupt.Attached attached;
      try {
        attached = stream.attach(hello, timeout);
      } catch (RuntimeException refused) {
        runner.close(0);
        throw refused;
      }
      Duration grace = attached.hasGrace()
          ? Duration.ofSeconds(attached.getGrace().getSeconds(), attached.getGrace().getNanos()) : null;
      ToolRun run = new ToolRun(
          this, signal, registrar, runner, stream, null, attached, grace, worker, workerInterrupted);
      if (beforePublish != null) {
        beforePublish.accept(run);
      }
      runRef.set(run);
      if (attached.getCancelled()) {
        InterruptReason reason = InterruptReason.fromNumber(attached.getReasonValue()).orElse(InterruptReason.USER_SIGINT);
        // The daemon sends the cancel right after 'attached' to an interruptible tool; wait for
        // it so the run starts with the full cancellation. A NON_INTERRUPTIBLE tool is never
        // sent it, but sees the state it attached in.
        boolean delivered = behavior.receivesCancel() && awaitQuietly(signal, timeout);
        if (!delivered) {
          signal.trip(Cancellation.of(reason, ""));
        }
      }
      return run;
    }

    /**
     * Attaches, runs {@code body}, unwinds with the outcome its end implies and closes: {@link
     * ToolOutcome#INTERRUPTED} for {@link CancelledExecutionException} or {@link
     * InterruptedException} (and for a normal return after the cancel), {@link
     * ToolOutcome#FAILED} for other exceptions, {@link ToolOutcome#COMPLETED} otherwise.
     *
     * @param body the tool's code
     * @param <T> what the tool returns
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw
     */
    public <T> T call(Body<T> body) throws Exception {
      try (ToolRun run = attach()) {
        try {
          return body.apply(run);
        } catch (CancelledExecutionException | InterruptedException interrupted) {
          run.unwind(ToolOutcome.INTERRUPTED, TerminatorRunner.describe(interrupted));
          throw interrupted;
        } catch (Exception | Error failure) {
          run.unwind(ToolOutcome.FAILED, TerminatorRunner.describe(failure));
          throw failure;
        }
      }
    }

    /**
     * Tests only: {@code seam} runs on the attaching thread after the handshake, once the run
     * is built and before the trip hook can find it, so a test can put a trip there.
     */
    Builder beforePublish(Consumer<ToolRun> seam) {
      this.beforePublish = seam;
      return this;
    }

    /** The hello this builder sends to the daemon at {@code daemonAddress}. */
    Interrupt.Hello hello(String resolvedToken, String daemonAddress) {
      return Interrupt.Hello.newBuilder()
          .setAttachToken(resolvedToken)
          .setToolName(toolName)
          .setToolCallId(toolCallId)
          .setBehaviorValue(behavior.number())
          .setPid(pid != null ? pid : (int) ProcessHandle.current().pid())
          .setDoorbell(SidecarAddress.wantsDoorbell(doorbell, daemonAddress, behavior))
          .build();
    }

    private ToolRun local(DefaultCancellationSignal signal, Duration grace, Thread worker) {
      AtomicReference<Registrar> registrarRef = new AtomicReference<>();
      TerminatorRunner runner = new TerminatorRunner(id -> registrarRef.get().callbackFor(id), (id, error) -> { });
      LocalBackend backend = new LocalBackend(signal, runner, grace != null ? grace : Duration.ofMillis(500));
      Registrar registrar = new Registrar(behavior, backend);
      registrarRef.set(registrar);
      CancellationSignal visible = signal != null ? signal : NoopCancellationSignal.INSTANCE;
      ToolRun run = new ToolRun(
          this, visible, registrar, runner, null, backend, null, grace, worker, new AtomicBoolean());
      if (signal != null && worker != null && !signal.addTripHook(run::interruptWorker)) {
        run.interruptWorker(); // attached after the trip: interrupted at once
      }
      return run;
    }

    private static boolean awaitQuietly(DefaultCancellationSignal signal, Duration timeout) {
      long deadline = System.nanoTime() + timeout.toNanos();
      boolean interrupted = false;
      try {
        while (true) {
          try {
            return signal.await(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
          } catch (InterruptedException again) {
            interrupted = true;
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
