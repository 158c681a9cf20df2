"""FollowJointTrajectory goals taken and answered with the GIL released (robot_dynamics/ros/gil_free_goal.py), in one
process, through the controller's own action server class: an accepted goal runs to its result as under rclpy's
take, an oversize goal is rejected before any Python goal is made, the other threads (a control loop) run during the
take of a large goal, a failed take raises, and a plain rclpy action server is answered by rclpy unchanged."""

from __future__ import annotations

import threading
import time

import pytest
import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionClient, ActionServer
from rclpy.executors import MultiThreadedExecutor
from ros_harness import stamps_in_middle_of_takes
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.ros import gil_free_goal as gfg
from robot_dynamics.ros.trajectory_action import _ActionServer

pytestmark = pytest.mark.ros
LIMIT = 50_000
CAP = 120.0  # generous: a starved host is slow, never wrong


def _goal(points: int) -> FollowJointTrajectory.Goal:
    p = JointTrajectoryPoint(positions=[0.1] * 6)
    return FollowJointTrajectory.Goal(trajectory=JointTrajectory(joint_names=[f"j{i}" for i in range(6)],
                                                                 points=[p] * points))


def _wait(node, future, what: str):
    end = time.monotonic() + CAP
    while not future.done():
        if time.monotonic() > end:
            raise TimeoutError(f"starved precondition: no {what} within {CAP:.0f} s")
        rclpy.spin_once(node, timeout_sec=0.1)
    return future.result()


@pytest.fixture
def action():
    """The controller's action server class (gated at LIMIT points) on a multithreaded executor, a client node."""
    rclpy.init()
    executed: list[int] = []
    refused: list[str] = []

    def execute(handle):
        executed.append(len(handle.request.trajectory.points))
        handle.succeed()
        return FollowJointTrajectory.Result(error_code=0, error_string=f"{executed[-1]} points")

    node = rclpy.create_node("gil_free_goal_server")
    server = _ActionServer(node, FollowJointTrajectory, "/gil_free_goal/follow_joint_trajectory",
                           execute_callback=execute, max_points=lambda: LIMIT, on_oversize=refused.append)
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    client_node = rclpy.create_node("gil_free_goal_client")
    client = ActionClient(client_node, FollowJointTrajectory, "/gil_free_goal/follow_joint_trajectory")
    if not client.wait_for_server(timeout_sec=CAP):
        raise TimeoutError("starved precondition: the action server was not discovered")
    try:
        yield server, client_node, client, executed, refused
    finally:
        executor.shutdown()
        client.destroy()
        client_node.destroy_node()
        server.destroy()
        node.destroy_node()
        rclpy.shutdown()


def test_an_accepted_goal_runs_to_its_result_through_the_gil_free_take(action):
    server, client_node, client, executed, refused = action
    assert isinstance(server.gil_free, gfg.GilFreeGoalTake)
    handle = _wait(client_node, client.send_goal_async(_goal(LIMIT)), "goal response")  # at the limit: converted
    assert handle.accepted
    result = _wait(client_node, handle.get_result_async(), "result")
    assert result.status == 4 and result.result.error_string == f"{LIMIT} points"  # STATUS_SUCCEEDED
    assert executed == [LIMIT] and refused == [] and server.gil_free.taken == 1


def test_an_oversize_goal_is_rejected_before_conversion(action):
    server, client_node, client, executed, refused = action
    handle = _wait(client_node, client.send_goal_async(_goal(LIMIT + 1)), "goal response")
    assert not handle.accepted
    assert executed == [] and len(refused) == 1 and f"{LIMIT + 1} trajectory points" in refused[0]
    assert server.gate.refused == 1 and server.gil_free.taken == 1


def test_the_control_loop_runs_while_a_large_goal_is_taken(action):
    """A thread stamping the time as fast as it can (a control loop) runs in the middle of the C take of 2·10^5
    points only when the GIL is released (rclpy's take holds it for the whole call, every time; a busy host may
    leave the thread unscheduled during one take: one of up to five with stamps in its middle half)."""
    server, client_node, client, _, refused = action

    def one() -> None:
        handle = _wait(client_node, client.send_goal_async(_goal(LIMIT * 4)), "goal response")
        assert not handle.accepted and f"{LIMIT * 4} trajectory points" in refused[-1]

    seen = stamps_in_middle_of_takes(server.gil_free, one)
    print(f"\ngoal takes of {LIMIT * 4} points (ms, the other thread's stamps in the middle half, in all): {seen}")
    assert seen[-1][1] > 0, seen


