"""Closed-loop simulation without ROS: MuJoCo plant + joint controller + trajectory.

``run_closed_loop`` runs one experiment at the control period (default: the plant
time step, 1 kHz), torque held constant between control instants (zero-order hold),
and returns the time series with the tracking metrics.  ``run_simulation`` builds
everything from a URDF (used by ``robot-dynamics simulate``) and ``plot_closed_loop``
draws reference vs actual, the tracking error and the efforts.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..control import CONTROLLERS, JointController, make_controller, max_diagonal_inertia
from ..model.robot_model import RobotModel
from ..trajectory import Trajectory, point_to_point

DEFAULT_ACCELERATION = 5.0  # rad/s^2 (m/s^2) when the model has no acceleration limit
DEFAULT_MOTOR_INERTIA_RATIO = 0.1
"""Elastic plant of a model without rotor inertia (Ia = 0) and no ``motor_inertia``: I_a = 0.1 A_jj(q_start) (link side)."""
ELASTIC_CONTROLLER = "elastic"  # the law of robot_dynamics.control.elastic (simulate only: not a ROS controller)


@dataclass
class ClosedLoopResult:
    """Time series (rows = control instants) and the metrics of one run."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    q_ref: np.ndarray
    qd_ref: np.ndarray
    qdd_ref: np.ndarray
    tau: np.ndarray
    saturated: np.ndarray
    joint_names: list[str]
    effort_limit: np.ndarray
    metrics: dict[str, Any] = field(default_factory=dict)
    theta: np.ndarray | None = None  # motor positions q_M of an elastic plant (true state), else None

    @property
    def error(self) -> np.ndarray:
        """Tracking error e = q^d − q (true plant state)."""
        return self.q_ref - self.q


def tracking_metrics(t: np.ndarray, q: np.ndarray, q_ref: np.ndarray, q_goal: np.ndarray, tau: np.ndarray,
                     effort_limit: np.ndarray, saturated: np.ndarray, stable: bool) -> dict[str, Any]:
    """Max / RMS tracking error (per joint and overall), final error, max effort, saturation time."""
    e = np.abs(q_ref - q)
    dt = np.diff(t, append=t[-1] + (t[-1] - t[-2] if t.size > 1 else 0.0))
    lim = np.where(np.isfinite(effort_limit), effort_limit, np.nan)
    ratio = np.abs(tau) / lim
    return {
        "stable": bool(stable),
        "duration": float(t[-1]) if t.size else 0.0,
        "max_tracking_error": float(e.max()),
        "rms_tracking_error": float(np.sqrt(np.mean(e**2))),
        "final_error": float(np.abs(q_goal - q[-1]).max()),
        "max_effort_ratio": float(np.nanmax(ratio)) if np.any(np.isfinite(lim)) else 0.0,
        "saturation_time": float(np.sum(dt[np.any(saturated, axis=1)])),
        "max_tracking_error_per_joint": e.max(axis=0).tolist(),
        "rms_tracking_error_per_joint": np.sqrt(np.mean(e**2, axis=0)).tolist(),
        "final_error_per_joint": np.abs(q_goal - q[-1]).tolist(),
        "max_effort_per_joint": np.abs(tau).max(axis=0).tolist(),
    }


