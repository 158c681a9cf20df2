"""Trees and locked branches through the nodes (issue 14), against the core model built in this process.

* dynamics_server with ``tip_link``: the off-chain joints (Panda fingers) are locked; one given by the
  ``locked_joints``/``locked_positions`` parameters, the other read from the first ``/joint_states``
  naming it — the served dynamics change from "finger at 0" to "finger where the robot says".
* dynamics_server without ``tip_link``: the whole tree (9 joints).
* urdf_to_dh ``~/convert`` with locked joints in the request.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from example_robots import example_urdf
from ros_harness import call_service, node_process, wait_for_service
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics import RobotModel
from robot_dynamics_interfaces.srv import ConvertUrdf, InverseDynamics

pytestmark = pytest.mark.ros
PANDA = example_urdf("panda")
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


@pytest.fixture(scope="module")
def ros_node():
    rclpy.init()
    node = rclpy.create_node("test_tree_client")
    yield node
    node.destroy_node()
    rclpy.shutdown()


def _tau(node, client, names, q, qd, qdd) -> np.ndarray:
    pts = [JointTrajectoryPoint(positions=a.tolist(), velocities=b.tolist(), accelerations=c.tolist())
           for a, b, c in zip(q, qd, qdd, strict=True)]
    resp = call_service(node, client, InverseDynamics.Request(joint_names=names, points=pts))
    assert resp.success, resp.message
    assert list(resp.joint_names) == list(names)
    return np.array([p.effort for p in resp.points])


def test_locked_fingers_from_parameters_and_joint_states(ros_node, tmp_path) -> None:
    node = ros_node
    params = {"urdf_path": str(PANDA), "tip_link": "panda_hand", "locked_joints": [FINGERS[0]],
              "locked_positions": [0.035]}
    chain = RobotModel.from_urdf(str(PANDA), tip_link="panda_hand", locked_positions={FINGERS[0]: 0.035})
    measured = RobotModel.from_urdf(str(PANDA), tip_link="panda_hand",
                                    locked_positions={FINGERS[0]: 0.035, FINGERS[1]: 0.012})
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1, 1, (20, 7)) for _ in range(3))
    before, after = chain.inverse_dynamics(q, qd, qdd), measured.inverse_dynamics(q, qd, qdd)
    assert np.abs(before - after).max() > 1e-4  # the finger position matters (the assertion below can fail)
    with node_process("dynamics_server", tmp_path, params=params):
        client = node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics")
        wait_for_service(client)
        got = _tau(node, client, chain.joint_names, q, qd, qdd)
        np.testing.assert_allclose(got, before, rtol=1e-12, atol=1e-12)
        pub = node.create_publisher(JointState, "/joint_states", 10)
        # the arm joints are on the chain, finger 1 is fixed by the parameters: only finger 2 is read
        msg = JointState(name=[*chain.joint_names, *FINGERS], position=[0.3] * 7 + [0.001, 0.012])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg.header.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
            rclpy.spin_once(node, timeout_sec=0.2)
            got = _tau(node, client, chain.joint_names, q, qd, qdd)
            if np.abs(got - after).max() < 1e-9:
                break
        np.testing.assert_allclose(got, after, rtol=1e-12, atol=1e-12)
        node.destroy_publisher(pub)
    log = (tmp_path / "dynamics_server.log").read_text()
    assert "locked (lumped like fixed joints): panda_finger_joint1=0.035, panda_finger_joint2=0" in log
    assert "locked joints at their /joint_states positions: {'panda_finger_joint2': 0.012}" in log


def test_whole_tree_server_and_locked_convert(ros_node, tmp_path) -> None:
    node = ros_node
    whole = RobotModel.from_urdf(str(PANDA))
    assert whole.dof == 9
    (tmp_path / "ds").mkdir()
    (tmp_path / "u2d").mkdir()
    with node_process("dynamics_server", tmp_path / "ds", params={"urdf_path": str(PANDA)}), \
            node_process("urdf_to_dh", tmp_path / "u2d", params={"urdf_path": str(PANDA)}):
        client = node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics")
        wait_for_service(client)
        rng = np.random.default_rng(4)
        q, qd, qdd = (rng.uniform(-1, 1, (10, 9)) for _ in range(3))
        order = [8, 0, 3, 7, 1, 6, 2, 5, 4]  # a permutation that is not its own inverse
        names = [whole.joint_names[i] for i in order]
        got = _tau(node, client, names, q[:, order], qd[:, order], qdd[:, order])
        np.testing.assert_allclose(got, whole.inverse_dynamics(q, qd, qdd)[:, order], rtol=1e-12, atol=1e-12)

        conv = node.create_client(ConvertUrdf, "/urdf_to_dh/convert")
        wait_for_service(conv)
        resp = call_service(node, conv, ConvertUrdf.Request(tip_link="panda_hand", locked_joints=[FINGERS[1]],
                                                            locked_positions=[0.02]))
        assert resp.success, resp.message
        ref = RobotModel.from_urdf(str(PANDA), tip_link="panda_hand", locked_positions={FINGERS[1]: 0.02})
        assert [j.name for j in resp.model.joints] == ref.joint_names
        assert "locked" in resp.message and "'panda_finger_joint2': 0.02" in resp.message
        got_m = [j.m for j in resp.model.joints]
        np.testing.assert_allclose(got_m, ref.inertial[:, 9], rtol=0, atol=1e-15)
        assert RobotModel.from_yaml(resp.yaml).locked_joints == {FINGERS[0]: 0.0, FINGERS[1]: 0.02}
        bad = call_service(node, conv, ConvertUrdf.Request(tip_link="panda_hand", locked_joints=[FINGERS[1]],
                                                           locked_positions=[0.5]))
        assert not bad.success and "outside the joint limits" in bad.message
        bad = call_service(node, conv, ConvertUrdf.Request(locked_joints=["a", "b"], locked_positions=[0.5]))
        assert not bad.success and "2 locked_joints but 1 locked_positions" in bad.message
        resp = call_service(node, conv, ConvertUrdf.Request())  # the whole tree
        assert resp.success and len(resp.model.joints) == 9
        assert [j.antecedent for j in resp.model.joints] == [0, 1, 2, 3, 4, 5, 6, 7, 7]
