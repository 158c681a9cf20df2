"""Integration (issue 20): ``~/kinematics`` and ``~/inverse_kinematics`` of the dynamics_server node in its own
process, called over DDS, on the RX-90 and the Panda, against Pinocchio (``pinocchio_model`` of the same
RobotModel the server loads) and NumPy."""

from __future__ import annotations

import contextlib
import json
import math
import time

import numpy as np
import pinocchio as pin
import pytest
import rclpy
from example_robots import example_urdf
from geometry_msgs.msg import PoseStamped
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model
from ros_harness import call_service, node_process, publish_still_arm, wait_for_service
from scipy.spatial.transform import Rotation

from robot_dynamics import RobotModel
from robot_dynamics.kinematics.redundancy import inverse_kinematics
from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.node_set import config_dir
from robot_dynamics_interfaces.srv import DynamicTerms, InertialCharacteristics, InverseKinematics, Kinematics

pytestmark = pytest.mark.ros
RX90 = resolve_urdf("rx90")
PANDA = example_urdf("panda")
PANDA_TIP = "panda_hand_tcp"
LWA = pin.LOCAL_WORLD_ALIGNED


class Oracle:
    """Pinocchio model of a RobotModel (joint i+1 = MDH joint i+1, base transform folded in) with a frame per link."""

    def __init__(self, model: RobotModel) -> None:
        self.model = model
        self.pm = pinocchio_model(model)
        self.fid = {}
        for link, (j, t) in model.frames.items():
            frame = pin.Frame(link, j, pin.SE3(t[:3, :3].copy(), t[:3, 3].copy()), pin.FrameType.OP_FRAME)
            self.fid[link] = self.pm.addFrame(frame)
        self.data = self.pm.createData()

    def pose(self, q: np.ndarray, link: str) -> np.ndarray:
        pin.framesForwardKinematics(self.pm, self.data, q)
        return self.data.oMf[self.fid[link]].homogeneous.copy()

    def jacobian(self, q: np.ndarray, link: str, rows: slice = slice(0, 6)) -> np.ndarray:
        pin.computeJointJacobians(self.pm, self.data, q)
        pin.updateFramePlacements(self.pm, self.data)
        return pin.getFrameJacobian(self.pm, self.data, self.fid[link], LWA)[rows].copy()

    def motion(self, q: np.ndarray, qd: np.ndarray, link: str) -> tuple[np.ndarray, np.ndarray]:
        """Twist [v; ω] and classical acceleration at q̈ = 0 (= J̇ q̇) of the link origin, base axes."""
        pin.forwardKinematics(self.pm, self.data, q, qd, np.zeros_like(q))
        pin.updateFramePlacements(self.pm, self.data)
        v = pin.getFrameVelocity(self.pm, self.data, self.fid[link], LWA)
        a = pin.getFrameClassicalAcceleration(self.pm, self.data, self.fid[link], LWA)
        return np.r_[v.linear, v.angular], np.r_[a.linear, a.angular]


def _cycle(n: int) -> np.ndarray:
    """Request order = this permutation of the model's joints: an n-cycle, not its own inverse."""
    return np.roll(np.arange(n), 1)


def _pose_msg(t: np.ndarray, frame: str = "") -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in t[:3, 3])
    x, y, z, w = Rotation.from_matrix(t[:3, :3]).as_quat()
    msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = x, y, z, w
    return msg


def _errors(oracle: Oracle, q: np.ndarray, link: str, target: np.ndarray) -> tuple[float, float]:
    """Position (m) and orientation (rad) error of Pinocchio's forward kinematics at q from the target pose."""
    pose = oracle.pose(q, link)
    return (float(np.linalg.norm(pose[:3, 3] - target[:3, 3])),
            float(Rotation.from_matrix(target[:3, :3].T @ pose[:3, :3]).magnitude()))


def _inner(model: RobotModel, rng: np.random.Generator, scale: float = 0.8) -> np.ndarray:
    lo, hi = model.limits["lower"], model.limits["upper"]
    mid, half = 0.5 * (lo + hi), 0.5 * scale * (hi - lo)
    return rng.uniform(mid - half, mid + half)


@pytest.fixture(scope="module")
def client():
    rclpy.init()
    node = rclpy.create_node("test_kinematics_client")
    yield node
    node.destroy_node()
    rclpy.shutdown()


