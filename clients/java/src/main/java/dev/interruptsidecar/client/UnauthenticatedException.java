package dev.interruptsidecar.client;

import io.grpc.Status;

/** No credential was presented (an empty attach token) ({@code UNAUTHENTICATED}). */
public class UnauthenticatedException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public UnauthenticatedException(String message, String terminatorId) {
    super(Status.Code.UNAUTHENTICATED, message, terminatorId);
  }
}
