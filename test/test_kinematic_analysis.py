"""Kinematic analysis (002 ch. 5): SVD/ellipsoids/manipulability, the recursive J̇q̇ of [5.47] against Pinocchio
and finite differences, the orientation rate matrices [5.61]-[5.70], and the RX-90 of 002 Example 6.1."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from pinocchio_from_mdh import pinocchio_model, random_model
from pinocchio_oracle import PinocchioURDF
from scipy.spatial.transform import Rotation

from robot_dynamics import RobotModel
from robot_dynamics.kinematics.analysis import (
    angular_velocity_matrix,
    condition_number,
    coordinate_rate_matrix,
    force_ellipsoid,
    jacobian_svd,
    jdot_qd,
    kinematic_analysis,
    link_acceleration,
    link_velocity,
    manipulability,
    rate_singularity,
    rotation_from_coordinates,
    task_jacobian,
    velocity_ellipsoid,
)
from robot_dynamics.kinematics.geometric_model import frame_poses, jacobian
from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.model.seed_robots import SEED_ROBOTS

D3 = RL4 = 0.45  # the bundled RX-90 (002 Table 3.1)


def _urdf_cases() -> list[tuple[str, RobotModel, PinocchioURDF]]:
    out = []
    for robot, tip in (("ur5", "tool0"), ("panda", "panda_hand_tcp")):
        model = RobotModel.from_urdf(str(example_urdf(robot)), tip_link=tip)
        out.append((robot, model, PinocchioURDF(example_urdf(robot), locked=dict(model.locked_joints))))
    out.append(("rx90", load_model("rx90"), PinocchioURDF(resolve_urdf("rx90"))))
    return out


URDF_CASES = _urdf_cases()


def _pin_link_motion(oracle: PinocchioURDF, model: RobotModel, q, qd, qdd, link: str) -> tuple[np.ndarray, ...]:
    """Pinocchio: twist, classical acceleration (LOCAL_WORLD_ALIGNED) and Jacobian of ``link``, in base_link axes."""
    pm, data = oracle.model, oracle.data
    qp = oracle.q_vector(model.joint_names, q)
    v, a = np.zeros(pm.nv), np.zeros(pm.nv)
    idx = [oracle.v_index(n) for n in model.joint_names]
    v[idx], a[idx] = qd, qdd
    pin.forwardKinematics(pm, data, qp, v, a)
    pin.updateFramePlacements(pm, data)
    pin.computeJointJacobians(pm, data, qp)
    fid = pm.getFrameId(link, pin.BODY)
    rb = data.oMf[pm.getFrameId(model.base_link, pin.BODY)].rotation.T  # world axes -> base_link axes
    vel = pin.getFrameVelocity(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
    acc = pin.getFrameClassicalAcceleration(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
    jac = pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, idx]
    rot = np.kron(np.eye(2), rb)
    return rot @ np.r_[vel.linear, vel.angular], rot @ np.r_[acc.linear, acc.angular], rot @ jac


def _fd_jdot_qd(model: RobotModel, q: np.ndarray, qd: np.ndarray, link: str, h: float = 1e-5) -> np.ndarray:
    """Central difference of J along q̇: (J(q + h q̇) - J(q - h q̇)) q̇ / 2h."""
    return (jacobian(model, q + h * qd, link) - jacobian(model, q - h * qd, link)) @ qd / (2 * h)


@pytest.mark.parametrize(("name", "model", "oracle"), URDF_CASES, ids=[c[0] for c in URDF_CASES])
def test_velocity_and_jdot_qd_equal_pinocchio(name: str, model: RobotModel, oracle: PinocchioURDF) -> None:
    """J q̇, J̇ q̇ and J q̈ + J̇ q̇ of every link against Pinocchio (and J̇ q̇ against a finite difference of J)."""
    rng = np.random.default_rng(11)
    links = [j.link for j in model.joints] + [model.tip_link]
    q, qd, qdd = (rng.uniform(-2, 2, (8, model.dof)) for _ in range(3))
    err = {"J": 0.0, "v": 0.0, "Jdqd": 0.0, "acc": 0.0, "fd": 0.0}
    for link in links:
        bv, bj, ba = link_velocity(model, q, qd, link), jdot_qd(model, q, qd, link), link_acceleration(
            model, q, qd, qdd, link)
        assert bv.shape == bj.shape == ba.shape == (8, 6)
        for i in range(len(q)):
            v_ref, a0_ref, j_ref = _pin_link_motion(oracle, model, q[i], qd[i], 0 * qdd[i], link)
            _, a_ref, _ = _pin_link_motion(oracle, model, q[i], qd[i], qdd[i], link)
            err["J"] = max(err["J"], np.abs(task_jacobian(model, q[i], link) - j_ref).max())
            err["v"] = max(err["v"], np.abs(bv[i] - v_ref).max())
            err["Jdqd"] = max(err["Jdqd"], np.abs(bj[i] - a0_ref).max())
            err["acc"] = max(err["acc"], np.abs(ba[i] - a_ref).max())
            err["fd"] = max(err["fd"], np.abs(bj[i] - _fd_jdot_qd(model, q[i], qd[i], link)).max())
            assert np.array_equal(jdot_qd(model, q[i], qd[i], link), bj[i])  # batch == single
    print(f"{name}: max errors vs Pinocchio", {k: f"{v:.1e}" for k, v in err.items()})
    assert err["J"] <= 1e-12 and err["v"] <= 1e-12 and err["Jdqd"] <= 1e-11 and err["acc"] <= 1e-11
    assert err["fd"] <= 1e-7


def test_jdot_qd_on_random_trees_equals_pinocchio() -> None:
    """Trees with prismatic joints, signs and a base transform (pinocchio_model: joint j = frame R_j in base_link)."""
    rng = np.random.default_rng(12)
    worst = [0.0, 0.0, 0.0]
    for _ in range(4):
        model = random_model(rng, n=7, tree=True)
        pm = pinocchio_model(model)
        j_tool, t_tool = model.frames["tool"]
        tool = pm.addFrame(pin.Frame("tool", j_tool, pin.SE3(t_tool[:3, :3].copy(), t_tool[:3, 3].copy()),
                                     pin.FrameType.OP_FRAME))
        data = pm.createData()
        q, qd, qdd = (rng.uniform(-2, 2, (5, model.dof)) for _ in range(3))
        for i in range(len(q)):
            for a, out in ((0 * qdd[i], jdot_qd(model, q, qd)[i]), (qdd[i], link_acceleration(model, q, qd, qdd)[i])):
                pin.forwardKinematics(pm, data, q[i], qd[i], a)
                pin.updateFramePlacements(pm, data)
                ref = pin.getFrameClassicalAcceleration(pm, data, tool, pin.LOCAL_WORLD_ALIGNED)
                worst[0] = max(worst[0], np.abs(out - np.r_[ref.linear, ref.angular]).max())
            for j in range(1, model.dof + 1):  # every link origin: only the joints on its path count
                ref = pin.getClassicalAcceleration(pm, data, j, pin.LOCAL_WORLD_ALIGNED)
                out = link_acceleration(model, q[i], qd[i], qdd[i], f"link{j}")
                worst[1] = max(worst[1], np.abs(out - np.r_[ref.linear, ref.angular]).max())
                ref = pin.getVelocity(pm, data, j, pin.LOCAL_WORLD_ALIGNED)
                out = link_velocity(model, q[i], qd[i], f"link{j}")
                worst[2] = max(worst[2], np.abs(out - np.r_[ref.linear, ref.angular]).max())
    print(f"random trees: max |acc - Pinocchio| tool {worst[0]:.2e}, link origins {worst[1]:.2e}; "
          f"max |twist - Pinocchio| {worst[2]:.2e}")
    assert max(worst) <= 1e-11


def test_second_order_model_bad_input() -> None:
    model = load_model("rx90")
    with pytest.raises(ValueError, match="qd must have the shape of q"):
        jdot_qd(model, np.zeros((2, 6)), np.zeros(6))
    with pytest.raises(ValueError, match="NaN"):
        link_acceleration(model, np.zeros(6), np.zeros(6), np.full(6, np.nan))
    with pytest.raises(ValueError, match="unknown link"):
        link_velocity(model, np.zeros(6), np.zeros(6), "nope")


# --------------------------------------------------------------------------- SVD, ellipsoids
def _support_errors(jac: np.ndarray, axes: np.ndarray, vel: np.ndarray, force: np.ndarray,
                    rng: np.random.Generator) -> tuple[float, float]:
    """Ellipsoids against their definitions, without the SVD: along a unit direction u the image of ||q̇|| <= 1
    reaches h(u) = ||Jᵀu|| (support function), and {f : ||Jᵀf|| <= 1} reaches 1/||Jᵀu||."""
    ev = ef = 0.0
    for u in rng.normal(size=(20, jac.shape[0])):
        u /= np.linalg.norm(u)
        c = axes.T @ u
        ev = max(ev, abs(np.sqrt(np.sum((vel * c) ** 2)) - np.linalg.norm(jac.T @ u)))
        radius = 1.0 / np.sqrt(np.sum((c / force) ** 2))
        ef = max(ef, abs(radius - 1.0 / np.linalg.norm(jac.T @ u)) * np.linalg.norm(jac.T @ u))
    return ev, ef


@pytest.mark.parametrize("rows", ["all", "position", "orientation"])
def test_svd_ellipsoids_and_manipulability_on_panda_and_rx90(rows: str) -> None:
    """w = sqrt(det J Jᵀ) ([5.38]) = |det J| for square J ([5.39]), ellipsoid axes/lengths against the
    support function of J's image of the unit ball, null space of the redundant Panda."""
    rng = np.random.default_rng(13)
    panda = URDF_CASES[1][1]
    for model in (panda, load_model("rx90")):
        q = rng.uniform(-2, 2, (6, model.dof))
        jac = task_jacobian(model, q, rows=rows)
        w = manipulability(model, q, rows=rows)
        w_ref = np.sqrt(np.linalg.det(jac @ np.swapaxes(jac, 1, 2)))
        assert np.allclose(w, w_ref, rtol=1e-9, atol=0)
        if jac.shape[1] == jac.shape[2]:
            assert np.allclose(w, np.abs(np.linalg.det(jac)), rtol=1e-9, atol=0)
        u, s, vt = jacobian_svd(model, q, rows=rows)
        assert np.abs(u @ _diag(s, jac.shape[1], model.dof) @ vt - jac).max() <= 1e-13
        axes, vel = velocity_ellipsoid(model, q, rows=rows)
        _, force = force_ellipsoid(model, q, rows=rows)
        cond = condition_number(model, q, rows=rows)
        batch = kinematic_analysis(model, q, rows=rows)
        assert batch.null_space is None and batch.singular_values.shape == (len(q), jac.shape[1])
        assert np.allclose(batch.force_lengths, force, rtol=1e-13)
        assert np.allclose(batch.condition_number, cond, rtol=1e-13)
        for i in range(len(q)):
            eig = np.sort(np.linalg.eigvalsh(jac[i] @ jac[i].T))[::-1]
            assert np.allclose(vel[i] ** 2, eig, atol=1e-12)  # lengths s_i: eigenvalues of J Jᵀ
            assert np.allclose(force[i] * vel[i], 1.0)
            assert cond[i] == pytest.approx(np.linalg.cond(jac[i]), rel=1e-9)
            ev, ef = _support_errors(jac[i], axes[i], vel[i], force[i], rng)
            assert ev <= 1e-12 and ef <= 1e-12
            ka = kinematic_analysis(model, q[i], rows=rows)
            assert ka.rank == jac.shape[1] and ka.manipulability == pytest.approx(w[i], rel=1e-12)
            assert ka.null_space.shape == (model.dof, model.dof - jac.shape[1])
            if ka.null_space.size:
                assert np.abs(jac[i] @ ka.null_space).max() <= 1e-13  # self-motions give Ẋ = 0 ([5.30])


