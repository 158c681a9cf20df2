"""Issue 29: every plan ``~/plan`` returns is accepted by the controller, by construction.

The controller turns the points into a :class:`SampledTrajectory` (quintic Hermite with accelerations, linear with
positions only) and accepts it when :func:`check_path_limits` passes with its *default* tolerances
(``PATH_POSITION_TOLERANCE``, ``PATH_RATE_TOLERANCE``).  The plans are sampled by the very function ``~/plan`` uses
(:func:`playback_samples`, called by :func:`fit_samples_to_effort_limits` inside :func:`plan_samples`), the times
read back from nanoseconds as the controller does.  Oracles: the exact polynomial peaks of the interpolated path
(:func:`peak_rates`) and, for the check itself, paths whose peaks are known in closed form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robot_dynamics.trajectory.time_scaling as time_scaling
from robot_dynamics.model.robots import load_model
from robot_dynamics.trajectory import (
    PROFILES,
    PlaybackSamples,
    SampledTrajectory,
    TimeScaledTrajectory,
    message_times,
    plan_samples,
    playback_samples,
    through_waypoints,
)
from robot_dynamics.trajectory.playback import MIN_INTERVAL, _merge
from robot_dynamics.trajectory.sampled import (
    PATH_POSITION_TOLERANCE,
    PATH_RATE_TOLERANCE,
    check_path_limits,
    peak_rates,
)

MODEL = load_model("rx90")
LIM = MODEL.limits
PERIOD = 0.01
PLANS = 1000
CASES = {  # name -> (profile, waypoints); the waypoint plans cycle through every profile
    "trapezoid": ("trapezoid", 2), "smooth_trapezoid": ("smooth_trapezoid", 2), "bang_bang": ("bang_bang", 2),
    "cubic": ("cubic", 2), "quintic": ("quintic", 2), "linear": ("linear", 2), "waypoints": (None, (3, 5)),
}


def _waypoints(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random waypoints within the limits, a fifth of the coordinates exactly on a limit."""
    w = rng.uniform(LIM["lower"], LIM["upper"], (count, 6))
    u = rng.random(w.shape)
    return np.where(u < 0.1, LIM["lower"], np.where(u > 0.9, LIM["upper"], w))


def _played(times, q, qd, qdd, fields: int) -> SampledTrajectory:
    """What the controller builds from the points: times from the message's nanoseconds, the fields sent."""
    t = message_times(times)
    assert np.array_equal(t, times)  # the samples' times are already what the message carries
    return SampledTrajectory(t, q) if fields == 1 else SampledTrajectory(t, q, qd, qdd)


@pytest.mark.parametrize("case", list(CASES))
def test_every_sampled_plan_is_accepted(case):
    """1000 random plans per profile, unstretched or stretched (as the effort limits do), 100 % accepted; the
    interpolated velocity never above the limit by more than 1e-8 (100x inside the tolerance: by construction)."""
    profile, count = CASES[case]
    rng = np.random.default_rng(29)
    accepted, worst, positions_only = 0, 0.0, 0
    for i in range(PLANS):
        m = count if isinstance(count, int) else int(rng.integers(count[0], count[1] + 1))
        prof = profile or PROFILES[i % len(PROFILES)]
        base = through_waypoints(_waypoints(rng, m), LIM["velocity"], LIM["acceleration"], profile=prof)
        k = 1.0 if i % 2 == 0 else float(rng.uniform(1.0, 3.0))
        s = playback_samples(base, PERIOD, k)
        played = _played(s.times, s.q, s.qd, s.qdd, s.fields)
        try:
            check_path_limits(played, LIM["lower"], LIM["upper"], LIM["velocity"])
            accepted += 1
        except ValueError as exc:
            print(f"{case} plan {i}: {exc}")
        positions_only += s.fields == 1
        if i % 10 == 0:  # exact peaks (slower): the margin left to the tolerance
            worst = max(worst, float(np.max(peak_rates(played)[0] / LIM["velocity"])))
    print(f"\n{case}: {accepted}/{PLANS} accepted; worst interpolated velocity / limit on every 10th plan "
          f"1 + {worst - 1:.2e}; {positions_only} positions-only plans")
    assert accepted == PLANS
    assert worst <= 1.0 + 1e-8
    assert (positions_only > 0) == (case == "waypoints")  # only the linear profile through waypoints


