"""Lin's method (seed 003), the parts beyond the Stanford example: Renaud's composite-body formulas
(5)–(11), (44)–(50) vs Pinocchio; Lemma 1 vs Pinocchio composites; Algorithm 2 steps 1 (60), 3(a)(b)(c)
with (59), 3.2 (57), a prismatic first joint and all-parallel rotational joints (no s), on noise-free
data from Pinocchio's rnea (cross-checked with the project's Newton–Euler).

Oracles: Pinocchio (crba + composite inertias data.oYcrb, computeGeneralizedGravity, rnea); Lin's
constants written by hand from the standard parameters XX XY XZ YY YZ ZZ MX MY MZ M for small robots
(eqs. 14, 16, 18, 20 expanded); k_i as the average of Pinocchio's composite first moment over the
rotational angles of joints > i with the prismatic joints at MDH r = 0 (ℓ_i averages to 0 there); and
003 §4's own check: the identified set, everything else zero, gives H by (9) and τ^g by (11).
"""

from __future__ import annotations

import math
import time
from itertools import product

import numpy as np
import pinocchio as pin
import pytest
from pinocchio_from_mdh import pinocchio_model, random_inertial, random_model

from robot_dynamics.identification.lin import (
    _motion_kinematics,
    _row_57,
    _row_59,
    _row_60,
    combination_constants,
    composite_from_constants,
    inertia_constants,
    lin_gravity_torques,
    lin_identify,
    lin_inertia_matrix,
    lin_stanford_example,
    varying_parts,
)
from robot_dynamics.identification.lin_composite import (
    composite_bodies,
    composite_central_inertia,
    composite_joint_wrench,
    renaud_gravity_torques,
    renaud_inertia_matrix,
)
from robot_dynamics.model.mdh import PRISMATIC, REVOLUTE
from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.seed_robots import scara, stanford_arm

SEVEN = ["kx", "ky", "U11-U22", "U33", "U12", "U13", "U23"]


# ------------------------------------------------------------------------------------------ helpers
def mdh_robot(rows: list[tuple[int, float, float, float, float, float]], seed: int, gravity: tuple[float, ...],
              name: str = "test") -> RobotModel:
    """Serial robot from rows (sigma, alpha, d, theta, r, sign); random consistent inertias (products ≠ 0)."""
    rng = np.random.default_rng(seed)
    joints = [MDHJoint(name=f"j{k}", antecedent=k - 1, sigma=sg, alpha=al, d=d, theta=th, r=r, sign=sn, link=f"l{k}")
              for k, (sg, al, d, th, r, sn) in enumerate(rows, start=1)]
    frames = {"base_link": (0, np.eye(4)), **{f"l{k}": (k, np.eye(4)) for k in range(1, len(rows) + 1)}}
    return RobotModel(joints=joints, base_link="base_link", tip_link=f"l{len(rows)}", name=name, frames=frames,
                      inertial=np.array([random_inertial(rng) for _ in rows]), gravity=np.array(gravity))


def pin_rnea(model: RobotModel):
    """measure(q, qd, qdd) from Pinocchio's rnea, checked once per call against the project's Newton–Euler."""
    pm = pinocchio_model(model)
    pd = pm.createData()

    def measure(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        tau = np.array([pin.rnea(pm, pd, a, b, c).copy() for a, b, c in zip(q, qd, qdd, strict=True)])
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), tau, atol=1e-10)
        return tau

    return measure


def pin_composite(model: RobotModel, q: np.ndarray) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]:
    """(m̂_i, ĉ_i, Ĵ_i about O_i, Î_i about the COM) in frame i from Pinocchio's composite inertias oYcrb."""
    pm = pinocchio_model(model)
    pd = pm.createData()
    pin.crba(pm, pd, q, pin.Convention.WORLD)
    out = []
    for i in range(1, model.dof + 1):
        y = pd.oMi[i].actInv(pd.oYcrb[i])
        c = y.lever
        out.append((y.mass, y.mass * c, y.inertia - y.mass * pin.skew(c) @ pin.skew(c), y.inertia.copy()))
    return out


