package dev.interruptsidecar.client;

import io.grpc.Status;

/** The execution, attach token or process group does not exist (or has ended) ({@code NOT_FOUND}). */
public class NotFoundException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public NotFoundException(String message, String terminatorId) {
    super(Status.Code.NOT_FOUND, message, terminatorId);
  }
}