@pytest.mark.parametrize("case", list(CASES))
def test_plan_samples_pipeline_is_accepted_and_not_slower_than_needed(case):
    """The whole ~/plan core (plan, effort stretch, sampling, verification) on random plans with the URDF's effort
    limits and with 0.4 of them (the stretch binds): accepted, no velocity stretch needed, the duration that
    of the exact-limit plan times the effort stretch (no margin taken off the limits)."""
    profile, count = CASES[case]
    rng = np.random.default_rng(7)
    stretched = 0
    for i in range(30):
        m = count if isinstance(count, int) else int(rng.integers(count[0], count[1] + 1))
        prof = profile or PROFILES[i % len(PROFILES)]
        effort = LIM["effort"] * (0.4 if i % 2 else 1.0)
        W = _waypoints(rng, m)
        try:
            plan = plan_samples(W, LIM["velocity"], LIM["acceleration"], prof, PERIOD, MODEL, effort_limits=effort,
                                names=MODEL.joint_names)
        except ValueError as exc:  # a static load beyond the halved limits, or linear through waypoints
            if prof == "linear" and m > 2:
                assert "profile linear through intermediate waypoints" in str(exc), exc
            else:
                assert "static effort" in str(exc) and i % 2, exc
            continue
        assert not (prof == "linear" and m > 2), "linear through waypoints must be refused by ~/plan"
        played = _played(plan.times, plan.q, plan.qd, plan.qdd, plan.fields)
        check_path_limits(played, LIM["lower"], LIM["upper"], LIM["velocity"], names=MODEL.joint_names)
        assert plan.velocity_stretch == 1.0
        assert np.all(np.abs(plan.effort) <= effort)
        exact = through_waypoints(W, LIM["velocity"], LIM["acceleration"], profile=prof).duration
        assert plan.duration == pytest.approx(exact * plan.scale, rel=1e-9, abs=1e-9)
        assert plan.scale == plan.effort_scale
        stretched += plan.effort_scale > 1.0
    assert stretched >= 3  # the premise: the effort stretch was exercised


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(2, 5), profile=st.sampled_from(PROFILES),
       period=st.sampled_from([1e-3, 4e-3, 0.01, 0.05, 0.3]), scale=st.floats(1.0, 5.0),
       fraction=st.floats(0.05, 1.0))
def test_property_any_period_scale_and_limits(seed, count, profile, period, scale, fraction):
    """Any sampling period, stretch, and velocity/acceleration bounds below the robot's: accepted (checked against
    the bounds the plan was made with)."""
    rng = np.random.default_rng(seed)
    v, a = LIM["velocity"] * fraction, LIM["acceleration"] * rng.uniform(0.05, 1.0)
    base = through_waypoints(_waypoints(rng, count), v, a, profile=profile)
    s = playback_samples(base, period, scale)
    check_path_limits(_played(s.times, s.q, s.qd, s.qdd, s.fields), LIM["lower"], LIM["upper"], v)


def test_samples_hold_the_breakpoints_and_guards():
    """A trapezoid's phase switches are samples (acceleration 0 there: the plateau's), with exact guard samples
    around; the interpolation reproduces the plan away from the guards."""
    base = through_waypoints(np.array([[0.0] * 6, [1.0, -0.5, 0.3, 2.0, 0.0, 1.0]]), LIM["velocity"],
                             LIM["acceleration"], profile="trapezoid")
    tau, tf = base.segments[0].tau, base.duration
    s = playback_samples(base, PERIOD)
    for b in (tau, tf - tau):
        i = int(np.argmin(np.abs(s.times - b)))
        assert abs(s.times[i] - b) <= 0.5e-9 and s.at_breakpoint[i] and np.all(s.qdd[i] == 0.0)
        for g in (b - 1e-4, b + 1e-4):
            assert np.min(np.abs(s.times - g)) <= 0.5e-9
    played = s.trajectory()
    t = np.linspace(0.0, s.times[-1], 20001)
    away = np.min(np.abs(t[:, None] - np.array([tau, tf - tau])[None, :]), axis=1) > 1.1e-4
    for x, y in zip(played.evaluate(t[away]), base.evaluate(t[away]), strict=True):  # up to the ns of the times
        np.testing.assert_allclose(x, y, rtol=1e-7, atol=1e-8)