def pin_dynamics(model: RobotModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pm = pinocchio_model(model)
    pd = pm.createData()
    h = pin.crba(pm, pd, q, pin.Convention.WORLD)
    return np.triu(h) + np.triu(h, 1).T, pin.computeGeneralizedGravity(pm, pd, q).copy()


def std(model: RobotModel, j: int) -> dict[str, float]:
    return dict(zip(("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M"), model.inertial[j - 1], strict=True))


def check_sufficient(model: RobotModel, res, seed: int, count: int = 4) -> float:
    """003 §4: H by (9) and τ^g by (11) from the identified constants (all others 0) = Pinocchio's."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(count):
        q = rng.uniform(-1.5, 1.5, model.dof)
        h, g = pin_dynamics(model, q)
        h_lin, g_lin = lin_inertia_matrix(model, res.constants, q), lin_gravity_torques(model, res.constants, q)
        worst = max(worst, float(np.abs(h_lin - h).max()), float(np.abs(g_lin - g).max()))
    assert worst < 1e-8, worst
    return worst


def compare(res, expected: dict[int, dict[str, float]], atol: float = 1e-8) -> float:
    table = res.table()
    assert {i: sorted(v) for i, v in table.items()} == {i: sorted(v) for i, v in expected.items()}
    err = max(abs(table[i][k] - v) for i, c in expected.items() for k, v in c.items())
    assert err < atol, (err, table, expected)
    return err


def hand_revolute_pair(p: dict[str, float], nxt: dict[str, float], alpha: float, d: float, r: float,
                       kz_next: float | None = None) -> dict[str, float]:
    """Body i whose successor i+1 is the last link, joint i+1 rotational with MDH (alpha, d, r) — eqs. (18),
    (20), (14), (16) expanded by hand: k_i = (MX_i + d M, MY_i − Sα (r M + MZ)), (U_i)_33 = ZZ_i + S²α YY
    + C²α ZZ + 2 r S²α MZ + (d² + r² S²α) M (M, MZ, YY, ZZ of link i+1)."""
    sa, ca = math.sin(alpha), math.cos(alpha)
    mz = nxt["MZ"] if kz_next is None else kz_next
    return {"kx": p["MX"] + d * nxt["M"], "ky": p["MY"] - sa * (r * nxt["M"] + mz),
            "U33": p["ZZ"] + sa**2 * nxt["YY"] + ca**2 * nxt["ZZ"] + 2 * r * sa**2 * mz + (d**2 + r**2 * sa**2) * nxt["M"]}


def hand_last(p: dict[str, float]) -> dict[str, float]:
    """Last body: k_n = m_n c_n (14, errata 48), U_n = J_n about O_n (16)."""
    return {"kx": p["MX"], "ky": p["MY"], "U11-U22": p["XX"] - p["YY"], "U33": p["ZZ"], "U12": p["XY"],
            "U13": p["XZ"], "U23": p["YZ"]}


# ------------------------------------------------------------------- Renaud / composite bodies (5)–(11), (44)–(50)
def test_composite_bodies_and_renaud_vs_pinocchio():
    """(5)–(7) vs oYcrb, (46) vs the central composite inertia, (9)–(10) vs crba, (11) vs the gravity
    torques, on random serial robots with prismatic joints and URDF signs."""
    rng = np.random.default_rng(3)
    worst = dict.fromkeys(("m", "c", "J", "I", "H", "g"), 0.0)
    for _ in range(6):
        model = random_model(rng, n=int(rng.integers(2, 7)))
        q = rng.uniform(-2, 2, model.dof)
        mh, ch, jh = composite_bodies(model, q)
        for i, (m, c, jj, ic) in enumerate(pin_composite(model, q)):
            worst["m"] = max(worst["m"], abs(mh[i] - m))
            worst["c"] = max(worst["c"], float(np.abs(ch[i] - c).max()))
            worst["J"] = max(worst["J"], float(np.abs(jh[i] - jj).max()))
            worst["I"] = max(worst["I"], float(np.abs(composite_central_inertia(mh[i], ch[i], jh[i]) - ic).max()))
        h, g = pin_dynamics(model, q)
        worst["H"] = max(worst["H"], float(np.abs(renaud_inertia_matrix(model, q) - h).max()))
        worst["g"] = max(worst["g"], float(np.abs(renaud_gravity_torques(model, q) - g).max()))
    print("composite / Renaud vs Pinocchio:", worst)
    assert max(worst.values()) < 1e-12


def test_composite_joint_wrench_vs_rnea():
    """(44)–(49) with joints j+1..n locked: (f_Ej, t_Ej) = Pinocchio rnea's joint wrench data.f[j] and
    z·t_Ej (rotational) or z·f_Ej (translational) = τ_j; and the first line of (49) equals its second line Ĵω̇ + ω×(Ĵω) + ĉ×(a − g) (via (50))."""
    rng = np.random.default_rng(5)
    worst, worst49 = 0.0, 0.0
    for _ in range(4):
        model = random_model(rng, n=5)
        pm = pinocchio_model(model)
        pd = pm.createData()
        q, qd, qdd = (rng.uniform(-2, 2, 5) for _ in range(3))
        for j in range(1, 6):
            lock = np.arange(5) >= j
            tau = pin.rnea(pm, pd, q, np.where(lock, 0.0, qd), np.where(lock, 0.0, qdd))
            f, t = composite_joint_wrench(model, q, qd, qdd, j)
            effort = (f if model.sigma[j - 1] == PRISMATIC else t)[2] * model.sign[j - 1]
            # the whole wrench: Pinocchio's data.f[j], force of the parent on body j in frame j about O_j
            worst = max(worst, abs(effort - tau[j - 1]), float(np.abs(f - pd.f[j].linear).max()),
                        float(np.abs(t - pd.f[j].angular).max()))
    print("composite wrench vs rnea:", worst)
    assert worst < 1e-11
    # (49) second line, for a single moving joint (the form 003 (51) uses): checked against the first
    model = random_model(np.random.default_rng(8), n=4, prismatic=False)
    q = np.array([0.3, -0.4, 0.5, 0.2])
    for moving, j in ((1, 3), (2, 4), (1, 2)):
        qd, qdd = np.zeros(4), np.zeros(4)
        qd[moving - 1], qdd[moving - 1] = 0.7, -1.3
        w, wd, a, g = _motion_kinematics(model, q, moving, 0.7, -1.3, j)
        mh, ch, jh = composite_bodies(model, q)
        c, jj = ch[j - 1], jh[j - 1]
        second = jj @ wd + np.cross(w, jj @ w) + np.cross(c, a - g)
        worst49 = max(worst49, float(np.abs(composite_joint_wrench(model, q, qd, qdd, j)[1] - second).max()))
    assert worst49 < 1e-12


# ------------------------------------------------------------------------------------------ Lemma 1
def test_lemma1_constants_plus_varying_parts_equal_pinocchio_composites():
    """(12)–(13): k_i + ℓ_i(q) = ĉ_i and U_i + V_i(q) = Ĵ_i (Pinocchio), every body, random robots
    with prismatic joints (eqs. 23, 25 literal) and random q."""
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(6):
        model = random_model(rng, n=int(rng.integers(2, 7)))
        consts = inertia_constants(model)
        for q in rng.uniform(-2, 2, (2, model.dof)):
            mh, ch, jh = composite_from_constants(model, consts, q)
            for i, (m, c, jj, _) in enumerate(pin_composite(model, q)):
                worst = max(worst, abs(mh[i] - m), float(np.abs(ch[i] - c).max()), float(np.abs(jh[i] - jj).max()))
    print("Lemma 1 vs Pinocchio composites:", worst)
    assert worst < 1e-12


def test_lemma1_k_is_the_average_first_moment():
    """k_i = mean of ĉ_i (Pinocchio) over the angles of the rotational joints > i (3-point grids, exact for
    the degree-1 trigonometric dependence), prismatic joints > i at MDH r = 0: ℓ_i averages to 0 there."""
    rng = np.random.default_rng(12)
    worst = 0.0
    for _ in range(4):
        model = random_model(rng, n=5)
        consts = inertia_constants(model)
        for i in range(1, 6):
            after = [j for j in range(i + 1, 6)]
            grids = [[0.0, 2 * math.pi / 3, 4 * math.pi / 3] if model.sigma[j - 1] == REVOLUTE else [None]
                     for j in after]
            acc = np.zeros(3)
            count = 0
            for angles in product(*grids):
                mdh = np.zeros(5)
                for j, a in zip(after, angles, strict=True):
                    mdh[j - 1] = a if a is not None else 0.0  # revolute: θ_j = a; prismatic: r_j = 0
                off = np.where(model.sigma == PRISMATIC, model.r, model.theta)
                q = (mdh - off) * model.sign  # URDF q giving these MDH values
                q[: i] = 0.1 * np.arange(1, i + 1)
                acc += pin_composite(model, q)[i - 1][1]
                count += 1
            worst = max(worst, float(np.abs(acc / count - consts.k[i - 1]).max()))
    print("k_i vs averaged Pinocchio first moments:", worst)
    assert worst < 1e-12


# ------------------------------------------------------------------------------- seed rows (57), (59), (60)
def test_rows_57_59_60_give_the_rnea_efforts():
    """(60) τ_k = m̂_k (q̈_k − g_z); (59) τ_j for a translational joint moving; (57) τ_k of a translational
    joint k while rotational joint r moves (with (40), −(43), m̂_k), from the true constants, vs rnea."""
    model = mdh_robot([(REVOLUTE, 0.0, 0.0, 0.0, 0.3, 1.0), (PRISMATIC, 1.2, 0.2, 0.0, 0.1, -1.0),
                       (REVOLUTE, -1.2, 0.15, 0.5, 0.05, 1.0), (REVOLUTE, 0.9, 0.2, 0.2, 0.1, -1.0)],
                      seed=21, gravity=(1.0, -2.0, -9.0))
    pm = pinocchio_model(model)
    pd = pm.createData()
    consts = inertia_constants(model)
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(3):
        q = rng.uniform(-1, 1, 4)
        fr = model.link_frames(q)
        g0 = model.gravity
        # (60): joint 2 (translational) alone
        qd, qdd = np.zeros(4), np.zeros(4)
        qd[1], qdd[1] = 0.4, -0.9
        tau = pin.rnea(pm, pd, q, qd, qdd)
        g2 = fr[2][:3, :3].T @ g0
        worst = max(worst, abs(consts.m[1] * _row_60(-1.0 * qdd[1], g2) - (-1.0) * tau[1]))
        # (59): joint 3 while joint 2 moves, u = u_2^(3)
        u = fr[3][:3, :3].T @ fr[2][:3, 2]
        ell, _ = varying_parts(model, consts, q, 3)
        row = _row_59(u, -1.0 * qdd[1], fr[3][:3, :3].T @ g0)
        worst = max(worst, abs(row @ (consts.k[2, :2] + ell[:2]) - tau[2]))
        # (57): joint 2 while joint 1 (r) rotates, u = u_1^(2)
        qd, qdd = np.zeros(4), np.zeros(4)
        qd[0], qdd[0] = 0.8, 1.1
        tau = pin.rnea(pm, pd, q, qd, qdd)
        u = fr[2][:3, :3].T @ fr[1][:3, 2]
        _, _, a, g = _motion_kinematics(model, q, 1, 0.8, 1.1, 2)
        ell, _ = varying_parts(model, consts, q, 2)
        c_ell, c_k = _row_57(u, 0.8, 1.1, a, g)
        c40, c43 = combination_constants(consts.k[1], u)
        worst = max(worst, abs(c_ell @ ell + c_k @ [c40, -c43, consts.m[1]] - (-1.0) * tau[1]))
    print("(57), (59), (60) vs rnea:", worst)
    assert worst < 1e-11


# ------------------------------------------------------------------------------------- identification
PRR = [(PRISMATIC, 0.0, 0.0, 0.0, 0.2, 1.0), (REVOLUTE, math.pi / 2, 0.3, 0.4, 0.1, -1.0),
       (REVOLUTE, 1.0, 0.25, 0.0, 0.15, 1.0)]


def prr_expected(model: RobotModel) -> dict[int, dict[str, float]]:
    p1, p2, p3 = (std(model, j) for j in (1, 2, 3))
    return {1: {"m": p1["M"] + p2["M"] + p3["M"]}, 2: hand_revolute_pair(p2, p3, 1.0, 0.25, 0.15), 3: hand_last(p3)}


@pytest.mark.parametrize("case", ["a", "c"])
def test_prismatic_first_joint(case):
    """P R R (joint 1 prismatic: r = 2, s = 3), identified to 1e-8 against constants written by hand.
    (a): gravity along z1 (u_r ⟂ g): body 2 by 3(a) with (58).  (c): gravity along z2 (u_r ∥ g, no rotational
    joint before r): (U_2)_33 by 3(c), (k_2)_x,y by moving the prismatic joint 1 (⟂ z2) at three q_2, (59)."""
    gravity = (0.0, 0.0, -9.81) if case == "a" else (0.0, -9.81, 0.0)  # z2 = Rx(π/2) z0 = -y0
    model = mdh_robot(PRR, seed=31, gravity=gravity)
    q0 = np.array([0.05, 0.3, -0.2])
    t0 = time.perf_counter()
    res = lin_identify(model, q0, measure=pin_rnea(model))
    print(f"PRR-{case}: {time.perf_counter() - t0:.2f} s, steps {res.steps}")
    assert (res.r, res.s) == (2, 3)
    step2 = "3(a) (58), joint 2" if case == "a" else "3(c) (58), joint 2 + (59), joint 1"
    assert res.steps == {1: "1 (60)", 2: step2, 3: "2.1 (56), joint 2"}
    err = compare(res, prr_expected(model))
    suff = check_sufficient(model, res, seed=1)
    print(f"PRR-{case}: max |identified - hand| = {err:.2e}, max |H, g (9), (11) - Pinocchio| = {suff:.2e}")


def test_case_c_needs_the_rail_before_r():
    """003 Theorem 2 δ_j counts translational joints before r (the printed "∀ k < j"): with (k_2)_x,y zeroed,
    the P R R robot of case (c) no longer has Pinocchio's inertia matrix (h_12 = [u_y, −u_x, 0]·ĉ_2, (9))."""
    model = mdh_robot(PRR, seed=31, gravity=(0.0, -9.81, 0.0))
    res = lin_identify(model, [0.05, 0.3, -0.2], measure=pin_rnea(model))
    res.constants.k[1, :2] = 0.0
    q = np.array([0.1, 0.7, -0.4])
    h, _ = pin_dynamics(model, q)
    gap = abs(lin_inertia_matrix(model, res.constants, q)[0, 1] - h[0, 1])
    print("h_12 error without (k_2)_x,y:", gap)
    assert gap > 1e-3


RPRR = [(REVOLUTE, 0.0, 0.0, 0.0, 0.3, 1.0), (PRISMATIC, 1.2, 0.2, 0.0, 0.1, -1.0),
        (REVOLUTE, -1.2, 0.15, 0.5, 0.05, 1.0), (REVOLUTE, 0.9, 0.2, 0.2, 0.1, -1.0)]


@pytest.mark.parametrize("vertical", [True, False])
def test_translational_joint_between_r_and_s(vertical):
    """R P R R: joint 2 translational between r = 1 and s = 4 (joint 3 ∥ joint 1).  Step 1 m̂_2 (60),
    3.2 the combinations (40), (43) by (57); body 3 by 3(b) (g ∥ u_r, ^1_3 s ∦ u_3: joint 1 rotates) or
    3(a) (tilted gravity); body 1: (U_1)_33 only (δ_1 = 0) or with (k_1)_x,y (3(a)).  Hand constants:
    bodies 3, 4 by (14)/(16)/(18)/(20); body 2 by (18) with k_3z = MZ_3 + Cα4 (r4 M4 + MZ4) and u_1^(2) =
    [0, Sα2, Cα2]; (U_1)_33 from Lemma 1 (:func:`inertia_constants`, checked above against Pinocchio)."""
    gravity = (0.0, 0.0, -9.81) if vertical else (2.0, -1.5, -9.0)
    model = mdh_robot(RPRR, seed=41, gravity=gravity)
    q0 = np.array([0.2, 0.05, -0.3, 0.4])
    res = lin_identify(model, q0, measure=pin_rnea(model))
    print("RPRR steps:", res.steps)
    assert (res.r, res.s) == (1, 4)
    case = "3(b) (56), joint 1" if vertical else "3(a) (56), joint 1"
    assert res.steps == {1: "3(c) (58), joint 1" if vertical else "3(a) (58), joint 1",
                         2: "1 (60) + 3.2 (57)", 3: case, 4: "2.1 (56), joint 1"}
    p = {j: std(model, j) for j in range(1, 5)}
    a2, a3, a4 = 1.2, -1.2, 0.9
    kz3 = p[3]["MZ"] + math.cos(a4) * (0.1 * p[4]["M"] + p[4]["MZ"])
    m3 = p[3]["M"] + p[4]["M"]
    k2 = np.array([p[2]["MX"] + 0.15 * m3, p[2]["MY"] - math.sin(a3) * (0.05 * m3 + kz3),
                   p[2]["MZ"] + math.cos(a3) * (0.05 * m3 + kz3)])
    u = np.array([0.0, math.sin(a2), math.cos(a2)])
    c40, c43 = -u[1] * k2[0] + u[0] * k2[1], -u[2] * (u[0] * k2[0] + u[1] * k2[1]) + (1 - u[2] ** 2) * k2[2]
    body1 = {"U33": inertia_constants(model).U[0, 2, 2]}
    if not vertical:  # (22): k_1 = m_1 c_1 + m̂_2 [d_2, 0, 0] + Rx(α2) k_2
        body1 |= {"kx": p[1]["MX"] + 0.2 * (p[2]["M"] + m3) + k2[0],
                  "ky": p[1]["MY"] + math.cos(a2) * k2[1] - math.sin(a2) * k2[2]}
    expected = {1: body1, 2: {"m": p[2]["M"] + m3, "c40": c40, "c43": c43},
                3: hand_revolute_pair(p[3], p[4], a4, 0.2, 0.1), 4: hand_last(p[4])}
    err = compare(res, expected)
    suff = check_sufficient(model, res, seed=2)
    print(f"RPRR vertical={vertical}: max |identified - hand| = {err:.2e}, |H, g - Pinocchio| = {suff:.2e}")


def test_step2_body_parallel_to_r_rotates_s():
    """R R R with joint 3 ∥ joint 1 at the base configuration (θ2 + q2 = 0): body 3 cannot be found by
    rotating r (Property 1 1(d)), so joint s = 2 rotates (Lemma 3: any rotational joint not parallel to j),
    and joint 3 ⟂ joint 2 adds (58) rotating joint 3 alone (URDF sign −1 on joint 3).  Body 2 (α3 = −π/2,
    d3 = 0.3, r3 = 0.1) by hand: s = (0.3, 0.1, 0), R diag(YY3, YY3, ZZ3) Rᵀ = diag(YY3, ZZ3, YY3),
    R_b (k_3)_z = (0, MZ3, 0) in (18), (20)."""
    model = mdh_robot([(REVOLUTE, 0.0, 0.0, 0.0, 0.2, 1.0), (REVOLUTE, math.pi / 2, 0.1, 0.3, 0.05, 1.0),
                       (REVOLUTE, -math.pi / 2, 0.3, 0.0, 0.1, -1.0)], seed=51, gravity=(0.0, 0.0, -9.81))
    res = lin_identify(model, [0.2, -0.3, 0.5], measure=pin_rnea(model))
    assert (res.r, res.s) == (1, 2)
    assert res.steps == {1: "3(c) (58), joint 1", 2: "2.1 (56), joint 1 + (58)", 3: "2.1 (56), joint 2 + (58)"}
    p2, p3 = std(model, 2), std(model, 3)
    m3, mz3 = p3["M"], p3["MZ"]
    body2 = {"kx": p2["MX"] + 0.3 * m3, "ky": p2["MY"] + 0.1 * m3 + mz3,
             "U11-U22": (p2["XX"] + p3["YY"] + 0.01 * m3 + 0.2 * mz3) - (p2["YY"] + p3["ZZ"] + 0.09 * m3),
             "U33": p2["ZZ"] + p3["YY"] + 0.1 * m3 + 0.2 * mz3, "U12": p2["XY"] - 0.03 * m3 - 0.3 * mz3,
             "U13": p2["XZ"], "U23": p2["YZ"]}
    compare(res, {1: {"U33": inertia_constants(model).U[0, 2, 2]}, 2: body2, 3: hand_last(p3)})
    check_sufficient(model, res, seed=5)


def test_scara_all_rotational_joints_parallel():
    """SCARA (002 Table 3.2): every rotational joint ∥ joint 1 ∥ g, so s = n + 1 and Theorem 2 is items 1, 3
    and 5 only: (U_1)_33; (U_j)_33, (k_j)_x,y of bodies 2, 3 by 3(b) (joint 1 rotates, ^1_j s ⟂ z); m̂_4 by (60)
    (σ_4 = 0: joint 4 ∥ joint 1).  Hand: k_3 = (MX3, MY3) (links 3, 4 on one vertical axis, (22) with d4 = 0),
    m̂_4 = M4; the friction of the seed model is left out of the data (Lin's model has none)."""
    model = scara()
    res = lin_identify(model, [0.3, -0.5, 0.4, -0.1], measure=pin_rnea(model.replace(Fc=None, Fv=None)))
    assert (res.r, res.s) == (1, 5)
    assert res.steps == {1: "3(c) (58), joint 1", 2: "3(b) (56), joint 1", 3: "3(b) (56), joint 1", 4: "1 (60)"}
    p3, p4 = std(model, 3), std(model, 4)
    true = inertia_constants(model)
    expected = {1: {"U33": true.U[0, 2, 2]}, 2: {"U33": true.U[1, 2, 2], "kx": true.k[1, 0], "ky": true.k[1, 1]},
                3: {"U33": true.U[2, 2, 2], "kx": p3["MX"] + p4["MX"], "ky": p3["MY"] + p4["MY"]}, 4: {"m": p4["M"]}}
    assert true.k[2, 0] == pytest.approx(expected[3]["kx"], abs=1e-14)
    compare(res, expected)
    check_sufficient(model.replace(Fc=None, Fv=None), res, seed=3)


def test_stanford_step1_and_rnea_data():
    """Stanford arm (003 §4) with step 1 (60) for m̂_3 instead of (61), data from Pinocchio's rnea: the same
    Table II set, m̂_3 = 4.25 + 1.08 + 0.63 + 0.51 = 6.47 (Figure 2), and 003 §4's (9)/(11) check."""
    model = stanford_arm()
    base = lin_stanford_example()
    res = lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7], measure=pin_rnea(model), step1=True)
    assert res.steps[3] == "1 (60) + 2.2 (61)" and base.steps[3] == "2.2 (61)"
    assert res.table()[3]["m"] == pytest.approx(4.25 + 1.08 + 0.63 + 0.51, abs=1e-10)
    a, b = res.table(), base.table()
    assert a.keys() == b.keys()
    assert max(abs(a[i][k] - b[i][k]) for i in a for k in a[i]) < 1e-9
    print("Stanford (9)/(11) from the identified set vs Pinocchio:", check_sufficient(model, res, seed=4))