def _diag(s: np.ndarray, m: int, n: int) -> np.ndarray:
    out = np.zeros(s.shape[:-1] + (m, n))
    k = s.shape[-1]
    out[..., np.arange(k), np.arange(k)] = s
    return out


def test_planar_2r_hand_values_and_singularity() -> None:
    """Planar 2R (l1 = 0.5, l2 = 0.4, motion in the x-z plane of base_link): w = l1 l2 |sin q2|; stretched
    (q2 = 0): rank 1, s_1 = sqrt((l1 + l2)^2 + l2^2) along the normal to the arm, infinite force axis along it."""
    model = SEED_ROBOTS["planar2r"]()
    l1, l2, rows = 0.5, 0.4, [0, 2]
    q = np.random.default_rng(14).uniform(-3, 3, (10, 2))
    assert np.allclose(manipulability(model, q, rows=rows), l1 * l2 * np.abs(np.sin(q[:, 1])), rtol=1e-12)
    assert np.all(manipulability(model, q, rows="all") == 0.0)  # 6 rows, 2 joints
    assert np.all(np.isinf(condition_number(model, q, rows="all")))
    ka = kinematic_analysis(model, [0.3, 0.0], rows=rows)
    assert ka.rank == 1 and ka.condition_number == np.inf and ka.manipulability == pytest.approx(0, abs=1e-15)
    assert ka.velocity_lengths == pytest.approx([np.hypot(l1 + l2, l2), 0.0], abs=1e-15)
    assert ka.force_lengths[0] == pytest.approx(1 / np.hypot(l1 + l2, l2)) and ka.force_lengths[1] == np.inf
    arm = frame_poses(model, [0.3, 0.0])[2, :3, 0][rows]  # x_2 along the stretched arm
    assert abs(ka.velocity_axes[:, 0] @ arm) <= 1e-15 and abs(abs(ka.velocity_axes[:, 1] @ arm) - 1) <= 1e-15
    assert ka.null_space.shape == (2, 1) and np.abs(ka.jacobian @ ka.null_space).max() <= 1e-15


