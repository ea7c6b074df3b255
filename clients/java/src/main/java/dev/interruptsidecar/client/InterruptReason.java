package dev.interruptsidecar.client;

import java.util.Optional;

/**
 * Why an execution was cancelled ({@code interrupt.v1.InterruptReason}).
 *
 * <p>For observation only (messages, logs): behaviour depends on "cancelled", never on the
 * reason. The wire's {@code UNSPECIFIED} has no constant: every interrupt says why.
 */
public enum InterruptReason {
  /** The user's Ctrl+C. */
  USER_SIGINT(1),
  /** A NOW-priority input submitted mid-turn. */
  NOW_PRIORITY_INPUT(2),
  /** The execution's budget ran out. */
  BUDGET_EXCEEDED(3),
  /** The parent execution was cancelled (cascade). */
  PARENT_CANCELLED(4),
  /** A scheduled task was cancelled, or its run stopped. */
  TASK_CANCELLED(5),
  /** The host runtime (or the daemon) is shutting down. */
  SYSTEM_SHUTDOWN(6),
  /** The execution's lease was not renewed. */
  LEASE_LOST(7),
  /** The session was explicitly released from outside. */
  SESSION_RELEASED(8),
  /** A peer took over after the holder was lost. */
  HOLDER_LOST(9);

  private final int number;

  InterruptReason(int number) {
    this.number = number;
  }

  /**
   * The wire's enum number.
   *
   * @return the {@code interrupt.v1.InterruptReason} number (1..9)
   */
  public int number() {
    return number;
  }

  /**
   * The reason for a wire number.
   *
   * @param number an {@code interrupt.v1.InterruptReason} number
   * @return the reason, or empty for 0 (unset) or a number newer than this client
   */
  public static Optional<InterruptReason> fromNumber(int number) {
    for (InterruptReason reason : values()) {
      if (reason.number == number) {
        return Optional.of(reason);
      }
    }
    return Optional.empty();
  }
}
