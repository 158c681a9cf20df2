"""Physically consistent estimate on the identification's own equations (``identify --physically-consistent``).

The unconstrained estimate β̂ (OLS / WLS, :func:`~.estimation.estimate_from_matrix`) minimises ``‖D(W β − y)‖``
(D: 1 for OLS, the WLS weights 1/σ_ρj of Gautier).  The constrained estimate minimises the same criterion over the
base parameters of *realizable* models, ``β = K x(z)`` (K: the base-parameter matrix, ``values = K x``), with the
parametrization of :func:`~.estimation.physically_consistent_estimate`: M > 0, an inertia about the centre of mass
``I_c = tr(Σ_c) 1 − Σ_c`` with ``Σ_c = L Lᵀ + ε 1`` (positive definite, triangle inequality), Ia, Fc, Fv ≥ 0 and the
coupled rotor inertias Iam ≥ 0 as squares; effort offsets (``Foff``) are free.  With R the triangular factor of DW,
``‖D(W β − y)‖² = ‖R (β − β̂)‖² + ‖D(W β̂ − y)‖²``, so the fit runs on R (b × b) alone.  A pull towards the nominal
standard parameters defines the realization where the base parameters do not fix it: weight ``PRIOR_WEIGHT`` for a
first solution, then ``FINE_PRIOR_WEIGHT`` (it then moves β by far less than ``UNCHANGED_RTOL``).

Unchanged: when the constrained estimate fits as well as β̂, ``‖R (β_c − β̂)‖ ≤ UNCHANGED_RTOL · ‖R β̂‖`` (the fitted
torques differ by less than 1e-6 of their norm), and no base parameter of β̂ that is one Ia, Fc, Fv, Iam or M alone
is negative (:func:`~.update.sign_violation`: 0 is consistent), β̂ is physically consistent: the constrained estimate
*is* β̂, reported as unchanged.  Otherwise every base parameter whose value moved by more than ``CHANGE_RTOL`` of its
size and whose move changes the fitted torques by more than ``CHANGE_RTOL · ‖R β̂‖`` (and every negative one) is
listed with its relative change (and in standard deviations of the unconstrained fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..model.robot_model import RobotModel
from .estimation import IdentificationResult, _pack

__all__ = ["CHANGE_RTOL", "UNCHANGED_RTOL", "ConsistentFit", "consistent_estimate", "physically_consistent_fit"]

UNCHANGED_RTOL = 1e-6  # of ‖R β̂‖: a constrained fit this close to β̂ fits the data as well (module docstring)
CHANGE_RTOL = 1e-6  # of max(|β̂_i|, |β_c,i|): a smaller move of one parameter is the optimizer's round-off
PRIOR_WEIGHT = 1e-3  # first solution: the pull of physically_consistent_estimate
FINE_PRIOR_WEIGHT = 1e-12  # second solution, started from the first
EPS = 1e-10  # kg m²: floor of the principal second moments of Σ_c (I_c principal moments ≥ 2 EPS)


@dataclass
class ConsistentFit:
    """The constrained estimate next to the unconstrained one (base-parameter order of ``names``)."""

    names: list[str]
    values: np.ndarray  # constrained estimate (β̂ itself when unchanged)
    unconstrained: np.ndarray
    model: RobotModel  # a realizable model whose base parameters are ``values`` (to UNCHANGED_RTOL when unchanged)
    unchanged: bool
    distance: float  # ‖R (β_c − β̂)‖ / ‖R β̂‖ of the constrained fit
    changes: list[dict[str, Any]] = field(default_factory=list)
    residual_rms: np.ndarray | None = None  # per joint, constrained (same samples as the unconstrained figure)
    unconstrained_residual_rms: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        def rms(x: np.ndarray | None) -> list[float] | None:
            return None if x is None else [float(v) for v in x]

        return {"unchanged": self.unchanged, "names": list(self.names), "values": self.values.tolist(),
                "changes": self.changes, "distance": self.distance, "residual_rms": rms(self.residual_rms),
                "unconstrained_residual_rms": rms(self.unconstrained_residual_rms)}

    def result(self, res: IdentificationResult) -> IdentificationResult:
        """``res`` with the constrained values (method ``<method>+consistent``; std: the unconstrained fit's)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(np.abs(self.values) > 0, 100.0 * np.asarray(res.std) / np.abs(self.values), np.inf)
        rms = res.residual_rms if self.residual_rms is None else self.residual_rms
        return replace(res, values=self.values.copy(), relative_std=rel, method=f"{res.method}+consistent",
                       residual_rms=rms)

    def lines(self) -> list[str]:
        """The text report of ``identify --physically-consistent``."""
        out = ["physically consistent fit (M > 0, inertias positive definite with the triangle inequality, "
               "Ia, Fc, Fv >= 0):"]
        if self.unchanged:
            out.append("  unchanged: the unconstrained estimate is already physically consistent; the constrained "
                       "estimate equals it")
        else:
            out.append(f"  changed {len(self.changes)} base parameter(s) (largest relative change first):")
            w = max([4] + [len(c["name"]) for c in self.changes])
            out.append(f"  {'name':<{w}}  {'unconstrained':>14}  {'constrained':>14}  {'relative':>9}  {'in std':>8}")
            for c in self.changes:
                rel = "inf" if c["relative_change"] is None else f"{c['relative_change']:.3g}"
                std = "" if c["change_std"] is None else f"{c['change_std']:.3g}"
                out.append(f"  {c['name']:<{w}}  {c['unconstrained']:>14.6g}  {c['constrained']:>14.6g}  "
                           f"{rel:>9}  {std:>8}")
        if self.residual_rms is not None and self.unconstrained_residual_rms is not None:
            out.append(f"  residual RMS per joint: unconstrained {np.round(self.unconstrained_residual_rms, 6).tolist()}"
                       f", constrained {np.round(self.residual_rms, 6).tolist()}")
        return out


def _extended(base: Any, model: RobotModel) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """K over the extended standard vector, its nominal values and the names beyond the 13 n (Iam<k>)."""
    k = np.asarray(base.matrix, float)
    x_nom = np.asarray(getattr(base, "standard_values", model.standard_parameter_values), float)
    names = list(getattr(base, "standard_names", model.standard_parameter_names))
    if x_nom.size != k.shape[1] or len(names) != k.shape[1]:
        raise ValueError(f"base-parameter matrix over {k.shape[1]} parameters, {x_nom.size} nominal values")
    return k, x_nom, names[13 * model.dof:]


_SYM = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
_LOW = ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2))  # the six entries of L, in the order of _pack


