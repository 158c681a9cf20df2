"""Integration: the whole node set in separate processes over DDS (bring-up runner's node set).

* a ``~/plan`` trajectory (with its feed-forward efforts) sent to the controller's topic makes the simulated arm
  reach the goal, tracked like issue 8 (``execute`` goes through the controller's action: test_trajectory_generator);
* a bad trajectory is rejected and the controller keeps its reference;
* stale ``/joint_states`` triggers the safe behaviour within one timeout and recovery after.
Oracles: the goal itself (a hand-given value), the planner's own limits, and the gravity
torques of the core model for the holding command.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ros_harness import call_service, send_trajectory, wait_for_service
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import node_set
from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import PlanTrajectory

pytestmark = pytest.mark.ros
GOAL = [0.8, -0.6, 0.9, 1.0, 0.7, -1.0]
STATE_TIMEOUT = 1.0


def _spin_until(node, cond, timeout, what):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        rclpy.spin_once(node, timeout_sec=0.05)


def _stamp(s) -> float:
    return s.header.stamp.sec + 1e-9 * s.header.stamp.nanosec


def _settled(states, first: int, goal, settle: float) -> bool:
    """The reference has reached ``goal`` (end of the trajectory) and ``settle`` s of sim time passed since."""
    for k in range(first, len(states)):
        if np.allclose(states[k].reference.positions, goal, atol=1e-12, rtol=0):
            return _stamp(states[-1]) - _stamp(states[k]) >= settle
    return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    nodes = node_set("rx90", "mujoco")
    # lockstep: a command advances the arm one period, so a watchdog hold must not fire on a slow
    # (loaded) machine: the state timeout is long compared to a cycle
    for n in nodes:
        if n.name == "mujoco_sim":
            n.parameters.update(lockstep=True, lockstep_timeout=0.5)
        if n.name == "computed_torque_controller":
            n.parameters.update(trigger="state", state_timeout=STATE_TIMEOUT)
    log_dir = tmp_path_factory.mktemp("stack")
    rclpy.init()
    node = rclpy.create_node("test_stack_client")
    with Bringup(nodes, log_dir=log_dir) as bringup:
        states: list[ControllerState] = []
        node.create_subscription(ControllerState, "/computed_torque_controller/status", states.append, 1000)
        plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
        wait_for_service(plan, 60)
        _spin_until(node, lambda: len(states) > 10, 60, "controller not running")
        yield node, bringup, plan, states, log_dir
        assert not bringup.dead(), f"a node died: {bringup.dead()}"
    node.destroy_node()
    rclpy.shutdown()


def _plan(node, plan, **kw):
    req = PlanTrajectory.Request(**kw)
    for _ in range(50):
        resp = call_service(node, plan, req)
        if resp.success or "no current position" not in resp.message:
            return resp
        time.sleep(0.1)
    return resp


def test_plan_execute_reaches_goal(stack):
    node, bringup, plan, states, _ = stack
    model = load_model("rx90")
    markers: list[MarkerArray] = []
    sub = node.create_subscription(MarkerArray, "/trajectory_generator/path_markers", markers.append, 10)
    time.sleep(0.3)
    resp = _plan(
        node, plan, joint_names=model.joint_names, waypoints=[JointTrajectoryPoint(positions=GOAL)],
        profile="trapezoid", start_from_current=True,
    )
    assert resp.success, resp.message
    first = len(states)
    send_trajectory(node, resp.trajectory)
    # rviz markers: DELETEALL, then the tip path ending at the tip pose of the goal (Pinocchio-checked FK)
    _spin_until(node, lambda: bool(markers), 60, "no path markers")
    node.destroy_subscription(sub)
    kinds = [m.action if m.action == Marker.DELETEALL else m.type for m in markers[-1].markers]
    assert kinds == [Marker.DELETEALL, Marker.LINE_STRIP, Marker.SPHERE_LIST]
    path = markers[-1].markers[1]
    assert path.header.frame_id == model.base_link and len(path.points) == len(resp.trajectory.points)
    end = path.points[-1]
    np.testing.assert_allclose([end.x, end.y, end.z], model.forward_kinematics(GOAL)[:3, 3], atol=1e-9)
    # the planner respected the limits of config/rx90.yaml and the URDF (hand-checkable bounds)
    qd = np.array([p.velocities for p in resp.trajectory.points])
    qdd = np.array([p.accelerations for p in resp.trajectory.points])
    assert np.all(np.abs(qd) <= model.limits["velocity"] * (1 + 1e-9))
    assert np.all(np.abs(qdd) <= model.limits["acceleration"] * (1 + 1e-9))
    _spin_until(node, lambda: _settled(states, first, GOAL, 0.5), 120, "the move did not complete")
    seg = states[first:]
    err = np.abs(np.array([s.error.positions for s in seg]))
    final = np.abs(np.array(seg[-1].feedback.positions) - GOAL)
    assert final.max() < 1e-3, final
    assert err.max() < 5e-3, err.max()  # computed torque, exact model, 500 Hz (issue 8: < 1e-3 at 1 kHz)
    assert not any(s.saturated for s in seg)


def test_time_optimal_plan_is_faster_and_the_arm_follows_it(stack):
    """``timing: time_optimal``: the same path as the uniform plan (GOAL -> MID -> GOAL, quintic through waypoints),
    faster, within the limits at its points, accepted by the controller and followed to the end."""
    node, bringup, plan, states, _ = stack
    model = load_model("rx90")
    mid = [0.2, 0.3, -0.4, -0.5, 0.2, 0.8]
    kw = dict(joint_names=model.joint_names, waypoints=[JointTrajectoryPoint(positions=mid),
                                                        JointTrajectoryPoint(positions=GOAL)],
              profile="quintic", start_from_current=True)
    uniform = _plan(node, plan, **kw)
    fast = _plan(node, plan, timing="time_optimal", **kw)
    assert uniform.success and fast.success, (uniform.message, fast.message)
    assert "time-optimal" in fast.message and "time-optimal" not in uniform.message
    assert fast.duration < 0.9 * uniform.duration, (fast.duration, uniform.duration)  # 1.04 vs 1.23 s from GOAL
    q = np.array([p.positions for p in fast.trajectory.points])
    qd = np.array([p.velocities for p in fast.trajectory.points])
    qdd = np.array([p.accelerations for p in fast.trajectory.points])
    effort = np.array([p.effort for p in fast.trajectory.points])
    assert np.all(np.abs(qd) <= model.limits["velocity"] * (1 + 1e-9))
    assert np.all(np.abs(qdd) <= model.limits["acceleration"] * (1 + 1e-9))
    assert np.all(np.abs(effort) <= model.limits["effort"]) and fast.peak_effort_ratio <= 1.0
    np.testing.assert_allclose(effort, model.inverse_dynamics(q, qd, qdd), atol=1e-9)  # the feed-forward
    assert np.abs(q - mid).sum(axis=1).min() < 1e-6  # through the waypoint
    accepted = states[-1].trajectories_accepted
    send_trajectory(node, fast.trajectory)

    def tracking() -> int | None:  # the index of the first state tracking the new trajectory
        return next((k for k in range(len(states)) if states[k].trajectories_accepted > accepted
                     and states[k].mode == "tracking"), None)

    _spin_until(node, lambda: tracking() is not None, 60, "the trajectory was not taken")

    def away() -> int | None:  # the first state whose reference left GOAL (the move under way)
        return next((k for k in range(tracking(), len(states))
                     if np.abs(np.array(states[k].reference.positions) - GOAL).max() > 0.05), None)

    # (a busy test process may lose some of the lockstep arm's 500+ states a second: conditions, not every sample)
    _spin_until(node, lambda: away() is not None, 120, "the reference did not leave the goal")
    _spin_until(node, lambda: _settled(states, away(), GOAL, 0.5), 120, "the move did not complete")
    seg = states[tracking():]  # the arm followed the reference (through mid: the plan's points above)
    err = np.abs(np.array([s.error.positions for s in seg]))
    assert np.abs(np.array(seg[-1].feedback.positions) - GOAL).max() < 1e-3
    assert err.max() < 5e-3, err.max()
    assert not any(s.saturated for s in seg)


def test_bad_trajectory_rejected_controller_keeps_reference(stack):
    node, bringup, plan, states, log_dir = stack
    pub = node.create_publisher(JointTrajectory, "/computed_torque_controller/joint_trajectory", 10)
    time.sleep(0.5)
    bad = JointTrajectory(joint_names=["joint1", "nope"], points=[JointTrajectoryPoint(positions=[0.0, 0.0])])
    pub.publish(bad)
    _spin_until(node, lambda: "refused [wrong_joints]" in (log_dir / "computed_torque_controller.log").read_text(), 60,
                "no rejection logged")
    before = len(states)
    _spin_until(node, lambda: len(states) > before + 50, 60, "controller stopped")
    ref = np.array(states[-1].reference.positions)
    np.testing.assert_allclose(ref, GOAL, atol=1e-9)
    node.destroy_publisher(pub)


def test_planner_rejects_bad_requests(stack):
    node, _, plan, _, _ = stack
    for kw, needle in (
        ({"waypoints": [JointTrajectoryPoint(positions=[9.0] * 6)], "start_from_current": True}, "outside"),
        ({"waypoints": [JointTrajectoryPoint(positions=[0.1] * 5)], "start_from_current": True}, "expected 6"),
        ({"waypoints": [JointTrajectoryPoint(positions=[0.1] * 6)], "start_from_current": True, "profile": "zigzag"}, "profile"),
        ({"waypoints": [JointTrajectoryPoint(positions=[0.1] * 6), JointTrajectoryPoint(positions=[0.9] * 6)],
          "duration": 0.001}, "shorter"),
        ({"joint_names": ["a"] * 6, "waypoints": [JointTrajectoryPoint(positions=[0.1] * 6)]}, "unknown"),
    ):
        resp = _plan(node, plan, **kw)
        assert not resp.success and needle in resp.message, (kw, resp.message)


def test_stale_state_safe_behaviour_and_recovery(stack):
    """Pause the simulated arm: within one state timeout the controller holds gravity (config:
    gravity_hold) and says so; after the pause it resumes control."""
    node, _, _, states, log_dir = stack
    model = load_model("rx90")
    pause = node.create_client(SetBool, "/mujoco_sim/pause")
    stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
    wait_for_service(pause)
    wait_for_service(stats)
    commands: list[tuple[float, np.ndarray]] = []
    node.create_subscription(
        Float64MultiArray, "/effort_controller/commands", lambda m: commands.append((time.monotonic(), np.array(m.data))), 100
    )
    _spin_until(node, lambda: len(commands) > 5, 60, "no commands")
    q_last = np.array(states[-1].feedback.positions)
    assert call_service(node, pause, SetBool.Request(data=True)).success
    t_pause = time.monotonic()
    # the controller runs on sim time, which the paused sim no longer advances: the safe behaviour
    # is driven by the wall-clock watchdog of the state-triggered mode
    log = log_dir / "computed_torque_controller.log"
    _spin_until(node, lambda: "mode stale" in log.read_text(), 60, "no stale-state warning")
    _spin_until(node, lambda: commands and commands[-1][0] > t_pause + 0.3, 60, "no holding command while stale")
    gravity = model.gravity_torques(q_last)
    holds = [t for t, c in commands if t > t_pause and np.allclose(c, gravity, atol=0.05)]
    assert holds, "no gravity-holding command"
    # (how soon, on the steady clock, is a real-time figure: printed, not asserted; the bound is the controller's
    # unit test, test_controller_core.py)
    print(f"\nstale -> gravity hold {holds[0] - t_pause:.3f} s after the pause (state_timeout {STATE_TIMEOUT} s)")
    assert call_service(node, pause, SetBool.Request(data=False)).success
    _spin_until(node, lambda: "joint state back" in log.read_text().split("mode stale")[-1], 60, "no recovery")
    n0 = len(states)
    _spin_until(node, lambda: len(states) > n0 + 50, 60, "controller did not resume")
    assert not states[-1].stale_state


_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.3), st.just(1e300))


@st.composite
def _plan_requests(draw):
    pts = [JointTrajectoryPoint(positions=draw(st.lists(_floats, max_size=7))) for _ in range(draw(st.integers(0, 3)))]
    return PlanTrajectory.Request(
        joint_names=draw(st.one_of(st.just([]), st.lists(st.sampled_from(["joint1", "joint2", "joint6", "x", ""]), max_size=7))),
        waypoints=pts,
        profile=draw(st.sampled_from(["", "trapezoid", "quintic", "cubic", "linear", "bang_bang", "smooth_trapezoid", "bad"])),
        max_velocity=draw(st.lists(_floats, max_size=7)),
        max_acceleration=draw(st.lists(_floats, max_size=7)),
        duration=draw(st.one_of(st.just(0.0), _floats)),
        sample_period=draw(st.one_of(st.just(0.0), st.just(1e-9), _floats)),
        execute=False,
        start_from_current=draw(st.booleans()),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(req=_plan_requests())
def test_fuzzed_plan_requests_always_answered(stack, req):
    node, bringup, plan, _, _ = stack
    resp = call_service(node, plan, req)
    assert resp.success or resp.message
    if resp.success:  # whatever got through is a finite trajectory within the joint limits
        q = np.array([p.positions for p in resp.trajectory.points])
        assert np.all(np.isfinite(q))
    assert not bringup.dead()
