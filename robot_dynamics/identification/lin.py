"""Lin's sequential identification: one joint moving at a time, composite bodies from the tip (seed 003).

Notation of 003 in Khalil's frames (003 eqs. 3–4 are the MDH transforms with β = α, b = d, d = r):
composite body i = links i..n; its mass m̂_i (5), first moment ĉ_i (6) and inertia Ĵ_i (7) about
O_i in frame i (:mod:`.lin_composite`, with Renaud's (9)–(11) and the composite Newton–Euler
(44)–(50)) split into constant and varying parts (Lemma 1, eqs. 12–13)::

    ĉ_i = k_i + ℓ_i(q),      Ĵ_i = U_i + V_i(q)

with k_n = m_n c_n (14, errata 48), U_n = J_n (16) and, for i < n, eqs. (18)/(20) (revolute joint
i+1) or (22)/(24) (prismatic joint i+1) for the constants, (19)/(21) or (23)/(25) for the varying
parts.  :func:`inertia_constants` evaluates the constants from the standard parameters,
:func:`varying_parts` the varying parts from (already estimated) constants of the outer bodies
(Algorithm 1), :func:`lin_inertia_matrix` / :func:`lin_gravity_torques` the dynamics from constants
by (9), (11)–(13) (003 §4's verification).

:func:`lin_identify` is Algorithm 2 (steps 1, 2 and 3 with 3(a)(b)(c) and 3.2): joint r (the first
rotational joint) follows the critically damped step (64)–(66) at several configurations and the
torque of joint j gives (56) (rotational j), (61) (translational j after s) or (57) (translational j
between r and s); translational joints move alone for m̂_k (60) and, in step 3(c), for (k_j)_x,y (59);
(58) where a joint rotates alone.  Each fit subtracts the varying parts computed from the constants
estimated before.  The torques come from a "measurement" callable, by default the Newton–Euler model
(as in 003 §4).  Coefficients follow the errata: (51)/(52) with (ω̇)_y + ω_x ω_z and
(ω̇)_x + ω_y ω_z, (57) with a_k and its second combination = −(43).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.inertia import inertia_tensor, skew
from ..model.mdh import PRISMATIC
from ..model.robot_model import RobotModel
from .lin_composite import _require_serial, renaud_gravity_torques, renaud_inertia_matrix

__all__ = [
    "LinConstants",
    "LinResult",
    "TABLE_II",
    "combination_constants",
    "composite_from_constants",
    "inertia_constants",
    "lin_gravity_torques",
    "lin_identify",
    "lin_inertia_matrix",
    "lin_stanford_example",
    "step_response",
    "varying_parts",
]

# 003 Table II (identified inertia constants of the Stanford arm); None = not in the minimal set
TABLE_II: dict[int, dict[str, float]] = {
    1: {"U33": 1.0144},
    2: {"kx": -0.00001, "ky": 2.7400, "U11-U22": 4.3850, "U33": 4.4053, "U12": 0.00003, "U13": 0.0, "U23": -0.00003},
    3: {"m": 6.4700, "kx": 0.0, "ky": 0.0, "kz": -2.7400},
    4: {"kx": 0.0099, "ky": 0.0058, "U11-U22": -0.0235, "U33": 0.0044, "U12": -0.00005, "U13": 0.0, "U23": 0.0},
    5: {"kx": 0.0, "ky": -0.1149, "U11-U22": 0.0270, "U33": 0.0277, "U12": 0.0, "U13": 0.0, "U23": 0.0},
    6: {"kx": 0.0, "ky": 0.0, "U11-U22": 0.0, "U33": 0.0003, "U12": 0.0, "U13": 0.0, "U23": 0.0},
}


def _huygens(s: np.ndarray, m: float, c: np.ndarray) -> np.ndarray:
    """Inertia about O of a body of mass m and first moment c about O', with O' at s from O (eq. 7)."""
    ss, sc = skew(s), skew(c)
    return -m * ss @ ss - ss @ sc - sc @ ss


@dataclass
class LinConstants:
    """Inertia constants m̂_i, k_i (3), U_i (3, 3) of the composite bodies i = 1..n (index i-1).

    ``axis`` (n, 3), optional: u_r^(i) of the translational bodies between r and s, for the two
    combinations of Theorem 2 item 5 (NaN rows elsewhere)."""

    m: np.ndarray
    k: np.ndarray
    U: np.ndarray
    axis: np.ndarray | None = None

    def value(self, i: int, name: str) -> float:
        """One constant of body i by the names of Table II: m, kx, ky, kz, U11-U22, U33, U12, U13, U23,
        and c40, c43 (Theorem 2 item 5, eqs. 40 and 43; need ``axis``)."""
        j = i - 1
        if name in ("c40", "c43"):
            if self.axis is None or not np.all(np.isfinite(self.axis[j])):
                raise ValueError(f"body {i}: no u_r^(i) stored for the combination {name!r}")
            return combination_constants(self.k[j], self.axis[j])[name == "c43"]
        table = {"m": self.m[j], "kx": self.k[j, 0], "ky": self.k[j, 1], "kz": self.k[j, 2],
                 "U11-U22": self.U[j, 0, 0] - self.U[j, 1, 1], "U33": self.U[j, 2, 2], "U12": self.U[j, 0, 1],
                 "U13": self.U[j, 0, 2], "U23": self.U[j, 1, 2]}
        if name not in table:
            raise ValueError(f"unknown inertia constant {name!r}")
        return float(table[name])


def _link_geometry(model: RobotModel, q: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray]:
    """(^{i-1}R_i, position of O_i in frame i-1) of MDH joint i (1-based) at URDF q."""
    t = model.joint_transforms(q)[i - 1]
    return t[:3, :3], t[:3, 3]


def inertia_constants(model: RobotModel) -> LinConstants:
    """m̂_i, k_i, U_i from the standard parameters (Lemma 1: eqs. 5, 14, 16, 18, 20, 22, 24)."""
    _require_serial(model)
    n = model.dof
    m, k, u = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
    q0 = np.zeros(n)
    for i in range(n, 0, -1):
        row = model.inertial[i - 1]
        m[i - 1], k[i - 1], u[i - 1] = row[9], row[6:9], inertia_tensor(row)
        if i == n:
            continue
        rot, s = _link_geometry(model, q0, i + 1)
        mh, kk, uu = m[i], k[i], u[i]
        m[i - 1] += mh
        if model.sigma[i] == PRISMATIC:  # (22), (24): s reduced to b = (d, 0, 0)
            b = np.array([model.d[i], 0.0, 0.0])
            rk = rot @ kk
            k[i - 1] += mh * b + rk
            u[i - 1] += rot @ uu @ rot.T + _huygens(b, mh, rk)
        else:  # (18), (20): R diag(U22, U22, U33) R^T and R_b (k)_z are invariant under rotation about z
            rb = rot[:, 2] * kk[2]
            k[i - 1] += mh * s + rb
            u[i - 1] += rot @ np.diag([uu[1, 1], uu[1, 1], uu[2, 2]]) @ rot.T + _huygens(s, mh, rb)
    return LinConstants(m, k, u)


def varying_parts(model: RobotModel, consts: LinConstants, q: Any, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(ℓ_j, V_j) at URDF configuration q from the constants of bodies j+1..n (Lemma 1, Algorithm 1).

    Rotational joint i+1: (19) ℓ_i = R(ℓ_{i+1} + [k_x, k_y, 0]), (21) V_i = R(V_{i+1} + Ũ_{i+1})R^T
    − [s×][ℓ_i×] − [ℓ_i×][s×] (Ũ: the (U11 − U22), U12, U13, U23 entries).  Translational joint i+1:
    (23) ℓ_i = R(ℓ_{i+1} + [0, 0, m̂_{i+1} d_{i+1}]) and (25), read with the bracket the extraction lost,
    V_i = R(V_{i+1} − m̂[d×]² − m̂[d×][b×] − m̂[b×][d×] − [d×][ĉ×] − [ĉ×][d×] − [b×][ℓ_{i+1}×]
    − [ℓ_{i+1}×][b×])R^T with b = b_{i+1}^(i+1), d = d_{i+1}^(i+1) (27)–(28), ĉ = ĉ_{i+1}^(i+1) (12)."""
    _require_serial(model)
    q = model.check_joint_vector(q)
    n = model.dof
    ell, v = np.zeros(3), np.zeros((3, 3))
    for i in range(n - 1, j - 1, -1):  # from (ℓ_{i+1}, V_{i+1}) to (ℓ_i, V_i)
        rot, s = _link_geometry(model, q, i + 1)
        kk, uu, mh = consts.k[i], consts.U[i], consts.m[i]
        if model.sigma[i] == PRISMATIC:  # (23), (25)
            b = rot.T @ np.array([model.d[i], 0.0, 0.0])  # b_{i+1}^(i+1) = [b C(theta), -b S(theta), 0] (27)
            d = np.array([0.0, 0.0, (rot.T @ s)[2]])  # d_{i+1}^(i+1) (28): d = d' + q (MDH r)
            sb, sd, sc, sl = skew(b), skew(d), skew(kk + ell), skew(ell)
            v = rot @ (v - mh * sd @ sd - mh * sd @ sb - mh * sb @ sd - sd @ sc - sc @ sd - sb @ sl - sl @ sb) @ rot.T
            ell = rot @ (ell + np.array([0.0, 0.0, mh * d[2]]))
        else:  # (19), (21)
            ell = rot @ (ell + np.array([kk[0], kk[1], 0.0]))
            ut = np.array([[uu[0, 0] - uu[1, 1], uu[0, 1], uu[0, 2]], [uu[0, 1], 0.0, uu[1, 2]],
                           [uu[0, 2], uu[1, 2], 0.0]])
            ss, sl = skew(s), skew(ell)
            v = rot @ (v + ut) @ rot.T - ss @ sl - sl @ ss
    return ell, v


