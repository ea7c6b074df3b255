package dev.interruptsidecar.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** What the JDK lacks about process groups, read from {@code /proc} (Linux). */
final class ProcessGroups {
  private static final System.Logger LOG = System.getLogger(ProcessGroups.class.getName());
  private static final Path PROC = Path.of("/proc");

  private ProcessGroups() {}

  /** The fields after the command name of {@code /proc/PID/stat}: state, ppid, pgrp, session, ... */
  static Optional<String[]> stat(long pid) {
    try {
      String stat = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.US_ASCII);
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      return Optional.of(stat.substring(stat.lastIndexOf(')') + 2).trim().split(" "));
    } catch (IOException | RuntimeException gone) {
      return Optional.empty();
    }
  }

  /** The process group of {@code pid}, empty when it is gone. */
  static Optional<Long> pgid(long pid) {
    return stat(pid).map(fields -> Long.parseLong(fields[2]));
  }

  /** True while {@code pid} exists and is not a zombie (an exited, unreaped child). */
  static boolean running(long pid) {
    return stat(pid).map(fields -> !"Z".equals(fields[0]) && !"X".equals(fields[0])).orElse(false);
  }

  /** The live (non-zombie) members of a process group. */
  static List<Long> members(long pgid) {
    List<Long> members = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
      for (Path entry : entries) {
        long pid = Long.parseLong(entry.getFileName().toString());
        stat(pid).ifPresent(fields -> {
          if (Long.parseLong(fields[2]) == pgid && !"Z".equals(fields[0]) && !"X".equals(fields[0])) {
            members.add(pid);
          }
        });
      }
    } catch (IOException | NumberFormatException unreadable) {
      LOG.log(Level.DEBUG, "cannot list /proc: " + unreadable.getMessage());
    }
    return members;
  }

  /** Sends {@code signal} to the whole group; best-effort, quiet when the group is gone. */
  static void signal(long pgid, int signal) {
    if (members(pgid).isEmpty()) {
      return;
    }
    if (signal == ManagedProcess.SIGKILL) {
      // SIGKILL without a fork: ProcessHandle.destroyForcibly() sends it to each member.
      for (long pid : members(pgid)) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
      return;
    }
    try {
      // The JDK cannot signal a group; kill(1) can, atomically.
      Process kill = new ProcessBuilder("kill", "-s", Integer.toString(signal), "--", "-" + pgid)
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      kill.waitFor();
    } catch (IOException failure) {
      LOG.log(Level.WARNING, "could not signal process group " + pgid + ": " + failure.getMessage());
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
