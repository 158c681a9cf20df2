"""Inverse kinematic models of redundant arms (002 ch. 6, §6.4-§6.6).

Velocity level (free functions of a Jacobian J, (m, n)):

* :func:`pseudo_inverse` -- Moore-Penrose J⁺ by SVD (002 [6.11]-[6.12], [A4.24]-[A4.26]);
* :func:`weighted_pseudo_inverse` -- J_E⁺ = E⁻¹Jᵀ(JE⁻¹Jᵀ)⁻¹ minimizing q̇ᵀEq̇ (002 [6.28]-[6.30]);
* :func:`damped_pseudo_inverse`, :func:`damped_least_squares` -- Jᵀ(JJᵀ + λ²I)⁻¹ (002 [6.13]-[6.17]),
  with the damping schedules :func:`nakamura_damping` [6.20] and :func:`maciejewski_damping` [6.21];
* :func:`null_space_projector` -- N = I − J⁺J (002 [6.31], [A4.13]), weighted N_E = I − J_E⁺J;
* :func:`gradient_projection` -- q̇ = J⁺Ẋ + α(I − J⁺J)∇φ (002 [6.31]-[6.33]) with the criteria
  :func:`joint_limit_criterion` ([6.34]-[6.39]) and :func:`manipulability_criterion` ([6.40]);
* :func:`task_priority` -- two tasks, Nakamura's [6.41]-[6.48].

Position level: :func:`inverse_kinematics_redundant` iterates them as in 002 §6.6 (thresholds S_p, S_r on
dX, q ← q + dq); :func:`inverse_kinematics` (below) dispatches to it when
given ``method``, ``secondary`` or ``weights``.

Weighted variants are computed in the coordinates y = Lᵀq of the Cholesky factor E = LLᵀ: with
S = L⁻ᵀ, J_E⁺ = S (JS)⁺ (identical to [6.30] when J has full rank, and the minimum-E-norm least-squares
solution when it has not).  With weights the optimization term is α N_E E⁻¹∇φ: for E = I this is [6.32];
E⁻¹∇φ is the gradient in the metric E, which keeps the term a descent (α < 0) or ascent (α > 0) direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.mdh import PRISMATIC
from .analysis import jacobian_manipulability
from .geometric_model import (
    _check_target,
    _link,
    _path,
    frame_poses,
    jacobian,
    jacobian_from_frames,
    rotation_vector,
)
from .geometric_model import inverse_kinematics as dls_inverse_kinematics

if TYPE_CHECKING:
    from ..model.data import RobotData

RCOND = 1e-12
"""Singular values below RCOND times the largest are treated as zero (rank decision)."""


# ----------------------------------------------------------------------------------------- checks
def _matrix(J: Any, what: str = "J") -> np.ndarray:
    a = np.asarray(J, dtype=float)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"{what} must be a non-empty 2-D matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return a


def _vector(x: Any, size: int, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != (size,):
        raise ValueError(f"{what} must have shape ({size},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return a


def weight_factor(W: Any, n: int) -> np.ndarray:
    """S = L⁻ᵀ for the joint weight E = LLᵀ (so E⁻¹ = SSᵀ): ``W`` is a positive (n,) vector (diagonal E)
    or a symmetric positive definite (n, n) matrix."""
    w = np.asarray(W, dtype=float)
    if not np.all(np.isfinite(w)):
        raise ValueError("weights contain NaN or inf")
    if w.shape == (n,):
        if np.any(w <= 0.0):
            raise ValueError("weights must be > 0")
        return np.diag(1.0 / np.sqrt(w))
    if w.shape != (n, n):
        raise ValueError(f"weights must have shape ({n},) or ({n}, {n}), got {w.shape}")
    if np.abs(w - w.T).max() > 1e-10 * max(1.0, np.abs(w).max()):
        raise ValueError("weight matrix must be symmetric")
    try:
        low = np.linalg.cholesky(w)
    except np.linalg.LinAlgError:
        raise ValueError("weight matrix must be positive definite") from None
    return np.linalg.inv(low).T


def _svd(J: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    u, s, vt = np.linalg.svd(J, full_matrices=False)
    rank = int(np.count_nonzero(s > RCOND * s[0])) if s.size and s[0] > 0 else 0
    return u, s, vt, rank


# ----------------------------------------------------------------------------- pseudo-inverses
def pseudo_inverse(J: Any) -> np.ndarray:
    """Moore-Penrose pseudo-inverse J⁺ = V Σ⁺ Uᵀ (002 [A4.24]-[A4.26]; q̇ = J⁺Ẋ is [6.11]-[6.12]).

    Singular values below ``RCOND`` times the largest are dropped (the sum of [6.12] stops at the rank)."""
    J = _matrix(J)
    u, s, vt, r = _svd(J)
    return vt[:r].T @ (u[:, :r] / s[:r]).T


def weighted_pseudo_inverse(J: Any, W: Any) -> np.ndarray:
    """J_E⁺ = E⁻¹Jᵀ(JE⁻¹Jᵀ)⁻¹ (002 [6.29]-[6.30]): q̇ = J_E⁺Ẋ minimizes C = q̇ᵀEq̇ [6.28] among the
    solutions of Jq̇ = Ẋ.  ``W`` (= E): positive (n,) vector or SPD (n, n) matrix.  Computed as S (JS)⁺
    with S = L⁻ᵀ, E = LLᵀ, which also covers a rank-deficient J."""
    J = _matrix(J)
    s = weight_factor(W, J.shape[1])
    return s @ pseudo_inverse(J @ s)


def damped_pseudo_inverse(J: Any, damping: float, W: Any = None) -> np.ndarray:
    """Damped least-squares inverse J_a = Jᵀ(JJᵀ + λ²I_m)⁻¹ = Σ sᵢ/(sᵢ² + λ²) VᵢUᵢᵀ (002 [6.16]-[6.17]).

    q̇ = J_a Ẋ minimizes ‖Ẋ − Jq̇‖² + λ²‖q̇‖² [6.13].  With weights E the joint norm is q̇ᵀEq̇."""
    J = _matrix(J)
    lam = float(damping)
    if not (np.isfinite(lam) and lam >= 0.0):
        raise ValueError("damping must be finite and >= 0")
    s_w = np.eye(J.shape[1]) if W is None else weight_factor(W, J.shape[1])
    u, s, vt, r = _svd(J @ s_w)
    if lam > 0.0:
        gain = s / (s**2 + lam**2)
    else:
        gain = np.zeros_like(s)
        gain[:r] = 1.0 / s[:r]
    return s_w @ (vt.T * gain) @ u.T


def damped_least_squares(J: Any, xdot: Any, damping: float, W: Any = None) -> np.ndarray:
    """q̇ = Jᵀ(JJᵀ + λ²I)⁻¹Ẋ (002 [6.16]); see :func:`damped_pseudo_inverse`."""
    J = _matrix(J)
    return damped_pseudo_inverse(J, damping, W) @ _vector(xdot, J.shape[0], "xdot")


def manipulability(J: Any) -> float:
    """w = √det(JJᵀ) = Π sᵢ of one Jacobian (002 [5.38], errata 42); 0 when m > n
    (:func:`robot_dynamics.kinematics.analysis.jacobian_manipulability`, checked to be one matrix)."""
    return float(jacobian_manipulability(_matrix(J)))


def nakamura_damping(J: Any, lambda0: float, w0: float) -> float:
    """λ = λ₀(1 − w/w₀)² if w < w₀, else 0 (Nakamura, 002 [6.20]); w the manipulability [5.38].

    ``lambda0`` > 0 is the damping at a singularity, ``w0`` > 0 the threshold bounding its neighbourhood
    (the seed gives no values: they depend on the robot and the units of J)."""
    if not (np.isfinite(lambda0) and lambda0 > 0 and np.isfinite(w0) and w0 > 0):
        raise ValueError("lambda0 and w0 must be finite and > 0")
    w = manipulability(J)
    return float(lambda0 * (1.0 - w / w0) ** 2) if w < w0 else 0.0


def maciejewski_damping(J: Any, epsilon: float) -> float:
    """λ = √(ε² − s_min²) if s_min ≤ ε, else 0 (Maciejewski & Klein, 002 [6.21] with errata 43: λ², not λ,
    equals ε² − s_min²); s_min is the smallest of the min(m, n) singular values of J."""
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon must be finite and > 0")
    s_min = float(np.linalg.svd(_matrix(J), compute_uv=False)[-1])
    return float(np.sqrt(epsilon**2 - s_min**2)) if s_min <= epsilon else 0.0


def null_space_projector(J: Any, W: Any = None) -> np.ndarray:
    """N = I_n − J⁺J (002 [6.31], [A4.13]): JN = 0, N² = N, N = Nᵀ.

    With weights E: N_E = I − J_E⁺J, the projector onto the null space of J that is orthogonal in the
    metric E (EN_E = N_EᵀE), i.e. the self-motion that leaves q̇ᵀEq̇ of the particular solution unchanged."""
    J = _matrix(J)
    jp = pseudo_inverse(J) if W is None else weighted_pseudo_inverse(J, W)
    return np.eye(J.shape[1]) - jp @ J


def gradient_projection(J: Any, xdot: Any, gradient: Any, alpha: float, W: Any = None) -> np.ndarray:
    """q̇ = J⁺Ẋ + α(I − J⁺J)∇φ (002 [6.32]-[6.33]): α < 0 decreases φ, α > 0 increases it, without
    changing Jq̇.  With weights E: q̇ = J_E⁺Ẋ + α N_E E⁻¹∇φ (E⁻¹∇φ, the gradient in the metric E, keeps
    ∇φᵀ N_E E⁻¹∇φ ≥ 0)."""
    J = _matrix(J)
    n = J.shape[1]
    xdot = _vector(xdot, J.shape[0], "xdot")
    g = _vector(gradient, n, "gradient")
    if not np.isfinite(alpha):
        raise ValueError("alpha must be finite")
    s = np.eye(n) if W is None else weight_factor(W, n)
    u, sv, vt, r = _svd(J @ s)
    vr = vt[:r]
    y = vr.T @ ((u[:, :r].T @ xdot) / sv[:r])
    gy = s.T @ g
    return s @ (y + alpha * (gy - vr.T @ (vr @ gy)))


# -------------------------------------------------------------------------------------- criteria
def joint_limit_criterion(
    q: Any, lower: Any, upper: Any, *, p: float = 2.0, center: Any = None
) -> tuple[float, np.ndarray]:
    """Joint-limit avoidance criterion φ and its gradient ∇φ (002 §6.5.4.1), to be minimized (α < 0).

    q_moy = (q_max + q_min)/2 [6.34], Δq = q_max − q_min [6.35],
    φ = Σ |(qᵢ − q_moy,i)/Δqᵢ|^p: p = 2 is the quadratic form [6.36] (gradient 2(qᵢ − q_moy,i)/Δqᵢ² of
    [6.37]); a large p (the seed suggests 6) approximates Klein's max-norm criterion [6.38] by the
    p-norm [6.39] (here its p-th power, with the Δq scaling of [6.38]).  ``center`` replaces q_moy (the
    note after [6.37]: when the mid-range is a singular configuration).  Joints with an infinite limit
    contribute nothing."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 1:
        raise ValueError(f"q must be a vector, got shape {q.shape}")
    n = q.size
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if lower.shape != (n,) or upper.shape != (n,):
        raise ValueError(f"lower and upper must have shape ({n},)")
    if not np.all(np.isfinite(q)) or np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
        raise ValueError("q, lower or upper contains NaN (or q inf)")
    if np.any(upper <= lower):
        raise ValueError("every upper limit must exceed its lower limit")
    if not (np.isfinite(p) and p >= 2.0):
        raise ValueError("p must be finite and >= 2")
    finite = np.isfinite(lower) & np.isfinite(upper)
    dq = np.where(finite, upper - lower, 1.0)
    mid = 0.5 * (np.where(finite, lower, 0.0) + np.where(finite, upper, 0.0))
    if center is not None:
        mid = _vector(center, n, "center")
    x = np.where(finite, (q - mid) / dq, 0.0)
    phi = float(np.sum(np.abs(x) ** p))
    grad = p * np.abs(x) ** (p - 1.0) * np.sign(x) / dq
    return phi, grad