def test_a_failed_take_raises_and_the_next_goal_is_answered(action):
    server, client_node, client, executed, _ = action
    assert server.gil_free.take() == (None, None)  # nothing pending: rcl_action's "take failed" is no goal
    c_take = server.gil_free._take
    server.gil_free._take = lambda *args: 1  # RCL_RET_ERROR
    with pytest.raises(RuntimeError, match="rcl_action_take_goal_request failed"):
        server.gil_free.take()
    server.gil_free._take = c_take
    handle = _wait(client_node, client.send_goal_async(_goal(2)), "goal response")
    assert handle.accepted
    assert _wait(client_node, handle.get_result_async(), "result").result.error_string == "2 points"


def test_a_failed_answer_is_rclpys_error_and_an_unmatched_client_is_answered_late():
    """rclpy's goal handling catches its RCLError when an answer cannot be sent (a code that is not retried); an
    answer the client cannot receive yet (RCL_RET_ERROR: rmw_fastrtps had not matched its response reader within
    100 ms) goes again from a thread until it is sent."""
    rclpy.init()
    try:
        node = rclpy.create_node("gil_free_goal_answer")
        server = _ActionServer(node, FollowJointTrajectory, "/gil_free_goal/answer", execute_callback=lambda h: None,
                               max_points=lambda: LIMIT)
        header = gfg.GoalRequestId()
        header.take = server.gil_free
        response = FollowJointTrajectory.Impl.SendGoalService.Response()
        server.gil_free._send = lambda *args: 400
        with pytest.raises(gfg._rclpy.RCLError, match=r"rcl_action_send_goal_response failed \(400\)"):
            server._handle.send_goal_response(header, response)
        codes = [1, 1, 0]
        sent = threading.Event()

        def send(*args) -> int:
            code = codes.pop(0)
            if code == 0:
                sent.set()
            return code
        server.gil_free._send = send
        server._handle.send_goal_response(header, response)  # no error: the answer goes on in a thread
        assert sent.wait(30) and codes == []
        server.destroy()
        node.destroy_node()
    finally:
        rclpy.shutdown()


def test_a_plain_action_server_is_rclpys():
    """Without a gate there is no GIL-free take; the routed send_goal_response answers rclpy's headers with rclpy's
    own method (a goal accepted end to end)."""
    gfg.route_goal_responses()
    assert gfg._rclpy.ActionServer.send_goal_response.routes_gil_free_goals
    rclpy.init()
    try:
        node = rclpy.create_node("gil_free_goal_plain")
        server = _ActionServer(node, FollowJointTrajectory, "/gil_free_goal/plain",
                               execute_callback=lambda h: (h.succeed(), FollowJointTrajectory.Result())[1])
        assert server.gil_free is None
        plain = ActionServer(node, FollowJointTrajectory, "/gil_free_goal/plain2", execute_callback=lambda h: None)

        class Fake:  # not rclpy's pybind server: nothing attached
            _handle = object()

        assert gfg.GilFreeGoalTake.attach(Fake(), None, None) is None
        client = ActionClient(node, FollowJointTrajectory, "/gil_free_goal/plain")
        assert client.wait_for_server(timeout_sec=CAP), "starved precondition: server not discovered"
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        future = client.send_goal_async(_goal(3))
        end = time.monotonic() + CAP
        while not future.done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.1)
        assert future.done() and future.result().accepted
        executor.shutdown()
        client.destroy()
        plain.destroy()
        server.destroy()
        node.destroy_node()
    finally:
        rclpy.shutdown()



def test_result_and_cancel_answers_go_again_until_the_client_can_receive_them():
    """answered_late: an rclpy answer raising RCLError (client not matched yet) is tried again from a thread until it
    goes; the routed class methods carry it."""
    tries: list[tuple[object, object, object]] = []
    sent = threading.Event()

    def original(server, header, response):
        tries.append((server, header, response))
        if len(tries) < 3:
            raise gfg._rclpy.RCLError("client will not receive response")
        sent.set()
    gfg.answered_late(original, "result service")("server", "header", "response")
    assert sent.wait(30) and tries == [("server", "header", "response")] * 3
    gfg.route_goal_responses()
    assert gfg._rclpy.ActionServer.send_result_response.answered_late
    assert gfg._rclpy.ActionServer.send_cancel_response.answered_late
