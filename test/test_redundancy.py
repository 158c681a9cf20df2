"""Inverse kinematic models of redundant arms (002 ch. 6) against independent solutions: numpy's pinv, KKT
systems and null-space bases (scipy), the stacked least-squares system [6.14], finite differences of the
DGM, Pinocchio (DGM, Jacobian and its derivative)."""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg
from example_robots import example_urdf
from pinocchio_oracle import PinocchioURDF

from robot_dynamics import RobotModel
from robot_dynamics.kinematics.geometric_model import rotation_vector
from robot_dynamics.kinematics.redundancy import (
    SecondaryTask,
    damped_least_squares,
    damped_pseudo_inverse,
    gradient_projection,
    joint_limit_criterion,
    maciejewski_damping,
    manipulability,
    manipulability_criterion,
    nakamura_damping,
    null_space_projector,
    pseudo_inverse,
    reach_bound,
    task_priority,
    weighted_pseudo_inverse,
)
from robot_dynamics.model.seed_robots import SEED_ROBOTS, urdf_text

PANDA_PATH = example_urdf("panda")
PANDA = RobotModel.from_urdf(str(PANDA_PATH), tip_link="panda_hand_tcp")  # fingers off the chain: lumped
ORACLE = PinocchioURDF(PANDA_PATH)
LOWER, UPPER = PANDA.limits["lower"], PANDA.limits["upper"]
TIP = PANDA.tip_link


def _rank_deficient(rng: np.random.Generator, m: int, n: int, r: int) -> np.ndarray:
    return rng.normal(size=(m, r)) @ rng.normal(size=(r, n))


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _panda_q(rng: np.random.Generator, count: int, inner: float = 1.0) -> np.ndarray:
    mid, half = 0.5 * (LOWER + UPPER), 0.5 * inner * (UPPER - LOWER)
    return rng.uniform(mid - half, mid + half, (count, PANDA.dof))


def _oracle_pose(q: np.ndarray, link: str = TIP) -> np.ndarray:
    return ORACLE.link_poses(PANDA.joint_names, q, [link], PANDA.base_link)[link]


# ------------------------------------------------------------------------------- velocity level
def test_pseudo_inverse_equals_numpy_pinv_and_penrose_conditions() -> None:
    rng = np.random.default_rng(0)
    cases = [rng.normal(size=(6, 7)), rng.normal(size=(3, 7)), rng.normal(size=(7, 3)), _rank_deficient(rng, 6, 7, 4)]
    for J in cases:
        jp = pseudo_inverse(J)
        assert np.abs(jp - np.linalg.pinv(J, rcond=1e-10)).max() <= 1e-10
        # [A4.12]
        assert np.abs(J @ jp @ J - J).max() <= 1e-10
        assert np.abs(jp @ J @ jp - jp).max() <= 1e-10
        assert np.abs(J @ jp - (J @ jp).T).max() <= 1e-12
        assert np.abs(jp @ J - (jp @ J).T).max() <= 1e-12


def test_null_space_projector_properties() -> None:
    rng = np.random.default_rng(1)
    q = _panda_q(rng, 1)[0]
    cases = [PANDA.jacobian(q), rng.normal(size=(3, 7)), _rank_deficient(rng, 6, 7, 4)]
    for J in cases:
        rank = np.linalg.matrix_rank(J)
        basis = scipy.linalg.null_space(J)  # independent: orthonormal basis of N(J)
        N = null_space_projector(J)
        assert np.abs(J @ N).max() <= 1e-12
        assert np.abs(N @ N - N).max() <= 1e-12
        assert np.abs(N - N.T).max() <= 1e-12
        assert np.abs(N - basis @ basis.T).max() <= 1e-10
        assert np.trace(N) == pytest.approx(7 - rank, abs=1e-10)
        for W in (rng.uniform(0.2, 5.0, 7), _spd(rng, 7)):
            E = np.diag(W) if W.ndim == 1 else W
            Nw = null_space_projector(J, W)
            assert np.abs(J @ Nw).max() <= 1e-11
            assert np.abs(Nw @ Nw - Nw).max() <= 1e-11
            assert np.abs(E @ Nw - (E @ Nw).T).max() <= 1e-10 * np.abs(E).max()  # W-orthogonal projector
            x, y = rng.normal(size=7), rng.normal(size=7)
            assert (Nw @ x) @ E @ ((np.eye(7) - Nw) @ y) == pytest.approx(0.0, abs=1e-10)
            assert np.trace(Nw) == pytest.approx(7 - rank, abs=1e-10)
            assert np.abs(Nw @ basis - basis).max() <= 1e-10  # identity on N(J)


