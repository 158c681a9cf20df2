"""Direct dynamic model q̈ = f(q, q̇, Γ) by the two methods of 001 §7.6.

* ``method="cholesky"`` (default): q̈ = A⁻¹ (Γ − H) (001 eqs. 7.62–7.63) with A from
  composite links and H from Newton–Euler at q̈ = 0, solved by a Cholesky
  factorization (A is symmetric positive definite).
* ``method="recursive"``: the O(n) Newton–Euler algorithm of 001 §7.6.2.1 (eqs.
  7.67–7.79; errata 17–19 for the misnumbered references in the text), which never
  forms A.  It follows the antecedent of each joint, so it also handles trees.

Both use the diagonal rotor inertia Ia (7.29, 7.71); ``RobotModel.forward_dynamics`` corrects their answer
for the off-diagonal rotor inertia of a coupled transmission (:mod:`robot_dynamics.model.transmission`).

Inputs and outputs are in URDF joint coordinates, ``(n,)`` or a batch ``(N, n)``;
``f_ext``, ``gravity`` and ``f_ext_frame`` as in :func:`robot_dynamics.dynamics.inverse_dynamics.inverse_dynamics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.data import RobotData
from ..model.mdh import PRISMATIC
from . import recursion
from .dynamic_terms import _axis_index, _inertia_matrix_mdh, screw_transforms, spatial_inertias
from .inverse_dynamics import (
    NumpyArithmetic,
    _cross,
    _cross_z,
    _gravity_r0,
    _rt,
    _tree,
    _varray,
    check_states,
    external_wrenches,
    friction_rotor,
    inertia_tensors,
    mdh_geometry,
    newton_euler_mdh,
)

__all__ = ["cholesky_solve", "forward_dynamics"]


def cholesky_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve A x = b for a batch of SPD matrices (B, n, n) and vectors (B, n) by Cholesky."""
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError as exc:
        raise ValueError("inertia matrix is not positive definite (check the inertial parameters)") from exc
    n = a.shape[-1]
    y = np.empty_like(b)
    for i in range(n):  # forward substitution L y = b
        y[:, i] = (b[:, i] - np.einsum("bk,bk->b", low[:, i, :i], y[:, :i])) / low[:, i, i]
    x = np.empty_like(b)
    for i in range(n - 1, -1, -1):  # back substitution L^T x = y
        x[:, i] = (y[:, i] - np.einsum("bk,bk->b", low[:, i + 1 :, i], x[:, i + 1 :])) / low[:, i, i]
    return x


def _recursive_mdh(
    model: RobotData, q: np.ndarray, qd_m: np.ndarray, tau_m: np.ndarray, g0: np.ndarray, fe: np.ndarray | None
) -> np.ndarray:
    """q̈ in MDH coordinates by 001 eqs. 7.67–7.79; ``tau_m`` already net of friction (7.82)."""
    rot, pos = mdh_geometry(model, q)
    b, n = q.shape
    s = screw_transforms(rot, pos)  # ^jS_{a(j)} (B, n, 6, 6)
    st = np.swapaxes(s, -1, -2)
    jo, ms, mass = inertia_tensors(model)
    rev = model.sigma != PRISMATIC
    ant = model.antecedent
    ax = _axis_index(model)
    # i) first forward recursion: ω_j (the velocity pass of the NE recursion, 7.51–7.52), γ_j (7.68), β_j (7.70)
    kin = recursion.forward(NumpyArithmetic(model, q, qd_m, None, g0), *_tree(model), accelerations=False)
    w = [_varray(v, b) for v in kin.w]
    gamma = np.zeros((b, n, 6))
    beta = np.zeros((b, n, 6))
    for j in range(1, n + 1):
        i = j - 1
        wa, wj = w[ant[i]], w[j]
        wxa = _cross_z(_varray(kin.wi[j], b), qd_m[:, i])  # ^jω_{a(j)} × q̇_j a_j
        gamma[:, i, :3] = _rt(rot[:, i], _cross(wa, _cross(wa, pos[:, i])))
        if rev[i]:
            gamma[:, i, 3:] = wxa
        else:
            gamma[:, i, :3] += 2.0 * wxa
        beta[:, i, :3] = -_cross(wj, _cross(wj, ms[i]))
        beta[:, i, 3:] = -_cross(wj, wj @ jo[i].T)
    if fe is not None:
        beta -= fe
    # ii) backward recursion: H_j, K_j, α_j, I*_j, β*_j (7.71–7.75)
    istar = np.broadcast_to(spatial_inertias(model), (b, n, 6, 6)).copy()
    hh = np.empty((b, n))
    for j in range(n, 0, -1):
        i = j - 1
        ia = istar[:, i, :, ax[i]]  # I*_j a_j
        hj = ia[:, ax[i]] + model.Ia[i]  # 7.71
        hh[:, i] = hj
        if ant[i] > 0:
            k = istar[:, i] - ia[:, :, None] * ia[:, None, :] / hj[:, None, None]  # 7.72
            alpha = (
                np.einsum("buv,bv->bu", k, gamma[:, i])
                + ia * ((tau_m[:, i] + beta[:, i, ax[i]]) / hj)[:, None]
                - beta[:, i]
            )  # 7.73
            p = ant[i] - 1
            beta[:, p] -= np.einsum("buv,bv->bu", st[:, i], alpha)  # 7.74
            istar[:, p] += st[:, i] @ k @ s[:, i]  # 7.75
    # iii) second forward recursion (7.76–7.78), v̇_0 = -g, ω̇_0 = 0
    vd = np.zeros((b, n + 1, 6))
    vd[:, 0, :3] = -g0
    qdd = np.empty((b, n))
    for j in range(1, n + 1):
        i = j - 1
        vjj = np.einsum("buv,bv->bu", s[:, i], vd[:, ant[i]])  # 7.76
        ia = istar[:, i, :, ax[i]]
        qdd[:, i] = (-np.einsum("bu,bu->b", ia, vjj + gamma[:, i]) + tau_m[:, i] + beta[:, i, ax[i]]) / hh[:, i]  # 7.77
        vjj[:, ax[i]] += qdd[:, i]
        vd[:, j] = vjj + gamma[:, i]  # 7.78
    return qdd


def forward_dynamics(
    model: RobotData,
    q: Any,
    qd: Any,
    tau: Any,
    f_ext: Any = None,
    method: str = "cholesky",
    gravity: Any = None,
    f_ext_frame: str = "base",
) -> np.ndarray:
    """Joint accelerations q̈ produced by the joint efforts ``tau`` (001 §7.6)."""
    if method not in ("cholesky", "recursive"):
        raise ValueError(f"method must be 'cholesky' or 'recursive', got {method!r}")
    (q, qd, tau), batch = check_states(model, (q, "q"), (qd, "qd"), (tau, "tau"))
    g0 = _gravity_r0(model, gravity)
    fe = external_wrenches(model, q, f_ext, f_ext_frame, batch)
    sg = model.sign
    zero = np.zeros_like(q)
    net = tau - friction_rotor(model, qd, zero)  # τ of 7.82
    if method == "cholesky":
        h = sg * newton_euler_mdh(model, q, sg * qd, zero, g0, fe)
        a = _inertia_matrix_mdh(model, q) * sg[:, None] * sg[None, :]
        idx = np.arange(model.dof)
        a[:, idx, idx] += model.Ia
        qdd = cholesky_solve(a, net - h)
    else:
        qdd = sg * _recursive_mdh(model, q, sg * qd, sg * net, g0, fe)
    return qdd if batch else qdd[0]
