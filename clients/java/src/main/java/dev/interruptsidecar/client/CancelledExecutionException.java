package dev.interruptsidecar.client;

import java.util.Optional;

/**
 * The execution a tool runs in was cancelled: thrown by {@link CancellationSignal#checkpoint()}.
 *
 * <p>Deliberately <em>not</em> a {@link SidecarException}: it is the normal way a tool learns
 * it was cancelled, not a failure of the sidecar, and code that falls back on {@code catch
 * (SidecarException e)} (daemon unreachable, say) must never swallow it. Catch it to turn the
 * cancel into the tool's "interrupted" result.
 */
public class CancelledExecutionException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final InterruptReason reason;
  private final String detail;
  /** The full cancellation; not serialized (a record of optional fields). */
  private final transient Cancellation cancellation;

  /**
   * An exception carrying the cancellation.
   *
   * @param cancellation what is known about the cancellation
   */
  public CancelledExecutionException(Cancellation cancellation) {
    super(message(cancellation));
    this.reason = cancellation.reason();
    this.detail = cancellation.detail();
    this.cancellation = cancellation;
  }

  private static String message(Cancellation cancellation) {
    String text = "execution cancelled: " + cancellation.reason().name();
    return cancellation.detail().isEmpty() ? text : text + " (" + cancellation.detail() + ")";
  }

  /**
   * The execution's reason: the first one it tripped with.
   *
   * @return the reason
   */
  public InterruptReason getReason() {
    return reason;
  }

  /**
   * The interrupt's free-text detail.
   *
   * @return the detail, "" when none was given
   */
  public String getDetail() {
    return detail;
  }

  /**
   * Everything known about the cancellation.
   *
   * @return the cancellation (empty only after deserialization)
   */
  public Optional<Cancellation> getCancellation() {
    return Optional.ofNullable(cancellation);
  }
}