def manipulability_criterion(
    model: RobotData, q: Any, link: str | None = None, *, position_only: bool = False, step: float = 1e-6
) -> tuple[float, np.ndarray]:
    """φ = w = √det(JJᵀ) of ``link`` (002 [6.40], errata 42) and its gradient by central differences of
    J (one batched Jacobian of the 2n configurations q ± h eₖ); maximize it (α > 0)."""
    q = model.check_joint_vector(q)
    if q.ndim != 1:
        raise ValueError("q must be a single joint vector")
    rows = slice(0, 3) if position_only else slice(0, 6)
    n = model.dof
    h = np.eye(n) * step
    jacs = jacobian(model, np.concatenate([q[None], q + h, q - h]), link)[:, rows]
    w = np.array([manipulability(a) for a in jacs])
    return float(w[0]), (w[1 : n + 1] - w[n + 1 :]) / (2.0 * step)


# --------------------------------------------------------------------------------- task priority
def task_priority(
    J1: Any, xdot1: Any, J2: Any, xdot2: Any, z2: Any = None, *, W: Any = None, damping: float = 0.0
) -> np.ndarray:
    """Nakamura's task-priority solution (002 [6.41]-[6.48]) for a primary task Ẋ₁ = J₁q̇ and a
    secondary one Ẋ₂ = J₂q̇:

        q̇ = J₁⁺Ẋ₁ + (I − J₁⁺J₁){J₃⁺[Ẋ₂ − J₂J₁⁺Ẋ₁] + (I − J₃⁺J₃)Z₂},   J₃ = J₂(I − J₁⁺J₁)   [6.48]

    The primary task is met exactly (when compatible), the secondary one in the least-squares sense in
    the null space of the first.  ``damping`` > 0 replaces J₃⁺ by the damped inverse J₃ᵀ(J₃J₃ᵀ + λ²I)⁻¹,
    which keeps q̇ bounded at an algorithmic singularity (J₃ losing rank while J₁ and J₂ do not; this
    robust variant is not in the seed).  With weights E the pseudo-inverses and projectors are the
    E-weighted ones ([6.30])."""
    J1, J2 = _matrix(J1, "J1"), _matrix(J2, "J2")
    n = J1.shape[1]
    if J2.shape[1] != n:
        raise ValueError(f"J1 and J2 must have the same number of columns, got {n} and {J2.shape[1]}")
    x1, x2 = _vector(xdot1, J1.shape[0], "xdot1"), _vector(xdot2, J2.shape[0], "xdot2")
    s = np.eye(n) if W is None else weight_factor(W, n)
    a1, a2 = J1 @ s, J2 @ s
    p1 = pseudo_inverse(a1)
    n1 = np.eye(n) - p1 @ a1
    a3 = a2 @ n1
    p3 = damped_pseudo_inverse(a3, damping)
    y = p1 @ x1 + n1 @ (p3 @ (x2 - a2 @ (p1 @ x1)))
    if z2 is not None:
        zy = np.linalg.solve(s, _vector(z2, n, "z2"))  # S⁻¹Z₂: the projection below is S P S⁻¹ Z₂ = N_E Z₂
        y += n1 @ (zy - pseudo_inverse(a3) @ (a3 @ zy))
    return s @ y