@pytest.fixture(scope="module")
def servers(client, tmp_path_factory):
    """The RX-90 (with its parameter file, like test_ros_dynamics_server) and the Panda chain to panda_hand_tcp,
    two dynamics_server processes started together."""
    specs = {
        "rx90": (load_model("rx90"), {"urdf_path": str(RX90)}, [config_dir() / "rx90.yaml"]),
        "panda": (RobotModel.from_urdf(str(PANDA), tip_link=PANDA_TIP), {"urdf_path": str(PANDA), "tip_link": PANDA_TIP},
                  []),
    }
    out = {}
    with contextlib.ExitStack() as stack:
        for robot, (model, params, files) in specs.items():
            name = f"kin_{robot}"
            proc = stack.enter_context(node_process("dynamics_server", tmp_path_factory.mktemp(robot), params=params,
                                                    param_files=files, remaps={"__node": name}))
            clients = {
                "kin": client.create_client(Kinematics, f"/{name}/kinematics"),
                "ik": client.create_client(InverseKinematics, f"/{name}/inverse_kinematics"),
                "terms": client.create_client(DynamicTerms, f"/{name}/dynamic_terms"),
                "inertia": client.create_client(InertialCharacteristics, f"/{name}/inertial_characteristics"),
            }
            for c in clients.values():
                stack.callback(client.destroy_client, c)
            out[robot] = (model, Oracle(model), proc, clients)
        for *_, clients in out.values():
            for c in clients.values():
                wait_for_service(c)
        yield out


# --------------------------------------------------------------------------- ~/kinematics
def _check_kinematics(resp, model: RobotModel, oracle: Oracle, q: np.ndarray, qd: np.ndarray, link: str,
                      perm: np.ndarray, worst: dict) -> None:
    """Every field of a Kinematics response (request order ``perm``) against Pinocchio and NumPy."""
    n = model.dof
    assert resp.success, resp.message
    assert resp.link == link and resp.base_link == model.base_link
    assert list(resp.joint_names) == [model.joint_names[i] for i in perm]
    pose = oracle.pose(q, link)
    p = resp.pose.position
    o = resp.pose.orientation
    rot = Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix()
    worst["pose"] = max(worst["pose"], np.abs([p.x, p.y, p.z] - pose[:3, 3]).max(), np.abs(rot - pose[:3, :3]).max())
    j_ref = oracle.jacobian(q, link)
    jac = np.array(resp.jacobian).reshape(6, n)
    worst["J"] = max(worst["J"], np.abs(jac - j_ref[:, perm]).max())
    twist, acc = oracle.motion(q, qd, link)
    worst["twist"] = max(worst["twist"], np.abs(np.array(resp.twist) - twist).max())
    worst["jdot_qd"] = max(worst["jdot_qd"], np.abs(np.array(resp.jdot_qd) - acc).max())
    # SVD figures from the eigenvalues of J Jᵀ (Pinocchio's J), not from an SVD
    eig = np.clip(np.linalg.eigvalsh(j_ref @ j_ref.T)[::-1], 0.0, None)
    sigma = np.sqrt(eig)
    m = min(6, n)
    assert len(resp.singular_values) == m
    worst["sigma"] = max(worst["sigma"], np.abs(np.array(resp.singular_values) - sigma[:m]).max())
    w_ref = math.sqrt(max(np.linalg.det(j_ref @ j_ref.T), 0.0))
    worst["w"] = max(worst["w"], abs(resp.manipulability - w_ref) / max(w_ref, 1e-300))
    assert resp.rank == np.linalg.matrix_rank(j_ref) == 6
    worst["cond"] = max(worst["cond"], abs(resp.condition_number / (sigma[0] / sigma[5]) - 1.0))
    axes = np.array(resp.velocity_axes).reshape(6, 6)
    lengths = np.array(resp.velocity_lengths)
    worst["axes"] = max(worst["axes"], np.abs(axes.T @ axes - np.eye(6)).max())
    # U_i is an eigenvector of J Jᵀ with eigenvalue σ_i²
    worst["eig"] = max(worst["eig"], np.abs(j_ref @ j_ref.T @ axes - axes * lengths**2).max())
    worst["sigma"] = max(worst["sigma"], np.abs(lengths - sigma).max())
    worst["force"] = max(worst["force"], np.abs(np.array(resp.force_lengths) * sigma - 1.0).max())


@pytest.mark.parametrize("robot", ["rx90", "panda"])
def test_kinematics_equals_pinocchio(servers, client, robot):
    model, oracle, _, clients = servers[robot]
    n = model.dof
    perm = _cycle(n)
    names = [model.joint_names[i] for i in perm]
    rng = np.random.default_rng(20)
    worst = dict.fromkeys(("pose", "J", "twist", "jdot_qd", "sigma", "w", "cond", "axes", "eig", "force"), 0.0)
    links = [model.tip_link, model.joints[-1].link]
    for k in range(4):
        q, qd = _inner(model, rng), rng.uniform(-2, 2, n)
        link = links[k % 2]
        req = Kinematics.Request(link="" if link == model.tip_link else link, joint_names=names,
                                 positions=q[perm].tolist(), velocities=qd[perm].tolist())
        _check_kinematics(call_service(client, clients["kin"], req), model, oracle, q, qd, link, perm, worst)
    print(f"{robot}: max errors vs Pinocchio/NumPy", {k: f"{v:.1e}" for k, v in worst.items()})
    assert worst["pose"] <= 1e-12 and worst["J"] <= 1e-12 and worst["twist"] <= 1e-12 and worst["jdot_qd"] <= 1e-11
    assert worst["sigma"] <= 1e-10 and worst["w"] <= 1e-9 and worst["cond"] <= 1e-8
    assert worst["axes"] <= 1e-12 and worst["eig"] <= 1e-10 and worst["force"] <= 1e-9