def test_merge_boundary():
    """Breakpoints closer than the merge distance become one sample; at the distance they stay two."""
    gap = max(MIN_INTERVAL, 1e-3 * PERIOD)
    reps, first, last = _merge(np.array([0.0, 0.5, 0.5 + gap * (1 - 1e-6), 1.0]), gap)
    assert reps.tolist() == [0.0, 0.5, 1.0] and last.tolist() == [0, 2, 3]
    reps, _, _ = _merge(np.array([0.0, 0.5, 0.5 + gap * (1 + 1e-6), 1.0]), gap)
    assert reps.size == 4
    reps, first, last = _merge(np.array([0.0, 1.0 - gap / 2, 1.0]), gap)  # the end keeps its time
    assert reps.tolist() == [0.0, 1.0] and first.tolist() == [0, 1]


def test_positions_only_exactly_when_the_velocity_jumps():
    W = np.array([[0.0] * 6, [1.0] * 6, [0.0] * 6])
    assert playback_samples(through_waypoints(W[:2], 1.0, 1.0, "linear"), PERIOD).fields == 3
    assert playback_samples(through_waypoints(W, 1.0, 1.0, "linear"), PERIOD).fields == 1
    # collinear, same speed: the velocity is continuous, full fields
    straight = np.array([[0.0] * 6, [1.0] * 6, [2.0] * 6])
    assert playback_samples(through_waypoints(straight, 1.0, 1.0, "linear"), PERIOD).fields == 3
    assert playback_samples(through_waypoints(W, 1.0, 1.0, "trapezoid"), PERIOD).fields == 3


def _grid_only(traj, period, scale=1.0):
    """The former sampling (every period of the stretched plan, no breakpoint): its interpolation overshoots."""
    out = traj if scale == 1.0 else TimeScaledTrajectory(traj, scale)
    t = message_times(out.sample(period)[0])
    q, qd, qdd = out.evaluate(t)
    return PlaybackSamples(t, q, qd, qdd, 3, np.zeros(t.size, bool))


def test_verification_stretches_a_velocity_overshoot(monkeypatch):
    """The guard of plan_samples: with samples that miss the breakpoints the interpolated velocity overshoots (the
    premise, checked); the verification stretches by the measured peak and the result passes."""
    W = np.array([[0.0] * 6, [2.0, -1.5, 1.5, 3.0, 1.5, 3.0]])
    base = through_waypoints(W, LIM["velocity"], LIM["acceleration"], profile="trapezoid")
    with pytest.raises(ValueError, match="velocity limits"):
        check_path_limits(_grid_only(base, 0.0123).trajectory(), LIM["lower"], LIM["upper"], LIM["velocity"])
    monkeypatch.setattr(time_scaling, "playback_samples", _grid_only)
    plan = plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", 0.0123, MODEL)
    assert plan.velocity_stretch > 1.0
    check_path_limits(plan.played, LIM["lower"], LIM["upper"], LIM["velocity"])
    monkeypatch.undo()
    assert plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", 0.0123, MODEL).velocity_stretch == 1.0


def test_max_samples_counts_the_points_sent():
    """max_samples bounds the points actually sent (the period's and the breakpoints'): at the count accepted, one
    fewer refused (a controller refuses more than its max_trajectory_points)."""
    W = np.array([[0.0] * 6, [1.0, -0.5, 0.3, 2.0, 0.0, 1.0]])
    count = plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", PERIOD, MODEL).times.size
    assert count > round(through_waypoints(W, LIM["velocity"], LIM["acceleration"]).duration / PERIOD) + 1
    plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", PERIOD, MODEL, max_samples=count)
    with pytest.raises(ValueError, match=f"{count} samples exceed {count - 1}"):
        plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", PERIOD, MODEL, max_samples=count - 1)


def test_verification_refuses_a_position_outside():
    """No stretch moves a path: a waypoint beyond the (here tighter) position limits is refused with the cause."""
    W = np.array([[0.0] * 6, [2.0, -1.5, 1.5, 3.0, 1.5, 3.0]])
    with pytest.raises(ValueError, match="position limits"):
        plan_samples(W, LIM["velocity"], LIM["acceleration"], "trapezoid", PERIOD, MODEL, upper=LIM["upper"] * 0.5)
    # a start outside (an arm brought back) is allowed: the path moves inward from it
    start_out = W.copy()
    start_out[0, 0] = LIM["lower"][0] - 0.05
    plan = plan_samples(start_out, LIM["velocity"], LIM["acceleration"], "trapezoid", PERIOD, MODEL)
    check_path_limits(plan.played, LIM["lower"], LIM["upper"], LIM["velocity"], start=start_out[0])


