"""Inertial characteristics of the Lagrangian model (seed 004: Tourassis & Neuman, "The inertial
characteristics of dynamic robot models", Mech. Mach. Theory 20 (1985); errata 57–66 applied).

The model is D(q) q̈ + C(q, q̇) + G(q) = F (004 eq. 1), C_i = Σ_jm q̇_j c_jm(i) q̇_m (004 eq. 11).  Everything
here is computed from the seed's closed forms in the per-link masses, the composite centres of mass and
composite inertias of the links a joint moves, and the joint axes; nothing calls the package's inertia
matrix, Newton–Euler or Christoffel code:

* the mass moved by joint i, M_i = m_i + … + m_N (004 eq. 18; in a tree: the subtree of joint i);
* p_i, the composite COM of links i..N relative to a point O_i of axis i (004 eqs. 19, 20, errata 66);
* the projected inertia J_ij of links j..N about axes i and j and the projected radius of gyration
  K_ij = J_ij / M_j (004 eq. 21) — a *signed squared* radius; the seed's K_ii of eqs. 23, 29, 35 is its
  square root, K_ii² = J_ii / M_i (errata 62).  J_ij is evaluated as 004 (A-9)/(A-10) do: the composite
  inertia tensor of links j..N about O_j (the pseudo-inertia matrices of 004 (A-12), summed) plus the
  transfer term M_j (z_i × (O_j − O_i))·(z_j × p_j).  (A-10)'s a_z I_zz − o_z I_yz − n_z I_xz is z_iᵀ I z_j
  with the seed's products I_xz = +Σ m x z (errata 65); the model's XY, XZ, YZ are −∫ (001 eq. 7.3);
* d_ij (004 eq. 22, errata 61; eqs. 23, 25–27, 29–31 are its cases), for i ≤ j::

      d_ij = M_j {σ_iσ_j z_i·z_j + σ_iσ*_j (z_i × z_j)·p_j + σ*_iσ_j (z_j × z_i)·p_i + σ*_iσ*_j K_ij}

  (here z_i is the axis of joint i, the seed's z_{i−1}; p_i in the third term is the COM of links
  j..N relative to O_i).  The rotor inertias Ia of the model are added to d_ii (001 eq. 7.61, Pinocchio's
  ``armature``) unless ``rotor_inertia=False``;
* the coefficient of coupling k_ij = |d_ij| / √(d_ii d_jj) (004 eq. 32, errata 61) and its factorisation
  k_ij = LF × KF (004 eqs. 33–35): LF = √(M_j / M_i) (004 eq. 34), KF the four cases of 004 eq. 35.  With
  rotor inertias K_ii² = (J_ii + Ia_i)/M_i and a translational joint's implicit factor 1 becomes
  √(1 + Ia_i / M_i) (both: ``radius`` = √(d_ii / M_i)), so that 004 eq. 33 still holds.  The seed's bound
  KF ≤ 1 is not a theorem: KF can exceed 1 when the inner links are heavy but close to axis i (only k ≤ 1
  holds, from the positive definiteness of D);
* ∂d_ij/∂q_k in closed form, from the same moments: the column of joint i is the affine velocity field
  u_i(r) = σ_i z_i + σ*_i z_i × (r − O_i); ∂u_i/∂q_k = σ*_k z_k × u_i if joint k moves joint i's axis (k ≤ i),
  σ*_i z_i × u_k otherwise (on the bodies joint k moves), and ∫ (a + A r)·(b + B r) dm over links s..N is
  M a·b + a·B h + b·A h + tr(AᵀB Σ) with the first and second moments h, Σ of those links.  Hence
  ∂d_ij/∂q_k = 0 for k ≤ min(i, j) (004 §4), the Christoffel symbols c_jm(i) (004 eq. 12, errata 58;
  their cases 36–37, properties 38–39);
* the gravitational coefficients with the sign of a proper Lagrangian (errata 59: G_i = +∂V/∂q_i, the
  opposite of 004 eqs. 13, 40, B-3, B-4)::

      G_i = −M_i {σ_i g·z_i + σ*_i g·(z_i × p_i)}      (p_i: COM of links i..N relative to O_i)

  which is Pinocchio's ``computeGeneralizedGravity`` and the package's Q(q) (001 eq. 7.62).

Conventions: URDF joint coordinates (z_i is the MDH axis times the joint's sign, so d_ij, G_i, ∂d_ij/∂q_k
are those of the URDF joint variables), vectors in ``base_link``, ``model.gravity``.  A tree is supported:
"links j..N" is the subtree of joint j and d_ij = 0 when neither joint carries the other.

:func:`inertia_report` samples the workspace (uniformly within the joint limits) and counts the
independent coefficients of 004 Tables 2 and 3 with the structural zeros found numerically.  Measured
(test/test_inertial_characteristics.py): Table 3's Stanford arm (66 of 97, sparsity 0.680) is exactly the
count of the bundled Stanford kinematics once link 6 is not axisymmetric; Lin's data (seed 003: I_xx = I_yy,
COM on z6 for link 6) give 60 (0.619).  Table 3's "6(1)" constant d_ii of the Stanford arm cannot be:
d_33 (translational, eq. 25) and d_66 (the last link about its own axis) are both constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..model.data import RobotData
from ..model.inertia import inertia_tensor, skew
from ..model.mdh import PRISMATIC

__all__ = [
    "CoefficientCount",
    "InertiaReport",
    "InertialCharacteristics",
    "coefficient_groups",
    "independent_coefficient_counts",
    "inertia_report",
    "inertia_report_cli",
    "inertial_characteristics",
    "plot_inertia_report",
    "workspace_samples",
]

ZERO_RTOL = 1e-9  # a coefficient is a structural zero if |c| <= ZERO_RTOL * (scale of its kind) on every sample
CONST_RTOL = 1e-9  # ... constant if max - min <= CONST_RTOL * max |c|
CARTESIAN_SPARSITY = 0.235  # 004 §6: the 3-DOF Cartesian robot, basis of the empirical sparsity formula
MAX_REPORT_SAMPLES = 100_000
_CHUNK = 250  # configurations per batch in the report (memory: chunk * n^3 floats per tensor)
# verdict thresholds (the project's, not the seed's): decentralized PID with constant gains when D is
# diagonally dominant with margin (max_i Σ_{j≠i} k_ij <= PID_ROW_COUPLING) and every d_ii varies by at most a
# factor PID_INERTIA_RATIO over the workspace
PID_ROW_COUPLING = 0.5
PID_INERTIA_RATIO = 2.0


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def _ancestry(model: RobotData) -> np.ndarray:
    """anc[i, j]: joint i moves link j (i = j or i an antecedent of j); a serial chain: i <= j."""
    n = model.dof
    anc = np.eye(n, dtype=bool)
    for j in range(n):
        a = int(model.antecedent[j]) - 1
        if a >= 0:
            anc[:, j] |= anc[:, a]
    return anc


@dataclass(frozen=True, eq=False)
class InertialCharacteristics:
    """The coefficients of 004 at one configuration (arrays without the batch axis) or a batch (leading
    axis B).  Indices are 0-based joint indices in URDF chain order (the seed's i = index + 1).

    sigma: (n,) 1 translational (prismatic), 0 rotational; the seed's σ_i (σ*_i = 1 − σ_i).
    mass: (n,) M_i = m_i + … + m_N, the mass moved by joint i (004 eq. 18).
    axis: (B, n, 3) z_i, unit axis of joint i (the seed's z_{i−1}) in ``base_link``, URDF direction.
    origin: (B, n, 3) O_i, the point of axis i used for the moments (origin of MDH frame i).
    com: (B, n, 3) centre of mass of links i..N in ``base_link``.
    p: (B, n, 3) p_i = com_i − O_i (004 eqs. 19, 20).
    J: (B, n, n) projected inertia J_ij of the links both joints move (004 eq. 21); 0 if neither moves the other.
    K: (B, n, n) K_ij = J_ij / M_j (j the carried joint), signed squared projected radius of gyration (diag: K_ii²,
       errata 62).
    d: (B, n, n) inertial coefficients d_ij (004 eqs. 22–31), Ia on the diagonal if ``rotor_inertia``.
    Ia: (n,) the rotor inertias added to d_ii (zeros if ``rotor_inertia=False`` or the model has none).
    radius: (B, n) √(d_ii / M_i): K_ii (rotational; incl. the rotor), √(1 + Ia_i/M_i) (translational).
    k: (B, n, n) coefficients of coupling (004 eq. 32); k_ii = 1.
    LF: (n, n) loading factors √(M_j / M_i), j carried by i (004 eq. 34); LF_ii = 1; 0 if neither carries the other.
    KF: (B, n, n) kinematic factors (004 eq. 35); KF_ii = 1; k = LF × KF (004 eq. 33).
    dd_dq: (B, n, n, n) dd_dq[..., k, i, j] = ∂d_ij/∂q_k.
    c: (B, n, n, n) c[..., i, j, m] = c_jm(i), Christoffel symbols (004 eq. 12; cases 36, 37).
    G: (B, n) gravitational coefficients, G = +∂V/∂q (004 eq. 40 with the sign of errata 59).
    gravity: (3,) the gravity vector used, in ``base_link``.
    """

    q: np.ndarray
    joint_names: tuple[str, ...]
    sigma: np.ndarray
    mass: np.ndarray
    axis: np.ndarray
    origin: np.ndarray
    com: np.ndarray
    p: np.ndarray
    J: np.ndarray
    K: np.ndarray
    d: np.ndarray
    Ia: np.ndarray
    radius: np.ndarray
    k: np.ndarray
    LF: np.ndarray
    KF: np.ndarray
    dd_dq: np.ndarray
    c: np.ndarray
    G: np.ndarray
    gravity: np.ndarray

    def coriolis_centrifugal(self, qd: Any) -> np.ndarray:
        """C_i(q, q̇) = Σ_jm q̇_j c_jm(i) q̇_m (004 eq. 11) for velocities (n,) or (B, n) matching ``q``."""
        qd = np.asarray(qd, float)
        if qd.shape != self.q.shape:
            raise ValueError(f"qd must have the shape of q {self.q.shape}, got {qd.shape}")
        return np.einsum("...ijm,...j,...m->...i", self.c, qd, qd)


def inertial_characteristics(model: RobotData, q: Any, *, rotor_inertia: bool = True) -> InertialCharacteristics:
    """The inertial, coupling, centrifugal/Coriolis and gravitational coefficients of 004 at ``q``.

    ``q``: URDF joint values (n,) or a batch (B, n).  ``rotor_inertia``: add the model's rotor inertias Ia
    to d_ii (001 eq. 7.61; Pinocchio's ``armature``), as the motors add them to the inertia each joint drives.
    Serial chains and trees (see the module docstring), revolute and prismatic joints.

    Raises ValueError for a bad ``q`` and for a joint that moves no mass (M_i <= 0, or d_ii <= 0 at some
    configuration): its coupling coefficients are undefined (D is not positive definite).
    """
    qa = model.check_joint_vector(q)
    n = model.dof
    if n == 0:
        raise ValueError("the model has no moving joint")
    single = qa.ndim == 1
    qb = qa[None] if single else qa
    names = tuple(model.joint_names)
    frames = model.base_transform @ model.link_frames(qb)[:, 1:]  # ^{base}T_j, (B, n, 4, 4)
    R, O = frames[..., :3, :3], frames[..., :3, 3]
    z = R[..., :, 2] * np.asarray(model.sign, float)[:, None]
    sig = (np.asarray(model.sigma) == PRISMATIC).astype(float)
    rot = 1.0 - sig
    anc = _ancestry(model)

    # pseudo-inertia (004 A-12) of each link about the base_link origin: m, h = ∫ r dm, S = ∫ r rᵀ dm
    inert = np.asarray(model.inertial, float)
    m, ms = inert[:, 9].copy(), inert[:, 6:9]
    jo = np.array([inertia_tensor(row) for row in inert])  # about O_k in R_k (XY = -∫xy dm, 001 eq. 7.3)
    second = 0.5 * np.trace(jo, axis1=1, axis2=2)[:, None, None] * np.eye(3) - jo  # ∫ x xᵀ dm about O_k
    rms = np.einsum("bnij,nj->bni", R, ms)
    h = m[:, None] * O + rms
    S = (m[:, None, None] * O[..., :, None] * O[..., None, :] + O[..., :, None] * rms[..., None, :]
         + rms[..., :, None] * O[..., None, :] + R @ second @ R.swapaxes(-1, -2))
    # links j..N (the subtree of joint j): children have larger indices
    M = m.copy()
    for j in range(n - 1, -1, -1):
        a = int(model.antecedent[j]) - 1
        if a >= 0:
            M[a] += M[j]
            h[:, a] += h[:, j]
            S[:, a] += S[:, j]
    if np.any(M <= 0.0):
        bad = [names[i] for i in np.flatnonzero(M <= 0.0)]
        raise ValueError(f"joint(s) {bad} move no mass (M_i = m_i + ... + m_N <= 0): D(q) is not positive "
                         "definite and the coupling coefficients (004 eq. 32) are undefined")
    com = h / M[:, None]
    p = com - O
    # composite inertia tensor of links j..N about O_j (004 A-10 step 2), base_link axes
    sig_o = (S - O[..., :, None] * h[..., None, :] - h[..., :, None] * O[..., None, :]
             + M[:, None, None] * O[..., :, None] * O[..., None, :])
    i_o = np.trace(sig_o, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - sig_o

    B = qb.shape[0]
    J = np.zeros((B, n, n))
    kappa = np.zeros((B, n, n))  # the braces of 004 eq. 22 (d_ij / M_j)
    m_pair = np.zeros((n, n))  # mass moved by both joints
    m_anc = np.ones((n, n))  # mass moved by the inner one
    for j in range(n):
        zj, pj = z[:, j], p[:, j]
        for i in np.flatnonzero(anc[:, j]):
            zi = z[:, i]
            jij = (np.einsum("bi,bij,bj->b", zi, i_o[:, j], zj)
                   + M[j] * _dot(np.cross(zi, O[:, j] - O[:, i]), np.cross(zj, pj)))  # 004 (21), (A-9)
            if sig[i] and sig[j]:
                kap = _dot(zi, zj)  # 004 eq. 26 (eq. 25 for i = j)
            elif sig[i]:
                kap = _dot(np.cross(zi, zj), pj)  # 004 eq. 27
            elif sig[j]:
                kap = _dot(np.cross(zj, zi), com[:, j] - O[:, i])  # 004 eq. 30
            else:
                kap = jij / M[j]  # 004 eqs. 29, 31
            J[:, i, j] = J[:, j, i] = jij
            kappa[:, i, j] = kappa[:, j, i] = kap
            m_pair[i, j] = m_pair[j, i] = M[j]
            m_anc[i, j] = m_anc[j, i] = M[i]
    Ia = np.asarray(model.Ia, float).copy() if rotor_inertia else np.zeros(n)
    d = m_pair * kappa + np.diag(Ia)
    dii = np.diagonal(d, axis1=1, axis2=2)
    if np.any(~(dii > 0.0)):
        b, i = np.argwhere(~(dii > 0.0))[0]
        raise ValueError(f"d_ii of joint {names[i]!r} is {dii[b, i]:.3g} <= 0 at q = {qb[b].tolist()}: "
                         "D(q) is not positive definite (a joint that moves no inertia)")
    K = np.divide(J, m_pair, out=np.zeros_like(J), where=m_pair > 0.0)
    radius = np.sqrt(dii / M)
    k = np.abs(d) / np.sqrt(dii[:, :, None] * dii[:, None, :])
    LF = np.sqrt(m_pair / m_anc)
    KF = np.abs(kappa) / (radius[:, :, None] * radius[:, None, :])
    eye = np.eye(n, dtype=bool)
    k[:, eye], LF[eye], KF[:, eye] = 1.0, 1.0, 1.0

    g = np.asarray(model.gravity, float)
    G = -M * (sig * (z @ g) + rot * _dot(g, np.cross(z, p)))  # 004 eq. 40, sign of errata 59

    dd_dq = _inertia_derivatives(z, O, sig, rot, anc, M, h, S)
    # c_jm(i) = ½ (∂d_ij/∂q_m + ∂d_im/∂q_j − ∂d_jm/∂q_i), 004 eq. 12 (errata 58)
    c = 0.5 * (np.moveaxis(dd_dq, 1, 3) + dd_dq.transpose(0, 2, 1, 3) - dd_dq)

    def out(x: np.ndarray) -> np.ndarray:
        return x[0] if single else x

    return InertialCharacteristics(
        q=qa.copy(), joint_names=names, sigma=sig.astype(int), mass=M, axis=out(z), origin=out(O.copy()),
        com=out(com), p=out(p), J=out(J), K=out(K), d=out(d), Ia=Ia, radius=out(radius), k=out(k), LF=LF,
        KF=out(KF), dd_dq=out(dd_dq), c=out(c), G=out(G), gravity=g.copy(),
    )


def _inertia_derivatives(z: np.ndarray, O: np.ndarray, sig: np.ndarray, rot: np.ndarray, anc: np.ndarray,
                         M: np.ndarray, h: np.ndarray, S: np.ndarray) -> np.ndarray:
    """∂d_ij/∂q_k (B, k, i, j) from the velocity fields u_i(r) = a_i + A_i r and the subtree moments M, h, S."""
    B, n = z.shape[:2]
    a = sig[:, None] * z - rot[:, None] * np.cross(z, O)  # u_i(r) = σ_i z_i + σ*_i z_i × (r − O_i)
    A = rot[:, None, None] * skew(z)
    hz = skew(z)
    zx_a = np.einsum("bixy,bky->bikx", hz, a)  # z_i × u_k: constant part
    zx_A = np.einsum("bixy,bkyw->bikxw", hz, A)  # ... and linear part

    def integral(af: np.ndarray, Af: np.ndarray, ag: np.ndarray, Ag: np.ndarray, s: int) -> np.ndarray:
        """∫ (af + Af r)·(ag + Ag r) dm over links s..N."""
        hs = h[:, s]
        return (M[s] * _dot(af, ag) + np.einsum("bi,bij,bj->b", af, Ag, hs) + np.einsum("bi,bij,bj->b", ag, Af, hs)
                + np.einsum("bki,bkj,bij->b", Af, Ag, S[:, s]))

    out = np.zeros((B, n, n, n))
    for j in range(n):
        for i in np.flatnonzero(anc[:, j]):
            for k in range(n):
                if anc[k, i]:  # joint k moves both axes and the bodies rigidly: ∂d_ij/∂q_k = 0 (004 §4)
                    continue
                if anc[k, j]:  # i < k <= j: ∂u_i = σ*_i z_i × u_k, ∂u_j = σ*_k z_k × u_j, on links j..N
                    s, (ci, cj) = j, (rot[i], rot[k])
                    second = (zx_a[:, k, j], zx_A[:, k, j])
                elif anc[j, k]:  # k > j: ∂u_i = σ*_i z_i × u_k, ∂u_j = σ*_j z_j × u_k, on links k..N
                    s, (ci, cj) = k, (rot[i], rot[j])
                    second = (zx_a[:, j, k], zx_A[:, j, k])
                else:
                    continue
                v = np.zeros(B)
                if ci:
                    v += integral(zx_a[:, i, k], zx_A[:, i, k], a[:, j], A[:, j], s)
                if cj:
                    v += integral(a[:, i], A[:, i], second[0], second[1], s)
                out[:, k, i, j] = out[:, k, j, i] = v
    return out


# ------------------------------------------------------------------ Tables 2 and 3
def independent_coefficient_counts(n: int) -> dict[str, int]:
    """Independent coefficients of a general n-joint model (004 Table 2; totals from errata 64).

    d_ii: n; d_ij (i < j): n(n−1)/2 (symmetry); centrifugal c_jj(i), i ≠ j: n(n−1) (c_jj(j) = 0, 004 eq. 36);
    Coriolis c_jm(i), j ≠ m: n²(n−1)/2 by the symmetry c_jm(i) = c_mj(i), of which those with i = max(j, m)
    vanish (non-interacting, 004 eq. 38), those with i = min(j, m) equal −c_ii(max) (a centrifugal one,
    004 eq. 39 with j = i), and of the three of each triple a < b < c, c_ac(b) = −c_ab(c) (004 eq. 39):
    2 C(n, 3) = n(n−1)(n−2)/3 remain; G_i: n.  Total n(2n² + 3n + 7)/6: 17 for n = 3, 97 for n = 6.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    counts = {"self_inertial": n, "mutual_inertial": n * (n - 1) // 2, "centrifugal": n * (n - 1),
              "coriolis": n * (n - 1) * (n - 2) // 3, "gravitational": n}
    counts["total"] = n * (2 * n * n + 3 * n + 7) // 6
    return counts


def coefficient_groups(n: int) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """The independent coefficients of 004 Table 2 as (label, index) lists, 0-based indices:
    ``self_inertial``/``mutual_inertial`` index ``d[i, j]``, ``centrifugal``/``coriolis`` index ``c[i, j, m]``
    (= c_jm(i)), ``gravitational`` indexes ``G[i]``.  Labels use the seed's 1-based indices.  Coriolis: per
    triple a < b < c, c_bc(a) and c_ab(c) (c_ac(b) = −c_ab(c), the others follow from 004 eqs. 38, 39)."""
    r = range(n)
    return {
        "self_inertial": [(f"d_{i + 1}{i + 1}", (i, i)) for i in r],
        "mutual_inertial": [(f"d_{i + 1}{j + 1}", (i, j)) for i in r for j in r if i < j],
        "centrifugal": [(f"c_{j + 1}{j + 1}({i + 1})", (i, j, j)) for i in r for j in r if i != j],
        "coriolis": [x for a in r for b in r for c in r if a < b < c
                     for x in ((f"c_{b + 1}{c + 1}({a + 1})", (a, b, c)), (f"c_{a + 1}{b + 1}({c + 1})", (c, a, b)))],
        "gravitational": [(f"G_{i + 1}", (i,)) for i in r],
    }


GROUP_TITLES = {
    "self_inertial": "self-inertial d_ii",
    "mutual_inertial": "mutual inertial d_ij",
    "centrifugal": "centrifugal c_jj(i)",
    "coriolis": "Coriolis c_jm(i)",
    "gravitational": "gravitational G_i",
}


@dataclass(frozen=True)
class CoefficientCount:
    """One row of 004 Table 3 for this robot: ``nonzero`` of the ``general`` independent coefficients (Table 2)
    are not identically zero over the samples, ``constant`` of them are constant; ``zeros`` names the
    structural zeros, ``constants`` the constant ones."""

    group: str
    general: int
    nonzero: int
    constant: int
    zeros: tuple[str, ...]
    constants: tuple[str, ...]


def workspace_samples(model: RobotData, samples: int, seed: int = 0) -> np.ndarray:
    """(samples, n) configurations uniform within the joint limits (a revolute joint without limits: [−π, π])."""
    samples = int(samples)
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    lim = model.limits
    lo, hi = np.array(lim["lower"], float), np.array(lim["upper"], float)
    prism = np.asarray(model.sigma) == PRISMATIC
    unbounded = prism & ~(np.isfinite(lo) & np.isfinite(hi))
    if np.any(unbounded):
        raise ValueError(f"prismatic joint(s) {[model.joint_names[i] for i in np.flatnonzero(unbounded)]} have no "
                         "finite limits: the workspace to sample is unbounded")
    lo = np.where(np.isfinite(lo), lo, -math.pi)
    hi = np.where(np.isfinite(hi), hi, math.pi)
    return np.random.default_rng(seed).uniform(lo, hi, (samples, model.dof))


@dataclass(frozen=True, eq=False)
class InertiaReport:
    """Workspace ranges and counts of the coefficients of 004 for one robot (see :func:`inertia_report`).

    Ranges are over the sampled configurations (``samples`` of them, uniform within the joint limits, ``seed``).
    d_min/d_max (n, n), k_min/k_max (n, n), LF (n, n), KF_min/KF_max (n, n), G_min/G_max (n,),
    c_absmax (n, n, n) (max |c_jm(i)| at [i, j, m]), d_zero (n, n) the structural zeros of D.  ``counts``: 004 Table 3 for this robot (structural zeros
    found numerically: ``zero_gap`` = (largest |coefficient| called zero, smallest called nonzero), each
    relative to the scale of its kind).  ``max_coupling`` is the largest k_ij (i ≠ j) over the samples, between
    joints ``max_pair`` (0-based) at ``max_configuration``; ``row_coupling`` the largest Σ_{j≠i} k_ij (D is
    diagonally dominant, normalized by √(d_ii d_jj), where it is < 1); ``inertia_ratio`` (n,) max d_ii / min d_ii.
    """

    robot: str
    joint_names: tuple[str, ...]
    sigma: np.ndarray
    samples: int
    seed: int
    Ia: np.ndarray
    mass: np.ndarray
    link_mass: np.ndarray
    d_min: np.ndarray
    d_max: np.ndarray
    k_min: np.ndarray
    k_max: np.ndarray
    LF: np.ndarray
    KF_min: np.ndarray
    KF_max: np.ndarray
    G_min: np.ndarray
    G_max: np.ndarray
    c_absmax: np.ndarray
    d_zero: np.ndarray
    counts: tuple[CoefficientCount, ...]
    zero_gap: tuple[float, float]
    max_coupling: float
    max_pair: tuple[int, int]
    max_configuration: np.ndarray
    max_coupling_without_rotors: float
    row_coupling: float
    row_coupling_configuration: np.ndarray
    inertia_ratio: np.ndarray
    guidelines: dict[str, Any]
    recommendation: str
    verdict: str

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def n_rotational(self) -> int:
        return int(np.sum(self.sigma == 0))

    @property
    def general_total(self) -> int:
        return independent_coefficient_counts(self.dof)["total"]

    @property
    def nonzero_total(self) -> int:
        return sum(c.nonzero for c in self.counts)

    @property
    def constant_total(self) -> int:
        return sum(c.constant for c in self.counts)

    @property
    def sparsity(self) -> float:
        """Nonzero independent coefficients / independent coefficients of a general robot (004 §6, Table 3)."""
        return self.nonzero_total / self.general_total

    @property
    def empirical_sparsity(self) -> float:
        """0.235 [1 + (N_R/N)²]² (004 §6, an empirical fit to Table 3; errata 64)."""
        return CARTESIAN_SPARSITY * (1.0 + (self.n_rotational / self.dof) ** 2) ** 2

    def text(self) -> str:
        """The report as printed by ``robot-dynamics inertia-report``."""
        n, names = self.dof, self.joint_names
        kinds = "".join("P" if s else "R" for s in self.sigma)
        lines = [f"robot {self.robot!r}: {n} joints ({kinds}; {self.n_rotational} rotational, "
                 f"{n - self.n_rotational} translational), {self.samples} configurations uniform within the joint "
                 f"limits (seed {self.seed})"]
        lines.append("joints: " + ", ".join(f"{i + 1}={nm}" for i, nm in enumerate(names)))
        lines.append("link masses m_i: " + ", ".join(f"{x:.4g}" for x in self.link_mass) + " kg; moved masses "
                     "M_i = m_i+...+m_N (004 eq. 18): " + ", ".join(f"{x:.4g}" for x in self.mass) + " kg")
        if np.any(self.Ia != 0.0):
            lines.append("rotor inertias Ia added to d_ii: " + ", ".join(f"{x:.4g}" for x in self.Ia))
        lines.append("")
        lines.append("inertial coefficients over the workspace (004 eqs. 22-35; d in kg m^2, kg m or kg):")
        lines.append(f"  {'i':>2} {'j':>2} {'d_ij min':>11} {'d_ij max':>11} {'k_ij min':>8} {'k_ij max':>8} "
                     f"{'LF':>6} {'KF min':>7} {'KF max':>7}")
        for i in range(n):
            for j in range(i, n):
                if i == j:
                    lines.append(f"  {i + 1:>2} {j + 1:>2} {self.d_min[i, j]:>11.5g} {self.d_max[i, j]:>11.5g}"
                                 f"  (self: max/min = {self.inertia_ratio[i]:.3g})")
                elif self.d_zero[i, j]:
                    lines.append(f"  {i + 1:>2} {j + 1:>2} {'0':>11} {'0':>11} {0:>8.4f} {0:>8.4f} {self.LF[i, j]:>6.3f}"
                                 f"  (structural zero)")
                else:
                    lines.append(f"  {i + 1:>2} {j + 1:>2} {self.d_min[i, j]:>11.5g} {self.d_max[i, j]:>11.5g} "
                                 f"{self.k_min[i, j]:>8.4f} {self.k_max[i, j]:>8.4f} {self.LF[i, j]:>6.3f} "
                                 f"{self.KF_min[i, j]:>7.4f} {self.KF_max[i, j]:>7.4f}")
        lines.append("gravitational coefficients G_i = +dV/dq_i (004 eq. 40, sign of errata 59), N m or N:")
        lines.append("  " + "; ".join(f"G_{i + 1} [{self.G_min[i] + 0.0:.4g}, {self.G_max[i] + 0.0:.4g}]" for i in range(n)))
        lines.append("")
        gen = independent_coefficient_counts(n)
        lines.append(f"independent coefficients (004 Tables 2, 3): this robot, nonzero (constant) / general {n}-joint robot")
        for c in self.counts:
            lines.append(f"  {GROUP_TITLES[c.group]:<22} {c.nonzero:>4} ({c.constant}) / {c.general:<4}"
                         + (f"  zero: {', '.join(c.zeros)}" if c.zeros and len(c.zeros) <= 24 else
                            f"  zero: {len(c.zeros)} of them" if c.zeros else ""))
        lines.append(f"  {'total':<22} {self.nonzero_total:>4} ({self.constant_total}) / {gen['total']:<4}")
        lines.append(f"sparsity {self.sparsity:.3f} = {self.nonzero_total}/{gen['total']} (004 Table 3); empirical "
                     f"0.235 [1 + (N_R/N)^2]^2 = {self.empirical_sparsity:.3f} (N_R/N = {self.n_rotational}/{n})")
        lines.append(f"structural zeros: |coefficient| <= {ZERO_RTOL:g} x the scale of its kind on every sample "
                     f"(largest called zero {self.zero_gap[0]:.1e}, smallest called nonzero {self.zero_gap[1]:.1e})")
        lines.append("")
        gl = self.guidelines
        lines.append("004 §6 design guidelines: "
                     f"1 translational joints: {gl['translational_joints']} of {n}; "
                     f"2 consecutive axes parallel or orthogonal: {'yes' if gl['axes_parallel_or_orthogonal'] else 'no'}; "
                     f"3 link masses decreasing to the tip: {'yes' if gl['masses_decreasing'] else 'no'}; "
                     f"4 first joint does no work against gravity (G_1 = 0): {'yes' if gl['first_joint_gravity_free'] else 'no'}")
        lines.append(self.verdict)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (``--json``)."""
        gen = independent_coefficient_counts(self.dof)
        return {
            "robot": self.robot, "joint_names": list(self.joint_names), "sigma": self.sigma.tolist(),
            "samples": self.samples, "seed": self.seed, "Ia": self.Ia.tolist(), "mass": self.mass.tolist(),
            "link_mass": self.link_mass.tolist(), "d_zero": self.d_zero.tolist(),
            "d_min": self.d_min.tolist(), "d_max": self.d_max.tolist(), "k_min": self.k_min.tolist(),
            "k_max": self.k_max.tolist(), "LF": self.LF.tolist(), "KF_min": self.KF_min.tolist(),
            "KF_max": self.KF_max.tolist(), "G_min": self.G_min.tolist(), "G_max": self.G_max.tolist(),
            "counts": {c.group: {"nonzero": c.nonzero, "constant": c.constant, "general": c.general,
                                 "zeros": list(c.zeros), "constants": list(c.constants)} for c in self.counts},
            "general_counts": gen, "nonzero_total": self.nonzero_total, "constant_total": self.constant_total,
            "sparsity": self.sparsity, "empirical_sparsity": self.empirical_sparsity,
            "zero_gap": [x if math.isfinite(x) else None for x in self.zero_gap],
            "max_coupling": {"k": self.max_coupling, "joints": [self.joint_names[i] for i in self.max_pair],
                             "pair": [i + 1 for i in self.max_pair], "q": self.max_configuration.tolist()},
            "max_coupling_without_rotors": self.max_coupling_without_rotors,
            "row_coupling": {"max": self.row_coupling, "q": self.row_coupling_configuration.tolist()},
            "inertia_ratio": self.inertia_ratio.tolist(), "guidelines": self.guidelines,
            "recommendation": self.recommendation, "verdict": self.verdict,
        }


def inertia_report(
    model: RobotData, samples: int = 1000, seed: int = 0, *, rotor_inertia: bool = True
) -> InertiaReport:
    """Ranges over the workspace of d_ij, k_ij, LF, KF, G_i; the counts of 004 Tables 2–3 for this robot; a verdict.

    ``samples`` configurations uniform within the joint limits (:func:`workspace_samples`, ``seed``).  A
    coefficient is a structural zero if its magnitude stays below ZERO_RTOL times the scale of its kind on every
    sample (mutual d_ij: k_ij; centrifugal and Coriolis: the largest |c_jm(i)| of the robot; G_i: the largest
    |G|), constant if it varies by less than CONST_RTOL times its magnitude.

    Verdict (the thresholds are the project's; the seed gives none): the decentralized PID of 001 §9.3.1
    (constant gains from a_j = max d_jj, eq. 9.6) behaves alike in every configuration when D(q) is close to the
    diagonal and almost constant — 004 §1's first condition; the seed's coupling coefficient measures the first
    part (004 §3.5: k_ij → 0 uncoupled; diagonal dominance = weak coupling).  "PID" when max_i Σ_{j≠i} k_ij <=
    PID_ROW_COUPLING and max d_ii / min d_ii <= PID_INERTIA_RATIO for every joint; "PID at low speed" when D is
    still diagonally dominant (row sum < 1); else "computed torque" (001 §9.4, eq. 9.22).
    """
    samples = int(samples)
    if not 2 <= samples <= MAX_REPORT_SAMPLES:
        raise ValueError(f"samples must be in [2, {MAX_REPORT_SAMPLES}] (a constant needs two), got {samples}")
    qs = workspace_samples(model, samples, seed)
    n = model.dof
    big = np.inf
    acc: dict[str, np.ndarray] = {
        "d_min": np.full((n, n), big), "d_max": np.full((n, n), -big), "k_min": np.full((n, n), big),
        "k_max": np.full((n, n), -big), "KF_min": np.full((n, n), big), "KF_max": np.full((n, n), -big),
        "c_min": np.full((n, n, n), big), "c_max": np.full((n, n, n), -big),
        "G_min": np.full(n, big), "G_max": np.full(n, -big),
    }
    off = ~np.eye(n, dtype=bool)
    best = (-1.0, (0, 1), qs[0])
    best_row = (-1.0, qs[0])
    best_bare = 0.0
    ic = None
    for start in range(0, samples, _CHUNK):
        q = qs[start:start + _CHUNK]
        ic = inertial_characteristics(model, q, rotor_inertia=rotor_inertia)
        for key, x in (("d", ic.d), ("k", ic.k), ("KF", ic.KF), ("c", ic.c), ("G", ic.G)):
            acc[f"{key}_min"] = np.minimum(acc[f"{key}_min"], x.min(axis=0))
            acc[f"{key}_max"] = np.maximum(acc[f"{key}_max"], x.max(axis=0))
        koff = np.where(off, ic.k, 0.0)
        if n > 1:
            flat = koff.reshape(len(q), -1)
            b = int(np.argmax(flat.max(axis=1)))
            if flat[b].max() > best[0]:
                i, j = np.unravel_index(int(np.argmax(flat[b])), (n, n))
                best = (float(flat[b].max()), (int(min(i, j)), int(max(i, j))), q[b].copy())
            rows = koff.sum(axis=2).max(axis=1)
            b = int(np.argmax(rows))
            if rows[b] > best_row[0]:
                best_row = (float(rows[b]), q[b].copy())
            bare = ic.d - np.eye(n) * ic.Ia
            dii = np.diagonal(bare, axis1=1, axis2=2)
            with np.errstate(divide="ignore", invalid="ignore"):
                kb = np.abs(bare) / np.sqrt(dii[:, :, None] * dii[:, None, :])
            best_bare = max(best_bare, float(np.nanmax(np.where(off, kb, 0.0))))
    assert ic is not None
    if n == 1:
        best, best_row = (0.0, (0, 0), qs[0]), (0.0, qs[0])

    # structural zeros and constants (004 Tables 2, 3)
    groups = coefficient_groups(n)
    c_abs = np.maximum(np.abs(acc["c_min"]), np.abs(acc["c_max"]))
    g_abs = np.maximum(np.abs(acc["G_min"]), np.abs(acc["G_max"]))
    c_scale, g_scale = float(c_abs.max(initial=0.0)), float(g_abs.max(initial=0.0))
    ratios: list[tuple[bool, float]] = []  # (called zero, |value| / scale)
    counts = []
    for group, members in groups.items():
        zeros, constants = [], []
        for label, idx in members:
            if group == "self_inertial":
                lo, hi, rel, zero = acc["d_min"][idx], acc["d_max"][idx], 1.0, False
            elif group == "mutual_inertial":
                lo, hi = acc["d_min"][idx], acc["d_max"][idx]
                rel = float(acc["k_max"][idx])
                zero = rel <= ZERO_RTOL
            elif group == "gravitational":
                lo, hi = acc["G_min"][idx], acc["G_max"][idx]
                rel = float(g_abs[idx] / g_scale) if g_scale > 0 else 0.0
                zero = rel <= ZERO_RTOL
            else:
                lo, hi = acc["c_min"][idx], acc["c_max"][idx]
                rel = float(c_abs[idx] / c_scale) if c_scale > 0 else 0.0
                zero = rel <= ZERO_RTOL
            if group != "self_inertial":
                ratios.append((zero, rel))
            if zero:
                zeros.append(label)
            elif hi - lo <= CONST_RTOL * max(abs(lo), abs(hi)):
                constants.append(label)
        counts.append(CoefficientCount(group, len(members), len(members) - len(zeros), len(constants),
                                       tuple(zeros), tuple(constants)))
    mutual_zeros = set(counts[1].zeros)  # the groups in coefficient_groups' order
    zr = [r for z, r in ratios if z]
    nzr = [r for z, r in ratios if not z]
    gap = (max(zr, default=0.0), min(nzr, default=math.inf))

    d_min, d_max = acc["d_min"], acc["d_max"]
    d_zero = np.zeros((n, n), dtype=bool)
    for label, (i, j) in groups["mutual_inertial"]:
        if label in mutual_zeros:
            d_zero[i, j] = d_zero[j, i] = True
    ratio = np.diagonal(d_max) / np.diagonal(d_min)
    names = tuple(model.joint_names)
    sig = np.asarray(model.sigma) == PRISMATIC
    link_mass = np.asarray(model.inertial, float)[:, 9].copy()
    # 004 §6 guidelines, as measured on this robot
    # the angle between consecutive axes is constant (alpha_j of the MDH row): one configuration tells
    z = ic.axis[0]
    cos_ok = True
    ant = np.asarray(model.antecedent) - 1
    for j, a in enumerate(ant):
        if a >= 0:
            cz = abs(float(z[j] @ z[a]))
            cos_ok &= bool(min(cz, 1.0 - cz) <= 1e-9)
    g_counts = {c.group: c for c in counts}
    guidelines = {
        "translational_joints": int(sig.sum()),
        "axes_parallel_or_orthogonal": bool(cos_ok),
        "masses_decreasing": bool(all(link_mass[j] <= link_mass[a] for j, a in enumerate(ant) if a >= 0)),
        "first_joint_gravity_free": "G_1" in g_counts["gravitational"].zeros,
    }
    n_c = g_counts["centrifugal"].nonzero + g_counts["coriolis"].nonzero
    n_g = g_counts["gravitational"].nonzero - g_counts["gravitational"].constant
    worst = int(np.argmax(ratio))
    if n == 1 or (best_row[0] <= PID_ROW_COUPLING and ratio.max() <= PID_INERTIA_RATIO):
        rec = "PID"
    elif best_row[0] < 1.0:
        rec = "PID at low speed"
    else:
        rec = "computed torque"
    i, j = best[1]
    qtxt = "[" + ", ".join(f"{x:.3f}" for x in best[2]) + "]"
    head = (f"verdict: max coupling k_ij = {best[0]:.3f} between joints {i + 1} ({names[i]}) and {j + 1} ({names[j]}) "
            f"at q = {qtxt}" if n > 1 else "verdict: one joint, no coupling")
    if n > 1 and np.any(ic.Ia != 0.0):
        head += f" ({best_bare:.3f} without the rotor inertias)"
    head += (f"; max_i sum_j k_ij = {best_row[0]:.3f} (D {'is' if best_row[0] < 1 else 'is not'} diagonally dominant "
             f"over the workspace); d_ii varies by up to x{ratio.max():.2f} (joint {worst + 1}); "
             f"{n_c} nonzero centrifugal/Coriolis and {n_g} configuration-dependent gravitational coefficients.")
    gravity_note = (" with gravity compensation (001 eq. 9.12) or integral action" if n_g else "")
    if rec == "PID":
        tail = (f" -> a decentralized PID with constant gains (001 §9.3.1, eqs. 9.5-9.10, a_j = max d_jj){gravity_note} "
                f"will do: D(q) is nearly diagonal and nearly constant (004 §1, §3.5: k_ij -> 0; thresholds "
                f"sum_j k_ij <= {PID_ROW_COUPLING}, max/min d_ii <= {PID_INERTIA_RATIO:g}).")
    elif rec == "PID at low speed":
        tail = (f" -> a decentralized PID{gravity_note} is acceptable only at low speed (001 §9.3.1: its performance "
                f"varies with the configuration); computed torque (001 §9.4, eq. 9.22) is needed for fast, accurate "
                f"tracking (thresholds sum_j k_ij <= {PID_ROW_COUPLING}, max/min d_ii <= {PID_INERTIA_RATIO:g} not met).")
    else:
        tail = (" -> computed torque (001 §9.4, eq. 9.22) is needed: D(q) is not diagonally dominant, the joints are "
                "strongly coupled (004 §3.5: k_ij -> 1 tightly coupled), a decentralized PID would see the coupling "
                "as configuration-dependent disturbances (001 §9.3.1).  004 §6 guidelines 2-3 (parallel/orthogonal "
                "axes, decreasing masses) and 001 §9.3.1's high gear ratios reduce it.")
    return InertiaReport(
        robot=str(model.name), joint_names=names, sigma=sig.astype(int), samples=samples, seed=int(seed), Ia=ic.Ia,
        mass=ic.mass, link_mass=link_mass, d_min=d_min, d_max=d_max, k_min=acc["k_min"], k_max=acc["k_max"],
        LF=ic.LF, KF_min=acc["KF_min"], KF_max=acc["KF_max"], G_min=acc["G_min"], G_max=acc["G_max"],
        c_absmax=c_abs, d_zero=d_zero, counts=tuple(counts), zero_gap=gap, max_coupling=best[0], max_pair=best[1],
        max_configuration=best[2], max_coupling_without_rotors=best_bare, row_coupling=best_row[0],
        row_coupling_configuration=best_row[1], inertia_ratio=ratio, guidelines=guidelines, recommendation=rec,
        verdict=head + tail,
    )


# ------------------------------------------------------------------ plot and command line
def plot_inertia_report(report: InertiaReport, path: str | Path) -> Path:
    """Heat maps (matplotlib, Agg): max k_ij over the samples (004 eq. 32) and the ranges of d_ij."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = report.dof
    labels = [f"{i + 1} {nm}" for i, nm in enumerate(report.joint_names)]
    fig, axes = plt.subplots(1, 2, figsize=(6.0 + 1.4 * n, 2.8 + 0.6 * n), constrained_layout=True)
    kmax = np.where(np.eye(n, dtype=bool), np.nan, report.k_max)
    im = axes[0].imshow(kmax, vmin=0.0, vmax=1.0, cmap="viridis")
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    axes[0].set_title(f"max coupling k_ij over {report.samples} samples (004 eq. 32)")
    span = np.maximum(np.abs(report.d_min), np.abs(report.d_max))
    with np.errstate(invalid="ignore", divide="ignore"):
        variation = np.where((span > 0) & ~report.d_zero, (report.d_max - report.d_min) / span, 0.0)
    im2 = axes[1].imshow(variation, vmin=0.0, vmax=2.0, cmap="magma")
    fig.colorbar(im2, ax=axes[1], shrink=0.8)
    axes[1].set_title("d_ij range [min, max]; colour (max-min)/max|d_ij|")
    for i in range(n):
        for j in range(n):
            if i != j:
                axes[0].text(j, i, "0" if report.d_zero[i, j] else f"{report.k_max[i, j]:.2f}", ha="center",
                             va="center", fontsize=8, color="white" if report.k_max[i, j] < 0.6 else "black")
            text = "0\n(structural)" if report.d_zero[i, j] else f"{report.d_min[i, j]:.3g}\n{report.d_max[i, j]:.3g}"
            axes[1].text(j, i, text, ha="center", va="center", fontsize=7,
                         color="white" if variation[i, j] < 1.2 else "black")
    for ax in axes:
        ax.set_xticks(range(n), labels, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(n), labels, fontsize=8)
    fig.suptitle(f"{report.robot}: inertial characteristics (Tourassis & Neuman), sparsity {report.sparsity:.3f}")
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def inertia_report_cli(args: Any, model: RobotData) -> int:
    """``robot-dynamics inertia-report ROBOT [--samples N] [--seed S] [--plot PNG] [--json]`` on the loaded model."""
    import json

    report = inertia_report(model, samples=args.samples, seed=args.seed)
    if args.plot:
        plot_inertia_report(report, args.plot)
    if getattr(args, "json", False):
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(report.text())
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0
