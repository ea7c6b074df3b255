package dev.interruptsidecar.client;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Objects;

/**
 * Root of every error the client raises about the sidecar.
 *
 * <p>{@link #code()} is the gRPC status the daemon answered with; each subclass names one. A
 * refused attach (the stream ends with a status) and a refused request on the stream (a {@code
 * ChannelError} message) map to the same classes. {@link #terminatorId()} names the terminator
 * concerned, when there is one.
 */
public class SidecarException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String terminatorId;

  /**
   * An error with a status code.
   *
   * @param code the gRPC status
   * @param message what went wrong, for a person
   * @param terminatorId the terminator concerned, "" when none
   */
  public SidecarException(Status.Code code, String message, String terminatorId) {
    super(message + " (" + code.name() + ")");
    this.code = Objects.requireNonNull(code, "code");
    this.terminatorId = Objects.requireNonNull(terminatorId, "terminatorId");
  }

  /**
   * The gRPC status this error maps to.
   *
   * @return the status code
   */
  public Status.Code code() {
    return code;
  }

  /**
   * The terminator concerned.
   *
   * @return its id, "" when none is concerned
   */
  public String terminatorId() {
    return terminatorId;
  }

  /**
   * The exception for a gRPC status code number (as in {@code ChannelError.code}).
   *
   * @param code a gRPC status code number
   * @param message what went wrong
   * @param terminatorId the terminator concerned, "" when none
   * @return the matching subclass (a plain {@code SidecarException} for other codes)
   */
  public static SidecarException forCode(int code, String message, String terminatorId) {
    Status status = Status.fromCodeValue(code);
    String text = status.getCode() == Status.Code.UNKNOWN && code != Status.Code.UNKNOWN.value()
        ? message + " [status " + code + "]" : message;
    return forCode(status.getCode(), text, terminatorId);
  }

  /**
   * The exception for a gRPC status code.
   *
   * @param code the status code
   * @param message what went wrong
   * @param terminatorId the terminator concerned, "" when none
   * @return the matching subclass (a plain {@code SidecarException} for other codes)
   */
  public static SidecarException forCode(Status.Code code, String message, String terminatorId) {
    switch (code) {
      case INVALID_ARGUMENT:
        return new InvalidArgumentException(message, terminatorId);
      case NOT_FOUND:
        return new NotFoundException(message, terminatorId);
      case ALREADY_EXISTS:
        return new AlreadyExistsException(message, terminatorId);
      case FAILED_PRECONDITION:
        return new FailedPreconditionException(message, terminatorId);
      case PERMISSION_DENIED:
        return new PermissionDeniedException(message, terminatorId);
      case UNAUTHENTICATED:
        return new UnauthenticatedException(message, terminatorId);
      case RESOURCE_EXHAUSTED:
        return new ResourceExhaustedException(message, terminatorId);
      case UNAVAILABLE:
        return new UnavailableException(message, terminatorId);
      case DEADLINE_EXCEEDED:
        return new DeadlineExceededException(message, terminatorId);
      default:
        return new SidecarException(code, message, terminatorId);
    }
  }

  /**
   * Maps a failed RPC to this hierarchy.
   *
   * @param error what gRPC threw
   * @param what what was being done, for the message
   * @return the matching exception, with the RPC as its cause
   */
  public static SidecarException fromRpc(StatusRuntimeException error, String what) {
    return fromStatus(error.getStatus(), what, error);
  }

  static SidecarException fromStatus(Status status, String what, Throwable cause) {
    String details = status.getDescription() != null ? status.getDescription() : "no details";
    SidecarException mapped = forCode(status.getCode(), what + ": " + details, "");
    if (cause != null) {
      mapped.initCause(cause);
    }
    return mapped;
  }
}