def composite_from_constants(model: RobotModel, consts: LinConstants, q: Any) -> tuple[
        np.ndarray, np.ndarray, np.ndarray]:
    """(m̂, ĉ, Ĵ) of every composite body at URDF q from inertia constants: ĉ_i = k_i + ℓ_i (12),
    Ĵ_i = U_i + V_i (13), ℓ_i and V_i by :func:`varying_parts` (m̂_i as stored: only K_i m̂_i acts, (9), (11))."""
    parts = [varying_parts(model, consts, q, j) for j in range(1, model.dof + 1)]
    return (np.array(consts.m, float), consts.k + np.array([p[0] for p in parts]),
            consts.U + np.array([p[1] for p in parts]))


def lin_inertia_matrix(model: RobotModel, consts: LinConstants, q: Any) -> np.ndarray:
    """H(q) (URDF coordinates) by Renaud's (9) from inertia constants and (12)–(13): 003 §4's check,
    with the constants outside Theorem 2 set to zero it must equal the true inertia matrix."""
    return renaud_inertia_matrix(model, q, composite_from_constants(model, consts, q))


def lin_gravity_torques(model: RobotModel, consts: LinConstants, q: Any) -> np.ndarray:
    """τ^g(q) (URDF coordinates) by (11) from inertia constants and (12)–(13) (003 §4's check)."""
    return renaud_gravity_torques(model, q, composite_from_constants(model, consts, q))


