package dev.interruptsidecar.client;

import io.grpc.Status;

/** The credential (the attach token's secret) does not grant this ({@code PERMISSION_DENIED}). */
public class PermissionDeniedException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public PermissionDeniedException(String message, String terminatorId) {
    super(Status.Code.PERMISSION_DENIED, message, terminatorId);
  }
}