def run_closed_loop(
    model: RobotModel,
    plant: Any,
    controller: JointController,
    trajectory: Trajectory,
    *,
    settle_time: float = 0.5,
    control_period: float | None = None,
    q0: Any = None,
    qd0: Any = None,
    divergence_bound: float = 10.0,
) -> ClosedLoopResult:
    """Simulate ``controller`` on ``plant`` (a :class:`~robot_dynamics.sim.simulator.MujocoArm`) along ``trajectory``.

    The plant starts at ``q0`` (default: the trajectory start) at rest and runs for
    ``trajectory.duration + settle_time``.  The controller sees the (possibly noisy)
    measured state; metrics use the true state.  A run is marked unstable and stopped
    when the error exceeds ``divergence_bound`` or a value becomes non-finite.

    Elastic plant (``plant.elastic`` set): ``q`` is the link state, the motor positions are recorded in
    ``result.theta`` (metric ``max_deflection`` = max |q_M − q|), and a controller with ``needs_motor_state``
    (:class:`~robot_dynamics.control.elastic.ElasticJointController`) gets the measured motor state by
    ``set_motor_state`` before each call.
    """
    n = model.dof
    dt_plant = plant.timestep
    period = dt_plant if control_period is None else float(control_period)
    sub = max(1, round(period / dt_plant))
    if not math.isclose(sub * dt_plant, period, rel_tol=1e-9):
        raise ValueError(f"control_period {period} must be a multiple of the plant step {dt_plant}")
    if not (math.isfinite(settle_time) and settle_time >= 0.0):
        raise ValueError("settle_time must be finite and >= 0")
    steps = int(math.ceil((trajectory.duration + settle_time) / period - 1e-9)) + 1
    times = np.arange(steps) * period
    q_ref, qd_ref, qdd_ref = trajectory.evaluate(times)
    start = q_ref[0] if q0 is None else np.asarray(q0, float)
    plant.reset(start, qd0)
    controller.reset()
    elastic = getattr(plant, "elastic", None) is not None
    motor_feedback = bool(getattr(controller, "needs_motor_state", False))
    if motor_feedback and not elastic:
        raise ValueError(f"controller {controller.name!r} needs the motor state of an elastic plant "
                         "(MujocoArm(..., elastic=ElasticJoints(...)))")
    theta = np.empty((steps, n)) if elastic else None
    q = np.empty((steps, n))
    qd = np.empty((steps, n))
    tau = np.zeros((steps, n))
    sat = np.zeros((steps, n), dtype=bool)
    stable = True
    k_end = steps
    for k in range(steps):
        t = times[k]
        true = plant.state(noisy=False)
        meas = plant.state()
        q[k], qd[k] = true.q, true.qd
        if theta is not None:
            theta[k] = plant.motor_state(noisy=False).theta
        if not (np.all(np.isfinite(true.q)) and np.abs(q_ref[k] - true.q).max() < divergence_bound):
            stable, k_end = False, k + 1
            break
        try:
            if motor_feedback:
                ms = plant.motor_state()
                controller.set_motor_state(ms.theta, ms.thetad)
            tau[k] = controller.compute(t, meas.q, meas.qd, q_ref[k], qd_ref[k], qdd_ref[k])
        except ValueError:
            stable, k_end = False, k + 1
            break
        sat[k] = controller.saturated
        if k < steps - 1:
            try:
                plant.step(tau[k], n_steps=sub)
            except RuntimeError:  # PlantDiverged
                stable, k_end = False, k + 1
                break
    sl = slice(0, k_end)
    lim = controller.effort_limit
    res = ClosedLoopResult(times[sl], q[sl], qd[sl], q_ref[sl], qd_ref[sl], qdd_ref[sl], tau[sl], sat[sl],
                           model.joint_names, lim, theta=None if theta is None else theta[sl])
    res.metrics = tracking_metrics(res.t, res.q, res.q_ref, trajectory.q_end, res.tau, lim, res.saturated, stable)
    if res.theta is not None:
        res.metrics["max_deflection"] = float(np.abs(res.theta - res.q).max())
    res.metrics["controller"] = controller.name
    res.metrics["control_period"] = period
    return res


