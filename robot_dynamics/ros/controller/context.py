"""The control context of the computed-torque controller: everything a control cycle needs about the robot (the
model, the law with its gains, the limits in use, the safety envelope, the limit guard, the command maps), built
from a model and the parameter values and replaced as a whole (never mutated).  Pure: no rclpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...control import JointController, make_controller
from ...control.elastic import ElasticJointController
from ...control.task_space import TaskSpaceLaw
from ...dynamics.elastic import ElasticJoints
from ...model.robot_model import RobotModel
from ...safety import SafetyEnvelope, check_gains
from ...safety import limit_guard as lg
from .. import validation
from .parameters import TASK_SPACE_LAWS


def _with_gains(law: str, model: RobotModel, kp: np.ndarray, kd: np.ndarray, effort: np.ndarray | None,
                **kwargs) -> JointController:
    """A controller of ``law`` with explicit per-joint gains."""
    from ...control import ComputedTorqueController, PDGravityController, PredictiveController

    if law == "pd_gravity":
        return PDGravityController(model, kp, kd, effort_limit=effort, **kwargs)
    if law == "predictive":
        return PredictiveController(model, kp, kd, effort_limit=effort, **kwargs)
    return ComputedTorqueController(model, kp, kd, scheme="position" if law == "position" else "tracking",
                                    effort_limit=effort, **kwargs)


def _with_joint_gains(controller: JointController, law: str, model: RobotModel, values: dict, effort: np.ndarray | None,
                      friction: dict) -> JointController:
    """``controller`` with the per-joint gains ``gains.<joint>.p/.d/.i`` (JTC's names) that are set (> 0) in place of
    its own (from ``kp``/``kd`` or ``omega``/``xi``); itself when none is set."""
    from ...control import PIDController

    names = model.joint_names
    given = {g: np.array([values.get(f"gains.{j}.{g}", 0.0) for j in names], float) for g in ("p", "d", "i")}
    if not any(g.any() for g in given.values()):
        return controller
    kp = np.where(given["p"] > 0, given["p"], controller.kp)
    kd = np.where(given["d"] > 0, given["d"], controller.kd)
    if law == "pid":
        ki = np.where(given["i"] > 0, given["i"], controller.ki)
        return PIDController(model, kp, kd, ki, effort_limit=effort, **friction)
    return _with_gains(law, model, kp, kd, effort, **friction)


def _null_space_gain(values: list[float], n: int, what: str) -> float | np.ndarray | None:
    """A null-space gain parameter: empty -> None (the law's default), one value -> scalar, n values -> (n,)."""
    if not values:
        return None
    if len(values) not in (1, n):
        raise ValueError(f"{what} needs 1 or {n} values (model order), got {len(values)}")
    return float(values[0]) if len(values) == 1 else np.array(values, float)


def _task_space_controller(law: str, model: RobotModel, v: dict, effort: np.ndarray | None,
                           friction: dict) -> TaskSpaceLaw:
    """A task-space law of the parameter values ``v``: gains from omega/xi, or ``kp``/``kd`` (and ``ki`` for
    task_space_pid) per task coordinate; ``task_link``, ``null_space`` and its gains.  ``ValueError`` names what does
    not fit."""
    from ...control import TaskSpaceComputedTorque, TaskSpacePID

    null = v["null_space"]
    opts = {"link": v["task_link"] or None, "null_space": None if null == "none" else null,
            "null_space_kp": _null_space_gain(v["null_space_kp"], model.dof, "null_space_kp"),
            "null_space_kd": _null_space_gain(v["null_space_kd"], model.dof, "null_space_kd")}
    kp, kd, ki = v["kp"], v["kd"], v["ki"]
    pid = law == "task_space_pid"
    if kp or kd or (pid and ki):
        if len(kp) != 6 or len(kd) != 6 or (pid and len(ki) != 6):
            gains = "kp, kd and ki" if pid else "kp and kd"
            raise ValueError(f"with law {law}, {gains} are task-space gains, 6 values each [vx, vy, vz, wx, wy, wz]; "
                             f"got {len(kp)}, {len(kd)}" + (f" and {len(ki)}" if pid else ""))
        if pid:
            return TaskSpacePID(model, kp, kd, ki, effort_limit=effort, **opts, **friction)
        return TaskSpaceComputedTorque(model, kp, kd, effort_limit=effort, **opts, **friction)
    return make_controller(law, model, omega=v["omega"], xi=v["xi"], effort_limit=effort, **opts, **friction)


@dataclass(frozen=True)
class Context:
    """Everything the control cycle needs about the robot; replaced as a whole (never mutated)."""

    model: RobotModel
    controller: JointController
    joints: list[str]          # command order (parameter ``joints`` or the model's)
    to_cmd: np.ndarray         # model order -> command order
    index: validation.NameIndex
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray         # the limits in use: the description's, or lower (parameter effort_limits)
    envelope: SafetyEnvelope   # the description's limits and the margins of the state checks
    law: str = "computed_torque"
    task_link: str | None = None  # the link of a task-space law (None: a joint-space law)
    to_motor: np.ndarray | None = None  # command_space motor: τ_m = J_qmᵀ Γ (model order; None: joint efforts)
    # a task-space law's stand-in after a dropped pose: joint-space computed torque with the same omega/xi
    hold_controller: JointController | None = None
    guard: lg.LimitGuard | None = None  # position and velocity limits on every command (None: law elastic)


def _elastic_controller(model: RobotModel, v: dict, effort: np.ndarray | None, friction: dict) -> JointController:
    """Law ``elastic``: :class:`~robot_dynamics.control.elastic.ElasticJointController` tuned from omega/xi and the
    ``elastic.*`` parameters (one value for every joint, or one per joint in model order)."""
    def per_joint(name: str) -> Any:
        x = list(v[name])
        if len(x) not in (0, 1, model.dof):
            raise ValueError(f"{name} needs one value or {model.dof} (model order), got {len(x)}")
        return None if not x else (x[0] if len(x) == 1 else np.array(x))

    stiffness = per_joint("elastic.stiffness")
    if stiffness is None:
        raise ValueError("law elastic needs elastic.stiffness (the joints' stiffness k, 001 eq. 7.34)")
    damping = per_joint("elastic.motor_damping")
    elastic = ElasticJoints(stiffness=stiffness, motor_inertia=per_joint("elastic.motor_inertia"),
                            motor_damping=0.0 if damping is None else damping)
    wm = v["elastic.omega_motor"]
    return ElasticJointController.tuned(model, elastic, v["omega"], v["xi"], omega_motor=wm if wm > 0 else None,
                                        xi_motor=v["elastic.xi_motor"], effort_limit=effort, **friction)


TORQUE_GAIN_LAWS = ("pd_gravity", "pid")  # gains in N m/rad (the others: acceleration gains, 001 eq. 9.24)


INERTIA_SAMPLES = 32  # configurations of the joint box where the smallest A_jj(q) of torque gains is looked for


def smallest_inertia(model: RobotModel, samples: int = INERTIA_SAMPLES, seed: int = 0) -> np.ndarray:
    """min over q of each diagonal A_jj(q) (rotor inertia included), at mid-range and ``samples`` configurations
    uniform in the joint box (±pi where a joint has no limit): the inertia of the fastest closed loop of torque
    gains."""
    return lg.sampled_extremes(model, samples, seed).inertia_min


def _check_loop_gains(controller: JointController, hold: JointController | None, law: str, model: RobotModel,
                      period: float) -> None:
    """The joint-space PD gains in use (the law's and the stand-in's) within the stability bounds of the sampled
    loop at ``period`` (:func:`~robot_dynamics.safety.check_gains`; ``ValueError`` refuses the parameters).  The
    task-space and elastic laws' own gains act on other coordinates: only their joint-space stand-in is judged."""
    names = list(model.joint_names)
    for c, name in ((controller, law), (hold, "computed_torque (stand-in hold)")):
        kp, kd = getattr(c, "kp", None), getattr(c, "kd", None)
        if c is None or kp is None or kd is None or np.shape(kp) != (model.dof,) or np.shape(kd) != (model.dof,):
            continue
        if c is controller and (law in TASK_SPACE_LAWS or law == "elastic"):
            continue
        inertia = smallest_inertia(model) if name in TORQUE_GAIN_LAWS else None
        check_gains(kp, kd, period, names, inertia=inertia, what=f"law {name} at rate {1.0 / period:g} Hz")


def _motor_map(model: RobotModel, command_space: str) -> np.ndarray | None:
    """J_qmᵀ (model order) when the commands are motor torques τ_m = J_qmᵀ Γ (001 eq. 7.33), else None."""
    if command_space != "motor":
        return None
    if model.transmission is None:
        raise ValueError("command_space motor needs the robot's transmissions (transmissions.gear_ratio ...)")
    return np.ascontiguousarray(model.transmission.motor_torques(np.eye(model.dof)).T)


def build_context(model: RobotModel, v: dict, extremes: lg.Extremes) -> Context:
    """The control context of ``model`` with the parameter values ``v`` (the node's schema) and the model's
    gravity and inertia ``extremes`` (:func:`~robot_dynamics.safety.limit_guard.sampled_extremes`); ``ValueError``
    names what does not fit the model (joint names, numbers of gains or limits, a law without gains)."""
    joints = list(v["joints"])
    if joints and sorted(joints) != sorted(model.joint_names):
        raise ValueError(f"parameter joints {joints} does not match the model joints {model.joint_names}")
    joints = joints or list(model.joint_names)
    envelope = SafetyEnvelope.from_model(model, position_margin=v["state_position_margin"],
                                         velocity_margin=v["state_velocity_margin"],
                                         jump_margin=v["state_jump_margin"])
    effort = envelope.effort_limits(v["effort_limits"])  # never above the description's (ValueError)
    if v["backend"] == "generated":
        # the laws call model.inverse_dynamics: its program is built (or loaded from the cache) here, in the
        # model worker, never in a callback, and in use from the first cycle (no engine switch mid-run); a
        # build runs in a child process (isolated): the generator's pure Python would hold the GIL from the
        # loop thread for ~1 s (a model swapped in while the arm moves: commands paused 0.3-0.8 s)
        model.compile("inverse_dynamics", "forward_dynamics", isolated=True)  # the law's, the limit guard's
    else:
        model.set_backend("numpy")
    band = v["coulomb_velocity_band"]
    friction = {"coulomb_velocity_band": None if band < 0 else band, "coulomb_velocity": v["coulomb_velocity"] or None}
    law, kp, kd = v["law"], v["kp"], v["kd"]
    link = v["task_link"]
    if link and link not in model.frames:
        raise ValueError(f"task_link {link!r} is not a link of the model (links: {', '.join(model.frames)})")
    task_link = None
    if law in TASK_SPACE_LAWS:
        controller = _task_space_controller(law, model, v, effort, friction)
        task_link = controller.link
    elif law == "elastic":
        controller = _elastic_controller(model, v, effort, friction)
    elif kp or kd:
        if len(kp) != model.dof or len(kd) != model.dof or law == "pid":
            raise ValueError(f"kp and kd need {model.dof} values each (model order; not for law pid), got "
                             f"{len(kp)} and {len(kd)}")
        controller = _with_gains(law, model, np.array(kp), np.array(kd), effort, **friction)
    else:
        controller = make_controller(law, model, omega=v["omega"], xi=v["xi"], effort_limit=effort, **friction)
    hold_controller = None
    if task_link is None and law != "elastic":
        controller = _with_joint_gains(controller, law, model, v, effort, friction)
    else:
        hold_controller = make_controller("computed_torque", model, omega=v["omega"], xi=v["xi"],
                                          effort_limit=controller.effort_limit, **friction)
    _check_loop_gains(controller, hold_controller, law, model, 1.0 / v["rate"])
    effort = np.minimum(controller.effort_limit, effort)
    if len(v["effort_limits"]):  # a parameter may not lower a limit below what holds the arm up
        lg.check_holding(effort, extremes.gravity_max, model.joint_names)
    lim = model.limits
    guard = None
    if law != "elastic":  # the elastic law's command acts through the springs: not the rigid model's q̈
        guard = lg.LimitGuard.for_loop(lim["lower"], lim["upper"], envelope.velocity,
                                       lg.braking_acceleration(effort, extremes, envelope.acceleration), v["rate"])
    return Context(
        model=model, controller=controller, joints=joints,
        to_cmd=np.array([model.joint_names.index(j) for j in joints]),
        index=validation.NameIndex(model.joint_names),
        lower=np.asarray(lim["lower"], float), upper=np.asarray(lim["upper"], float),
        velocity=np.asarray(lim["velocity"], float), effort=effort,
        envelope=envelope, law=law, task_link=task_link, hold_controller=hold_controller,
        to_motor=_motor_map(model, v["command_space"]), guard=guard,
    )
