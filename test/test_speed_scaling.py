"""Speed scaling of the running trajectory (robot_dynamics.ros.controller.scaling, JTC's ~/speed_scaling_input) in
the pure controller core: the trajectory's time, its ramp, the reference played at the factor, refusals at their
boundaries, and the control cycle (the reference halves its pace, stops and holds at 0, resumes at 1; the goal ends on
the trajectory's time).  Oracles: closed-form integrals of a linear ramp, a numerical derivative of q(tau(t))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_controller_core import Q0, ctx, goal, model, ramp, running  # noqa: F401 - fixtures

from robot_dynamics.ros.controller import core as cc
from robot_dynamics.ros.controller.goal import SUCCEEDED
from robot_dynamics.ros.controller.scaling import TrajectoryClock, factor_error


# ------------------------------------------------------------------ the clock alone
def test_at_factor_one_the_trajectory_time_is_the_control_time_since_its_start_exactly():
    c = TrajectoryClock()
    c.start(10.0, 9.75)
    for now in (10.0, 10.002, 10.5, 13.141592):
        assert c.advance(now) == now - 9.75
    assert c.rate == 0.0 and c.factor == 1.0


@pytest.mark.parametrize(("factor", "refused"), [(-1e-12, True), (0.0, False), (float("nan"), True),
                                                 (float("inf"), True), (0.5, False), (1.0, False)])
def test_a_factor_is_refused_below_zero_and_when_not_finite(factor, refused):
    c = TrajectoryClock(requested=0.7)
    err = c.request(factor)
    assert (err is not None) is refused and (factor_error(factor) is not None) is refused
    assert c.requested == (0.7 if refused else factor)


def test_a_factor_above_one_is_taken_as_one():
    c = TrajectoryClock(requested=0.5)
    assert c.request(1.0 + 1e-12) is None and c.requested == 1.0
    assert c.request(7.0) is None and c.requested == 1.0


@pytest.mark.parametrize(("initial", "in_use"), [(0.0, 0.0), (0.3, 0.3), (1.0, 1.0), (1.0 + 1e-12, 1.0), (4.0, 1.0)])
def test_the_initial_factor_is_in_use_at_once_and_never_above_one(initial, in_use):
    c = TrajectoryClock()
    c.configure(initial, 0.2)
    assert c.requested == c.factor == in_use and c.ramp_time == 0.2


def test_the_schemas_ranges_of_the_speed_scaling_and_stale_goal_parameters():
    from robot_dynamics.ros.controller.parameters import PARAMETERS

    factor, ramp = PARAMETERS.params["speed_scaling.initial_scaling_factor"], PARAMETERS.params["speed_scaling.ramp_time"]
    assert factor.default == 1.0 and ramp.default == 0.2 and not factor.live and ramp.live
    assert factor.check(0.0) == 0.0 and factor.check(7.0) == 7.0  # JTC's range (>= 0); above 1 taken as 1 (above)
    assert ramp.check(0.0) == 0.0 and ramp.check(10.0) == 10.0
    sgt = PARAMETERS.params["stale_goal_timeout"]
    assert sgt.default == cc.STALE_GOAL == 5.0 and sgt.live and sgt.check(0.0) == 0.0 and sgt.check(3600.0) == 3600.0
    for spec, bad in ((factor, -1e-12), (ramp, -1e-12), (ramp, 10.0 + 1e-9), (sgt, -1e-12), (sgt, 3600.0 + 1e-9)):
        with pytest.raises(ValueError):
            spec.check(bad)


def test_the_factor_ramps_at_one_over_ramp_time_and_tau_is_its_integral():
    c = TrajectoryClock(ramp_time=0.2)
    c.start(0.0, 0.0)
    c.advance(1.0)  # tau 1 at factor 1
    c.request(0.5)
    dt = 0.002
    for k in range(1, 101):
        c.advance(1.0 + k * dt)
        if k < 50:
            assert c.factor == pytest.approx(1.0 - k * dt / 0.2, abs=1e-12) and c.rate == pytest.approx(-5.0)
    assert c.factor == 0.5 and c.rate == 0.0  # 0.1 s to go from 1 to 0.5 at 5 per s
    # tau: 1 + the ramp's integral (0.1 s averaging 0.75) + 0.1 s at 0.5
    assert c.tau == pytest.approx(1.0 + 0.075 + 0.05, abs=1e-12)


def test_a_zero_ramp_time_changes_the_factor_at_once_and_zero_stops_the_time():
    c = TrajectoryClock(ramp_time=0.0)
    c.start(0.0, 0.0)
    c.advance(0.5)
    c.request(0.0)
    tau = c.advance(0.502)
    assert c.factor == 0.0
    assert c.advance(5.0) == tau and c.advance(9.0) == tau  # stopped: the trajectory's time stays
    c.request(1.0)
    assert c.advance(9.5) == pytest.approx(tau + 0.5, abs=1e-12)


def test_the_same_time_changes_nothing_and_a_time_gone_back_starts_a_new_base():
    c = TrajectoryClock()
    c.start(1.0, 0.0)
    c.request(0.3)
    c.advance(1.1)
    state = (c.tau, c.factor, c.rate)
    assert c.advance(1.1) == state[0] and (c.tau, c.factor, c.rate) == state
    assert c.advance(0.5) == state[0] and c.factor == state[1]  # the clock went back: kept
    c.advance(0.6)  # 0.1 s on the new base, still ramping down at 5 per s (from 0.5 to 0.3: 0.04 s)
    assert c.factor == 0.3 and c.tau == pytest.approx(state[0] + 0.5 * (0.5 + 0.3) * 0.1, abs=1e-12)


def test_the_reference_is_the_trajectory_played_at_the_factor():
    """q(tau(t)): its numerical derivatives are the scaled velocity and acceleration (q' f, q'' f^2 + q' df/dt)."""
    traj = ramp(Q0, 0.4, 1.0)
    c = TrajectoryClock(ramp_time=0.5)
    c.start(0.0, 0.0)
    c.advance(0.3)
    c.request(0.2)
    h = 1e-5
    times = np.arange(0.3 + h, 0.5, h)
    taus = [c.advance(t) for t in times]
    k = len(times) // 2  # mid-ramp
    c2 = TrajectoryClock(ramp_time=0.5)
    c2.start(0.0, 0.0)
    c2.advance(0.3)
    c2.request(0.2)
    for t in times[:k + 1]:
        c2.advance(t)
    q, qd, qdd = c2.scaled(*traj.at(taus[k]))
    qm, qp = traj.at(taus[k - 1])[0], traj.at(taus[k + 1])[0]
    np.testing.assert_allclose(qd, (qp - qm) / (2 * h), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(qdd, (qp - 2 * q + qm) / h**2, rtol=1e-3, atol=1e-4)
    assert 0.2 < c2.factor < 1.0 and c2.rate == pytest.approx(-2.0)


def test_the_end_time_is_when_tau_passed_the_duration():
    c = TrajectoryClock(requested=0.5, factor=0.5)
    c.start(10.0, 10.0)
    c.advance(12.2)  # tau 1.1 at 0.5: the end (tau 1) was at 12.0
    assert c.end_time(12.2, 1.0) == pytest.approx(12.0, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-4, 0.05), st.one_of(st.none(), st.floats(0.0, 3.0))), min_size=1,
                max_size=60), st.floats(0.0, 1.0))
def test_tau_never_goes_back_and_the_factor_stays_in_zero_one(steps, ramp_time):
    c = TrajectoryClock(ramp_time=ramp_time)
    c.start(0.0, 0.0)
    now, tau = 0.0, 0.0
    for dt, factor in steps:
        if factor is not None:
            c.request(factor)
        now += dt
        new = c.advance(now)
        assert new >= tau and 0.0 <= c.factor <= 1.0
        assert new - tau <= dt * 1.0 + 1e-12  # never faster than the trajectory
        if ramp_time > 0:
            assert abs(c.rate) <= 1.0 / ramp_time + 1e-9
        tau = new
    assert math.isfinite(tau)


# ------------------------------------------------------------------ in the control cycle
def test_the_cycle_plays_the_rest_at_half_pace_stops_at_zero_and_the_goal_ends_on_the_trajectory_time(ctx):  # noqa: F811
    traj = ramp(Q0, 0.2, 1.0)
    core, _ = running(ctx)
    run = goal(seq=1)
    core.queue_trajectory((traj, None, 51, run))
    t, dt = 10.0, 0.002
    cycle = core.update(t, t)
    core.clock.ramp_time = 0.0  # a step: the pace is exact from the next cycle

    def step() -> cc.Cycle:  # one cycle, the arm where the reference was (perfect tracking)
        nonlocal t
        t += dt
        core.state_arrived(cycle.q_ref, cycle.qd_ref, t, t, t)
        return core.update(t, t)

    while t < 10.4 - 1e-9:
        cycle = step()
    assert core.clock.tau == pytest.approx(0.4, abs=1e-9)
    core.clock.request(0.5)
    for _ in range(100):  # 0.2 s of control time: 0.1 s of the trajectory
        cycle = step()
    assert core.clock.tau == pytest.approx(0.5, abs=1e-9)
    ref, vel, _ = traj.at(0.5)
    np.testing.assert_allclose(cycle.q_ref, ref, atol=1e-12)
    np.testing.assert_allclose(cycle.qd_ref, 0.5 * vel, atol=1e-12)  # played at half the pace
    core.clock.request(0.0)
    for _ in range(50):
        cycle = step()
    assert core.mode == cc.TRACKING and core.clock.tau == pytest.approx(0.5, abs=1e-9)  # stopped, held at 0.5
    np.testing.assert_allclose(cycle.q_ref, ref, atol=1e-12)
    np.testing.assert_array_equal(cycle.qd_ref, 0.0)
    np.testing.assert_array_equal(cycle.qdd_ref, 0.0)
    core.clock.request(1.0)
    while core.trajectory is not None:
        cycle = step()
    assert run.end_time == pytest.approx(t - (core.clock.tau - 1.0), abs=1e-9)  # on the trajectory's time
    assert run.end_time == pytest.approx(10.0 + 1.0 + 0.1 + 0.1, abs=1e-9)  # 0.1 s lost at half pace, 0.1 s stopped
    for _ in range(5):
        cycle = step()
    assert run.status == SUCCEEDED and np.allclose(core.hold, Q0 + 0.2)


# ------------------------------------------------------------------ a trajectory paused by stale states
from robot_dynamics.ros.controller.goal import ABORTED, INVALID_GOAL  # noqa: E402
from robot_dynamics.ros.controller.scaling import rejoin  # noqa: E402
from robot_dynamics.safety.refusal import Refused  # noqa: E402

TIMEOUT = 0.5  # test_controller_core's state_timeout


def _paused(ctx, sgt: float = 5.0):  # noqa: F811
    """A core tracking a 2 s ramp, its states stopped at t = 10.5 (the trajectory's time 0.5)."""
    traj = ramp(Q0, 0.3, 2.0)
    core, out = running(ctx)
    core.stale_goal_timeout = sgt
    run = goal(seq=1)
    core.queue_trajectory((traj, None, 51, run))
    t, cycle = 10.0, core.update(10.0, 10.0)
    while t < 10.5 - 1e-9:
        t += 0.002
        core.state_arrived(cycle.q_ref, cycle.qd_ref, t, t, t)
        cycle = core.update(t, t)
    return core, out, run, traj, cycle


def test_stale_states_pause_the_trajectory_and_its_goal_until_stale_goal_timeout(ctx):  # noqa: F811
    core, out, run, traj, _ = _paused(ctx, sgt=2.0)
    core.update(10.6, 10.5 + TIMEOUT + 1e-6)  # just beyond state_timeout: stale (braked, then held)
    assert core.mode == cc.STALE and run.status is None and core.trajectory is traj
    assert core.paused[0] == pytest.approx(0.5, abs=1e-9) and "trajectory paused at t = 0.500 s" in core.mode_reason
    core.update(12.0, 10.5 + TIMEOUT + 2.0)  # exactly timeout + stale_goal_timeout: still paused
    assert run.status is None and core.trajectory is traj
    core.update(12.0, 10.5 + TIMEOUT + 2.0 + 1e-6)  # just beyond: the goal aborts with the cause
    assert run.status == ABORTED and run.code == INVALID_GOAL and core.trajectory is None and core.paused is None
    assert "no valid joint state for more than 2.5 s (stale_goal_timeout 2 s)" in run.text


def test_states_back_in_time_resume_the_trajectory_where_the_arm_is_at_its_pace(ctx):  # noqa: F811
    core, out, run, traj, cycle = _paused(ctx)
    core.update(10.7, 10.5 + TIMEOUT + 0.1)  # stale, paused at 0.5
    q_b = traj.at(0.56)[0]  # the arm braked a little ahead on its path, at rest
    core.state_arrived(q_b, np.zeros(6), 11.2, 11.2, 11.2)
    back = core.update(11.2, 11.2)
    assert core.mode == cc.TRACKING and "the trajectory resumed at t = 0.560 s (paused at 0.500 s" in core.mode_reason
    assert run.status is None and core.clock.factor == 0.0  # from rest (the arm's pace), ramping up
    np.testing.assert_allclose(back.q_ref, q_b, atol=1e-9)
    np.testing.assert_array_equal(back.qd_ref, 0.0)
    t, cycle = 11.2, back
    while core.trajectory is not None:
        t += 0.002
        core.state_arrived(cycle.q_ref, cycle.qd_ref, t, t, t)
        cycle = core.update(t, t)
    for _ in range(3):
        t += 0.002
        core.state_arrived(cycle.q_ref, cycle.qd_ref, t, t, t)
        cycle = core.update(t, t)
    assert run.status == SUCCEEDED and np.allclose(core.hold, Q0 + 0.3)
    # the rest of the path (1.44 s of it) played after the outage, plus half the ramp (0.1 s at 0.2 s ramp_time)
    assert run.end_time == pytest.approx(11.2 + 1.44 + 0.1, abs=1e-6)


@pytest.mark.parametrize(("offset", "resumed"), [(0.0999, True), (0.1001, False)])
def test_a_paused_trajectory_resumes_only_within_the_resume_tolerance(ctx, offset, resumed):  # noqa: F811
    core, out, run, traj, _ = _paused(ctx)
    core.resume_tolerance = 0.1
    core.update(10.7, 10.5 + TIMEOUT + 0.1)
    q_b = traj.at(0.5)[0] + np.array([offset, -offset, 0, 0, 0, 0])  # off the path (every joint moves alike on it)
    core.state_arrived(q_b, np.zeros(6), 11.2, 11.2, 11.2)
    core.update(11.2, 11.2)
    if resumed:
        assert core.mode == cc.TRACKING and run.status is None
    else:
        assert core.mode == cc.HOLDING and core.trajectory is None and run.status == ABORTED
        assert "no valid joint state for 0.700 s; back, the arm is 0.1001 from the paused trajectory" in run.text


def test_rejoin_finds_the_nearest_point_ahead_and_the_arms_pace():
    traj = ramp(Q0, 0.3, 2.0)
    q, v, _ = traj.at(0.8)
    tau, dist, pace = rejoin(traj, 0.5, q, 0.5 * v)
    assert tau == pytest.approx(0.8, abs=1e-3) and dist < 1e-3 and pace == pytest.approx(0.5, abs=0.01)
    tau, dist, pace = rejoin(traj, 0.5, q, -v)  # moving back: no pace
    assert pace == 0.0
    tau, dist, _ = rejoin(traj, 1.9, traj.at(2.0)[0] + 1.0, np.zeros(6))  # never past the end
    assert tau == pytest.approx(2.0) and dist == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.0, 7.0), st.floats(-0.3, 0.3), st.floats(0.0, 1.0))
