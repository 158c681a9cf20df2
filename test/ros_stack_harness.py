"""The node set under test, as a user sees it: a monitor of everything the arm is commanded and does (checked as it
arrives), and clients of every node (shared by the fault-injection and fuzz suites)."""

from __future__ import annotations

import json
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_harness import call_service
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.runtime import PolledSubscription
from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import DynamicTerms, PlanTrajectory

MODEL = load_model("rx90")
LIM = MODEL.limits
NAMES = MODEL.joint_names
EFFORT = np.asarray(LIM["effort"], float)
STATE_TIMEOUT = 0.2
HOSTILE = "hostile"  # frame_id of the messages this test injects (the monitor ignores them)


MONITOR_POLL = 0.02  # s between two takes of the monitor's topics
MONITOR_DEPTH = 10_000  # messages a topic's reader holds while the test process waits for a core (20 s at 500 Hz)


class Monitor:
    """Everything the arm is commanded and does, checked as it arrives.  The three 500 Hz topics are taken in
    batches by threads of their own (``PolledSubscription``), not dispatched one by one by the test's executor: a
    third of a core less in the test process, and nothing waits for the test to spin."""

    def __init__(self, node) -> None:
        self.commands: list[tuple[float, np.ndarray, str]] = []
        self.bad_commands: list[np.ndarray] = []
        self.states: list[tuple[float, float, np.ndarray, np.ndarray]] = []
        self.out_of_limits: list[tuple[float, np.ndarray]] = []
        self.ctl: list[ControllerState] = []
        qos = QoSProfile(depth=MONITOR_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self.polled = [PolledSubscription(node, t, topic, qos, cb, MONITOR_POLL) for t, topic, cb in (
            (Float64MultiArray, "/effort_controller/commands", self.on_command),
            (JointState, "/joint_states", self.on_state),
            (ControllerState, "/computed_torque_controller/status", self.ctl.append))]

    def on_command(self, msg: Float64MultiArray) -> None:
        tau = np.array(msg.data)
        label = msg.layout.dim[0].label if msg.layout.dim else ""
        if label == HOSTILE:
            return
        self.commands.append((time.monotonic(), tau, label))
        if tau.shape != (len(NAMES),) or not np.all(np.isfinite(tau)) or np.any(np.abs(tau) > EFFORT * (1 + 1e-9)):
            self.bad_commands.append(tau)

    def on_state(self, msg: JointState) -> None:
        if msg.header.frame_id == HOSTILE or list(msg.name) != NAMES:
            return
        q = np.array(msg.position)
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.states.append((time.monotonic(), stamp, q, np.array(msg.velocity)))
        if np.any(q < LIM["lower"] - 0.05) or np.any(q > LIM["upper"] + 0.05):
            self.out_of_limits.append((stamp, q))

    def mode(self) -> str:
        return self.ctl[-1].mode if self.ctl else ""


def spin(node, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.005)


def spin_until(node, cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        rclpy.spin_once(node, timeout_sec=0.01)


class Stack:
    def __init__(self, node, bringup, monitor, log_dir) -> None:
        self.node, self.bringup, self.monitor, self.log_dir = node, bringup, monitor, log_dir
        self.stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
        self.plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
        self.terms = node.create_client(DynamicTerms, "/dynamics_server/dynamic_terms")
        self.pause = node.create_client(SetBool, "/mujoco_sim/pause")
        self.reset = node.create_client(Trigger, "/mujoco_sim/reset")
        self.traj_pub = node.create_publisher(JointTrajectory, "/computed_torque_controller/joint_trajectory", 10)
        self.state_pub = node.create_publisher(JointState, "/joint_states", 10)

    def statistics(self) -> dict:
        return json.loads(call_service(self.node, self.stats, Trigger.Request()).message)

    def q(self) -> np.ndarray:
        return self.monitor.states[-1][2]

    def sim_time(self) -> float:
        return self.monitor.states[-1][1]

    def assert_safe(self) -> None:
        """What every batch of hostile input must leave true (no request made): every node alive, every command the
        arm got finite and within the effort limits, the arm within its joint limits."""
        m = self.monitor
        assert not self.bringup.dead(), f"a node died: {self.bringup.dead()}"
        assert not m.bad_commands, f"{len(m.bad_commands)} bad commands, e.g. {m.bad_commands[0]}"
        assert not m.out_of_limits, f"the arm left its limits: {m.out_of_limits[0]}"

    def assert_healthy(self, modes=("holding", "tracking")) -> None:
        """Nodes alive and answering; the arm never got a bad command nor left its limits; the mode is known."""
        m = self.monitor
        self.assert_safe()
        resp = call_service(self.node, self.terms, DynamicTerms.Request(positions=[0.1] * 6))
        assert resp.success, resp.message
        np.testing.assert_allclose(resp.gravity, MODEL.gravity_torques(np.full(6, 0.1)), atol=1e-9)
        spin_until(self.node, lambda: m.mode() in modes, 60, f"controller mode {m.mode()} not in {modes}")
        assert self.statistics()["mode"] in modes + ("stale",)  # stale for a moment on a loaded machine is safe

    def hold_here(self) -> None:
        """Send a one-point trajectory at the current position (the arm holds still)."""
        msg = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(
            positions=self.q().tolist(), time_from_start=Duration(nanosec=200_000_000))])
        self.traj_pub.publish(msg)
        spin(self.node, 0.5)
