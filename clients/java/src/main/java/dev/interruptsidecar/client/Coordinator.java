package dev.interruptsidecar.client;

import interrupt.v1.CoordinatorServiceGrpc;
import interrupt.v1.Interrupt;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The agent side: begin executions, interrupt them, end them, watch them.
 *
 * <pre>{@code
 * try (Coordinator coordinator = new Coordinator(null)) {   // INTERRUPT_SIDECAR_ADDRESS, else the default socket
 *   Coordinator.BegunExecution turn = coordinator.begin(Coordinator.BeginOptions.defaults());
 *   processBuilder.environment().putAll(turn.toolEnv());     // hand the token to the tool
 *   coordinator.interrupt(turn.executionId(), InterruptReason.USER_SIGINT, "Ctrl+C");
 *   coordinator.end(turn.executionId());
 * }
 * }</pre>
 *
 * <p>Thread-safe. Every call maps a failure to a {@link SidecarException}.
 */
public final class Coordinator implements AutoCloseable {
  private final String address;
  private final ManagedChannel channel;
  private final Duration timeout;

  /**
   * A coordinator for the daemon at {@code address} with a 10 s deadline per call.
   *
   * @param address the daemon's address, or null for {@link SidecarAddress#resolve}'s default
   */
  public Coordinator(String address) {
    this(address, Duration.ofSeconds(10));
  }

  /**
   * A coordinator with a deadline of its own.
   *
   * @param address the daemon's address, or null for the default
   * @param timeout the deadline of each unary call
   */
  public Coordinator(String address, Duration timeout) {
    this.address = SidecarAddress.resolve(address);
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    this.channel = SidecarAddress.open(this.address);
  }

  /**
   * The daemon's address.
   *
   * @return the address dialled
   */
  public String address() {
    return address;
  }