@dataclass(frozen=True)
class SecondaryTask:
    """Secondary task of the task-priority IK (002 §6.5.5): place ``link`` at ``target``, a 3-vector
    position or a 4x4 pose in ``base_link``."""

    link: str
    target: Any


# ---------------------------------------------------------------------------- position level
METHODS = ("pseudo_inverse", "task_priority")
CRITERIA = ("joint_limits", "manipulability", "none")


def _pose_error(pose: np.ndarray, target: np.ndarray, position_only: bool) -> np.ndarray:
    """dX = [P^d − P^c; u θ] with rot(u, θ) = R^d (R^c)ᵀ (002 §6.6)."""
    if position_only:
        return target - pose[:3, 3]
    return np.concatenate([target[:3, 3] - pose[:3, 3], rotation_vector(target[:3, :3] @ pose[:3, :3].T)])


def _threshold(e: np.ndarray, sp: float, sr: float) -> np.ndarray:
    """dX_p ← S_p dX_p/‖dX_p‖ if ‖dX_p‖ > S_p, likewise dX_r with S_r (002 §6.6)."""
    e = e.copy()
    for sl, lim in ((slice(0, 3), sp), (slice(3, 6), sr)):
        nrm = np.linalg.norm(e[sl])
        if nrm > lim:
            e[sl] *= lim / nrm
    return e


