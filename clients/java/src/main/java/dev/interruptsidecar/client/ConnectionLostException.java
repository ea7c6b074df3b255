package dev.interruptsidecar.client;

/**
 * The tool's stream to the daemon ended before the tool's run did ({@code UNAVAILABLE}): the
 * daemon died or restarted. The client does not reconnect by itself, and losing the daemon
 * does not cancel the run; attach again with the token to go on being told.
 */
public class ConnectionLostException extends UnavailableException {
  private static final long serialVersionUID = 1L;

  /**
   * The error.
   *
   * @param message what ended, for a person
   */
  public ConnectionLostException(String message) {
    super(message, "");
  }
}
