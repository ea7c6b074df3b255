package dev.interruptsidecar.client;

import io.grpc.Status;

/** A limit of the daemon was reached (executions, tools, terminators) ({@code RESOURCE_EXHAUSTED}). */
public class ResourceExhaustedException extends SidecarException {
  private static final long serialVersionUID = 1L;

  /**
   * The error, as the daemon or the client words it.
   *
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public ResourceExhaustedException(String message, String terminatorId) {
    super(Status.Code.RESOURCE_EXHAUSTED, message, terminatorId);
  }
}
