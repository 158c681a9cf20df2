"""Speed scaling and preemption through the node processes (JTC's ``~/speed_scaling_input``, ``control_msgs/SpeedScalingFactor``,
transient local) on the simulated RX-90 in lockstep (the arm advances one control period per command: every time
below is the simulation's, whatever the host's load).

* 0.5 published during a FollowJointTrajectory goal: the rest of the motion takes twice as long (+-5 %), on the same
  path (every reference on the planned quintic), the arm following it; ``~/controller_state`` reports the factor;
* 0 stops the reference and the arm holds (the simulator's own states) for a second; 1 resumes; the goal succeeds;
* a goal preempting a moving goal: the reference continuous to the acceleration at the switch;
* ``~/plan`` with ``start_from_reference`` and ``execute`` while a goal moves: the same, the plan's first point
  after the start segment it computed (the controller's own).
Oracle: the quintic's closed form (the reference's progress u is read back from its positions).  The lockstep arm runs
as fast as the loop answers, faster than a busy test process reads: the goal is sent with the arm paused, the
simulator stops itself at an exact simulated time into the goal (``pause_at_time``), and stays paused while a factor
is published, until the controller says it has it (its log on /rosout).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus, GoalStatusArray
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState, SpeedScalingFactor
from rcl_interfaces.msg import Log, ParameterType, ParameterValue
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import call_service, quintic_trajectory, wait_for_service
from ros_stack_harness import spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import node_set

pytestmark = pytest.mark.ros
NAMES = load_model("rx90").joint_names
DEEP = QoSProfile(depth=10000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
Q1 = np.array([0.6, -0.5, 0.7, 0.8, 0.5, -0.7])
T = 3.0  # s: the goal's duration as planned
U = np.linspace(0.0, 1.0, 200_001)
S = 10 * U**3 - 15 * U**4 + 6 * U**5  # the quintic's progress (monotone)


def stamp(m) -> float:
    return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec


def progress(ref: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> tuple[float, float]:
    """(tau, distance off the path) of a reference on the quintic q0 -> q1 of duration T."""
    d = q1 - q0
    j = int(np.argmax(np.abs(d)))
    s = (ref[j] - q0[j]) / d[j]
    off = float(np.max(np.abs(q0 + s * d - ref)))
    return float(np.interp(s, S, U)) * T, off


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    nodes = [n for n in node_set("rx90", "mujoco") if n.name in ("mujoco_sim", "computed_torque_controller",
                                                                  "trajectory_generator")]
    for n in nodes:
        if n.name == "mujoco_sim":
            n.parameters.update(lockstep=True, lockstep_timeout=0.5)
        else:  # one cycle per state; never stale here (the states come as fast as the loop answers)
            n.parameters.update(trigger="state", state_timeout=60.0)
    rclpy.init()
    node = rclpy.create_node("test_speed_scaling")
    logs: list[str] = []
    node.create_subscription(Log, "/rosout", lambda m: logs.append(m.msg) if "computed_torque_controller" in m.name
                             else None, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    jtc: list[JointTrajectoryControllerState] = []
    states: list[tuple[float, np.ndarray, np.ndarray]] = []

    def on_state(m: JointState) -> None:
        if list(m.name) == NAMES:
            states.append((stamp(m), np.array(m.position), np.array(m.velocity)))

    node.create_subscription(JointTrajectoryControllerState, "/computed_torque_controller/controller_state",
                             jtc.append, DEEP)
    node.create_subscription(JointState, "/joint_states", on_state, DEEP)
    scaling = node.create_publisher(SpeedScalingFactor, "/computed_torque_controller/speed_scaling_input", LATCHED)
    action = ActionClient(node, FollowJointTrajectory, "/computed_torque_controller/follow_joint_trajectory")
    pause = node.create_client(SetBool, "/mujoco_sim/pause")
    stats = node.create_client(Trigger, "/mujoco_sim/statistics")
    sim_params = node.create_client(SetParameters, "/mujoco_sim/set_parameters")

    def sim_stats() -> dict:
        return json.loads(call_service(node, stats, Trigger.Request()).message)

    def publish_paused(factor: float | None) -> int:
        """Pause the arm (every report published until then read), publish ``factor``, resume once the controller
        logged it (None: resume only); the number of reports read before the arm resumed."""
        assert call_service(node, pause, SetBool.Request(data=True)).success
        t = sim_stats()["sim_time"]
        spin_until(node, lambda: stamp(jtc[-1]) >= t - 0.0021, 120, "the reports published before the pause")
        if factor is not None:
            k = len(logs)
            scaling.publish(SpeedScalingFactor(factor=factor))
            spin_until(node, lambda: any(m.startswith(f"speed scaling factor {factor:g}") for m in logs[k:]), 60,
                       f"the controller taking the factor {factor:g}")
        k = len(jtc)
        assert call_service(node, pause, SetBool.Request(data=False)).success
        return k

    def goal_until(q0: np.ndarray, q1: np.ndarray, after: float):
        """The quintic q0 -> q1 sent with the arm paused (the goal starts at that sim time t), the arm run until it
        stops itself at t + ``after`` (``pause_at_time``); the result's future."""
        assert call_service(node, pause, SetBool.Request(data=True)).success
        t = sim_stats()["sim_time"]
        value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=t + after)
        res = call_service(node, sim_params, SetParameters.Request(parameters=[ParameterMsg(name="pause_at_time",
                                                                                            value=value)]))
        assert res.results[0].successful, res.results[0].reason
        result = _goal(node, action, q0, q1)
        assert call_service(node, pause, SetBool.Request(data=False)).success
        spin_until(node, lambda: sim_stats()["paused"], 120,
                   f"the arm at {after} s into the goal (pause_at_time)")
        assert sim_stats()["sim_time"] == pytest.approx(t + after, abs=1e-9)  # paused exactly there
        spin_until(node, lambda: stamp(jtc[-1]) >= t + after - 0.0021, 120, "the reports published before the pause")
        return result

    with Bringup(nodes, log_dir=tmp_path_factory.mktemp("speed_scaling")) as bringup:
        assert action.wait_for_server(timeout_sec=60)
        wait_for_service(pause, 60)
        wait_for_service(stats, 60)
        wait_for_service(sim_params, 60)
        spin_until(node, lambda: len(jtc) > 10 and len(states) > 10, 120, "controller running")
        yield node, goal_until, lambda msg: _send(node, action, msg), jtc, states, publish_paused
        assert not bringup.dead(), f"a node died: {bringup.dead()}"
    node.destroy_node()
    rclpy.shutdown()


