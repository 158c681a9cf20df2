"""Dynamics-aware speed scaling through the node processes (issue 33): the controller's model carries a 4 kg payload
(a link of its robot description), the simulated RX-90 carries 6 kg there (``mujoco_sim`` ``payload`` 2 kg more: 50 %
heavier than the model), in lockstep (the arm advances one control period per command: what the controller
commands is what the arm gets, whatever the host's load).  The goal: a 3-waypoint spline retimed time-optimally for
the model at the controller's effort limits (``effort_limits``, lowered).  Dynamics-aware scaling off, the heavier
arm needs more than the limits: commands sit at them for runs of many cycles; on, no command stays at a limit for
more than 2 cycles in a row and the goal succeeds.  What is judged: the efforts the arm applied (the simulator's own
``joint_states``, one per period in lockstep: the controller's commands as the drive took them; its deep history loses
none to a slow reader, where the command topic's depth of 10 does), the goal's result, the arm's positions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionClient
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import call_service, quintic_trajectory, wait_for_service
from ros_stack_harness import spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics import load_model
from robot_dynamics.model.inertia import with_payload
from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import node_set
from robot_dynamics.safety import limit_guard as lg
from robot_dynamics.trajectory import spline_path, time_optimal
from robot_dynamics.trajectory.planning import sample_for_controller

pytestmark = pytest.mark.ros
NS = "/heavier"
DEEP = QoSProfile(depth=20000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
MODEL_PAYLOAD, EXTRA = 4.0, 2.0  # kg: the model's, and what the simulated arm carries beyond it (50 %)
WAYPOINTS = [[0.3, -0.4, 0.6, 1.0, -0.5, 0.2], [1.0, 0.1, 0.2, -0.5, 0.6, -1.0], [-0.2, -0.3, 0.8, 1.2, -0.2, 0.6]]
PAYLOAD_LINK = """  <joint name="payload_fixed_joint" type="fixed">
    <parent link="tool"/>
    <child link="payload_mass"/>
    <origin xyz="0 0 0.05" rpy="0 0 0"/>
  </joint>
  <link name="payload_mass">
    <inertial>
      <origin xyz="0 0 0" rpy="0 0 0"/>
      <mass value="{mass}"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>
    </inertial>
  </link>
