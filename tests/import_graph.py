"""Python module graphs for the structure tests (no import circles; layers point down).

Every import statement counts, wherever it is written: at the top, under
``if TYPE_CHECKING:``, or inside a function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path


def modules_of(package: str, folder: Path) -> dict[str, Path]:
    """Every module of the package, by dotted name (a package is its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("*.py")):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(name: str, path: Path) -> Iterator[str]:
    """What one module imports, as dotted names: every import statement anywhere in the file."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Relative: level 1 is this module's package (the module itself for a package).
                anchor = name.split(".")
                drop = node.level - 1 if is_package else node.level
                base = ".".join(anchor[: len(anchor) - drop])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            # `from package import submodule` imports the submodule; any other name is the module's.
            for alias in node.names:
                yield f"{module}.{alias.name}"
            yield module


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Edges from each module to the modules of the same packages it imports."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported in imported_names(name, path):
            if imported in modules and imported != name:
                graph[name].add(imported)
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(circle: list[str], graph: Mapping[str, set[str]]) -> str:
    members = set(circle)
    edges = sorted(f"{a} -> {b}" for a in circle for b in graph[a] if b in members)
    return "; ".join(edges)
