"""Fault injection against the real node set (issue 13): every case of the issue, replayed as a user or an
adversary would, with the simulated arm in real time.  A monitor watches what the *arm* gets and does, all
along: no command is ever non-finite or beyond the effort limits, no measured position leaves the URDF limits
by more than 0.05 rad.  After every case the nodes are alive and answering, and the controller says what it
is doing (``ControllerState.mode``).  Figures (latencies, gaps) are printed, never asserted on time."""

from __future__ import annotations

import json
import math
import os
import subprocess
import time

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration, Time
from ros_harness import call_service, wait_for_service
from ros_stack_harness import EFFORT, HOSTILE, LIM, MODEL, NAMES, STATE_TIMEOUT, Monitor, Stack, spin, spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import node_set
from robot_dynamics_interfaces.srv import PlanTrajectory

pytestmark = pytest.mark.ros

@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    nodes = node_set("rx90", "mujoco")
    for n in nodes:
        if n.name == "computed_torque_controller":
            n.parameters.update(state_timeout=STATE_TIMEOUT)
    log_dir = tmp_path_factory.mktemp("faults")
    rclpy.init()
    try:  # rclpy is shut down whatever fails, so a failure here cannot break the next modules' rclpy.init()
        node = rclpy.create_node("test_fault_client")
        monitor = Monitor(node)
        with Bringup(nodes, log_dir=log_dir) as bringup:
            s = Stack(node, bringup, monitor, log_dir)
            wait_for_service(s.stats, 60)
            wait_for_service(s.plan, 60)
            wait_for_service(s.terms, 60)
            spin_until(node, lambda: monitor.mode() == "holding" and len(monitor.states) > 50, 60,
                       "controller not holding")
            yield s
            s.assert_healthy()
        node.destroy_node()
    finally:
        rclpy.shutdown()


def _plan(stack: Stack, goal, timeout: float = 30.0, send: bool = False, **kw):
    """Plan from the current position to ``goal``; ``send``: publish the plan on the controller's topic."""
    req = PlanTrajectory.Request(joint_names=NAMES, waypoints=[JointTrajectoryPoint(positions=list(map(float, goal)))],
                                 start_from_current=True, **kw)
    resp = call_service(stack.node, stack.plan, req, timeout=timeout)
    if send and resp.success:
        stack.traj_pub.publish(resp.trajectory)
    return resp


def test_start_up_arm_did_not_fall(stack):
    """The simulated arm held still until the controller took over: the first states are at the initial pose."""
    first = np.array([q for _, _, q, _ in stack.monitor.states[:20]])
    assert np.abs(first).max() < 0.05, first  # initial positions are zeros; the sim brakes until the first command
    stack.assert_healthy()


def test_malformed_and_hostile_joint_states(stack):
    t_sim = stack.sim_time()
    q = stack.q()

    def js(names, pos, vel, stamp=None, nanosec=0):
        m = JointState(name=names, position=pos, velocity=vel)
        m.header.frame_id = HOSTILE
        if stamp is not None:
            m.header.stamp = Time(sec=int(stamp), nanosec=nanosec)
        return m

    nan_q = q.copy()
    nan_q[2] = math.nan
    cases = {
        "non_finite_state": js(NAMES, nan_q.tolist(), [0.0] * 6),
        "missing_joints": js(["gripper_left", "gripper_right"], [0.01, 0.01], [0.0, 0.0]),
        "no_velocities": js(NAMES, q.tolist(), []),
        "duplicate_names": js(NAMES[:5] + [NAMES[0]], q.tolist(), [0.0] * 6),
        "stale_stamp": js(NAMES, (q + 0.3).tolist(), [0.0] * 6, stamp=max(0.0, t_sim - 30) + 1e-9),
        "future_stamp": js(NAMES, (q + 0.3).tolist(), [0.0] * 6, stamp=t_sim + 3600),
        "bad_stamp": js(NAMES, q.tolist(), [0.0] * 6, stamp=t_sim, nanosec=2_000_000_000),
        "too_large": js([f"j{i}" for i in range(20_000)], [0.0] * 20_000, [0.0] * 20_000),
    }
    if t_sim < 30:  # a stamp 30 s in the past needs 30 s of sim time: use 0 + epsilon (also far in the past)
        cases["stale_stamp"].header.stamp = Time(sec=0, nanosec=1)
    for _ in range(40):
        for msg in cases.values():
            stack.state_pub.publish(msg)
        spin(stack.node, 0.02)
    spin(stack.node, 0.5)
    refused = stack.statistics()["refused"]
    for cause in cases:
        if cause == "stale_stamp" and t_sim < STATE_TIMEOUT:
            continue
        assert refused.get(cause, 0) > 0, (cause, refused)
    stack.assert_healthy()
    # the hostile positions (q + 0.3) never became the controller's feedback
    fb = np.array(stack.monitor.ctl[-1].feedback.positions)
    assert np.abs(fb - stack.q()).max() < 0.05


