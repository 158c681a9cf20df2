"""Identification of the extended friction models (001 §7.3.4, eq. 7.26, plus an effort offset).

``friction`` selects the model of every joint's friction in the identification
(:func:`~robot_dynamics.identification.estimation.identify`, ``estimate``):

* ``"coulomb_viscous"`` (default): Fc sign(q̇) + Fv q̇ (7.27), the base parameters of 000 unchanged;
* ``"coulomb_viscous_offset"``: + Foff, a constant offset per joint — linear in it, so one more column per
  joint of the observation matrix (1 in the rows of joint j, :class:`OffsetBase`), names ``Foff<j>`` after the
  base parameters.  It is not identifiable where a base column is constant too (e.g. the gravity of a vertical
  prismatic joint): the estimate then reports a rank-deficient observation matrix;
* ``"stribeck"``: + the Stribeck term of 7.26 with B = 1/vs::

      Γ_f = Fc sign(q̇) + Fv q̇ + (Fs − Fc) sign(q̇) exp(−|q̇| / vs) + Foff,

  nonlinear in the Stribeck velocity vs: :func:`estimate_stribeck` starts from the linear solution (offset
  model), takes vs from the data (the best of a grid of common values between the quantiles of |q̇|, with
  Fs − Fc solved linearly at each), then refines by nonlinear least squares
  (:func:`scipy.optimize.least_squares`, trf, analytic Jacobian) all the parameters (``refine="all"``) or the
  friction parameters only (``refine="friction"``: Fc, Fv, Foff, Fs, vs; the others stay at the linear
  solution).  Statistics as for the linear estimate: C = σ²_ρ (JᵀJ)⁻¹ with J the Jacobian of the
  (weighted) residual at the solution and σ²_ρ = ‖ρ‖² / (r − p); names ``Fs<j>`` and ``vs<j>`` follow the
  ``Foff<j>``.

The Stribeck columns go through the same parallel filter as the observation matrix (``filt``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["FRICTION_MODELS", "OffsetBase", "estimate_stribeck", "model_with_friction", "with_friction"]

FRICTION_MODELS = ("coulomb_viscous", "coulomb_viscous_offset", "stribeck")


class OffsetBase:
    """Base parameters of ``base`` followed by one offset ``Foff<j>`` per joint: ``names``, ``values`` (of the
    model, with its ``Foff``), ``regressor(q, qd, qdd)`` with the offset columns appended (1 on row j)."""

    def __init__(self, base: Any, model: Any) -> None:
        self.base, self.model = base, model
        self.dof = model.dof
        self.names = list(base.names) + [f"Foff{j}" for j in range(1, self.dof + 1)]
        self.count = len(self.names)

    @property
    def values(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.base.values, float), self.model.Foff])

    def regressor(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        w = np.asarray(self.base.regressor(q, qd, qdd))
        eye = np.broadcast_to(np.eye(self.dof), w.shape[:-1] + (self.dof,))
        return np.concatenate([w, eye], axis=-1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


def with_friction(base: Any, model: Any, friction: str) -> Any:
    """The base-parameter object of ``friction`` (module docstring)."""
    if friction not in FRICTION_MODELS:
        raise ValueError(f"friction must be one of {FRICTION_MODELS}, got {friction!r}")
    if friction == "coulomb_viscous" or isinstance(base, OffsetBase):
        return base
    return OffsetBase(base, model)


def _lstsq(w: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    beta = np.linalg.lstsq(w, y, rcond=None)[0]
    r = y - w @ beta
    return beta, float(r @ r)


def estimate_stribeck(
    names: list[str],
    w3: np.ndarray,
    tau: np.ndarray,
    qd: np.ndarray,
    *,
    keep: np.ndarray | None = None,
    method: str = "wls",
    refine: str = "all",
    filt: Callable[[np.ndarray], np.ndarray] | None = None,
    vs_grid: Any = None,
) -> dict[str, Any]:
    """Stribeck fit (module docstring) on an observation matrix ``w3`` (N, n, b) of the offset model (its
    ``names`` contain ``Fc<j>`` and ``Foff<j>``), efforts ``tau`` (N, n) and the velocities ``qd`` (N, n) of the
    same samples (before ``filt``, the parallel filter applied to the Stribeck columns).  Returns ``names``,
    ``values``, ``std``, ``cov``, ``residual`` (N, n), ``rows`` (equations used)."""
    import scipy.optimize

    if refine not in ("all", "friction"):
        raise ValueError(f"refine must be 'all' or 'friction', got {refine!r}")
    n_s, n = tau.shape
    nb = w3.shape[-1]
    filt = filt or (lambda a: a)
    keep = np.ones(tau.shape, bool) if keep is None else np.asarray(keep, bool)
    rows = keep.reshape(-1)
    joint = np.tile(np.arange(n), n_s)[rows]
    try:
        i_fc = np.array([names.index(f"Fc{j}") for j in range(1, n + 1)])
    except ValueError as exc:
        raise ValueError("the Stribeck fit needs the Coulomb parameters Fc<j> among the base parameters") from exc
    w = w3.reshape(-1, nb)[rows]
    y = tau.reshape(-1)[rows]
    sgn, aqd = np.sign(qd), np.abs(qd)

    def columns(vs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """sign(q̇) e and its ∂/∂vs factor |q̇|/vs² · sign(q̇) e, filtered: (N, n) each."""
        e = sgn * np.exp(-aqd / vs)
        return filt(e), filt(e * aqd / vs**2)

    def rows_of(c: np.ndarray) -> np.ndarray:
        """(N, n) per-joint column -> (rows, n) block: column j nonzero in the rows of joint j."""
        out = np.zeros((n_s, n, n))
        out[:, np.arange(n), np.arange(n)] = c
        return out.reshape(-1, n)[rows]

    # 1. vs from the data: the best common vs of a grid (Fs − Fc linear for each), all else linear
    used = (aqd if aqd.shape == tau.shape else np.abs(filt(qd)))[keep]  # |q̇| of the samples used
    grid = np.asarray(vs_grid, float) if vs_grid is not None else np.geomspace(
        max(float(np.quantile(used, 0.02)), 1e-6) / 2, max(float(np.quantile(used, 0.9)), 1e-5), 24)
    best = None
    for v in grid:
        c = rows_of(columns(np.full(n, v))[0])
        x, ss = _lstsq(np.hstack([w, c]), y)
        if best is None or ss < best[0]:
            best = (ss, v, x)
    assert best is not None
    _, v0, x0 = best
    beta0, dfs0 = x0[:nb], x0[nb:]
    p0 = np.concatenate([beta0, beta0[i_fc] + dfs0, np.full(n, v0)])
    free = np.ones(p0.size, bool)
    if refine == "friction":
        fric = [k for k, nm in enumerate(names) if nm[:2] in ("Fc", "Fv") or nm.startswith("Foff")]
        free[:nb] = False
        free[fric] = True

    def split(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return p[:nb], p[nb:nb + n], p[nb + n:]

    def predict(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        beta, fs, vs = split(p)
        ce, cd = columns(vs)
        dfs = fs - beta[i_fc]
        return w @ beta + (ce * dfs).reshape(-1)[rows], ce, cd, dfs

    def jac(p: np.ndarray) -> np.ndarray:
        _, ce, cd, dfs = predict(p)
        ce_r = rows_of(ce)
        j = np.hstack([w.copy(), ce_r, rows_of(cd * dfs)])
        j[:, i_fc] -= ce_r
        return j

    def solve(p_init: np.ndarray, wt: np.ndarray) -> np.ndarray:
        p_fix = p_init.copy()

        def full(z: np.ndarray) -> np.ndarray:
            p = p_fix.copy()
            p[free] = z
            return p

        sol = scipy.optimize.least_squares(
            lambda z: (predict(full(z))[0] - y) * wt, p_init[free], jac=lambda z: jac(full(z))[:, free] * wt[:, None],
            method="trf", x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=200,
            bounds=(np.where(np.arange(p0.size)[free] >= nb + n, 1e-9, -np.inf), np.inf))
        return full(sol.x)

    wt = np.ones(y.size)
    p = solve(p0, wt)
    if method == "wls":
        res = y - predict(p)[0]
        cnt = np.maximum(np.bincount(joint, minlength=n) - 1, 1)
        sig = np.sqrt(np.bincount(joint, res**2, minlength=n) / cnt)
        sig = np.where(sig > 0, sig, max(float(sig.max()), 1e-12))
        wt = 1.0 / sig[joint]
        p = solve(p, wt)
    jw = jac(p)[:, free] * wt[:, None]
    r = (y - predict(p)[0]) * wt
    dof_res = max(r.size - int(free.sum()), 1)
    cov = np.zeros((p.size, p.size))
    cov[np.ix_(free, free)] = float(r @ r) / dof_res * np.linalg.pinv(jw.T @ jw)
    beta, fs, vs = split(p)
    ce = columns(vs)[0]
    resid = tau - w3 @ beta - ce * (fs - beta[i_fc])
    return {
        "names": list(names) + [f"Fs{j}" for j in range(1, n + 1)] + [f"vs{j}" for j in range(1, n + 1)],
        "values": p, "std": np.sqrt(np.maximum(np.diag(cov), 0.0)), "cov": cov, "residual": resid,
        "rows": int(rows.sum()), "matrix": jw,
    }


def model_with_friction(model: Any, names: list[str], values: Any) -> Any:
    """``model`` with an identification result applied: the base parameters (``model_with_base_parameters``)
    and the ``Foff<j>``, ``Fs<j>``, ``vs<j>`` of the extended friction models."""
    from .update import model_with_base_parameters

    values = np.asarray(values, float)
    n = model.dof
    extra = {k: [f"{k}{j}" for j in range(1, n + 1)] for k in ("Foff", "Fs", "vs")}
    extra_names = {nm for v in extra.values() for nm in v}
    base_idx = [i for i, nm in enumerate(names) if nm not in extra_names]
    out = model_with_base_parameters(model, [names[i] for i in base_idx], values[base_idx])
    changes = {k: np.array([values[names.index(nm)] for nm in v]) for k, v in extra.items() if v[0] in names}
    return out.replace(**changes) if changes else out