# ----------------------------------------------------------------- check_path_limits at its boundaries
def _rest_to_rest(degree: int, distance: float, duration: float) -> tuple[SampledTrajectory, float]:
    """A rest-to-rest segment and its peak speed in closed form: linear D/T, cubic 3D/(2T) (001 eq. 8.8),
    quintic 15D/(8T) (8.12)."""
    t = np.array([0.0, duration])
    q = np.array([[0.0], [distance]])
    if degree == 1:
        return SampledTrajectory(t, q), distance / duration
    z = np.zeros((2, 1))
    if degree == 3:
        return SampledTrajectory(t, q, z), 1.5 * distance / duration
    return SampledTrajectory(t, q, z, z), 15.0 / 8.0 * distance / duration


@pytest.mark.parametrize("degree", [1, 3, 5])
def test_check_path_limits_velocity_boundary(degree):
    traj, peak = _rest_to_rest(degree, 0.7, 0.9)
    inside = peak / ((1 + PATH_RATE_TOLERANCE) * (1 - 1e-9))  # the peak at limit (1 + tol)(1 - 1e-9)
    outside = peak / ((1 + PATH_RATE_TOLERANCE) * (1 + 1e-6))  # ... at limit (1 + tol)(1 + 1e-6)
    check_path_limits(traj, -10.0, 10.0, inside)
    with pytest.raises(ValueError, match="velocity limits"):
        check_path_limits(traj, -10.0, 10.0, outside)


def test_check_path_limits_velocity_boundary_off_a_dyadic_point():
    """An interior peak at an irrational fraction of the segment (no subdivision lands on it)."""
    traj = SampledTrajectory([0.0, 1.0], [[0.0], [1.0]], [[0.3], [-0.2]])
    c = traj._coef[0, :, 0]  # qd = c1 + 2 c2 s + 3 c3 s^2: its peak at s = -c2 / (3 c3)
    s_star = -c[2] / (3 * c[3])
    peak = c[1] + 2 * c[2] * s_star + 3 * c[3] * s_star**2
    assert 0.0 < s_star < 1.0 and abs(s_star * 2**20 - round(s_star * 2**20)) > 1e-3
    check_path_limits(traj, -10.0, 10.0, peak / ((1 + PATH_RATE_TOLERANCE) * (1 - 1e-9)))
    with pytest.raises(ValueError, match="velocity limits"):
        check_path_limits(traj, -10.0, 10.0, peak / ((1 + PATH_RATE_TOLERANCE) * (1 + 1e-6)))


@pytest.mark.parametrize("top", [0.0, 1.3])
def test_check_path_limits_position_boundary(top):
    """A cubic going up and back (interior maximum at an irrational point): the upper limit just below the peak by
    the tolerance (1 - 1e-6) passes, by the tolerance (1 + 1e-6) fails; the same mirrored for the lower limit."""
    traj = SampledTrajectory([0.0, 1.0], [[top - 0.5], [top - 0.4]], [[1.1], [-0.7]])
    c = traj._coef[0, :, 0]
    disc = math.sqrt(c[2] ** 2 - 3 * c[1] * c[3])
    roots = [(-c[2] + sgn * disc) / (3 * c[3]) for sgn in (1, -1)]
    s_star = next(r for r in roots if 0 < r < 1 and 2 * c[2] + 6 * c[3] * r < 0)  # the maximum
    peak = c[0] + c[1] * s_star + c[2] * s_star**2 + c[3] * s_star**3
    tol = PATH_POSITION_TOLERANCE
    check_path_limits(traj, -10.0, peak - tol * (1 - 1e-6))
    with pytest.raises(ValueError, match="position limits"):
        check_path_limits(traj, -10.0, peak - tol * (1 + 1e-6))
    mirrored = SampledTrajectory([0.0, 1.0], -traj.positions, -traj.velocities)
    check_path_limits(mirrored, -peak + tol * (1 - 1e-6), 10.0)
    with pytest.raises(ValueError, match="position limits"):
        check_path_limits(mirrored, -peak + tol * (1 + 1e-6), 10.0)