def test_trajectory_whose_path_leaves_the_limits_is_refused(stack):
    q = stack.q()
    before = stack.statistics()["refused"].get("path_limits", 0)
    fast = JointTrajectory(joint_names=NAMES, points=[  # at rest at its end (JTC's check of the last point passes)
        JointTrajectoryPoint(positions=q.tolist(), velocities=[1e6] * 6, time_from_start=Duration(nanosec=500_000_000)),
        JointTrajectoryPoint(positions=q.tolist(), velocities=[0.0] * 6, time_from_start=Duration(sec=1))])
    quintic = JointTrajectory(joint_names=NAMES, points=[
        JointTrajectoryPoint(positions=q.tolist(), velocities=[0.0] * 6, accelerations=[0.0] * 6),
        JointTrajectoryPoint(positions=(q + 0.01).tolist(), velocities=[0.0] * 6, accelerations=[1e9] * 6,
                             time_from_start=Duration(sec=1))])
    for msg in (fast, quintic):
        stack.traj_pub.publish(msg)
        spin(stack.node, 1.0)
    assert stack.statistics()["refused"].get("path_limits", 0) >= before + 2
    assert "leaves the" in (stack.log_dir / "computed_torque_controller.log").read_text()
    stack.assert_healthy()
    assert np.abs(stack.q() - q).max() < 0.01  # the arm did not move


def test_plan_service_limits(stack):
    vel = np.asarray(LIM["velocity"], float)
    resp = _plan(stack, [0.2] * 6, max_velocity=(vel * 1.5).tolist())
    assert not resp.success and "above the robot's limit" in resp.message, resp.message
    bad_first = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    bad_first[0] = LIM["upper"][0] + 0.7
    req = PlanTrajectory.Request(joint_names=NAMES, waypoints=[JointTrajectoryPoint(positions=bad_first),
                                                                JointTrajectoryPoint(positions=[0.1] * 6)])
    resp = call_service(stack.node, stack.plan, req)
    assert not resp.success and "waypoints[0]" in resp.message and "joint1" in resp.message, resp.message
    req.waypoints = [JointTrajectoryPoint(positions=[0.1] * 6), JointTrajectoryPoint(positions=bad_first)]
    resp = call_service(stack.node, stack.plan, req)
    assert not resp.success and "waypoints[1]" in resp.message, resp.message
    stack.assert_healthy()


