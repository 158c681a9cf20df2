"""Terms of the Lagrange form Γ = A(q) q̈ + C(q, q̇) q̇ + Q(q) + Γ_f (001 §7.3).

* :func:`inertia_matrix` — A(q) by composite links (CRBA) in link frames, with the
  rotor inertias Ia on the diagonal (001 §7.3.5, §7.6.1; errata 34); the off-diagonal rotor inertia of a
  coupled transmission (``model.rotor_coupling``) is added by ``RobotModel.inertia_matrix`` and
  ``RobotModel.kinetic_energy``, not here (:mod:`robot_dynamics.model.transmission`).
* :func:`gravity_torques` — Q(q) = ∂U/∂q, by Newton–Euler with q̇ = q̈ = 0.
* :func:`coriolis_matrix` — C(q, q̇) from the Christoffel symbols of A (001 eq. 7.7),
  so that Ȧ − 2C is skew-symmetric (001 §7.3.3.3 e).
* :func:`nonlinear_effects` — H(q, q̇) = C q̇ + Q + friction (+ J^T f_e) (001 eq. 7.62),
  by Newton–Euler with q̈ = 0.
* :func:`kinetic_energy` (001 eqs. 7.9–7.16 plus ½ Ia q̇²) and :func:`potential_energy`
  (001 eq. 7.25b, measured in ``base_link``).

All functions take URDF joint coordinates, ``(n,)`` or a batch ``(N, n)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.data import RobotData
from ..model.inertia import skew
from ..model.mdh import PRISMATIC
from .inverse_dynamics import (
    _gravity_r0,
    check_states,
    external_wrenches,
    friction_rotor,
    inertia_tensors,
    mdh_geometry,
    newton_euler_mdh,
)

__all__ = [
    "coriolis_matrix",
    "inertia_matrix",
    "gravity_torques",
    "kinetic_energy",
    "nonlinear_effects",
    "potential_energy",
    "spatial_inertias",
]


def spatial_inertias(model: RobotData) -> np.ndarray:
    """^j𝕀_j (n, 6, 6) of 001 eq. 7.21, ordering [v; ω] / [f; m], about O_j in R_j."""
    jo, ms, mass = inertia_tensors(model)
    n = model.dof
    out = np.zeros((n, 6, 6))
    out[:, :3, :3] = mass[:, None, None] * np.eye(3)
    out[:, 3:, :3] = skew(ms)
    out[:, :3, 3:] = -skew(ms)
    out[:, 3:, 3:] = jo
    return out


def screw_transforms(rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """^jS_{a(j)} (..., 6, 6) of 001 eq. 7.23a from ^{a(j)}R_j and ^{a(j)}P_j: V_j = S V_{a(j)}."""
    rt = np.swapaxes(rot, -1, -2)
    out = np.zeros(rot.shape[:-2] + (6, 6))
    out[..., :3, :3] = rt
    out[..., 3:, 3:] = rt
    out[..., :3, 3:] = -rt @ skew(pos)
    return out


def _axis_index(model: RobotData) -> np.ndarray:
    """Index of the non-zero entry of the 6-vector a_j (7.23b): 2 (prismatic) or 5 (revolute)."""
    return np.where(model.sigma == PRISMATIC, 2, 5)


def _inertia_matrix_mdh(model: RobotData, q: np.ndarray) -> np.ndarray:
    """A(q) in MDH coordinates without Ia (B, n, n) by composite links."""
    rot, pos = mdh_geometry(model, q)
    b, n = q.shape
    s = screw_transforms(rot, pos)  # (B, n, 6, 6)
    ic = np.broadcast_to(spatial_inertias(model), (b, n, 6, 6)).copy()
    ant = model.antecedent
    for j in range(n, 0, -1):
        a = ant[j - 1]
        if a > 0:
            sj = s[:, j - 1]
            ic[:, a - 1] += np.swapaxes(sj, 1, 2) @ ic[:, j - 1] @ sj
    ax = _axis_index(model)
    out = np.zeros((b, n, n))
    for j in range(1, n + 1):
        f = ic[:, j - 1, :, ax[j - 1]]  # Ic_j a_j
        out[:, j - 1, j - 1] = f[:, ax[j - 1]]
        i = j
        while ant[i - 1] > 0:
            f = np.einsum("bki,bk->bi", s[:, i - 1], f)  # S^T F: wrench to the antecedent frame
            i = ant[i - 1]
            out[:, i - 1, j - 1] = out[:, j - 1, i - 1] = f[:, ax[i - 1]]
    return out


def inertia_matrix(model: RobotData, q: Any) -> np.ndarray:
    """A(q) (n, n) or (N, n, n), URDF coordinates, including the rotor inertias Ia."""
    (q,), batch = check_states(model, (q, "q"))
    sg = model.sign
    a = _inertia_matrix_mdh(model, q) * sg[:, None] * sg[None, :]
    idx = np.arange(model.dof)
    a[:, idx, idx] += model.Ia
    return a if batch else a[0]


def gravity_torques(model: RobotData, q: Any, gravity: Any = None) -> np.ndarray:
    """Q(q) (001 eq. 7.8): efforts balancing gravity at rest, URDF coordinates."""
    (q,), batch = check_states(model, (q, "q"))
    z = np.zeros_like(q)
    tau = model.sign * newton_euler_mdh(model, q, z, z, _gravity_r0(model, gravity))
    return tau if batch else tau[0]


def nonlinear_effects(
    model: RobotData, q: Any, qd: Any, gravity: Any = None, f_ext: Any = None, f_ext_frame: str = "base"
) -> np.ndarray:
    """H(q, q̇) = C q̇ + Q + Fc sign(q̇) + Fv q̇ (+ J^T f_e) of 001 eq. 7.62, by NE with q̈ = 0."""
    (q, qd), batch = check_states(model, (q, "q"), (qd, "qd"))
    fe = external_wrenches(model, q, f_ext, f_ext_frame, batch)
    z = np.zeros_like(q)
    tau = model.sign * newton_euler_mdh(model, q, model.sign * qd, z, _gravity_r0(model, gravity), fe)
    tau += friction_rotor(model, qd, z)
    return tau if batch else tau[0]


# ----------------------------------------------------------- Christoffel symbols
def _world_screws_and_inertias(model: RobotData, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joint screws s_i = sign_i [σ z + σ̄ p × z; σ̄ z] (B, n, 6) and link spatial inertias about O_0 in R_0."""
    t0 = model.link_frames(q)[:, 1:]  # (B, n, 4, 4)
    rot, p = t0[..., :3, :3], t0[..., :3, 3]
    z = rot[..., 2]
    prism = (model.sigma == PRISMATIC)[:, None]
    sc = np.empty(p.shape[:-1] + (6,))
    sc[..., :3] = np.where(prism, z, np.cross(p, z))
    sc[..., 3:] = np.where(prism, 0.0, z)
    sc *= model.sign[:, None]
    jo, ms, mass = inertia_tensors(model)
    s = np.einsum("bnij,nj->bni", rot, ms)  # first moment about O_j, in R_0
    h = mass[:, None] * p + s
    ph, sh = skew(p), skew(s)
    j0 = rot @ jo @ np.swapaxes(rot, -1, -2) - ph @ sh - sh @ ph - mass[:, None, None] * ph @ ph
    inert = np.zeros(p.shape[:-1] + (6, 6))
    inert[..., :3, :3] = mass[:, None, None] * np.eye(3)
    inert[..., :3, 3:] = -skew(h)
    inert[..., 3:, :3] = skew(h)
    inert[..., 3:, 3:] = j0
    return sc, inert


