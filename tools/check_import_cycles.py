"""Import cycles among the modules of ``robot_dynamics``, every kind of import counted.

``python tools/check_import_cycles.py [PACKAGE_DIR]`` prints each group of modules that import each other
(a strongly connected component of the import graph, with the imports inside it) and exits 1 if there is one,
0 otherwise.  ``test/test_import_cycles.py`` calls :func:`find_cycles`.

The graph, read from the source with :mod:`ast` (nothing is imported), has an edge A -> B for every
``import B`` / ``from B import ...`` of A — at module level, in a class or function body (a lazy import defers
a cycle, it does not remove it), and under ``if TYPE_CHECKING:`` (a type checker follows it, and a hint naming
a module above is a layering error even if it never runs).  Resolution:

* relative imports are resolved against A's package (A itself when A is an ``__init__``);
* ``from P import name`` is an edge to ``P.name`` when that is a module, to ``P`` (its ``__init__``) otherwise;
* package ``__init__`` files: a package is the module of its ``__init__.py``.  Its own imports are ordinary
  edges (``robot_dynamics.dynamics -> robot_dynamics.dynamics.inverse_dynamics`` is real).  Importing
  ``P.sub.mod`` runs ``P/sub/__init__`` first, so it is also an edge to every package on the way (``P.sub``),
  except the packages A is inside itself: their ``__init__`` has already started when A runs, and the root
  package, which every module is inside, is an edge only when imported by name (``from robot_dynamics import
  RobotModel`` goes through its ``__init__``);
* dynamic imports (``importlib.import_module(name)``, ``__import__``) and imports outside the package are not
  edges.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "robot_dynamics"

#: {importing module: {imported module: line numbers of the imports}}
Graph = dict[str, dict[str, list[int]]]


def module_files(package_dir: Path) -> dict[str, Path]:
    """Every module under ``package_dir`` by dotted name; a package by its own name (its ``__init__.py``)."""
    out: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(
    name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]
) -> Iterator[str]:
    """The package modules one import statement of module ``name`` names."""
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    else:
        stem = node.module or ""
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        found = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
    for target in found:
        while target and target not in modules:  # outside the package, or ``import pkg.mod.attr``
            target = target.rpartition(".")[0]
        if target:
            yield target


def _with_packages(source: str, target: str) -> Iterator[str]:
    """``target`` and the packages importing it runs first, except the ones ``source`` is inside (and the root)."""
    yield target
    parts = target.split(".")
    for k in range(2, len(parts)):
        pkg = ".".join(parts[:k])
        if not (source == pkg or source.startswith(pkg + ".")):
            yield pkg


def import_graph(package_dir: Path = PACKAGE_DIR) -> Graph:
    """The import graph of the modules under ``package_dir`` (module docstring)."""
    modules = module_files(package_dir)
    graph: Graph = {m: {} for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # every statement: module level, bodies, TYPE_CHECKING blocks
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(name, path.name == "__init__.py", node, modules):
                for t in _with_packages(name, target):
                    if t != name:
                        graph[name].setdefault(t, []).append(node.lineno)
    return graph


def cycle_groups(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, largest first."""
    names = sorted(graph)
    index = {m: i for i, m in enumerate(names)}
    rows = [index[a] for a in names for b in graph[a] if b in index]
    cols = [index[b] for a in names for b in graph[a] if b in index]
    adjacency = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for m, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), []).append(m)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g))


def find_cycles(package_dir: Path = PACKAGE_DIR) -> list[list[str]]:
    """The import cycle groups of the package under ``package_dir`` (empty: no cycle)."""
    return cycle_groups(import_graph(package_dir))


def describe(graph: Graph, group: list[str]) -> str:
    """One cycle group and the imports inside it (``source -> target (lines)``)."""
    inside = set(group)
    lines = [f"  {a} -> {b} (line {', '.join(map(str, sorted(set(graph[a][b]))))})"
             for a in group for b in sorted(graph[a]) if b in inside]
    return f"{len(group)} modules import each other:\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    package_dir = Path(args[0]) if args else PACKAGE_DIR
    graph = import_graph(package_dir)
    groups = cycle_groups(graph)
    for group in groups:
        print(describe(graph, group))
    print(f"{len(groups)} import cycle group(s) among {len(graph)} modules of {package_dir.name}")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