def _goal(node, action, q0, q1):
    return _send(node, action, quintic_trajectory(NAMES, q0, q1, T))


def _send(node, action, trajectory: JointTrajectory):
    """The goal sent and accepted: its result's future."""
    fut = action.send_goal_async(FollowJointTrajectory.Goal(trajectory=trajectory))
    spin_until(node, fut.done, 60, "goal response")
    assert fut.result().accepted
    return fut.result().get_result_async()


def test_half_speed_doubles_the_rest_of_the_motion_on_the_same_path(arm):
    node, goal_until, _, jtc, states, publish_paused = arm
    q0 = states[-1][1].copy()
    k = len(jtc)
    res = goal_until(q0, Q1, 1.0)
    k_half = publish_paused(0.5)
    spin_until(node, res.done, 120, "goal result")
    assert res.result().status == GoalStatus.STATUS_SUCCEEDED, res.result().result.error_string
    spin_until(node, lambda: np.allclose(jtc[-1].reference.positions, Q1, rtol=0.0, atol=1e-9), 60, "the end reported")
    run = jtc[k:]
    first = next(i for i, m in enumerate(run) if m.speed_scaling_factor < 1.0)  # the ramp begins
    assert first >= k_half - k
    tau_a, _ = progress(np.array(run[first].reference.positions), q0, Q1)
    end = next(i for i, m in enumerate(run) if np.allclose(m.reference.positions, Q1, rtol=0.0, atol=1e-9))
    took = stamp(run[end]) - stamp(run[first])
    print(f"\nhalf speed from tau {tau_a:.4f} s: the rest took {took:.4f} s of simulated time, "
          f"{took / (T - tau_a):.4f} x as planned")
    assert 0.95 < tau_a < 1.05  # the ramp began where the arm stopped itself, 1 s into the goal
    assert took == pytest.approx(2.0 * (T - tau_a), rel=0.05), (took, tau_a)
    assert {m.speed_scaling_factor for m in run[first:end]} >= {0.5}  # reported
    offs = [progress(np.array(m.reference.positions), q0, Q1)[1] for m in run[first:end + 1]]
    assert max(offs) < 1e-9  # the same path
    # the arm (the simulator's states) followed the slowed reference
    t_ref = np.array([stamp(m) for m in run])
    ref = np.array([m.reference.positions for m in run])
    ts = np.array([t for t, _, _ in states if t_ref[first] <= t <= t_ref[end]])
    qs = np.array([q for t, q, _ in states if t_ref[first] <= t <= t_ref[end]])
    err = np.abs(qs - np.column_stack([np.interp(ts, t_ref, ref[:, j]) for j in range(6)]))
    assert ts.size > 0.5 * took / 0.002 and err.max() < 5e-3, (ts.size, err.max())
    publish_paused(1.0)