def _ancestry(model: RobotData) -> np.ndarray:
    """anc[i, k] = 1 if joint i is joint k or one of its ancestors."""
    n = model.dof
    anc = np.zeros((n, n))
    for k in range(n):
        i = k + 1
        while i > 0:
            anc[i - 1, k] = 1.0
            i = model.antecedent[i - 1]
    return anc


def _motion_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spatial motion cross product a × b for [v; ω] ordering: [ω_a × v_b + v_a × ω_b; ω_a × ω_b]."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., :3] = np.cross(a[..., 3:], b[..., :3]) + np.cross(a[..., :3], b[..., 3:])
    out[..., 3:] = np.cross(a[..., 3:], b[..., 3:])
    return out


def inertia_matrix_derivatives(model: RobotData, q: np.ndarray) -> np.ndarray:
    """∂A/∂q_m for every m: (B, n, n, n), indexed [b, m, i, j]; URDF coordinates, q as (B, n).

    With A = Σ_k J_k^T 𝕀_k J_k in R_0, ∂s_i/∂q_m = s_m × s_i for m an ancestor of i and
    ∂𝕀_k/∂q_m = −(s_m×)^T 𝕀_k − 𝕀_k (s_m×) for m an ancestor of k, which gives
    ∂A/∂q_m = −(Q_m Y_m^T + Y_m Q_m), Y_m = Σ_{k ⊂ desc(m)} J_k^T 𝕀_k (s_m×) J_k and
    Q_m = diag(joints that are not descendants of m).
    """
    sc, inert = _world_screws_and_inertias(model, q)
    anc = _ancestry(model)
    w = np.einsum("bkuv,biv->bkiu", inert, sc)  # 𝕀_k s_i
    x = _motion_cross(sc[:, :, None, :], sc[:, None, :, :])  # [b, m, l] = s_m × s_l
    n = model.dof
    out = np.empty((q.shape[0], n, n, n))
    for m in range(n):
        t = anc[m][None, None, :] * anc[:, None, :] * anc[None, :, :]  # [i, l, k]
        y = np.einsum("ilk,bkiv,blv->bil", t, w, x[:, m], optimize=False)
        qm = 1.0 - anc[m]
        out[:, m] = -(qm[:, None] * np.swapaxes(y, 1, 2) + y * qm[None, :])
    return out