def test_analysis_bad_input() -> None:
    model = load_model("rx90")
    with pytest.raises(ValueError, match="rows must be one of"):
        manipulability(model, np.zeros(6), rows="linear")
    with pytest.raises(ValueError, match="distinct indices"):
        jacobian_svd(model, np.zeros(6), rows=[0, 0])
    with pytest.raises(ValueError, match="shape"):
        kinematic_analysis(model, np.zeros(5))


# --------------------------------------------------------------------------- 002 Example 6.1 (RX-90)
def _rx90_example(q: np.ndarray) -> dict[str, np.ndarray]:
    """002 Example 6.1 with errata 44: A⁻¹, C⁻¹, the full ³J₆⁻¹, and det J = det A det C."""
    s, c = np.sin, np.cos
    c2, s3, c3, c4, s4, c5, s5 = c(q[1]), s(q[2]), c(q[2]), c(q[3]), s(q[3]), c(q[4]), s(q[4])
    s23, c23 = s(q[1] + q[2]), c(q[1] + q[2])
    v1, v2, v3 = 1 / (s23 * RL4 - c2 * D3), -RL4 + s3 * D3, 1 / (c3 * D3)
    v4, v5, v6, v7 = c4 * c5 / s5, s4 * c5 / s5, s3 / (c3 * RL4), 1 / (s5 * RL4)
    v8 = (-s23 * v4 - c23) * v1
    a_inv = np.array([[0, 0, v1], [0, v3, 0], [-1 / RL4, v2 * v3 / RL4, 0]])
    c_inv = np.array([[v4, 1, -v5], [s4, 0, c4], [-c4 / s5, 0, s4 / s5]])
    lower_left = np.array([[-s4 * c5 * v7, v5 * v6, v8],  # (4,1): -S4C5V7 (printed +, errata 44)
                           [c4 / RL4, -c4 * v6, -s23 * s4 * v1],  # (5,1): +C4/RL4 (printed -, errata 44)
                           [s4 * v7, -s4 * v6 / s5, s23 * c4 * v1 / s5]])
    j_inv = np.block([[a_inv, np.zeros((3, 3))], [lower_left, c_inv]])
    det = -c3 * D3 * RL4 * s5 * (s23 * RL4 - c2 * D3)  # 1 / (det A⁻¹ det C⁻¹) = RL4 / (V1 V3) * (-S5)
    return {"A_inv": a_inv, "C_inv": c_inv, "J_inv": j_inv, "det": det}


