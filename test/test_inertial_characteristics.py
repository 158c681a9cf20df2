"""Seed 004 (Tourassis & Neuman): closed-form d_ij, coupling, Christoffel symbols, G and Tables 2–3.

Oracles: Pinocchio (``crba`` with ``armature`` = Ia, ``computeGeneralizedGravity``, ``rnea``, ``centerOfMass``)
on the URDF itself (example-robot-data, bundled robots) or on the MDH table (random robots, trees); five-point
finite differences of ``crba`` for ∂d_ij/∂q_k and the Christoffel symbols; a hand derivation (planar 2R).
"""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from pinocchio_from_mdh import pinocchio_model, random_inertial, random_model
from test_inverse_dynamics import _embed, _pin_urdf_cases, urdf_pair

from robot_dynamics import cli, load_model
from robot_dynamics.dynamics.inertial_characteristics import (
    coefficient_groups,
    independent_coefficient_counts,
    inertia_report,
    inertial_characteristics,
    workspace_samples,
)
from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.robots import resolve_urdf
from robot_dynamics.model.seed_robots import link_inertial

TOL = 1e-12  # relative to max(1, |reference|)
SEED_STANFORD_SPARSITY = 0.680  # 004 Table 3 (66 of 97)
STANFORD_TOLERANCE = 0.07  # 6 of 97 coefficients: what link 6's axisymmetric inertia removes (see the test)


def _crba(pm: pin.Model, pd: pin.Data, q: np.ndarray) -> np.ndarray:
    a = pin.crba(pm, pd, q).copy()
    return np.triu(a) + np.triu(a, 1).T


def _close(ours: np.ndarray, ref: np.ndarray, tol: float = TOL) -> bool:
    return float(np.abs(ours - ref).max()) <= tol * max(1.0, float(np.abs(ref).max()))


