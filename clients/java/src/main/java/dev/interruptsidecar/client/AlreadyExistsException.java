package dev.interruptsidecar.client;

import io.grpc.Status;

/** An execution or terminator with that id exists already ({@code ALREADY_EXISTS}). */
public class AlreadyExistsException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public AlreadyExistsException(String message, String terminatorId) {
    super(Status.Code.ALREADY_EXISTS, message, terminatorId);
  }
}