def test_kinematics_link_velocities_empty_and_inner_link(servers, client):
    """Empty velocities: twist and J̇q̇ zero.  An inner link (panda_link4): the Jacobian columns of the joints
    after it are zero and it equals Pinocchio's."""
    model, oracle, _, clients = servers["panda"]
    q = _inner(model, np.random.default_rng(21))
    resp = call_service(client, clients["kin"], Kinematics.Request(link="panda_link4", positions=q.tolist()))
    assert resp.success, resp.message
    assert list(resp.joint_names) == model.joint_names and resp.link == "panda_link4"
    assert np.array_equal(resp.twist, np.zeros(6)) and np.array_equal(resp.jdot_qd, np.zeros(6))
    jac = np.array(resp.jacobian).reshape(6, model.dof)
    assert np.abs(jac - oracle.jacobian(q, "panda_link4")).max() <= 1e-12
    assert np.array_equal(jac[:, 4:], np.zeros((6, 3)))
    assert resp.rank == np.linalg.matrix_rank(jac) == 4  # four joints move the link: rank 4, cond inf, w 0
    assert resp.condition_number == math.inf and resp.manipulability <= 1e-20
    assert list(np.isinf(resp.force_lengths)) == [False] * 4 + [True] * 2


def test_kinematics_rx90_wrist_singularity(servers, client):
    """q5 = 0: the axes of joints 4 and 6 align; rank 5, condition number inf, one force length inf."""
    model, oracle, _, clients = servers["rx90"]
    q = np.array([0.3, -0.5, 0.8, 0.7, 0.0, -0.4])
    perm = _cycle(6)
    resp = call_service(client, clients["kin"], Kinematics.Request(
        joint_names=[model.joint_names[i] for i in perm], positions=q[perm].tolist(), velocities=[0.1] * 6))
    assert resp.success, resp.message
    j_ref = oracle.jacobian(q, model.tip_link)
    assert np.linalg.matrix_rank(j_ref) == 5 and resp.rank == 5
    assert resp.condition_number == math.inf
    assert int(np.isinf(resp.force_lengths).sum()) == 1 and math.isinf(resp.force_lengths[5])
    assert resp.singular_values[5] <= 1e-12 and resp.manipulability <= 1e-12
    axes = np.array(resp.velocity_axes).reshape(6, 6)
    print(f"RX-90 q5 = 0: sigma_6 {resp.singular_values[5]:.1e}, w {resp.manipulability:.1e}, "
          f"|J^T U_6| {np.linalg.norm(j_ref.T @ axes[:, 5]):.1e}")
    assert np.linalg.norm(j_ref.T @ axes[:, 5]) <= 1e-12  # U_6 spans N(Jᵀ): the wrench the structure bears


# --------------------------------------------------------------------------- ~/inverse_kinematics
def _solve(client, clients, **kw) -> InverseKinematics.Response:
    return call_service(client, clients["ik"], InverseKinematics.Request(**kw), timeout=60)


def _check_solution(resp, model: RobotModel, oracle: Oracle, perm: np.ndarray, target: np.ndarray, link: str,
                    position_only: bool = False) -> np.ndarray:
    """The answer within the URDF limits, reproducing the target (Pinocchio) to 1e-8; its reported figures equal
    the test's.  Returns the positions in model order."""
    assert resp.success, resp.message
    assert list(resp.joint_names) == [model.joint_names[i] for i in perm]
    q = np.empty(model.dof)
    q[perm] = resp.positions
    assert np.all(q >= model.limits["lower"]) and np.all(q <= model.limits["upper"])
    pe, oe = _errors(oracle, q, link, target)
    assert pe <= 1e-8 and abs(resp.position_error - pe) <= 1e-9
    rows = slice(0, 3) if position_only else slice(0, 6)
    jac = oracle.jacobian(q, link, rows)
    w_ref = math.sqrt(max(np.linalg.det(jac @ jac.T), 0.0))
    assert abs(resp.manipulability - w_ref) <= 1e-9 * max(w_ref, 1.0)
    if position_only:
        assert resp.orientation_error == 0.0
    else:
        assert oe <= 1e-8 and abs(resp.orientation_error - oe) <= 1e-9
    return q