def _unpack_jac(z: np.ndarray, n: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.estimation._unpack` (the same numbers) and its Jacobian, block diagonal: (13 n,), (n, 13, 13)."""
    p = z.reshape(n, 13)
    m, c = np.exp(p[:, 0]), p[:, 1:4]
    low = np.zeros((n, 3, 3))
    for t, (i, j) in enumerate(_LOW):
        low[:, i, j] = p[:, 4 + t]
    eye = np.eye(3)
    sig = low @ np.swapaxes(low, 1, 2) + eps * eye
    shift = np.einsum("k,ab->kab", np.einsum("ka,ka->k", c, c), eye) - np.einsum("ka,kb->kab", c, c)
    jo = np.einsum("k,ab->kab", np.trace(sig, axis1=1, axis2=2), eye) - sig + m[:, None, None] * shift
    x = np.empty((n, 13))
    jac = np.zeros((n, 13, 13))
    for t, (a, b) in enumerate(_SYM):
        x[:, t] = jo[:, a, b]
        jac[:, t, 0] = m * shift[:, a, b]
        for e in range(3):  # d(|c|² 1 − c cᵀ)/dc_e = 2 c_e 1 − (e_e cᵀ + c e_eᵀ)
            jac[:, t, 1 + e] = m * (2 * c[:, e] * eye[a, b] - eye[a, e] * c[:, b] - c[:, a] * eye[b, e])
        for u, (i, j) in enumerate(_LOW):  # dΣ/dL_ij = e_i L[:, j]ᵀ + L[:, j] e_iᵀ, dI_c = tr(dΣ) 1 − dΣ
            dsig = eye[a, i] * low[:, b, j] + low[:, a, j] * eye[b, i]
            jac[:, t, 4 + u] = 2 * low[:, i, j] * eye[a, b] - dsig
    x[:, 6:9], x[:, 9], x[:, 10:] = m[:, None] * c, m, p[:, 10:] ** 2
    jac[:, 6:9, 0], jac[:, 9, 0] = m[:, None] * c, m
    for e in range(3):
        jac[:, 6 + e, 1 + e] = m
        jac[:, 10 + e, 10 + e] = 2 * p[:, 10 + e]
    return x.reshape(-1), jac


def consistent_estimate(model: RobotModel, base: Any, r: np.ndarray, beta_hat: Any, *,
                        std: Any = None, max_nfev: int = 500) -> ConsistentFit:
    """The constrained estimate of the equations whose triangular factor is ``r`` (b × b) and whose unconstrained
    solution is ``beta_hat`` (module docstring); ``base``: ``names``, ``matrix`` (the base parameters of ``model``,
    extra names after its rows are free, e.g. ``Foff``); ``std``: of β̂, for the changes in standard deviations."""
    import scipy.optimize

    from .update import sign_violation

    names = list(base.names)
    beta_hat = np.asarray(beta_hat, float)
    r = np.asarray(r, float)
    k, x_nom, extra_std = _extended(base, model)
    nb0, ns, n = k.shape[0], k.shape[1], model.dof
    if beta_hat.shape != (len(names),) or r.shape != (len(names), len(names)):
        raise ValueError(f"{len(names)} base parameters, got β̂ {beta_hat.shape} and R {r.shape}")
    n13 = 13 * n
    scale = float(np.linalg.norm(r @ beta_hat)) or 1.0
    sx = float(np.linalg.norm(x_nom)) or 1.0

    blocks = np.zeros((ns, ns))  # dx/dz (the offsets Foff are β entries of their own)

    def unpack(z: np.ndarray) -> np.ndarray:
        x, jac = _unpack_jac(z[:n13], n, EPS)
        for j in range(n):
            blocks[13 * j:13 * j + 13, 13 * j:13 * j + 13] = jac[j]
        blocks[np.arange(n13, ns), np.arange(n13, ns)] = 2 * z[n13:ns]
        return np.concatenate([x, z[n13:ns] ** 2])

    def beta_of(z: np.ndarray) -> np.ndarray:
        return np.concatenate([k @ unpack(z), z[ns:]])

    def residual(z: np.ndarray, mu: float) -> np.ndarray:
        return np.concatenate([r @ (beta_of(z) - beta_hat) / scale, np.sqrt(mu) * (unpack(z) - x_nom) / sx])

    def jacobian(z: np.ndarray, mu: float) -> np.ndarray:
        unpack(z)
        top = np.hstack([r[:, :nb0] @ k @ blocks, r[:, nb0:]]) / scale
        bottom = np.hstack([np.sqrt(mu) * blocks / sx, np.zeros((ns, z.size - ns))])
        return np.vstack([top, bottom])

    # start: the minimum-norm standard parameters with base values β̂ (update.model_with_base_parameters), made
    # realizable (mass >= 1e-3, I_c's eigenvalues floored, squares of the non-negative terms)
    x0 = x_nom + np.linalg.pinv(k) @ (beta_hat[:nb0] - k @ x_nom)
    z = np.concatenate([_pack(x0[:n13], n, EPS), np.sqrt(np.maximum(x0[n13:], 0.0)), beta_hat[nb0:]])
    for mu, tol in ((PRIOR_WEIGHT, 1e-12), (FINE_PRIOR_WEIGHT, 1e-12)):
        z = scipy.optimize.least_squares(residual, z, jac=jacobian, args=(mu,), method="trf", x_scale="jac",
                                         ftol=tol, xtol=tol, gtol=tol, max_nfev=max_nfev).x
    beta_c = beta_of(z)
    x_c = unpack(z)
    fitted = model.with_standard_parameters(x_c[:n13])
    if extra_std:
        from ..dynamics.coupled_rotor import model_with_coupled_rotor

        fitted = model_with_coupled_rotor(fitted, dict(zip(extra_std, x_c[n13:], strict=True)))
    offsets = {nm: float(v) for nm, v in zip(names[nb0:], beta_c[nb0:], strict=True)}
    if offsets:  # Foff<j> of an offset friction model
        foff = np.array(fitted.Foff, float)
        for nm, v in offsets.items():
            foff[int(nm[4:]) - 1] = v
        fitted = fitted.replace(Foff=foff)
    distance = float(np.linalg.norm(r @ (beta_c - beta_hat))) / scale
    negative = [nm for nm, v in zip(names, beta_hat, strict=True) if sign_violation(nm, float(v), n)]
    unchanged = distance <= UNCHANGED_RTOL and not negative
    values = beta_hat.copy() if unchanged else beta_c
    std_a = np.full(len(names), np.nan) if std is None else np.asarray(std, float)
    changes = []
    col = np.linalg.norm(r, axis=0)  # torque of a unit change of each parameter (same norm as scale)
    if not unchanged:
        for i, nm in enumerate(names):
            d = float(values[i] - beta_hat[i])
            big = abs(d) > CHANGE_RTOL * max(abs(beta_hat[i]), abs(values[i])) and abs(d) * col[i] > CHANGE_RTOL * scale
            if big or nm in negative:
                changes.append({
                    "name": nm, "unconstrained": float(beta_hat[i]), "constrained": float(values[i]), "change": d,
                    "relative_change": abs(d) / abs(beta_hat[i]) if beta_hat[i] != 0 else None,
                    "change_std": abs(d) / std_a[i] if np.isfinite(std_a[i]) and std_a[i] > 0 else None})
        changes.sort(key=lambda c: -np.inf if c["relative_change"] is None else -c["relative_change"])
    return ConsistentFit(names, values, beta_hat.copy(), fitted, unchanged, distance, changes)


def physically_consistent_fit(model: RobotModel, equations: dict[str, Any], res: IdentificationResult,
                              **options: Any) -> ConsistentFit:
    """:func:`consistent_estimate` on the equations of :func:`~.estimation.identify` (its ``equations`` dict:
    ``base``, ``w3`` (N, n, b), ``tau`` (N, n), ``keep`` (N, n)) with the weights of ``res.method`` (OLS, or WLS:
    1/σ_ρj of the OLS residual of the kept equations of joint j, as :func:`~.estimation.estimate_from_matrix`);
    the residual RMS per joint of both estimates on the same samples as ``res.residual_rms``."""
    base, w3, tau, keep = (equations[key] for key in ("base", "w3", "tau", "keep"))
    nb = w3.shape[-1]
    rows = np.asarray(keep, bool).reshape(-1)
    joint = np.tile(np.arange(tau.shape[1]), tau.shape[0])[rows]
    w = w3.reshape(-1, nb)[rows]
    y = tau.reshape(-1)[rows]
    wt = np.ones(y.size)
    if res.method == "wls":
        e = y - w @ np.linalg.lstsq(w, y, rcond=None)[0]
        cnt = np.maximum(np.bincount(joint, minlength=tau.shape[1]) - 1, 1)
        sig = np.sqrt(np.bincount(joint, e**2, minlength=tau.shape[1]) / cnt)
        sig = np.where(sig > 0, sig, max(float(sig.max()), 1e-12))
        wt = 1.0 / sig[joint]
    elif res.method != "ols":
        raise ValueError(f"a physically consistent fit of a {res.method!r} estimate is not supported (ols, wls)")
    r = np.linalg.qr(w * wt[:, None], mode="r")
    fit = consistent_estimate(model, base, r, res.values, std=res.std, **options)
    fit.residual_rms = np.sqrt(np.mean((tau - w3 @ fit.values) ** 2, axis=0))
    fit.unconstrained_residual_rms = np.asarray(res.residual_rms, float)
    return fit