  private CoordinatorServiceGrpc.CoordinatorServiceBlockingStub stub() {
    return CoordinatorServiceGrpc.newBlockingStub(channel).withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * What to begin an execution with; every field is optional.
   *
   * @param executionId a caller-chosen id, or null for a generated one
   * @param parentExecutionId trip with PARENT_CANCELLED when this execution trips, or null
   * @param contextId a context for targeted interrupts, or null
   * @param grace the time tools get to unwind, or null for the daemon's default
   * @param budget a wall-clock budget, or null
   * @param leaseTtl a lease the owner renews with {@link #keepAlive}, or null
   * @param labels free-form labels (may be empty)
   */
  public record BeginOptions(String executionId, String parentExecutionId, String contextId, Duration grace,
      Duration budget, Duration leaseTtl, Map<String, String> labels) {
    /**
     * Copies the labels.
     *
     * @param executionId the id
     * @param parentExecutionId the parent
     * @param contextId the context
     * @param grace the grace
     * @param budget the budget
     * @param leaseTtl the lease
     * @param labels the labels
     */
    public BeginOptions {
      labels = labels == null ? Map.of() : Map.copyOf(labels);
    }

    /**
     * No options: a generated id and the daemon's defaults.
     *
     * @return the options
     */
    public static BeginOptions defaults() {
      return new BeginOptions(null, null, null, null, null, null, Map.of());
    }
  }

  /**
   * A begun execution and the capability to attach to it.
   *
   * @param executionId the execution's id
   * @param attachToken hand it to the tool ({@code INTERRUPT_SIDECAR_TOKEN})
   * @param address the daemon the execution was begun on
   */
  public record BegunExecution(String executionId, String attachToken, String address) {
    /**
     * The environment a tool process needs to attach: merge it into the child's.
     *
     * @return {@code INTERRUPT_SIDECAR_ADDRESS} and {@code INTERRUPT_SIDECAR_TOKEN}
     */
    public Map<String, String> toolEnv() {
      return Map.of(SidecarAddress.ADDRESS_ENV, address, SidecarAddress.TOKEN_ENV, attachToken);
    }

    @Override
    public String toString() {
      return "BegunExecution[executionId=" + executionId + ", address=" + address + "]";
    }
  }

  /**
   * The observable state of one execution.
   *
   * @param executionId its id
   * @param cancelled whether it tripped
   * @param reason the first reason, empty while not cancelled
   * @param trippedAt when it tripped
   * @param ended whether it ended
   * @param attachedTools tool streams attached now
   * @param graceOverruns tools that overran the grace
   */
  public record ExecutionInfo(String executionId, boolean cancelled, Optional<InterruptReason> reason,
      Optional<Instant> trippedAt, boolean ended, int attachedTools, int graceOverruns) {
    static ExecutionInfo of(Interrupt.Execution execution) {
      return new ExecutionInfo(execution.getExecutionId(), execution.getCancelled(),
          InterruptReason.fromNumber(execution.getReasonValue()),
          execution.hasTrippedAt() ? Optional.of(ToolStream.instant(execution.getTrippedAt())) : Optional.empty(),
          execution.getEnded(), execution.getAttachedTools(), execution.getGraceOverruns());
    }
  }

  /**
   * The effect of an interrupt on one execution.
   *
   * @param executionId the execution
   * @param tripped true only when this call tripped it
   * @param reason the execution's effective reason: the first one
   */
  public record InterruptOutcome(String executionId, boolean tripped, Optional<InterruptReason> reason) {}

  /**
   * Begins an execution with a fresh, untripped signal.
   *
   * @param options what to begin it with
   * @return the execution and its attach token
   */
  public BegunExecution begin(BeginOptions options) {
    Interrupt.BeginExecutionRequest.Builder request = Interrupt.BeginExecutionRequest.newBuilder()
        .putAllLabels(options.labels());
    if (options.executionId() != null) {
      request.setExecutionId(options.executionId());
    }
    if (options.parentExecutionId() != null) {
      request.setParentExecutionId(options.parentExecutionId());
    }
    if (options.contextId() != null) {
      request.setContextId(options.contextId());
    }
    if (options.grace() != null) {
      request.setGrace(duration(options.grace()));
    }
    if (options.budget() != null) {
      request.setBudget(duration(options.budget()));
    }
    if (options.leaseTtl() != null) {
      request.setLeaseTtl(duration(options.leaseTtl()));
    }
    try {
      Interrupt.BeginExecutionResponse response = stub().beginExecution(request.build());
      return new BegunExecution(response.getExecutionId(), response.getAttachToken(), address);
    } catch (StatusRuntimeException failure) {
      throw SidecarException.fromRpc(failure, "begin an execution");
    }
  }

  /**
   * Trips one execution. Single-shot: the first reason wins.
   *
   * @param executionId the execution
   * @param reason why
   * @param detail free text ("" for none)
   * @return the outcome
   */
  public InterruptOutcome interrupt(String executionId, InterruptReason reason, String detail) {
    List<InterruptOutcome> outcomes = interrupt(
        Interrupt.InterruptRequest.newBuilder().setExecutionId(executionId), reason, detail);
    return outcomes.isEmpty() ? new InterruptOutcome(executionId, false, Optional.empty()) : outcomes.get(0);
  }

  /**
   * Trips every live execution begun with {@code contextId}, and no other.
   *
   * @param contextId the context
   * @param reason why
   * @param detail free text ("" for none)
   * @return one outcome per execution of the context
   */
  public List<InterruptOutcome> interruptContext(String contextId, InterruptReason reason, String detail) {
    return interrupt(Interrupt.InterruptRequest.newBuilder().setContextId(contextId), reason, detail);
  }

  private List<InterruptOutcome> interrupt(
      Interrupt.InterruptRequest.Builder request, InterruptReason reason, String detail) {
    request.setReasonValue(reason.number()).setDetail(detail);
    try {
      List<InterruptOutcome> outcomes = new ArrayList<>();
      for (Interrupt.InterruptOutcome outcome : stub().interrupt(request.build()).getOutcomesList()) {
        outcomes.add(new InterruptOutcome(
            outcome.getExecutionId(), outcome.getTripped(), InterruptReason.fromNumber(outcome.getReasonValue())));
      }
      return outcomes;
    } catch (StatusRuntimeException failure) {
      throw SidecarException.fromRpc(failure, "interrupt");
    }
  }

  /**
   * Ends an execution: closes every tool's registrar. Idempotent.
   *
   * @param executionId the execution
   * @return its final state
   */
  public ExecutionInfo end(String executionId) {
    try {
      return ExecutionInfo.of(stub().endExecution(
          Interrupt.EndExecutionRequest.newBuilder().setExecutionId(executionId).build()).getExecution());
    } catch (StatusRuntimeException failure) {
      throw SidecarException.fromRpc(failure, "end execution " + executionId);
    }
  }

  /**
   * The state of one execution (live, or recently ended).
   *
   * @param executionId the execution
   * @return its state
   */
  public ExecutionInfo get(String executionId) {
    try {
      return ExecutionInfo.of(stub().getExecution(
          Interrupt.GetExecutionRequest.newBuilder().setExecutionId(executionId).build()).getExecution());
    } catch (StatusRuntimeException failure) {
      throw SidecarException.fromRpc(failure, "get execution " + executionId);
    }
  }

  /**
   * Renews an execution's lease.
   *
   * @param executionId the execution
   * @return when the lease runs out unless renewed again; empty without a lease
   */
  public Optional<Instant> keepAlive(String executionId) {
    try {
      Interrupt.KeepAliveResponse response =
          stub().keepAlive(Interrupt.KeepAliveRequest.newBuilder().setExecutionId(executionId).build());
      return response.hasLeaseExpiresAt() ? Optional.of(ToolStream.instant(response.getLeaseExpiresAt())) : Optional.empty();
    } catch (StatusRuntimeException failure) {
      throw SidecarException.fromRpc(failure, "keep execution " + executionId + " alive");
    }
  }

  /**
   * A snapshot of the execution, then every event until it ends (the wire's {@code
   * ExecutionEvent}s). Blocking; no deadline. Failures surface from the iterator as {@link
   * SidecarException}s.
   *
   * @param executionId the execution
   * @return the events, in order
   */
  public Iterator<Interrupt.ExecutionEvent> watch(String executionId) {
    Iterator<Interrupt.ExecutionEvent> events = CoordinatorServiceGrpc.newBlockingStub(channel)
        .watchExecution(Interrupt.WatchExecutionRequest.newBuilder().setExecutionId(executionId).build());
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        try {
          return events.hasNext();
        } catch (StatusRuntimeException failure) {
          throw SidecarException.fromRpc(failure, "watch execution " + executionId);
        }
      }

      @Override
      public Interrupt.ExecutionEvent next() {
        try {
          return events.next();
        } catch (StatusRuntimeException failure) {
          throw SidecarException.fromRpc(failure, "watch execution " + executionId);
        }
      }
    };
  }

  private static com.google.protobuf.Duration duration(Duration value) {
    if (value.isNegative()) {
      throw new IllegalArgumentException("a duration cannot be negative: " + value);
    }
    return com.google.protobuf.Duration.newBuilder().setSeconds(value.getSeconds()).setNanos(value.getNano()).build();
  }

  /** Closes the channel. */
  @Override
  public void close() {
    channel.shutdownNow();
  }
}
