"""tests/other_uid.py, which the tests that run code as another uid go through: that uid
reaches what lies under owner-only directories, and nothing else changes, outside the
private mount namespace or inside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import other_uid
from tests.requires import require_program, require_root

pytestmark = pytest.mark.timeout(30)

AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``home`` (0700) holds ``inner`` (0700, also reached through the symlink ``link``) with
    a world-readable ``code.py`` and an owner-only ``secret``, and a sibling ``other``."""
    home = tmp_path / "home"
    inner = home / "inner"
    inner.mkdir(parents=True)
    (inner / "code.py").write_text("print('reached')\n")
    (inner / "secret").write_text("")
    (home / "other").write_text("")
    (home / "link").symlink_to("inner")
    for path, mode in ((home, 0o700), (inner, 0o700), (inner / "code.py", 0o644), (inner / "secret", 0o600)):
        path.chmod(mode)
    return home


def mounts() -> list[str]:
    return sorted(Path("/proc/self/mountinfo").read_text().splitlines())


def test_another_uid_reaches_code_under_owner_only_directories(tree: Path) -> None:
    require_root("covering a directory needs root")
    unshare = require_program("unshare", "the cover is laid in a private mount namespace")
    setpriv = require_program("setpriv", "the code is run as another uid")
    code = tree / "link" / "code.py"
    probe = (
        "import os, sys; exec(open(sys.argv[1]).read()); home = sys.argv[2]; "
        "print(os.path.exists(home + '/other')); "
        "print(os.access(home + '/inner/secret', os.R_OK))"
    )
    before = mounts()
    result = subprocess.run(
        other_uid.argv(
            [setpriv, *AS_NOBODY, sys.executable, "-I", "-c", probe, str(code), str(tree)],
            unshare=unshare,
            paths=[*other_uid.code_paths(), code],
        ),
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # Reached through both owner-only directories and the symlink; the sibling is not on
    # the way, so the cover leaves it out; the owner-only file is still owner-only.
    assert result.stdout.split() == ["reached", "False", "False"]
    assert mounts() == before, "the cover must stay inside its mount namespace"
    assert (tree / "other").exists()


def test_the_script_refuses_the_namespace_it_was_started_in(tree: Path) -> None:
    # Run without `unshare --mount`, the cover would hide the directory from the whole host.
    require_root("covering a directory needs root")
    before = mounts()
    result = subprocess.run(
        [sys.executable, str(other_uid.SCRIPT), str(tree), "--", "true"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == "other_uid.py: run me in a mount namespace of my own (unshare --mount)\n"
    assert mounts() == before
