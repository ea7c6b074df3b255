package dev.interruptsidecar.client;

import io.grpc.Status;

/** The request was malformed: a field missing, out of range or too large ({@code INVALID_ARGUMENT}). */
public class InvalidArgumentException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public InvalidArgumentException(String message, String terminatorId) {
    super(Status.Code.INVALID_ARGUMENT, message, terminatorId);
  }
}
