package dev.interruptsidecar.client;

import io.grpc.Status;

/** The daemon did not answer in time ({@code DEADLINE_EXCEEDED}). */
public class DeadlineExceededException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public DeadlineExceededException(String message, String terminatorId) {
    super(Status.Code.DEADLINE_EXCEEDED, message, terminatorId);
  }
}
