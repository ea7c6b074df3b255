package dev.interruptsidecar.client;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * A registered terminator; pass it (or its id) to {@link TerminatorRegistrar#unregister(String)}.
 *
 * @param terminatorId the id, unique among the tool's live terminators
 * @param kind what the terminator does at the trip
 * @param pgid the process group, for {@link Kind#PROCESS_GROUP} terminators
 */
public record TerminatorRegistration(String terminatorId, Kind kind, OptionalInt pgid) {

  /** What a terminator does at the trip. */
  public enum Kind {
    /** The daemon tells the tool ({@code run_terminator}) and the client calls the callback. */
    CALLBACK,
    /** The daemon signals the process group itself, then SIGKILLs it after {@code kill_after}. */
    PROCESS_GROUP
  }

  /**
   * Checks the components.
   *
   * @param terminatorId the id
   * @param kind the kind
   * @param pgid the process group
   */
  public TerminatorRegistration {
    Objects.requireNonNull(terminatorId, "terminatorId");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(pgid, "pgid");
  }
}
