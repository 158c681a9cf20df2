"""FollowJointTrajectory tolerances and goal outcomes at their boundaries (issue 29): the pure functions of
``robot_dynamics.ros.trajectory_action`` (no processes), and the result of an unknown goal over rclpy in-process."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.ros.trajectory_action import (
    ABORTED,
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    INVALID_JOINTS,
    SUCCEEDED,
    SUCCESSFUL,
    GoalError,
    GoalRun,
    Tolerances,
    tolerances,
)

NAMES = ["a", "b"]
DEFAULTS = {"trajectory": [0.2, 0.0], "goal": [0.05, 0.0], "stopped_velocity_tolerance": 0.01, "goal_time": 0.5}


def up(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def goal(path=(), goal_tol=(), goal_time: float | None = None) -> FollowJointTrajectory.Goal:
    g = FollowJointTrajectory.Goal()
    g.path_tolerance = [JointTolerance(name=n, position=p, velocity=v, acceleration=a) for n, p, v, a in path]
    g.goal_tolerance = [JointTolerance(name=n, position=p, velocity=v, acceleration=a) for n, p, v, a in goal_tol]
    if goal_time is not None:
        sec = int(np.floor(goal_time))
        g.goal_time_tolerance.sec, g.goal_time_tolerance.nanosec = sec, round((goal_time - sec) * 1e9)
    return g


def test_defaults_from_the_parameters():
    tol = tolerances(goal(), NAMES, DEFAULTS)
    np.testing.assert_array_equal(tol.path_position, [0.2, np.inf])  # 0: not checked
    np.testing.assert_array_equal(tol.goal_position, [0.05, np.inf])
    np.testing.assert_array_equal(tol.goal_velocity, [0.01, 0.01])
    np.testing.assert_array_equal(tol.path_velocity, [np.inf, np.inf])
    assert tol.goal_time == 0.5 and tol.checks_path


def test_goal_values_positive_zero_and_erase():
    tol = tolerances(goal(path=[("a", 0.3, 0.0, 0.0), ("b", 0.0, 0.7, 0.0)],
                          goal_tol=[("a", -1.0, -1.0, 0.0)]), NAMES, DEFAULTS)
    np.testing.assert_array_equal(tol.path_position, [0.3, np.inf])  # > 0: the value; 0: the default (none for b)
    np.testing.assert_array_equal(tol.path_velocity, [np.inf, 0.7])
    np.testing.assert_array_equal(tol.goal_position, [np.inf, np.inf])  # -1: erased
    np.testing.assert_array_equal(tol.goal_velocity, [np.inf, 0.01])


@pytest.mark.parametrize("value", [-5.0, -2.0, -0.5, -1.0 - 1e-6, -1e-300])
def test_illegal_negative_tolerances_are_refused(value):
    with pytest.raises(GoalError) as info:
        tolerances(goal(path=[("b", value, 0.0, 0.0)]), NAMES, DEFAULTS)
    assert info.value.code == INVALID_GOAL and "path_tolerance[0] (b) position" in str(info.value)
    with pytest.raises(GoalError):
        tolerances(goal(goal_tol=[("a", 0.0, value, 0.0)]), NAMES, DEFAULTS)
    with pytest.raises(GoalError):
        tolerances(goal(goal_tol=[("a", 0.0, 0.0, value)]), NAMES, DEFAULTS)


def test_erase_is_minus_one_to_float_epsilon():
    eps = float(np.finfo(np.float32).eps)
    tolerances(goal(path=[("a", -1.0 + 0.5 * eps, 0.0, 0.0)]), NAMES, DEFAULTS)
    with pytest.raises(GoalError):
        tolerances(goal(path=[("a", -1.0 + 2 * eps, 0.0, 0.0)]), NAMES, DEFAULTS)


def test_goal_time_tolerance():
    assert tolerances(goal(goal_time=2.0), NAMES, DEFAULTS).goal_time == 2.0
    assert tolerances(goal(goal_time=0.0), NAMES, DEFAULTS).goal_time == 0.5  # the parameter's
    assert tolerances(goal(goal_time=-1.0), NAMES, DEFAULTS).goal_time == 0.0  # erased: no limit
    with pytest.raises(GoalError, match="goal_time_tolerance is -0.5"):
        tolerances(goal(goal_time=-0.5), NAMES, DEFAULTS)


def test_unknown_joint_and_acceleration_tolerances():
    with pytest.raises(GoalError) as info:
        tolerances(goal(path=[("c", 0.1, 0.0, 0.0)]), NAMES, DEFAULTS)
    assert info.value.code == INVALID_JOINTS
    # an acceleration tolerance > 0: accepted and never violated (as JTC without an acceleration state
    # interface), said in the notes; 0 and -1 say nothing; another negative value is illegal
    tol = tolerances(goal(path=[("a", 0.1, 0.0, 0.5)], goal_tol=[("b", 0.1, 0.0, 1e-300)]), NAMES, DEFAULTS)
    assert tol.notes == ("acceleration tolerances of a, b not checked: /joint_states carries no acceleration (as "
                         "JTC without an acceleration state interface)",)
    assert tol.path_position[0] == 0.1
    for a in (0.0, -1.0):
        assert tolerances(goal(path=[("a", 0.1, 0.0, a)]), NAMES, DEFAULTS).notes == ()
    with pytest.raises(GoalError, match="acceleration is -0.5"):
        tolerances(goal(path=[("a", 0.1, 0.0, -0.5)]), NAMES, DEFAULTS)
    with pytest.raises(GoalError, match="not finite"):
        tolerances(goal(path=[("a", float("nan"), 0.0, 0.0)]), NAMES, DEFAULTS)


def run(path_p=(0.2, np.inf), path_v=(np.inf, np.inf), goal_p=(0.05, np.inf), goal_v=(0.01, 0.01),
        goal_time=0.5) -> GoalRun:
    tol = Tolerances(np.array(path_p, float), np.array(path_v, float), np.array(goal_p, float),
                     np.array(goal_v, float), goal_time)
    return GoalRun(handle=None, tol=tol)


def test_path_tolerance_boundary():
    r = run()
    zero = np.zeros(2)
    assert r.path_violation(NAMES, np.array([0.2, 5.0]), zero, zero, zero) is None  # error == bound: within
    text = r.path_violation(NAMES, np.array([up(0.2), 0.0]), zero, zero, zero)
    assert text is not None and "a position error" in text
    assert r.path_violation(NAMES, np.array([-0.2, 0.0]), zero, zero, zero) is None
    assert r.path_violation(NAMES, np.array([-up(0.2), 0.0]), zero, zero, zero) is not None
    rv = run(path_v=(np.inf, 0.7))
    assert rv.path_violation(NAMES, zero, np.array([0.0, 0.7]), zero, zero) is None
    text = rv.path_violation(NAMES, zero, np.array([0.0, up(0.7)]), zero, zero)
    assert text is not None and "b velocity error" in text


def test_goal_tolerance_and_goal_time_boundaries():
    r = run()
    r.end_time = 10.0
    zero = np.zeros(2)
    q_goal = np.array([0.05, 3.0])
    ok = r.goal_state(NAMES, q_goal, zero, np.array([0.01, -0.01]), 10.0)  # errors exactly at the tolerances
    assert ok is not None and ok[:2] == (SUCCEEDED, SUCCESSFUL)
    assert r.goal_state(NAMES, np.array([up(0.05), 0.0]), zero, zero, 10.5) is None  # late == goal_time: waits
    late = r.goal_state(NAMES, np.array([up(0.05), 0.0]), zero, zero, up(10.5))
    assert late is not None and late[:2] == (ABORTED, GOAL_TOLERANCE_VIOLATED) and "a position error" in late[2]
    assert r.goal_state(NAMES, zero, zero, np.array([0.0, up(0.01)]), 10.1) is None
    forever = run(goal_time=0.0)
    forever.end_time = 0.0
    assert forever.goal_state(NAMES, np.array([1.0, 0.0]), zero, zero, 1e6) is None  # 0: waits (JTC)


def test_the_result_of_an_unknown_goal_is_not_success():
    """rclpy answers a result request for a goal it does not know with an empty result (error_code 0 =
    SUCCESSFUL); the controller's action server answers INVALID_GOAL with the reason (a controller restarted
    since the goal was sent)."""
    import rclpy
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor

    from robot_dynamics.ros.trajectory_action import UNKNOWN_GOAL, _ActionServer

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = rclpy.create_node("unknown_goal_result", context=ctx)
        _ActionServer(node, FollowJointTrajectory, "/unknown_goal_test/follow_joint_trajectory",
                      execute_callback=lambda handle: FollowJointTrajectory.Result())
        client = ActionClient(node, FollowJointTrajectory, "/unknown_goal_test/follow_joint_trajectory")
        # a client's result request, as rclpy's ActionClient sends it (its hidden get_result service)
        result = node.create_client(FollowJointTrajectory.Impl.GetResultService,
                                    "/unknown_goal_test/follow_joint_trajectory/_action/get_result")
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        assert client.wait_for_server(timeout_sec=30) and result.wait_for_service(timeout_sec=30)
        req = FollowJointTrajectory.Impl.GetResultService.Request()
        req.goal_id.uuid = list(uuid.uuid4().bytes)
        fut = result.call_async(req)
        ex.spin_until_future_complete(fut, timeout_sec=60)
        assert fut.done(), "no answer to the result request within 60 s (a starved host?)"
        res = fut.result()
        assert res.status == GoalStatus.STATUS_UNKNOWN
        assert res.result.error_code == INVALID_GOAL
        assert res.result.error_string == UNKNOWN_GOAL
        ex.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_goals_beyond_max_points_are_rejected_before_conversion():
    """The controller's action server counts a goal's points in rclpy's C structure (RequestGate): a goal with one
    point more than the limit is rejected without a Python goal object (the callback never sees it); one at the
    limit is accepted.  A 200 000-point goal is rejected the same way (figures printed)."""
    import time

    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from trajectory_msgs.msg import JointTrajectoryPoint

    from robot_dynamics.ros.trajectory_action import _ActionServer

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    seen: list[int] = []
    refused: list[str] = []
    try:
        node = rclpy.create_node("gated_goals", context=ctx)

        def on_goal(g):
            from rclpy.action import GoalResponse

            seen.append(len(g.trajectory.points))
            return GoalResponse.ACCEPT

        server = _ActionServer(node, FollowJointTrajectory, "/gated_goal_test/follow_joint_trajectory",
                               execute_callback=lambda handle: (handle.succeed(), FollowJointTrajectory.Result())[1],
                               goal_callback=on_goal, max_points=lambda: 100, on_oversize=refused.append)
        assert server.gate is not None, "rclpy/rosidl internals differ: the goal gate could not be installed"
        client = ActionClient(node, FollowJointTrajectory, "/gated_goal_test/follow_joint_trajectory")
        ex = MultiThreadedExecutor(context=ctx)
        ex.add_node(node)
        assert client.wait_for_server(timeout_sec=30)

        def send(n: int):
            g = FollowJointTrajectory.Goal()
            g.trajectory.joint_names = ["a"]
            p = JointTrajectoryPoint(positions=[0.0])
            g.trajectory.points = [p] * n
            t0 = time.perf_counter()
            fut = client.send_goal_async(g)
            ex.spin_until_future_complete(fut, timeout_sec=120)
            assert fut.done(), f"no goal response within 120 s ({n} points; a starved host?)"
            return fut.result(), time.perf_counter() - t0

        handle, _ = send(100)
        assert handle.accepted and seen == [100]
        handle, _ = send(101)
        assert not handle.accepted and seen == [100]
        assert refused and "101 trajectory points" in refused[-1]
        handle, dt = send(200_000)
        assert not handle.accepted and seen == [100] and "200000 trajectory points" in refused[-1]
        print(f"\n200 000-point goal rejected {dt:.2f} s after send_goal_async (client serialization included); "
              f"the server made no Python goal object")
        ex.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_the_goal_accepted_last_wins_whichever_was_checked_first():
    """Goals are checked in parallel threads: a goal accepted before another one that is already queued or running
    must not preempt it (JTC: the goal received last wins).  Boundary: equal or lower numbers are not newer."""
    tol = tolerances(FollowJointTrajectory.Goal(), NAMES, DEFAULTS)
    first, second = GoalRun(handle=None, tol=tol, seq=4), GoalRun(handle=None, tol=tol, seq=5)
    assert first.older_than(second) and not second.older_than(first)
    assert not first.older_than(GoalRun(handle=None, tol=tol, seq=4))  # the same number: not newer
    assert first.older_than(None, second) and not first.older_than(None, None)
    topic = GoalRun(handle=None, tol=tol)  # not from the action server (no number): never older, never newer
    assert not topic.older_than(second) and not first.older_than(topic)


def test_end_velocity_of_a_trajectory_as_jtc():
    """allow_nonzero_velocity_at_trajectory_end false (JTC's default): the last point at float epsilon is at rest,
    just above it is refused in JTC's words; velocities not given are at rest; true accepts any."""
    from robot_dynamics.ros.validation import END_VELOCITY_ZERO, end_velocity
    from robot_dynamics.safety.refusal import Refused

    names = ["a", "b"]
    v = np.zeros((3, 2))
    v[1] = 1.0  # a point in the middle moves: fine
    v[-1, 1] = END_VELOCITY_ZERO
    end_velocity(v, names, False)
    end_velocity(None, names, False)
    v[-1, 1] = -np.nextafter(END_VELOCITY_ZERO, 1.0)
    with pytest.raises(Refused, match="Velocity of last trajectory point of joint b is not zero") as info:
        end_velocity(v, names, False)
    assert info.value.cause == "nonzero_end_velocity"
    end_velocity(v, names, True)


def test_jtc_parameters_this_controller_ignores_are_named_with_why():
    from robot_dynamics.ros.controller.parameters import JTC_NOT_APPLICABLE, jtc_ignored

    given = {"interpolation_method", "cmd_timeout", "gains.a.angle_wraparound", "gains.z.i_clamp", "omega",
             "gains.a.p", "constraints.a.goal"}
    out = jtc_ignored(given, ["a", "b"])
    assert out == [f"interpolation_method: ignored, {JTC_NOT_APPLICABLE['interpolation_method']}",
                   f"cmd_timeout: ignored, {JTC_NOT_APPLICABLE['cmd_timeout']}",
                   "gains.a.angle_wraparound: ignored, continuous joints are not wrapped: errors are taken as measured"]
    assert jtc_ignored({"omega", "gains.a.p"}, ["a"]) == []  # ours, honoured: nothing said


def test_feedback_pacer_on_the_controllers_clock() -> None:
    """Feedback every period of control time: not before the due time (just inside: 1 ns early), at it (just
    outside), never twice for one stamp, nothing while the clock is paused, a grid without drift, a restart after
    a gap or a backward jump."""
    from robot_dynamics.ros.controller.goal import FeedbackPacer

    p = FeedbackPacer(0.05)
    assert p.due(10.0)  # the first one
    assert not p.due(10.0)  # the same cycle polled again (a paused simulation)
    assert not p.due(10.05 - 1e-9)
    assert p.due(10.05)
    assert not p.due(10.05)
    # polled late (10.12 for the 10.10 due time): published, and the next due time stays on the grid (10.15)
    assert p.due(10.12)
    assert not p.due(10.15 - 1e-9) and p.due(10.15)
    # a gap of several periods: one feedback, then a grid from there (no burst catching up)
    assert p.due(11.0) and not p.due(11.04) and p.due(11.05)
    # the clock jumped back (a restarted simulation): feedback at once, grid from the new stamp
    assert p.due(2.0) and not p.due(2.03) and p.due(2.05)
    with pytest.raises(ValueError, match="period must be > 0"):
        FeedbackPacer(0.0)


def test_feedback_pacer_rate_follows_the_controllers_clock() -> None:
    """Polled on the wall at 4 per period while the controller's clock runs at 0.5x, 1x and 3x the wall: feedback at
    the rate of the controller's clock (within two) up to the poll rate."""
    from robot_dynamics.ros.controller.goal import FeedbackPacer

    period = 0.05
    for speed, expected in ((0.5, 100), (1.0, 200), (3.0, 600), (5.0, 800)):
        p = FeedbackPacer(period)
        wall = np.arange(0.0, 10.0, period / 4)  # 10 s of wall time, polls every period / 4
        control = np.floor(wall * speed / 0.002) * 0.002  # the stamp of the last 2 ms control cycle
        published = sum(p.due(float(t)) for t in control)
        # 20 Hz of control time: 0.5x -> 5 s -> 100, 1x -> 200, 3x -> 600; 5x: capped by the 800 polls
        assert abs(published - expected) <= 2, (speed, published)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200_000_000), min_size=1, max_size=200))
def test_feedback_pacer_never_bursts_and_never_starves(steps_ns: list[int]) -> None:
    """Property, for any increasing clock polled at any steps: two feedbacks are never closer than one period
    apart counting two at a time (the grid's restart after a gap moves it: one slot counted from the first may hold
    two, never three), at most span / period + 2 in all, and a feedback whenever a period has passed since the last
    (liveness)."""
    from robot_dynamics.ros.controller.goal import FeedbackPacer

    period = 40_000_000  # ns (25 Hz)
    p = FeedbackPacer(period * 1e-9)
    t, published = 5_000_000_000, []
    for step in steps_ns:
        t += step
        due = p.due(t * 1e-9)
        if published and t - published[-1] >= period:
            assert due, (t, published[-1])
        if due:
            published.append(t)
    assert all(b - a >= period - 1 for a, b in zip(published[:-2], published[2:], strict=True)), published
    assert len(published) <= (published[-1] - published[0]) / period + 2
