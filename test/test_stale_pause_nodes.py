"""States withheld mid-goal through the node processes, default parameters (the controller on the simulator's
/clock, ``state_timeout`` 0.1 s, ``stale_goal_timeout`` 5 s): the simulated RX-90's drive stops publishing for 0.5 s
(``mujoco_sim ~/pause``: no stepping, no states); the controller goes stale, pauses the trajectory (its goal kept),
and resumes it where the arm is when the states are back: the goal succeeds.  The arm's own states and the
controller's ``~/status`` say what happened."""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from ros_harness import call_service, wait_for_service
from ros_stack_harness import spin_until
from std_srvs.srv import SetBool
from test_follow_joint_trajectory import A, _running, quintic

from robot_dynamics.ros.node_set import node_set
from robot_dynamics_interfaces.msg import ControllerState

pytestmark = pytest.mark.ros
NS = "/withheld"
OUTAGE = 0.5  # s


def test_states_withheld_half_a_second_mid_goal_the_arm_holds_and_the_goal_succeeds(tmp_path):
    nodes = [n for n in node_set("rx90", "mujoco", namespace=NS) if n.name in ("mujoco_sim", "computed_torque_controller")]
    rclpy.init()
    node = rclpy.create_node("test_stale_pause")
    status: list[ControllerState] = []
    node.create_subscription(ControllerState, f"{NS}/computed_torque_controller/status", status.append, 1000)
    pause = node.create_client(SetBool, f"{NS}/mujoco_sim/pause")
    try:
        with _running(node, nodes, NS, tmp_path, system_stamps=False) as (arm, bringup):
            wait_for_service(pause, 60)
            arm.settle()
            q0 = arm.q.copy()
            d = A - q0
            j = int(np.argmax(np.abs(d)))
            k = len(arm.jtc)
            handle = arm.send(quintic(q0, A, 3.0))

            def progress() -> float:
                return (arm.jtc[-1].reference.positions[j] - q0[j]) / d[j] if len(arm.jtc) > k else 0.0

            spin_until(node, lambda: progress() > 0.4, 60, "the goal under way")
            n_status, n_states = len(status), len(arm.states)
            assert call_service(node, pause, SetBool.Request(data=True)).success
            spin_until(node, lambda: any(s.mode == "stale" for s in status[n_status:]), 60,
                       "the controller saying stale")
            time.sleep(OUTAGE)  # the outage itself (the states withheld meanwhile)
            held = [s for s in status[n_status:] if s.mode == "stale"]
            assert any("trajectory paused at t = " in s.mode_reason for s in held), [s.mode_reason for s in held]
            assert call_service(node, pause, SetBool.Request(data=False)).success
            result_status, result = arm.result(handle, timeout=120)
            assert result_status == GoalStatus.STATUS_SUCCEEDED, result.error_string
            reasons = [s.mode_reason for s in status[n_status:]]
            resumed = [r for r in reasons if "the trajectory resumed at t = " in r]
            assert resumed, reasons
            # the arm reaches the goal (its own states; this process may read them behind the result on a busy host)
            spin_until(node, lambda: np.abs(arm.q - A).max() < 1e-2, 60, "the arm at the goal")
            print(f"\n{resumed[0]}; {len(arm.states) - n_states} states since the outage began; final error "
                  f"{np.abs(arm.q - A).max():.2e} rad")
            assert not bringup.dead()
    finally:
        node.destroy_node()
        rclpy.shutdown()