def _damped_gain(s: np.ndarray, rank: int, damping: float | None, epsilon: float) -> np.ndarray:
    """sᵢ/(sᵢ² + λ²) ([6.17]) with λ fixed or from the Maciejewski schedule [6.21]."""
    if damping is None:
        s_min = s[-1] if s.size else 0.0
        lam2 = epsilon**2 - s_min**2 if s_min <= epsilon else 0.0
    else:
        lam2 = damping**2
    if lam2 > 0.0:
        return s / (s**2 + lam2)
    g = np.zeros_like(s)
    g[:rank] = 1.0 / s[:rank]
    return g


def reach_bound(model: RobotData, link: str | None = None) -> tuple[np.ndarray, float]:
    """A sphere (centre, radius) in ``base_link`` containing every reachable position of ``link``.

    The distance between consecutive frame origins O_a(k), O_k does not depend on a revolute q_k (002
    [3.2]: ^{a(k)}P_k = (d, −r Sα, r Cα) after Rot(z, γ) Trans(z, b)), and moves by at most
    q_max − q_min for a prismatic one; the triangle inequality bounds the rest.  The centre is the
    origin of the first joint frame when that joint is revolute.  Radius inf when a prismatic joint on the
    path has an infinite limit."""
    j, t = _link(model, link)
    path = _path(model, j)
    lim = model.limits
    f = frame_poses(model, np.clip(np.zeros(model.dof), lim["lower"], lim["upper"]))
    origins = [f[0, :3, 3]] + [f[k, :3, 3] for k in path] + [(f[j] @ t)[:3, 3]]
    start = 1 if path and model.sigma[path[0] - 1] != PRISMATIC else 0
    radius = sum(float(np.linalg.norm(b - a)) for a, b in zip(origins[start:-1], origins[start + 1 :], strict=True))
    for k in path:  # a prismatic joint moves its frame origin along z_k by at most its range
        if model.sigma[k - 1] == PRISMATIC:
            radius += float(lim["upper"][k - 1] - lim["lower"][k - 1])
    return origins[start], radius


class _Power:
    """φ = Σ |(qᵢ − cᵢ)/Δqᵢ|^p over the active joints ([6.36] for p = 2 and c = q_moy, [6.39] for a large p; a
    joint posture c otherwise), with its gradient and the diagonal of its Hessian."""

    def __init__(self, center: np.ndarray, scale: np.ndarray, active: np.ndarray, p: float) -> None:
        self.center, self.scale, self.active, self.p = center, scale, active, p

    def _x(self, q: np.ndarray) -> np.ndarray:
        return np.where(self.active, (q - self.center) / self.scale, 0.0)

    def gradient(self, q: np.ndarray) -> np.ndarray:
        x = self._x(q)
        return self.p * np.abs(x) ** (self.p - 1.0) * np.sign(x) / self.scale

    def hessian(self, q: np.ndarray) -> np.ndarray:
        x = self._x(q)
        return np.where(self.active, self.p * (self.p - 1.0) * np.abs(x) ** (self.p - 2.0) / self.scale**2, 0.0)


