package dev.interruptsidecar.client;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything known about an execution's cancellation.
 *
 * @param reason the first reason the execution tripped with
 * @param detail the interrupt's free-text detail ("" when none was given)
 * @param trippedAt when the daemon tripped the execution, when known
 * @param graceDeadline report unwound before this, or the tool is a grace overrun, when known
 */
public record Cancellation(
    InterruptReason reason, String detail, Optional<Instant> trippedAt, Optional<Instant> graceDeadline) {

  /**
   * Checks the components.
   *
   * @param reason the first reason the execution tripped with
   * @param detail the interrupt's free-text detail
   * @param trippedAt when the daemon tripped the execution
   * @param graceDeadline the grace deadline
   */
  public Cancellation {
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(trippedAt, "trippedAt");
    Objects.requireNonNull(graceDeadline, "graceDeadline");
  }

  /**
   * A cancellation with a reason and detail only.
   *
   * @param reason why
   * @param detail free text ("" for none)
   * @return the cancellation, without times
   */
  public static Cancellation of(InterruptReason reason, String detail) {
    return new Cancellation(reason, detail, Optional.empty(), Optional.empty());
  }
}