def test_inverse_kinematics_rx90_random_poses(servers, client):
    model, oracle, _, clients = servers["rx90"]
    perm = _cycle(6)
    names = [model.joint_names[i] for i in perm]
    rng = np.random.default_rng(22)
    worst = [0.0, 0.0]
    for k in range(4):
        target = oracle.pose(_inner(model, rng), model.tip_link)  # the DGM of an in-limit configuration
        kw = {"initial_positions": _inner(model, rng)[perm].tolist()} if k % 2 else {}
        frame = model.base_link if k == 1 else ""
        resp = _solve(client, clients, target=_pose_msg(target, frame), joint_names=names, **kw)
        _check_solution(resp, model, oracle, perm, target, model.tip_link)
        assert ("initial_positions" if kw else "mid-range") in resp.message
        worst = [max(worst[0], resp.position_error), max(worst[1], resp.orientation_error)]
    print(f"RX-90 IK, 4 poses: worst position error {worst[0]:.1e} m, orientation {worst[1]:.1e} rad")


def test_inverse_kinematics_position_only(servers, client):
    """position_only: the orientation is not read (here a zero quaternion); 3 task rows for the manipulability."""
    model, oracle, _, clients = servers["rx90"]
    q_ref = _inner(model, np.random.default_rng(23))
    target = oracle.pose(q_ref, "link5")
    msg = _pose_msg(target)
    msg.pose.orientation.w = 0.0
    msg.pose.orientation.x = msg.pose.orientation.y = msg.pose.orientation.z = 0.0
    resp = _solve(client, clients, link="link5", target=msg, position_only=True, tolerance=1e-11)
    _check_solution(resp, model, oracle, np.arange(6), target, "link5", position_only=True)
    print(f"RX-90 IK position only (link5): {resp.position_error:.1e} m")


def test_inverse_kinematics_panda_secondary_criteria(servers, client):
    """The Panda (7 joints, 1 degree of redundancy): joint_limits, posture (with joint weights) and manipulability
    reach the pose within the limits; each solution is stationary for its criterion on the self-motion manifold
    (the gradient projected on N(J) of Pinocchio's Jacobian vanishes); posture and weights reach the solver in
    model order (the core called here in model order gives the same answer)."""
    model, oracle, _, clients = servers["panda"]
    n = model.dof
    perm = _cycle(n)
    names = [model.joint_names[i] for i in perm]
    lo, hi = model.limits["lower"], model.limits["upper"]
    mid, span = 0.5 * (lo + hi), hi - lo
    rng = np.random.default_rng(24)
    q_ref = _inner(model, rng, 0.7)
    target = oracle.pose(q_ref, PANDA_TIP)
    posture = _inner(model, rng, 0.5)
    weights = rng.uniform(0.5, 3.0, n)
    q0 = _inner(model, rng, 0.5)
    cases = {
        "joint_limits": ({"secondary": "joint_limits"},
                         lambda q: 6.0 * ((q - mid) / span) ** 5 / span),  # ∇ of Σ((q - mid)/Δq)^6 (002 eq. 6.39)
        "posture": ({"secondary": "posture", "posture": posture[perm].tolist(), "weights": weights[perm].tolist()},
                    lambda q: 2.0 * (q - posture) / span**2),
        "dls": ({}, None),
    }
    grads = {}
    for key, (kw, _) in cases.items():
        resp = _solve(client, clients, target=_pose_msg(target), joint_names=names,
                      initial_positions=q0[perm].tolist(), **kw)
        q = _check_solution(resp, model, oracle, perm, target, PANDA_TIP)
        null = np.linalg.svd(oracle.jacobian(q, PANDA_TIP))[2][6:].T  # (7, 1) basis of N(J)
        for other, (_, g) in cases.items():
            if g is not None:
                grads[(key, other)] = float(np.linalg.norm(null.T @ g(q)) / np.linalg.norm(g(q)))
        if key == "posture":  # the target as the server reads it (quaternion -> matrix)
            o = _pose_msg(target).pose.orientation
            sent = target.copy()
            sent[:3, :3] = Rotation.from_quat(np.array([o.x, o.y, o.z, o.w]) / np.linalg.norm([o.x, o.y, o.z, o.w])).as_matrix()
            core = inverse_kinematics(model, sent, q0, secondary=posture, weights=weights)
            assert np.abs(q - core).max() <= 1e-12
            swapped = inverse_kinematics(model, sent, q0, secondary=posture[perm], weights=weights[perm])
            print(f"posture/weights in request order instead of model order: answer moves by "
                  f"{np.abs(swapped - q).max():.2e} rad")
    print("|N(J)ᵀ∇φ| / |∇φ| at each solution (row: request, column: criterion):",
          {f"{a}/{b}": f"{v:.1e}" for (a, b), v in grads.items()})
    assert grads[("joint_limits", "joint_limits")] <= 1e-4 and grads[("posture", "posture")] <= 1e-4
    # the plain DLS answer is not stationary for either criterion: the checks above can fail
    assert grads[("dls", "joint_limits")] > 1e-2 and grads[("dls", "posture")] > 1e-2
    resp = _solve(client, clients, target=_pose_msg(target), secondary="manipulability", initial_positions=q0.tolist())
    _check_solution(resp, model, oracle, np.arange(n), target, PANDA_TIP)
    print(f"Panda manipulability at the solutions: {resp.manipulability:.4f} (manipulability criterion)")


