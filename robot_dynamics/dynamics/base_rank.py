"""Numerical rank decisions of the base parameters (split from :mod:`.base_parameters`).

Two decisions are taken on a stacked regressor of random states, with columns in units of the
robot's length L (:func:`column_weights`):

* round-off rank (step (c) of :func:`~.base_parameters.base_parameters`): a direction is
  independent when its singular value exceeds ``ε_r · max(σ_max, |g| L √N)``, ``ε_r = p · eps``
  (:func:`rank_tolerance`, :func:`numerical_rank`);
* identifiability rank (:func:`identifiable_rank`): a direction of the closed-form base
  regressor whose singular value is below ``IDENTIFIABLE_RTOL · σ_max`` (1e-9) cannot be
  identified by any data, and is grouped numerically (:func:`_numerical_grouping`).

This module imports nothing from :mod:`.base_parameters` (no import cycle); the latter re-exports
the public names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg

from ..model.mdh import PRISMATIC

__all__ = [
    "IDENTIFIABLE_RTOL",
    "NumericalBaseParameters",
    "column_weights",
    "gravity_reference",
    "identifiable_rank",
    "numerical_base_parameters",
    "numerical_rank",
    "rank_tolerance",
    "stacked_regressor",
]

IA = 10  # index of the rotor inertia among the 13 standard parameters of a link (XX … M, Ia, Fc, Fv)
_EPS = float(np.finfo(float).eps)

IDENTIFIABLE_RTOL = 1e-9
"""Relative singular-value threshold (of σ_max, length-scaled columns) below which a direction of the
base regressor is not identifiable.  Why 1e-9:

* it is far above round-off (``p · eps`` ≈ 1e-14 … 1e-12 for 6 … 60 joints), so it never splits a
  relation the closed form got right;
* it is far below the effects of real geometry: a URDF right angle written ``1.5708`` (3.7e-6 off)
  changes the Ia_j/ZZR_j columns at first order, σ/σ_max ≈ 1e-7 (xarm7 keeps Ia2, 63 parameters), and
  those parameters are separable by data in principle;
* a direction at ρ = σ/σ_max < 1e-9 of *random* states (the most exciting data there is) would need
  torques measured to better than ρ relative, beyond any sensor (16–24 bit: 1e-5 … 1e-7), and it
  leaves less than three decades before the identification's own refusal (cond > 1e12 of the
  unscaled observation matrix of a real trajectory, :mod:`robot_dynamics.identification.estimation`):
  ``1.57079632679`` (4.9e-12 off) gives ρ ≈ 1e-12 (iCub, Centauro, ANYmal …), and fitting ZZR_j and
  Ia_j separately then fails with cond ≈ 1e12.
