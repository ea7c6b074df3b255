package dev.interruptsidecar.client;

import io.grpc.Status;

/** Well-formed but not allowed now: the behaviour forbids it, or the run is over ({@code FAILED_PRECONDITION}). */
public class FailedPreconditionException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public FailedPreconditionException(String message, String terminatorId) {
    super(Status.Code.FAILED_PRECONDITION, message, terminatorId);
  }
}
