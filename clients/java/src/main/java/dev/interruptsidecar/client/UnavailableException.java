package dev.interruptsidecar.client;

import io.grpc.Status;

/** The daemon could not be reached, or the tool's stream to it was lost ({@code UNAVAILABLE}). */
public class UnavailableException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public UnavailableException(String message, String terminatorId) {
    super(Status.Code.UNAVAILABLE, message, terminatorId);
  }
}
