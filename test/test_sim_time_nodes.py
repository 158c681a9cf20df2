"""``dynamics_server`` under ``use_sim_time``: /clock is polled by a thread of its own (:func:`robot_dynamics.ros.runtime.poll_sim_time`), not dispatched by their
executor message by message (the identifier and the trajectory generator, which run action clients, keep
rclpy's time source: with the polled clock one identification's goal response never reached the identifier).  Beside the MuJoCo arm's 500 Hz /clock the two idle servers took ~50 % of a core each
(``top``), the drive then ran 5-22 periods on one command several times per move (its commands were late, the
controller's loop was on time); polled: ~7 % each and no such run (what the drive got is asserted in
``test_identify_swap.py``; CPU shares are not asserted).

Asserted here, on a real node process and a /clock published by this test: the node answers under sim time, the
/clock subscriber is its hidden clock node and not the node itself (the trajectory generator beside it, with
rclpy's time source, subscribes itself and stamps its markers with the sim time), and ``use_sim_time`` cannot be
switched off at run time on the dynamics server (refused with the reason; a restart is needed)."""

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
NODES = ("dynamics_server",)
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
        with node_process("dynamics_server", tmp_path, params, param_files=FILES), node_process("identifier", tmp_path, params, param_files=FILES), \
                node_process("trajectory_generator", tmp_path, params, param_files=FILES) as gen:
            setp = {n: node.create_client(SetParameters, f"/{n}/set_parameters") for n in NODES}
            plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
            for c in (*setp.values(), plan):
                wait_for_service(c, 60)
            # the /clock subscribers: this node's hidden clock node, never the node itself
            spin_until(node, lambda: {f"_{n}_clock" for n in NODES} <= {
                i.node_name for i in node.get_subscriptions_info_by_topic("/clock")}, 30, "the clock nodes")
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
            spin_until(node, lambda: any(m.markers and m.markers[-1].header.stamp.sec > 0 for m in markers), 10,
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
