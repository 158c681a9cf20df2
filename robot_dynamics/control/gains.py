"""Gain design for the joint controllers (001 §9.3.1 and §9.4.2.2).

* PID, eq. [9.10] with errata 33: the characteristic polynomial [9.8] of joint j
  modelled as ``Γ_j = a_j q̈_j + F_vj q̇_j`` [9.6] is placed at a triple real pole
  ``a_j (s + ω_j)^3`` [9.9]:  ``K_pj = 3 a_j ω_j²``, ``K_dj = 3 a_j ω_j − F_vj``,
  ``K_Ij = a_j ω_j³`` with ``a_j = max_q A_jj(q)``.
* Computed torque, eq. [9.26]: ``K_pj = ω_j²``, ``K_dj = 2 ξ_j ω_j``.
* PD + gravity with the same bandwidth: ``K_pj = a_j ω_j²``, ``K_dj = 2 ξ_j a_j ω_j``
  (the computed-torque error dynamics [9.25] for a joint of constant inertia a_j).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC
from ..model.robot_model import RobotModel


def _per_joint(x: Any, n: int, what: str) -> np.ndarray:
    a = np.broadcast_to(np.asarray(x, dtype=float), (n,)).copy() if np.ndim(x) == 0 else np.asarray(x, dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{what} must be a scalar or have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{what} must be finite and > 0")
    return a


def sampling_box(model: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    """Joint ranges used to explore the workspace: the URDF limits, else ±π (revolute) or ±1 m."""
    lim = model.limits
    default = np.where(model.sigma == PRISMATIC, 1.0, math.pi)
    lo = np.where(np.isfinite(lim["lower"]), lim["lower"], -default)
    hi = np.where(np.isfinite(lim["upper"]), lim["upper"], default)
    return lo, hi


def max_diagonal_inertia(model: RobotModel, n_samples: int = 2000, rng: np.random.Generator | int | None = 0,
                         refine: bool = True) -> np.ndarray:
    """a_j = max over the joint box of A_jj(q) (001 [9.6], errata 33), rotor inertia included.

    Random sampling of the box followed, if ``refine``, by a bounded local ascent
    (L-BFGS-B) from the best sample of every joint.
    """
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    lo, hi = sampling_box(model)
    qs = rng.uniform(lo, hi, (int(n_samples), model.dof))
    diag = np.column_stack([diagonal_inertia(model, qs, j) for j in range(model.dof)])
    best = np.argmax(diag, axis=0)
    a = diag[best, np.arange(model.dof)].copy()
    if refine:
        from scipy.optimize import minimize

        for j in range(model.dof):
            res = minimize(lambda x, j=j: -float(diagonal_inertia(model, x[None, :], j)[0]), qs[best[j]],
                           method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)), options={"maxiter": 50})
            a[j] = max(a[j], -float(res.fun))
    return a


def diagonal_inertia(model: RobotModel, qs: np.ndarray, j: int) -> np.ndarray:
    """A_jj(q) for a batch (N, n): e_j^T NE(q, 0, e_j) with zero gravity (001 §7.6.1, errata 34)."""
    qdd = np.zeros_like(qs)
    qdd[:, j] = 1.0
    return np.asarray(model.inverse_dynamics(qs, np.zeros_like(qs), qdd, gravity=np.zeros(3)))[:, j]


def pid_gains(a: Any, omega: Any, fv: Any = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K_p, K_d, K_I) of eq. [9.10] (errata 33: K_d = 3 a ω − F_v)."""
    a = np.atleast_1d(np.asarray(a, dtype=float))
    n = a.shape[0]
    a = _per_joint(a, n, "a")
    w = _per_joint(omega, n, "omega")
    fv = np.broadcast_to(np.asarray(fv, dtype=float), (n,))
    if not np.all(np.isfinite(fv)):
        raise ValueError("fv must be finite")
    return 3.0 * a * w**2, 3.0 * a * w - fv, a * w**3


def computed_torque_gains(omega: Any, xi: Any = 1.0, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K_p, K_d) of eq. [9.26]: K_p = ω², K_d = 2 ξ ω (acceleration units)."""
    n = n if n is not None else max(np.size(omega), np.size(xi))
    w = _per_joint(omega, n, "omega")
    z = _per_joint(xi, n, "xi")
    return w**2, 2.0 * z * w


def pd_gains(a: Any, omega: Any, xi: Any = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(K_p, K_d) in torque units for PD + gravity with the bandwidth ω of [9.26] on inertia a."""
    a = np.atleast_1d(np.asarray(a, dtype=float))
    n = a.shape[0]
    kp, kd = computed_torque_gains(omega, xi, n)
    return _per_joint(a, n, "a") * kp, a * kd


__all__ = ["computed_torque_gains", "diagonal_inertia", "max_diagonal_inertia", "pd_gains", "pid_gains", "sampling_box"]
