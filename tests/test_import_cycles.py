"""No import circles in the Python packages: the daemon's and the client's modules import one way.

Every import counts, wherever it is written: at the top, under ``if TYPE_CHECKING:``, or
inside a function. Moving an import into a function hides a circle from the interpreter,
not from the reader, so it is no way out here: the shared piece moves to a lower module.
(The TypeScript and Rust clients have their own checks in their test suites.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import circles, describe, import_graph, modules_of

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "interrupt_sidecar": ROOT / "sidecar" / "interrupt_sidecar",
    "interrupt_sidecar_client": ROOT / "clients" / "python" / "src" / "interrupt_sidecar_client",
}

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circles(package: str) -> None:
    graph = import_graph(modules_of(package, PACKAGES[package]))
    assert len(graph) > 5, f"found too few modules of {package}: {sorted(graph)}"
    found = circles(graph)
    assert not found, "import circles (move the shared piece to a lower module):\n" + "\n".join(
        describe(circle, graph) for circle in found
    )


def write(folder: Path, name: str, text: str) -> None:
    path = folder.joinpath(*name.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_check_sees_circles_hidden_from_the_interpreter(tmp_path: Path) -> None:
    """A circle through a TYPE_CHECKING block, a function-level or a relative import is found."""
    write(tmp_path, "__init__.py", "")
    write(tmp_path, "a.py", "from pkg.b import B\n")
    write(tmp_path, "b.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import C\n")
    write(tmp_path, "c.py", "def f():\n    from . import a\n")
    write(tmp_path, "d.py", "import pkg.a\n")
    write(tmp_path, "sub/__init__.py", "from .e import E\n")
    write(tmp_path, "sub/e.py", "from ..d import x\n")
    graph = import_graph(modules_of("pkg", tmp_path))
    assert graph["pkg.sub"] == {"pkg.sub.e"}
    assert graph["pkg.sub.e"] == {"pkg.d"}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    # Broken the way the check asks: c no longer imports a.
    write(tmp_path, "c.py", "import os\n")
    assert circles(import_graph(modules_of("pkg", tmp_path))) == []
