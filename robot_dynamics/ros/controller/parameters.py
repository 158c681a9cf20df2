"""The computed-torque controller's parameters as data, read from ``schemas/computed_torque_controller.yaml``: the
node-wide schema (types, defaults, ranges, units, live or read-only, descriptions) and the per-joint parameters in
JTC's names (``gains.<joint>.*``, ``constraints.<joint>.*``, its ``__map_joints``).  The node declares, validates
and documents from them (docs/ros2_interface.md's tables are generated from them: ``tools/parameter_tables.py``);
the constants below are the code's side of what the file says (test_parameter_files.py checks they agree)."""

from __future__ import annotations

from ...control import CONTROLLERS, TASK_SPACE_CONTROLLERS
from ..parameter_files import load_joint_schema, load_schema, per_joint
from ..parameters import Param

LAWS = tuple(CONTROLLERS) + tuple(c for c in TASK_SPACE_CONTROLLERS if c not in CONTROLLERS) + ("elastic",)


TASK_SPACE_LAWS = ("task_space", *TASK_SPACE_CONTROLLERS)  # the laws that take a pose reference


MIN_VELOCITY_MARGIN = 2.0  # state_velocity_margin below this refused (its description)


PARAMETERS = load_schema("computed_torque_controller")  # computed_torque_controller.yaml in robot_dynamics/ros/schemas (types, defaults, ranges, units)


# parameters whose change builds a new control context (adopted at a cycle boundary, the trajectory kept)
CONTEXT_PARAMETERS = frozenset({"law", "omega", "xi", "kp", "kd", "effort_limits", "coulomb_velocity_band", "rate",
                                "state_position_margin", "state_velocity_margin", "state_jump_margin",
                                "coulomb_velocity", "ki", "task_link", "null_space", "null_space_kp", "null_space_kd",
                                "elastic.stiffness", "elastic.motor_inertia", "elastic.motor_damping",
                                "elastic.omega_motor", "elastic.xi_motor"})


GAINS = ("p", "d", "i", "ff_velocity_scale")


JOINT_PARAMETERS = load_joint_schema("computed_torque_controller")  # its __map_joints: the README's table


def joint_parameters(joint: str) -> list[Param]:
    """The per-joint parameters in JTC's names, declared when the model names the joints (``gains.*`` build a new
    control context when they change; ``constraints.*`` are read when a goal starts)."""
    return per_joint(JOINT_PARAMETERS, joint)
