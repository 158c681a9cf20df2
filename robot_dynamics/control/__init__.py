"""Joint-space control laws of 001 chapter 9 (pure core: NumPy + the model's Newton–Euler engine).

``make_controller(name, model, omega, ...)`` builds one of ``CONTROLLERS`` with the
gain design of the seed: PID [9.5]/[9.10], PD + gravity [9.12], computed torque
[9.22]/[9.24] (tracking) or [9.29] (position), predictive [9.31], task-space computed
torque [9.33]–[9.35] (``task_space``, also by its class name ``task_space_computed_torque``), and
task-space PID [9.17] (``task_space_pid``).  ``CONTROLLERS`` lists the laws the ROS controller
offers; ``make_controller`` also builds those of ``TASK_SPACE_CONTROLLERS``.  :class:`ElasticJointController`
(robots with elastic joints, 001 §7.3.8) needs the motor state and is in neither (``robot-dynamics simulate
--elastic``).
"""

from __future__ import annotations

from typing import Any

from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .computed_torque import ComputedTorqueController, PredictiveController
from .elastic import ElasticJointController
from .gains import computed_torque_gains, max_diagonal_inertia, pd_gains, pid_gains
from .pd_gravity import PDGravityController
from .pid import PIDController
from .task_pid import TaskSpacePID
from .task_space import TaskSpaceComputedTorque

CONTROLLERS = ("computed_torque", "position", "predictive", "pd_gravity", "pid", "task_space")
TASK_SPACE_CONTROLLERS = ("task_space_computed_torque", "task_space_pid")


def make_controller(name: str, model: RobotModel, omega: Any = 20.0, xi: Any = 1.0, *, a: Any = None,
                    **kwargs: Any) -> JointController:
    """A controller of ``CONTROLLERS`` tuned for bandwidth ``omega`` (rad/s) and damping ``xi``.

    ``a`` (per-joint max A_jj) is used by ``pid`` and ``pd_gravity``; it is computed from ``model`` when
    omitted.  Names: ``CONTROLLERS`` and ``TASK_SPACE_CONTROLLERS``.
    """
    if name == "computed_torque":
        return ComputedTorqueController.tuned(model, omega, xi, scheme="tracking", **kwargs)
    if name == "position":
        return ComputedTorqueController.tuned(model, omega, xi, scheme="position", **kwargs)
    if name == "predictive":
        return PredictiveController.tuned(model, omega, xi, **kwargs)
    if name == "pd_gravity":
        return PDGravityController.tuned(model, omega, xi, a=a, **kwargs)
    if name in ("task_space", "task_space_computed_torque"):
        return TaskSpaceComputedTorque.tuned(model, omega, xi, **kwargs)
    if name == "task_space_pid":
        return TaskSpacePID.tuned(model, omega, xi, **kwargs)
    if name == "pid":
        kwargs.pop("inverse_dynamics", None)
        return PIDController.tuned(model, omega, a=a, **kwargs)
    raise ValueError(f"unknown controller {name!r}; choose one of {CONTROLLERS + TASK_SPACE_CONTROLLERS}")


__all__ = [
    "CONTROLLERS",
    "ComputedTorqueController",
    "ElasticJointController",
    "InverseDynamics",
    "JointController",
    "PDGravityController",
    "PIDController",
    "PredictiveController",
    "TASK_SPACE_CONTROLLERS",
    "TaskSpaceComputedTorque",
    "TaskSpacePID",
    "computed_torque_gains",
    "gain_vector",
    "make_controller",
    "max_diagonal_inertia",
    "pd_gains",
    "pid_gains",
]