def test_zero_stops_and_holds_the_arm_then_one_resumes_the_goal(arm):
    node, goal_until, _, jtc, states, publish_paused = arm
    q0 = states[-1][1].copy()
    q1 = q0 - 0.5 * (Q1 - q0) / np.max(np.abs(Q1 - q0))
    res = goal_until(q0, q1, 1.2)
    publish_paused(0.0)
    spin_until(node, lambda: jtc[-1].speed_scaling_factor == 0.0, 60, "the factor down to 0")
    t_stop = stamp(jtc[-1])
    spin_until(node, lambda: stamp(jtc[-1]) > t_stop + 1.5, 120, "1.5 s of the arm stopped")
    held = [m for m in jtc if stamp(m) >= t_stop]
    refs = np.array([m.reference.positions for m in held])
    assert np.all(refs == refs[0]) and all(m.speed_scaling_factor == 0.0 for m in held)  # the reference stopped
    assert all(not any(m.reference.velocities) for m in held)
    tau_stop, _ = progress(refs[0], q0, q1)
    assert 1.0 < tau_stop < T - 0.5 and not res.done()
    arm_q = np.array([q for t, q, _ in states if t >= t_stop + 0.5])
    arm_v = np.array([v for t, _, v in states if t >= t_stop + 0.5])
    assert arm_q.shape[0] > 100  # a second of the arm's own states
    assert np.ptp(arm_q, axis=0).max() < 1e-3 and np.abs(arm_v).max() < 1e-2  # it holds
    assert np.abs(arm_q[-1] - refs[0]).max() < 5e-3  # where the reference stopped
    publish_paused(1.0)
    spin_until(node, res.done, 120, "goal result")
    assert res.result().status == GoalStatus.STATUS_SUCCEEDED, res.result().result.error_string
    spin_until(node, lambda: np.allclose(jtc[-1].reference.positions, q1, rtol=0.0, atol=1e-9), 60, "the end reported")



def _jumps(run: list, k: int) -> tuple[float, float, float]:
    """The reference's jumps from report k-1 to k beyond what its derivatives predict over the time between them
    (position beyond qd dt + qdd dt^2/2, velocity beyond qdd dt, acceleration itself)."""
    (q0, v0, a0), (q1, v1, a1) = ([np.array(getattr(run[i].reference, f)) for f in ("positions", "velocities",
                                                                                      "accelerations")]
                                  for i in (k - 1, k))
    dt = stamp(run[k]) - stamp(run[k - 1])
    return (float(np.abs(q1 - q0 - v0 * dt - 0.5 * a0 * dt**2).max()), float(np.abs(v1 - v0 - a0 * dt).max()),
            float(np.abs(a1 - a0).max()))


def _switch(run: list, t_pause: float) -> tuple[int, np.ndarray, np.ndarray, float]:
    """(index of the first report after the pause, the jumps there, the largest of the 40 reports around, the
    velocity before it) of the reports ``run`` (one per time)."""
    first = next(i for i, m in enumerate(run) if stamp(m) > t_pause)
    at_switch = np.array(_jumps(run, first))
    around = np.max([_jumps(run, i) for i in (*range(first - 20, first), *range(first + 1, first + 21))], axis=0)
    return first, at_switch, around, float(np.abs(run[first - 1].reference.velocities).max())


def test_a_goal_preempting_a_moving_goal_leaves_its_reference_continuous(arm):
    """Goal A stopped by the simulator 1 s in (moving, accelerating), goal B (three position-only waypoints, the
    first 0.8 s ahead) sent meanwhile: the controller's reference (``~/controller_state``) at the switch jumps no
    more than the jerk of the reports around it makes it (position, velocity, acceleration; a start from rest
    would jump by the whole velocity); A preempted, B succeeds, the arm at its last point."""
    node, goal_until, send, jtc, states, publish_paused = arm
    q0 = states[-1][1].copy()
    res_a = goal_until(q0, Q1, 1.0)
    k = len(jtc)
    t_pause = stamp(jtc[-1])
    msg = JointTrajectory(joint_names=NAMES)
    aside = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.15])  # B leaves A's line
    ends = [(0.8, 0.55, 1.0), (1.6, 0.45, 1.0), (2.4, 0.35, 0.0)]  # (time from start, way to Q1, aside)
    for t, frac, off in ends:
        msg.points.append(JointTrajectoryPoint(positions=(q0 + frac * (Q1 - q0) + off * aside).tolist(),
                                               time_from_start=Duration(sec=int(t), nanosec=round((t % 1) * 1e9))))
    res_b = send(msg)
    publish_paused(None)  # the arm resumes (the controller adopts B at its next cycle)
    spin_until(node, res_b.done, 120, "goal B's result")
    spin_until(node, res_a.done, 60, "goal A's result")
    assert res_a.result().status == GoalStatus.STATUS_CANCELED, res_a.result().result.error_string
    assert res_b.result().status == GoalStatus.STATUS_SUCCEEDED, res_b.result().result.error_string
    last = q0 + ends[-1][1] * (Q1 - q0)  # (no aside there)
    spin_until(node, lambda: np.allclose(jtc[-1].reference.positions, last, rtol=0.0, atol=1e-9), 60, "B's end")
    run = jtc[k - 40:]
    run = [m for i, m in enumerate(run) if i == 0 or stamp(m) > stamp(run[i - 1])]  # one report per time
    # the switch: B taken at the first cycle after the pause (the state republished, the same time: the same
    # reference), the first report after it is B's
    first_b, at_switch, around, v_before = _switch(run, t_pause)
    assert progress(np.array(run[first_b + 20].reference.positions), q0, Q1)[1] > 1e-6  # B's, off A's line
    print(f"\npreempted 1 s into A (moving at {v_before:.3f} rad/s): jumps at the switch {at_switch[0]:.2e} rad, "
          f"{at_switch[1]:.2e} rad/s, {at_switch[2]:.2e} rad/s^2; largest of the 40 reports around "
          f"{around[0]:.2e}, {around[1]:.2e}, {around[2]:.2e}")
    assert v_before > 0.1 and np.all(at_switch <= 2.0 * around + 1e-12), (at_switch, around)
    assert at_switch[1] < 1e-2 * v_before
    spin_until(node, lambda: np.abs(states[-1][1] - last).max() < 5e-3, 60, "the arm at B's last point")


