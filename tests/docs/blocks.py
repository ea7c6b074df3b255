"""The fenced code blocks of the user documentation, and a runner for console transcripts.

A block that is a command or a program either runs in a test under ``tests/docs/`` or says
why it cannot, on the line before it (blank lines allowed in between)::

    <!-- doctest: NAME -->          a test fetches it with docblock("NAME") and runs it
    <!-- illustrative: why -->      shown, not run, and the reason says what proves it instead

Blocks in a data or output language (``text``, ``yaml``, ...) need neither. ``test_blocks.py``
fails when a block of any other language has no marker, or when a ``doctest`` name is used
by no test: a block nobody runs cannot pass for tested.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: Languages that are output or data, never a command or a program: no marker needed.
DATA_LANGUAGES = frozenset({"text", "yaml", "json", "toml", "xml", "mermaid", "proto"})

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>doctest|illustrative)\s*:\s*(?P<value>.*?)\s*-->\s*$")


def doc_files() -> list[Path]:
    """Every page whose blocks are held to the rule: the README, CONTRIBUTING and docs/."""
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its info string, its text and its marker."""

    path: Path
    line: int  # 1-based line of the opening fence
    info: str
    text: str
    marker: str | None  # "doctest" or "illustrative"
    value: str  # the doctest name, or the illustrative reason

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> Iterator[Block]:
    """The fenced blocks of one Markdown file, with the marker written before each."""
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and lines[end].strip().strip(fence[0]) == ""
        ):
            body.append(lines[end][len(indent) :] if lines[end].startswith(indent) else lines[end].lstrip())
            end += 1
        marker = value = None
        previous = index - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        if previous >= 0 and (found := _MARKER.match(lines[previous])) is not None:
            marker, value = found["kind"], found["value"]
        yield Block(path, index + 1, opening["info"].strip(), "\n".join(body) + "\n", marker, value or "")
        index = end + 1


def all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in blocks(path)]


def docblock(name: str) -> Block:
    """The block marked ``<!-- doctest: name -->``: tests run the documentation's own text."""
    found = [block for block in all_blocks() if block.marker == "doctest" and block.value == name]
    assert len(found) == 1, f"expected one block marked `doctest: {name}`, found {len(found)}"
    return found[0]


# -- console transcripts -------------------------------------------------------------------

_MEANWHILE = re.compile(r"^\s*#\s*meanwhile:\s*(?P<command>.+)$")
#: A transcript line's annotation: two or more spaces, then `# ...` (e.g. `Terminated   # why`).
_ANNOTATION = re.compile(r"\s{2,}#\s.*$")


@dataclass
class Step:
    """A ``$ command``, the output lines it prints, and commands run "meanwhile" after a line."""

    command: str
    output: list[str]
    #: index into ``output`` → commands to run once that line has been printed
    meanwhile: dict[int, list[str]]


def transcript(text: str) -> list[Step]:
    """Parse a ``console`` block: ``$ `` lines are commands, the rest their output; a line
    ``# meanwhile: CMD`` means "while the command runs, after the line above, run CMD"."""
    steps: list[Step] = []
    for raw in text.splitlines():
        if raw.startswith("$ "):
            steps.append(Step(raw[2:], [], {}))
            continue
        assert steps, f"output before the first command: {raw!r}"
        step = steps[-1]
        if (during := _MEANWHILE.match(raw)) is not None:
            step.meanwhile.setdefault(len(step.output) - 1, []).append(during["command"])
        elif raw.strip():
            step.output.append(_ANNOTATION.sub("", raw).rstrip())
    return steps


def run_transcript(
    text: str,
    *,
    cwd: Path,
    env: dict[str, str],
    normalize: Callable[[str], str] = lambda line: line,
    ignore: Callable[[str], bool] = lambda line: False,
    timeout: float = 30.0,
) -> None:
    """Run a console transcript in one bash session and check its output line by line.

    Commands go to bash's stdin one at a time, each once the previous one's expected output
    has been printed (so a background daemon's ``ready`` line is seen before the next
    command). stdout and stderr are one stream, as in a terminal. ``meanwhile`` commands run
    in a second shell that has the session's exported variables. Lines for which ``ignore``
    is true (e.g. log lines) are skipped; the rest must match after ``normalize``.
    """
    env_file = cwd / ".doctest-env"
    shell = subprocess.Popen(
        ["bash", "--noprofile", "--norc"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    assert shell.stdin is not None and shell.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    stdout = shell.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    seen: list[str] = []

    def next_line(deadline: float, expecting: str) -> str | None:
        while True:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no output line {expecting!r} within {timeout} s; so far: {seen}") from None
            if line is None or not ignore(line):
                if line is not None:
                    seen.append(line)
                return line

    try:
        for step in transcript(text):
            shell.stdin.write(f"{step.command}\nexport -p > {env_file}\n")
            shell.stdin.flush()
            deadline = time.monotonic() + timeout
            for position, expected in enumerate(step.output):
                actual = next_line(deadline, expected)
                assert actual is not None, f"the session ended before {expected!r}; output: {seen}"
                assert normalize(actual) == normalize(expected), (
                    f"after `$ {step.command}`: expected {expected!r}, got {actual!r}; output: {seen}"
                )
                for command in step.meanwhile.get(position, []):
                    subprocess.run(
                        ["bash", "-c", f". {env_file}\n{command}"],
                        cwd=cwd,
                        env=env,
                        check=True,
                        timeout=timeout,
                        capture_output=True,
                    )
        shell.stdin.close()
        shell.wait(timeout)
        rest = []
        while (line := next_line(time.monotonic() + timeout, "the end of the session")) is not None:
            rest.append(line)
        assert not rest, f"output the transcript does not show: {rest}"
    finally:
        with contextlib.suppress(OSError):
            shell.stdin.close()
        if shell.poll() is None:
            os.killpg(shell.pid, 9)
            shell.wait(5)
        reader.join(5)
        stdout.close()