def _hostile(model: RobotModel, target: np.ndarray) -> list[tuple[str, dict, str]]:
    names = model.joint_names
    nan_target = _pose_msg(target)
    nan_target.pose.position.y = math.nan
    zero_quat = _pose_msg(target)
    zero_quat.pose.orientation.x = zero_quat.pose.orientation.y = zero_quat.pose.orientation.z = 0.0
    zero_quat.pose.orientation.w = 0.0
    long_quat = _pose_msg(target)
    long_quat.pose.orientation.w *= 2.0
    long_quat.pose.orientation.x *= 2.0
    long_quat.pose.orientation.y *= 2.0
    long_quat.pose.orientation.z *= 2.0
    inf_quat = _pose_msg(target)
    inf_quat.pose.orientation.x = math.inf
    far = target.copy()
    far[:3, 3] += [10.0, 0.0, 0.0]
    # inside the reach sphere but not reachable: 0.93 of the reach out along x, the tool pointing back inward
    # (the wrist centre would be 0.085 m further out than the arm reaches)
    inward = np.eye(4)
    inward[:3, :3] = [[0, 0, -1], [0, 1, 0], [1, 0, 0]]
    inward[:3, 3] = [0.93 * 0.985, 0.0, 0.42]
    good = _pose_msg(target)
    return [
        ("non_finite", {"target": nan_target}, "target.pose.position contains NaN"),
        ("quaternion", {"target": zero_quat}, "zero quaternion"),
        ("quaternion", {"target": long_quat}, "norm 2"),
        ("non_finite", {"target": inf_quat}, "orientation contains NaN or inf"),
        ("frame_id", {"target": _pose_msg(target, "world")}, "not the model's base link 'base_link'"),
        ("unknown_link", {"target": good, "link": "nope"}, "unknown link 'nope'"),
        ("joint_names", {"target": good, "joint_names": names[:5] + ["nope"]}, "unknown joint name(s) ['nope']"),
        ("joint_names", {"target": good, "joint_names": names[:5]}, "missing"),
        ("joint_names", {"target": good, "joint_names": names[:5] + names[:1]}, "duplicate"),
        ("ragged", {"target": good, "initial_positions": [0.0] * 5}, "initial_positions has 5 value(s)"),
        ("non_finite", {"target": good, "initial_positions": [math.nan] * 6}, "initial_positions contains NaN"),
        ("tolerance", {"target": good, "tolerance": -1.0}, "tolerance -1.0"),
        ("tolerance", {"target": good, "tolerance": math.nan}, "tolerance nan"),
        ("tolerance", {"target": good, "tolerance": 1e-20}, ">= 1e-12"),
        ("unknown_secondary", {"target": good, "secondary": "elbow_up"}, "unknown secondary 'elbow_up'"),
        ("ragged", {"target": good, "secondary": "posture"}, "posture has 0 value(s)"),
        ("posture", {"target": good, "posture": [0.0] * 6}, "posture given but secondary is ''"),
        ("weights", {"target": good, "weights": [1.0, -1.0, 1.0, 1.0, 1.0, 1.0]}, "weights must be > 0"),
        ("unreachable", {"target": _pose_msg(far)}, "outside the workspace"),
        ("no_solution", {"target": _pose_msg(inward)}, "did not converge"),
    ]


def test_inverse_kinematics_hostile_requests(servers, client):
    """Each bad request is answered success=false with its cause; the node keeps answering."""
    model, oracle, proc, clients = servers["rx90"]
    target = oracle.pose(_inner(model, np.random.default_rng(25)), model.tip_link)
    for cause, kw, text in _hostile(model, target):
        t0 = time.perf_counter()
        resp = _solve(client, clients, **kw)
        assert not resp.success, (cause, kw)
        assert resp.message.startswith(f"{cause}: ") and text in resp.message, resp.message
        assert len(resp.positions) == 0 and proc.poll() is None
        if cause in ("unreachable", "no_solution"):
            print(f"{cause}: answered in {time.perf_counter() - t0:.3f} s: {resp.message}")
    for kw, cause in (
        ({"positions": [math.nan] * 6}, "non_finite"),
        ({"positions": [0.0] * 6, "velocities": [1e300] * 6}, "overflow"),
        ({"positions": [0.0] * 6, "link": "nope"}, "unknown_link"),
        ({"positions": [0.0] * 7}, "ragged"),
        ({"positions": [0.0] * 6, "joint_names": ["joint1"] * 6}, "joint_names"),
    ):
        resp = call_service(client, clients["kin"], Kinematics.Request(**kw))
        assert not resp.success and resp.message.startswith(f"{cause}: "), resp.message
    resp = _solve(client, clients, target=_pose_msg(target))
    _check_solution(resp, model, oracle, np.arange(6), target, model.tip_link)
    assert proc.poll() is None


