"""Running this checkout's Python code as another uid, wherever the checkout lives.

A test that drops to another uid (the pod simulation runs the chart's uid, a refusal test
runs ``interrupt-sidecar run`` as ``nobody``) needs that uid to reach the interpreter, the
venv and the sources. Neither need be reachable: a checkout in an owner-only directory
(mode 0700, as many home directories are), a pyenv interpreter under ``/root``. The code
itself is world-readable (installed and checked out with the usual umask); only some
directory on the way cannot be searched by others.

So the command runs in a private mount namespace (``unshare --mount``, or the one the pod
simulation's ``unshare`` already made) in which every such directory is covered by a tmpfs
of mode 0755 with only the entries on the way bound back from the original: the same
paths, now searchable, and nothing outside the namespace changed. Copying the code to a
world-readable place instead would not do: the interpreter's installation would have to
be copied too (hundreds of megabytes, and a venv names its base by absolute path), and
the editable installs name the checkout by absolute path.

As a library: :func:`argv`. As a script, run by root inside that namespace:
``python tests/other_uid.py PATH... -- COMMAND...`` makes every PATH reachable by any uid,
then execs COMMAND (in the same process: a PID 1, or a wrapper whose PID and process group
matter, stays itself). Only the standard library: it runs before any venv is reachable.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()

# <sys/mount.h>
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


def code_paths() -> list[Path]:
    """What another uid reads to run this checkout with this interpreter: the interpreter
    (the venv's link and the file it names), the base installation (its standard library),
    the venv, and the checkout (the editable installs point into it)."""
    return [Path(sys.executable), Path(sys.base_prefix), Path(sys.prefix), ROOT]


def argv(command: Sequence[str], *, unshare: str | None = None, paths: Iterable[Path] | None = None) -> list[str]:
    """``command`` wrapped so that it runs where every uid reaches ``paths`` (by default
    :func:`code_paths`).

    ``unshare`` is the path of unshare(1), to make the private mount namespace; None when the
    caller already runs the result in one of its own (``unshare --mount-proc`` makes one)."""
    reach = [str(p) for p in (code_paths() if paths is None else paths)]
    namespace = [unshare, "--mount", "--propagation", "private"] if unshare is not None else []
    return [*namespace, sys.executable, str(SCRIPT), *reach, "--", *command]


def _searchable(directory: Path) -> bool:
    return bool(directory.stat().st_mode & stat.S_IXOTH)


def _ways(paths: Iterable[Path]) -> list[Path]:
    """Each path as given and as resolved: the other uid walks the one it is given, and the
    kernel walks on through the directories its symlinks name."""
    ways: set[Path] = set()
    for path in paths:
        ways.add(Path(os.path.abspath(path)))
        ways.add(Path(os.path.realpath(path)))
    return sorted(ways)


def _first_blocked(ways: list[Path]) -> tuple[Path, set[str]] | None:
    """The outermost directory on any way that others cannot search, and the names of the
    entries in it that the ways go through (every entry, when it is a way's end itself)."""
    for depth in range(1, max(len(w.parts) for w in ways) + 1):
        for way in ways:
            if len(way.parts) < depth:
                continue
            directory = Path(*way.parts[:depth])
            if directory.is_symlink() or not directory.is_dir() or _searchable(directory):
                continue
            keep: set[str] = set()
            for other in ways:
                if other == directory:
                    keep.update(os.listdir(directory))
                elif directory in other.parents:
                    keep.add(other.parts[depth])
            return directory, keep
    return None


def _mount(source: str, target: Path, fstype: str | None, flags: int, data: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    encoded = [None if s is None else s.encode() for s in (fstype, data)]
    if libc.mount(source.encode(), str(target).encode(), encoded[0], flags, encoded[1]) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _cover(directory: Path, keep: set[str]) -> None:
    """Lay a tmpfs of mode 0755 over ``directory`` and bind ``keep`` back into it."""
    # The entries are held by O_PATH descriptors before the tmpfs hides them, and bound back
    # from /proc/self/fd/N (the kernel follows the descriptor, not the path).
    held: dict[str, int | str] = {}
    try:
        for name in sorted(keep):
            entry = directory / name
            held[name] = os.readlink(entry) if entry.is_symlink() else os.open(entry, os.O_PATH | os.O_CLOEXEC)
        _mount("tmpfs", directory, "tmpfs", 0, "mode=0755")
        for name, what in held.items():
            entry = directory / name
            if isinstance(what, str):
                os.symlink(what, entry)
                continue
            if stat.S_ISDIR(os.fstat(what).st_mode):
                entry.mkdir()
            else:
                entry.touch()
            _mount(f"/proc/self/fd/{what}", entry, None, MS_BIND | MS_REC, None)
    finally:
        for what in held.values():
            if isinstance(what, int):
                os.close(what)


def _own_mount_namespace() -> bool:
    """Whether this process's mount namespace is not its parent's (or its parent is outside
    this PID namespace: a PID 1 that ``unshare --fork --mount-proc`` made)."""
    parent = os.getppid()
    return parent == 0 or os.readlink(f"/proc/{parent}/ns/mnt") != os.readlink("/proc/self/ns/mnt")


def expose(paths: Iterable[Path]) -> list[Path]:
    """Make ``paths`` reachable by every uid in this process's own mount namespace; the
    directories covered, outermost first. Needs root."""
    if not _own_mount_namespace():
        # Covering /root in the host's namespace would hide it from everything on the host.
        raise RuntimeError("run me in a mount namespace of my own (unshare --mount)")
    # Whatever propagation the namespace was made with, nothing mounted here reaches another.
    _mount("none", Path("/"), None, MS_REC | MS_PRIVATE, None)
    ways = _ways(paths)
    covered: list[Path] = []
    # Outermost first, found again after each cover: a directory bound back keeps its own
    # mode, so an owner-only directory inside an owner-only directory is covered next.
    while (blocked := _first_blocked(ways)) is not None:
        directory, keep = blocked
        if directory in covered:  # cannot happen: a cover is mode 0755
            raise RuntimeError(f"{directory} is still not searchable after it was covered")
        _cover(directory, keep)
        covered.append(directory)
    return covered


def main(args: list[str]) -> None:
    if "--" not in args:
        sys.exit("usage: other_uid.py PATH... -- COMMAND...")
    split = args.index("--")
    paths, command = [Path(p) for p in args[:split]], args[split + 1 :]
    try:
        expose(paths)
    except RuntimeError as err:
        sys.exit(f"other_uid.py: {err}")
    except OSError as err:
        # One line, saying what to change: the test's traceback would only say EACCES.
        sys.exit(
            f"other_uid.py: cannot make {', '.join(map(str, paths))} reachable by another uid ({err}); "
            "run the tests as root with mount namespaces allowed, or keep the checkout, its venv and "
            "the interpreter under directories every uid can search (chmod o+x)"
        )
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
