package dev.interruptsidecar.client;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;

/** Where the daemon is, and the capability to attach: explicit values first, then the environment. */
public final class SidecarAddress {
  /** The variable naming the daemon: {@code unix:///abs/path.sock} or {@code HOST:PORT}. */
  public static final String ADDRESS_ENV = "INTERRUPT_SIDECAR_ADDRESS";
  /** The variable holding the attach token the agent handed to the tool. */
  public static final String TOKEN_ENV = "INTERRUPT_SIDECAR_TOKEN";
  /**
   * The variable that turns the cancel doorbell off: {@code 0} (or {@code false}, {@code no},
   * {@code off}) and the tool never asks for it. Any other value, or none, leaves it on.
   */
  public static final String DOORBELL_ENV = "INTERRUPT_SIDECAR_DOORBELL";

  private static final Set<String> OFF = Set.of("0", "false", "no", "off");

  private SidecarAddress() {}

  /**
   * Where {@code interrupt-sidecar serve} listens without {@code --listen}: {@code
   * $XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock}, else {@code
   * /tmp/interrupt-sidecar-$UID/sidecar.sock}.
   *
   * @return a {@code unix://} address
   */
  public static String defaultAddress() {
    String runtimeDir = env("XDG_RUNTIME_DIR");
    Path base = runtimeDir != null
        ? Path.of(runtimeDir, "interrupt-sidecar")
        : Path.of("/tmp", "interrupt-sidecar-" + uid());
    return "unix://" + base.resolve("sidecar.sock");
  }

  /**
   * The daemon address: the argument, else {@code INTERRUPT_SIDECAR_ADDRESS}, else {@link
   * #defaultAddress()}.
   *
   * @param address an explicit address, or null
   * @return the address to dial
   */
  public static String resolve(String address) {
    if (address != null && !address.isBlank()) {
      return address.strip();
    }
    String fromEnv = env(ADDRESS_ENV);
    return fromEnv != null ? fromEnv : defaultAddress();
  }

  /** The token: the argument (even "", which the daemon refuses), else the environment, else null. */
  static String resolveToken(String token) {
    return token != null ? token : env(TOKEN_ENV);
  }

  /**
   * Whether a tool asks for the cancel doorbell: only over a {@code unix:} address (the
   * doorbell is a unix socket path on the daemon's host, and only a unix address says the
   * daemon is on this one) and for a behaviour that is sent the cancel; then the option, else
   * {@code INTERRUPT_SIDECAR_DOORBELL}, else yes.
   *
   * @param option the builder's choice, or null for the environment's
   * @param address the resolved daemon address
   * @param behavior the tool's behaviour
   * @param envValue the value of {@code INTERRUPT_SIDECAR_DOORBELL}, or null
   * @return whether hello asks for the doorbell
   */
  static boolean wantsDoorbell(Boolean option, String address, InterruptBehavior behavior, String envValue) {
    if (!address.startsWith("unix:") || !behavior.receivesCancel()) {
      return false;
    }
    if (option != null) {
      return option;
    }
    return envValue == null || !OFF.contains(envValue.toLowerCase(Locale.ROOT));
  }

  /** {@link #wantsDoorbell(Boolean, String, InterruptBehavior, String)} with this process's environment. */
  static boolean wantsDoorbell(Boolean option, String address, InterruptBehavior behavior) {
    return wantsDoorbell(option, address, behavior, env(DOORBELL_ENV));
  }

  /**
   * Netty's bootstrap warns on every unix-socket connection that the SO_KEEPALIVE option gRPC
   * sets does not apply to a domain socket: true and harmless, so Netty's bootstrap loggers are quieted
   * (unless the application configured it). Held here so the setting is not garbage-collected.
   */
  private static final java.util.logging.Logger BOOTSTRAP_LOG =
      java.util.logging.Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap");

  /** A plaintext channel to the daemon (unix sockets through Netty's epoll transport). */
  static ManagedChannel open(String address) {
    if (address.startsWith("unix:")) {
      synchronized (BOOTSTRAP_LOG) {
        if (BOOTSTRAP_LOG.getLevel() == null) {
          BOOTSTRAP_LOG.setLevel(java.util.logging.Level.SEVERE);
        }
      }
    }
    return Grpc.newChannelBuilder(address, InsecureChannelCredentials.create()).build();
  }

  static String env(String name) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? null : value.strip();
  }

  private static String uid() {
    // The JDK has no getuid(); /proc/self is owned by the process's uid.
    try {
      Object owner = java.nio.file.Files.getAttribute(Path.of("/proc/self"), "unix:uid");
      return String.valueOf(owner);
    } catch (java.io.IOException | UnsupportedOperationException | IllegalArgumentException noProc) {
      return System.getProperty("user.name", "0");
    }
  }
}