def test_weighted_pseudo_inverse_minimizes_the_weighted_norm() -> None:
    """q̇ = J_E⁺Ẋ against the KKT system of min q̇ᵀEq̇ s.t. Jq̇ = Ẋ ([6.28]-[6.30])."""
    rng = np.random.default_rng(2)
    for m in (6, 3):
        J = rng.normal(size=(m, 7))
        xdot = rng.normal(size=m)
        for W in (rng.uniform(0.1, 10.0, 7), _spd(rng, 7)):
            E = np.diag(W) if W.ndim == 1 else W
            kkt = np.block([[E, J.T], [J, np.zeros((m, m))]])
            ref = np.linalg.solve(kkt, np.concatenate([np.zeros(7), xdot]))[:7]
            qd = weighted_pseudo_inverse(J, W) @ xdot
            assert np.abs(qd - ref).max() <= 1e-10
            assert np.abs(J @ qd - xdot).max() <= 1e-10
            # [6.30] written out for a full-rank J
            assert np.abs(weighted_pseudo_inverse(J, W) - np.linalg.solve(E, J.T) @ np.linalg.inv(
                J @ np.linalg.solve(E, J.T))).max() <= 1e-10
            basis = scipy.linalg.null_space(J)
            for z in rng.normal(size=(20, basis.shape[1])):
                other = qd + basis @ z
                assert other @ E @ other >= qd @ E @ qd
    # rank-deficient J, incompatible Ẋ: minimum-E-norm least-squares solution (scipy's lsq in y = Lᵀq)
    J = _rank_deficient(rng, 6, 7, 4)
    xdot = rng.normal(size=6)
    E = _spd(rng, 7)
    low = np.linalg.cholesky(E)
    y = scipy.linalg.lstsq(J @ np.linalg.inv(low.T), xdot, lapack_driver="gelsd")[0]
    assert np.abs(weighted_pseudo_inverse(J, E) @ xdot - np.linalg.solve(low.T, y)).max() <= 1e-9


def test_damped_least_squares_is_the_stacked_least_squares_solution() -> None:
    """[6.13]-[6.16] against the least-squares solution of [J; λI] q̇ = [Ẋ; 0] ([6.14]), weighted as well."""
    rng = np.random.default_rng(3)
    for J in (rng.normal(size=(6, 7)), _rank_deficient(rng, 6, 7, 4), rng.normal(size=(7, 3))):
        m, n = J.shape
        xdot = rng.normal(size=m)
        for lam in (1e-3, 0.1, 2.0):
            ref = np.linalg.lstsq(np.vstack([J, lam * np.eye(n)]), np.concatenate([xdot, np.zeros(n)]), rcond=None)[0]
            assert np.abs(damped_least_squares(J, xdot, lam) - ref).max() <= 1e-9
            E = _spd(rng, n)
            low = np.linalg.cholesky(E)
            ref = np.linalg.lstsq(np.vstack([J, lam * low.T]), np.concatenate([xdot, np.zeros(n)]), rcond=None)[0]
            assert np.abs(damped_least_squares(J, xdot, lam, E) - ref).max() <= 1e-9
        assert np.abs(damped_pseudo_inverse(J, 0.0) - np.linalg.pinv(J, rcond=1e-10)).max() <= 1e-9


def test_damping_schedules_and_manipulability_hand_values() -> None:
    """J = [diag(3, 2, 0.05) 0]: s_min = 0.05, w = 0.3 ([5.38]); [6.20], [6.21] (errata 43) by hand."""
    J = np.hstack([np.diag([3.0, 2.0, 0.05]), np.zeros((3, 1))])
    rot = np.linalg.qr(np.random.default_rng(4).normal(size=(4, 4)))[0]
    J = J @ rot  # same singular values
    assert manipulability(J) == pytest.approx(0.3, rel=1e-12)
    assert maciejewski_damping(J, 0.1) == pytest.approx(np.sqrt(0.1**2 - 0.05**2), rel=1e-12)
    assert maciejewski_damping(J, 0.04) == 0.0
    assert maciejewski_damping(J, 0.05 + 1e-12) == pytest.approx(0.0, abs=1e-5)  # continuous at s_min = ε
    assert nakamura_damping(J, 0.2, 0.5) == pytest.approx(0.2 * (1 - 0.3 / 0.5) ** 2, rel=1e-12)
    assert nakamura_damping(J, 0.2, 0.2) == 0.0
    square = np.random.default_rng(5).normal(size=(6, 6))
    assert manipulability(square) == pytest.approx(abs(np.linalg.det(square)), rel=1e-10)  # [5.39]
    assert manipulability(np.ones((4, 3))) == 0.0
    with pytest.raises(ValueError, match="epsilon"):
        maciejewski_damping(J, 0.0)
    with pytest.raises(ValueError, match="lambda0"):
        nakamura_damping(J, -1.0, 0.1)