def _criterion(model: RobotData, secondary: Any, lower: np.ndarray, upper: np.ndarray, power: float) -> Any:
    finite = np.isfinite(lower) & np.isfinite(upper)
    span = np.where(finite, upper - lower, 2.0 * np.pi)
    if isinstance(secondary, str):
        if secondary == "joint_limits":
            return _Power(np.where(finite, 0.5 * (lower + upper), 0.0), span, finite, power) if finite.any() else None
        if secondary == "manipulability":
            return "manipulability"
        if secondary == "none":
            return None
        raise ValueError(f"unknown secondary criterion {secondary!r}; expected one of {CRITERIA}, a joint "
                         "posture or a SecondaryTask")
    posture = _vector(secondary, model.dof, "secondary posture")
    return _Power(posture, span, np.ones(model.dof, dtype=bool), 2.0)


def _secondary_task(model: RobotData, secondary: Any) -> tuple[int, np.ndarray, np.ndarray, slice] | None:
    if isinstance(secondary, dict):
        if set(secondary) - {"link", "target", "position"} or "link" not in secondary:
            raise ValueError("a secondary task dict needs 'link' and 'target' (or 'position')")
        secondary = SecondaryTask(secondary["link"], secondary.get("target", secondary.get("position")))
    if not isinstance(secondary, SecondaryTask):
        return None
    j, t = _link(model, secondary.link)
    tgt = np.asarray(secondary.target, dtype=float)
    position_only = tgt.shape == (3,)
    tgt = _check_target(tgt, position_only)
    return j, t, tgt, slice(0, 3) if position_only else slice(0, 6)