def _rx90_j36(model: RobotModel, q: np.ndarray) -> np.ndarray:
    """³J₆ = diag(³R₀, ³R₀) ⁰J₆ (Jacobian of the origin O6 = O4 of the wrist, in R3)."""
    r3 = frame_poses(model, q)[3, :3, :3].T @ model.base_transform[:3, :3]
    return np.kron(np.eye(2), r3) @ jacobian(model, q, "link6")


def test_rx90_example_6_1_inverse_jacobian_and_determinant() -> None:
    """The RX-90's ³J₆ = [A 0; B C] (spherical wrist), A⁻¹, C⁻¹, ³J₆⁻¹ of 002 Example 6.1 (errata 44),
    det J = -C3 D3 RL4 S5 (S23 RL4 - C2 D3), w = |det J| ([5.39]), the second method [6.10]."""
    model = load_model("rx90")
    rng = np.random.default_rng(15)
    worst = {"upper_right": 0.0, "A_inv": 0.0, "C_inv": 0.0, "J_inv": 0.0, "det": 0.0, "w": 0.0, "6.10": 0.0}
    for q in rng.uniform(-2.5, 2.5, (40, 6)):
        j36 = _rx90_j36(model, q)
        ex = _rx90_example(q)
        worst["upper_right"] = max(worst["upper_right"], np.abs(j36[:3, 3:]).max())
        for key, block in (("A_inv", j36[:3, :3]), ("C_inv", j36[3:, 3:]), ("J_inv", j36)):
            inv = np.linalg.inv(block)
            worst[key] = max(worst[key], np.abs(inv - ex[key]).max() / max(1.0, np.abs(inv).max()))
        worst["det"] = max(worst["det"], abs(np.linalg.det(jacobian(model, q)) - ex["det"]))
        worst["w"] = max(worst["w"], abs(manipulability(model, q) - abs(ex["det"])))
        # second method (002 [6.10], Example 6.1 ii): q̇a = A⁻¹ Ẋa, then q̇b = C⁻¹ (Ẋb - B q̇a)
        xd = rng.normal(size=6)
        s23, c23, c4, s4 = np.sin(q[1] + q[2]), np.cos(q[1] + q[2]), np.cos(q[3]), np.sin(q[3])
        cot5, s5 = 1 / np.tan(q[4]), np.sin(q[4])
        qa = ex["A_inv"] @ xd[:3]
        x4, x5, x6 = xd[3] - s23 * qa[0], xd[4] - c23 * qa[0], xd[5] - qa[1] - qa[2]
        qb = [c4 * cot5 * x4 + x5 - s4 * cot5 * x6, s4 * x4 + c4 * x6, (-c4 * x4 + s4 * x6) / s5]
        ref = np.linalg.solve(j36, xd)
        worst["6.10"] = max(worst["6.10"], np.abs(np.r_[qa, qb] - ref).max() / max(1.0, np.abs(ref).max()))
    print("RX-90 Example 6.1 max (relative) errors:", {k: f"{v:.1e}" for k, v in worst.items()})
    assert max(worst.values()) <= 1e-12


