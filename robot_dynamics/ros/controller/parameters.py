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


# JTC's parameters this controller does not honour, each with why (a torque controller over the robot's dynamics);
# given to the node (parameter file, -p), each is named once in a warning at start
JTC_NOT_APPLICABLE = {
    "joints": "the joints are the robot description's (URDF names)",
    "command_joints": "commands go to every joint of the model",
    "command_interfaces": "the command is joint effort (or motor torque, command_space)",
    "state_interfaces": "the state is /joint_states' position and velocity",
    "interpolation_method": "the reference interpolates the trajectory's own points (cubic or quintic per segment), "
                            "checked against the limits before it runs",
    "cmd_timeout": "states, not commands, time out here (state_timeout: the arm is braked, then held)",
    "open_loop_control": "the law closes the loop on the measured state",
    "allow_integration_in_goal_trajectories": "missing velocities and accelerations are interpolated from the points",
    "set_last_command_interface_value_as_state_on_activation": "the hold target is the measured position",
    "constraints.decelerate_on_cancel": "a cancel holds the arm where it is, braked within the limits by the guard",
}
JTC_JOINT_NOT_APPLICABLE = {
    "gains.{j}.i_clamp": "the integral term of law pid is bounded by the effort limits",
    "gains.{j}.normalize_error": "continuous joints are not wrapped: errors are taken as measured",
    "gains.{j}.angle_wraparound": "continuous joints are not wrapped: errors are taken as measured",
}


def jtc_ignored(given: list[str] | set[str], joints: list[str] | tuple[str, ...]) -> list[str]:
    """The warnings for JTC parameters in ``given`` (the names the node was given) that this controller does not
    honour, one per name, in a stable order."""
    out = [f"{name}: ignored, {why}" for name, why in JTC_NOT_APPLICABLE.items() if name in given]
    for pattern, why in JTC_JOINT_NOT_APPLICABLE.items():
        out += [f"{pattern.format(j=j)}: ignored, {why}" for j in joints if pattern.format(j=j) in given]
    return out