def inverse_kinematics_redundant(
    model: RobotData,
    target: Any,
    q0: Any = None,
    link: str | None = None,
    *,
    method: str | None = None,
    secondary: Any = None,
    weights: Any = None,
    alpha: float | None = None,
    position_only: bool = False,
    tolerance: float = 1e-10,
    max_iterations: int = 300,
    damping: float | None = None,
    epsilon: float = 1e-3,
    secondary_damping: float = 1e-3,
    thresholds: tuple[float, float] = (0.2, 0.2),
    max_step: float = 0.5,
    limit_margin: float = 1e-6,
    restarts: int | None = None,
    patience: int = 20,
    null_tolerance: float = 1e-6,
    joint_limit_power: float = 6.0,
    seed: int = 0,
    info: dict[str, Any] | None = None,
) -> np.ndarray:
    """Numeric IGM of a (possibly redundant) arm by the pseudo-inverse iteration of 002 §6.6:
    q ← q + dq with dq from the pose error dX (thresholded by S_p, S_r = ``thresholds``).

    ``method``:

    * ``"pseudo_inverse"`` (default unless ``secondary`` is a task): dq = J_E⁺dX + α N_E E⁻¹∇φ
      ([6.29]-[6.33]); ``secondary`` is the criterion φ: ``"joint_limits"`` (minimized; the default on a
      redundant arm): φ = Σ|(qᵢ − q_moy,i)/Δqᵢ|^p with p = ``joint_limit_power``, by default 6, the
      p-norm form [6.39] of Klein's criterion [6.38] that the seed recommends over the quadratic [6.36]
      (p = 2), which leaves more solutions on a limit; ``"manipulability"`` ([6.40], maximized); a joint
      posture q_r (φ = Σ((qᵢ − q_r,i)/Δqᵢ)², minimized); or ``"none"`` (minimum-norm steps only).  For
      the joint-space criteria ``alpha=None`` takes the α minimizing the local quadratic model of φ along
      the projected direction (for p = 2 and E = I an exact line search; with E the Hessian of a quadratic
      φ it is the constrained Newton step); for the manipulability ``alpha=None`` means α = 1/w
      (gradient of ln w);
    * ``"task_priority"``: dq from [6.48] with the pose of ``link`` as primary task and
      ``secondary`` (a :class:`SecondaryTask` or a dict with ``link`` and ``target``) as secondary task,
      J₃⁺ damped by ``secondary_damping`` (algorithmic singularities).

    ``weights`` E (positive (n,) vector or SPD (n, n)): the weighted pseudo-inverse [6.30].  J_E⁺ is
    damped near singularities by the Maciejewski schedule [6.21] with threshold ``epsilon`` (or a fixed
    λ = ``damping``); away from them (s_min > ε) the step is the exact pseudo-inverse step.

    A start converges when the pose error is ≤ ``tolerance`` (m, rad) and the optimization term is
    ≤ ``null_tolerance`` (rad).  When the pose error has not decreased by 10 % for ``patience``
    iterations the optimization term is divided by 4 if the error is below 0.1 (a term that makes the
    iterates oscillate), else dropped; it is also dropped after half of ``max_iterations`` (the pose is
    then polished by the particular solution alone).  A start that stalls without the term is given up for
    the next of ``restarts`` random configurations (seeded; default 20).

    The iterates stay strictly inside the joint limits: the criterion keeps them away, and a joint whose
    step would still cross ``lower + limit_margin`` or ``upper − limit_margin`` is held there while the
    step of the other joints is solved again (clamping with redistribution, the fallback).  ValueError
    when the target position is beyond the reach of the arm (:func:`reach_bound`) or no start converges.
    ``info`` (a dict) receives ``iterations``, ``starts``, ``clamped`` (re-solved steps) and ``residual``.
    """
    j, t_link = _link(model, link)
    target = _check_target(target, position_only)
    task = _secondary_task(model, secondary)
    if method is None:
        method = "task_priority" if task is not None else "pseudo_inverse"
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS} (or 'dls', 'analytic')")
    if method == "task_priority" and task is None:
        raise ValueError("method 'task_priority' needs secondary=SecondaryTask(link, target) (or a dict)")
    if method == "pseudo_inverse" and task is not None:
        raise ValueError("a secondary task needs method 'task_priority'")
    if np.shape(thresholds) != (2,):
        raise ValueError("thresholds must be a pair (S_p in m, S_r in rad)")
    for name, v in (("tolerance", tolerance), ("max_step", max_step), ("epsilon", epsilon),
                    ("thresholds", thresholds[0]), ("thresholds", thresholds[1]), ("null_tolerance", null_tolerance)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be finite and > 0")
    if not (np.isfinite(joint_limit_power) and joint_limit_power >= 2.0):
        raise ValueError("joint_limit_power must be finite and >= 2")
    for name, v in (("damping", 0.0 if damping is None else damping), ("secondary_damping", secondary_damping)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be finite and >= 0")
    if not (np.isfinite(limit_margin) and limit_margin >= 0):
        raise ValueError("limit_margin must be finite and >= 0")
    if restarts is None:
        restarts = 20
    if max_iterations < 1 or restarts < 0 or patience < 1:
        raise ValueError("max_iterations and patience must be >= 1, restarts >= 0")
    if alpha is not None and not np.isfinite(alpha):
        raise ValueError("alpha must be finite")

    n = model.dof
    lim = model.limits
    lower, upper = lim["lower"], lim["upper"]
    margin = np.minimum(limit_margin, 0.25 * (upper - lower))
    lo_m, hi_m = lower + margin, upper - margin
    rows = slice(0, 3) if position_only else slice(0, 6)
    m_rows = 3 if position_only else 6
    s_w = np.eye(n) if weights is None else weight_factor(weights, n)

    crit: Any = None
    if method == "pseudo_inverse":
        default = "joint_limits" if n > m_rows else "none"
        crit = _criterion(model, default if secondary is None else secondary, lower, upper, joint_limit_power)

    center, radius = reach_bound(model, link)
    p_target = target if position_only else target[:3, 3]
    dist = float(np.linalg.norm(p_target - center))
    if dist > radius * (1.0 + 1e-9) + 1e-12:
        raise ValueError(
            f"target position of link {link or model.tip_link!r} is outside the workspace: {dist:.6g} m from "
            f"{np.round(center, 6).tolist()} exceeds the reach {radius:.6g} m of the arm"
        )

    if q0 is None:
        q0 = np.where(np.isfinite(lower) & np.isfinite(upper), 0.5 * (lower + upper), np.clip(0.0, lower, upper))
    q0 = model.check_joint_vector(q0, "q0")
    if q0.ndim != 1:
        raise ValueError("q0 must be a single joint vector of shape (n,)")
    rng = np.random.default_rng(seed)
    lo_r = np.where(np.isfinite(lo_m), lo_m, -np.pi)
    hi_r = np.where(np.isfinite(hi_m), hi_m, np.pi)
    sp, sr = float(thresholds[0]), float(thresholds[1])
    stats = {"iterations": 0, "starts": 0, "clamped": 0, "residual": np.inf}

    null_size = [0.0]  # size of the last optimization (null-space) term
    null_scale = [1.0]  # shortens the optimization term of a start whose pose error stalls
    e_w = None if weights is None else np.linalg.inv(s_w @ s_w.T)

    def factor(free: np.ndarray) -> np.ndarray:
        """S of the weights restricted to the free joints (E_ff = L_f L_fᵀ)."""
        if free.all():
            return s_w
        if e_w is None:
            return np.eye(int(free.sum()))
        return weight_factor(e_w[np.ix_(free, free)], int(free.sum()))

    def step_pseudo_inverse(
        q: np.ndarray, e: np.ndarray, jac: np.ndarray, free: np.ndarray, dq_fixed: np.ndarray, optimize: bool
    ) -> np.ndarray:
        sf = factor(free)
        u, s, vt, r = _svd(jac[:, free] @ sf)
        dq = sf @ (vt.T @ (_damped_gain(s, r, damping, epsilon) * (u.T @ (e - jac @ dq_fixed))))
        null_size[0] = 0.0
        if not optimize or crit is None or r >= sf.shape[0]:
            return dq
        vr = vt[:r]
        if crit == "manipulability":
            w, g = manipulability_criterion(model, q, link, position_only=position_only)
            g = g[free]
            a = alpha if alpha is not None else (1.0 / w if w > 0 else 0.0)
            h = None
        else:
            h = crit.hessian(q + dq_fixed)[free]
            g = crit.gradient(q + dq_fixed)[free] + h * dq  # ∇φ after the particular step (quadratic model)
            a = alpha
        gy = sf.T @ g
        d = sf @ (gy - vr.T @ (vr @ gy))  # N_E E⁻¹ ∇φ
        if a is None:  # minimizer of the quadratic φ along d
            curv = float(d @ (h * d))
            a = -float(g @ d) / curv if curv > 0 else 0.0
        dn = a * null_scale[0] * d
        big = np.abs(dn).max()
        if big > max_step:
            dn *= max_step / big
        null_size[0] = float(np.abs(dn).max())
        return dq + dn

    def step_task_priority(
        f: np.ndarray, e: np.ndarray, jac: np.ndarray, free: np.ndarray, dq_fixed: np.ndarray
    ) -> np.ndarray:
        j2, t2, tgt2, rows2 = task  # type: ignore[misc]
        e2 = _threshold(_pose_error(f[j2] @ t2, tgt2, rows2.stop == 3), sp, sr)[rows2]
        jac2 = jacobian_from_frames(model, f, j2, t2)[rows2]
        sf = factor(free)
        a1, a2 = jac[:, free] @ sf, jac2[:, free] @ sf
        u, s, vt, r = _svd(a1)
        y1 = vt.T @ (_damped_gain(s, r, damping, epsilon) * (u.T @ (e - jac @ dq_fixed)))
        vr = vt[:r]
        a3 = a2 - (a2 @ vr.T) @ vr  # J₃ = J₂ N₁ (N₁ = I − V_r V_rᵀ in the weighted coordinates)
        u3, s3, vt3, r3 = _svd(a3)
        y2 = vt3.T @ (_damped_gain(s3, r3, secondary_damping, epsilon) * (u3.T @ (e2 - jac2 @ dq_fixed - a2 @ y1)))
        y2 -= vr.T @ (vr @ y2)  # N₁ J₃⁺ (J₃⁺ already maps into range(N₁), up to rounding)
        dq2 = sf @ y2
        null_size[0] = float(np.abs(dq2).max())
        return sf @ y1 + dq2

    def step(q: np.ndarray, f: np.ndarray, e: np.ndarray, jac: np.ndarray, optimize: bool) -> np.ndarray:
        """One step; a joint whose step would cross its (margin) limit is held there and the step of the
        other joints is solved again (clamping with redistribution: the fallback)."""
        fixed = np.zeros(n, dtype=bool)
        dq = np.zeros(n)
        for _ in range(n):
            free = ~fixed
            dq_fixed = np.where(fixed, dq, 0.0)
            if method == "task_priority" and optimize:
                d_free = step_task_priority(f, e, jac, free, dq_fixed)
            else:
                d_free = step_pseudo_inverse(q, e, jac, free, dq_fixed, optimize)
            big = np.abs(d_free).max() if d_free.size else 0.0
            if big > max_step:
                d_free *= max_step / big
            dq = dq_fixed.copy()
            dq[free] = d_free
            q_new = q + dq
            out = free & ((q_new < lo_m) | (q_new > hi_m))
            if not out.any():
                return dq
            stats["clamped"] += 1
            fixed |= out
            dq[out] = np.clip(q_new[out], lo_m[out], hi_m[out]) - q[out]
            if fixed.all():
                break
        return np.clip(q + dq, lo_m, hi_m) - q

    def done(q: np.ndarray, size: float) -> np.ndarray:
        stats["residual"] = size
        if info is not None:
            info.update(stats)
        return q

    has_term = method == "task_priority" or crit is not None
    best = (np.inf, q0)
    for attempt in range(restarts + 1):
        stats["starts"] += 1
        q = np.clip(q0 if attempt == 0 else rng.uniform(lo_r, hi_r), lo_m, hi_m)
        optimize, reached = has_term, None
        best_start, last_gain = np.inf, 0
        null_scale[0] = 1.0
        deadline, limit = max_iterations // 2, max_iterations
        it = 0
        while it < limit:
            stats["iterations"] += 1
            f = frame_poses(model, q)
            e_full = _pose_error(f[j] @ t_link, target, position_only)
            size = float(np.abs(e_full).max())
            if size < best[0]:
                best = (size, q.copy())
            if size < 0.9 * best_start:
                best_start, last_gain = size, it
            elif it - last_gain > patience:  # stalled: shorten the optimization term, drop it, give the start up
                if not optimize:
                    break
                null_scale[0] *= 0.25
                last_gain = it
                if null_scale[0] < 1e-3 or best_start > 0.1:
                    optimize = False
            if it >= deadline:
                optimize = False
            e = _threshold(e_full, sp, sr) if not position_only else _threshold(
                np.concatenate([e_full, np.zeros(3)]), sp, sr)[:3]
            jac = jacobian_from_frames(model, f, j, t_link)[rows]
            dq = step(q, f, e, jac, optimize)
            if size <= tolerance:
                if optimize and null_size[0] <= null_tolerance or not optimize and (not has_term or reached is not None):
                    return done(q, size)
                if not optimize:  # reached after the term was dropped: resume it once from this solution
                    reached = (q.copy(), size)
                    optimize, null_scale[0], last_gain = True, 1.0, it
                    deadline, limit = it + max_iterations // 2, it + max_iterations
                    dq = step(q, f, e, jac, optimize)
            q = q + dq
            it += 1
        if reached is not None:  # the resumed optimization did not converge again: the solution found before it
            return done(*reached)
    stats["residual"] = best[0]
    if info is not None:
        info.update(stats)
    raise ValueError(
        f"inverse kinematics ({method}) did not converge for link {link or model.tip_link!r}: best residual "
        f"{best[0]:.3g} > tolerance {tolerance:g} after {restarts + 1} starts (target unreachable within the "
        "joint limits?)"
    )


def inverse_kinematics(
    model: RobotData,
    target: Any,
    q0: Any = None,
    link: str | None = None,
    *,
    position_only: bool = False,
    tolerance: float = 1e-10,
    max_iterations: int = 300,
    damping: float | None = None,
    max_step: float = 0.5,
    restarts: int | None = None,
    seed: int = 0,
    method: str | None = None,
    secondary: Any = None,
    weights: Any = None,
    **options: Any,
) -> np.ndarray:
    """Joint values (URDF coordinates) placing ``link`` (default the tip) at ``target``.

    ``target``: 4x4 pose in ``base_link`` (or a 3-vector position with
    ``position_only``).  ``method="dls"`` (the default when neither ``secondary``
    nor ``weights`` is given): damped least squares (fixed λ = ``damping``,
    default 1e-3) from ``q0`` (default mid-range), then ``restarts`` (default 5)
    random starts inside the limits, iterates clamped to the limits.  Raises ValueError
    when no iterate reaches ``tolerance`` (m and rad).

    ``method="pseudo_inverse"`` or ``"task_priority"`` (the default when
    ``secondary`` or ``weights`` is given): the redundancy-resolving iteration of
    :func:`robot_dynamics.kinematics.redundancy.inverse_kinematics_redundant`
    (002 §6.5-§6.6), with ``secondary`` one of ``"joint_limits"``,
    ``"manipulability"``, ``"none"``, a joint posture (n,) or a
    ``SecondaryTask(link, target)`` / ``{"link": ..., "target": ...}``, and
    ``weights`` the joint weights E of the weighted pseudo-inverse [6.30];
    ``options`` are passed on (``alpha``, ``epsilon``, ``limit_margin``, ``info``...).

    ``method="analytic"``: the closed-form IGM of a wrist-partitioned six-joint arm
    (:func:`robot_dynamics.kinematics.analytic_ik.analytic_inverse_geometry`), the solution within the
    joint limits nearest ``q0`` (default mid-range); ValueError when the arm has no closed form or no
    solution is within the limits.
    """
    if method == "analytic":
        return _analytic(model, target, q0, link, position_only, tolerance, secondary, weights, options)
    if method is None:
        method = "dls" if secondary is None and weights is None else None
    if method != "dls":
        return inverse_kinematics_redundant(
            model, target, q0, link, method=method, secondary=secondary, weights=weights,
            position_only=position_only, tolerance=tolerance, max_iterations=max_iterations, damping=damping,
            max_step=max_step, restarts=restarts, seed=seed, **options,
        )
    if secondary is not None or weights is not None or options:
        raise ValueError(f"method 'dls' takes no secondary, weights or {sorted(options)}")
    return dls_inverse_kinematics(model, target, q0, link, position_only=position_only, tolerance=tolerance,
                                  max_iterations=max_iterations, damping=1e-3 if damping is None else damping,
                                  max_step=max_step, restarts=5 if restarts is None else restarts, seed=seed)


def _analytic(model: RobotData, target: Any, q0: Any, link: str | None, position_only: bool, tolerance: float,
              secondary: Any, weights: Any, options: dict[str, Any]) -> np.ndarray:
    """``method="analytic"`` of :func:`inverse_kinematics`."""
    from .analytic_ik import analytic_inverse_geometry

    if position_only or secondary is not None or weights is not None or options:
        raise ValueError("method 'analytic' solves a full pose: no position_only, secondary, weights or "
                         f"{sorted(options)}")
    if q0 is None:
        lim = model.limits
        lower, upper = lim["lower"], lim["upper"]
        q0 = np.where(np.isfinite(lower) & np.isfinite(upper), 0.5 * (lower + upper), np.clip(0.0, lower, upper))
    sols = analytic_inverse_geometry(model, target, link, q_ref=q0, within_limits=True, tolerance=tolerance)
    if not sols:
        raise ValueError(f"the closed-form IGM of link {link or model.tip_link!r} has no solution within the joint "
                         "limits (target out of reach?)")
    return sols[0]


__all__ = [
    "inverse_kinematics",
    "CRITERIA",
    "METHODS",
    "SecondaryTask",
    "damped_least_squares",
    "damped_pseudo_inverse",
    "gradient_projection",
    "inverse_kinematics_redundant",
    "joint_limit_criterion",
    "maciejewski_damping",
    "manipulability",
    "manipulability_criterion",
    "nakamura_damping",
    "null_space_projector",
    "pseudo_inverse",
    "reach_bound",
    "task_priority",
    "weight_factor",
    "weighted_pseudo_inverse",
]