def combination_constants(k: Any, u: Any) -> tuple[float, float]:
    """Theorem 2 item 5 for a translational body i between r and s, u = u_r^(i):
    (40) −u_y k_x + u_x k_y and (43) −u_z (u_x k_x + u_y k_y) + (1 − u_z²) k_z.  (57)'s second
    coefficient is the negative of (43) (errata 51)."""
    kx, ky, kz = np.asarray(k, float)
    ux, uy, uz = np.asarray(u, float)
    return float(-uy * kx + ux * ky), float(-uz * (ux * kx + uy * ky) + (1.0 - uz**2) * kz)


def step_response(q0: float, t: np.ndarray, amplitude: float = math.pi / 6, sigma: float = 10.0) -> tuple[
        np.ndarray, np.ndarray, np.ndarray]:
    """Critically damped step of one joint, 003 eqs. (64)–(66)."""
    e = np.exp(-sigma * t)
    return (q0 + amplitude * (1 - (1 + sigma * t) * e), amplitude * sigma**2 * t * e,
            amplitude * (1 - sigma * t) * sigma**2 * e)


def _motion_kinematics(model: RobotModel, q: np.ndarray, moving: int, qd: float, qdd: float, j: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ω_j, ω̇_j, a_j (acceleration of O_j) and g in frame j when joint ``moving`` alone moves (53)–(55)."""
    frames = model.link_frames(q)
    r0j = frames[j][:3, :3]
    g = r0j.T @ (model.base_transform[:3, :3].T @ model.gravity)
    axis = frames[moving][:3, 2] * model.sign[moving - 1]  # URDF joint rate along z_moving
    if model.sigma[moving - 1] == PRISMATIC:
        zero = np.zeros(3)
        return zero, zero, r0j.T @ axis * qdd, g
    u = r0j.T @ axis
    p = r0j.T @ (frames[j][:3, 3] - frames[moving][:3, 3])
    w, wd = u * qd, u * qdd
    return w, wd, np.cross(wd, p) + np.cross(w, np.cross(w, p)), g


def _revolute_row(w: np.ndarray, wd: np.ndarray, a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Coefficients of (Ĵ11−Ĵ22, Ĵ33, Ĵ12, Ĵ13, Ĵ23, ĉx, ĉy) in τ_j = z·t_Ej (49), i.e. (51)/(56)."""
    ag = a - g
    return np.array([-w[0] * w[1], wd[2], w[0] ** 2 - w[1] ** 2, wd[0] - w[1] * w[2], wd[1] + w[0] * w[2],
                     ag[1], -ag[0]])


def _prismatic_row(w: np.ndarray, wd: np.ndarray, a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Coefficients of (ĉx, ĉy, ĉz, m̂) in τ_k = z·f_Ek (48), i.e. (52)/(61)."""
    return np.array([-wd[1] + w[0] * w[2], wd[0] + w[1] * w[2], -(w[0] ** 2 + w[1] ** 2), a[2] - g[2]])


def _vary_rev(ell: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.array([v[0, 0] - v[1, 1], v[2, 2], v[0, 1], v[0, 2], v[1, 2], ell[0], ell[1]])


def _row_57(u: np.ndarray, qd: float, qdd: float, a: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(57), translational joint k while rotational joint i alone moves (MDH rates q̇_i, q̈_i; u = u_i^(k)):
    coefficients of ℓ_k and of [(40), (57)'s second combination = −(43), m̂_k], with a = a_k (errata 51)."""
    ux, uy, uz = u
    ell = np.array([-uy * qdd + ux * uz * qd**2, ux * qdd + uy * uz * qd**2, -(ux**2 + uy**2) * qd**2])
    return ell, np.array([qdd, qd**2, a[2] - g[2]])


def _row_59(u: np.ndarray, qdd: float, g: np.ndarray) -> np.ndarray:
    """(59), rotational joint j while translational joint k alone moves (u = u_k^(j), MDH q̈_k):
    coefficients of [(k_j + ℓ_j)_x, (k_j + ℓ_j)_y]."""
    return np.array([u[1] * qdd - g[1], -u[0] * qdd + g[0]])


def _row_60(qdd: float, g: np.ndarray) -> float:
    """(60), translational joint k alone moving: τ_k = m̂_k [q̈_k − (g^(k))_z]."""
    return float(qdd - g[2])


@dataclass
class LinResult:
    """Estimated constants (zero where not in the minimal set), the set identified per body, the
    experiments, joints r and s of Theorem 2 (s = n + 1 if every rotational joint is parallel to r)
    and, per body, the step of Algorithm 2 that identified it."""

    constants: LinConstants
    identified: dict[int, list[str]]
    experiments: list[dict[str, Any]] = field(default_factory=list)
    r: int = 1
    s: int = 2
    steps: dict[int, str] = field(default_factory=dict)

    def table(self) -> dict[int, dict[str, float]]:
        """The identified constants by body, in the layout of Table II."""
        return {i: {nm: self.constants.value(i, nm) for nm in names} for i, names in self.identified.items()}


Measure = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
PARALLEL_TOL = 1e-9  # |a × b| below which unit axes are parallel (and a distance in m is zero or parallel)


def _parallel(a: np.ndarray, b: np.ndarray) -> bool:
    """a ∥ b (or a = 0); b a unit axis."""
    return bool(np.linalg.norm(np.cross(a, b)) <= PARALLEL_TOL)


def lin_identify(
    model: RobotModel,
    base_configuration: Any,
    *,
    revolute_values: tuple[float, ...] = (0.7, -0.6, -0.7),
    prismatic_values: tuple[float, ...] = (0.7, -0.7),
    times: tuple[float, ...] = (0.2, 0.3, 0.4),
    measure: Measure | None = None,
    tol: float = 1e-9,
    step1: bool = False,
    prismatic_amplitude: float = 0.05,
) -> LinResult:
    """Algorithm 2 of 003: one joint moving at a time by the critically damped step (64)–(66).

    r = the first rotational joint, s = the nearest rotational joint not parallel to r (Theorem 2).

    * Step 1, (60): each translational joint k alone moves by ``prismatic_amplitude`` (m); m̂_k.  Always
      for k < s (joints before r and between r and s need it); for k > s only with ``step1=True``
      (003 §4 skips it and finds m̂_k with k_k by (61)).
    * Step 2, j = n..s: rotational j, joint r (or, if j ∥ r, the nearest rotational joint not parallel to
      j) rotates at the configurations q_j ∈ ``revolute_values`` (the first is the base configuration's,
      (63)): the seven constants of (56); (U_j)_33 by (58) rotating joint j alone if j ⟂ r (Property 1
      1(b)).  Translational j: joint r rotates at q_s ∈ ``prismatic_values``: k_j (and m̂_j) by (61).
    * Step 3, j = s−1..r.  Rotational j: (a) u_r ∦ g: rotate r, (56)/(58), (U_j)_33, (k_j)_x, (k_j)_y;
      (b) u_r ∥ g and some rotational joint i (r ≤ i < j) with ^i_j s ∦ u_j: rotate i, (56), the same three;
      (c) otherwise rotate r for (U_j)_33 only, and if a translational joint k < j is not parallel to j
      (δ_j = 1), move k at the configurations q_j ∈ ``revolute_values`` for (k_j)_x, (k_j)_y by (59).
      (a) and (b) use the configurations q_j ∈ ``revolute_values`` ((b) needs them: at one
      configuration the columns of (56) span only {q̈_i, q̇_i²}).  Translational j (3.2): rotate r,
      (57) for the combinations (40) and (43) of k_j (given m̂_j from step 1); none if u_r ∥ u_j (σ_j = 0).

    Constants outside Theorem 2's set stay 0; for a translational body between r and s, k_j is the
    minimum-norm vector with the identified (40), (43) (only these act, 003 eq. 41).  Parallelism is
    judged at ``base_configuration``.  δ_j counts every translational joint k < j, also those before r
    (the printed "∀ k < j < s"; errata 53's "r ≤ k < j" would drop k_j for a rail before joint r).
    ``measure(q, qd, qdd)`` gives the joint efforts (N, n) (default: the model's Newton–Euler, which
    includes rotor inertia and friction if the model has them — Lin's model has neither).
    Raises ValueError when an experiment is not persistently exciting.
    """
    _require_serial(model)
    n = model.dof
    qb = model.check_joint_vector(base_configuration, "base_configuration").astype(float)
    if qb.ndim != 1:
        raise ValueError("base_configuration must be one configuration (n,)")
    if not (math.isfinite(prismatic_amplitude) and prismatic_amplitude != 0.0):
        raise ValueError("prismatic_amplitude must be finite and nonzero")
    measure = measure or model.inverse_dynamics
    ts = np.asarray(times, float)
    sign = model.sign
    frames0 = model.link_frames(qb)
    z = frames0[1:, :3, 2]
    pos = frames0[1:, :3, 3]
    g0 = model.base_transform[:3, :3].T @ model.gravity
    rotational = [j for j in range(1, n + 1) if model.sigma[j - 1] != PRISMATIC]
    if not rotational:
        raise ValueError("Lin's method needs a rotational joint (joint r of Theorem 2); this robot has none")
    r = rotational[0]
    s = next((j for j in rotational if not _parallel(z[j - 1], z[r - 1])), n + 1)
    ur_g = _parallel(g0, z[r - 1])
    est = LinConstants(np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3)), np.full((n, 3), np.nan))
    identified: dict[int, list[str]] = {}
    steps: dict[int, str] = {}
    experiments: list[dict[str, Any]] = []

    def run(q: np.ndarray, moving: int) -> list[tuple[np.ndarray, float, float, np.ndarray]]:
        """Samples (q(t), q̇, q̈ (URDF), τ) while joint ``moving`` alone follows (64)–(66)."""
        amp = prismatic_amplitude if model.sigma[moving - 1] == PRISMATIC else math.pi / 6
        qm, qdm, qddm = step_response(q[moving - 1], ts, amp)
        qs = np.repeat(q[None], ts.size, axis=0)
        qs[:, moving - 1] = qm
        qd = np.zeros_like(qs)
        qdd = np.zeros_like(qs)
        qd[:, moving - 1], qdd[:, moving - 1] = qdm, qddm
        tau = np.asarray(measure(qs, qd, qdd))
        experiments.append({"moving": moving, "configuration": q.tolist(), "times": ts.tolist()})
        return [(qs[k], qdm[k], qddm[k], tau[k]) for k in range(ts.size)]

    def solve(a: list[Any], y: list[float], what: str, may_vanish: tuple[int, ...] = ()) -> tuple[
            np.ndarray, np.ndarray]:
        am, ym = np.array(a, float).reshape(len(y), -1), np.array(y)
        scale = np.abs(am).max(axis=0)
        live = scale > tol * max(float(scale.max()), 1e-300)
        dead = [c for c in np.flatnonzero(~live) if c not in may_vanish]
        sv = np.linalg.svd(am[:, live] / scale[live], compute_uv=False) if live.any() else np.zeros(0)
        if dead or not live.any() or sv.size < live.sum() or sv[-1] < 1e-8 * sv[0]:
            raise ValueError(f"{what}: the experiment is not persistently exciting (column(s) {dead} vanish, "
                             f"singular values {sv}); choose other configurations or times")
        x = np.full(am.shape[1], np.nan)
        x[live] = np.linalg.lstsq(am[:, live], ym, rcond=None)[0]
        return x, live

    def frame_vectors(q: np.ndarray, j: int, vectors: np.ndarray) -> np.ndarray:
        return model.link_frames(q)[j][:3, :3].T @ vectors

    # step 1: m̂_k of translational joints by (60)
    for k in range(1, n + 1):
        if model.sigma[k - 1] != PRISMATIC or (k > s and not step1):
            continue
        rows, rhs = [], []
        for qk, _, qdd, tau in run(qb.copy(), k):
            rows.append([_row_60(sign[k - 1] * qdd, frame_vectors(qk, k, g0))])
            rhs.append(sign[k - 1] * tau[k - 1])
        est.m[k - 1] = solve(rows, rhs, f"step 1, body {k}")[0][0]
        identified[k], steps[k] = ["m"], "1 (60)"

    for j in range(n, s - 1, -1):  # step 2
        if model.sigma[j - 1] == PRISMATIC:  # 2.2, (61)
            known = j in identified
            rows, rhs = [], []
            for val in prismatic_values:
                q = qb.copy()
                q[s - 1] = val
                for qk, qd1, qdd1, tau in run(q, r):
                    w, wd, a, g = _motion_kinematics(model, qk, r, qd1, qdd1, j)
                    ell, _ = varying_parts(model, est, qk, j)
                    row = _prismatic_row(w, wd, a, g)
                    y = tau[j - 1] * sign[j - 1] - row[:3] @ ell
                    if known:
                        y -= row[3] * est.m[j - 1]
                    rows.append(row[:3] if known else row)
                    rhs.append(y)
            x, _ = solve(rows, rhs, f"step 2.2, body {j}")
            est.k[j - 1] = x[:3]
            if not known:
                est.m[j - 1] = x[3]
            identified[j] = ["m", "kx", "ky", "kz"]
            steps[j] = "1 (60) + 2.2 (61)" if known else "2.2 (61)"
            continue
        moving = r if not _parallel(z[j - 1], z[r - 1]) else next(
            i for i in rotational if i < j and not _parallel(z[i - 1], z[j - 1]))
        rows, rhs = [], []
        for val in revolute_values:
            q = qb.copy()
            q[j - 1] = val
            for qk, qd1, qdd1, tau in run(q, moving):
                w, wd, a, g = _motion_kinematics(model, qk, moving, qd1, qdd1, j)
                ell, v = varying_parts(model, est, qk, j)
                row = _revolute_row(w, wd, a, g)
                rows.append(row)
                rhs.append(tau[j - 1] * sign[j - 1] - row @ _vary_rev(ell, v))
        x, live = solve(rows, rhs, f"step 2.1, body {j} (joint {moving} moving)", may_vanish=(1,))
        x = np.nan_to_num(x)
        u = np.zeros((3, 3))
        u[0, 0], u[2, 2], u[0, 1], u[0, 2], u[1, 2] = x[0], x[1], x[2], x[3], x[4]
        u[1, 0], u[2, 0], u[2, 1] = u[0, 1], u[0, 2], u[1, 2]
        est.U[j - 1], est.k[j - 1, :2] = u, x[5:7]
        steps[j] = f"2.1 (56), joint {moving}"
        if not live[1]:  # joint j ⟂ joint moving: (U_j)_33 by rotating joint j alone, (58)
            est.U[j - 1, 2, 2] = _u33_alone(model, est, run(qb.copy(), j), j)
            steps[j] += " + (58)"
        identified[j] = ["kx", "ky", "U11-U22", "U33", "U12", "U13", "U23"]

    for j in range(min(s, n + 1) - 1, r - 1, -1):  # step 3
        if model.sigma[j - 1] == PRISMATIC:  # 3.2, (57) with m̂_j from step 1
            u_r = frame_vectors(qb, j, z[r - 1])
            if _parallel(u_r, np.array([0.0, 0.0, 1.0])):  # σ_j = 0: k_j does not act
                continue
            rows, rhs = [], []
            for qk, qd1, qdd1, tau in run(qb.copy(), r):
                _, _, a, g = _motion_kinematics(model, qk, r, qd1, qdd1, j)
                ell, _ = varying_parts(model, est, qk, j)
                c_ell, c_k = _row_57(u_r, sign[r - 1] * qd1, sign[r - 1] * qdd1, a, g)
                rows.append(c_k[:2])
                rhs.append(tau[j - 1] * sign[j - 1] - c_ell @ ell - c_k[2] * est.m[j - 1])
            x, _ = solve(rows, rhs, f"step 3.2, body {j}")
            c40, c43 = x[0], -x[1]  # (57)'s second combination is −(43)
            comb = np.array([[-u_r[1], u_r[0], 0.0], [-u_r[2] * u_r[0], -u_r[2] * u_r[1], 1.0 - u_r[2] ** 2]])
            est.k[j - 1] = np.linalg.lstsq(comb, np.array([c40, c43]), rcond=None)[0]
            est.axis[j - 1] = u_r
            identified[j] += ["c40", "c43"]
            steps[j] += " + 3.2 (57)"
            continue
        delta = not (ur_g and all(_parallel(z[k - 1], z[r - 1]) for k in range(1, j))
                     and all(_parallel(pos[j - 1] - pos[m - 1], z[r - 1]) for m in rotational if r <= m < j))
        others = [i for i in rotational if r <= i < j and not _parallel(pos[j - 1] - pos[i - 1], z[j - 1])]
        if not ur_g or others:  # 3(a) / 3(b)
            moving = r if not ur_g else others[0]
            rows, rhs = [], []
            for val in revolute_values:
                q = qb.copy()
                q[j - 1] = val
                for qk, qd1, qdd1, tau in run(q, moving):
                    w, wd, a, g = _motion_kinematics(model, qk, moving, qd1, qdd1, j)
                    ell, v = varying_parts(model, est, qk, j)
                    row = _revolute_row(w, wd, a, g)[[1, 5, 6]]
                    rows.append(row)
                    rhs.append(tau[j - 1] * sign[j - 1] - row @ np.array([v[2, 2], ell[0], ell[1]]))
            case = "3(a)" if not ur_g else "3(b)"
            x, _ = solve(rows, rhs, f"step {case}, body {j} (joint {moving} moving)")
            est.U[j - 1, 2, 2], est.k[j - 1, :2] = x[0], x[1:]
            identified[j], steps[j] = ["U33", "kx", "ky"], f"{case} ({58 if moving == j else 56}), joint {moving}"
            continue
        rows, rhs = [], []  # 3(c): (U_j)_33 rotating r, (56)/(58)
        for qk, qd1, qdd1, tau in run(qb.copy(), r):
            w, wd, a, g = _motion_kinematics(model, qk, r, qd1, qdd1, j)
            _, v = varying_parts(model, est, qk, j)
            c = _revolute_row(w, wd, a, g)[1]
            rows.append([c])
            rhs.append(tau[j - 1] * sign[j - 1] - c * v[2, 2])
        est.U[j - 1, 2, 2] = solve(rows, rhs, f"step 3(c), body {j}")[0][0]
        identified[j], steps[j] = ["U33"], f"3(c) ({58 if r == j else 56}), joint {r}"
        if not delta:
            continue
        k_move = max(k for k in range(1, j) if model.sigma[k - 1] == PRISMATIC and not _parallel(z[k - 1], z[j - 1]))
        rows, rhs = [], []
        for val in revolute_values:
            q = qb.copy()
            q[j - 1] = val
            for qk, _, qdd1, tau in run(q, k_move):
                fr = model.link_frames(qk)[j][:3, :3].T
                ell, _ = varying_parts(model, est, qk, j)
                row = _row_59(fr @ model.link_frames(qk)[k_move][:3, 2], sign[k_move - 1] * qdd1, fr @ g0)
                rows.append(row)
                rhs.append(tau[j - 1] * sign[j - 1] - row @ ell[:2])
        est.k[j - 1, :2] = solve(rows, rhs, f"step 3(c), body {j} (joint {k_move} moving, (59))")[0]
        identified[j] += ["kx", "ky"]
        steps[j] += f" + (59), joint {k_move}"
    return LinResult(est, dict(sorted(identified.items())), experiments, r, s, dict(sorted(steps.items())))


def _u33_alone(model: RobotModel, est: LinConstants, samples: list[Any], j: int) -> float:
    """(U_j)_33 from (58) with joint j alone moving: τ_j = q̈ (U33 + V33) − g_y ĉ_x + g_x ĉ_y."""
    a, y = [], []
    for qk, _, qdd, tau in samples:
        _, _, _, g = _motion_kinematics(model, qk, j, 0.0, 0.0, j)
        ell, v = varying_parts(model, est, qk, j)
        c = est.k[j - 1] + ell
        qdd_m = model.sign[j - 1] * qdd
        a.append(qdd_m)
        y.append(tau[j - 1] * model.sign[j - 1] + g[1] * c[0] - g[0] * c[1] - qdd_m * v[2, 2])
    return float(np.linalg.lstsq(np.array(a)[:, None], np.array(y), rcond=None)[0][0])


def lin_stanford_example() -> LinResult:
    """003 §4: the Stanford arm of Figure 2, configuration (62), joint 1 stepped by 30° (64)–(66),
    samples at t = 0.2, 0.3, 0.4 s (estimates to compare with :data:`TABLE_II`)."""
    from ..model.seed_robots import stanford_arm

    model = stanford_arm()
    return lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7])
