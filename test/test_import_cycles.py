"""No import cycle among the modules of robot_dynamics, type-hint and function-level imports counted
(``tools/check_import_cycles.py``), and the checker itself finds the cycles of a made-up package."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_import_cycles", ROOT / "tools" / "check_import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checker = _checker()


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``pkg`` under ``tmp_path`` with the given modules (``__init__.py`` empty unless given)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir(parents=True)
    files = {"__init__.py": "", **files}
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return pkg


def test_robot_dynamics_has_no_import_cycle() -> None:
    graph = checker.import_graph()
    assert "robot_dynamics.model.robot_model" in graph and "robot_dynamics.model.data" in graph
    groups = checker.cycle_groups(graph)
    assert not groups, "\n".join(checker.describe(graph, g) for g in groups)


def test_algorithms_never_import_the_facade() -> None:
    """The algorithms the facade delegates to take the data type, not ``RobotModel`` (not even for hints)."""
    graph = checker.import_graph()
    facade = "robot_dynamics.model.robot_model"
    assert "robot_dynamics.symbolic.codegen" in graph[facade]  # the facade's lazy imports are seen
    for target in graph[facade]:
        assert facade not in graph[target], f"{target} imports the facade back"


B_TYPE_CHECKING = """
    from __future__ import annotations
    from typing import TYPE_CHECKING
    if TYPE_CHECKING:
        from .a import A
    def f(x: A) -> int:
        return 1
    """
B_IN_FUNCTION = """
    def f(x):
        from pkg.a import A
        return isinstance(x, A)
    """


@pytest.mark.parametrize("b_source", [B_TYPE_CHECKING, B_IN_FUNCTION], ids=["type_checking", "in_function"])
def test_a_cycle_through_a_hint_or_a_lazy_import_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           b_source: str) -> None:
    pkg = _package(tmp_path, {"a.py": "from .b import f\n\nclass A:\n    pass\n", "b.py": b_source,
                              "c.py": "from . import a\n"})
    assert checker.find_cycles(pkg) == [["pkg.a", "pkg.b"]]
    assert checker.main([str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "pkg.a -> pkg.b" in out and "pkg.b -> pkg.a" in out and "1 import cycle group" in out


def test_no_cycle_without_the_import_back(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"a.py": "from .b import f\n", "b.py": "def f():\n    import os\n"})
    assert checker.find_cycles(pkg) == []
    assert checker.main([str(pkg)]) == 0


def test_package_init_edges(tmp_path: Path) -> None:
    """``from pkg import name`` (not a module) goes through ``pkg/__init__``; ``from pkg import mod`` does not."""
    init = "from .a import helper\n"
    through_init = _package(tmp_path / "x", {"__init__.py": init, "a.py": "from .b import g\nhelper = 1\n",
                                             "b.py": "def g():\n    from . import helper\n"})
    assert checker.find_cycles(through_init) == [["pkg", "pkg.a", "pkg.b"]]
    direct = _package(tmp_path / "y", {"__init__.py": init, "a.py": "from .b import g\nhelper = 1\n",
                                       "b.py": "def g():\n    from . import c\n", "c.py": ""})
    assert checker.find_cycles(direct) == []
    graph = checker.import_graph(direct)
    assert graph["pkg"] == {"pkg.a": [1]} and graph["pkg.b"] == {"pkg.c": [2]}