def coriolis_matrix(model: RobotData, q: Any, qd: Any) -> np.ndarray:
    """C(q, q̇) with C_ij = Σ_k c_ijk q̇_k, c_ijk = ½(∂A_ij/∂q_k + ∂A_ik/∂q_j − ∂A_jk/∂q_i) (001 eq. 7.7)."""
    (q, qd), batch = check_states(model, (q, "q"), (qd, "qd"))
    da = inertia_matrix_derivatives(model, q)  # [b, m, i, j]
    c = 0.5 * (
        np.einsum("bkij,bk->bij", da, qd) + np.einsum("bjik,bk->bij", da, qd) - np.einsum("bijk,bk->bij", da, qd)
    )
    return c if batch else c[0]


# ----------------------------------------------------------- energies
def kinetic_energy(model: RobotData, q: Any, qd: Any) -> np.ndarray:
    """E = ½ q̇^T A(q) q̇ (001 eqs. 7.9–7.16, with the rotor energy ½ Ia q̇²)."""
    (q, qd), batch = check_states(model, (q, "q"), (qd, "qd"))
    a = inertia_matrix(model, q)
    e = 0.5 * np.einsum("bi,bij,bj->b", qd, a, qd)
    return e if batch else e[0]


def potential_energy(model: RobotData, q: Any, gravity: Any = None) -> np.ndarray:
    """U = −Σ_j g^T (M_j P_j + R_j MS_j) (001 eq. 7.25b), positions measured in ``base_link``."""
    (q,), batch = check_states(model, (q, "q"))
    g = model.gravity if gravity is None else np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be a finite 3-vector, got shape {g.shape}")
    t = model.base_transform @ model.link_frames(q)[:, 1:]  # ^bT_j
    _, ms, mass = inertia_tensors(model)
    first = mass[:, None] * t[..., :3, 3] + np.einsum("bnij,nj->bni", t[..., :3, :3], ms)
    u = -np.einsum("bni,i->b", first, g)
    return u if batch else u[0]