def test_table_i_rows_2_and_3():
    """003 Table I rows 2, 3: q_j changed to −0.7 (row 2) and −0.6 (row 3) (errata 54: the text's order is
    reversed); u_1^(3) with q_2 changed; row 3 u_1^(6)_z = −0.8624 and u_1^(5)_y = 0.1191 (errata 54)."""
    model = stanford_arm()
    base = np.array([0.7, 0.7, 0.0, 0.7, 0.7, 0.7])
    rows = {-0.7: {2: (0.7648, 0.6442, 0.0), 3: (0.7648, 0.0, -0.6442), 4: (0.5850, 0.4927, 0.6442),
                   5: (-0.8696, 0.0324, 0.4927), 6: (-0.4060, 0.3022, -0.8624)},
            -0.6: {2: (0.8253, 0.5646, 0.0), 4: (0.6313, 0.4319, 0.6442), 5: (-0.8620, 0.1191, 0.4927),
                   6: (-0.3738, 0.3412, -0.8624)}}
    for val, table in rows.items():
        for j, u in table.items():
            q = base.copy()
            q[(2 if j == 3 else j) - 1] = val
            w, _, _, _ = _motion_kinematics(model, q, 1, 1.0, 0.0, j)
            np.testing.assert_allclose(w, u, atol=1e-4, err_msg=f"q={val}, j={j}")


def test_bad_experiments_raise():
    model = stanford_arm()
    with pytest.raises(ValueError, match="persistently exciting"):
        lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7], revolute_values=(0.7, 0.7, 0.7))
    all_p = mdh_robot([(PRISMATIC, 0.0, 0.0, 0.0, 0.0, 1.0), (PRISMATIC, math.pi / 2, 0.1, 0.0, 0.0, 1.0)],
                      seed=1, gravity=(0.0, 0.0, -9.81))
    with pytest.raises(ValueError, match="rotational joint"):
        lin_identify(all_p, [0.0, 0.0])
    with pytest.raises(ValueError, match="prismatic_amplitude"):
        lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7], prismatic_amplitude=0.0)
    rng = np.random.default_rng(0)
    tree = next(m for m in (random_model(rng, n=5, tree=True) for _ in range(50)) if m.is_tree)
    for f in (composite_bodies, renaud_inertia_matrix, renaud_gravity_torques):
        with pytest.raises(ValueError, match="serial chain"):
            f(tree, np.zeros(5))
    with pytest.raises(ValueError, match="one configuration"):
        renaud_inertia_matrix(model, np.zeros((2, 6)))
