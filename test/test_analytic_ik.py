"""Closed-form IGM (002 Appendix 1 equation types, wrist-partitioned arms, the RX-90).

Oracles: the solvers' coefficients are generated from known angles; solution counts are checked against a dense scan
of the sign changes of a scalar function of one angle (independent of the seed's elimination); poses come from
Pinocchio (the bundled URDFs, or a Pinocchio model built from an MDH table); completeness is checked against a
multi-start numerical least-squares solution of the pose equations evaluated with Pinocchio.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from pinocchio_from_mdh import pinocchio_model, random_inertial, random_rotation
from pinocchio_oracle import PinocchioURDF
from scipy.optimize import least_squares

from robot_dynamics import RobotModel
from robot_dynamics.kinematics import analytic_ik
from robot_dynamics.kinematics.analytic_ik import (
    analytic_inverse_geometry,
    nearest_inverse_geometry,
    rx90_inverse_geometry,
    solve_type1,
    solve_type2,
    solve_type3,
    solve_type4,
    solve_type5,
    solve_type6,
    solve_type7,
    solve_type8,
    supports_analytic_inverse_geometry,
)
from robot_dynamics.model.mdh import MDHJoint
from robot_dynamics.model.seed_robots import SEED_ROBOTS, urdf_text
from robot_dynamics.trajectory import task_space_line

PI = math.pi


def wrap(a):
    return np.remainder(np.asarray(a) + PI, 2 * PI) - PI


def grid(rng, n=200_000):
    """One period of angles (a random phase avoids exact grid zeros)."""
    return rng.uniform(0, 2 * PI) + np.linspace(0.0, 2 * PI, n, endpoint=False)


def sign_changes(v):
    """Number of sign changes of the samples ``v`` of a 2π-periodic function over one period (its simple roots)."""
    return int(np.count_nonzero(np.sign(v) != np.sign(np.roll(v, -1))))


def has_angle(sols, t0, atol=1e-8):
    return min(abs(float(wrap(t - t0))) for t in sols) <= atol


# ------------------------------------------------------------------------------------------- type 1, 2
def test_type1():
    assert solve_type1(2.0, 3.0) == [1.5]
    assert solve_type1(0.0, 0.0, default=0.25) == [0.25]  # identity: every r
    assert solve_type1(0.0, 1.0) == []
    assert solve_type1(1e-14, 1e-13, default=-1.0) == [-1.0]  # round-off zeros
    with pytest.raises(ValueError):
        solve_type1(np.nan, 1.0)


def test_type2_random_coefficients_from_known_angles():
    rng = np.random.default_rng(1)
    for k in range(400):
        X, Y = rng.normal(size=2) * (10.0 if k % 3 == 0 else 1.0)
        t0 = rng.uniform(-PI, PI)
        Z = X * math.sin(t0) + Y * math.cos(t0)
        sols = solve_type2(X, Y, Z)
        s = max(1.0, abs(X), abs(Y), abs(Z))
        assert len(sols) == 2
        for t in sols:
            assert abs(X * math.sin(t) + Y * math.cos(t) - Z) <= 1e-12 * s
            assert -PI <= t <= PI
        assert has_angle(sols, t0, 1e-7)
        if k < 40:  # count against a scan
            t = grid(rng)
            assert sign_changes(X * np.sin(t) + Y * np.cos(t) - Z) == 2
        assert solve_type2(X, Y, 1.5 * math.hypot(X, Y)) == []  # |Z| > sqrt(X² + Y²): none


def test_type2_particular_cases_and_degenerate():
    rng = np.random.default_rng(2)
    X, Y = 0.0, -1.3  # [A1.2]-[A1.3]: Y Cθ = Z
    got = sorted(solve_type2(X, Y, 0.4))
    assert np.allclose(got, sorted([math.acos(0.4 / Y), -math.acos(0.4 / Y)]), atol=1e-15)
    got = sorted(solve_type2(0.7, 0.0, -0.3))  # [A1.4]-[A1.5]: X Sθ = Z
    a = math.asin(-0.3 / 0.7)
    assert np.allclose(got, sorted([a, float(wrap(PI - a))]), atol=1e-15)
    got = sorted(solve_type2(0.7, -0.2, 0.0))  # [A1.6]: θ = atan2(−Y, X), θ + π
    t = math.atan2(0.2, 0.7)
    assert np.allclose(got, sorted([t, float(wrap(t + PI))]), atol=1e-15)
    for k in range(50):  # tangent (|Z| = √(X² + Y²)), any signs: one double root
        X, Y = rng.normal(size=2)
        for e in (1.0, -1.0):
            Z = e * math.hypot(X, Y)
            sols = solve_type2(X, Y, Z)
            assert len(sols) == 1
            assert abs(X * math.sin(sols[0]) + Y * math.cos(sols[0]) - Z) <= 1e-12 * max(1, abs(Z))
            if k < 5:  # just beyond: none
                t = grid(rng)
                assert sign_changes(X * np.sin(t) + Y * np.cos(t) - Z * (1 + 1e-9)) == 0
                assert solve_type2(X, Y, Z * (1 + 1e-9)) == []
    assert solve_type2(0.0, 0.0, 0.0, default=0.7) == [0.7]  # identity (singular configuration)
    assert solve_type2(1e-14, -1e-14, 1e-14, default=-0.2) == [-0.2]
    assert solve_type2(0.0, 0.0, 1.0) == []
    with pytest.raises(ValueError):
        solve_type2(1.0, np.inf, 0.0)


# --------------------------------------------------------------------------------------------- type 3
def test_type3():
    rng = np.random.default_rng(3)
    for _ in range(300):
        X1, Y1, X2, Y2 = rng.normal(size=4)
        t0 = rng.uniform(-PI, PI)
        Z1, Z2 = X1 * math.sin(t0) + Y1 * math.cos(t0), X2 * math.sin(t0) + Y2 * math.cos(t0)
        sols = solve_type3(X1, Y1, Z1, X2, Y2, Z2)
        assert len(sols) == 1 and has_angle(sols, t0, 1e-8)
        t = sols[0]
        s = max(1, *map(abs, (X1, Y1, Z1, X2, Y2, Z2)))
        assert abs(X1 * math.sin(t) + Y1 * math.cos(t) - Z1) <= 1e-12 * s
        assert abs(X2 * math.sin(t) + Y2 * math.cos(t) - Z2) <= 1e-12 * s
        assert solve_type3(X1, Y1, Z1, X2, Y2, Z2 + 0.1) == []  # inconsistent
        k = rng.normal()  # dependent equations: solved as a type 2, both solutions satisfy both
        dep = solve_type3(X1, Y1, Z1, k * X1, k * Y1, k * Z1)
        assert len(dep) == 2 and has_angle(dep, t0, 1e-7)
        assert np.allclose(sorted(dep), sorted(solve_type2(X1, Y1, Z1)))
        assert solve_type3(X1, Y1, Z1, k * X1, k * Y1, k * Z1 + 0.3) == []
    t0 = 2.5  # [A1.15]-[A1.16]: Y1 = X2 = 0
    assert solve_type3(0.4, 0.0, 0.4 * math.sin(t0), 0.0, 2.0, 2.0 * math.cos(t0)) == [pytest.approx(t0, abs=1e-15)]
    assert solve_type3(0, 0, 0, 0, 0, 0, default=1.1) == [1.1]
    assert solve_type3(0, 0, 1e-3, 0, 0, 0) == []


# ---------------------------------------------------------------------------------------- types 4, 5
def test_type4():
    rng = np.random.default_rng(4)
    for _ in range(200):
        X1, X2 = rng.normal(size=2)
        r0, t0 = rng.normal(), rng.uniform(-PI, PI)
        Y1, Y2 = X1 * r0 * math.sin(t0), X2 * r0 * math.cos(t0)
        sols = solve_type4(X1, Y1, X2, Y2)
        assert len(sols) == 2
        for t, r in sols:
            s = max(1, abs(X1), abs(X2), abs(Y1), abs(Y2))
            assert max(abs(X1 * r * math.sin(t) - Y1), abs(X2 * r * math.cos(t) - Y2)) <= 1e-12 * s
        assert any(abs(r - r0) <= 1e-12 and abs(wrap(t - t0)) <= 1e-9 for t, r in sols)
        assert any(abs(r + r0) <= 1e-12 and abs(wrap(t - t0 - PI)) <= 1e-9 for t, r in sols)  # (−r, θ + π)
    assert solve_type4(1.0, 0.0, 2.0, 0.0, default=0.3) == [(0.3, 0.0)]  # r = 0: θ free
    with pytest.raises(ValueError):
        solve_type4(0.0, 1.0, 1.0, 1.0)


def test_type5():
    rng = np.random.default_rng(5)
    for k in range(200):
        X1, X2, Z1, Z2 = rng.normal(size=4)
        r0, t0 = rng.normal(), rng.uniform(-PI, PI)
        Y1, Y2 = X1 * math.sin(t0) - Z1 * r0, X2 * math.cos(t0) - Z2 * r0
        sols = solve_type5(X1, Y1, Z1, X2, Y2, Z2)
        s = max(1, *map(abs, (X1, Y1, Z1, X2, Y2, Z2)))
        for t, r in sols:
            assert max(abs(X1 * math.sin(t) - Y1 - Z1 * r), abs(X2 * math.cos(t) - Y2 - Z2 * r)) <= 1e-12 * s
        assert any(abs(r - r0) <= 1e-8 and abs(wrap(t - t0)) <= 1e-8 for t, r in sols)
        if k < 30:  # r eliminated by the first equation, the second scanned in θ
            t = grid(rng)
            count = sign_changes(X2 * np.cos(t) - Y2 - Z2 * (X1 * np.sin(t) - Y1) / Z1)
            assert len(sols) == count == 2
    assert solve_type5(1.0, 3.0, 1.0, 1.0, 3.0, -1.0) == []  # Sθ = 3 + r, Cθ = 3 − r: S² + C² ≥ 18, [A1.21] < 0
    with pytest.raises(ValueError):
        solve_type5(0.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        solve_type5(1.0, 1.0, 0.0, 1.0, 1.0, 0.0)


# ------------------------------------------------------------------------------------- types 6, 7, 8
def test_type6_is_a_type2_in_theta_i():
    rng = np.random.default_rng(6)
    for k in range(200):
        W, X, Y = rng.normal(size=3)
        ti, tj = rng.uniform(-PI, PI, 2)
        Z1 = W * math.sin(tj) - X * math.cos(ti) - Y * math.sin(ti)
        Z2 = W * math.cos(tj) - X * math.sin(ti) + Y * math.cos(ti)
        sols = solve_type6(W, X, Y, Z1, Z2)
        s = max(1, *map(abs, (W, X, Y, Z1, Z2)))
        for a, b in sols:
            r1 = X * math.cos(a) + Y * math.sin(a) + Z1
            r2 = X * math.sin(a) - Y * math.cos(a) + Z2
            assert max(abs(W * math.sin(b) - r1), abs(W * math.cos(b) - r2)) <= 1e-12 * s
        assert any(abs(wrap(a - ti)) <= 1e-7 and abs(wrap(b - tj)) <= 1e-7 for a, b in sols)
        if k < 30:
            t = grid(rng)
            count = sign_changes((X * np.cos(t) + Y * np.sin(t) + Z1) ** 2
                               + (X * np.sin(t) - Y * np.cos(t) + Z2) ** 2 - W**2)
            assert len(sols) == count
    # Z1 = Z2 = 0 and W² = X² + Y²: θi free (default), θj follows
    sols = solve_type6(5.0, 3.0, 4.0, 0.0, 0.0, default=0.4)
    assert len(sols) == 1 and sols[0][0] == 0.4
    with pytest.raises(ValueError):
        solve_type6(0.0, 1.0, 1.0, 1.0, 1.0)


def test_type7():
    rng = np.random.default_rng(7)
    for k in range(200):
        W1, W2, X, Y = rng.normal(size=4)
        ti, tj = rng.uniform(-PI, PI, 2)
        Z1 = W1 * math.cos(tj) + W2 * math.sin(tj) - X * math.cos(ti) - Y * math.sin(ti)
        Z2 = W1 * math.sin(tj) - W2 * math.cos(tj) - X * math.sin(ti) + Y * math.cos(ti)
        sols = solve_type7(W1, W2, X, Y, Z1, Z2)
        s = max(1, *map(abs, (W1, W2, X, Y, Z1, Z2)))
        for a, b in sols:
            r1 = X * math.cos(a) + Y * math.sin(a) + Z1
            r2 = X * math.sin(a) - Y * math.cos(a) + Z2
            assert abs(W1 * math.cos(b) + W2 * math.sin(b) - r1) <= 1e-12 * s
            assert abs(W1 * math.sin(b) - W2 * math.cos(b) - r2) <= 1e-12 * s
        assert any(abs(wrap(a - ti)) <= 1e-7 and abs(wrap(b - tj)) <= 1e-7 for a, b in sols)
        if k < 30:
            t = grid(rng)
            count = sign_changes((X * np.cos(t) + Y * np.sin(t) + Z1) ** 2
                               + (X * np.sin(t) - Y * np.cos(t) + Z2) ** 2 - W1**2 - W2**2)
            assert len(sols) == count
    assert solve_type7(0.1, 0.0, 3.0, 0.0, 0.0, 0.0) == []  # |RHS| = 3 > |W| = 0.1
    with pytest.raises(ValueError):
        solve_type7(0.0, 0.0, 1.0, 1.0, 1.0, 1.0)


def test_type8_two_link_planar():
    rng = np.random.default_rng(8)
    for k in range(200):
        X, Y = rng.uniform(0.2, 1.0, 2) * rng.choice([-1, 1], 2)
        ti, tj = rng.uniform(-PI, PI, 2)
        Z1 = X * math.cos(ti) + Y * math.cos(ti + tj)
        Z2 = X * math.sin(ti) + Y * math.sin(ti + tj)
        sols = solve_type8(X, Y, Z1, Z2)
        for a, b in sols:
            assert abs(X * math.cos(a) + Y * math.cos(a + b) - Z1) <= 1e-12
            assert abs(X * math.sin(a) + Y * math.sin(a + b) - Z2) <= 1e-12
        assert any(abs(wrap(a - ti)) <= 1e-7 and abs(wrap(b - tj)) <= 1e-7 for a, b in sols)
        if k < 30:
            d2 = Z1 * Z1 + Z2 * Z2
            t = grid(rng)
            assert len(sols) == sign_changes((X + Y * np.cos(t)) ** 2 + (Y * np.sin(t)) ** 2 - d2) == 2
        assert solve_type8(X, Y, 1.01 * (abs(X) + abs(Y)), 0.0) == []  # beyond reach
    sols = solve_type8(0.6, 0.4, math.cos(0.3), math.sin(0.3))  # stretched: one solution
    assert len(sols) == 1 and np.allclose(sols[0], (0.3, 0.0), atol=1e-15)
    assert solve_type8(0.5, -0.5, 0.0, 0.0, default=0.9) == [(0.9, 0.0)]  # folded onto the origin: θi free
    with pytest.raises(ValueError):
        solve_type8(0.0, 1.0, 0.5, 0.5)


# ---------------------------------------------------------------------------------------------- RX-90
RX90 = SEED_ROBOTS["rx90"]()
RX90_PIN = PinocchioURDF(urdf_text("rx90"))


def pin_pose(q):
    return RX90_PIN.link_poses(RX90.joint_names, q, [RX90.tip_link], RX90.base_link)[RX90.tip_link]


def closest(sols, q, sigma=None):
    """max |Δq| of the solution nearest q (revolute joints modulo 2π)."""
    rev = np.ones(len(q), bool) if sigma is None else sigma == 0
    return min(float(np.abs(np.where(rev, wrap(s - q), s - q)).max()) for s in sols)


def test_rx90_dgm_matches_pinocchio_mdh_and_urdf():
    pm = pinocchio_model(RX90)
    data = pm.createData()
    tool = RX90.tool_transform
    for q in np.random.default_rng(9).uniform(-2, 2, (10, 6)):
        pin.forwardKinematics(pm, data, q)
        from_mdh = data.oMi[6].homogeneous @ tool
        assert np.abs(RX90.forward_kinematics(q) - from_mdh).max() <= 1e-12
        assert np.abs(RX90.forward_kinematics(q) - pin_pose(q)).max() <= 1e-12


def numeric_solutions(fk, target, n, rng, starts, lo, hi):
    """Distinct solutions of fk(q) = target found by least squares from random starts (the completeness oracle)."""
    def residual(q):
        t = fk(q)
        return np.concatenate([t[:3, 3] - target[:3, 3], pin.log3(target[:3, :3].T @ t[:3, :3])])
    found = []
    for _ in range(starts):
        res = least_squares(residual, rng.uniform(lo, hi, n), xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=400)
        if np.abs(res.fun).max() <= 1e-9:
            found.append(res.x)
    return found


def test_rx90_random_configurations_all_eight_solutions():
    rng = np.random.default_rng(10)
    lim = RX90.limits
    counts: dict[int, int] = {}
    worst = {"dgm": 0.0, "pin": 0.0, "q": 0.0}
    fewer = []
    n_samples = 250
    for q in rng.uniform(lim["lower"], lim["upper"], (n_samples, 6)):
        target = pin_pose(q)
        sols = analytic_inverse_geometry(RX90, target)
        counts[len(sols)] = counts.get(len(sols), 0) + 1
        worst["dgm"] = max(worst["dgm"], np.abs(RX90.forward_kinematics(np.array(sols)) - target).max())
        worst["pin"] = max(worst["pin"], max(np.abs(pin_pose(s) - target).max() for s in sols))
        worst["q"] = max(worst["q"], closest(sols, q))
        if len(sols) != 8:
            fewer.append(float(np.linalg.svd(RX90.jacobian(q), compute_uv=False)[-1]))
        # the book's RX-90 equations give the same set
        book = rx90_inverse_geometry(RX90, target)
        assert len(book) == len(sols) and max(closest(book, s) for s in sols) <= 1e-9
        # distinct solutions (modulo 2π)
        assert all(closest(sols[:i], s) > 1e-6 for i, s in enumerate(sols) if i)
    print(f"\nRX-90, {n_samples} random configurations: solution counts {counts}; samples with fewer than 8: "
          f"{len(fewer)} (smallest singular value of J there: {fewer}); worst pose error DGM {worst['dgm']:.1e}, "
          f"Pinocchio {worst['pin']:.1e}; worst distance of the original q to its solution {worst['q']:.1e} rad")
    assert worst["dgm"] <= 1e-10 and worst["pin"] <= 1e-10 and worst["q"] <= 1e-9
    assert counts.get(8, 0) >= 0.98 * n_samples
    assert all(s < 1e-3 for s in fewer)  # only (near-)singular samples have fewer


def test_rx90_no_solution_is_missed():
    """Every solution a multi-start least-squares search finds (pose equations through Pinocchio) is in the list."""
    rng = np.random.default_rng(11)
    for q in rng.uniform(-2.0, 2.0, (3, 6)):
        target = pin_pose(q)
        sols = analytic_inverse_geometry(RX90, target)
        found = numeric_solutions(pin_pose, target, 6, rng, 30, -PI, PI)
        assert len(found) >= 10
        assert max(closest(sols, f) for f in found) <= 1e-6
        distinct = {tuple(np.round(wrap(f), 4)) for f in found}
        print(f"\nnumeric search: {len(found)} converged starts, {len(distinct)} distinct solutions, "
              f"analytic {len(sols)}")


SINGULAR = {  # name: (q, expected count with q_ref = q)
    "shoulder (wrist centre on z1)": ([0.4, 0.3, PI / 2 - 0.6, 0.5, 0.7, -0.2], 4),  # θ1 free: 1 x 2 x 2
    "elbow stretched": ([0.4, 0.3, -PI / 2, 0.5, 0.7, -0.2], 4),  # double root θ3: 2 x 1 x 2
    "folded (wrist centre at O1 = O2)": ([0.4, 0.3, PI / 2, 0.5, 0.7, -0.2], 2),  # θ1, θ2 free, θ3 double
    "wrist (z4 = z6)": ([0.4, 0.3, 0.8, 0.5, 0.0, -0.2], 6),  # θ4 free on the 2 arm branches with that forearm line
    "shoulder + wrist": ([0.4, 0.3, PI / 2 - 0.6, 0.5, 0.0, -0.2], 3),
    "elbow + wrist": ([0.4, 0.3, -PI / 2, 0.5, 0.0, -0.2], 2),
}


@pytest.mark.parametrize("name", list(SINGULAR))
def test_rx90_singular_poses(name):
    q, expected = SINGULAR[name]
    q = np.array(q)
    target = pin_pose(q)
    for solver in (analytic_inverse_geometry, rx90_inverse_geometry):
        with_ref = solver(RX90, target, q_ref=q)
        assert len(with_ref) == expected
        assert closest(with_ref, q) <= 1e-12  # the free joints take their q_ref values
        assert np.abs(RX90.forward_kinematics(np.array(with_ref)) - target).max() <= 1e-12
        plain = solver(RX90, target)
        assert 1 <= len(plain) <= 8
        assert max(np.abs(pin_pose(s) - target).max() for s in plain) <= 1e-12
    worst = 0.0
    for eps in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11):  # approaching the singularity: every solution reproduces the pose
        qe = q + eps
        target = pin_pose(qe)
        sols = analytic_inverse_geometry(RX90, target, q_ref=qe)
        assert sols
        worst = max(worst, max(np.abs(pin_pose(s) - target).max() for s in sols))
        if eps >= 1e-5:  # closer, the joint values are ill-conditioned (round-off / eps, / eps² at two singularities)
            assert closest(sols, qe) <= max(1e-9, 1e-15 / eps**2)
    print(f"\n{name}: worst pose error within 1e-3..1e-11 rad of the singularity {worst:.1e}")
    assert worst <= 1e-9


def test_rx90_turns_limits_and_order():
    lim = RX90.limits
    q = np.array([0.4, -0.5, 1.0, 4.0, 0.6, -4.2])  # q4, q6 beyond ±π (limits ±3π/2)
    target = pin_pose(q)
    sols = analytic_inverse_geometry(RX90, target, q_ref=q)
    assert np.allclose(sols[0], q, atol=1e-9)  # nearest q_ref first, on the turn nearest it
    turns = analytic_inverse_geometry(RX90, target, all_turns=True)
    assert len(turns) > len(sols)
    inside = [bool(np.all(s >= lim["lower"] - 1e-12) & np.all(s <= lim["upper"] + 1e-12)) for s in turns]
    assert inside == sorted(inside, reverse=True)  # within the limits first
    assert closest([s for s in turns], q) <= 1e-9 and any(np.abs(s - q).max() <= 1e-9 for s in turns)
    for s in turns:
        assert np.abs(pin_pose(s) - target).max() <= 1e-12
    strict = analytic_inverse_geometry(RX90, target, within_limits=True, all_turns=True)
    assert len(strict) == sum(inside) and all(np.all(s >= lim["lower"] - 1e-12) for s in strict)
    # every solution modulo 2π of a joint with a range ≥ 2π has one turn in range: joints 4 and 6 (±3π/2) have 2
    base = analytic_inverse_geometry(RX90, target)
    assert len(strict) == sum(
        int(np.prod([len([k for k in range(-2, 3) if lim["lower"][j] - 1e-12 <= s[j] + 2 * PI * k <= lim["upper"][j]
                          + 1e-12]) for j in range(6)])) for s in base)


def test_facade_method_analytic():
    rng = np.random.default_rng(12)
    lim = RX90.limits
    for q in rng.uniform(0.9 * lim["lower"], 0.9 * lim["upper"], (10, 6)):
        target = pin_pose(q)
        sol = RX90.inverse_kinematics(target, q0=q + 0.05, method="analytic")
        assert np.abs(sol - q).max() <= 1e-9  # the in-limit solution nearest q0
        sol = RX90.inverse_kinematics(target, method="analytic")
        assert np.all(sol >= lim["lower"]) and np.all(sol <= lim["upper"])
        assert np.abs(pin_pose(sol) - target).max() <= 1e-12
    far = pin_pose(np.zeros(6))
    far[:3, 3] *= 3.0
    with pytest.raises(ValueError, match="no solution"):
        RX90.inverse_kinematics(far, method="analytic")
    with pytest.raises(ValueError):
        RX90.inverse_kinematics(far[:3, 3], position_only=True, method="analytic")


# --------------------------------------------------------------------- other arms: offsets, P joint, routes
def test_stanford_arm_prismatic_joint_and_offsets():
    """Stanford arm (003 Fig. 2): RRP + spherical wrist, θ2 and θ5 offsets, r2 ≠ 0, r3 offset (the type 4 route)."""
    model = SEED_ROBOTS["stanford"]()
    oracle = PinocchioURDF(urdf_text("stanford"))
    lim = model.limits
    rng = np.random.default_rng(13)
    counts = {}
    for q in rng.uniform(lim["lower"], lim["upper"], (60, 6)):
        target = oracle.link_poses(model.joint_names, q, [model.tip_link], model.base_link)[model.tip_link]
        sols = analytic_inverse_geometry(model, target)
        counts[len(sols)] = counts.get(len(sols), 0) + 1
        assert closest(sols, q, model.sigma) <= 1e-9
        for s in sols:
            got = oracle.link_poses(model.joint_names, s, [model.tip_link], model.base_link)[model.tip_link]
            assert np.abs(got - target).max() <= 1e-10
        assert np.all(analytic_inverse_geometry(model, target, within_limits=True)[0] >= lim["lower"] - 1e-12)
    print(f"\nStanford arm, 60 configurations: counts {counts}")
    assert counts == {8: 60}


def random_arm(rng, route, prismatic3):
    """A random 6-joint MDH arm with a spherical wrist (d5 = r5 = d6 = 0) whose shoulder fits ``route``,
    random signs, offsets, base and tool."""
    al = rng.uniform(-PI, PI, 6)
    d, r, th = rng.uniform(-0.5, 0.5, 6), rng.uniform(-0.5, 0.5, 6), rng.uniform(-PI, PI, 6)
    d[4] = r[4] = d[5] = 0.0
    if route == "z2":
        al[2] = rng.choice([PI / 2, -PI / 2]) if prismatic3 else rng.choice([0.0, PI])
    elif route == "norm":
        d[1] = 0.0
    else:
        al[1] = rng.choice([0.0, PI])
    joints = [MDHJoint(name=f"j{j + 1}", antecedent=j, sigma=int(prismatic3 and j == 2), alpha=float(al[j]),
                       d=float(d[j]), theta=float(th[j]), r=float(r[j]), sign=float(rng.choice([-1.0, 1.0])),
                       link=f"l{j + 1}", lower=-PI, upper=PI) for j in range(6)]
    base, tool = np.eye(4), np.eye(4)
    base[:3, :3], base[:3, 3] = random_rotation(rng), rng.uniform(-1, 1, 3)
    tool[:3, :3], tool[:3, 3] = random_rotation(rng), rng.uniform(-0.2, 0.2, 3)
    frames = {"base_link": (0, np.linalg.inv(base)), **{f"l{j + 1}": (j + 1, np.eye(4)) for j in range(6)},
              "tool": (6, tool)}
    inertial = np.array([random_inertial(rng) for _ in range(6)])  # (Pinocchio needs bodies)
    return RobotModel(joints=joints, base_transform=base, frames=frames, tip_link="tool", inertial=inertial)


@pytest.mark.parametrize("prismatic3", [False, True], ids=["RRR", "RRP"])
@pytest.mark.parametrize("route", ["z2", "norm", "z1"])
def test_random_wrist_partitioned_arms(route, prismatic3):
    """Poses from a Pinocchio model of the MDH table; every solution checked in Pinocchio, q among them, and (for
    a few arms) every solution of a multi-start numerical search among them."""
    rng = np.random.default_rng(["z2", "norm", "z1"].index(route) * 2 + prismatic3 + 20)
    counts: dict[int, int] = {}
    for k in range(12):
        model = random_arm(rng, route, prismatic3)
        assert analytic_ik._arm(model, None).route == route
        pm = pinocchio_model(model)
        data = pm.createData()
        tool = model.tool_transform

        def fk(q, pm=pm, data=data, tool=tool):
            pin.forwardKinematics(pm, data, np.asarray(q, float))
            return data.oMi[6].homogeneous @ tool

        for j in range(4):
            q = rng.uniform(-PI, PI, 6)
            if prismatic3:
                q[2] = rng.uniform(-1, 1)
            target = fk(q)
            sols = analytic_inverse_geometry(model, target)
            counts[len(sols)] = counts.get(len(sols), 0) + 1
            assert 1 <= len(sols) <= 8
            assert closest(sols, q, model.sigma) <= 1e-8
            assert max(np.abs(fk(s) - target).max() for s in sols) <= 1e-10
            if k < 2 and j == 0:
                found = numeric_solutions(fk, target, 6, rng, 25, -PI, PI)
                assert found and max(closest(sols, f, model.sigma) for f in found) <= 1e-6
    print(f"\nroute {route}, {'RRP' if prismatic3 else 'RRR'}: counts {counts}")


def test_arms_without_closed_form_raise():
    ur5 = RobotModel.from_urdf(str(example_urdf("ur5")))
    panda = RobotModel.from_urdf(str(example_urdf("panda")), tip_link="panda_link8")
    rng = np.random.default_rng(30)
    general = random_arm(rng, "z2", False)
    rows = list(general.joints)
    rows[1] = MDHJoint(**{**vars(rows[1]), "d": 0.2, "alpha": 1.0})  # d2 ≠ 0, sin α2 ≠ 0 ...
    rows[2] = MDHJoint(**{**vars(rows[2]), "alpha": 0.7})  # ... and z2 not parallel to z3: a quartic
    general = general.replace(joints=rows)
    cases = [(ur5, None, "intersect"), (panda, None, "7 joints"), (SEED_ROBOTS["scara"](), None, "4 joints"),
             (general, None, "numeric"), (RX90, "link5", "frame 5")]
    for model, link, match in cases:
        assert not supports_analytic_inverse_geometry(model, link)
        with pytest.raises(ValueError, match=match):
            analytic_inverse_geometry(model, model.forward_kinematics(np.zeros(model.dof), link), link)
    assert supports_analytic_inverse_geometry(RX90) and supports_analytic_inverse_geometry(SEED_ROBOTS["stanford"]())
    with pytest.raises(ValueError, match="RX-90"):
        rx90_inverse_geometry(SEED_ROBOTS["stanford"](), np.eye(4))
    with pytest.raises(ValueError):
        analytic_inverse_geometry(RX90, np.eye(3))
    bad = np.eye(4)
    bad[:3, :3] *= 2.0
    with pytest.raises(ValueError):
        analytic_inverse_geometry(RX90, bad)
    with pytest.raises(ValueError):
        analytic_inverse_geometry(RX90, np.eye(4), q_ref=np.zeros(5))
    far = np.eye(4)
    far[:3, 3] = [3.0, 0.0, 0.0]
    assert analytic_inverse_geometry(RX90, far) == []  # out of reach: no solution, no error
    assert nearest_inverse_geometry(RX90, far, np.zeros(6)) is None


# --------------------------------------------------------------------------------- the task-space planner
def test_task_space_line_uses_the_closed_form():
    q0 = np.array([0.3, -0.4, 1.2, 0.5, 0.9, -0.3])
    t0 = RX90.forward_kinematics(q0)
    target = t0.copy()
    target[:3, 3] += [0.1, -0.15, 0.08]
    target[:3, :3] = t0[:3, :3] @ pin.exp3(np.array([0.3, -0.2, 0.4]))
    timing = {}
    out = {}
    calls = []
    nearest = analytic_ik._nearest

    def counting(*args, **kwargs):
        calls.append(1)
        return nearest(*args, **kwargs)

    for mode in ("numeric", "analytic", "numeric", "analytic", "auto"):  # timing: the better of two runs
        start = time.perf_counter()
        if mode == "auto":
            analytic_ik._nearest = counting
        try:
            out[mode] = task_space_line(RX90, q0, target, (0.5, 1.0), (1.0, 2.0), period=0.01, inverse_geometry=mode)
        finally:
            analytic_ik._nearest = nearest
        timing[mode] = min(timing.get(mode, np.inf), time.perf_counter() - start)
    num, ana, auto = out["numeric"], out["analytic"], out["auto"]
    assert len(calls) == num.times.size  # "auto" used the closed form at every knot
    assert np.array_equal(num.times, ana.times)
    t = np.linspace(0.0, num.duration, 501)
    qn, qdn, qddn = num.evaluate(t)
    qa, qda, qdda = ana.evaluate(t)
    dq = np.abs(qn - qa).max()
    assert dq <= 1e-9 and np.abs(qdn - qda).max() <= 1e-6 and np.abs(qddn - qdda).max() <= 1e-4
    assert np.array_equal(auto.evaluate(t)[0], qa)
    poses = np.array([pin_pose(x) for x in ana.evaluate(ana.times)[0]])
    assert np.abs(poses - ana.line.pose(ana.times)).max() <= 1e-12  # the knots are on the planned line
    print(f"\ntask_space_line on the RX-90 ({num.times.size} knots): numeric IGM {timing['numeric']:.3f} s, "
          f"closed form {timing['analytic']:.3f} s, auto {timing['auto']:.3f} s; max |Δq| {dq:.1e} rad")


def test_task_space_line_modes():
    ur5 = RobotModel.from_urdf(str(example_urdf("ur5")))
    q0 = np.array([0.3, -1.2, 1.5, -1.0, 1.2, 0.4])
    t0 = ur5.forward_kinematics(q0)
    with pytest.raises(ValueError, match="analytic"):
        task_space_line(ur5, q0, t0, 1.0, 1.0, inverse_geometry="analytic")
    with pytest.raises(ValueError, match="inverse_geometry"):
        task_space_line(RX90, np.zeros(6), RX90.forward_kinematics(np.zeros(6)), 1.0, 1.0, inverse_geometry="x")
    # through a wrist singularity the closed form does not hide it: still an error
    qs = np.array([0.3, -0.4, 1.2, 0.5, 0.0, -0.3])
    ts = RX90.forward_kinematics(qs)
    a, b = ts.copy(), ts.copy()
    a[:3, 3] -= [0.05, 0.0, 0.0]
    b[:3, 3] += [0.05, 0.0, 0.0]
    qa = RX90.inverse_kinematics(a, q0=qs + [0, 0, 0, 0, 0.1, 0], method="analytic")
    with pytest.raises(ValueError, match="singular"):
        task_space_line(RX90, qa, b, 0.1, 0.5)
