"""Joint friction models of 001 §7.3.4.

:func:`friction_torque` evaluates the general model with the Stribeck term (001 eq. 7.26)::

    Γ_f = Fc sign(q̇) + Fv q̇ + (Fs − Fc) sign(q̇) exp(−|q̇| B)

``Fs`` is the *static* friction (F_sti in 7.26, errata 15: not the "F_s" Coulomb
term of 7.61/7.82) and ``B`` the Stribeck velocity coefficient.  With ``Fs = Fc``
(or ``Fs`` omitted) it reduces to the Coulomb + viscous model of 7.27, the one used
by :func:`robot_dynamics.dynamics.inverse_dynamics.inverse_dynamics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["friction_torque"]


def _param(value: Any, n: int, what: str) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n):
        raise ValueError(f"{what} must be a scalar or have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return np.broadcast_to(a, (n,))


def friction_torque(qd: Any, Fc: Any, Fv: Any, Fs: Any = None, B: Any = 0.0) -> np.ndarray:  # noqa: N803
    """Friction efforts (001 eq. 7.26) for joint velocities ``qd`` of shape (n,) or (N, n)."""
    qd = np.asarray(qd, dtype=float)
    if qd.ndim not in (1, 2) or qd.shape[-1] == 0:
        raise ValueError(f"qd must have shape (n,) or (N, n), got {qd.shape}")
    if not np.all(np.isfinite(qd)):
        raise ValueError("qd contains NaN or inf")
    n = qd.shape[-1]
    fc, fv = _param(Fc, n, "Fc"), _param(Fv, n, "Fv")
    fs = fc if Fs is None else _param(Fs, n, "Fs")
    b = _param(B, n, "B")
    if np.any(b < 0):
        raise ValueError("B (Stribeck coefficient) must be >= 0")
    sgn = np.sign(qd)
    return fc * sgn + fv * qd + (fs - fc) * sgn * np.exp(-np.abs(qd) * b)