"""


def stacked_regressor(model: Any, samples: int | None = None, seed: int = 0) -> np.ndarray:
    """Observation matrix W (N·n, 13n) of random states (q uniform in [-π, π], q̇, q̈ in [-2, 2]).

    Prismatic joints use [-1, 1] m.  Joint limits are ignored: identifiability is a property
    of the model over all configurations.
    """
    n = model.dof
    samples = 32 if samples is None else int(samples)  # 32 n rows for at most 13 n columns
    if samples < 1:
        raise ValueError("samples must be >= 1")
    rng = np.random.default_rng(seed)
    span = np.where(model.sigma == PRISMATIC, 1.0, math.pi)
    q = rng.uniform(-1.0, 1.0, (samples, n)) * span
    qd = rng.uniform(-2.0, 2.0, (samples, n))
    qdd = rng.uniform(-2.0, 2.0, (samples, n))
    return model.regressor(q, qd, qdd).reshape(samples * n, 13 * n)


def rank_tolerance(shape: tuple[int, ...], tol: float | None = None) -> float:
    """Relative rank tolerance ``ε_r`` of an N×p regressor: ``p · eps`` unless ``tol`` is given.

    Not ``max(N, p) · eps`` (numpy's ``matrix_rank``): σ_i/σ_max of a stacked random regressor
    converge as the samples N grow, so a threshold growing with N would make the rank depend on the
    number of samples (iCub: 304 with 32 samples, 303 with 40)."""
    return float(tol) if tol is not None else shape[-1] * _EPS


def _robot_size(model: Any) -> float:
    """``Σ|d_j| + Σ|b_j z_a + r_j z_j|`` (``Σ|d_j| + Σ|r_j|`` for serial rows), the length scale L.

    Not ``|b_j| + |r_j|``: a tree row of nearly parallel axes can have b ≈ −r cα far larger than
    the link (romeo.urdf: b = r = −75268 m for a 0.1 m finger offset)."""
    axial = np.abs(model.r)
    for j in np.flatnonzero(model.b != 0.0):
        sa, ca = math.sin(model.alpha[j]), math.cos(model.alpha[j])
        r, b = float(model.r[j]), float(model.b[j])
        axial[j] = math.hypot(r * sa, b + r * ca)
    return float(np.sum(np.abs(model.d)) + np.sum(axial))


def column_weights(model: Any) -> np.ndarray:
    """Physical column scaling (13n,): the regressor in units of a characteristic length L.

    L = Σ_j |d_j| + |r_j| (1 m if 0; a tree row counts ``|d_j| + |b_j z_a + r_j z_j|``, see
    :func:`_robot_size`).  J and Ia columns × L², MS × L, M × 1, Fc and Fv × L², so every column
    is of the order of a torque of a unit mass at distance L: the rank does not depend on the
    length unit or the robot's size.  Normalising columns by their norms is not
    used: a structurally tiny column (xarm7: M2 at 9e-14 of the largest, r2 = 1.1e-6 m) is
    mostly cancellation round-off, and unit norm would blow that up into false rank.
    """
    size = _robot_size(model)
    ell = size if size > 0 else 1.0
    per_link = np.array([ell**2] * 6 + [ell] * 3 + [1.0] + [ell**2] * 3)
    return np.tile(per_link, model.dof)


def numerical_rank(
    w: np.ndarray, tol: float | None = None, weights: np.ndarray | None = None, reference: float = 0.0
) -> int:
    """Numerical rank of ``w · diag(weights)``: singular values above ``ε_r · max(σ_max, reference)``
    (module docstring; ``reference``: :func:`gravity_reference` for a stacked regressor)."""
    return _rank_and_threshold(w if weights is None else w * weights, rank_tolerance(w.shape, tol), reference)[0]


def gravity_reference(model: Any, rows: int) -> float:
    """``|g| · L · √rows``: the size of a gravity column of ``rows`` stacked torques in units of L.

    Gravity enters the computation of every column with this magnitude even when its effect
    cancels (all axes ∥ g), so its round-off (e.g. sin(fl(π)) = 1.2e-16 tilting a vertical axis)
    is relative to it, not to σ_max: a 4 mm robot moving at 2 rad/s has σ_max ≈ 1e-3 |g| L √rows."""
    size = _robot_size(model)
    return float(np.linalg.norm(model.gravity)) * (size if size > 0 else 1.0) * math.sqrt(rows)


def _rank_and_threshold(ws: np.ndarray, rtol: float, reference: float = 0.0) -> tuple[int, float]:
    """Number of singular values of ``ws`` above ``rtol · max(σ_max, reference)`` and that threshold."""
    if not ws.size:
        return 0, 0.0
    sv = np.linalg.svd(ws, compute_uv=False)
    thr = rtol * max(float(sv[0]), reference, 1e-300)
    return int(np.sum(sv > thr)), thr


def _greedy_pivots(res: np.ndarray, count: int) -> list[int]:
    """``count`` well-conditioned columns of ``res``: at each step the base-most (lowest index) column
    whose residual norm is within a factor 2 of the largest one (QR with column pivoting that
    prefers links near the base among comparable columns, so the farthest parameter is eliminated,
    000 §6)."""
    r = res.copy()
    chosen: list[int] = []
    for _ in range(count):
        nr = np.linalg.norm(r, axis=0)
        nr[chosen] = -1.0
        mx = float(nr.max())
        if mx <= 0.0:
            break
        c = int(np.flatnonzero(nr >= 0.5 * mx)[0])
        qv = r[:, c] / nr[c]
        r -= np.outer(qv, qv @ r)
        r -= np.outer(qv, qv @ r)  # re-orthogonalisation (classical Gram-Schmidt twice)
        chosen.append(c)
    return chosen


def _numerical_grouping(
    wc: np.ndarray, dwc: np.ndarray, thr: float, rank: int, kinds: list[int], rotor: list[bool]
) -> tuple[list[int], dict[int, dict[int, Any]], list[int]]:
    """Keep ``rank`` numerically independent columns of ``wc`` (weighted by :func:`column_weights`
    ``dwc``) and group the others; ``rank`` and ``thr`` come from :func:`_rank_and_threshold` of the
    full regressor (the rule of :func:`numerical_rank`).

    Always kept: the Ia, Fc, Fv columns (``kinds``) and the inertial columns whose relation contains
    a rotor inertia (``rotor``: ZZR_j = ZZ_j + Ia_j …); eliminating one would spread Ia through
    fitted coefficients.  The other inertial columns to keep are chosen by :func:`_greedy_pivots` on
    their part orthogonal to the always-kept ones.  A dropped column d is grouped as
    ``W_d = W_inertial β + W_Ia γ``: β fitted on inertial columns (a rotor-carrying column receives
    an inertial parameter with a fitted coefficient; its Ia keeps its exact one), γ exact integers
    (0 in general; 1 e.g. when ZZR_j and the Ia_j column differ only below the tolerance, α_j within
    ~1e-12 of kπ/2: the relation of the nearby special geometry), friction never.  Rounding γ may cost
    at most the tolerance, ``|r_γ| ≤ 2|r_fit| + thr·|(1, β, γ)|``, and the fit must be within
    ``100 thr·|(1, β, γ)|`` (else the rank and the choice disagree): otherwise d stays (``weak``).
    Returns the kept indices, ``{d: {t: coefficient}}`` (unweighted; int for Ia) and the weak ones.
    """
    m = wc.shape[1]
    if rank >= m or m == 0:
        return list(range(m)), {}, []
    fixed = [t for t in range(m) if kinds[t] >= IA or rotor[t]]
    free = [t for t in range(m) if t not in fixed]
    qf = np.linalg.qr(wc[:, fixed])[0] if fixed else np.zeros((wc.shape[0], 0))
    res = wc[:, free] - qf @ (qf.T @ wc[:, free])
    res -= qf @ (qf.T @ res)
    chosen = sorted(free[c] for c in _greedy_pivots(res, max(rank - len(fixed), 0)))
    ia = [t for t in fixed if kinds[t] == IA]
    inert = sorted(chosen + [t for t in fixed if kinds[t] < IA])  # fitted coefficients allowed
    wk, wi = wc[:, inert], wc[:, ia]
    wki = np.column_stack([wk, wi])
    dep: dict[int, dict[int, Any]] = {}
    weak: list[int] = []
    for d in free:
        if d in chosen:
            continue
        v = wc[:, d]
        coef = np.linalg.lstsq(wki, v, rcond=None)[0]
        r_fit = float(np.linalg.norm(v - wki @ coef))
        gam_s = np.round(coef[len(inert):] * dwc[ia] / dwc[d])  # unweighted, rounded to integers
        gam_w = gam_s * dwc[d] / dwc[ia]
        rhs = v - wi @ gam_w
        beta = np.linalg.lstsq(wk, rhs, rcond=None)[0] if inert else np.zeros(0)
        r_int = float(np.linalg.norm(rhs - wk @ beta))
        scale = thr * math.sqrt(1.0 + float(beta @ beta) + float(gam_w @ gam_w))
        if r_int > 2.0 * r_fit + scale or r_fit > 100.0 * scale:
            weak.append(d)
            continue
        out: dict[int, Any] = {t: float(b * dwc[t] / dwc[d]) for t, b in zip(inert, beta, strict=True)
                               if abs(b) * np.linalg.norm(wc[:, t]) > thr}  # drop round-off contributions
        out.update({t: int(g) for t, g in zip(ia, gam_s, strict=True) if g != 0})
        dep[d] = out
    keep = sorted(set(fixed) | set(chosen) | set(weak))
    return keep, dep, weak


def identifiable_rank(ws: np.ndarray, floor: float = 0.0, rtol: float = IDENTIFIABLE_RTOL) -> tuple[int, float]:
    """Identifiability rank of the length-scaled base regressor ``ws`` (columns × :func:`column_weights`)
    and its threshold ``max(rtol · σ_max, floor)`` (``floor``: the round-off threshold of step (c), so
    this decision never keeps what that one drops).  σ_max only, not the gravity reference of
    :func:`gravity_reference`: that one bounds round-off, while this is a ratio of excitations.
    See :data:`IDENTIFIABLE_RTOL` for the value."""
    if not ws.size:
        return 0, floor
    sv = np.linalg.svd(ws, compute_uv=False)
    thr = max(rtol * float(sv[0]), floor)
    return int(np.sum(sv > thr)), thr


# ----------------------------------------------------------------- numerical method (Gautier)
@dataclass
class NumericalBaseParameters:
    """Gautier's numerical base parameters: QR with column pivoting of a stacked regressor.

    ``columns``: independent standard columns (pivot order), ``matrix`` (rank, 13n):
    ``values = matrix @ standard values`` with ``matrix[:, columns] = I`` and
    ``matrix[:, dependent] = β = R1⁻¹ R2``.
    """

    rank: int
    names: list[str]
    columns: np.ndarray
    matrix: np.ndarray
    values: np.ndarray
    r_diagonal: np.ndarray  # |R_kk| of the pivoted QR (scaled columns), decreasing
    model: Any = field(repr=False)

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        from .inverse_dynamics import regressor

        return regressor(self.model, q, qd, qdd, gravity=gravity)[..., self.columns]


def numerical_base_parameters(
    model: Any, samples: int | None = None, seed: int = 0, tol: float | None = None
) -> NumericalBaseParameters:
    """Rank and identifiable combinations by QR with column pivoting (Gautier's approach).

    Columns are scaled by :func:`column_weights`; the rank is :func:`numerical_rank` (``tol``:
    relative tolerance, default ``p · eps``).  ``β = R1⁻¹R2`` expresses the dependent
    columns: ``W_dep = W_base β``, so the base values are ``x_base + β x_dep``.
    """
    _check_model(model)
    _check_options(samples, tol)
    w = stacked_regressor(model, samples, seed)
    dw = column_weights(model)
    ws = w * dw
    r_mat, piv = scipy.linalg.qr(ws, mode="r", pivoting=True)
    diag = np.abs(np.diag(r_mat))
    rank = numerical_rank(w, tol, dw, gravity_reference(model, w.shape[0]))
    r1, r2 = r_mat[:rank, :rank], r_mat[:rank, rank:]
    beta_s = scipy.linalg.solve_triangular(r1, r2)  # in scaled columns
    cols, dep = piv[:rank], piv[rank:]
    k = np.zeros((rank, w.shape[1]))
    k[np.arange(rank), cols] = 1.0
    k[:, dep] = dw[cols][:, None] * beta_s / dw[dep][None, :]
    names = [model.standard_parameter_names[c] for c in cols]
    return NumericalBaseParameters(rank, names, cols, k, k @ model.standard_parameter_values, diag, model)


def _check_model(model: Any) -> None:
    if model.dof < 1:
        raise ValueError("the model has no joint")
    if not np.all(np.isfinite(model.standard_parameter_values)):
        raise ValueError("standard parameters contain NaN or inf")


def _check_options(samples: Any, tol: Any) -> None:
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1):
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    if tol is not None and not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0.0 < tol < 1.0):
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
