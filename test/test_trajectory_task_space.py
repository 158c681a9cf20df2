"""Task-space straight line + fixed-axis rotation (001 §8.4): scipy Rotation and Pinocchio as oracles."""

import math

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from scipy.spatial.transform import Rotation, Slerp

from robot_dynamics import RobotModel
from robot_dynamics.trajectory import TaskSpaceLine, axis_angle, point_to_point, task_space_line

URDF = str(example_urdf("ur5"))


@pytest.fixture(scope="module")
def ur5():
    return RobotModel.from_urdf(URDF)


def pose(rotvec, p):
    t = np.eye(4)
    t[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    t[:3, 3] = p
    return t


@pytest.mark.parametrize("alpha", [0.0, 1e-9, 1e-4, 0.7, 2.5, math.pi - 1e-7, math.pi])
def test_axis_angle_8_51_including_small_sine(alpha):
    rng = np.random.default_rng(3)
    ri = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    rf = ri @ Rotation.from_rotvec(u * alpha).as_matrix()  # R^i rot(u, alpha) = R^f (8.49)
    u_got, a_got = axis_angle(ri, rf)
    assert a_got == pytest.approx(alpha, abs=1e-7)
    assert np.linalg.norm(u_got) == pytest.approx(1.0)
    assert np.allclose(ri @ Rotation.from_rotvec(u_got * a_got).as_matrix(), rf, atol=1e-9)
    if 1e-4 <= alpha < math.pi - 1e-3:
        assert np.allclose(u_got, u, atol=1e-9)


def test_line_pose_and_twist_follow_8_52_to_8_57():
    ti = pose([0.2, -0.4, 0.1], [0.3, 0.1, 0.5])
    tf = pose([1.0, 0.5, -0.3], [0.6, -0.2, 0.4])
    kv, ka = np.array([0.5, 1.0]), np.array([2.0, 3.0])
    line = TaskSpaceLine(ti, tf, kv, ka, "trapezoid")
    D = np.linalg.norm(tf[:3, 3] - ti[:3, 3])
    rel = Rotation.from_matrix(ti[:3, :3].T @ tf[:3, :3]).magnitude()
    # D and alpha synchronized as two joints of §8.3
    assert line.duration == pytest.approx(point_to_point([0, 0], [D, rel], kv, ka, "trapezoid").duration)
    t = np.linspace(0, line.duration, 801)
    T = line.pose(t)
    assert np.allclose(T[0], ti, atol=1e-12) and np.allclose(T[-1], tf, atol=1e-12)
    # position on the segment, orientation = geodesic (slerp) at the same fraction r = s(t)/D
    frac = np.linalg.norm(T[:, :3, 3] - ti[:3, 3], axis=1) / D
    d = T[:, :3, 3] - ti[:3, 3] - np.outer(frac * D, (tf[:3, 3] - ti[:3, 3]) / D)
    assert np.max(np.abs(d)) < 1e-12
    slerp = Slerp([0.0, 1.0], Rotation.from_matrix([ti[:3, :3], tf[:3, :3]]))
    assert np.allclose(T[:, :3, :3], slerp(frac).as_matrix(), atol=1e-9)
    # twist: finite differences of the pose; limits respected and saturated
    v, w, vd, wd = line.twist(t)
    h = 1e-6
    tp, tm = line.pose(t[1:-1] + h), line.pose(t[1:-1] - h)
    assert np.allclose((tp[:, :3, 3] - tm[:, :3, 3]) / (2 * h), v[1:-1], atol=1e-6)
    wfd = Rotation.from_matrix(tp[:, :3, :3] @ np.transpose(tm[:, :3, :3], (0, 2, 1))).as_rotvec() / (2 * h)
    assert np.allclose(wfd, w[1:-1], atol=1e-6)
    vn, wn = np.linalg.norm(v, axis=1), np.linalg.norm(w, axis=1)
    an, aw = np.linalg.norm(vd, axis=1), np.linalg.norm(wd, axis=1)
    assert vn.max() <= kv[0] * (1 + 1e-9) and wn.max() <= kv[1] * (1 + 1e-9)
    assert an.max() <= ka[0] * (1 + 1e-9) and aw.max() <= ka[1] * (1 + 1e-9)
    assert max(vn.max() / kv[0], wn.max() / kv[1]) == pytest.approx(1.0, rel=1e-6)


def _pin_tip(q_batch):
    pm = pin.buildModelFromUrdf(URDF)
    data = pm.createData()
    fid = pm.getFrameId("wrist_3_link")
    out = []
    for q in q_batch:
        pin.framesForwardKinematics(pm, data, q)
        out.append(data.oMf[fid].homogeneous.copy())
    return np.array(out)


@pytest.mark.parametrize("profile", ["trapezoid", "smooth_trapezoid", "quintic"])
def test_ur5_straight_line_stays_on_line(ur5, profile):
    q0 = np.array([0.3, -1.2, 1.5, -1.0, 1.2, 0.4])
    t0 = _pin_tip([q0])[0]
    target = t0.copy()
    target[:3, 3] += [0.12, 0.15, -0.1]
    target[:3, :3] = t0[:3, :3] @ Rotation.from_rotvec([0.2, 0.4, 0.5]).as_matrix()
    traj = task_space_line(ur5, q0, target, (0.5, 1.0), (1.0, 2.0), profile=profile, period=0.01)
    assert traj.n == 6 and traj.duration == pytest.approx(traj.line.duration)
    t = np.linspace(0, traj.duration, 3001)
    q, qd, qdd = traj.evaluate(t)
    T = _pin_tip(q)  # independent forward kinematics
    p0, p1 = t0[:3, 3], target[:3, 3]
    u = (p1 - p0) / np.linalg.norm(p1 - p0)
    d = T[:, :3, 3] - p0
    assert np.max(np.linalg.norm(d - np.outer(d @ u, u), axis=1)) <= 1e-6  # on the line (m)
    assert np.all(d @ u >= -1e-9) and np.all(d @ u <= np.linalg.norm(p1 - p0) + 1e-9)
    assert np.allclose(T, traj.line.pose(t), atol=1e-6)  # and on the planned time law
    assert np.allclose(T[-1], target, atol=1e-9) and np.allclose(q[0], q0, atol=1e-9)
    # joint velocities/accelerations are the derivatives of the joint positions
    h = 1e-6
    qp, qm = traj.evaluate(t[1:-1] + h)[0], traj.evaluate(t[1:-1] - h)[0]
    assert np.allclose((qp - qm) / (2 * h), qd[1:-1], atol=1e-6)
    qdp, qdm = traj.evaluate(t[1:-1] + h)[1], traj.evaluate(t[1:-1] - h)[1]
    assert np.allclose((qdp - qdm) / (2 * h), qdd[1:-1], atol=1e-4)
    assert np.allclose(qd[[0, -1]], 0.0, atol=1e-9)


def test_singularity_on_path_is_an_error(ur5):
    qs = np.array([0.3, -1.2, 1.5, -1.0, 0.0, 0.4])  # wrist_2 = 0: wrist axes 4 and 6 aligned
    ts = _pin_tip([qs])[0]
    a, b = ts.copy(), ts.copy()
    a[:3, 3] -= [0.05, 0.0, 0.0]
    b[:3, 3] += [0.05, 0.0, 0.0]
    q0 = ur5.inverse_kinematics(a, q0=qs + [0, 0, 0, 0, 0.1, 0])
    assert np.allclose(_pin_tip([q0])[0], a, atol=1e-8)
    with pytest.raises(ValueError, match="singular"):
        task_space_line(ur5, q0, b, 0.1, 0.5)


def test_joint_limit_violation_is_an_error(ur5):
    data = ur5.to_dict()
    data["joints"][2]["upper"] = 1.45  # the elbow must pass above 1.45 rad on the path below
    limited = RobotModel.from_dict(data)
    q0 = np.array([0.3, -1.2, 1.4, -1.0, 1.2, 0.4])
    target = _pin_tip([np.array([0.3, -1.3, 1.7, -1.0, 1.2, 0.4])])[0]
    with pytest.raises(ValueError, match="elbow_joint.*limits"):
        task_space_line(limited, q0, target, 0.5, 1.0)


def test_task_space_bad_input(ur5):
    q0 = np.array([0.3, -1.2, 1.5, -1.0, 1.2, 0.4])
    t0 = ur5.forward_kinematics(q0)
    with pytest.raises(ValueError):
        task_space_line(ur5, q0[:5], t0, 1.0, 1.0)
    with pytest.raises(ValueError):
        task_space_line(ur5, q0, t0[:3], 1.0, 1.0)
    bad = t0.copy()
    bad[:3, :3] *= 2.0
    with pytest.raises(ValueError):
        task_space_line(ur5, q0, bad, 1.0, 1.0)
    with pytest.raises(ValueError):
        task_space_line(ur5, q0, t0, (1.0, -1.0), 1.0)
    with pytest.raises(ValueError):
        task_space_line(ur5, q0, t0, 1.0, 1.0, period=0.0)
    still = task_space_line(ur5, q0, t0, 1.0, 1.0)
    assert still.duration == 0.0 and np.allclose(still.evaluate(0.3)[0], q0)
