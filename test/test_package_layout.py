"""The package layout (issue 15 item 7): one concern per subpackage, a stable top-level API, and the flat
module paths of earlier releases still importing as aliases of the moved modules (same module objects)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import robot_dynamics

PKG = Path(robot_dynamics.__file__).resolve().parent


def test_top_level_holds_only_entry_points() -> None:
    """Modelling and dynamics modules live in their subpackages; the top level keeps the entry points."""
    flat = sorted(p.stem for p in PKG.glob("*.py"))
    assert flat == ["__init__", "__main__", "cli", "demo"], flat
    subpackages = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    assert subpackages == ["control", "dynamics", "identification", "kinematics", "model", "ros", "safety", "sim",
                           "symbolic", "trajectory"], subpackages


@pytest.mark.parametrize(("old", "new"), sorted(robot_dynamics.MOVED_MODULES.items()))
def test_flat_paths_are_aliases(old: str, new: str) -> None:
    """``import robot_dynamics.<old>`` is the moved module itself, so patches and isinstance checks agree."""
    if old == "simulator":
        pytest.importorskip("mujoco")
    a = importlib.import_module(f"robot_dynamics.{old}")
    b = importlib.import_module(f"robot_dynamics.{new}")
    assert a is b
    # the moved module keeps its own identity (its relative imports resolve in its new package)
    assert b.__spec__.name == f"robot_dynamics.{new}" and b.__package__ == f"robot_dynamics.{new}".rsplit(".", 1)[0]
    assert b.__spec__.parent == b.__package__
    assert (PKG / (new.replace(".", "/") + ".py")).is_file()


def test_alias_from_import_in_a_fresh_process() -> None:
    """``from robot_dynamics.robots import load_model`` (the README's form before the layout) works first thing."""
    code = ("from robot_dynamics.robots import load_model\n"
            "from robot_dynamics.codegen import Engine\n"
            "import robot_dynamics.model.robots as r, robot_dynamics.symbolic.codegen as c\n"
            "assert load_model is r.load_model and Engine is c.Engine\n"
            "import robot_dynamics.nonexistent_module\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "No module named 'robot_dynamics.nonexistent_module'" in out.stderr, out.stderr


def test_stable_api() -> None:
    """The top level exports the model and its loader, and importing an alias does not shadow them."""
    import robot_dynamics.robot_model  # noqa: F401 - an alias import sets the attribute on the package

    assert set(robot_dynamics.__all__) == {"RobotModel", "MDHJoint", "INERTIAL_NAMES", "MOVED_MODULES", "load_model"}
    m = robot_dynamics.load_model("rx90")
    assert isinstance(m, robot_dynamics.RobotModel) and m.dof == 6
    assert robot_dynamics.MDHJoint is robot_dynamics.model.mdh.MDHJoint
