"""A goal preempting a moving goal (issue 33): the new trajectory's start segment (JTC's segment to a first point later
than t = 0) leaves the running reference, continuous in position, velocity and acceleration at the switch, under any
speed scaling factor; checked against the limits first (refused: the running motion goes on).  The controller's pure
core, no rclpy.  Oracle: the running trajectory's closed form at the switch and the quintic through the same
boundary values (001 eq. 8.10's polynomial, solved here by numpy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_controller_core import DT, Q0, ctx, goal, model, ramp, running  # noqa: F401 - fixtures

from robot_dynamics.ros.controller import core as cc
from robot_dynamics.ros.controller.goal import ABORTED, CANCELED, INVALID_GOAL
from robot_dynamics.trajectory.sampled import SampledTrajectory

T_SWITCH = 0.8  # s into the running goal (its velocity and acceleration both nonzero there)


def preempting(q_from: np.ndarray, dq: float, first: float = 0.6) -> SampledTrajectory:
    """Two position-only points (degree 1, as many clients send), the first ``first`` s after the start."""
    return SampledTrajectory([first, first + 0.5], [q_from + dq, q_from + 1.5 * dq], start=q_from)


def drive(core, t0: float, t1: float, refs: list) -> float:
    """Cycles every DT from ``t0`` to ``t1``, the arm exactly on the reference (states at each cycle); the cycles'
    (time, q_ref, qd_ref, qdd_ref) appended to ``refs``; the last time."""
    t = t0
    while t < t1 - 1e-12:
        t = round(t + DT, 9)
        q, qd = (refs[-1][1], refs[-1][2]) if refs else (core.q, np.zeros(6))
        core.state_arrived(q, qd, t, t, t)
        cycle = core.update(t, t)
        assert cycle is not None
        refs.append((t, cycle.q_ref, cycle.qd_ref, cycle.qdd_ref))
    return t


def jumps(refs: list, k: int) -> tuple[float, float, float]:
    """The reference's jumps from cycle k-1 to k beyond what its derivatives predict over one period: position
    beyond qd dt + qdd dt^2/2, velocity beyond qdd dt, acceleration itself."""
    _, q0, v0, a0 = refs[k - 1]
    _, q1, v1, a1 = refs[k]
    return (float(np.abs(q1 - q0 - v0 * DT - 0.5 * a0 * DT**2).max()), float(np.abs(v1 - v0 - a0 * DT).max()),
            float(np.abs(a1 - a0).max()))


def switch(ctx, factor: float = 1.0, first: float = 0.6, dq: float = -0.15):  # noqa: F811 - the fixture
    """A 2 s goal run to T_SWITCH (at ``factor``), then preempted: (core, refs, index of the first cycle after the
    switch, the old and new goals, the running trajectory)."""
    core, _ = running(ctx)
    core.clock.configure(factor, 0.2)
    old_traj = ramp(Q0, 0.3, 2.0)
    old, new = goal(seq=1), goal(seq=2)
    core.queue_trajectory((old_traj, None, 51, old))
    refs: list = []
    t = drive(core, 10.0 - DT, 10.0 + T_SWITCH, refs)
    k = len(refs)
    core.queue_trajectory((preempting(refs[-1][1], dq, first), None, 2, new))
    drive(core, t, t + 0.3, refs)
    return core, refs, k, old, new, old_traj


@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_the_preempting_goal_leaves_the_running_reference_continuous_to_the_acceleration(ctx, factor):  # noqa: F811
    core, refs, k, old, new, old_traj = switch(ctx, factor)
    assert old.status == CANCELED and core.goal is new and new.status is None
    assert core.mode == cc.TRACKING and "from the running reference" in core.mode_reason
    # the new trajectory at its time 0 is the running one where it was (its time at the last cycle before)
    tau = factor * T_SWITCH
    np.testing.assert_allclose(np.concatenate(core.trajectory.at(0.0)), np.concatenate(old_traj.at(tau)),
                               rtol=0, atol=1e-12)
    # the cycle's jumps at the switch against those of the cycles around it (the quintic's own jerk)
    at_switch = jumps(refs, k)
    around = np.max([jumps(refs, i) for i in (*range(k - 20, k), *range(k + 1, k + 21))], axis=0)
    print(f"\nfactor {factor}: jumps at the switch (q, qd, qdd beyond one period's prediction) "
          f"{at_switch[0]:.2e} rad, {at_switch[1]:.2e} rad/s, {at_switch[2]:.2e} rad/s^2; largest of the 40 "
          f"cycles around {around[0]:.2e}, {around[1]:.2e}, {around[2]:.2e}")
    # of the order of the jerk's (dt^3, dt^2, dt times it), as any cycle's; JTC's start from rest would jump by the
    # whole velocity and acceleration
    assert np.all(np.array(at_switch) <= 2.0 * around + 1e-12)
    v_old, a_old = np.abs(refs[k - 1][2]).max(), np.abs(refs[k - 1][3]).max()
    assert v_old > 0.1 * factor and a_old > 0.1 * factor  # it was moving, accelerating
    assert at_switch[1] < 1e-3 * v_old and at_switch[2] < 2.0 * a_old * DT / 0.002


def test_the_start_segment_is_the_quintic_through_the_switch_state_and_the_first_point(ctx):  # noqa: F811
    """Oracle: the quintic solved from its six boundary conditions (q, qd, qdd at both ends) by numpy."""
    core, refs, k, _, _, old_traj = switch(ctx)
    q0, v0, a0 = old_traj.at(T_SWITCH)
    q1 = refs[k - 1][1] - 0.15  # the first point (positions only: at rest there in the start segment)
    T = 0.6
    rows = [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0],
            [1, T, T**2, T**3, T**4, T**5], [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4],
            [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3]]
    for s in (0.0, 0.1, 0.37, 0.6):
        for j in range(6):
            c = np.linalg.solve(np.array(rows, float), [q0[j], v0[j], a0[j], q1[j], 0.0, 0.0])
            want = c @ [1, s, s**2, s**3, s**4, s**5]
            assert core.trajectory.at(s)[0][j] == pytest.approx(want, abs=1e-10)


def test_at_rest_or_stamped_the_start_segment_leaves_the_arm_as_jtc(ctx):  # noqa: F811
    """No running trajectory (holding), or a stamped goal: the start segment leaves the arm's position at rest."""
    core, _ = running(ctx)
    traj = preempting(Q0, 0.1)
    core.queue_trajectory((traj, None, 2, goal(seq=1)))
    core.update(10.0, 10.0)
    assert core.trajectory is traj and core.mode_reason.endswith("starts now")
    core, refs, k, old, new, _ = switch(ctx)
    stamped = goal(seq=3)
    t = refs[-1][0]
    traj = preempting(refs[-1][1], 0.1)
    core.queue_trajectory((traj, t, 2, stamped))
    drive(core, t, t + 0.01, refs)
    assert core.goal is stamped and core.trajectory is traj and core.mode_reason.endswith("starts now")


