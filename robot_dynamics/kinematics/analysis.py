"""Kinematic analysis of redundant and ordinary arms (002 ch. 5, §5.8-5.11).

* Velocity transmission (002 §5.8): SVD of the kinematic Jacobian J = U Σ Vᵀ (002 eq. [5.27]-[5.28]),
  singular values s_1 >= ... >= s_r > 0, r = rank J.  With ||q̇|| <= 1 ([5.36]) the task velocities fill
  the *velocity ellipsoid* Ẋᵀ (J Jᵀ)⁻¹ Ẋ <= 1 ([5.37]): principal axes U_i, semi-axes s_i.  The
  manipulability is w = sqrt(det(J Jᵀ)) ([5.38]; the seed lost the square root, errata 42) = s_1 ... s_m,
  which is |det J| for a square J ([5.39]).
* Force transmission (002 §5.9.3): with ||Γ|| <= 1 and Γ = Jᵀ f ([5.43]) the wrenches fill the *force
  ellipsoid* fᵀ J Jᵀ f <= 1: the same axes U_i, semi-axes 1/s_i (infinite along N(Jᵀ), the directions in
  which the structure bears the wrench).
* Second-order kinematic model (002 §5.10, eq. [5.44]-[5.47]): the forward recursion of [5.47] over the
  MDH frames gives the twist and the classical acceleration [v̇; ω̇] = J q̈ + J̇ q̇ of a link origin; with
  q̈ = 0 it is J̇ q̇ ([Khalil 87a]), without differentiating J.
* Orientation coordinates (002 §5.11.2-5.11.4): the matrices relating ω (the angular velocity of the
  frame, in the fixed frame) and the rates of z-x-z Euler angles ([5.61]-[5.63]), roll-pitch-yaw angles
  ([5.64]-[5.65]) and the quaternion (Euler parameters, [5.66]-[5.70]).

Everything is expressed in ``base_link``; twists and Jacobian rows are [v; ω] (the linear velocity of
the link origin first), for URDF joint velocities.  When rows mix metres and radians the singular values
mix m/rad and rad/rad: use ``rows="position"`` or ``"orientation"`` for a dimensionally homogeneous
analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.mdh import PRISMATIC
from .geometric_model import _link, _path, frame_poses, jacobian

if TYPE_CHECKING:
    from ..model.data import RobotData

_ROWS = {"all": [0, 1, 2, 3, 4, 5], "position": [0, 1, 2], "orientation": [3, 4, 5]}


# --------------------------------------------------------------------------- §5.8 SVD, ellipsoids
def _rows(rows: str | Sequence[int]) -> list[int]:
    if isinstance(rows, str):
        if rows not in _ROWS:
            raise ValueError(f"rows must be one of {sorted(_ROWS)} or a sequence of row indices 0..5, got {rows!r}")
        return _ROWS[rows]
    idx = [int(i) for i in rows]
    if not idx or len(set(idx)) != len(idx) or any(not 0 <= i <= 5 for i in idx):
        raise ValueError(f"rows must be distinct indices in 0..5 ([v; w] order), got {rows!r}")
    return idx


def task_jacobian(model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all") -> np.ndarray:
    """Rows of the kinematic Jacobian [v; ω] of ``link`` (default the tip) in ``base_link``: (m, n) or (N, m, n).

    ``rows``: ``"all"`` (6 rows), ``"position"`` (v), ``"orientation"`` (ω) or indices into [vx vy vz wx wy wz]
    (e.g. ``[0, 1, 5]`` for a planar arm)."""
    idx = _rows(rows)
    return jacobian(model, q, link)[..., idx, :]


def _tolerance(sigma: np.ndarray, shape: tuple[int, int], tol: float | None) -> np.ndarray:
    """Rank tolerance per sample: ``tol`` or numpy's matrix_rank default s_1 max(m, n) eps."""
    if tol is not None:
        return np.full(sigma.shape[:-1], float(tol))
    return sigma[..., 0] * max(shape) * np.finfo(float).eps


