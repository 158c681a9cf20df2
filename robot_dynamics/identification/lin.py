"""Lin's sequential identification: one joint moving at a time, composite bodies from the tip (seed 003).

Notation of 003 in Khalil's frames (003 eqs. 3–4 are the MDH transforms with β = α, b = d, d = r):
composite body i = links i..n; its mass m̂_i (5), first moment ĉ_i (6) and inertia Ĵ_i (7) about
O_i in frame i split into constant and varying parts (Lemma 1, eqs. 12–13)::

    ĉ_i = k_i + ℓ_i(q),      Ĵ_i = U_i + V_i(q)

with k_n = m_n c_n (14, errata 48), U_n = J_n (16) and, for i < n, eqs. (18)/(20) (revolute joint
i+1) or (22)/(24) (prismatic joint i+1) for the constants, (19)/(21) or (23)/(25) for the varying
parts.  :func:`inertia_constants` evaluates the constants from the standard parameters,
:func:`varying_parts` the varying parts from (already estimated) constants of the outer bodies
(Algorithm 1; for a prismatic joint (25) is evaluated as Ĵ_i − U_i of the two-body merge, which
avoids the long expanded form (36)).

:func:`lin_identify` is Algorithm 2 (steps 2 and 3): from joint n down to s, the torque of joint j
while joint r alone moves (critically damped step (64)–(66), samples at chosen instants) at several
configurations of joint j (revolute j: the seven constants of (56)) or of joint s (prismatic j: k_j
and m̂_j by (61)), each least-squares fit using the varying parts computed from the constants
estimated before; a constant whose coefficient vanishes identically (joint j ⟂ joint r: (U_j)_33,
Property 1 1(b)) is then found by rotating joint j alone, (58).  Step 3 (j = s−1 … r) uses (58)
while joint r moves.  The torques come from a "measurement" callable, by default the Newton–Euler
model (as in 003 §4).  Coefficients follow the errata: (51)/(52) with (ω̇)_y + ω_x ω_z and
(ω̇)_x + ω_y ω_z, (57) with a_k.  Supported: r = 1 (the first joint revolute, as the Stanford arm);
translational joints between r and s (step 3.2) are not handled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.inertia import inertia_tensor
from ..model.mdh import PRISMATIC
from ..model.robot_model import RobotModel

__all__ = [
    "LinConstants",
    "LinResult",
    "TABLE_II",
    "inertia_constants",
    "lin_identify",
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


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _huygens(s: np.ndarray, m: float, c: np.ndarray) -> np.ndarray:
    """Inertia about O of a body of mass m and first moment c about O', with O' at s from O (eq. 7)."""
    ss, sc = _skew(s), _skew(c)
    return -m * ss @ ss - ss @ sc - sc @ ss


@dataclass
class LinConstants:
    """Inertia constants m̂_i, k_i (3), U_i (3, 3) of the composite bodies i = 1..n (index i-1)."""

    m: np.ndarray
    k: np.ndarray
    U: np.ndarray

    def value(self, i: int, name: str) -> float:
        """One constant of body i by the names of Table II: m, kx, ky, kz, U11-U22, U33, U12, U13, U23."""
        j = i - 1
        table = {"m": self.m[j], "kx": self.k[j, 0], "ky": self.k[j, 1], "kz": self.k[j, 2],
                 "U11-U22": self.U[j, 0, 0] - self.U[j, 1, 1], "U33": self.U[j, 2, 2], "U12": self.U[j, 0, 1],
                 "U13": self.U[j, 0, 2], "U23": self.U[j, 1, 2]}
        if name not in table:
            raise ValueError(f"unknown inertia constant {name!r}")
        return float(table[name])


def _require_serial(model: RobotModel) -> None:
    """Refuse a model that is not a serial chain: Lin's composite body i is links i..n (003 eq. 5)
    and eqs. 18–25 reduce ^{i}P_{i+1} along z_{i+1} in the serial MDH row (a(j) = j − 1, γ_j = b_j = 0)."""
    branching = [f"{jt.name} (a({j}) = {jt.antecedent})" for j, jt in enumerate(model.joints, start=1)
                 if jt.antecedent != j - 1]
    placed = [f"{jt.name} (gamma = {jt.gamma:.6g}, b = {jt.b:.6g})" for jt in model.joints
              if jt.gamma != 0.0 or jt.b != 0.0]
    if branching or placed:
        def few(items: list[str]) -> str:
            return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        why = "; ".join(x for x in (
            f"joint(s) not carried by the previous one: {few(branching)}" if branching else "",
            f"tree-row parameters gamma/b nonzero: {few(placed)}" if placed else "") if x)
        raise ValueError(
            f"Lin's composite bodies need a serial chain (a(j) = j-1, gamma_j = b_j = 0); {model.name!r} "
            f"{'is a kinematic tree' if branching else 'has tree rows'}: {why}. Convert the chain that is identified, "
            "e.g. RobotModel.from_urdf(..., tip_link=...)"
        )


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
    """(ℓ_j, V_j) at URDF configuration q from the constants of bodies j+1..n (Algorithm 1)."""
    _require_serial(model)
    q = model.check_joint_vector(q)
    n = model.dof
    ell, v = np.zeros(3), np.zeros((3, 3))
    for i in range(n - 1, j - 1, -1):  # from (ℓ_{i+1}, V_{i+1}) to (ℓ_i, V_i)
        rot, s = _link_geometry(model, q, i + 1)
        kk, uu, mh = consts.k[i], consts.U[i], consts.m[i]
        if model.sigma[i] == PRISMATIC:  # (23), (25) = Ĵ_i − U_i of the merge
            b = np.array([model.d[i], 0.0, 0.0])
            e = s - b
            rl = rot @ ell
            c_full = rot @ (kk + ell)
            v = rot @ v @ rot.T + _huygens(s, mh, c_full) - _huygens(b, mh, rot @ kk)
            ell = rl + mh * e
        else:  # (19), (21)
            ell = rot @ (ell + np.array([kk[0], kk[1], 0.0]))
            ut = np.array([[uu[0, 0] - uu[1, 1], uu[0, 1], uu[0, 2]], [uu[0, 1], 0.0, uu[1, 2]],
                           [uu[0, 2], uu[1, 2], 0.0]])
            ss, sl = _skew(s), _skew(ell)
            v = rot @ (v + ut) @ rot.T - ss @ sl - sl @ ss
    return ell, v


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


@dataclass
class LinResult:
    """Estimated constants (NaN where not in the minimal set) and the list of experiments."""

    constants: LinConstants
    identified: dict[int, list[str]]
    experiments: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> dict[int, dict[str, float]]:
        """The identified constants by body, in the layout of Table II."""
        return {i: {nm: self.constants.value(i, nm) for nm in names} for i, names in self.identified.items()}


Measure = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def lin_identify(
    model: RobotModel,
    base_configuration: Any,
    *,
    revolute_values: tuple[float, ...] = (0.7, -0.6, -0.7),
    prismatic_values: tuple[float, ...] = (0.7, -0.7),
    times: tuple[float, ...] = (0.2, 0.3, 0.4),
    measure: Measure | None = None,
    tol: float = 1e-9,
) -> LinResult:
    """Algorithm 2 of 003 (steps 2–3) with joint r = 1 moving by (64)–(66) from ``base_configuration``.

    ``revolute_values``: values of q_j at the configurations for revolute body j (the first is the
    base configuration's, (63)); ``prismatic_values``: values of q_s for a prismatic body j.
    ``measure(q, qd, qdd)`` gives the joint efforts (N, n) (default: the model's Newton–Euler).
    """
    _require_serial(model)
    n = model.dof
    qb = model.check_joint_vector(base_configuration, "base_configuration").astype(float)
    if qb.ndim != 1:
        raise ValueError("base_configuration must be one configuration (n,)")
    if model.sigma[0] == PRISMATIC:
        raise ValueError("lin_identify handles robots whose first joint (r) is revolute")
    measure = measure or model.inverse_dynamics
    ts = np.asarray(times, float)
    frames0 = model.link_frames(qb)
    z1 = frames0[1][:3, 2]
    s = next((j for j in range(2, n + 1) if model.sigma[j - 1] != PRISMATIC
              and np.linalg.norm(np.cross(frames0[j][:3, 2], z1)) > 1e-9), None)
    if s is None:
        raise ValueError("no revolute joint is non-parallel to joint 1")
    est = LinConstants(np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3)))
    identified: dict[int, list[str]] = {}
    experiments: list[dict[str, Any]] = []

    def run(q: np.ndarray, moving: int) -> list[tuple[np.ndarray, float, float, float]]:
        """Samples (q(t), q̇, q̈, τ) while joint ``moving`` alone follows (64)–(66)."""
        qm, qdm, qddm = step_response(q[moving - 1], ts)
        qs = np.repeat(q[None], ts.size, axis=0)
        qs[:, moving - 1] = qm
        qd = np.zeros_like(qs)
        qdd = np.zeros_like(qs)
        qd[:, moving - 1], qdd[:, moving - 1] = qdm, qddm
        tau = np.asarray(measure(qs, qd, qdd))
        experiments.append({"moving": moving, "configuration": q.tolist(), "times": ts.tolist()})
        return [(qs[k], qdm[k], qddm[k], tau[k]) for k in range(ts.size)]

    def solve(a: list[np.ndarray], y: list[float]) -> tuple[np.ndarray, np.ndarray]:
        am, ym = np.array(a), np.array(y)
        scale = np.abs(am).max(axis=0)
        live = scale > tol * max(float(scale.max()), 1e-300)
        x = np.full(am.shape[1], np.nan)
        x[live] = np.linalg.lstsq(am[:, live], ym, rcond=None)[0]
        return x, live

    for j in range(n, s - 1, -1):  # step 2
        rows, rhs = [], []
        if model.sigma[j - 1] == PRISMATIC:
            for val in prismatic_values:
                q = qb.copy()
                q[s - 1] = val
                for qk, qd1, qdd1, tau in run(q, 1):
                    w, wd, a, g = _motion_kinematics(model, qk, 1, qd1, qdd1, j)
                    ell, _ = varying_parts(model, est, qk, j)
                    row = _prismatic_row(w, wd, a, g)
                    rows.append(row)
                    rhs.append(tau[j - 1] * model.sign[j - 1] - row[:3] @ ell)
            x, live = solve(rows, rhs)
            est.k[j - 1], est.m[j - 1] = np.nan_to_num(x[:3]), x[3]
            identified[j] = ["m", "kx", "ky", "kz"]
            continue
        for val in revolute_values:
            q = qb.copy()
            q[j - 1] = val
            for qk, qd1, qdd1, tau in run(q, 1):
                w, wd, a, g = _motion_kinematics(model, qk, 1, qd1, qdd1, j)
                ell, v = varying_parts(model, est, qk, j)
                row = _revolute_row(w, wd, a, g)
                rows.append(row)
                rhs.append(tau[j - 1] * model.sign[j - 1] - row @ _vary_rev(ell, v))
        x, live = solve(rows, rhs)
        x = np.nan_to_num(x)
        u = np.zeros((3, 3))
        u[0, 0], u[2, 2], u[0, 1], u[0, 2], u[1, 2] = x[0], x[1], x[2], x[3], x[4]
        u[1, 0], u[2, 0], u[2, 1] = u[0, 1], u[0, 2], u[1, 2]
        est.U[j - 1], est.k[j - 1, :2] = u, x[5:7]
        if not live[1]:  # joint j ⟂ joint r: (U_j)_33 by rotating joint j alone, (58)
            est.U[j - 1, 2, 2] = _u33_alone(model, est, run(qb.copy(), j), j)
        identified[j] = ["kx", "ky", "U11-U22", "U33", "U12", "U13", "U23"]
    for j in range(s - 1, 0, -1):  # step 3 (revolute j parallel to joint 1): (58) with joint 1 moving
        if model.sigma[j - 1] == PRISMATIC:
            raise ValueError("translational joints between r and s (003 step 3.2) are not supported")
        rows, rhs = [], []
        for qk, qd1, qdd1, tau in run(qb.copy(), 1):
            w, wd, a, g = _motion_kinematics(model, qk, 1, qd1, qdd1, j)
            ell, v = varying_parts(model, est, qk, j)
            row = _revolute_row(w, wd, a, g)[[1, 5, 6]]
            rows.append(row)
            rhs.append(tau[j - 1] * model.sign[j - 1] - row @ np.array([v[2, 2], ell[0], ell[1]]))
        x, live = solve(rows, rhs)
        est.U[j - 1, 2, 2] = x[0]
        names = ["U33"]
        if live[1] or live[2]:
            est.k[j - 1, :2] = np.nan_to_num(x[1:])
            names += ["kx", "ky"]
        identified[j] = names
    return LinResult(est, dict(sorted(identified.items())), experiments)


def _u33_alone(model: RobotModel, est: LinConstants, samples: list[Any], j: int) -> float:
    """(U_j)_33 from (58) with joint j alone moving: τ_j = q̈ (U33 + V33) − g_y ĉ_x + g_x ĉ_y."""
    a, y = [], []
    for qk, _, qdd, tau in samples:
        _, _, _, g = _motion_kinematics(model, qk, j, 0.0, 0.0, j)
        ell, v = varying_parts(model, est, qk, j)
        c = est.k[j - 1] + ell
        a.append(qdd)
        y.append(tau[j - 1] * model.sign[j - 1] + g[1] * c[0] - g[0] * c[1] - qdd * v[2, 2])
    return float(np.linalg.lstsq(np.array(a)[:, None], np.array(y), rcond=None)[0][0])


def lin_stanford_example() -> LinResult:
    """003 §4: the Stanford arm of Figure 2, configuration (62), joint 1 stepped by 30° (64)–(66),
    samples at t = 0.2, 0.3, 0.4 s (estimates to compare with :data:`TABLE_II`)."""
    from ..model.seed_robots import stanford_arm

    model = stanford_arm()
    return lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7])
