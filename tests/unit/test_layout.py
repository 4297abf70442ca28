"""The package's shape: floors whose imports point one way, no import circles, imports of the
package at module level only, and no benchmark named outside `benches/`.

The graph is read from the source with `ast`, so it holds whatever the code imports, whether or
not a test happens to run that line.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "workflow" / "numasweep"

# Lowest first: a module may import from its own floor and the floors below it, never above.
FLOORS = ("core", "planning", "running", "results", "statistics", "findings", "reporting", "benches")


def _module(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _floor(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FLOORS:
        return FLOORS.index(parts[1])
    return len(FLOORS)          # the package's face and the command line sit on top


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported numasweep module, line, at module level) for every import in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    modules = {_module(p) for p in PKG.rglob("*.py")}
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from numasweep.x import y`: y is a module when it is one, else a name of x
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                     for a in node.names]
        for name in names:
            if name == "numasweep" or name.startswith("numasweep."):
                out.append((name, node.lineno, id(node) in top or _guarded(tree, node)))
    return out


def _guarded(tree: ast.Module, node: ast.AST) -> bool:
    """An import under a module-level `if TYPE_CHECKING:` counts as module level."""
    return any(isinstance(n, ast.If) and node in ast.walk(n) for n in tree.body)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        graph[_module(path)] = {name for name, _, _ in _imports(path) if name != _module(path)}
    return graph


def test_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_imports_point_down():
    upward = [f"{_module(p)}:{line} imports {name}"
              for p in sorted(PKG.rglob("*.py")) for name, line, _ in _imports(p)
              if _floor(name) > _floor(_module(p))]
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_package_imports_at_module_level():
    local = [f"{_module(p)}:{line} imports {name} inside a function"
             for p in sorted(PKG.rglob("*.py")) for name, line, top in _imports(p) if not top]
    assert not local, "function-local imports of the package:\n" + "\n".join(local)


def test_every_module_on_a_floor():
    loose = [_module(p) for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert not loose, f"modules outside the floors {FLOORS}: {loose}"
