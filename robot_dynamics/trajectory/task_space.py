"""Task-space straight line with a rotation about a fixed axis (001 §8.4, eqs. 8.48-8.54).

The end-effector frame moves from ^0T_E^i = [R^i P^i] to ^0T_E^f = [R^f P^f]:

    P(t) = P^i + r(t) (P^f - P^i)              (8.53)
    R(t) = R^i rot(u, r(t) alpha)              (8.54)

with D = ||P^f - P^i|| (8.48) and u, alpha from R^i rot(u, alpha) = R^f (8.49-8.51;
u in the end-effector frame).  D and alpha are synchronized as two variables
with the methods of §8.3 (translation limits k_v1, k_a1, rotation limits k_v2,
k_a2), so both use the same interpolation function r(t).

The conversion to joint space solves the inverse geometric model at the knots
(the closed-form IGM of :mod:`robot_dynamics.kinematics.analytic_ik` when the arm has
one, the solution nearest the previous knot's extrapolation so that the path stays
continuous; otherwise, or when it finds no solution, Newton on the kinematic Jacobian,
warm-started along the path), the joint
velocities from the kinematic model J qd = [v; w] and the accelerations from
J qdd = [a; w_dot] - J_dot qd, then interpolates the knots with C^2 quintic
Hermite polynomials.  It raises ValueError near singular configurations
(smallest singular value of J below ``singular_tolerance``), on joint
position/velocity limit violations and when the IGM fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import Triple
from .joint_space import PointToPointTrajectory, point_to_point
from .sampled import SampledTrajectory


def rot(u: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    """rot(u, angle) (Rodrigues, 002 eq. 2.31); angle may be an array -> (..., 3, 3)."""
    u = np.asarray(u, dtype=float)
    a = np.asarray(angle, dtype=float)[..., None, None]
    k = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    return np.eye(3) + np.sin(a) * k + (1.0 - np.cos(a)) * (k @ k)


def axis_angle(r_start: np.ndarray, r_goal: np.ndarray) -> tuple[np.ndarray, float]:
    """u (in the start frame) and alpha in [0, pi] with R^i rot(u, alpha) = R^f (001 eqs. 8.49-8.51).

    Small-angle cases (§2.3.8): for S alpha ~ 0 and alpha ~ 0, u is irrelevant
    (returned as z, alpha from the skew part); for alpha ~ pi, u comes from the
    symmetric part rot + I = 2 u u^T.
    """
    m = r_start.T @ r_goal  # 8.50
    c = 0.5 * (np.trace(m) - 1.0)
    w = np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])  # 8.51 (a.n - n.a, ...)
    s = 0.5 * np.linalg.norm(w)
    alpha = math.atan2(s, c)
    if s > 1e-6:
        return w / (2.0 * s), alpha
    if c > 0.0:  # alpha ~ 0: rot ~ I + alpha [u]x
        return (w / (2.0 * s) if s > 0.0 else np.array([0.0, 0.0, 1.0])), alpha
    b = 0.5 * (m + np.eye(3))  # alpha ~ pi: b = u u^T (+ O(s))
    i = int(np.argmax(np.diag(b)))
    u = b[:, i] / math.sqrt(b[i, i])
    if u @ w < 0.0:
        u = -u
    return u / np.linalg.norm(u), alpha


def _pose(x: Any, what: str) -> np.ndarray:
    t = np.asarray(x, dtype=float)
    if t.shape != (4, 4) or not np.all(np.isfinite(t)):
        raise ValueError(f"{what} must be a finite 4x4 homogeneous transform")
    r = t[:3, :3]
    if np.abs(r.T @ r - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0.0:
        raise ValueError(f"{what} has a rotation part that is not a rotation matrix")
    return t


def _pair(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(2, float(a))
    if a.shape != (2,) or not np.all(np.isfinite(a)) or np.any(a <= 0.0):
        raise ValueError(f"{what} must be positive finite (translation, rotation) limits, got {x!r}")
    return a


class TaskSpaceLine:
    """Straight line + rotation about a fixed end-effector axis, synchronized (001 eqs. 8.48-8.54).

    ``pose(t)`` -> (4, 4) or (N, 4, 4); ``twist(t)`` -> (v, w, v_dot, w_dot), each (3,) or (N, 3),
    linear and angular velocity/acceleration in the base frame (w = R^i u alpha r_dot, 8.57).
    """

    def __init__(self, t_start: Any, t_goal: Any, v_max: Any, a_max: Any, profile: str = "trapezoid",
                 duration: float | None = None) -> None:
        self.t_start, self.t_goal = _pose(t_start, "t_start"), _pose(t_goal, "t_goal")
        kv, ka = _pair(v_max, "v_max"), _pair(a_max, "a_max")
        self.delta = self.t_goal[:3, 3] - self.t_start[:3, 3]
        self.distance = float(np.linalg.norm(self.delta))  # 8.48
        self.axis, self.angle = axis_angle(self.t_start[:3, :3], self.t_goal[:3, :3])
        # the two variables D and alpha, synchronized by §8.3
        self.timing: PointToPointTrajectory = point_to_point([0.0, 0.0], [self.distance, self.angle], kv, ka,
                                                             profile, duration)
        self.duration = self.timing.duration

    def _r(self, t: Any) -> Triple:
        r, rd, rdd = self.timing.interpolation(np.asarray(t, dtype=float))
        return r, rd, rdd

    def pose(self, t: Any) -> np.ndarray:
        r, _, _ = self._r(t)
        out = np.zeros(np.shape(r) + (4, 4))
        out[..., 3, 3] = 1.0
        out[..., :3, 3] = self.t_start[:3, 3] + np.asarray(r)[..., None] * self.delta  # 8.53
        out[..., :3, :3] = self.t_start[:3, :3] @ rot(self.axis, np.asarray(r) * self.angle)  # 8.54
        return out

    def twist(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        _, rd, rdd = self._r(t)
        rd, rdd = np.asarray(rd)[..., None], np.asarray(rdd)[..., None]
        w_dir = self.t_start[:3, :3] @ self.axis * self.angle  # R^i u alpha (base frame), 8.57
        return rd * self.delta, rd * w_dir, rdd * self.delta, rdd * w_dir


def _twist_error(target: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """[dp; rotation vector of target R^T] (6,) so that J dq = error moves towards target."""
    m = target[:3, :3] @ pose[:3, :3].T
    u, a = axis_angle(np.eye(3), m)
    return np.concatenate([target[:3, 3] - pose[:3, 3], u * a])


_Solver = Callable[[np.ndarray, np.ndarray, float], "np.ndarray | None"]


def _closed_form(model: Any, link: str, mode: str) -> _Solver | None:
    """The closed-form IGM of ``link`` as f(pose, q_near, tolerance) -> the solution nearest q_near (None: no
    solution), or None when the arm has none (``mode`` "auto") or ``mode`` is "numeric"."""
    if mode == "numeric":
        return None
    from ..kinematics import analytic_ik

    try:
        arm = analytic_ik._arm(model, link)
    except (ValueError, AttributeError, KeyError, TypeError) as exc:
        if mode == "analytic":
            raise ValueError(f"inverse_geometry='analytic': {exc}") from None
        return None

    def solve(pose: np.ndarray, q_near: np.ndarray, tolerance: float) -> np.ndarray | None:
        return analytic_ik._nearest(model, arm, pose, q_near, model.to_mdh(q_near), link, tolerance, analytic_ik.TOL)

    return solve


def task_space_line(model: Any, q_start: Any, target: Any, v_max: Any, a_max: Any, profile: str = "trapezoid",
                    duration: float | None = None, period: float = 0.005, link: str | None = None,
                    singular_tolerance: float = 1e-3, check_velocity_limits: bool = True,
                    tolerance: float = 1e-10, *, inverse_geometry: str = "auto") -> SampledTrajectory:
    """Joint trajectory moving ``link`` (default the tip) on a straight line to ``target`` (001 §8.4).

    q_start: (n,) start configuration (its forward kinematics is the start pose).
    target: 4x4 goal pose of ``link`` in ``base_link``.  v_max, a_max: (translation
    m/s, rotation rad/s) limits, scalars apply to both.  Knots every ``period``
    seconds; the result is a C^2 :class:`SampledTrajectory` with the trajectory
    interface.  The returned object also carries ``.line`` (the :class:`TaskSpaceLine`).
    Raises ValueError with the time and configuration on singularities, joint
    limit violations or IGM failure.  ``inverse_geometry``: ``"auto"`` (the closed-form
    IGM when the arm has one, else Newton), ``"analytic"`` (ValueError if the arm has
    none) or ``"numeric"`` (Newton only).
    """
    if inverse_geometry not in ("auto", "analytic", "numeric"):
        raise ValueError(f"inverse_geometry must be 'auto', 'analytic' or 'numeric', got {inverse_geometry!r}")
    q0 = model.check_joint_vector(q_start, "q_start")
    if q0.ndim != 1:
        raise ValueError("q_start must be a single joint vector")
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f"period must be finite and positive, got {period}")
    link = link or model.tip_link
    closed_form = _closed_form(model, link, inverse_geometry)
    line = TaskSpaceLine(model.forward_kinematics(q0, link), target, v_max, a_max, profile, duration)
    if line.duration == 0.0:
        z = np.zeros((2, q0.size))
        traj = SampledTrajectory(np.array([0.0, period]), np.stack([q0, q0]), z, z)
        traj.duration = 0.0
        traj.line = line
        return traj
    count = max(2, math.ceil(line.duration / period))
    times = np.linspace(0.0, line.duration, count + 1)
    poses = line.pose(times)
    v, w, vd, wd = line.twist(times)
    lim = model.limits
    n = q0.size
    q = np.empty((times.size, n))
    qd = np.empty_like(q)
    qdd = np.empty_like(q)
    guess = q0.copy()
    for k in range(times.size):  # the IGM is sequential: each knot starts from the previous one
        qk = closed_form(poses[k], guess, tolerance) if closed_form is not None else None
        if qk is None:
            qk = guess
            for _ in range(50):
                err = _twist_error(poses[k], model.forward_kinematics(qk, link))
                if np.max(np.abs(err)) <= tolerance:
                    break
                jac = model.jacobian(qk, link)
                qk = qk + np.linalg.lstsq(jac, err, rcond=None)[0]
            else:
                raise ValueError(f"inverse geometric model failed at t = {times[k]:.4g} s (residual "
                                 f"{np.max(np.abs(err)):.3g}); the path leaves the workspace or crosses a singularity")
        jac = model.jacobian(qk, link)
        sv = np.linalg.svd(jac, compute_uv=False)
        if sv.size < 6 or sv[-1] < singular_tolerance:
            raise ValueError(f"singular configuration on the path at t = {times[k]:.4g} s "
                             f"(smallest singular value of J {sv[-1] if sv.size else 0.0:.3g} < {singular_tolerance}), "
                             f"q = {np.array2string(qk, precision=4)}")
        if np.any(qk < lim["lower"] - 1e-9) or np.any(qk > lim["upper"] + 1e-9):
            bad = int(np.nonzero((qk < lim["lower"] - 1e-9) | (qk > lim["upper"] + 1e-9))[0][0])
            raise ValueError(f"joint {model.joint_names[bad]!r} leaves its limits [{lim['lower'][bad]}, "
                             f"{lim['upper'][bad]}] at t = {times[k]:.4g} s (q = {qk[bad]:.4g})")
        pinv = np.linalg.pinv(jac)
        qd[k] = pinv @ np.concatenate([v[k], w[k]])
        h = 1e-7
        jdot_qd = (model.jacobian(qk + h * qd[k], link) - model.jacobian(qk - h * qd[k], link)) @ qd[k] / (2 * h)
        qdd[k] = pinv @ (np.concatenate([vd[k], wd[k]]) - jdot_qd)
        if check_velocity_limits and np.any(np.abs(qd[k]) > lim["velocity"]):
            bad = int(np.argmax(np.abs(qd[k]) / lim["velocity"]))
            raise ValueError(f"joint {model.joint_names[bad]!r} exceeds its velocity limit {lim['velocity'][bad]} "
                             f"at t = {times[k]:.4g} s (|qd| = {abs(qd[k][bad]):.4g}); lower the task-space limits")
        q[k] = qk
        guess = qk + qd[k] * (times[min(k + 1, times.size - 1)] - times[k])
    traj = SampledTrajectory(times, q, qd, qdd)
    traj.line = line
    return traj
