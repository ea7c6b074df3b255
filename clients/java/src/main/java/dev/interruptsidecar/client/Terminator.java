package dev.interruptsidecar.client;

/**
 * A callback terminator: run once when the execution trips (at once if registered after it).
 *
 * <p>The contract: idempotent (the tool often calls the same handle itself), quick and
 * non-blocking (it runs one after another with the tool's other terminators; one still running
 * after 250 ms no longer holds up the next), and it should not throw — if it does, the
 * exception's text is reported to the daemon as this terminator's failure, and stops no other
 * terminator. Typical: {@code process::destroy}, {@code () -> future.cancel(true)}.
 */
@FunctionalInterface
public interface Terminator {
  /**
   * Stops the work this terminator stands for.
   *
   * @throws Exception reported to the daemon as the terminator's failure
   */
  void terminate() throws Exception;
}
