"""Joint friction models of 001 §7.3.4.

:func:`friction_torque` evaluates the general model with the Stribeck term (001 eq. 7.26)::

    Γ_f = Fc sign(q̇) + Fv q̇ + (Fs − Fc) sign(q̇) exp(−|q̇| B)

``Fs`` is the *static* friction (F_sti in 7.26, errata 15: not the "F_s" Coulomb
term of 7.61/7.82) and ``B`` the Stribeck velocity coefficient.  With ``Fs = Fc``
(or ``Fs`` omitted) it reduces to the Coulomb + viscous model of 7.27, the one used
by :func:`robot_dynamics.dynamics.inverse_dynamics.inverse_dynamics`.

:func:`coulomb` is the Coulomb term ``Fc sign(v)`` of 7.26/7.27 with the sign replaced by a
saturation of width ``band`` (a "boundary layer")::

    coulomb(Fc, v, band) = Fc sat(v / band),  sat(x) = min(1, max(−1, x));  band = 0: Fc sign(v)

used by the control laws (robot_dynamics.control) to compensate Coulomb friction on the
desired velocity without chattering at standstill.  A saturation rather than ``tanh``: it
equals the model's ``Fc sign(v)`` exactly for ``|v| >= band`` (``tanh`` is still 24 % short at
``|v| = band``), is continuous in ``v``, costs one clip, and tends to ``Fc sign(v)`` pointwise
(``sign(0) = 0`` included) as ``band → 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["coulomb", "coulomb_ramp", "coulomb_slope", "friction_torque"]


def _param(value: Any, n: int, what: str) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n):
        raise ValueError(f"{what} must be a scalar or have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return np.broadcast_to(a, (n,))


def _velocities(x: Any, what: str) -> np.ndarray:
    """Finite joint velocities of shape (n,) or (N, n), n >= 1."""
    a = np.asarray(x, dtype=float)
    if a.ndim not in (1, 2) or a.shape[-1] == 0:
        raise ValueError(f"{what} must have shape (n,) or (N, n), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return a


def friction_torque(qd: Any, Fc: Any, Fv: Any, Fs: Any = None, B: Any = 0.0) -> np.ndarray:  # noqa: N803
    """Friction efforts (001 eq. 7.26) for joint velocities ``qd`` of shape (n,) or (N, n)."""
    qd = _velocities(qd, "qd")
    n = qd.shape[-1]
    fc, fv = _param(Fc, n, "Fc"), _param(Fv, n, "Fv")
    fs = fc if Fs is None else _param(Fs, n, "Fs")
    b = _param(B, n, "B")
    if np.any(b < 0):
        raise ValueError("B (Stribeck coefficient) must be >= 0")
    sgn = np.sign(qd)
    return fc * sgn + fv * qd + (fs - fc) * sgn * np.exp(-np.abs(qd) * b)


def coulomb(Fc: Any, v: Any, band: Any = 0.0) -> np.ndarray:  # noqa: N803
    """Coulomb friction ``Fc sat(v / band)`` (001 eq. 7.26 with a smooth sign); ``band = 0``: ``Fc sign(v)``.

    ``v`` of shape (n,) or (N, n) (rad/s or m/s); ``Fc`` and ``band`` scalars or (n,), ``band >= 0``
    per joint (same unit as ``v``).
    """
    v = _velocities(v, "v")
    n = v.shape[-1]
    fc = _param(Fc, n, "Fc")
    b = _param(band, n, "band")
    if np.any(b < 0):
        raise ValueError("band must be >= 0")
    fc_over_band = coulomb_slope(fc, b)
    ramp = coulomb_ramp(v, fc_over_band, -np.abs(fc), np.abs(fc), np.empty(v.shape))
    return np.where(b > 0, ramp, fc * np.sign(v))


def coulomb_slope(Fc: np.ndarray, band: np.ndarray) -> np.ndarray:  # noqa: N803
    """Fc / band where band > 0 (capped to the largest float: a denormal band stays finite, v = 0 gives 0), else 0."""
    with np.errstate(divide="ignore", over="ignore"):
        slope = np.where(band > 0, Fc / np.where(band > 0, band, 1.0), 0.0)
    return np.minimum(slope, np.finfo(float).max)


def coulomb_ramp(v: np.ndarray, fc_over_band: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 out: np.ndarray) -> np.ndarray:
    """The kernel of :func:`coulomb` for bands > 0, into ``out``, without validation (the control laws call it
    every cycle with precomputed ``fc_over_band = Fc / band``, ``lo = −|Fc|``, ``hi = |Fc|``):
    Fc sat(v / band) = max(−|Fc|, min(|Fc|, v Fc / band)) (also for an identified Fc < 0), 3 ufunc calls."""
    np.multiply(v, fc_over_band, out=out)
    np.minimum(out, hi, out=out)
    return np.maximum(out, lo, out=out)
