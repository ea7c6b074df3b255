package dev.interruptsidecar.client;

/** How a tool's run ended, as the tool reports it when it unwinds ({@code interrupt.v1.ToolOutcome}). */
public enum ToolOutcome {
  /** The work finished normally. */
  COMPLETED(1),
  /** The work stopped early because of the cancel. */
  INTERRUPTED(2),
  /** The work failed for a reason of its own. */
  FAILED(3);

  private final int number;

  ToolOutcome(int number) {
    this.number = number;
  }

  /**
   * The wire's enum number.
   *
   * @return the {@code interrupt.v1.ToolOutcome} number (1..3)
   */
  public int number() {
    return number;
  }
}
