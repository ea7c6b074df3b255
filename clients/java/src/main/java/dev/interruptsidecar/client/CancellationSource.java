package dev.interruptsidecar.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * Owns a {@link CancellationSignal} and can trip it: an in-process stand-in for the daemon.
 *
 * <p>For tests of tools ({@link ToolRun.Builder#source}) and for code that wants the signal's
 * semantics without a sidecar. {@link #cancel} is thread-safe and single-shot.
 */
public final class CancellationSource {
  private final DefaultCancellationSignal signal = new DefaultCancellationSignal();
  private final Duration grace;

  /** A source whose runs get the daemon's default grace, 500 ms. */
  public CancellationSource() {
    this(Duration.ofMillis(500));
  }

  /**
   * A source with a grace of its own.
   *
   * @param grace how long after the trip tools get to unwind (process groups are then killed)
   */
  public CancellationSource(Duration grace) {
    this.grace = Objects.requireNonNull(grace, "grace");
  }

  /**
   * The signal this source trips.
   *
   * @return the signal
   */
  public CancellationSignal signal() {
    return signal;
  }

  /**
   * The grace of runs that follow this source.
   *
   * @return how long after the trip tools get to unwind
   */
  public Duration grace() {
    return grace;
  }

  /**
   * Trips the signal.
   *
   * @param reason why
   * @param detail free text ("" for none)
   * @return true when this call tripped it; false when it had tripped already
   */
  public boolean cancel(InterruptReason reason, String detail) {
    Instant now = Instant.now();
    return signal.trip(new Cancellation(reason, detail, Optional.of(now), Optional.of(now.plus(grace))));
  }

  /**
   * Trips the signal without a detail.
   *
   * @param reason why
   * @return true when this call tripped it
   */
  public boolean cancel(InterruptReason reason) {
    return cancel(reason, "");
  }

  DefaultCancellationSignal defaultSignal() {
    return signal;
  }
}