</robot>"""


def longest_run_at_limit(commands: np.ndarray, limit: np.ndarray) -> int:
    """The longest run of consecutive commands with some joint at its limit (within 1e-9 relative)."""
    at = np.any(np.abs(commands) >= limit * (1.0 - 1e-9), axis=1)
    best = run = 0
    for x in at:
        run = run + 1 if x else 0
        best = max(best, run)
    return best


def test_longest_run_at_limit_counts_consecutive_cycles():
    lim = np.array([1.0, 2.0])
    c = np.array([[1.0, 0.0], [0.5, 0.0], [0.0, -2.0], [0.0, 2.0], [1.0, 0.0], [0.0, 1.9]])
    assert longest_run_at_limit(c, lim) == 3
    assert longest_run_at_limit(c * (1.0 - 2e-9), lim) == 0  # just inside
    assert longest_run_at_limit(np.zeros((0, 2)), lim) == 0


def _trajectory(samples, names) -> JointTrajectory:
    """The plan as the controller takes it (``sample_for_controller``: every 10 ms, checked with its own interpolation)."""
    msg = JointTrajectory(joint_names=list(names))
    for t, a, b, c in zip(samples.times, samples.q, samples.qd, samples.qdd, strict=True):
        sec = int(t)
        msg.points.append(JointTrajectoryPoint(positions=a.tolist(), velocities=b.tolist(), accelerations=c.tolist(),
                                               time_from_start=Duration(sec=sec, nanosec=round((t - sec) * 1e9))))
    return msg


def test_a_payload_heavier_than_the_model_slows_the_goal_instead_of_saturating(tmp_path: Path):
    urdf = tmp_path / "rx90_payload.urdf"
    base = Path(node_set("rx90", "mujoco")[0].parameters["urdf_path"]).read_text()
    urdf.write_text(base.replace("</robot>", PAYLOAD_LINK.format(mass=MODEL_PAYLOAD)))
    model = load_model(str(urdf))
    plant = with_payload(model, EXTRA, (0.0, 0.0, 0.05), "tool")
    robot = np.asarray(model.limits["effort"], float)
    limits = np.maximum(0.2 * robot, 1.25 * lg.sampled_extremes(plant).gravity_max)  # room to hold 6 kg up
    lim = model.limits
    res = time_optimal(spline_path(WAYPOINTS), model, limits, lim["velocity"])
    plan = sample_for_controller(res.trajectory, model, 0.01, np.asarray(lim["velocity"]), lim["lower"], lim["upper"],
                                 effort_limits=limits, names=list(model.joint_names))
    q_start, q_end = plan.q[0], plan.q[-1]
    names = list(model.joint_names)
    nodes = [n for n in node_set("rx90", "mujoco", namespace=NS) if n.name in ("mujoco_sim", "computed_torque_controller")]
    for n in nodes:
        n.parameters["urdf_path"] = str(urdf)
        if n.name == "mujoco_sim":
            n.parameters.update(lockstep=True, lockstep_timeout=0.5, payload=EXTRA, payload_link="tool",
                                payload_com=[0.0, 0.0, 0.05], initial_positions=q_start.tolist())
        else:
            n.parameters.update({"trigger": "state", "state_timeout": 60.0, "effort_limits": limits.tolist()})
    rclpy.init()
    node = rclpy.create_node("test_dynamics_aware")
    states: list[tuple[float, np.ndarray]] = []
    applied: list[np.ndarray] = []

    def on_state(m: JointState) -> None:
        if list(m.name) == names:
            states.append((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, np.array(m.position)))
            applied.append(np.array(m.effort))

    node.create_subscription(JointState, f"{NS}/joint_states", on_state, DEEP)
    action = ActionClient(node, FollowJointTrajectory, f"{NS}/computed_torque_controller/follow_joint_trajectory")
    params = node.create_client(SetParameters, f"{NS}/computed_torque_controller/set_parameters")
    stats = node.create_client(Trigger, f"{NS}/computed_torque_controller/statistics")
    sim_stats = node.create_client(Trigger, f"{NS}/mujoco_sim/statistics")

    def settled() -> np.ndarray:
        """The arm's position once it moved less than 1e-4 rad over 0.2 s of its own time (a late arm after a
        saturated goal is still arriving when the goal ends)."""
        def still() -> bool:
            t_end = states[-1][0]
            recent = np.array([q for t, q in states[-200:] if t >= t_end - 0.2])
            return states[-1][0] - states[0][0] > 0.2 and np.abs(recent - recent[-1]).max() < 1e-4
        arm_now()
        spin_until(node, still, 120, "the arm at rest")
        return arm_now()

    def arm_now() -> np.ndarray:
        """The arm's position now: the states read up to the simulator's present time."""
        t = json.loads(call_service(node, sim_stats, Trigger.Request()).message)["sim_time"]
        spin_until(node, lambda: states[-1][0] >= t - 1e-9, 120, "the states up to now")
        return states[-1][1]

    def goal(msg: JointTrajectory) -> tuple[int, str, np.ndarray]:
        k = len(applied)
        fut = action.send_goal_async(FollowJointTrajectory.Goal(trajectory=msg))
        spin_until(node, fut.done, 60, "goal response")
        assert fut.result().accepted
        result = fut.result().get_result_async()
        spin_until(node, result.done, 300, "goal result")
        arm_now()  # every state up to the simulator's present read (the goal's whole run)
        r = result.result()
        return r.status, r.result.error_string, np.array(applied[k:])

    def dynamics_aware(on: bool) -> None:
        value = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=on)
        resp = call_service(node, params, SetParameters.Request(
            parameters=[ParameterMsg(name="speed_scaling.dynamics_aware", value=value)]))
        assert resp.results[0].successful, resp.results[0].reason

    try:
        with Bringup(nodes, log_dir=tmp_path / "logs") as bringup:
            assert action.wait_for_server(timeout_sec=60)
            wait_for_service(params, 60)
            wait_for_service(stats, 60)
            wait_for_service(sim_stats, 60)
            spin_until(node, lambda: len(states) > 200, 120, "the arm held a while")
            runs = {}
            for on in (False, True):
                dynamics_aware(on)
                q = settled()
                if np.abs(q - q_start).max() > 1e-3:  # back to the start, slowly (from where the arm is: JTC's
                    back = quintic_trajectory(names, q, q_start, 4.0)  # start segment to a first point after t = 0)
                    back.points = back.points[1:]
                    status, text, _ = goal(back)
                    assert status == GoalStatus.STATUS_SUCCEEDED, text
                t_held = arm_now() is not None and states[-1][0]
                spin_until(node, lambda t=t_held: states[-1][0] > t + 0.5, 60, "0.5 s held (the offset measured)")
                status, text, cmds = goal(_trajectory(plan, names))
                runs[on] = (status, text, cmds, longest_run_at_limit(cmds, limits))
                st = json.loads(call_service(node, stats, Trigger.Request()).message)
                print(f"\ndynamics-aware {on}: {runs[on][0]} ({text or 'ok'}); {len(cmds)} periods, longest run at "
                      f"an effort limit {runs[on][3]} cycles, {np.any(np.abs(cmds) >= limits * (1 - 1e-9), axis=1).sum()} "
                      f"cycles in all; statistics speed_scaling {st['speed_scaling']}")
            off, on = runs[False], runs[True]
            assert off[3] > 2  # the scenario needs more than the limits
            assert on[0] == GoalStatus.STATUS_SUCCEEDED, on[1]
            assert on[3] <= 2
            assert np.abs(arm_now() - q_end).max() < 5e-2  # the arm got there
            assert not bringup.dead(), bringup.dead()
    finally:
        node.destroy_node()
        rclpy.shutdown()