def test_joint_limit_criterion_hand_values_and_gradient() -> None:
    """[6.34]-[6.37]: φ = Σ((qᵢ − q_moy,i)/Δqᵢ)², ∂φ/∂qᵢ = 2(qᵢ − q_moy,i)/Δqᵢ²; p-norm form [6.39]."""
    lower, upper = np.array([-1.0, 0.0, -np.inf]), np.array([3.0, 2.0, np.inf])
    phi, g = joint_limit_criterion(np.array([1.0, 2.0, 5.0]), lower, upper)
    assert phi == pytest.approx(0.0 + 0.25)
    assert g == pytest.approx([0.0, 2 * 1.0 / 4.0, 0.0])
    rng = np.random.default_rng(6)
    for p in (2.0, 6.0):
        q = rng.uniform(LOWER, UPPER)
        phi, g = joint_limit_criterion(q, LOWER, UPPER, p=p)
        x = (q - 0.5 * (LOWER + UPPER)) / (UPPER - LOWER)
        assert phi == pytest.approx(np.sum(np.abs(x) ** p), rel=1e-12)
        h = 1e-6
        fd = [(joint_limit_criterion(q + h * e, LOWER, UPPER, p=p)[0]
               - joint_limit_criterion(q - h * e, LOWER, UPPER, p=p)[0]) / (2 * h) for e in np.eye(7)]
        assert np.abs(g - fd).max() <= 1e-7
    with pytest.raises(ValueError, match="upper"):
        joint_limit_criterion(np.zeros(2), np.zeros(2), np.zeros(2))


