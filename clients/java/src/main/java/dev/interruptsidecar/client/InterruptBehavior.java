package dev.interruptsidecar.client;

/**
 * How a tool takes an interrupt, declared once when it attaches ({@code
 * interrupt.v1.InterruptBehavior}). {@link #NON_INTERRUPTIBLE} is the default.
 */
public enum InterruptBehavior {
  /** Not sent the cancel; may not register terminators. For short atomic work. */
  NON_INTERRUPTIBLE(1),
  /** Sent the cancel; the tool polls its signal and returns early. No terminators. */
  COOPERATIVE(2),
  /**
   * Sent the cancel; the client interrupts the worker thread ({@link Thread#interrupt()}) at
   * the trip. May register callback terminators.
   */
  THREAD_INTERRUPT(3),
  /** Sent the cancel; may register callback and process-group terminators. */
  EXTERNALLY_TERMINATED(4);

  private final int number;

  InterruptBehavior(int number) {
    this.number = number;
  }

  /**
   * The wire's enum number.
   *
   * @return the {@code interrupt.v1.InterruptBehavior} number (1..4)
   */
  public int number() {
    return number;
  }

  /**
   * Whether the daemon sends the cancel to tools of this behaviour.
   *
   * @return true for every behaviour but {@link #NON_INTERRUPTIBLE}
   */
  public boolean receivesCancel() {
    return this != NON_INTERRUPTIBLE;
  }

  /**
   * Whether tools of this behaviour may register callback terminators.
   *
   * @return true for {@link #THREAD_INTERRUPT} and {@link #EXTERNALLY_TERMINATED}
   */
  public boolean mayRegisterCallbacks() {
    return this == THREAD_INTERRUPT || this == EXTERNALLY_TERMINATED;
  }

  /**
   * Whether tools of this behaviour may register process-group terminators.
   *
   * @return true for {@link #EXTERNALLY_TERMINATED} only
   */
  public boolean mayRegisterProcessGroups() {
    return this == EXTERNALLY_TERMINATED;
  }
}