def test_slow_inverse_kinematics_blocks_no_other_service(servers, client):
    """Four unreachable-but-inside-the-reach requests queue on ~/inverse_kinematics (its own callback group):
    ~/kinematics and ~/dynamic_terms answer while they run."""
    model, oracle, _, clients = servers["rx90"]
    inward = np.eye(4)
    inward[:3, :3] = [[0, 0, -1], [0, 1, 0], [1, 0, 0]]
    inward[:3, 3] = [0.93 * 0.985, 0.0, 0.42]
    t0 = time.perf_counter()
    futures = [clients["ik"].call_async(InverseKinematics.Request(target=_pose_msg(inward))) for _ in range(4)]
    q = np.linspace(-1, 1, 6)
    kin = call_service(client, clients["kin"], Kinematics.Request(positions=q.tolist()))
    terms = call_service(client, clients["terms"], DynamicTerms.Request(positions=q.tolist()))
    t_other = time.perf_counter() - t0
    pending = not futures[-1].done()
    assert kin.success and terms.success
    deadline = time.monotonic() + 60
    while not all(f.done() for f in futures) and time.monotonic() < deadline:
        rclpy.spin_once(client, timeout_sec=0.05)
    t_ik = time.perf_counter() - t0
    print(f"kinematics + dynamic_terms answered {t_other * 1e3:.0f} ms after sending 4 slow IK requests, "
          f"which took {t_ik:.2f} s in all (last one still pending then: {pending})")
    assert pending
    for f in futures:
        assert not f.result().success and f.result().message.startswith("no_solution: ")


def test_inverse_kinematics_starts_from_joint_states(servers, client):
    """No initial_positions: the latest /joint_states (names in any order) is the start.  The target is the DGM of
    that state itself, on another branch than the mid-range start finds: the answer is the state, exactly."""
    model, oracle, _, clients = servers["rx90"]
    q_state = np.array([-0.6, 0.4, -1.9, 1.0, -0.8, 0.5])
    target = oracle.pose(q_state, model.tip_link)
    mid = 0.5 * (model.limits["lower"] + model.limits["upper"])
    from_mid = _solve(client, clients, target=_pose_msg(target), initial_positions=mid.tolist())
    assert from_mid.success and np.abs(np.array(from_mid.positions) - q_state).max() > 0.5
    perm = _cycle(6)[::-1]
    timer = publish_still_arm(client, [model.joint_names[i] for i in perm], q_state[perm])
    try:
        deadline = time.monotonic() + 20
        while True:
            resp = _solve(client, clients, target=_pose_msg(target))
            if "/joint_states" in resp.message or time.monotonic() > deadline:
                break
            rclpy.spin_once(client, timeout_sec=0.1)
    finally:
        client.destroy_timer(timer)
    assert resp.success and resp.message.startswith("solved from /joint_states"), resp.message
    q = _check_solution(resp, model, oracle, np.arange(6), target, model.tip_link)
    assert np.abs(q - q_state).max() <= 1e-12


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-2.0, 2.0), st.just(0.0))
KNOWN = {"non_finite", "quaternion", "frame_id", "unknown_link", "joint_names", "ragged", "tolerance",
         "unknown_secondary", "posture", "weights", "unreachable", "no_solution", "overflow"}


def _rare(draw, good, bad):
    """``good`` nine times in ten, else ``bad`` (strategies): most requests get past the first checks."""
    return draw(bad if draw(st.integers(0, 9)) == 0 else good)


