"""Finding the copies of one fact in the tracked files: shared by check_version.py and check_identity.py.

A fact written once (the version, the public identity) is copied into files whose formats
cannot read its source. A ``Copy`` says how one kind of copy looks (a pattern whose group
``v`` is the copied value) and which files must hold one; ``scan`` finds them all, and
``missing`` names the required files where a pattern no longer matches.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Copy:
    """Where a copy is, recognised by ``pattern`` (its group ``v`` is the copied value)."""

    name: str
    pattern: re.Pattern[str]
    #: Files that must hold at least one such copy (relative to the root).
    required_in: tuple[str, ...] = ()
    #: True: the pattern means a copy only in ``required_in`` (``version: 1.0.0`` in another
    #: chart is that chart's); False: it is looked for in every tracked file.
    only_there: bool = False
    #: Which fact the value copies, for a checker of several (check_identity.py).
    fact: str = ""
    #: A match counts only when its value contains this (case-insensitive): a pattern wide
    #: enough to catch a misspelt copy also matches other projects' names.
    about: str = ""

    def applies_to(self, rel: str) -> bool:
        return not self.only_there or rel in self.required_in


@dataclass(frozen=True)
class Found:
    """One copy in one file: its value, where the value is, and the copy's kind."""

    copy: Copy
    value: str
    start: int
    end: int
    line: int


def tracked_text_files(root: Path, skip: Iterable[str] = ()) -> Iterator[tuple[str, str]]:
    """``(path relative to root, text)`` of every tracked text file but those in ``skip``."""
    skipped = set(skip)
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    for name in filter(None, names):
        path = root / name
        if name in skipped or not path.is_file():
            continue
        try:
            yield name, path.read_text()
        except UnicodeDecodeError:
            continue


def line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def find(copies: Iterable[Copy], rel: str, text: str) -> list[Found]:
    """Every copy in one file, by the patterns that apply to it."""
    found = []
    for copy in copies:
        if not copy.applies_to(rel):
            continue
        for match in copy.pattern.finditer(text):
            if copy.about and copy.about.lower() not in match["v"].lower():
                continue
            start, end = match.span("v")
            found.append(Found(copy, match["v"], start, end, line_of(text, start)))
    return found


def scan(root: Path, copies: Iterable[Copy], skip: Iterable[str] = ()) -> Iterator[tuple[str, str, list[Found]]]:
    """``(path, text, copies found in it)`` for every tracked text file."""
    copies = tuple(copies)
    for rel, text in tracked_text_files(root, skip):
        yield rel, text, find(copies, rel, text)


def missing(copies: Iterable[Copy], found: dict[str, set[str]], script: str) -> list[str]:
    """A problem for each required file without its copy; ``found`` maps a path to the names of the copies in it."""
    return [
        f"{rel}: has no {copy.name} (the pattern in {script} no longer matches)"
        for copy in copies
        for rel in copy.required_in
        if copy.name not in found.get(rel, set())
    ]


def report(problems: list[str], hint: str, agreed: str) -> int:
    """A checker's exit status: 1 with every problem and ``hint`` on stderr, else 0 and ``agreed``."""
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"\n{hint}", file=sys.stderr)
        return 1
    print(agreed)
    return 0
