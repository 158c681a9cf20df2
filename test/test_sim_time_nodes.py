"""Nodes that serve requests under ``use_sim_time`` (``dynamics_server``, ``urdf_to_dh``, ``trajectory_generator``,
``identifier``): /clock is polled by a thread of their own (:func:`robot_dynamics.ros.runtime.poll_sim_time`), not
dispatched by their executor message by message.  Beside the MuJoCo arm's 500 Hz /clock each idle node took ~40 %
of a core (the bring-up's four: 1.4 cores of 2), and the drive then ran 5-22 periods on one command several times
per move; polled: 3-6 % each (``/proc/<pid>/stat`` over 10 s of ``robot-dynamics bringup --sim mujoco``; CPU
shares are not asserted).  The trajectory generator also takes ``joint_states`` in batches
(:class:`robot_dynamics.ros.runtime.PolledSubscription`).

Asserted here, on real node processes and a /clock published by this test: the nodes answer under sim time, the
/clock subscriber is each node's hidden clock node and never the node itself, the generator stamps its markers with
the sim time, and ``use_sim_time`` cannot be switched off at run time (refused with the reason; a restart is
needed)."""

from __future__ import annotations

import time

import pytest
import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from ros_harness import call_service, node_process, wait_for_service
from ros_stack_harness import spin, spin_until
from rosgraph_msgs.msg import Clock
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.node_set import config_dir
from robot_dynamics_interfaces.srv import PlanTrajectory

pytestmark = pytest.mark.ros
NODES = ("dynamics_server", "identifier", "trajectory_generator", "urdf_to_dh")
T0 = 1000.0  # s: the sim time this test starts its /clock at (far from any system time)
MODEL = load_model("rx90")
FILES = [str(config_dir() / "robot_dynamics.yaml"), str(config_dir() / "rx90.yaml")]


def test_servers_follow_a_polled_clock_and_keep_use_sim_time(tmp_path):
    rclpy.init()
    node = rclpy.create_node("test_sim_time_nodes")
    clock_pub = node.create_publisher(Clock, "/clock", 10)
    sim = {"t": T0}

    def tick() -> None:
        sim["t"] += 0.002
        ns = round(sim["t"] * 1e9)
        clock_pub.publish(Clock(clock=TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))

    node.create_timer(0.002, tick)  # 500 Hz, sim time = T0 + wall time elapsed (roughly)
    markers: list[MarkerArray] = []
    node.create_subscription(MarkerArray, "/trajectory_generator/path_markers", markers.append, 10)
    params = {"urdf_path": str(resolve_urdf("rx90")), "use_sim_time": True}
    try:
        with node_process("dynamics_server", tmp_path, params, param_files=FILES), \
                node_process("identifier", tmp_path, params, param_files=FILES), \
                node_process("urdf_to_dh", tmp_path, params, param_files=FILES), \
                node_process("trajectory_generator", tmp_path, params, param_files=FILES) as gen:
            setp = {n: node.create_client(SetParameters, f"/{n}/set_parameters") for n in NODES}
            plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
            for c in (*setp.values(), plan):
                wait_for_service(c, 60)
            # the /clock subscribers: this node's hidden clock node, never the node itself
            spin_until(node, lambda: {f"_{n}_clock" for n in NODES} <= {
                i.node_name for i in node.get_subscriptions_info_by_topic("/clock")}, 60, "the clock nodes")
            subscribers = {i.node_name for i in node.get_subscriptions_info_by_topic("/clock")}
            assert not set(NODES) & subscribers, subscribers
            # the node clock is the sim time: the stamp of the markers of a plan (ROS time, not the system's)
            q0 = [0.0] * MODEL.dof
            req = PlanTrajectory.Request(joint_names=list(MODEL.joint_names), waypoints=[
                JointTrajectoryPoint(positions=q0), JointTrajectoryPoint(positions=[0.2] * MODEL.dof)])
            for _ in range(100):
                resp = call_service(node, plan, req, timeout=60)
                if resp.success or "no robot model" not in resp.message:
                    break
                time.sleep(0.1)
            assert resp.success, resp.message
            spin_until(node, lambda: any(m.markers and m.markers[-1].header.stamp.sec > 0 for m in markers), 60,
                       "path markers")
            stamp = next(m.markers[-1].header.stamp for m in reversed(markers) if m.markers)
            t_node = stamp.sec + 1e-9 * stamp.nanosec
            assert T0 <= t_node <= sim["t"] + 1e-9, (t_node, sim["t"])
            assert sim["t"] - t_node < 5.0, (t_node, sim["t"])  # recent: polled every 10 ms, not stale
            # use_sim_time is fixed at start: switching it off is refused with the reason, on every node
            off = ParameterMsg(name="use_sim_time", value=ParameterValue(type=ParameterType.PARAMETER_BOOL,
                                                                         bool_value=False))
            for n, client in setp.items():
                res = call_service(node, client, SetParameters.Request(parameters=[off])).results[0]
                assert not res.successful and "fixed at start" in res.reason, (n, res.reason)
            spin(node, 0.2)
            assert gen.poll() is None
    finally:
        node.destroy_node()
        rclpy.shutdown()


def test_polled_subscription_takes_every_message_in_order():
    """:class:`PolledSubscription`: messages taken oldest first by ``drain`` (on demand) and by its thread, none
    twice; the thread stops with the context."""
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.runtime import PolledSubscription

    rclpy.init()
    try:
        node = rclpy.create_node("test_polled_subscription")
        pub = node.create_publisher(JointState, "polled_states", 10)
        got: list[float] = []
        from rclpy.qos import QoSProfile
        polled = PolledSubscription(node, JointState, "polled_states", QoSProfile(depth=50), lambda m: got.append(
            m.position[0]), period=3600.0)  # the thread takes once at start, then only drain() does
        spin_until(node, lambda: pub.get_subscription_count() > 0, 60, "the polled subscription matched")
        for k in range(5):
            pub.publish(JointState(name=["a"], position=[float(k)]))
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            polled.drain()
            time.sleep(0.01)
        assert got == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert polled.drain() == 0 and got == [0.0, 1.0, 2.0, 3.0, 4.0]  # nothing taken twice
        # the thread takes by itself at its period
        fast = PolledSubscription(node, JointState, "polled_states", QoSProfile(depth=50), lambda m: got.append(
            -m.position[0]), period=0.01)
        spin_until(node, lambda: pub.get_subscription_count() > 1, 60, "the second subscription matched")
        pub.publish(JointState(name=["a"], position=[7.0]))
        spin_until(node, lambda: -7.0 in got, 60, "the thread took the message")
        assert fast.thread.is_alive()
        node.destroy_node()
    finally:
        rclpy.shutdown()
    fast.thread.join(5.0)
    assert not fast.thread.is_alive()