def quintic_extremes(q0, v0, a0, q1, T: float) -> tuple[float, float]:
    """Oracle: (max position, max |velocity|) of the quintic from (q0, v0, a0) to q1 at rest in T (numpy solve)."""
    rows = [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0], [1, T, T**2, T**3, T**4, T**5],
            [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4], [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3]]
    c = np.linalg.solve(np.array(rows, float), [q0, v0, a0, q1, 0.0, 0.0])
    s = np.linspace(0.0, T, 20001)
    return float(np.polyval(c[::-1], s).max()), float(np.abs(np.polyval(np.polyder(c[::-1]), s)).max())


def test_a_start_segment_that_would_leave_the_limits_is_refused_and_the_motion_goes_on(ctx, model):  # noqa: F811
    """The running reference moves at 0.71 rad/s toward joint 1's upper limit; a first point 5 cm inside that limit:
    reached in 0.05 s the start segment is too fast, in 2 s it overshoots the limit (it cannot stop sooner without
    going back): both refused (path_limits, from the running reference), the old goal goes on; in 0.45 s it is
    within the limits: taken."""
    lim = model.limits
    hi, vmax = lim["upper"][0], lim["velocity"][0]
    q_start = Q0.copy()
    q_start[0] = hi - 0.4
    core, _ = running(ctx, q=q_start)
    dq = np.zeros(6)
    dq[0] = 0.38
    u = np.linspace(0.0, 1.0, 51)
    s = 10 * u**3 - 15 * u**4 + 6 * u**5
    sd = 30 * u**2 - 60 * u**3 + 30 * u**4
    sdd = 60 * u - 180 * u**2 + 120 * u**3
    old_traj = SampledTrajectory(u, q_start + s[:, None] * dq, sd[:, None] * dq, sdd[:, None] * dq)
    old = goal(seq=1)
    core.queue_trajectory((old_traj, None, 51, old))
    refs: list = []
    t = drive(core, 10.0 - DT, 10.5, refs)  # the fastest point, toward the limit
    for seq, (first, taken) in enumerate(((0.05, False), (2.0, False), (0.45, True)), start=2):
        q0, v0, a0 = core.trajectory.at(core.clock.tau)  # where the switch leaves from
        target = refs[-1][1].copy()
        target[0] = hi - 0.05
        top, vpeak = quintic_extremes(q0[0], v0[0], a0[0], target[0], first)
        assert bool(top <= hi and vpeak <= vmax) == taken, (top - hi, vpeak - vmax)  # the oracle agrees
        new = goal(seq=seq)
        core.queue_trajectory((SampledTrajectory([first], [target], start=refs[-1][1]), None, 1, new))
        t = drive(core, t, t + DT, refs)
        if taken:
            assert new.status is None and core.goal is new and old.status == CANCELED
        else:
            assert new.status == ABORTED and new.code == INVALID_GOAL and "from the running reference" in new.text
            assert "joint1" in new.text and core.goal is old and old.status is None, new.text  # the old goes on
        print(f"first point in {first} s: peak {top - hi:+.3f} rad from the limit, {vpeak / vmax:.2f} x the "
              f"velocity limit: {'taken' if taken else new.text}")


@settings(max_examples=25, deadline=None)
@given(at=st.floats(0.05, 1.9), factor=st.sampled_from([1.0, 0.7, 0.3]), first=st.floats(0.2, 1.5),
       dq=st.floats(-0.2, 0.2))
def test_continuous_wherever_the_switch_falls(ctx, at, factor, first, dq):  # noqa: F811
    """Property: at any switch time, factor, first-point time and target, the new trajectory at its time 0 is the
    running one (position, velocity, acceleration in trajectory time: the clock's factor goes on)."""
    core, _ = running(ctx)
    core.clock.configure(factor, 0.2)
    old_traj = ramp(Q0, 0.3, 2.0)
    core.queue_trajectory((old_traj, None, 51, goal(seq=1)))
    refs: list = []
    t = drive(core, 10.0 - DT, 10.0 + at, refs)
    tau = core.clock.tau
    core.queue_trajectory((preempting(refs[-1][1], dq, first), None, 2, goal(seq=2)))
    drive(core, t, t + DT, refs)
    np.testing.assert_allclose(np.concatenate(core.trajectory.at(0.0)), np.concatenate(old_traj.at(tau)),
                               rtol=0, atol=1e-12)
    assert core.clock.tau == pytest.approx(factor * DT, abs=1e-12)  # one period of the new one, at the factor