def _task_velocity(q: np.ndarray, qd: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Ẋ = [v; ω] of the tip by central differences of the Pinocchio DGM along q̇."""
    a, b = _oracle_pose(q + h * qd), _oracle_pose(q - h * qd)
    return np.concatenate([(a[:3, 3] - b[:3, 3]) / (2 * h), rotation_vector(a[:3, :3] @ b[:3, :3].T) / (2 * h)])


def test_optimization_term_improves_the_criterion_without_changing_the_task_velocity() -> None:
    """[6.32]: the homogeneous term α N ∇φ moves along the self-motion only (finite differences of the DGM),
    and decreases φ for α < 0 (joint limits [6.36]) or increases it for α > 0 (manipulability [6.40])."""
    rng = np.random.default_rng(7)
    h = 1e-6
    for q in _panda_q(rng, 5, inner=0.9):
        J = PANDA.jacobian(q)
        xdot = rng.normal(size=6) * 0.1
        _, g = joint_limit_criterion(q, LOWER, UPPER)
        w, gw = manipulability_criterion(PANDA, q)
        for W in (None, rng.uniform(0.5, 3.0, 7)):
            plain = gradient_projection(J, xdot, g, 0.0, W)
            for qd in (plain, gradient_projection(J, xdot, g, -0.5, W), gradient_projection(J, xdot, gw, 2.0, W)):
                assert np.abs(_task_velocity(q, qd) - xdot).max() <= 1e-7
            rate = [(joint_limit_criterion(q + h * v, LOWER, UPPER)[0] - joint_limit_criterion(q - h * v, LOWER,
                     UPPER)[0]) / (2 * h) for v in (plain, gradient_projection(J, xdot, g, -0.5, W))]
            assert rate[1] < rate[0] - 1e-6
            up = gradient_projection(J, xdot, gw, 2.0, W)
            dw = [(manipulability(PANDA.jacobian(q + h * v)) - manipulability(PANDA.jacobian(q - h * v))) / (2 * h)
                  for v in (plain, up)]
            assert dw[1] > dw[0]


def test_manipulability_gradient_equals_pinocchio_jacobian_derivative() -> None:
    """∂w/∂q_k = w tr(J⁺ ∂J/∂q_k) with ∂J/∂q_k = dJ/dt at q̇ = e_k from Pinocchio."""
    model, fid = ORACLE.model, ORACLE.model.getFrameId(TIP, pin.BODY)
    cols = [ORACLE.v_index(n) for n in PANDA.joint_names]
    for q in _panda_q(np.random.default_rng(8), 5):
        qp = ORACLE.q_vector(PANDA.joint_names, q)
        pin.computeJointJacobians(model, ORACLE.data, qp)
        pin.updateFramePlacements(model, ORACLE.data)
        J = pin.getFrameJacobian(model, ORACLE.data, fid, pin.LOCAL_WORLD_ALIGNED)[:, cols]
        w_ref = np.sqrt(np.linalg.det(J @ J.T))
        grad = []
        for k in cols:
            v = np.zeros(model.nv)
            v[k] = 1.0
            pin.computeJointJacobiansTimeVariation(model, ORACLE.data, qp, v)
            dj = pin.getFrameJacobianTimeVariation(model, ORACLE.data, fid, pin.LOCAL_WORLD_ALIGNED)[:, cols]
            grad.append(w_ref * np.trace(np.linalg.pinv(J) @ dj))
        w, g = manipulability_criterion(PANDA, q)
        assert w == pytest.approx(w_ref, rel=1e-10)
        assert np.abs(g - grad).max() <= 1e-7 * max(1.0, np.abs(grad).max())


def test_task_priority_velocity_level() -> None:
    """[6.48]: primary exact; secondary exact when compatible, else least squares in the null space of the
    primary (scipy null-space basis + lstsq); the Z₂ term and the damped J₃⁺ leave the primary exact."""
    rng = np.random.default_rng(9)
    n = 7
    # compatible (m1 + m2 <= n)
    J1, J2 = rng.normal(size=(4, n)), rng.normal(size=(2, n))
    x1, x2 = rng.normal(size=4), rng.normal(size=2)
    z2 = rng.normal(size=n)
    for W in (None, rng.uniform(0.5, 2.0, n)):
        for z in (None, z2):
            qd = task_priority(J1, x1, J2, x2, z, W=W)
            assert np.abs(J1 @ qd - x1).max() <= 1e-10
            assert np.abs(J2 @ qd - x2).max() <= 1e-10
    # without Z₂ it is the minimum-E-norm solution of both tasks (KKT)
    E = np.diag(rng.uniform(0.5, 2.0, n))
    a = np.vstack([J1, J2])
    kkt = np.block([[E, a.T], [a, np.zeros((6, 6))]])
    ref = np.linalg.solve(kkt, np.concatenate([np.zeros(n), x1, x2]))[:n]
    assert np.abs(task_priority(J1, x1, J2, x2, W=np.diag(E)) - ref).max() <= 1e-10
    # incompatible (m1 + m2 > n)
    J1, J2 = rng.normal(size=(6, n)), rng.normal(size=(3, n))
    x1, x2 = rng.normal(size=6), rng.normal(size=3)
    qd = task_priority(J1, x1, J2, x2)
    assert np.abs(J1 @ qd - x1).max() <= 1e-10
    basis = scipy.linalg.null_space(J1)
    qp = np.linalg.lstsq(J1, x1, rcond=None)[0]
    z = np.linalg.lstsq(J2 @ basis, x2 - J2 @ qp, rcond=None)[0]
    best = np.linalg.norm(J2 @ (qp + basis @ z) - x2)
    assert np.linalg.norm(J2 @ qd - x2) == pytest.approx(best, rel=1e-10)
    # algorithmic singularity: a secondary row in the row space of J1 makes J₃ lose rank
    J1 = rng.normal(size=(3, n))
    J2 = np.vstack([J1[0] + 1e-9 * rng.normal(size=n), rng.normal(size=n)])
    x1, x2 = rng.normal(size=3), rng.normal(size=2)
    robust = task_priority(J1, x1, J2, x2, damping=1e-2)
    assert np.abs(J1 @ robust - x1).max() <= 1e-9
    assert np.linalg.norm(robust) < 1e-3 * np.linalg.norm(task_priority(J1, x1, J2, x2))
    with pytest.raises(ValueError, match="columns"):
        task_priority(J1, x1, J2[:, :5], x2)


# ------------------------------------------------------------------------------- position level
def _strictly_inside(q: np.ndarray) -> bool:
    return bool(np.all(q > LOWER) and np.all(q < UPPER))


def test_panda_random_poses_with_joint_limit_avoidance_vs_dls() -> None:
    """100 poses of random configurations within the limits (seeded): every joint-limit-avoidance solution
    is strictly inside the limits and reproduces the pose to 1e-8 through Pinocchio's DGM; at the solutions
    away from the limits the criterion ([6.39], p = 6) is stationary on the self-motion (N∇φ = 0), and
    Klein's measure [6.38] max |qᵢ − q_moy,i|/Δqᵢ is lower than with today's damped least squares.  The
    full 1000 are in bench/bench_inverse_kinematics.py."""
    count = 100
    qs = _panda_q(np.random.default_rng(10), count)
    mid, span = 0.5 * (LOWER + UPPER), UPPER - LOWER
    results = {}
    for name, options in (("dls (today's default)", {}), ("joint-limit avoidance", {"secondary": "joint_limits"})):
        ok, times, klein, kkt = 0, [], [], []
        for q in qs:
            target = _oracle_pose(q)
            t0 = time.process_time()
            try:
                sol = PANDA.inverse_kinematics(target, **options)
            except ValueError:
                times.append(time.process_time() - t0)
                assert name.startswith("dls"), "joint-limit avoidance failed"
                continue
            times.append(time.process_time() - t0)
            pose_ok = np.abs(_oracle_pose(sol) - target).max() <= 1e-8
            if options:
                assert _strictly_inside(sol)
                assert pose_ok
                if np.min(np.minimum(sol - LOWER, UPPER - sol)) > 1e-3:
                    _, g = joint_limit_criterion(sol, LOWER, UPPER, p=6)
                    kkt.append(np.abs(null_space_projector(PANDA.jacobian(sol)) @ g).max())
            ok += pose_ok and _strictly_inside(sol)
            klein.append(np.max(np.abs(sol - mid) / span))
        results[name] = np.median(klein)
        print(f"\n{name}: {ok}/{count} strictly inside the limits and within 1e-8; CPU time per pose min "
              f"{1e3 * min(times):.2f} ms, median {1e3 * np.median(times):.2f} ms, mean {1e3 * np.mean(times):.2f} "
              f"ms; [6.38] median {np.median(klein):.3f}, {np.sum(np.array(klein) > 0.49)} solutions within 1 % "
              "of a limit")
    print(f"max |N ∇φ| at the {len(kkt)} solutions away from the limits: {max(kkt):.2e}")
    assert max(kkt) <= 1e-5
    assert results["joint-limit avoidance"] < results["dls (today's default)"]


def test_panda_weighted_posture_and_manipulability() -> None:
    """weights E and a joint posture q_r: the fixed point is the same constrained minimum of φ (N∇φ = 0 does
    not depend on E); the manipulability criterion ends higher than the minimum-norm iteration."""
    rng = np.random.default_rng(11)
    posture = 0.5 * (LOWER + UPPER) + 0.1
    for q in _panda_q(rng, 4, inner=0.8):
        target = _oracle_pose(q)
        for weights in (rng.uniform(0.3, 3.0, 7), _spd(rng, 7)):
            sol = PANDA.inverse_kinematics(target, secondary=posture, weights=weights)
            assert _strictly_inside(sol)
            assert np.abs(_oracle_pose(sol) - target).max() <= 1e-8
            _, g = joint_limit_criterion(sol, LOWER, UPPER, center=posture)
            assert np.abs(null_space_projector(PANDA.jacobian(sol)) @ g).max() <= 1e-5
        plain = PANDA.inverse_kinematics(target, method="pseudo_inverse", secondary="none")
        best = PANDA.inverse_kinematics(target, secondary="manipulability")
        assert np.abs(_oracle_pose(best) - target).max() <= 1e-8
        assert manipulability(PANDA.jacobian(best)) > manipulability(PANDA.jacobian(plain))


def test_panda_task_priority_elbow_position() -> None:
    """Primary: tip pose; secondary: position of panda_link4 (the elbow).  Compatible (both from the same
    configuration): both reached; incompatible (elbow target moved 10 cm): the pose exactly, the elbow in
    the least-squares sense in the self-motion, (J₂N₁)ᵀ e₂ = 0."""
    rng = np.random.default_rng(12)
    elbow = "panda_link4"
    for q in _panda_q(rng, 4, inner=0.6):
        target, p4 = _oracle_pose(q), _oracle_pose(q, elbow)[:3, 3]
        q0 = q + rng.uniform(-0.3, 0.3, 7)
        sol = PANDA.inverse_kinematics(target, q0=q0, secondary=SecondaryTask(elbow, p4))
        assert _strictly_inside(sol)
        assert np.abs(_oracle_pose(sol) - target).max() <= 1e-8
        assert np.abs(_oracle_pose(sol, elbow)[:3, 3] - p4).max() <= 1e-8
        away = p4 + 0.1 * rng.normal(size=3) / np.sqrt(3)
        sol = PANDA.inverse_kinematics(target, q0=q0, secondary={"link": elbow, "target": away})
        assert np.abs(_oracle_pose(sol) - target).max() <= 1e-8
        e2 = away - _oracle_pose(sol, elbow)[:3, 3]
        j3 = ORACLE.jacobian(PANDA.joint_names, sol, elbow)[:3] @ null_space_projector(
            ORACLE.jacobian(PANDA.joint_names, sol, TIP))
        assert np.abs(j3.T @ e2).max() <= 1e-6 * max(np.linalg.norm(e2), 1e-3)


def test_non_redundant_and_position_only_cases() -> None:
    """The pseudo-inverse iteration on the 6R RX-90 (no self-motion) and the planar 2R (J 3x2, position)."""
    rx90 = SEED_ROBOTS["rx90"]()
    oracle = PinocchioURDF(urdf_text("rx90"))
    rng = np.random.default_rng(13)
    lim = rx90.limits
    for q in rng.uniform(0.8 * lim["lower"], 0.8 * lim["upper"], (5, 6)):
        target = oracle.link_poses(rx90.joint_names, q, [rx90.tip_link], rx90.base_link)[rx90.tip_link]
        sol = rx90.inverse_kinematics(target, method="pseudo_inverse")
        reached = oracle.link_poses(rx90.joint_names, sol, [rx90.tip_link], rx90.base_link)[rx90.tip_link]
        assert np.abs(reached - target).max() <= 1e-8
        assert np.all(sol > lim["lower"]) and np.all(sol < lim["upper"])
    planar = SEED_ROBOTS["planar2r"]()
    center, radius = reach_bound(planar)
    assert radius == pytest.approx(0.9) and np.abs(center).max() == 0.0  # l1 + l2
    p = planar.forward_kinematics(np.array([0.4, 0.9]))[:3, 3]
    sol = planar.inverse_kinematics(p, position_only=True, method="pseudo_inverse")
    assert np.abs(planar.forward_kinematics(sol)[:3, 3] - p).max() <= 1e-9


def test_reach_bound_contains_the_workspace_and_bad_input() -> None:
    center, radius = reach_bound(PANDA)
    qs = _panda_q(np.random.default_rng(14), 200)
    dist = np.linalg.norm(PANDA.forward_kinematics(qs)[:, :3, 3] - center, axis=1)
    assert dist.max() <= radius
    far = np.eye(4)
    far[:3, 3] = center + [radius + 0.01, 0.0, 0.0]
    with pytest.raises(ValueError, match="outside the workspace"):
        PANDA.inverse_kinematics(far, secondary="joint_limits")
    target = PANDA.forward_kinematics(qs[0])
    for kwargs, match in (
        ({"weights": -np.ones(7)}, "weights must be > 0"),
        ({"weights": np.ones(3)}, "shape"),
        ({"weights": np.ones((7, 7)) + np.diag(np.r_[np.ones(6), -20.0])}, "positive definite"),
        ({"secondary": "elbow"}, "unknown secondary"),
        ({"secondary": np.zeros(3)}, "posture"),
        ({"method": "dls", "secondary": "joint_limits"}, "takes no secondary"),
        ({"method": "task_priority"}, "needs secondary"),
        ({"method": "newton"}, "unknown method"),
        ({"secondary": SecondaryTask("nope", np.zeros(3))}, "unknown link"),
    ):
        with pytest.raises(ValueError, match=match):
            PANDA.inverse_kinematics(target, **kwargs)