def test_rx90_singular_configurations_from_the_determinant() -> None:
    """The three factors of det J vanish: C3 = 0 (q3 = -π/2, stretched elbow), S5 = 0 (wrist), S23 RL4 = C2 D3
    (wrist centre on axis 1; with D3 = RL4: q3 = π/2 - 2 q2): rank 5, manipulability 0, one infinite force
    semi-axis, regular nearby.  The folded elbow q3 = π/2 is both (C3 = 0 and S23 = C2): rank 4."""
    model = load_model("rx90")
    rng = np.random.default_rng(16)
    for _ in range(5):
        q = rng.uniform(-2, 2, 6)
        elbow, wrist, shoulder, folded = q.copy(), q.copy(), q.copy(), q.copy()
        elbow[2] = -np.pi / 2
        wrist[4] = 0.0
        shoulder[2] = np.pi / 2 - 2 * q[1]
        folded[2] = np.pi / 2
        for qs, rank in ((elbow, 5), (wrist, 5), (shoulder, 5), (folded, 4)):
            factors = np.cos(qs[2]) * np.sin(qs[4]) * (np.sin(qs[1] + qs[2]) * RL4 - np.cos(qs[1]) * D3)
            assert factors == pytest.approx(0, abs=1e-15)
            ka = kinematic_analysis(model, qs, tol=1e-12)
            assert ka.rank == rank and ka.manipulability <= 1e-15 and ka.condition_number == np.inf
            assert np.all(np.isinf(ka.force_lengths[rank:])) and np.all(np.isfinite(ka.force_lengths[:rank]))
            assert ka.null_space.shape == (6, 6 - rank) and np.abs(ka.jacobian @ ka.null_space).max() <= 1e-12
            assert kinematic_analysis(model, qs + 1e-3).rank == 6