def test_long_trajectory_does_not_freeze_the_loop(stack):
    goal = stack.q() + np.array([0.3, -0.2, 0.2, 0.3, 0.2, 0.3])
    c0 = len(stack.monitor.ctl)
    resp = _plan(stack, goal, duration=999.0, send=True, timeout=180.0)
    assert resp.success, resp.message
    assert len(resp.trajectory.points) > 99_000
    # adopted (it may be dropped again at once if a loaded machine starves the state stream: stale -> hold)
    points = f"{len(resp.trajectory.points)} points"  # every sample period and the plan's breakpoints
    spin_until(stack.node, lambda: any(s.mode == "tracking" and points in s.mode_reason
                                       for s in stack.monitor.ctl[c0:]), 60, "long trajectory never adopted")
    # measured where it happens: the controller's own loop periods (its ring buffer covers the last 40 s);
    # this process's receive times would show its own stall while it deserializes the 100k-point response
    loop = stack.statistics()
    print(f"\nlong trajectory ({len(resp.trajectory.points)} points) taken in: controller loop {loop['rate_hz']:.0f} Hz, "
          f"period error p99 {loop['period_error_p99_ms']:.2f} ms, max {loop['period_error_max_ms']:.1f} ms")
    assert loop["period_error_max_ms"] < 5000.0  # the issue: 19 s without any command
    stack.assert_healthy()
    stack.hold_here()


def test_stale_states_give_safe_output_within_the_timeout(stack):
    latencies = []
    for _ in range(5):
        n0, c0 = len(stack.monitor.commands), len(stack.monitor.ctl)
        assert call_service(stack.node, stack.pause, SetBool.Request(data=True)).success
        try:
            t_last = stack.monitor.states[-1][0]
            spin_until(stack.node, lambda n0=n0: any(lbl == "hold" for _, _, lbl in stack.monitor.commands[n0:]), 60,
                       "no safe output on stale states")
            first_hold = next(t for t, _, lbl in stack.monitor.commands[n0:] if lbl == "hold")
            latencies.append(first_hold - t_last)
            # the controller says so
            spin_until(stack.node, lambda c0=c0: any(s.mode == "stale" and s.stale_state for s in stack.monitor.ctl[c0:]),
                       60, "ControllerState never said stale")
        finally:
            assert call_service(stack.node, stack.pause, SetBool.Request(data=False)).success
        spin(stack.node, 0.5)
    print(f"\nstale -> safe output after the last state (state_timeout {STATE_TIMEOUT} s): "
          f"min {min(latencies) * 1e3:.0f} ms, median {np.median(latencies) * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms")
    stack.assert_healthy()


def test_sim_restart_time_jump_holds_without_burst(stack):
    resp = _plan(stack, stack.q() + np.array([0.5, -0.4, 0.4, 0.5, 0.5, 0.5]), send=True)
    assert resp.success, resp.message
    spin(stack.node, 0.3)
    assert call_service(stack.node, stack.reset, Trigger.Request()).success
    t_reset = time.monotonic()
    spin(stack.node, 1.5)
    after = [(t, tau) for t, tau, _ in stack.monitor.commands if t > t_reset + 0.2]
    assert after, "no command after the restart"
    q = stack.q()
    g = MODEL.gravity_torques(q)
    worst = max(np.abs(tau - g).max() for _, tau in after[-100:])
    print(f"\nafter a sim restart: worst |tau - gravity| over the last 100 commands {worst:.2f} N m")
    assert worst < 0.2 * EFFORT.max(), worst  # holding, not chasing the old trajectory with a burst
    log = (stack.log_dir / "computed_torque_controller.log").read_text()
    assert "jumped" in log
    stack.assert_healthy()