def test_a_paused_goal_resumes_only_in_time_and_near_its_path(ctx, outage, offset, ahead):  # noqa: F811
    """Whatever the outage and where the arm comes back: resumed (tracking, goal active) exactly when the states
    were missing for at most state_timeout + stale_goal_timeout and the arm is within resume_tolerance of the path
    searched; otherwise the goal has ended (aborted) and the arm holds."""
    core, out, run, traj, _ = _paused(ctx, sgt=5.0)
    core.resume_tolerance = 0.1
    wall = 10.5 + TIMEOUT + 1e-3
    core.update(10.6, wall)  # stale
    tau_b = min(0.5 + ahead, 2.0)
    q_b = traj.at(tau_b)[0] + np.array([offset, -offset, 0, 0, 0, 0])
    back = wall + outage
    if outage > 1e-3:
        core.update(back - 1e-3, back - 1e-3)  # the last cycle without a state
    in_time = max(back - 1e-3, wall) - 10.5 <= TIMEOUT + 5.0
    try:
        core.state_arrived(q_b, np.zeros(6), back, back, back)
    except Refused:  # farther than the arm could have moved in the outage (the safety envelope's monitor)
        core.update(back, back)
        assert core.mode == cc.STALE and (run.status is None) is in_time
        return
    core.update(back, back)
    near = abs(offset) <= 0.1 and ahead <= 1.0 + 0.05  # the search covers 1 s of the path ahead
    if in_time and near:
        assert core.mode == cc.TRACKING and run.status is None
    else:
        assert run.status == ABORTED and core.trajectory is None and core.mode == cc.HOLDING


def test_a_factor_set_at_once_goes_on_from_where_tau_was():
    """``set_factor`` (dynamics-aware scaling at rest on the path): tau continuous, then advancing at the new factor
    (the anchors moved: a mid-path change does not rewrite the time already played)."""
    c = TrajectoryClock()
    c.start(10.0, 10.0)
    for k in range(1, 501):
        c.advance(10.0 + 0.002 * k)
    assert c.tau == pytest.approx(1.0, abs=1e-12)
    c.set_factor(0.5)
    assert c.tau == pytest.approx(1.0, abs=1e-12) and c.factor == 0.5 and c.rate == 0.0
    c.cap = 0.5  # (the cap keeps the target there)
    c.advance(11.002)
    assert c.tau == pytest.approx(1.001, abs=1e-12)  # half a period of trajectory time, not 0.5 x the whole second