# --------------------------------------------------------------------------- 002 §5.11 rate matrices
SCIPY = {"euler_zxz": "ZXZ", "rpy": "ZYX"}  # intrinsic: rot(z,φ)rot(x,θ)rot(z,ψ), rot(z,φ)rot(y,θ)rot(x,ψ)


def _scipy_rotation(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "quaternion":
        return Rotation.from_quat(np.r_[x[1:], x[0]]).as_matrix()  # scipy: scalar last
    return Rotation.from_euler(SCIPY[kind], x).as_matrix()


def _vee(w_hat: np.ndarray) -> np.ndarray:
    return np.array([w_hat[2, 1] - w_hat[1, 2], w_hat[0, 2] - w_hat[2, 0], w_hat[1, 0] - w_hat[0, 1]]) / 2


def _samples(kind: str, rng: np.random.Generator, count: int) -> np.ndarray:
    if kind == "quaternion":
        x = rng.normal(size=(count, 4))
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    x = rng.uniform(-np.pi, np.pi, (count, 3))
    x[:, 1] = rng.uniform(0.1, np.pi - 0.1, count) * rng.choice([-1, 1], count)  # away from the singularity
    if kind == "rpy":
        x[:, 1] = rng.uniform(-1.4, 1.4, count)
    return x


@pytest.mark.parametrize("kind", ["euler_zxz", "rpy", "quaternion"])
def test_rate_matrices_against_numerical_derivative_of_rotation(kind: str) -> None:
    """ω̂ = Ṙ Rᵀ by a central difference of scipy's rotation along x(t) = x0 + t ẋ equals B(x0) ẋ; Ω_r B = I
    (quaternion: B Ω_Q = I3 and Ω_Q B = I4 - Q Qᵀ, [5.70]); the rotation convention equals scipy's."""
    rng = np.random.default_rng(17)
    x0 = _samples(kind, rng, 25)
    b = angular_velocity_matrix(kind, x0)
    om = coordinate_rate_matrix(kind, x0)
    assert np.abs(rotation_from_coordinates(kind, x0) - np.array([_scipy_rotation(kind, x) for x in x0])).max() <= 1e-14
    h, worst = 1e-6, 0.0
    for i, x in enumerate(x0):
        xd = rng.normal(size=x.shape)
        if kind == "quaternion":
            xd -= (xd @ x) * x  # tangent: Qᵀ Q̇ = 0 ([5.67])
            path = [(x + t * xd) / np.linalg.norm(x + t * xd) for t in (h, -h)]
        else:
            path = [x + h * xd, x - h * xd]
        r_dot = (_scipy_rotation(kind, path[0]) - _scipy_rotation(kind, path[1])) / (2 * h)
        w = _vee(r_dot @ _scipy_rotation(kind, x).T)
        worst = max(worst, np.abs(b[i] @ xd - w).max() / max(1.0, np.abs(w).max()))
        assert np.abs(om[i] @ w - xd).max() <= 1e-7 * max(1.0, np.abs(xd).max())  # [5.48] ẋ = Ω_r ω
        if kind == "quaternion":
            assert np.abs(b[i] @ om[i] - np.eye(3)).max() <= 1e-14
            assert np.abs(om[i] @ b[i] - (np.eye(4) - np.outer(x, x))).max() <= 1e-14
        else:
            assert np.abs(om[i] @ b[i] - np.eye(3)).max() <= 1e-12
    print(f"{kind}: max relative |B ẋ - vee(Ṙ Rᵀ)| = {worst:.2e}")
    assert worst <= 1e-8


def test_rate_matrices_hand_values() -> None:
    """Hand derivations: z-x-z at (0, π/2, ψ): ω = φ̇ z0 + θ̇ x0 + ψ̇ rot(x, π/2) z0 = [θ̇, -ψ̇, φ̇];
    RPY at (π/2, 0, ψ): ω = φ̇ z0 + θ̇ rot(z, π/2) y0 + ψ̇ rot(z, π/2) x0 = [-θ̇, ψ̇, φ̇];
    identity quaternion: Q̇ = ½ [0, ω]."""
    b = angular_velocity_matrix("euler_zxz", [0.0, np.pi / 2, 0.7])
    assert b == pytest.approx(np.array([[0, 1, 0], [0, 0, -1], [1, 0, 0]]), abs=1e-15)
    assert coordinate_rate_matrix("euler_zxz", [0.0, np.pi / 2, 0.7]) == pytest.approx(
        np.array([[0, 0, 1], [1, 0, 0], [0, -1, 0]]), abs=1e-15)
    b = angular_velocity_matrix("rpy", [np.pi / 2, 0.0, -0.4])
    assert b == pytest.approx(np.array([[0, -1, 0], [0, 0, 1], [1, 0, 0]]), abs=1e-15)
    assert coordinate_rate_matrix("rpy", [np.pi / 2, 0.0, -0.4]) == pytest.approx(
        np.array([[0, 0, 1], [-1, 0, 0], [0, 1, 0]]), abs=1e-15)
    w = np.array([0.3, -0.2, 0.5])
    assert coordinate_rate_matrix("quaternion", [1.0, 0, 0, 0]) @ w == pytest.approx(np.r_[0.0, w / 2])
    assert angular_velocity_matrix("quaternion", [1.0, 0, 0, 0]) @ np.r_[0.0, w / 2] == pytest.approx(w)


def test_rate_matrix_singularities() -> None:
    """z-x-z: sin θ = 0; RPY: cos θ = 0 (B loses rank there, Ω_r is undefined); quaternions: none."""
    for kind, thetas, msg in (("euler_zxz", (0.0, np.pi, -np.pi), r"sin\(theta\) = 0"),
                              ("rpy", (np.pi / 2, -np.pi / 2), r"cos\(theta\) = 0")):
        for t in thetas:
            x = [0.4, t, -1.1]
            assert np.linalg.matrix_rank(angular_velocity_matrix(kind, x), tol=1e-12) == 2
            assert rate_singularity(kind, x) is True
            with pytest.raises(ValueError, match=msg):
                coordinate_rate_matrix(kind, x)
        batch = np.array([[0.1, 0.3, 0.2], [0.1, thetas[0], 0.2]])
        assert rate_singularity(kind, batch).tolist() == [False, True]
        with pytest.raises(ValueError, match=msg):
            coordinate_rate_matrix(kind, batch)
        assert rate_singularity(kind, [0.1, 0.5, 0.2]) is False
    assert not rate_singularity("quaternion", _samples("quaternion", np.random.default_rng(1), 10)).any()
    with pytest.raises(ValueError, match="unit norm"):
        coordinate_rate_matrix("quaternion", [1.0, 1.0, 0, 0])
    with pytest.raises(ValueError, match="unknown orientation"):
        angular_velocity_matrix("xyz", [0, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        angular_velocity_matrix("rpy", [0, 0, 0, 1])