@st.composite
def ik_requests(draw):
    msg = PoseStamped()
    msg.header.frame_id = _rare(draw, st.sampled_from(["", "base_link"]), st.sampled_from(["world", "x" * 100]))
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (_rare(draw, st.floats(-0.6, 0.6), floats) for _ in range(3))
    p.z += 0.42  # around the shoulder
    o.x, o.y, o.z, o.w = _rare(draw, st.integers(0, 2**31).map(lambda k: Rotation.random(random_state=k).as_quat()),
                               st.tuples(floats, floats, floats, floats))
    vec = st.one_of(st.just([]), st.lists(st.floats(-3.0, 3.0), min_size=6, max_size=6))
    bad_vec = st.lists(floats, max_size=8)
    secondary = _rare(draw, st.sampled_from(["", "none", "joint_limits", "manipulability", "posture"]),
                      st.sampled_from(["x", "Posture"]))
    return InverseKinematics.Request(
        link=_rare(draw, st.sampled_from(["", "link5", "tool"]), st.sampled_from(["nope", "world"])),
        target=msg, position_only=draw(st.booleans()),
        joint_names=_rare(draw, st.one_of(st.just([]), st.permutations([f"joint{i}" for i in range(1, 7)])),
                          st.lists(st.sampled_from(["joint1", "joint2", "nope"]), max_size=7)),
        initial_positions=_rare(draw, vec, bad_vec),
        secondary=secondary,
        posture=_rare(draw, st.lists(st.floats(-3.0, 3.0), min_size=6, max_size=6), bad_vec)
        if secondary == "posture" else _rare(draw, st.just([]), bad_vec),
        weights=_rare(draw, st.one_of(st.just([]), st.lists(st.floats(0.1, 3.0), min_size=6, max_size=6)), bad_vec),
        tolerance=_rare(draw, st.sampled_from([0.0, 1e-9, 1e-6]), st.sampled_from([-1.0, math.nan, 1e-13, math.inf])),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(req=ik_requests())
def test_fuzzed_inverse_kinematics_always_answered(servers, client, req):
    """Random, mostly invalid requests: a refusal with a known cause, or an answer within the limits whose errors
    (measured here with Pinocchio) are within twice the tolerance."""
    model, oracle, proc, clients = servers["rx90"]
    resp = call_service(client, clients["ik"], req, timeout=60)
    assert proc.poll() is None
    if not resp.success:
        assert resp.message.split(":")[0] in KNOWN, resp.message
        return
    perm = np.array([model.joint_names.index(n) for n in resp.joint_names])
    q = np.empty(6)
    q[perm] = resp.positions
    assert np.all(q >= model.limits["lower"]) and np.all(q <= model.limits["upper"])
    link = req.link or model.tip_link
    pose = oracle.pose(q, link)
    p = req.target.pose.position
    tol = req.tolerance or 1e-10
    assert np.linalg.norm(pose[:3, 3] - [p.x, p.y, p.z]) <= 2 * tol + 1e-15
    if not req.position_only:
        o = req.target.pose.orientation
        rot = Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix()
        assert Rotation.from_matrix(rot.T @ pose[:3, :3]).magnitude() <= 2 * tol + 1e-15


# --------------------------------------------------------------------------- ~/inertial_characteristics (issue 21)
def _oracle_inertia(oracle: Oracle, q: np.ndarray, rotor: bool) -> np.ndarray:
    """Pinocchio's crba (upper triangle mirrored), rotor inertias as its armature."""
    pm = oracle.pm
    saved = pm.armature.copy()
    ia = oracle.model.Ia
    pm.armature = np.asarray(ia if rotor and ia is not None else np.zeros(pm.nv), float)
    try:
        a = pin.crba(pm, oracle.data, q)
    finally:
        pm.armature = saved
    return np.triu(a) + np.triu(a, 1).T


@pytest.mark.parametrize("robot", ["rx90", "panda"])
def test_inertial_characteristics_equal_pinocchio(servers, client, robot):
    """d_ij, k_ij (with LF x KF), G_i at random configurations in a cyclic joint order against Pinocchio's crba
    and generalized gravity; with and without rotor inertias; the workspace report's worst coupling re-computed
    with Pinocchio at the configuration it names."""
    model, oracle, _, clients = servers[robot]
    n = model.dof
    perm = _cycle(n)
    names = [model.joint_names[i] for i in perm]
    rng = np.random.default_rng(21)
    worst = {"d": 0.0, "k": 0.0, "lfkf": 0.0, "G": 0.0}
    for trial in range(4):
        q = _inner(model, rng)
        rotor = trial % 2 == 0
        req = InertialCharacteristics.Request(joint_names=names, positions=q[perm].tolist(),
                                              exclude_rotor_inertia=not rotor)
        resp = call_service(client, clients["inertia"], req)
        assert resp.success, resp.message
        assert list(resp.joint_names) == names
        d_ref = _oracle_inertia(oracle, q, rotor)[np.ix_(perm, perm)]
        d = np.array(resp.inertia).reshape(n, n)
        worst["d"] = max(worst["d"], np.abs(d - d_ref).max() / np.abs(d_ref).max())
        k_ref = np.abs(d_ref) / np.sqrt(np.outer(np.diag(d_ref), np.diag(d_ref)))
        k = np.array(resp.coupling).reshape(n, n)
        worst["k"] = max(worst["k"], np.abs(k - k_ref).max())
        lf, kf = (np.array(v).reshape(n, n) for v in (resp.loading_factor, resp.kinematic_factor))
        off = ~np.eye(n, dtype=bool) & (lf > 0)
        worst["lfkf"] = max(worst["lfkf"], np.abs(lf * kf - k)[off].max())
        g_ref = pin.computeGeneralizedGravity(oracle.pm, oracle.data, q)[perm]
        worst["G"] = max(worst["G"], np.abs(np.array(resp.gravity) - g_ref).max())
        assert not resp.inertia_min and resp.max_coupling == 0.0 and not resp.verdict  # no samples asked
    print(f"{robot}: ~/inertial_characteristics vs Pinocchio: {worst}")
    assert worst["d"] < 1e-12 and worst["k"] < 1e-12 and worst["lfkf"] < 1e-12 and worst["G"] < 1e-10, worst

    resp = call_service(client, clients["inertia"], InertialCharacteristics.Request(joint_names=names, samples=300,
                                                                                    seed=4))
    assert resp.success, resp.message
    assert not resp.inertia and resp.verdict and resp.message == resp.verdict
    q_worst = np.empty(n)
    q_worst[perm] = resp.max_coupling_positions
    d_ref = _oracle_inertia(oracle, q_worst, True)
    k_ref = np.abs(d_ref) / np.sqrt(np.outer(np.diag(d_ref), np.diag(d_ref)))
    np.fill_diagonal(k_ref, 0.0)
    i, j = np.unravel_index(np.argmax(k_ref), k_ref.shape)
    assert abs(resp.max_coupling - k_ref[i, j]) < 1e-12
    assert set(resp.max_coupling_joints) == {model.joint_names[i], model.joint_names[j]}
    k_max = np.array(resp.coupling_max).reshape(n, n)
    lo, hi = (np.array(v).reshape(n, n) for v in (resp.inertia_min, resp.inertia_max))
    assert np.all(lo <= hi) and abs(k_max[~np.eye(n, dtype=bool)].max() - resp.max_coupling) < 1e-15
    assert resp.general_coefficients == {6: 97, 7: 147}[n]  # 004 Table 2: N(2N^2 + 3N + 7)/6
    assert resp.sparsity == pytest.approx(resp.nonzero_coefficients / resp.general_coefficients)
    report = json.loads(resp.report_json)
    assert report["joint_names"] == list(model.joint_names) and report["samples"] == 300
    print(f"{robot}: {resp.nonzero_coefficients}/{resp.general_coefficients} nonzero; {resp.verdict}")


def test_inertial_characteristics_hostile_requests(servers, client):
    model, _, proc, clients = servers["rx90"]
    n = model.dof
    bad = {
        "samples": InertialCharacteristics.Request(samples=1),
        "samples ": InertialCharacteristics.Request(samples=10_000_000),
        "empty": InertialCharacteristics.Request(),
        "non_finite": InertialCharacteristics.Request(positions=[float("nan")] * n),
        "joint_names": InertialCharacteristics.Request(joint_names=["nope"] * n, positions=[0.0] * n),
        "ragged": InertialCharacteristics.Request(positions=[0.0] * (n - 1)),
    }
    for cause, req in bad.items():
        resp = call_service(client, clients["inertia"], req)
        assert not resp.success and resp.message.startswith(cause.strip() + ":"), (cause, resp.message)
    assert proc.poll() is None
    resp = call_service(client, clients["inertia"], InertialCharacteristics.Request(positions=[0.1] * n))
    assert resp.success, resp.message


def test_inverse_kinematics_all_closed_form_solutions(servers, client):
    """``all_solutions`` on the RX-90: every configuration within the limits (002 Appendix 1 closed form) reproduces
    the pose through Pinocchio, the configuration the pose came from is among them and comes first (nearest the
    start); the Panda (no closed form) and position-only requests are refused with their causes."""
    model, oracle, _, clients = servers["rx90"]
    n = model.dof
    perm = _cycle(n)
    names = [model.joint_names[i] for i in perm]
    rng = np.random.default_rng(8)
    counts, worst = [], 0.0
    for _ in range(10):
        q = _inner(model, rng)
        target = oracle.pose(q, model.tip_link)
        req = InverseKinematics.Request(target=_pose_msg(target), joint_names=names, initial_positions=q[perm].tolist(),
                                        all_solutions=True)
        resp = call_service(client, clients["ik"], req)
        assert resp.success, resp.message
        sols = np.array(resp.solutions).reshape(-1, n)
        model_order = np.empty_like(sols)
        model_order[:, perm] = sols
        counts.append(len(sols))
        lo, hi = model.limits["lower"], model.limits["upper"]
        assert np.all(model_order >= lo - 1e-12) and np.all(model_order <= hi + 1e-12)
        for s in model_order:
            p, r = _errors(oracle, s, model.tip_link, target)
            worst = max(worst, p, r)
        assert np.abs(model_order[0] - q).max() < 1e-8, (model_order[0], q)
        assert np.allclose(resp.positions, sols[0])
        assert len({tuple(np.round(s, 6)) for s in model_order}) == len(sols)  # distinct
    print(f"RX-90 closed-form solutions within the limits per pose: {counts}; worst pose error {worst:.2e}")
    assert worst < 1e-9 and min(counts) >= 1 and max(counts) <= 8
    pmodel, poracle, _, panda = servers["panda"]
    resp = call_service(client, panda["ik"], InverseKinematics.Request(
        target=_pose_msg(poracle.pose(_inner(pmodel, rng), PANDA_TIP)), all_solutions=True))
    assert not resp.success and resp.message.startswith("no_closed_form:"), resp.message
    resp = call_service(client, clients["ik"], InverseKinematics.Request(
        target=_pose_msg(oracle.pose(_inner(model, rng), model.tip_link)), all_solutions=True, position_only=True))
    assert not resp.success and resp.message.startswith("all_solutions:"), resp.message
