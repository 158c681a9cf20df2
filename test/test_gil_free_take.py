"""Service requests taken and answered with the GIL released (robot_dynamics/ros/gil_free_take.py), in one process:
the answers are rclpy's (field for field), an oversize request reaches the callback as the gate's marker, the other
threads run during the take of a large request (with rclpy's own take they cannot: the GIL is held), and a service
without a GIL-free take is taken by rclpy."""

from __future__ import annotations

import threading

import pytest
import rclpy
from builtin_interfaces.msg import Duration
from ros_harness import call_service, stamps_in_middle_of_takes, wait_for_service
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.ros import gil_free_take as gft
from robot_dynamics.ros.request_gate import Oversize, RequestGate, TrajectoryFirst
from robot_dynamics_interfaces.srv import TimeScale

pytestmark = pytest.mark.ros
LIMIT = 50_000


def _request(points: int) -> TimeScale.Request:
    p = JointTrajectoryPoint(positions=[0.1] * 6, velocities=[0.0] * 6, time_from_start=Duration(sec=1))
    return TimeScale.Request(trajectory=JointTrajectory(joint_names=[f"j{i}" for i in range(6)], points=[p] * points),
                             max_velocity=[1.0, 2.0], only_stretch=True)


@pytest.fixture
def server():
    """A node serving a gated TimeScale under GilFreeExecutor (a thread), a client node; the callback's view."""
    rclpy.init()
    seen: list[object] = []

    def callback(request, response):
        seen.append(request)
        if isinstance(request, Oversize):
            response.message = f"too_large: {request.points}"
            return response
        response.success = True
        response.message = f"{len(request.trajectory.points)} points, only_stretch {request.only_stretch}"
        response.scale = 1.5
        response.trajectory = request.trajectory
        return response

    node = rclpy.create_node("gil_free_server")
    srv = node.create_service(TimeScale, "/gil_free_test/time_scale", callback)
    probe = _request(2)
    gate = RequestGate.install(srv, TrajectoryFirst, ("trajectory", "points"), lambda: LIMIT, probe, 2)
    executor = gft.GilFreeExecutor(num_threads=2)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    client_node = rclpy.create_node("gil_free_client")
    client = client_node.create_client(TimeScale, "/gil_free_test/time_scale")
    wait_for_service(client)
    try:
        yield srv, gate, client_node, client, seen
    finally:
        executor.shutdown()
        client_node.destroy_node()
        node.destroy_node()
        rclpy.shutdown()


def test_requests_are_taken_without_the_gil_and_answered_as_rclpy_would(server):
    srv, gate, client_node, client, seen = server
    take = getattr(srv, gft.ATTRIBUTE)
    assert gate is not None and isinstance(take, gft.GilFreeTake)
    r = call_service(client_node, client, _request(3))
    assert take.taken == 1
    assert r.success and r.message == "3 points, only_stretch True" and r.scale == 1.5
    assert r.trajectory == _request(3).trajectory  # the response's nested fields made it back, converted from Python
    assert type(seen[-1]) is TimeScale.Request and list(seen[-1].max_velocity) == [1.0, 2.0]


def test_an_oversize_request_reaches_the_callback_as_the_gates_marker(server):
    srv, _, client_node, client, seen = server
    r = call_service(client_node, client, _request(LIMIT + 1), timeout=60)
    assert r.message == f"too_large: {LIMIT + 1}" and not r.success
    assert isinstance(seen[-1], Oversize) and seen[-1].points == LIMIT + 1
    r = call_service(client_node, client, _request(LIMIT), timeout=60)  # at the limit: converted
    assert r.success and r.message.startswith(f"{LIMIT} points")


def test_other_threads_run_while_a_large_request_is_taken(server):
    """A thread that stamps the time as fast as it can runs in the middle of the C take (deserializing 2·10^5
    points) only when the GIL is released; with the GIL held (rclpy's take, or ctypes.PyDLL) its stamps stop for the
    whole call, every time.  A busy host may leave the stamping thread unscheduled during one take (seen under a
    CPU quota: none in the middle 105 ms of a 210 ms take): one of up to five takes with stamps in its middle half
    is the evidence."""
    srv, _, client_node, client, _ = server

    def one() -> None:
        r = call_service(client_node, client, _request(LIMIT * 4), timeout=120)
        assert r.message == f"too_large: {LIMIT * 4}"

    seen = stamps_in_middle_of_takes(getattr(srv, gft.ATTRIBUTE), one)
    print(f"\ntakes of {LIMIT * 4} points (ms, the other thread's stamps in the middle half, in all): {seen}")
    assert seen[-1][1] > 0, seen


def test_a_failed_take_raises_and_the_next_one_works(server):
    srv, _, client_node, client, _ = server
    take = getattr(srv, gft.ATTRIBUTE)
    assert take.take() == (None, None)  # nothing pending: rcl's "take failed" is no request, not an error
    c_take = take._take
    take._take = lambda *args: 1  # RCL_RET_ERROR
    with pytest.raises(RuntimeError, match="rcl_take_request_with_info failed"):
        take.take()
    take._take = c_take
    r = call_service(client_node, client, _request(2))
    assert r.success


def test_an_answer_the_client_cannot_receive_yet_is_sent_late(server):
    """rcl_send_response failing with RCL_RET_ERROR (rmw_fastrtps: the client's response reader not matched within
    100 ms, e.g. a service on a participant of its own) is tried again until it goes: the client gets its answer.
    A code that is not retried raises at once."""
    srv, _, client_node, client, _ = server
    take = getattr(srv, gft.ATTRIBUTE)
    c_send = take._send
    refused = [1, 1]

    def send(*args) -> int:
        return refused.pop(0) if refused else c_send(*args)
    take._send = send
    try:
        r = call_service(client_node, client, _request(2))
        assert r.success and r.scale == 1.5 and refused == []
        take._send = lambda *args: 400
        response = TimeScale.Response()
        with pytest.raises(RuntimeError, match=r"rcl_send_response failed \(400\)"):
            take.send(response, gft.ServiceInfo())
    finally:
        take._send = c_send


def test_without_a_gil_free_take_the_service_is_rclpys():
    rclpy.init()
    try:
        node = rclpy.create_node("gil_free_plain")
        srv = node.create_service(TimeScale, "/gil_free_test/plain", lambda req, resp: resp)
        assert not hasattr(srv, gft.ATTRIBUTE)
        calls: list[object] = []

        class Fake:  # not rclpy's pybind service: no GIL-free take can be attached
            handle = object()

        assert gft.GilFreeTake.attach(Fake(), TimeScale.Request) is None
        assert gft._take_service(srv, lambda s: calls.append(s) or "rclpy") == "rclpy"
        assert calls == [srv]
        node.destroy_node()
    finally:
        rclpy.shutdown()
