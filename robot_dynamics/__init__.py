"""robot_dynamics: modelling, identification and control of serial and tree-structured arms (Khalil's methods).

Layout, one concern per subpackage (one algorithm family per module):

* :mod:`robot_dynamics.model` — the MDH table (:mod:`~robot_dynamics.model.mdh`), the immutable
  :class:`RobotModel`, URDF/xacro in and out, inertia algebra, the bundled robots;
* :mod:`robot_dynamics.kinematics` — geometric and kinematic models (002 ch. 3–6);
* :mod:`robot_dynamics.dynamics` — the Newton–Euler recursion, regressor, A(q), C, g, direct dynamics,
  friction, base parameters (001 ch. 7, 000);
* :mod:`robot_dynamics.symbolic` — customized models and their compiled programs (001 §7.5, §7.6.2);
* :mod:`robot_dynamics.sim` — the MuJoCo plant and closed-loop runs;
* :mod:`robot_dynamics.trajectory`, :mod:`robot_dynamics.control`, :mod:`robot_dynamics.identification`;
* :mod:`robot_dynamics.ros` — the ROS 2 nodes (the only layer that imports rclpy).

The stable API is what this module exports (the model and its methods; the free functions
``algorithm(model, ...)`` are in their subpackages, e.g. :func:`robot_dynamics.dynamics.inverse_dynamics.regressor`).
The flat module paths of releases before the layout
(``robot_dynamics.robots``, ``robot_dynamics.codegen``, ...) still import, as aliases of the new modules.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any

from .model.robot_model import INERTIAL_NAMES, MDHJoint, RobotModel
from .model.robots import load_model

#: flat module name (before the layout) -> its module now
MOVED_MODULES: dict[str, str] = {
    **{m: f"model.{m}" for m in ("mdh", "robot_model", "urdf_conversion", "urdf_export", "robots",
                                 "seed_robots", "inertia", "ros2_control")},
    "geometric_model": "kinematics.geometric_model",
    **{m: f"dynamics.{m}" for m in ("inverse_dynamics", "forward_dynamics", "dynamic_terms", "friction",
                                    "base_parameters")},
    "customized_model": "symbolic.customized_model",
    "codegen": "symbolic.codegen",
    "simulator": "sim.simulator",
    "closed_loop": "sim.closed_loop",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the moved module itself; the import system stamps the alias spec on the module
    it gets, so the module's own ``__spec__`` (which its relative imports rely on) is put back."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: Any = None

    def create_module(self, spec: Any) -> Any:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self.spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """``import robot_dynamics.<old>`` gives the module ``robot_dynamics.<new>`` itself (same object)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        head, _, leaf = fullname.rpartition(".")
        if head != __name__ or leaf not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(f"{__name__}.{MOVED_MODULES[leaf]}"))


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())

__all__ = [
    "INERTIAL_NAMES",
    "MDHJoint",
    "MOVED_MODULES",
    "RobotModel",
    "load_model",
]
__version__ = "0.1.0"