def reference_limits(model: RobotModel, speed_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(v_max, a_max) for the trajectory: the model's limits (default a_max where none) times ``speed_scale``."""
    lim = model.limits
    v = np.where(np.isfinite(lim["velocity"]) & (lim["velocity"] > 0), lim["velocity"], 1.0)
    a = np.where(np.isfinite(lim["acceleration"]) & (lim["acceleration"] > 0), lim["acceleration"],
                 DEFAULT_ACCELERATION)
    return v * speed_scale, a * speed_scale


def run_simulation(
    urdf: str | RobotModel,
    controller: str | None = None,
    profile: str = "trapezoid",
    goal: Any = None,
    start: Any = None,
    *,
    model_error: float = 0.0,
    omega: float = 20.0,
    xi: float = 1.0,
    speed_scale: float = 1.0,
    settle_time: float = 0.5,
    timestep: float = 0.001,
    noise_q: float = 0.0,
    noise_qd: float = 0.0,
    payload: float = 0.0,
    seed: int = 0,
    plot: str | None = None,
    return_result: bool = False,
    coulomb_velocity: str | None = None,
    coulomb_velocity_band: Any = None,
    elastic: Any = None,
    motor_inertia: Any = None,
    motor_damping: Any = 0.0,
) -> dict[str, Any] | tuple[dict[str, Any], ClosedLoopResult]:
    """One closed-loop experiment from a URDF path / bundled robot name (or a model); returns the metrics.

    The controller uses the nominal model; the plant uses a copy with every inertial
    parameter off by ``model_error`` (random signs, :func:`~robot_dynamics.sim.simulator.perturbed`),
    an optional tip ``payload`` (kg) and measurement noise.  The plant applies the true Coulomb law
    −Fc sign(q̇); the controller's Coulomb compensation follows ``coulomb_velocity`` / ``coulomb_velocity_band``
    (None: the law's default, see :mod:`robot_dynamics.control.base`).

    ``elastic`` (joint stiffness k, one value or one per joint, N m/rad or N/m): the plant has elastic joints
    (001 §7.3.8, :class:`~robot_dynamics.dynamics.elastic.ElasticJoints`) with motor inertia ``motor_inertia``
    (default: the model's ``Ia`` where > 0, else ``DEFAULT_MOTOR_INERTIA_RATIO`` A_jj(q_start) of the links) and
    viscous friction ``motor_damping``.  ``controller`` None: ``"elastic"``
    (:class:`~robot_dynamics.control.elastic.ElasticJointController`) with ``elastic``, else ``"computed_torque"``;
    a rigid law on the elastic plant uses the rigid equivalent model (``Ia`` = the motor inertia).
    """
    from .simulator import MujocoArm, perturbed

    if isinstance(urdf, RobotModel):
        model = urdf
    else:
        from ..model.robots import load_model

        model = load_model(urdf)
    n = model.dof
    q_start = np.zeros(n) if start is None else np.asarray(start, float)
    if goal is None:
        raise ValueError("a goal configuration is required")
    q_goal = np.asarray(goal, float)
    for v, what in ((q_start, "start"), (q_goal, "goal")):
        if v.shape != (n,) or not np.all(np.isfinite(v)):
            raise ValueError(f"{what} must be {n} finite joint values, got {v.tolist()}")
    if controller is None:
        controller = "computed_torque" if elastic is None else ELASTIC_CONTROLLER
    if controller not in CONTROLLERS + (ELASTIC_CONTROLLER,):
        raise ValueError(f"unknown controller {controller!r}; choose one of {CONTROLLERS + (ELASTIC_CONTROLLER,)}")
    if controller == ELASTIC_CONTROLLER and elastic is None:
        raise ValueError("the elastic controller needs elastic joints: give the joint stiffness (--elastic K)")
    joints = None if elastic is None else elastic_joints(model, elastic, motor_inertia, motor_damping, q_start)
    v_max, a_max = reference_limits(model, speed_scale)
    traj = point_to_point(q_start, q_goal, v_max, a_max, profile=profile)
    rng = np.random.default_rng(seed)
    true_model = perturbed(model, model_error, rng) if model_error > 0 else model
    plant = MujocoArm(true_model, timestep=timestep, noise_q=noise_q, noise_qd=noise_qd, rng=rng,
                      payload=(payload, np.zeros(3)) if payload > 0 else None, elastic=joints)
    options = {"coulomb_velocity": coulomb_velocity, "coulomb_velocity_band": coulomb_velocity_band}
    if controller == ELASTIC_CONTROLLER:
        from ..control.elastic import ElasticJointController

        ctrl: JointController = ElasticJointController.tuned(model, joints, omega, xi, **options)
    else:
        nominal = model if joints is None else model.replace(Ia=joints.motor_inertia)  # rigid equivalent
        a = max_diagonal_inertia(nominal) if controller in ("pid", "pd_gravity") else None
        ctrl = make_controller(controller, nominal, omega, xi, a=a, **options)
    res = run_closed_loop(model, plant, ctrl, traj, settle_time=settle_time)
    res.metrics.update({"robot": model.name, "profile": profile, "model_error": model_error, "omega": omega,
                        "trajectory_duration": traj.duration})
    if joints is not None:
        res.metrics.update({"stiffness": joints.stiffness.tolist(), "motor_inertia": joints.motor_inertia.tolist(),
                            "motor_damping": joints.motor_damping.tolist()})
    if plot:
        plot_closed_loop(res, plot)
    return (res.metrics, res) if return_result else res.metrics


def elastic_joints(model: RobotModel, stiffness: Any, motor_inertia: Any = None, motor_damping: Any = 0.0,
                   q: Any = None) -> Any:
    """The :class:`~robot_dynamics.dynamics.elastic.ElasticJoints` of :func:`run_simulation` (resolved for ``model``):
    ``motor_inertia`` None → ``model.Ia`` where > 0, else ``DEFAULT_MOTOR_INERTIA_RATIO`` A_jj(q) of the links."""
    from ..dynamics.elastic import ElasticJoints, link_inertia_matrix

    if motor_inertia is None:
        q = np.zeros(model.dof) if q is None else q
        link = DEFAULT_MOTOR_INERTIA_RATIO * np.diag(link_inertia_matrix(model, q))
        motor_inertia = np.where(model.Ia > 0.0, model.Ia, link)
    return ElasticJoints(stiffness, motor_inertia, motor_damping).resolve(model)


def plot_closed_loop(result: ClosedLoopResult, path: str) -> None:
    """Three panels: reference vs actual joint positions, tracking error, efforts (relative to limits)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, name in enumerate(result.joint_names):
        c = colors[j % len(colors)]
        ax[0].plot(result.t, result.q_ref[:, j], "--", color=c, lw=1)
        ax[0].plot(result.t, result.q[:, j], color=c, lw=1.2, label=name)
        ax[1].plot(result.t, result.error[:, j], color=c, lw=1.2, label=name)
        ax[2].plot(result.t, result.tau[:, j], color=c, lw=1.2, label=name)
    ax[0].set_ylabel("q (dashed: reference)")
    ax[1].set_ylabel("error q_d - q")
    ax[2].set_ylabel("effort")
    ax[2].set_xlabel("t (s)")
    ax[0].legend(fontsize=7, ncol=3)
    m = result.metrics
    ax[0].set_title(f"{m.get('controller', '')}: max error {m.get('max_tracking_error', float('nan')):.3g}, "
                    f"max |effort|/limit {m.get('max_effort_ratio', float('nan')):.2f}")
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ CLI
def add_simulate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Arguments of ``robot-dynamics simulate``."""
    parser.add_argument("urdf", help="URDF path or bundled robot name")
    parser.add_argument("--controller", choices=CONTROLLERS + (ELASTIC_CONTROLLER,), default=None,
                        help="control law (default: elastic with --elastic, else computed_torque)")
    parser.add_argument("--profile", default="trapezoid", help="trapezoid, quintic, ... (issue 7 profiles)")
    parser.add_argument("--goal", type=float, nargs="+", required=True, help="goal joint values (URDF units)")
    parser.add_argument("--start", type=float, nargs="+", default=None, help="start joint values (default 0)")
    parser.add_argument("--model-error", type=float, default=0.0, help="relative error of the plant's inertial parameters")
    parser.add_argument("--omega", type=float, default=20.0, help="closed-loop bandwidth (rad/s)")
    parser.add_argument("--xi", type=float, default=1.0, help="damping ratio")
    parser.add_argument("--speed-scale", type=float, default=1.0, help="fraction of the velocity/acceleration limits")
    parser.add_argument("--settle", type=float, default=0.5, help="simulated time after the motion (s)")
    parser.add_argument("--noise", type=float, default=0.0, help="position measurement noise std")
    parser.add_argument("--noise-qd", type=float, default=0.0, help="velocity measurement noise std")
    parser.add_argument("--coulomb-velocity", choices=("desired", "measured"), default=None,
                        help="velocity of the controller's Coulomb compensation (default: the law's)")
    parser.add_argument("--coulomb-band", type=float, default=None,
                        help="velocity band of the Coulomb compensation, rad/s or m/s (default: the law's)")
    parser.add_argument("--payload", type=float, default=0.0, help="tip payload mass (kg)")
    parser.add_argument("--elastic", type=float, nargs="+", default=None, metavar="K",
                        help="elastic joints of stiffness K (N m/rad; one value or one per joint, 001 §7.3.8)")
    parser.add_argument("--motor-inertia", type=float, nargs="+", default=None, metavar="J",
                        help="motor inertia on the joint side with --elastic (default: the model's Ia, else 0.1 A_jj)")
    parser.add_argument("--motor-damping", type=float, nargs="+", default=[0.0], metavar="F",
                        help="motor viscous friction with --elastic (N m s/rad)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    parser.add_argument("--plot", default=None, help="write a PNG of reference/actual, error and efforts")
    return parser


def simulate_from_args(args: argparse.Namespace) -> int:
    """Run ``robot-dynamics simulate`` from parsed arguments (missing options take their defaults)."""
    defaults = vars(add_simulate_arguments(argparse.ArgumentParser()).parse_args(["x", "--goal", "0"]))
    opt = {k: getattr(args, k, v) for k, v in defaults.items()}
    try:
        metrics = run_simulation(
            opt["urdf"], opt["controller"], opt["profile"], opt["goal"], opt["start"],
            model_error=opt["model_error"], omega=opt["omega"], xi=opt["xi"], speed_scale=opt["speed_scale"],
            settle_time=opt["settle"], noise_q=opt["noise"], noise_qd=opt["noise_qd"], payload=opt["payload"],
            seed=opt["seed"], plot=opt["plot"], coulomb_velocity=opt["coulomb_velocity"],
            coulomb_velocity_band=opt["coulomb_band"], elastic=_scalar_or_list(opt["elastic"]),
            motor_inertia=_scalar_or_list(opt["motor_inertia"]), motor_damping=_scalar_or_list(opt["motor_damping"]),
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if opt["json"]:
        print(json.dumps(metrics))
    else:
        for k in ("controller", "stable", "max_tracking_error", "rms_tracking_error", "final_error",
                  "max_effort_ratio", "saturation_time", "max_deflection", "stiffness", "motor_inertia"):
            if k in metrics:
                print(f"{k}: {metrics[k]}")
    return 0 if metrics["stable"] else 1


def _scalar_or_list(v: Any) -> Any:
    """A CLI list of one value as a scalar (applies to every joint), else the list (or None)."""
    return v[0] if isinstance(v, list) and len(v) == 1 else v


def simulate_cli(argv: list[str] | argparse.Namespace | None = None) -> int:
    """``robot-dynamics simulate URDF --controller ... --goal ... [--json] [--plot out.png]``.

    ``argv`` is a list of command-line words or an already parsed ``argparse.Namespace``.
    """
    if isinstance(argv, argparse.Namespace):
        return simulate_from_args(argv)
    parser = add_simulate_arguments(argparse.ArgumentParser(prog="robot-dynamics simulate"))
    return simulate_from_args(parser.parse_args(argv))


__all__ = [
    "ClosedLoopResult",
    "DEFAULT_MOTOR_INERTIA_RATIO",
    "ELASTIC_CONTROLLER",
    "add_simulate_arguments",
    "elastic_joints",
    "plot_closed_loop",
    "reference_limits",
    "run_closed_loop",
    "run_simulation",
    "simulate_cli",
    "simulate_from_args",
    "tracking_metrics",
]
