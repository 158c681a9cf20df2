"""Output modes through the node processes (issue 33): the controller's ``command_interfaces`` (JTC's names:
effort, position, velocity, position + velocity, position + velocity + effort) and the simulated RX-90's drives
taking the same (``mujoco_sim``: position / velocity set points held by a servo at every simulation step).  Each mode
drives the arm through the same 3-waypoint FollowJointTrajectory goal within its tolerances; what is judged is the
goal's result, the arm's own states (the last waypoint reached) and the commands on the wire (each interface of the
mode, none other).  Real time on the simulator's /clock, watchdogs that ride out a stalled process."""

from __future__ import annotations

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.msg import JointTolerance
from ros_stack_harness import spin_until
from std_msgs.msg import Float64MultiArray
from test_follow_joint_trajectory import NAMES, _running, _unless_starved
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.ros.command_interfaces import INTERFACE_SETS
from robot_dynamics.ros.node_set import node_set

pytestmark = pytest.mark.ros
Q0 = np.array([0.2, -0.3, 0.5, 0.1, 0.4, -0.2])
WAYPOINTS = [(1.5, [0.6, -0.1, 0.3, 0.5, 0.2, 0.3]), (3.0, [0.1, -0.5, 0.8, -0.3, 0.6, -0.4]),
             (4.5, [0.4, -0.2, 0.4, 0.2, 0.3, 0.1])]
TOPICS = {"position": "position_controller/commands", "velocity": "velocity_controller/commands",
          "effort": "effort_controller/commands"}


def three_waypoints() -> JointTrajectory:
    """Three points, at rest at each (JTC's quintic between them), the first 1.5 s after the start."""
    msg = JointTrajectory(joint_names=list(NAMES))
    zero = [0.0] * len(NAMES)
    for t, q in WAYPOINTS:
        msg.points.append(JointTrajectoryPoint(positions=q, velocities=zero, accelerations=zero,
                                               time_from_start=Duration(sec=int(t), nanosec=round((t % 1) * 1e9))))
    return msg


@pytest.mark.parametrize("interfaces", INTERFACE_SETS, ids=["+".join(s) for s in INTERFACE_SETS])
def test_each_output_mode_drives_the_arm_through_the_same_goal(tmp_path, interfaces):
    ns = "/mode_" + "_".join(interfaces)
    nodes = [n for n in node_set("rx90", "mujoco", namespace=ns) if n.name in ("mujoco_sim", "computed_torque_controller")]
    for n in nodes:
        n.parameters["command_interfaces"] = list(interfaces)
        if n.name == "mujoco_sim":
            n.parameters.update(command_timeout=1.0, initial_positions=Q0.tolist())
        else:
            n.parameters.update(state_timeout=1.0)
    rclpy.init()
    node = rclpy.create_node("test_output_modes")
    seen = {k: [] for k in TOPICS}
    for kind, topic in TOPICS.items():
        node.create_subscription(Float64MultiArray, f"{ns}/{topic}", lambda m, k=kind: seen[k].append(np.array(m.data)),
                                 100)
    try:
        with _running(node, nodes, ns, tmp_path, system_stamps=False) as (arm, bringup):
            # a path tolerance loose enough for a shared 2-core host (a stalled cycle costs a few centiradians); a
            # goal the drive ran without commands for 50 ms or more during (the sim's own statistics) is a starved
            # host's, tried again
            tol = [JointTolerance(name=j, position=0.2) for j in NAMES]
            goal_tol = [JointTolerance(name=j, position=0.01) for j in NAMES]

            def attempt():
                counts = {k: len(v) for k, v in seen.items()}
                handle = arm.send(three_waypoints(), path_tolerance=tol, goal_tolerance=goal_tol,
                                  goal_time_tolerance=Duration(sec=1))
                status, result = arm.result(handle, timeout=120)
                return status == GoalStatus.STATUS_SUCCEEDED, (status, result, counts), result.error_string[:160]

            status, result, counts = _unless_starved(arm, attempt, "goal", ns=ns)
            assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
            last = np.array(WAYPOINTS[-1][1])
            # the arm settles on the last waypoint (its own states; a servo's static error is friction / stiffness)
            spin_until(node, lambda: np.abs(arm.q - last).max() < 5e-3, 60, "the arm settled at the last waypoint")
            sent = {k: len(v) - counts[k] for k, v in seen.items()}
            print(f"\n{' + '.join(interfaces)}: succeeded, settled within {np.abs(arm.q - last).max():.2e} rad; "
                  f"commands during the goal {sent}")
            for kind in TOPICS:
                assert (sent[kind] > 100) == (kind in interfaces), sent  # each interface of the mode, none other
            assert not bringup.dead(), bringup.dead()
    finally:
        node.destroy_node()
        rclpy.shutdown()
