"""Geometric and kinematic models: DGM, kinematic Jacobian, numeric IGM by damped least squares (redundant arms:
:mod:`.redundancy`).

* DGM (002 eq. [3.7]): ^0T_j = ^0T_{a(j)} ^{a(j)}T_j, here expressed in ``base_link``.
* Kinematic Jacobian of the origin of a link (002 §5.3, "kinematic Jacobian
  matrix"): column k of a joint on the path to the link is
  ``[z_k x (p - O_k); z_k]`` (revolute) or ``[z_k; 0]`` (prismatic), times
  ``sign_k`` to use URDF joint coordinates; other columns are zero.
* The pose error of the numeric IGM (:func:`robot_dynamics.kinematics.redundancy.inverse_kinematics`):
  dX = [p* - p; u sin(theta)], the rotation vector of R* R^T (:func:`rotation_vector`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.mdh import PRISMATIC

if TYPE_CHECKING:  # the data type below the algorithms, never the facade RobotModel (no import cycle)
    from ..model.data import RobotData


def frame_poses(model: RobotData, q: Any) -> np.ndarray:
    """Poses of the MDH frames R_0..R_n in ``base_link``: (n+1, 4, 4) or (N, n+1, 4, 4)."""
    return model.base_transform @ model.link_frames(q)


def link_poses(model: RobotData, q: Any) -> dict[str, np.ndarray]:
    """DGM of every URDF link of ``model.frames``: name -> pose in ``base_link`` ((4, 4) or (N, 4, 4))."""
    f = frame_poses(model, q)
    return {k: f[..., j, :, :] @ t for k, (j, t) in model.frames.items()}


def _path(model: RobotData, j: int) -> list[int]:
    """Joints (1-based) on the path from R0 to R_j."""
    out = []
    while j > 0:
        out.append(j)
        j = int(model.antecedent[j - 1])
    return out[::-1]


def _link(model: RobotData, link: str | None) -> tuple[int, np.ndarray]:
    link = link or model.tip_link
    if link not in model.frames:
        raise ValueError(f"unknown link {link!r}; known links: {sorted(model.frames)}")
    return model.frames[link]


def jacobian(model: RobotData, q: Any, link: str | None = None) -> np.ndarray:
    """Kinematic Jacobian [v; w] (6, n) or (N, 6, n) of the origin of ``link`` (default the tip),
    expressed in ``base_link``, for URDF joint velocities."""
    j, t = _link(model, link)
    return jacobian_from_frames(model, frame_poses(model, q), j, t)


def jacobian_from_frames(model: RobotData, f: np.ndarray, j: int, t: np.ndarray) -> np.ndarray:
    """:func:`jacobian` of the point ``t`` of frame R_j from precomputed :func:`frame_poses` ``f``."""
    p = (f[..., j, :, :] @ t)[..., :3, 3]
    out = np.zeros(f.shape[:-3] + (6, model.dof))
    path = np.array(_path(model, j), dtype=int)
    if path.size == 0:
        return out
    fk = f[..., path, :, :]  # (..., k, 4, 4)
    z = fk[..., :3, 2] * model.sign[path - 1, None]  # (..., k, 3)
    revolute = (model.sigma[path - 1] != PRISMATIC)[:, None]
    r = p[..., None, :] - fk[..., :3, 3]
    cross = np.stack([z[..., 1] * r[..., 2] - z[..., 2] * r[..., 1], z[..., 2] * r[..., 0] - z[..., 0] * r[..., 2],
                      z[..., 0] * r[..., 1] - z[..., 1] * r[..., 0]], axis=-1)  # z x (p - O_k)
    lin = np.where(revolute, cross, z)
    out[..., :3, path - 1] = np.swapaxes(lin, -1, -2)
    out[..., 3:, path - 1] = np.swapaxes(np.where(revolute, z, 0.0), -1, -2)
    return out


def rotation_vector(rot: np.ndarray) -> np.ndarray:
    """Rotation vector u*theta of a rotation matrix (002 §2.3.8, atan2 form of [2.37])."""
    w = np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]])
    s = 0.5 * np.linalg.norm(w)
    c = 0.5 * (np.trace(rot) - 1.0)
    theta = np.arctan2(s, c)
    if s > 1e-9:
        return w * (theta / (2.0 * s))
    if c > 0:  # theta ~ 0
        return 0.5 * w
    # theta ~ pi: axis from the symmetric part
    b = 0.5 * (rot + np.eye(3))
    i = int(np.argmax(np.diag(b)))
    u = b[:, i] / np.sqrt(max(b[i, i], 1e-300))
    if u @ w < 0:
        u = -u
    return u * theta


def _check_target(target: Any, position_only: bool) -> np.ndarray:
    t = np.asarray(target, dtype=float)
    shape = (3,) if position_only else (4, 4)
    if t.shape != shape:
        raise ValueError(f"target must have shape {shape} (position_only={position_only}), got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("target contains NaN or inf")
    if not position_only:
        r = t[:3, :3]
        if np.abs(r.T @ r - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0:
            raise ValueError("target rotation is not a rotation matrix")
    return t


def inverse_kinematics(
    model: RobotData,
    target: Any,
    q0: Any = None,
    link: str | None = None,
    *,
    position_only: bool = False,
    tolerance: float = 1e-10,
    max_iterations: int = 300,
    damping: float = 1e-3,
    max_step: float = 0.5,
    restarts: int = 5,
    seed: int = 0,
) -> np.ndarray:
    """Joint values (URDF coordinates) placing ``link`` (default the tip) at ``target`` by damped least squares
    (002 eq. [6.16]-[6.17], iterated as in §6.6), iterates clamped to the joint limits.

    ``target``: 4x4 pose in ``base_link`` (or a 3-vector position with ``position_only``).  From ``q0``
    (default mid-range), then ``restarts`` random starts inside the limits.  Raises ValueError when no iterate
    reaches ``tolerance`` (m and rad).  Redundant arms (a secondary criterion, joint weights, task priority):
    :func:`robot_dynamics.kinematics.redundancy.inverse_kinematics` (``model.inverse_kinematics``), which calls
    this one without them.
    """
    j, t_link = _link(model, link)
    target = _check_target(target, position_only)
    lim = model.limits
    lower, upper = lim["lower"], lim["upper"]
    if q0 is None:
        q0 = np.where(np.isfinite(lower) & np.isfinite(upper), 0.5 * (lower + upper), np.clip(0.0, lower, upper))
    q0 = model.check_joint_vector(q0, "q0")
    if q0.ndim != 1:
        raise ValueError("q0 must be a single joint vector of shape (n,)")
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(lower), lower, -np.pi)
    hi = np.where(np.isfinite(upper), upper, np.pi)
    rows = slice(0, 3) if position_only else slice(0, 6)
    best = (np.inf, q0)
    for attempt in range(restarts + 1):
        q = np.clip(q0 if attempt == 0 else rng.uniform(lo, hi), lower, upper)
        for _ in range(max_iterations):
            pose = frame_poses(model, q)[j] @ t_link
            err = np.zeros(6)
            if position_only:
                err[:3] = target - pose[:3, 3]
            else:
                err[:3] = target[:3, 3] - pose[:3, 3]
                err[3:] = rotation_vector(target[:3, :3] @ pose[:3, :3].T)
            e = err[rows]
            size = float(np.abs(e).max())
            if size < best[0]:
                best = (size, q.copy())
            if size <= tolerance:
                return q
            jac = jacobian(model, q, link)[rows]
            dq = jac.T @ np.linalg.solve(jac @ jac.T + damping**2 * np.eye(jac.shape[0]), e)
            step = np.abs(dq).max()
            if step > max_step:
                dq *= max_step / step
            q = np.clip(q + dq, lower, upper)
    raise ValueError(
        f"inverse kinematics did not converge for link {link or model.tip_link!r}: best residual "
        f"{best[0]:.3g} > tolerance {tolerance:g} after {restarts + 1} starts (target unreachable or outside limits?)"
    )


__all__ = ["frame_poses", "inverse_kinematics", "jacobian", "jacobian_from_frames", "link_poses", "rotation_vector"]
