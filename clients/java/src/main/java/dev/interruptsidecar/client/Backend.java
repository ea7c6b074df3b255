package dev.interruptsidecar.client;

import java.time.Duration;

/** Where a registrar's registrations go: the tool's stream, or a local signal. */
interface Backend {
  /** Registers a callback terminator; throws a {@link SidecarException} when refused. */
  void registerCallback(String terminatorId);

  /** Registers a process group; throws a {@link SidecarException} when refused. */
  void registerProcessGroup(String terminatorId, int pgid, int signal, Duration killAfter);

  /** Unregisters; throws a {@link SidecarException} when refused. */
  void unregister(String terminatorId);
}