def _fd_inertia_derivatives(pm: pin.Model, pd: pin.Data, q: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """∂A/∂q_k [k, i, j] by the five-point stencil on Pinocchio's CRBA (error ~h⁴ + 1e-16/h)."""
    out = []
    for e in np.eye(len(q)):
        def f(s: float, e: np.ndarray = e) -> np.ndarray:
            return _crba(pm, pd, q + s * h * e)
        out.append((-f(2) + 8 * f(1) - 8 * f(-1) + f(-2)) / (12 * h))
    return np.array(out)


def _christoffel(dd: np.ndarray) -> np.ndarray:
    """c[i, j, m] = c_jm(i) = ½(∂_m d_ij + ∂_j d_im − ∂_i d_jm) (004 eq. 12) from dd[k, i, j] = ∂d_ij/∂q_k."""
    n = dd.shape[0]
    c = np.zeros((n, n, n))
    for i in range(n):
        for j in range(n):
            for m in range(n):
                c[i, j, m] = 0.5 * (dd[m, i, j] + dd[j, i, m] - dd[i, j, m])
    return c


def _limits_q(model: RobotModel, rng: np.random.Generator, count: int) -> np.ndarray:
    lim = model.limits
    lo = np.where(np.isfinite(lim["lower"]), lim["lower"], -np.pi)
    hi = np.where(np.isfinite(lim["upper"]), lim["upper"], np.pi)
    return rng.uniform(lo, hi, (count, model.dof))


def _general_robot(n: int, seed: int) -> RobotModel:
    """All-revolute robot with every MDH parameter nonzero (α off multiples of π/2), full inertias, gravity off
    every axis: the 'general N-joint robot' of 004 Table 2."""
    rng = np.random.default_rng(seed)
    joints = [MDHJoint(name=f"j{j}", antecedent=j - 1, sigma=0, alpha=float(rng.choice([-1, 1]) * rng.uniform(0.3, 1.3)),
                       d=float(rng.uniform(0.1, 0.5)), theta=float(rng.uniform(-3, 3)), r=float(rng.uniform(0.1, 0.5)),
                       link=f"l{j}") for j in range(1, n + 1)]
    return RobotModel(joints=joints, frames={"base_link": (0, np.eye(4)), "tool": (n, np.eye(4))}, tip_link="tool",
                      inertial=np.array([random_inertial(rng) for _ in range(n)]), gravity=rng.normal(size=3) * 5.0)


# ------------------------------------------------------------------ d_ij and G against Pinocchio
@pytest.mark.parametrize("case", _pin_urdf_cases(), ids=lambda c: c[0].split("/")[-1] + ("" if c[1] is None else f"-{c[1]}"))
def test_d_and_gravity_equal_pinocchio_on_the_urdf(case) -> None:
    """d_ij (004 eqs. 22–31) = crba and G (eq. 40, errata 59 sign) = computeGeneralizedGravity on the URDF itself
    (ur5, panda chain with locked fingers, panda tree with its prismatic fingers, the bundled robots); the
    moved masses, composite COMs and joint axes are Pinocchio's subtree masses, subtree COMs and oMi axes."""
    m, pm, idx = urdf_pair(*case)
    pd = pm.createData()
    q = _limits_q(m, np.random.default_rng(40), 20)
    ic = inertial_characteristics(m, q)
    assert ic.d.shape == (20, m.dof, m.dof) and ic.G.shape == (20, m.dof)
    jids = [pm.getJointId(name) for name in m.joint_names]
    for b, qp in enumerate(_embed(pm, idx, q)):
        assert _close(ic.d[b], _crba(pm, pd, qp)[np.ix_(idx, idx)])
        g_ref = pin.computeGeneralizedGravity(pm, pd, qp)[idx]
        assert _close(ic.G[b], g_ref)
        pin.centerOfMass(pm, pd, qp, True)
        assert np.allclose(ic.mass, [pd.mass[j] for j in jids], rtol=1e-13, atol=0)
        com = np.array([pd.oMi[j].act(pd.com[j]) for j in jids])
        assert np.abs(ic.com[b] - com).max() <= 1e-12
        jac = pin.computeJointJacobians(pm, pd, qp)[:, idx]  # world frame: [v; ω] columns
        axis = np.where((m.sigma == 1)[:, None], jac[:3].T, jac[3:].T)
        assert np.abs(ic.axis[b] - axis).max() <= 1e-12
    assert np.abs(ic.G).max() > 1.0  # gravity does work on these robots


def test_rotor_inertias_are_pinocchio_armature() -> None:
    """The RX-90's Ia (config/rx90.yaml) enter d_ii as Pinocchio's ``armature``; rotor_inertia=False leaves them out."""
    m = load_model("rx90")
    assert np.all(m.Ia > 0)
    pm = pinocchio_model(m)
    pd = pm.createData()
    q = _limits_q(m, np.random.default_rng(41), 20)
    bare = np.array([_crba(pm, pd, x) for x in q])
    pm.armature[:] = m.Ia
    pd = pm.createData()
    with_ia = np.array([_crba(pm, pd, x) for x in q])
    assert np.abs(with_ia - bare).max() >= 0.05
    ic, ic0 = inertial_characteristics(m, q), inertial_characteristics(m, q, rotor_inertia=False)
    assert _close(ic.d, with_ia) and _close(ic0.d, bare)
    assert np.array_equal(ic.Ia, m.Ia) and np.array_equal(ic0.Ia, np.zeros(6))
    # everything but the diagonal of d (and what depends on it) is independent of the rotors
    assert np.array_equal(ic.J, ic0.J) and np.array_equal(ic.G, ic0.G) and np.array_equal(ic.dd_dq, ic0.dd_dq)
    one = inertial_characteristics(m, q[3])
    assert one.d.shape == (6, 6) and one.c.shape == (6, 6, 6) and np.allclose(one.d, ic.d[3], rtol=0, atol=1e-15)


@pytest.mark.parametrize("tree", [False, True])
def test_derivatives_christoffel_and_gravity_of_random_robots(tree: bool) -> None:
    """Random MDH robots (prismatic joints, URDF signs, base transform, gravity, trees): d = crba + armature,
    ∂d_ij/∂q_k = five-point differences of crba, Σ q̇_j c_jm(i) q̇_m = rnea(q, q̇, 0) − g, G = generalized gravity;
    and the seed's functional dependence (004 §4: ∂d_ij/∂q_k = 0 for k <= min(i, j)) holds on the oracle."""
    rng = np.random.default_rng(42 + tree)
    checked_zero = 0
    for _ in range(8):
        m = random_model(rng, n=int(rng.integers(2, 8)), tree=tree, friction=True)
        pm = pinocchio_model(m)
        pm.armature[:] = m.Ia
        pd = pm.createData()
        n = m.dof
        q, qd = rng.uniform(-3, 3, (4, n)), rng.uniform(-2, 2, (4, n))
        ic = inertial_characteristics(m, q)
        for b in range(4):
            assert _close(ic.d[b], _crba(pm, pd, q[b]))
            g = pin.computeGeneralizedGravity(pm, pd, q[b]).copy()
            assert _close(ic.G[b], g)
            assert _close(ic.coriolis_centrifugal(qd)[b], pin.rnea(pm, pd, q[b], qd[b], np.zeros(n)) - g)
            fd = _fd_inertia_derivatives(pm, pd, q[b])
            assert _close(ic.dd_dq[b], fd, 1e-9)
            assert _close(ic.c[b], _christoffel(fd), 1e-9)
            if not tree:
                for k in range(n):
                    for i in range(k, n):
                        assert np.abs(fd[k, i, k:]).max() <= 1e-9 * max(1.0, np.abs(fd).max())
                        checked_zero += 1
    assert tree or checked_zero > 50


# ------------------------------------------------------------------ coupling coefficients (004 eqs. 32–35)
def _factorisation_cases() -> list[tuple[str, RobotModel]]:
    rng = np.random.default_rng(43)
    return [(k, load_model(k)) for k in ("rx90", "stanford", "scara", "planar2r")] + [
        ("random-prismatic", random_model(rng, n=6, friction=True)), ("random-tree", random_model(rng, n=6, tree=True))]


@pytest.mark.parametrize(("name", "model"), _factorisation_cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_coupling_loading_and_kinematic_factors_field_by_field(name: str, model: RobotModel) -> None:
    """k_ij = |A_ij|/√(A_ii A_jj) from Pinocchio's crba (+ armature); LF_ij = √(M_j/M_i) from the link masses summed
    here; KF = k/LF; k in [0, 1) off the diagonal, LF × KF = k (004 eq. 33); radius² M = A_ii; K_ij M_j = J_ij."""
    m = model
    pm = pinocchio_model(m)
    pm.armature[:] = m.Ia
    pd = pm.createData()
    q = _limits_q(m, np.random.default_rng(44), 30)
    ic = inertial_characteristics(m, q)
    a = np.array([_crba(pm, pd, x) for x in q])
    diag = np.diagonal(a, axis1=1, axis2=2)
    k_ref = np.abs(a) / np.sqrt(diag[:, :, None] * diag[:, None, :])
    # moved masses and who carries whom, from the antecedents and link masses (not from the code under test)
    n, link_m = m.dof, m.inertial[:, 9]
    carries = np.eye(n, dtype=bool)
    for j in range(n):
        a_j = m.joints[j].antecedent - 1
        if a_j >= 0:
            carries[:, j] |= carries[:, a_j]
    moved = np.array([link_m[carries[i]].sum() for i in range(n)])
    lf_ref = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if carries[i, j]:
                lf_ref[i, j] = lf_ref[j, i] = np.sqrt(moved[j] / moved[i])
    off = ~np.eye(n, dtype=bool)
    related = (carries | carries.T) & off
    assert np.allclose(ic.mass, moved, rtol=1e-14, atol=0)
    assert np.allclose(ic.LF[off], lf_ref[off], rtol=1e-14, atol=0)
    assert np.all(ic.LF[~related & off] == 0.0) and np.all(np.diagonal(ic.LF) == 1.0)
    assert np.abs(ic.k - np.where(off, k_ref, 1.0)).max() <= 1e-12
    kf_ref = np.where(related, k_ref / np.where(related, lf_ref, 1.0), 0.0)
    assert np.abs(ic.KF[:, off] - kf_ref[:, off]).max() <= 1e-11 * max(1.0, kf_ref.max())
    assert np.all(ic.k[:, off] >= 0.0) and np.all(ic.k[:, off] < 1.0)
    assert np.abs(ic.LF[None] * ic.KF - ic.k).max() <= 1e-13
    assert np.all(ic.k[:, ~related & off] == 0.0)
    assert np.allclose(ic.radius**2 * moved, diag, rtol=1e-12, atol=0)
    rr = np.flatnonzero(m.sigma == 0)
    pair_mass = np.where(carries, moved[None, :], moved[:, None])
    assert np.allclose(ic.K * np.where(related | ~off, pair_mass, 0.0), ic.J, rtol=1e-14, atol=1e-15)
    # two rotational joints: d_ij = J_ij (004 eq. 31), d_ii = J_ii + Ia_i (eq. 29 + rotor)
    sub = np.ix_(rr, rr)
    ref_rr = a[:, rr][:, :, rr] - np.diag(m.Ia[rr])
    assert _close(np.where(related[sub] | ~off[sub], ic.J[:, rr][:, :, rr], 0.0), ref_rr)
    assert ic.k[:, off].max() > 0.05  # the robots are coupled somewhere


def test_planar_2r_by_hand_and_kinematic_factor_above_one() -> None:
    """The bundled planar 2R (L1 = 0.5, c1 = L1/2, c2 = L2/2, rods) by hand: d_11 = I1 + m1 c1² + I2 + m2(L1² + c2² +
    2 L1 c2 cos q2), d_12 = I2 + m2(c2² + L1 c2 cos q2), d_22 = I2 + m2 c2²; the arm turns in the vertical x-z plane
    of base_link from x towards z, so V = g(m1 c1 sin q1 + m2(L1 sin q1 + c2 sin(q1 + q2))) and G = +∂V/∂q (errata 59).
    At the stretched arm k_12 = 0.847 < 1 but KF_12 = k/LF = 1.29 > 1: 004 §3.5's "0 <= KF <= 1" is not a theorem."""
    m = load_model("planar2r")
    L1, m1, m2, c1, c2 = 0.5, 2.0, 1.5, 0.25, 0.2
    I1, I2 = m1 * L1**2 / 12, m2 * 0.4**2 / 12
    q2 = np.linspace(-2.9, 2.9, 13)
    q1 = np.linspace(-1.0, 2.0, 13)
    q = np.column_stack([q1, q2])
    ic = inertial_characteristics(m, q)
    d11 = I1 + m1 * c1**2 + I2 + m2 * (L1**2 + c2**2 + 2 * L1 * c2 * np.cos(q2))
    d12 = I2 + m2 * (c2**2 + L1 * c2 * np.cos(q2))
    d22 = np.full_like(q2, I2 + m2 * c2**2)
    assert np.abs(ic.d - np.stack([np.stack([d11, d12], -1), np.stack([d12, d22], -1)], 1)).max() <= 1e-14
    g = 9.81
    g1 = g * (m1 * c1 + m2 * L1) * np.cos(q1) + g * m2 * c2 * np.cos(q1 + q2)
    assert np.abs(ic.G - np.column_stack([g1, g * m2 * c2 * np.cos(q1 + q2)])).max() <= 1e-13
    # ∂d_11/∂q2 = -2 m2 L1 c2 sin q2; centrifugal c_22(1) = ∂d_12/∂q2 = -m2 L1 c2 sin q2 (004 eq. 36), c_11(2) = -c_22(1)
    assert np.abs(ic.dd_dq[:, 1, 0, 0] + 2 * m2 * L1 * c2 * np.sin(q2)).max() <= 1e-14
    assert np.abs(ic.c[:, 0, 1, 1] + m2 * L1 * c2 * np.sin(q2)).max() <= 1e-14
    assert np.abs(ic.c[:, 1, 0, 0] - m2 * L1 * c2 * np.sin(q2)).max() <= 1e-14
    stretched = inertial_characteristics(m, [0.3, 0.0])
    lf = np.sqrt(m2 / (m1 + m2))
    k = d12[6] / np.sqrt(d11[6] * d22[6])
    assert stretched.LF[0, 1] == pytest.approx(lf, rel=1e-15)
    assert stretched.k[0, 1] == pytest.approx(k, rel=1e-14) and k < 1.0
    assert stretched.KF[0, 1] == pytest.approx(k / lf, rel=1e-14) and stretched.KF[0, 1] > 1.25
    print(f"planar 2R stretched: k_12 = {k:.4f}, LF = {lf:.4f}, KF = {k / lf:.4f} > 1")


# ------------------------------------------------------------------ Tables 2 and 3
def test_table2_counts_of_a_general_robot() -> None:
    """N(2N² + 3N + 7)/6 (errata 64) is the sum of the rows of 004 Table 2 (3 DOF: 3, 3, 6, 2, 3 -> 17; 6 DOF: 6, 15,
    30, 40, 6 -> 97); general all-revolute 3- and 6-joint robots have them all nonzero (sparsity 1); and on the
    oracle's Christoffel symbols (differences of crba) the distinct nonzero c_jm(i) up to sign are exactly
    the centrifugal + Coriolis count (004 eqs. 36–39: the others vanish or repeat)."""
    assert independent_coefficient_counts(3) == {"self_inertial": 3, "mutual_inertial": 3, "centrifugal": 6,
                                                 "coriolis": 2, "gravitational": 3, "total": 17}
    assert independent_coefficient_counts(6) == {"self_inertial": 6, "mutual_inertial": 15, "centrifugal": 30,
                                                 "coriolis": 40, "gravitational": 6, "total": 97}
    for n in range(0, 13):
        counts = independent_coefficient_counts(n)
        assert counts["total"] == sum(v for k, v in counts.items() if k != "total")
        assert {k: len(v) for k, v in coefficient_groups(n).items()} == {k: v for k, v in counts.items() if k != "total"}
    for n, total, classes in ((3, 17, 8), (6, 97, 70)):
        m = _general_robot(n, n)
        report = inertia_report(m, samples=60, seed=1)
        assert [(c.group, c.nonzero) for c in report.counts] == [(c.group, c.general) for c in report.counts]
        assert report.nonzero_total == report.general_total == total and report.sparsity == 1.0
        pm = pinocchio_model(m)
        pd = pm.createData()
        cs = np.array([_christoffel(_fd_inertia_derivatives(pm, pd, x))
                       for x in np.random.default_rng(45).uniform(-3, 3, (6, n))])
        vectors = [cs[:, i, j, k] for i in range(n) for j in range(n) for k in range(j, n)]
        tol = 1e-7 * max(np.abs(v).max() for v in vectors)
        distinct: list[np.ndarray] = []
        for v in vectors:
            if np.abs(v).max() > tol and not any(min(np.abs(v - w).max(), np.abs(v + w).max()) <= tol for w in distinct):
                distinct.append(v)
        assert len(distinct) == classes == independent_coefficient_counts(n)["centrifugal"] + \
            independent_coefficient_counts(n)["coriolis"]
        print(f"general {n}-joint robot: {report.nonzero_total} independent coefficients, {len(distinct)} distinct "
              "centrifugal/Coriolis functions on the oracle")


def test_rx90_counts_equal_an_independent_count_on_pinocchio() -> None:
    """The RX-90's nonzero independent coefficients (structural zeros found numerically) equal a count made on
    Pinocchio alone (crba, differences of crba, generalized gravity) over other samples; the oracle satisfies the
    seed's non-interacting (38) and reflective (39) properties."""
    m = load_model("rx90")
    report = inertia_report(m, samples=400, seed=3)
    pm = pinocchio_model(m)
    pm.armature[:] = m.Ia
    pd = pm.createData()
    qs = _limits_q(m, np.random.default_rng(46), 25)
    a = np.array([_crba(pm, pd, x) for x in qs])
    g = np.array([pin.computeGeneralizedGravity(pm, pd, x).copy() for x in qs])
    c = np.array([_christoffel(_fd_inertia_derivatives(pm, pd, x)) for x in qs])
    n = m.dof
    for i in range(n):  # 004 eqs. 38, 39 on the oracle
        for j in range(i + 1):
            assert np.abs(c[:, i, j, i]).max() <= 1e-8 or j == i  # c_ji(i) = 0, j < i
            for mm in range(j, n):
                assert np.abs(c[:, i, j, mm] + c[:, mm, j, i]).max() <= 1e-8  # c_jm(i) = -c_ji(m), j <= i, m
    diag = np.diagonal(a, axis1=1, axis2=2)
    k = np.abs(a) / np.sqrt(diag[:, :, None] * diag[:, None, :])
    c_scale, g_scale = np.abs(c).max(), np.abs(g).max()
    nonzero = {
        "self_inertial": lambda idx: True,
        "mutual_inertial": lambda idx: k[(slice(None),) + idx].max() > 1e-6,
        "centrifugal": lambda idx: np.abs(c[(slice(None),) + idx]).max() > 1e-6 * c_scale,
        "coriolis": lambda idx: np.abs(c[(slice(None),) + idx]).max() > 1e-6 * c_scale,
        "gravitational": lambda idx: np.abs(g[(slice(None),) + idx]).max() > 1e-6 * g_scale,
    }
    ours = {cc.group: cc for cc in report.counts}
    for group, members in coefficient_groups(n).items():
        zeros = tuple(label for label, idx in members if not nonzero[group](idx))
        assert ours[group].zeros == zeros, group
        assert ours[group].nonzero == len(members) - len(zeros)
    # constants: d_55 and d_66 (the wrist's last links are symmetric about their axes)
    assert ours["self_inertial"].constants == ("d_55", "d_66")
    assert np.ptp(a[:, 4, 4]) <= 1e-12 and np.ptp(a[:, 5, 5]) <= 1e-12 and np.ptp(a[:, 3, 3]) > 1e-3
    assert report.nonzero_total == 79 and report.zero_gap[0] < 1e-12 < 1e-6 < report.zero_gap[1]
    print(f"RX-90: {report.nonzero_total}/97 nonzero, sparsity {report.sparsity:.3f}; "
          + ", ".join(f"{cc.group} {cc.nonzero}({cc.constant})" for cc in report.counts)
          + f"; max k = {report.max_coupling:.3f} joints {report.max_pair}")


def test_stanford_sparsity_against_the_seed() -> None:
    """004 Table 3 gives the Stanford arm 66 of 97 (0.680).  The bundled Stanford arm (Lin's data, seed 003) has 60
    (0.619): its link 6 is axisymmetric (I_xx = I_yy, COM on z6), which makes d_45 ≡ 0, d_55 constant and
    c_11(6), c_22(6), c_44(6), c_55(4), c_55(6) ≡ 0.  With link 6's I_xx raised by 20 % the count is the seed's,
    row by row (d_ij 12, c_jj(i) 19, c_jm(i) 25, G_i 4); its d_ii count 6(2) is not the seed's 6(1), which cannot
    be: d_33 (translational, 004 eq. 25) and d_66 (the last link about its own axis) are both constant."""
    m = load_model("stanford")
    report = inertia_report(m, samples=300, seed=5)
    s = report.sparsity
    print(f"Stanford sparsity: ours {s:.3f} ({report.nonzero_total}/97) vs the seed's {SEED_STANFORD_SPARSITY:.3f} "
          f"(66/97): {s - SEED_STANFORD_SPARSITY:+.3f}; empirical 0.235[1+(5/6)^2]^2 = {report.empirical_sparsity:.3f}")
    assert abs(s - SEED_STANFORD_SPARSITY) <= STANFORD_TOLERANCE
    assert report.nonzero_total == 60
    counts = {c.group: c for c in report.counts}
    assert counts["mutual_inertial"].zeros == ("d_34", "d_36", "d_45", "d_56")
    assert counts["gravitational"].zeros == ("G_1", "G_6")
    assert counts["self_inertial"].constants == ("d_33", "d_55", "d_66")
    assert report.empirical_sparsity == pytest.approx(0.235 * (1 + (5 / 6) ** 2) ** 2)

    bodies = [(9.29, (0.0, 0.1105, 0.0175), (0.366, 0.345, 0.71)), (5.01, (0.0, 0.0, -0.1054), (0.108, 0.018, 0.1)),
              (4.25, (0.0, 0.0, -0.6447), (2.51, 2.51, 0.006)), (1.08, (0.0092, 0.0054, 0.0), (0.002, 0.001, 0.001)),
              (0.63, (0.0, -0.0566, 0.0), (0.003, 0.003, 0.0004)), (0.51, (0.0, 0.0, 0.1554), (0.013 * 1.2, 0.013, 0.0003))]
    rows = np.array([link_inertial(*b) for b in bodies])
    change = rows - m.inertial  # only XX of link 6
    assert np.abs(np.delete(change.ravel(), 50)).max() <= 1e-12 and change[5, 0] == pytest.approx(0.2 * 0.013)
    asym = inertia_report(m.replace(inertial=rows), samples=300, seed=5)
    assert [(c.group, c.nonzero) for c in asym.counts] == [
        ("self_inertial", 6), ("mutual_inertial", 12), ("centrifugal", 19), ("coriolis", 25), ("gravitational", 4)]
    assert asym.nonzero_total == 66 and round(asym.sparsity, 3) == SEED_STANFORD_SPARSITY
    gained = {c.group: sorted(set(a.zeros) - set(c.zeros)) for a, c in zip(report.counts, asym.counts, strict=True)}
    assert gained == {"self_inertial": [], "mutual_inertial": ["d_45"], "centrifugal": [
        "c_11(6)", "c_22(6)", "c_44(6)", "c_55(4)", "c_55(6)"], "coriolis": [], "gravitational": []}
    assert {c.group: c for c in asym.counts}["self_inertial"].constants == ("d_33", "d_66")


# ------------------------------------------------------------------ command line
def test_cli_inertia_report_text_json_and_plot(tmp_path, capsys) -> None:
    png = tmp_path / "k.png"
    assert cli.main(["inertia-report", "rx90", "--samples", "200", "--seed", "2", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    report = inertia_report(load_model("rx90"), samples=200, seed=2)
    assert lines[0].startswith("robot 'rx90': 6 joints (RRRRRR; 6 rotational, 0 translational), 200 configurations")
    assert "rotor inertias Ia added to d_ii: 1, 1, 0.5, 0.1, 0.1, 0.05" in lines
    assert any(line.split()[:2] == ["total", "79"] and line.split()[-1] == "97" for line in lines)
    assert "  mutual inertial d_ij     13 (0) / 15    zero: d_45, d_56" in lines
    assert f"sparsity {79 / 97:.3f} = 79/97 (004 Table 3); empirical 0.235 [1 + (N_R/N)^2]^2 = 0.940 (N_R/N = 6/6)" in lines
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert f"max coupling k_ij = {report.max_coupling:.3f} between joints 2 (joint2) and 3 (joint3)" in verdict
    assert "computed torque (001 §9.4, eq. 9.22)" in verdict and report.recommendation == "PID at low speed"
    assert "   4  5           0           0   0.0000   0.0000  0.577  (structural zero)" in lines
    assert lines[-1] == f"plot written to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000

    urdf = str(resolve_urdf("scara"))
    assert cli.main(["inertia-report", urdf, "--samples", "50", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["robot"] == "scara" and data["samples"] == 50 and data["general_counts"]["total"] == 34
    assert data["nonzero_total"] == sum(v["nonzero"] for v in data["counts"].values()) == 10
    assert data["counts"]["gravitational"] == {"nonzero": 1, "constant": 1, "general": 4, "zeros": ["G_1", "G_2", "G_3"],
                                               "constants": ["G_4"]}
    assert data["max_coupling"]["pair"] == [1, 2] and 0.85 < data["max_coupling"]["k"] < 0.9

    with pytest.raises(SystemExit) as exc:
        cli.main(["inertia-report", "rx90", "--samples", "1"])
    assert exc.value.code == 2
    assert "--samples: must be >= 2" in capsys.readouterr().err
    assert cli.main(["inertia-report", "rx90", "--plot", str(tmp_path / "no" / "k.png")]) == 2
    assert capsys.readouterr().err.startswith("robot-dynamics inertia-report: error: --plot")
    assert cli.main(["inertia-report", "rx90", "--plot", str(tmp_path / "k.xyz")]) == 2
    assert "unknown image format 'xyz'" in capsys.readouterr().err
    assert cli.main(["inertia-report", "nosuch"]) == 2
    assert "no URDF file 'nosuch'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["inertia-report", "rx90", "--samples", "100001"])
    assert "--samples: must be <= 100000" in capsys.readouterr().err


def test_cli_on_a_tree(capsys) -> None:
    """The whole Panda (7 arm joints and the 2 finger slides on the hand): the fingers do not carry each other
    (d_89 ≡ 0 in a tree), each finger's d_ii is its mass; the text names the structural zero."""
    assert cli.main(["inertia-report", str(example_urdf("panda")), "--samples", "40", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["joint_names"]) == 9 and data["sigma"] == [0] * 7 + [1, 1]
    assert "d_89" in data["counts"]["mutual_inertial"]["zeros"] and data["d_zero"][7][8]
    assert data["LF"][7][8] == 0.0 and data["k_max"][7][8] == 0.0
    assert data["counts"]["self_inertial"]["constants"][-2:] == ["d_88", "d_99"]
    assert data["d_min"][7][7] == pytest.approx(data["link_mass"][7], rel=1e-12)


# ------------------------------------------------------------------ bad input
def test_bad_input_raises_one_clear_value_error() -> None:
    m = load_model("planar2r")
    with pytest.raises(ValueError, match="shape"):
        inertial_characteristics(m, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="NaN"):
        inertial_characteristics(m, [np.nan, 0.0])
    massless = m.replace(inertial=np.zeros((2, 10)))
    with pytest.raises(ValueError, match="move no mass"):
        inertial_characteristics(massless, [0.0, 0.0])
    with pytest.raises(ValueError, match="samples"):
        inertia_report(m, samples=1)
    scara = load_model("scara")
    free = scara.replace(joints=[j if j.sigma == 0 else j.__class__(**{**vars(j), "lower": -np.inf}) for j in scara.joints])
    with pytest.raises(ValueError, match="no finite limits"):
        workspace_samples(free, 10)
    q = workspace_samples(scara, 500, seed=7)
    assert np.all(q >= scara.limits["lower"]) and np.all(q <= scara.limits["upper"])
    assert np.array_equal(q, workspace_samples(scara, 500, seed=7))