def jacobian_svd(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SVD J = U Σ Vᵀ of the kinematic Jacobian (002 eq. [5.27]-[5.31]).

    Returns U (m, m) (output vectors: columns U_1..U_r span R(J), the rest its complement), the singular
    values s (min(m, n),) in decreasing order, and Vᵀ (n, n) (rows V_{r+1}..V_n span the null space N(J));
    a leading batch axis N when q is (N, n)."""
    jac = task_jacobian(model, q, link, rows)
    return np.linalg.svd(jac, full_matrices=True)


def _padded(sigma: np.ndarray, m: int) -> np.ndarray:
    """The m singular values s_1..s_m, s_i = 0 for i > min(m, n)."""
    out = np.zeros(sigma.shape[:-1] + (m,))
    out[..., : sigma.shape[-1]] = sigma
    return out


def _manipulability(sigma: np.ndarray, m: int) -> np.ndarray:
    w = np.prod(sigma, axis=-1)
    return w if sigma.shape[-1] == m else np.zeros_like(w)


def jacobian_manipulability(J: Any) -> np.ndarray | float:
    """w = sqrt(det(J Jᵀ)) = s_1 ... s_m of a given (m, n) Jacobian or a stack (N, m, n) (002 eq. [5.38],
    errata 42); 0 when m > n.  :func:`manipulability` is this of the model's Jacobian."""
    jac = np.asarray(J, dtype=float)
    if jac.ndim < 2:
        raise ValueError(f"J must be an (m, n) matrix or a stack of them, got shape {jac.shape}")
    w = _manipulability(np.linalg.svd(jac, compute_uv=False), jac.shape[-2])
    return float(w) if w.ndim == 0 else w


def manipulability(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all"
) -> np.ndarray | float:
    """Velocity manipulability w = sqrt(det(J Jᵀ)) = s_1 s_2 ... s_m (002 eq. [5.38], errata 42).

    For a square J it is |det J| (002 eq. [5.39]); it is 0 at a singular configuration, and always 0 when
    the m task rows exceed the n joints (choose ``rows``).  A float for q (n,), an (N,) array for (N, n)."""
    return jacobian_manipulability(task_jacobian(model, q, link, rows))


def condition_number(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all", tol: float | None = None
) -> np.ndarray | float:
    """Condition number s_1 / s_m of J (m task rows); inf at a singular configuration, i.e. when
    s_m <= ``tol`` (default s_1 max(m, n) eps) or m > n.  1 for an isotropic configuration."""
    jac = task_jacobian(model, q, link, rows)
    m = jac.shape[-2]
    sigma = _padded(np.linalg.svd(jac, compute_uv=False), m)
    tiny = sigma[..., -1] <= _tolerance(sigma, jac.shape[-2:], tol)
    c = np.where(tiny, np.inf, sigma[..., 0] / np.where(tiny, 1.0, sigma[..., -1]))
    return float(c) if c.ndim == 0 else c


def _force_lengths(sigma: np.ndarray, tol: np.ndarray) -> np.ndarray:
    zero = sigma <= tol[..., None]
    return np.where(zero, np.inf, 1.0 / np.where(zero, 1.0, sigma))


def velocity_ellipsoid(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all"
) -> tuple[np.ndarray, np.ndarray]:
    """Velocity (manipulability) ellipsoid Ẋᵀ (J Jᵀ)⁻¹ Ẋ <= 1, the image of ||q̇|| <= 1 (002 eq. [5.36]-[5.37]).

    Returns the principal axes (m, m), unit columns U_i, and the semi-axis lengths (m,) s_i (0 along the
    directions the arm cannot move in, i > rank J)."""
    u, sigma, _ = jacobian_svd(model, q, link, rows)
    return u, _padded(sigma, u.shape[-1])


def force_ellipsoid(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all", tol: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Force ellipsoid fᵀ J Jᵀ f <= 1, the wrenches balanced by ||Γ|| <= 1 with Γ = Jᵀ f (002 §5.9.3, eq. [5.43]).

    Returns the principal axes (m, m), unit columns U_i (those of the velocity ellipsoid), and the
    semi-axis lengths (m,) 1/s_i, ``inf`` where s_i <= ``tol`` (default s_1 max(m, n) eps): along N(Jᵀ)
    the structure bears any wrench."""
    jac = task_jacobian(model, q, link, rows)
    u, sigma, _ = np.linalg.svd(jac, full_matrices=True)
    s = _padded(sigma, jac.shape[-2])
    return u, _force_lengths(s, _tolerance(s, jac.shape[-2:], tol))


@dataclass(frozen=True)
class KinematicAnalysis:
    """Velocity/force transmission of one configuration (or a batch: leading axis N on every field).

    jacobian (m, n); singular_values (m,) s_1 >= ... >= s_m (zeros beyond min(m, n)); rank; null_space
    (n, n - rank) orthonormal basis of N(J) (self-motions, q̇ giving Ẋ = 0; batch: absent, see
    ``input_vectors``); input_vectors (n, n) = V; manipulability w (eq. [5.38]); condition_number s_1/s_m
    (inf when singular); velocity_axes (m, m) = U (columns); velocity_lengths s_i; force_lengths 1/s_i
    (inf when s_i = 0)."""

    jacobian: np.ndarray
    singular_values: np.ndarray
    rank: np.ndarray | int
    input_vectors: np.ndarray
    manipulability: np.ndarray | float
    condition_number: np.ndarray | float
    velocity_axes: np.ndarray
    velocity_lengths: np.ndarray
    force_lengths: np.ndarray
    null_space: np.ndarray | None


def kinematic_analysis(
    model: RobotData, q: Any, link: str | None = None, rows: str | Sequence[int] = "all", tol: float | None = None
) -> KinematicAnalysis:
    """SVD-based analysis of 002 §5.8-5.9 at q (n,) or a batch (N, n): see :class:`KinematicAnalysis`.

    Singular values <= ``tol`` (default s_1 max(m, n) eps, numpy's ``matrix_rank``) count as zero."""
    jac = task_jacobian(model, q, link, rows)
    u, sigma, vt = np.linalg.svd(jac, full_matrices=True)
    m, n = jac.shape[-2:]
    s = _padded(sigma, m)
    t = _tolerance(s, (m, n), tol)
    rank = np.sum(sigma > t[..., None], axis=-1)
    tiny = s[..., -1] <= t
    cond = np.where(tiny, np.inf, s[..., 0] / np.where(tiny, 1.0, s[..., -1]))
    w = _manipulability(sigma, m)
    single = jac.ndim == 2
    return KinematicAnalysis(
        jacobian=jac,
        singular_values=s,
        rank=int(rank) if single else rank,
        input_vectors=np.swapaxes(vt, -1, -2),
        manipulability=float(w) if single else w,
        condition_number=float(cond) if single else cond,
        velocity_axes=u,
        velocity_lengths=s,
        force_lengths=_force_lengths(s, t),
        null_space=vt[int(rank):].T if single else None,
    )


# --------------------------------------------------------------------------- §5.10 second order
def _joint_vectors(model: RobotData, q: Any, *others: tuple[Any, str]) -> list[np.ndarray]:
    q = model.check_joint_vector(q)
    out = [q]
    for v, what in others:
        a = model.check_joint_vector(v, what)
        if a.shape != q.shape:
            raise ValueError(f"{what} must have the shape of q {q.shape}, got {a.shape}")
        out.append(a)
    return out


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b; for two (3,) vectors by components (np.cross costs ~20 µs there, this ~2 µs: the control cycle)."""
    if a.ndim == 1 and b.ndim == 1:
        a0, a1, a2 = a
        b0, b1, b2 = b
        return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return np.cross(a, b)


def _forward_recursion(
    model: RobotData, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray | None, link: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """Twist [v; ω] and classical acceleration [v̇; ω̇] of the ``link`` origin, in ``base_link`` (002 eq. [5.47]).

    [5.47] projected in the fixed frame instead of R_j (i = a(j), P_j = O_j - O_i, z_j the axis of joint j,
    q̇_j, q̈_j in MDH coordinates = sign_j times the URDF ones)::

        ω_j = ω_i + σ̄_j q̇_j z_j                   v_j = v_i + ω_i × P_j + σ_j q̇_j z_j
        ω̇_j = ω̇_i + σ̄_j (q̈_j z_j + ω_i × q̇_j z_j)
        v̇_j = v̇_i + U_i P_j + σ_j (q̈_j z_j + 2 ω_i × q̇_j z_j),   U_i P = ω̇_i × P + ω_i × (ω_i × P)

    over the joints on the path R_0 -> R_j only (a tree's other branches do not move the link).
    """
    j_link, t_link = _link(model, link)
    f = frame_poses(model, q)
    batch = q.shape[:-1]
    w = np.zeros(batch + (3,))
    wd = np.zeros(batch + (3,))
    v = np.zeros(batch + (3,))
    vd = np.zeros(batch + (3,))
    qdm = qd * model.sign
    qddm = np.zeros_like(qdm) if qdd is None else qdd * model.sign
    state = {0: (w, wd, v, vd)}
    for j in _path(model, j_link):
        i = int(model.antecedent[j - 1])
        w, wd, v, vd = state[i]
        p = f[..., j, :3, 3] - f[..., i, :3, 3]
        z = f[..., j, :3, 2]
        wqz = _cross(w, qdm[..., j - 1, None] * z)
        v = v + _cross(w, p)
        vd = vd + _cross(wd, p) + _cross(w, _cross(w, p))
        if model.sigma[j - 1] == PRISMATIC:
            v = v + qdm[..., j - 1, None] * z
            vd = vd + qddm[..., j - 1, None] * z + 2.0 * wqz
        else:
            w = w + qdm[..., j - 1, None] * z
            wd = wd + qddm[..., j - 1, None] * z + wqz
        state[j] = (w, wd, v, vd)
    w, wd, v, vd = state[j_link]
    p = (f[..., j_link, :, :] @ t_link)[..., :3, 3] - f[..., j_link, :3, 3]
    v = v + _cross(w, p)
    vd = vd + _cross(wd, p) + _cross(w, _cross(w, p))
    return np.concatenate([v, w], axis=-1), np.concatenate([vd, wd], axis=-1)


def link_velocity(model: RobotData, q: Any, qd: Any, link: str | None = None) -> np.ndarray:
    """Twist [v; ω] = J q̇ of the ``link`` origin (default the tip) in ``base_link``, by the forward velocity
    recursion (002 eq. [5.23] projected in the fixed frame): (6,) or (N, 6)."""
    q, qd = _joint_vectors(model, q, (qd, "qd"))
    return _forward_recursion(model, q, qd, None, link)[0]


def link_acceleration(model: RobotData, q: Any, qd: Any, qdd: Any, link: str | None = None) -> np.ndarray:
    """Classical acceleration [v̇; ω̇] = J q̈ + J̇ q̇ of the ``link`` origin in ``base_link`` (002 eq. [5.46]-[5.47]):
    v̇ is the second time derivative of the origin's position (not the spatial acceleration)."""
    q, qd, qdd = _joint_vectors(model, q, (qd, "qd"), (qdd, "qdd"))
    return _forward_recursion(model, q, qd, qdd, link)[1]


def jdot_qd(model: RobotData, q: Any, qd: Any, link: str | None = None) -> np.ndarray:
    """J̇ q̇ (6,) or (N, 6), [linear; angular], of the ``link`` origin in ``base_link``: the acceleration of
    002 eq. [5.47] with q̈ = 0 ([Khalil 87a]), computed by the forward recursion, not by differentiating J."""
    q, qd = _joint_vectors(model, q, (qd, "qd"))
    return _forward_recursion(model, q, qd, None, link)[1]


# --------------------------------------------------------------------------- §5.11 orientation rates
ORIENTATIONS = ("euler_zxz", "rpy", "quaternion")


def _coordinates(kind: str, x: Any) -> np.ndarray:
    if kind not in ORIENTATIONS:
        raise ValueError(f"unknown orientation representation {kind!r}; known: {ORIENTATIONS}")
    a = np.asarray(x, dtype=float)
    size = 4 if kind == "quaternion" else 3
    if a.ndim not in (1, 2) or a.shape[-1] != size:
        raise ValueError(f"{kind} coordinates must have shape ({size},) or (N, {size}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{kind} coordinates contain NaN or inf")
    if kind == "quaternion" and np.any(np.abs(np.linalg.norm(a, axis=-1) - 1.0) > 1e-6):
        raise ValueError("the quaternion [Q1 Q2 Q3 Q4] (Q1 = cos(theta/2)) must have unit norm (002 eq. [3.31])")
    return a


def _stack(rows: list[list[Any]], like: np.ndarray) -> np.ndarray:
    """Matrix (…, r, c) from nested lists of arrays/scalars broadcast to ``like``."""
    return np.stack([np.stack([np.broadcast_to(e, like.shape) for e in r], axis=-1) for r in rows], axis=-2)


def rotation_from_coordinates(kind: str, x: Any) -> np.ndarray:
    """Rotation matrix ⁰R_n (3, 3) or (N, 3, 3) of orientation coordinates, in the seed's conventions:

    * ``"euler_zxz"`` (φ, θ, ψ): rot(z, φ) rot(x, θ) rot(z, ψ) (002 §3.6.1, the axes of eq. [5.61]);
    * ``"rpy"`` (φ, θ, ψ) = (roll, pitch, yaw): rot(z, φ) rot(y, θ) rot(x, ψ) (002 §3.6.2, the axes of eq. [5.64]);
    * ``"quaternion"`` [Q1 Q2 Q3 Q4] = [cos(θ/2), u sin(θ/2)] (Euler parameters, 002 eq. [3.34]; scalar first).
    """
    a = _coordinates(kind, x)
    if kind == "quaternion":
        q1, q2, q3, q4 = np.moveaxis(a, -1, 0)
        return _stack([
            [2 * (q1 * q1 + q2 * q2) - 1, 2 * (q2 * q3 - q1 * q4), 2 * (q2 * q4 + q1 * q3)],
            [2 * (q2 * q3 + q1 * q4), 2 * (q1 * q1 + q3 * q3) - 1, 2 * (q3 * q4 - q1 * q2)],
            [2 * (q2 * q4 - q1 * q3), 2 * (q3 * q4 + q1 * q2), 2 * (q1 * q1 + q4 * q4) - 1],
        ], q1)
    (cf, sf), (ct, st), (cp, sp) = ((np.cos(e), np.sin(e)) for e in np.moveaxis(a, -1, 0))
    if kind == "euler_zxz":
        return _stack([
            [cf * cp - sf * ct * sp, -cf * sp - sf * ct * cp, sf * st],
            [sf * cp + cf * ct * sp, -sf * sp + cf * ct * cp, -cf * st],
            [st * sp, st * cp, ct],
        ], cf)
    return _stack([
        [cf * ct, cf * st * sp - sf * cp, cf * st * cp + sf * sp],
        [sf * ct, sf * st * sp + cf * cp, sf * st * cp - cf * sp],
        [-st, ct * sp, ct * cp],
    ], cf)


def angular_velocity_matrix(kind: str, x: Any) -> np.ndarray:
    """Matrix B(x) with ω = B ẋ: the angular velocity of the frame (in the fixed frame R_0) from the rates of
    its orientation coordinates (``kind`` as in :func:`rotation_from_coordinates`).

    * z-x-z Euler: B = Ω_Eul⁻¹ = [[0, Cφ, SφSθ], [0, Sφ, -CφSθ], [1, 0, Cθ]] (002 eq. [5.61]-[5.62]);
    * roll-pitch-yaw: B = Ω_RPY⁻¹ = [[0, -Sφ, CφCθ], [0, Cφ, SφCθ], [1, 0, -Sθ]] (002 eq. [5.64]);
    * quaternion: B = Ω_Q⁺ = 4 Ω_Qᵀ (3, 4), the left inverse (002 eq. [5.55], [5.70]), exact for rates with
      Qᵀ Q̇ = 0 ([5.67]).

    Defined everywhere (no singularity in this direction); (3, 3|4) or (N, 3, 3|4)."""
    a = _coordinates(kind, x)
    if kind == "quaternion":
        return 4.0 * np.swapaxes(coordinate_rate_matrix(kind, a), -1, -2)
    f, t = a[..., 0], a[..., 1]
    cf, sf, ct, st = np.cos(f), np.sin(f), np.cos(t), np.sin(t)
    if kind == "euler_zxz":
        return _stack([[0.0, cf, sf * st], [0.0, sf, -cf * st], [1.0, 0.0, ct]], f)
    return _stack([[0.0, -sf, cf * ct], [0.0, cf, sf * ct], [1.0, 0.0, -st]], f)


def rate_singularity(kind: str, x: Any, tol: float = 1e-9) -> np.ndarray | bool:
    """Where ẋ = Ω_r ω is undefined: |sin θ| <= tol for z-x-z Euler (002 eq. [5.63]), |cos θ| <= tol for
    roll-pitch-yaw ([5.65]), never for the quaternion ([5.69]).  A bool, or an (N,) array for (N, k)."""
    a = _coordinates(kind, x)
    if kind == "quaternion":
        s = np.zeros(a.shape[:-1], dtype=bool)
    else:
        g = np.sin if kind == "euler_zxz" else np.cos
        s = np.abs(g(a[..., 1])) <= tol
    return bool(s) if s.ndim == 0 else s


_SINGULAR = {
    "euler_zxz": "z-x-z Euler angles are singular where sin(theta) = 0 (theta = 0 or pi: z0 and the last z "
                 "axis are collinear, phi and psi rotate about the same axis; 002 eq. [5.63])",
    "rpy": "roll-pitch-yaw angles are singular where cos(theta) = 0 (pitch theta = +-pi/2: the roll and yaw "
           "axes are collinear; 002 eq. [5.65])",
}


def coordinate_rate_matrix(kind: str, x: Any, tol: float = 1e-9) -> np.ndarray:
    """Matrix Ω_r(x) with ẋ = Ω_r ω (the seed's Ω_r, 002 eq. [5.48]): rates of the orientation coordinates
    from the angular velocity ω of the frame in R_0.

    * z-x-z Euler: Ω_Eul = [[-Sφ cotθ, Cφ cotθ, 1], [Cφ, Sφ, 0], [Sφ/Sθ, -Cφ/Sθ, 0]] (002 eq. [5.63]);
    * roll-pitch-yaw: Ω_RPY = [[Cφ tanθ, Sφ tanθ, 1], [-Sφ, Cφ, 0], [Cφ/Cθ, Sφ/Cθ, 0]] (002 eq. [5.65]);
    * quaternion: Ω_Q = ½ [[-Q2, -Q3, -Q4], [Q1, Q4, -Q3], [-Q4, Q1, Q2], [Q3, -Q2, Q1]] (4, 3) (002 eq. [5.69]).

    Raises ValueError, naming the singularity, when :func:`rate_singularity` holds (``tol``)."""
    a = _coordinates(kind, x)
    if kind == "quaternion":
        q1, q2, q3, q4 = np.moveaxis(a, -1, 0)
        return 0.5 * _stack([[-q2, -q3, -q4], [q1, q4, -q3], [-q4, q1, q2], [q3, -q2, q1]], q1)
    singular = np.atleast_1d(rate_singularity(kind, a, tol))
    if singular.any():
        at = np.atleast_2d(a)[singular][0]
        raise ValueError(f"{_SINGULAR[kind]}: no finite coordinate rates at {kind} = {at.tolist()} "
                         f"(|{'sin' if kind == 'euler_zxz' else 'cos'}(theta)| <= {tol:g})")
    f, t = a[..., 0], a[..., 1]
    cf, sf, ct, st = np.cos(f), np.sin(f), np.cos(t), np.sin(t)
    if kind == "euler_zxz":
        return _stack([[-sf * ct / st, cf * ct / st, 1.0], [cf, sf, 0.0], [sf / st, -cf / st, 0.0]], f)
    return _stack([[cf * st / ct, sf * st / ct, 1.0], [-sf, cf, 0.0], [cf / ct, sf / ct, 0.0]], f)


__all__ = [
    "ORIENTATIONS",
    "KinematicAnalysis",
    "angular_velocity_matrix",
    "condition_number",
    "coordinate_rate_matrix",
    "force_ellipsoid",
    "jacobian_svd",
    "jdot_qd",
    "kinematic_analysis",
    "link_acceleration",
    "link_velocity",
    "manipulability",
    "rate_singularity",
    "rotation_from_coordinates",
    "task_jacobian",
]