def test_killed_controller_arm_stops_and_restart_recovers(stack):
    resp = _plan(stack, stack.q() + np.array([-0.5, 0.4, -0.4, -0.5, -0.5, -0.5]), send=True)
    assert resp.success, resp.message
    spin(stack.node, 0.3)
    proc = stack.bringup.procs["computed_torque_controller"]
    proc.kill()
    proc.wait(10)
    t_kill = time.monotonic()
    k0 = len(stack.monitor.states)
    # Fast DDS's shared-memory transport may block the sim's publisher for seconds (its port health check) once a
    # reader's process died: the sim's clock stalls with it, the arm does not move meanwhile; wait for states again
    # (generous cap), then judge the ones 4 s of SIM time or more after the kill (a loaded host runs the simulation
    # slower than the wall clock: 4 s of wall time may be a fraction of a second of the arm's time)
    def late_states() -> list:
        after = stack.monitor.states[k0:]
        return [(t, qd) for t, stamp, _, qd in after if after and t > t_kill and stamp > after[0][1] + 4.0]

    spin_until(stack.node, lambda: len(late_states()) >= 10, 120,
               "precondition: no state from the simulator 4 s of sim time after the kill (its publisher stalled by "
               "Fast DDS, or a starved host)")
    late = late_states()
    after = stack.monitor.states[k0:]
    assert late and max(np.abs(qd).max() for _, qd in late) < 1e-9, "the arm did not stop after the controller died"
    t_sim_kill = after[0][1]
    stop = next(stamp for _, stamp, _, qd in after if np.abs(qd).max() < 1e-9)
    print(f"\ncontroller killed: the simulated arm stopped {(stop - t_sim_kill) * 1e3:.0f} ms of sim time later")
    spec = next(n for n in stack.bringup.nodes if n.name == "computed_torque_controller")
    log = open(stack.log_dir / "computed_torque_controller.restart.log", "w")  # noqa: SIM115
    # A reader killed by SIGKILL can leave Fast DDS's shared-memory transport unable to deliver to the same
    # topic's next reader (eProsima/Fast-DDS#5053, #5469, open): once in a CI run the restarted controller saw
    # no joint state for 60 s.  That is the middleware's defect, not the controller's: the restarted process
    # talks over UDP on localhost (FASTDDS_BUILTIN_TRANSPORTS; docs/safety.md says so for users).
    env = dict(os.environ, FASTDDS_BUILTIN_TRANSPORTS="UDPv4")
    stack.bringup.procs["computed_torque_controller"] = subprocess.Popen(
        spec.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    n0, k0 = len(stack.monitor.ctl), len(stack.monitor.states)
    try:
        spin_until(stack.node, lambda: any(s.mode == "holding" for s in stack.monitor.ctl[n0:]), 60, "no recovery")
    except TimeoutError:
        last = stack.monitor.ctl[-1] if len(stack.monitor.ctl) > n0 else None
        said = f"{last.mode}: {last.mode_reason}" if last else "none"
        tail = (stack.log_dir / "computed_torque_controller.restart.log").read_text()[-3000:]
        raise TimeoutError(f"no recovery in 60 s: {len(stack.monitor.states) - k0} sim states seen by the test "
                           f"meanwhile; last controller status {said}; "
                           f"restart log:\n{tail}") from None
    # what the arm gets, counted by the drive: commands applied again, running, the arm held (not falling)
    sim_stats = stack.node.create_client(Trigger, "/mujoco_sim/statistics")
    wait_for_service(sim_stats)
    a0 = json.loads(call_service(stack.node, sim_stats, Trigger.Request()).message)["commands"]["applied"]
    spin(stack.node, 1.0)
    s1 = json.loads(call_service(stack.node, sim_stats, Trigger.Request()).message)
    assert s1["commands"]["applied"] > a0 + 50 and s1["drive_state"] == "running", (a0, s1)
    assert max(np.abs(qd).max() for _, _, _, qd in stack.monitor.states[-20:]) < 0.05
    q = stack.q()
    g = MODEL.gravity_torques(q)
    recent = [tau for t, tau, _ in stack.monitor.commands if t > time.monotonic() - 0.5]
    if recent:  # this process's own reader of the commands may be the one Fast DDS left stuck (see above)
        assert max(np.abs(tau - g).max() for tau in recent) < 0.2 * EFFORT.max()
    else:
        print("the test's reader of the commands got none after the restart (the drive did: asserted above)")
    stack.assert_healthy()