def test_a_plan_from_the_moving_reference_preempts_it_continuously(arm):
    """Goal A stopped 1 s in (moving); ``~/plan`` (start_from_reference, execute) through two waypoints off A's line:
    the plan's first point comes after the start segment from the controller's reference (its time > 0), the goal
    preempts A with the reference continuous to the acceleration, and the plan reports success."""
    from robot_dynamics_interfaces.srv import PlanTrajectory

    node, goal_until, send, jtc, states, publish_paused = arm
    plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
    wait_for_service(plan, 60)
    q0 = states[-1][1].copy()
    res_a = goal_until(q0, Q1, 1.0)
    k = len(jtc)
    t_pause = stamp(jtc[-1])
    w1 = q0 + 0.6 * (Q1 - q0) + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.15])
    w2 = q0 + 0.3 * (Q1 - q0)
    req = PlanTrajectory.Request(joint_names=NAMES, waypoints=[JointTrajectoryPoint(positions=w.tolist())
                                                               for w in (w1, w2)],
                                 profile="quintic", start_from_reference=True, execute=True)
    goals: list[set] = []
    node.create_subscription(GoalStatusArray, "/computed_torque_controller/follow_joint_trajectory/_action/status",
                             lambda m: goals.append({bytes(s.goal_info.goal_id.uuid) for s in m.status_list}), LATCHED)
    spin_until(node, lambda: goals, 60, "the action's status")
    before = set().union(*goals)
    fut = plan.call_async(req)
    # the plan's goal accepted with the arm still paused (its start segment computed from that state), then resumed
    spin_until(node, lambda: set().union(*goals) - before or fut.done(), 120, "the plan's goal accepted")
    assert not fut.done(), fut.result().message  # (the plan ends after its goal: an early answer is an error)
    publish_paused(None)
    spin_until(node, res_a.done, 60, "goal A preempted by the plan's goal")
    assert res_a.result().status == GoalStatus.STATUS_CANCELED, res_a.result().result.error_string
    spin_until(node, fut.done, 180, "the plan's execution")
    resp = fut.result()
    assert resp.success and resp.error_code == 0, resp.message
    first = resp.trajectory.points[0]
    t_first = first.time_from_start.sec + 1e-9 * first.time_from_start.nanosec
    assert t_first > 0.05 and "from the controller's reference" in resp.message, resp.message
    np.testing.assert_allclose(first.positions, w1, atol=1e-12)
    run = jtc[k - 40:]
    run = [m for i, m in enumerate(run) if i == 0 or stamp(m) > stamp(run[i - 1])]
    _, at_switch, around, v_before = _switch(run, t_pause)
    print(f"\nplanned from the reference 1 s into A (moving at {v_before:.3f} rad/s; start segment {t_first:.3f} s): "
          f"jumps at the switch {at_switch[0]:.2e} rad, {at_switch[1]:.2e} rad/s, {at_switch[2]:.2e} rad/s^2; "
          f"largest of the 40 reports around {around[0]:.2e}, {around[1]:.2e}, {around[2]:.2e}")
    assert v_before > 0.1 and np.all(at_switch <= 2.0 * around + 1e-12), (at_switch, around)
    assert at_switch[1] < 0.1 * v_before  # (a start from rest: the whole velocity; reports 10 ms apart)
    spin_until(node, lambda: np.allclose(jtc[-1].reference.positions, w2, rtol=0.0, atol=1e-9), 60, "the plan's end")
