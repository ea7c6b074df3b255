"""``interrupt-sidecar run``: real wrapper processes, real commands, a real daemon.

Every command here is a real process tree; "gone" is checked through ``/proc``. Waits
poll with deadlines; nothing sleeps a fixed time. Every test runs against both
implementations, the Python wrapper and the native binary (``implementation``, conftest.py),
with the same assertions.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar.wrapper import (
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from interrupt_sidecar_client import BegunExecution, Coordinator, EventKind, InterruptReason
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.conftest import ROOT, DaemonProcess
from tests.polling import eventually
from tests.requires import require_program

EXIT_DEADLINE_S = 15.0


# -- helpers -------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """True while ``pid`` is a running (not zombie) process, per ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def session_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rfind(b")") + 2 :].split()[3])


def read_int(path: Path) -> int | None:
    """The integer in ``path`` once it has been written completely (a line), else None."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return int(text.split()[0]) if text.endswith("\n") else None


class Wrapper:
    """One ``interrupt-sidecar run ... -- CMD`` process (``implementation`` is the argv before ``run``)."""

    def __init__(
        self,
        implementation: list[str],
        command: list[str],
        *options: str,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> None:
        base = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [*implementation, "run", *options, "--", *command],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**base, **(env or {})},
        )
        self._stdin = stdin
        self._read = ""
        self.stdout = ""
        self.stderr = ""

    @property
    def pid(self) -> int:
        return self.process.pid

    def readline(self) -> str:
        """One line of the command's stdout (blocking: the test's timeout bounds it)."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self._read += line
        return line

    def finish(self, timeout: float = EXIT_DEADLINE_S) -> int:
        """Wait for the wrapper's exit (SIGKILL and fail if it overstays); returns its code."""
        try:
            self.stdout, self.stderr = self.process.communicate(self._stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.stdout, self.stderr = self.process.communicate()
            self.stdout = self._read + self.stdout
            raise AssertionError(f"the wrapper did not exit within {timeout}s; stderr:\n{self.stderr}") from None
        self.stdout = self._read + self.stdout
        self.elapsed = time.monotonic() - self.started
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


class Wrappers(list[Wrapper]):
    """The wrappers a test started, and the implementation it starts them with."""

    def __init__(self, implementation: list[str]) -> None:
        super().__init__()
        self.implementation = implementation


@pytest.fixture
def wrappers(implementation: list[str]) -> Iterator[Wrappers]:
    """Wrappers a test started; any still running at the end is SIGKILLed by its PID."""
    started = Wrappers(implementation)
    yield started
    for wrapper in started:
        wrapper.kill()


@pytest.fixture
def coordinator(daemon: DaemonProcess) -> Iterator[Coordinator]:
    with Coordinator(daemon.address) as coordinator:
        yield coordinator


@pytest.fixture
def turn(coordinator: Coordinator) -> BegunExecution:
    return coordinator.begin(grace=0.3)


def start(wrappers: Wrappers, command: list[str], *options: str, via: tuple[str, ...] = (), **kwargs: Any) -> Wrapper:
    """Start ``run *options -- command`` with the test's implementation (behind ``via``, a launcher)."""
    wrapper = Wrapper([*via, *wrappers.implementation], command, *options, **kwargs)
    wrappers.append(wrapper)
    return wrapper


def script(tmp_path: Path, body: str, name: str = "tool.sh") -> list[str]:
    """A shell-script tool in ``tmp_path``; the command line that runs it."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return [str(path)]


# -- interrupted -----------------------------------------------------------------------


def test_interrupt_kills_the_group_and_exits_124_with_the_reason(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    tool = script(
        tmp_path,
        f"""\
        sleep 30 &
        echo $! > {tmp_path}/child.pid
        echo $$ > {tmp_path}/tool.pid
        wait
        echo finished > {tmp_path}/finished
        """,
    )
    wrapper = start(wrappers, tool, env=turn.tool_env())
    tool_pid = eventually(lambda: read_int(tmp_path / "tool.pid"))
    child_pid = eventually(lambda: read_int(tmp_path / "child.pid"))
    assert os.getpgid(tool_pid) == tool_pid != os.getpgid(wrapper.pid), "CMD leads a process group of its own"
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT, detail="new input")

    assert wrapper.finish() == EXIT_INTERRUPTED, wrapper.stderr
    assert "interrupted NOW_PRIORITY_INPUT: new input" in wrapper.stderr
    assert not alive(tool_pid) and not alive(child_pid)
    assert not (tmp_path / "finished").exists()


def test_a_trip_before_the_attach_never_starts_the_command(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.BUDGET_EXCEEDED)
    wrapper = start(wrappers, script(tmp_path, f"touch {tmp_path}/ran\n"), env=turn.tool_env())

    assert wrapper.finish() == EXIT_INTERRUPTED, wrapper.stderr
    assert "interrupted BUDGET_EXCEEDED (before the command started)" in wrapper.stderr
    assert not (tmp_path / "ran").exists()


def test_a_c_program_is_interrupted_and_handles_sigterm(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    gcc = require_program("gcc", "the C tool is compiled here")
    source = tmp_path / "crawl.c"
    source.write_text(
        textwrap.dedent(
            """\
            #include <signal.h>
            #include <stdio.h>
            #include <unistd.h>

            /* write and _exit: stdio in a handler could flush "ready" a second time if
               the signal lands while fflush is still bookkeeping it. */
            static void stop(int sig) {
                static const char line[] = "crawl: stopping, partial results saved\\n";
                (void)sig;
                (void)!write(1, line, sizeof line - 1);
                _exit(0);
            }

            int main(void) {
                signal(SIGTERM, stop);
                puts("crawl: ready");
                fflush(stdout);
                for (;;) pause();
            }
            """
        )
    )
    subprocess.run([gcc, "-O2", "-o", str(tmp_path / "crawl"), str(source)], check=True, timeout=30)
    wrapper = start(wrappers, [str(tmp_path / "crawl")], "--tool-name", "crawl", env=turn.tool_env())
    assert wrapper.readline() == "crawl: ready\n"
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT, detail="Ctrl+C")

    assert wrapper.finish() == EXIT_INTERRUPTED, wrapper.stderr
    assert wrapper.stdout.splitlines() == ["crawl: ready", "crawl: stopping, partial results saved"]
    assert "interrupted USER_SIGINT: Ctrl+C" in wrapper.stderr


# -- finished on its own -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [("exit 0", 0), ("exit 3", 3), ("kill -TERM $$", 128 + 15), ("kill -KILL $$", 128 + 9)],
)
def test_the_commands_own_exit_code_passes_through(
    tmp_path: Path, wrappers: Wrappers, turn: BegunExecution, body: str, code: int
) -> None:
    wrapper = start(wrappers, script(tmp_path, f"echo out\necho err >&2\n{body}\n"), env=turn.tool_env())

    assert wrapper.finish() == code, wrapper.stderr
    assert (wrapper.stdout, wrapper.stderr) == ("out\n", "err\n"), "CMD keeps the wrapper's streams"


def test_a_command_that_does_not_exist_exits_127(wrappers: Wrappers, turn: BegunExecution) -> None:
    wrapper = start(wrappers, ["/nonexistent/tool"], env=turn.tool_env())

    assert wrapper.finish() == EXIT_NOT_FOUND
    assert "cannot run '/nonexistent/tool'" in wrapper.stderr


# -- no orphans --------------------------------------------------------------------------


def test_a_daemonized_grandchild_does_not_outlive_the_wrapper(
    tmp_path: Path, wrappers: Wrappers, turn: BegunExecution
) -> None:
    # Double fork + setsid: the grandchild leaves the group and the session, and its
    # parent exits, so only the subreaper still has it. It ignores SIGTERM, so the
    # wrapper has to escalate to SIGKILL after --kill-after.
    daemonize = f"""\
        ( setsid sh -c 'trap "" TERM; echo $$ > {tmp_path}/daemon.pid; exec sleep 60' & )
        while [ ! -s {tmp_path}/daemon.pid ]; do sleep 0.01; done
        echo $$ > {tmp_path}/tool.pid
        exit 0
        """
    wrapper = start(wrappers, script(tmp_path, daemonize), "--kill-after", "300ms", env=turn.tool_env())
    grandchild = eventually(lambda: read_int(tmp_path / "daemon.pid"))
    eventually(lambda: read_int(tmp_path / "tool.pid"))
    if alive(grandchild):
        assert session_of(grandchild) == grandchild != session_of(wrapper.pid), "it left the session"

    assert wrapper.finish() == 0, wrapper.stderr
    assert not alive(grandchild), "the daemonized grandchild survived the wrapper"
    assert wrapper.elapsed >= 0.3, "SIGTERM is ignored: only SIGKILL after --kill-after ends it"


def test_descendants_of_an_interrupted_command_are_killed_too(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    tool = script(
        tmp_path,
        f"""\
        ( setsid sleep 60 & echo $! > {tmp_path}/escaped.pid )
        sleep 60 &
        echo $! > {tmp_path}/child.pid
        wait
        """,
    )
    wrapper = start(wrappers, tool, env=turn.tool_env())
    escaped = eventually(lambda: read_int(tmp_path / "escaped.pid"))
    child = eventually(lambda: read_int(tmp_path / "child.pid"))
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.TASK_CANCELLED)

    assert wrapper.finish() == EXIT_INTERRUPTED, wrapper.stderr
    assert not alive(escaped) and not alive(child)


def test_killing_the_wrapper_kills_the_command(tmp_path: Path, wrappers: Wrappers, turn: BegunExecution) -> None:
    wrapper = start(wrappers, script(tmp_path, f"echo $$ > {tmp_path}/tool.pid\nexec sleep 60\n"), env=turn.tool_env())
    tool_pid = eventually(lambda: read_int(tmp_path / "tool.pid"))
    wrapper.process.kill()

    wrapper.finish()
    eventually(lambda: not alive(tool_pid), timeout=5.0)


# -- signals to the wrapper ---------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_to_the_wrapper_are_forwarded_to_the_command(
    tmp_path: Path, wrappers: Wrappers, turn: BegunExecution, signum: signal.Signals
) -> None:
    name = signum.name.removeprefix("SIG")
    tool = script(
        tmp_path,
        f"""\
        trap 'echo {name} > {tmp_path}/got; exit 42' {name}
        echo ready > {tmp_path}/ready
        while :; do sleep 0.05; done
        """,
    )
    wrapper = start(wrappers, tool, env=turn.tool_env())
    eventually(lambda: (tmp_path / "ready").exists())
    wrapper.process.send_signal(signum)

    assert wrapper.finish() == 42, wrapper.stderr
    assert (tmp_path / "got").read_text() == f"{name}\n"


def test_a_forwarded_signal_that_kills_the_command_exits_128_plus_n(
    tmp_path: Path, wrappers: Wrappers, turn: BegunExecution
) -> None:
    wrapper = start(wrappers, script(tmp_path, f"echo > {tmp_path}/ready\nsleep 60\n"), env=turn.tool_env())
    eventually(lambda: (tmp_path / "ready").exists())
    wrapper.process.send_signal(signal.SIGTERM)

    assert wrapper.finish() == 128 + signal.SIGTERM, wrapper.stderr


# -- the daemon unreachable, refusing, absent ----------------------------------------------


def test_an_unreachable_daemon_exits_4_without_running_the_command(tmp_path: Path, wrappers: Wrappers) -> None:
    env = {"INTERRUPT_SIDECAR_ADDRESS": f"unix://{tmp_path}/none.sock", "INTERRUPT_SIDECAR_TOKEN": "ist1.x.y"}
    wrapper = start(wrappers, script(tmp_path, f"touch {tmp_path}/ran\n"), env=env)

    assert wrapper.finish() == EXIT_UNREACHABLE
    assert "cannot reach the daemon; the command was not run" in wrapper.stderr
    assert not (tmp_path / "ran").exists()


def test_a_refused_attach_exits_5_without_running_the_command(
    tmp_path: Path, wrappers: Wrappers, daemon: DaemonProcess
) -> None:
    wrapper = start(
        wrappers, script(tmp_path, f"touch {tmp_path}/ran\n"), "--address", daemon.address, "--token", "not-a-token"
    )

    assert wrapper.finish() == EXIT_REFUSED
    assert "refused the attach" in wrapper.stderr
    assert not (tmp_path / "ran").exists()


def test_without_a_token_the_command_runs_unchanged(tmp_path: Path, wrappers: Wrappers) -> None:
    # No sidecar: the wrapper execs the command (same pid, group and streams).
    wrapper = start(wrappers, ["sh", "-c", "echo $$; cat; exit 7"], stdin="hello\n")

    assert wrapper.finish() == 7
    assert wrapper.stdout == f"{wrapper.pid}\nhello\n"
    assert wrapper.stderr == ""


@pytest.mark.parametrize(
    "options",
    [(), ("--tool-name", "t", "--tool-call-id=c1", "--address", "unix:///nowhere"), ("--behavior", "COOPERATIVE")],
    ids=["bare", "unchecked-options", "checked-option"],
)
def test_without_a_token_options_change_nothing(tmp_path: Path, wrappers: Wrappers, options: tuple[str, ...]) -> None:
    # The fast path (options it need not check) and the full parser (the others) exec alike.
    wrapper = start(wrappers, ["sh", "-c", "echo $$; exit 3"], *options)

    assert wrapper.finish() == 3
    assert wrapper.stdout == f"{wrapper.pid}\n"  # exec'd: the wrapper's own pid
    assert wrapper.stderr == ""


@pytest.mark.parametrize(("name", "code"), [("missing", EXIT_NOT_FOUND), ("not-executable", 126)])
def test_without_a_token_a_command_that_cannot_run_exits_like_a_shell(
    tmp_path: Path, wrappers: Wrappers, name: str, code: int
) -> None:
    command = str(tmp_path / name)
    if name == "not-executable":
        (tmp_path / name).write_text("#!/bin/sh\n")
    wrapper = start(wrappers, [command])

    assert wrapper.finish() == code
    assert wrapper.stderr.startswith(f"interrupt-sidecar run: cannot run {command!r}: ")


# -- other behaviours ---------------------------------------------------------------------


def test_cooperative_sends_the_signal_and_lets_the_command_finish(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    tool = script(
        tmp_path,
        f"""\
        trap 'echo "partial result"; exit 0' INT
        echo ready > {tmp_path}/ready
        while :; do sleep 0.05; done
        """,
    )
    wrapper = start(wrappers, tool, "--behavior", "cooperative", "--signal", "INT", env=turn.tool_env())
    eventually(lambda: (tmp_path / "ready").exists())
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT)

    assert wrapper.finish() == EXIT_INTERRUPTED, wrapper.stderr
    assert wrapper.stdout == "partial result\n"


def test_non_interruptible_runs_to_completion_through_a_trip(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, turn: BegunExecution
) -> None:
    tool = script(
        tmp_path,
        f"""\
        echo ready > {tmp_path}/ready
        while [ ! -e {tmp_path}/go ]; do sleep 0.01; done
        exit 5
        """,
    )
    wrapper = start(wrappers, tool, "--behavior", "NON_INTERRUPTIBLE", env=turn.tool_env())
    eventually(lambda: (tmp_path / "ready").exists())
    coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    (tmp_path / "go").touch()

    assert wrapper.finish() == 5, wrapper.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ((), "name the command"),
        (("--signal", "BOGUS"), "not a signal name"),
        (("--behavior", "COOPERATIVE", "--kill-after", "1s"), "EXTERNALLY_TERMINATED only"),
        (("--kill-after", "soon"), "not a duration"),
        (("--behavior", "THREAD_INTERRUPT"), "invalid choice"),
    ],
)
@pytest.mark.parametrize("token", ["ist1.x.y", None], ids=["token", "no-token"])
def test_usage_errors_exit_2(
    tmp_path: Path, implementation: list[str], options: tuple[str, ...], message: str, token: str | None
) -> None:
    # Without a token too: the fast exec path must leave every check to the full parser.
    command = [] if not options else ["true"]
    env = {k: v for k, v in os.environ.items() if k != "INTERRUPT_SIDECAR_TOKEN"}
    env["INTERRUPT_SIDECAR_ADDRESS"] = "unix:///nonexistent"
    if token is not None:
        env["INTERRUPT_SIDECAR_TOKEN"] = token
    result = subprocess.run(
        [*implementation, "run", *options, "--", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=EXIT_DEADLINE_S,
    )
    assert result.returncode == EXIT_USAGE
    assert message in result.stderr


def test_a_command_run_from_a_terminal_can_read_it(implementation: list[str], turn: BegunExecution) -> None:
    # In a group of its own the command would be a background job of the terminal and
    # stop (SIGTTIN) at its first read; the wrapper hands it the foreground.
    script_tool = require_program("script", "util-linux script gives the command a terminal")
    wrapper_line = shlex.join([*implementation, "run", "--", "sh", "-c", 'read x; echo "got $x"; exit 3'])
    base = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
    terminal = subprocess.Popen(
        [script_tool, "-qec", f"{wrapper_line}; echo wrapper-exit=$?", "/dev/null"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**base, **turn.tool_env()},
    )
    try:
        output, _ = terminal.communicate("hello\n", timeout=EXIT_DEADLINE_S)
    finally:
        if terminal.poll() is None:
            terminal.kill()
            terminal.communicate()
    assert "got hello" in output
    assert "wrapper-exit=3" in output


@pytest.mark.parametrize(
    ("body", "interrupt", "outcome"),
    [("exit 0", False, "COMPLETED"), ("exit 3", False, "FAILED"), ("sleep 30", True, "INTERRUPTED")],
)
def test_the_daemon_is_told_how_the_command_ended(
    tmp_path: Path,
    wrappers: Wrappers,
    coordinator: Coordinator,
    turn: BegunExecution,
    body: str,
    interrupt: bool,
    outcome: str,
) -> None:
    events = coordinator.watch(turn.execution_id)
    assert next(events).kind is EventKind.SNAPSHOT  # subscribed before the tool attaches
    wrapper = start(
        wrappers, script(tmp_path, f"echo > {tmp_path}/ready\n{body}\n"), "--tool-name", "build", env=turn.tool_env()
    )
    if interrupt:
        eventually(lambda: (tmp_path / "ready").exists())
        coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    wrapper.finish()
    coordinator.end(turn.execution_id)
    unwound = [e.proto.tool_unwound for e in events if e.kind is EventKind.TOOL_UNWOUND]
    assert [(u.tool_name, pb.ToolOutcome.Name(u.outcome)) for u in unwound] == [("build", f"TOOL_OUTCOME_{outcome}")]


def run_behind(
    launcher: list[str], implementation: list[str], command: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``run -- command`` started by ``launcher`` (which sets something up, then execs it);
    asserts it exited 0 and returns the finished process."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
    result = subprocess.run(
        [*launcher, *implementation, "run", "--", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, **env},
        timeout=EXIT_DEADLINE_S,
    )
    assert result.returncode == 0, result.stderr
    return result


#: Starts the wrapper as a non-interactive shell starts a background job (and nohup does):
#: SIGINT, SIGHUP and SIGPIPE ignored, which stays so across exec unless someone resets it;
#: and SIGUSR1 blocked, which an exec keeps too.
_STARTED_IGNORING = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE): signal.signal(s, signal.SIG_IGN)\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


@pytest.mark.parametrize("token", [True, False], ids=["token", "no-token"])
def test_the_command_starts_with_default_signal_dispositions(
    implementation: list[str], turn: BegunExecution, token: bool
) -> None:
    # Python ignores SIGPIPE and SIGXFSZ, the Go runtime catches most signals and keeps an
    # inherited SIG_IGN of SIGINT and SIGHUP: CMD gets a shell's defaults regardless. The
    # mask: the gated child clears it (its own was the wrapper's); without a token CMD is
    # exec'd unchanged, mask included.
    launcher = [sys.executable, "-c", _STARTED_IGNORING]
    result = run_behind(launcher, implementation, ["cat", "/proc/self/status"], turn.tool_env() if token else {})
    fields = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    ignored = int(fields["SigIgn"], 16)
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM):
        assert not ignored & (1 << (signum - 1)), f"{signum.name} is ignored in the command"
    assert int(fields["SigBlk"], 16) == (0 if token else 1 << (signal.SIGUSR1 - 1))


def test_an_empty_token_is_sent_and_refused(tmp_path: Path, wrappers: Wrappers, daemon: DaemonProcess) -> None:
    # --token "" is a token (the daemon refuses it), not "no sidecar" as an empty variable is.
    wrapper = start(wrappers, script(tmp_path, f"touch {tmp_path}/ran\n"), "--address", daemon.address, "--token", "")

    assert wrapper.finish() == EXIT_REFUSED, wrapper.stderr
    assert "refused the attach" in wrapper.stderr and "UNAUTHENTICATED" in wrapper.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("token", [True, False], ids=["token", "no-token"])
def test_the_command_inherits_the_wrappers_descriptors(
    tmp_path: Path, implementation: list[str], turn: BegunExecution, token: bool
) -> None:
    # A descriptor the wrapper was given (here 3 and 4, the numbers a gate's pipes could take)
    # reaches CMD unchanged, and the wrapper's own pipes do not.
    opening = ["sh", "-c", f'exec 3>"{tmp_path}/three" 4>"{tmp_path}/four"; exec "$@"', "sh"]
    tool = 'echo via-3 >&3 && echo via-4 >&4 && ls /proc/self/fd | sort -n | tr "\\n" " "'
    result = run_behind(opening, implementation, ["sh", "-c", tool], turn.tool_env() if token else {})
    assert (tmp_path / "three").read_text() == "via-3\n" and (tmp_path / "four").read_text() == "via-4\n"
    # 0-4, and the descriptor ls opens to list them: nothing of the wrapper's own.
    assert result.stdout.split() == ["0", "1", "2", "3", "4", "5"], result.stdout
