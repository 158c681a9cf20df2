"""The safety envelope (issue 29): every check at its boundary (just inside passes, just outside fails) and
a property test of each invariant.  Pure functions, no processes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.model.robots import load_model
from robot_dynamics.safety import (
    GAIN_MARGIN,
    LIMIT_RTOL,
    POSITION_MARGIN,
    VELOCITY_MARGIN,
    Refused,
    SafetyEnvelope,
    check_gains,
)
from robot_dynamics.trajectory.sampled import SampledTrajectory

NAMES = ("j1", "j2", "j3")
LOWER = np.array([-2.0, -1.0, -3.0])
UPPER = np.array([2.0, 1.5, 3.0])
VEL = np.array([3.0, 2.0, 5.0])
EFF = np.array([300.0, 150.0, 20.0])


def up(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def down(x: float) -> float:
    return float(np.nextafter(x, -np.inf))


@pytest.fixture
def env() -> SafetyEnvelope:
    return SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF)


def refused(cause: str, fn, *args, **kwargs) -> Refused:
    with pytest.raises(Refused) as info:
        fn(*args, **kwargs)
    assert info.value.cause == cause, str(info.value)
    return info.value


# ---------------------------------------------------------------------------------------------- construction
def test_from_model_takes_the_description_limits():
    model = load_model("rx90")
    env = SafetyEnvelope.from_model(model)
    lim = model.limits
    assert env.names == tuple(model.joint_names)
    for field in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(env, field), lim[field])
    assert (env.position_margin, env.velocity_margin) == (POSITION_MARGIN, VELOCITY_MARGIN)
    with pytest.raises(ValueError):  # the limits are read-only
        env.effort[0] = 1e9


def test_unset_limits_are_not_checked():
    env = SafetyEnvelope(("a",), [-np.inf], [np.inf], [0.0], [0.0])
    assert env.velocity[0] == np.inf and env.effort[0] == np.inf
    env.check_state(np.array([1e6]), np.array([1e6]))
    assert env.max_jump(0.1)[0] == np.inf


@pytest.mark.parametrize("kwargs", [{"position_margin": -1e-12}, {"velocity_margin": np.inf},
                                    {"jump_margin": np.nan}])
def test_margins_must_be_finite_and_non_negative(kwargs):
    with pytest.raises(ValueError):
        SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF, **kwargs)


def test_lower_above_upper_is_refused():
    with pytest.raises(ValueError, match="j2"):
        SafetyEnvelope(NAMES, LOWER, [2.0, -1.5, 3.0], VEL, EFF)


# ---------------------------------------------------------------------------------------------- effort limits
def test_effort_limits_may_lower_never_raise(env):
    np.testing.assert_array_equal(env.effort_limits([]), EFF)
    np.testing.assert_array_equal(env.effort_limits(None), EFF)
    np.testing.assert_array_equal(env.effort_limits(EFF), EFF)  # equal: accepted
    np.testing.assert_array_equal(env.effort_limits([100.0, 150.0, 1.0]), [100.0, 150.0, 1.0])
    at = EFF.copy()
    at[1] = EFF[1] * (1 + LIMIT_RTOL)  # within round-off of the description: accepted, capped to it
    assert env.effort_limits(at)[1] == EFF[1]
    beyond = EFF.copy()
    beyond[1] = EFF[1] * (1 + 3 * LIMIT_RTOL)
    with pytest.raises(ValueError, match="j2.*above the robot's limit 150"):
        env.effort_limits(beyond)
    with pytest.raises(ValueError, match="j1"):
        env.effort_limits([1e9, 1.0, 1.0])


@pytest.mark.parametrize("bad", [[0.0, 1, 1], [-1.0, 1, 1], [np.nan, 1, 1], [np.inf, 1, 1], [1.0, 1.0]])
def test_effort_limits_must_be_finite_positive_and_one_per_joint(env, bad):
    with pytest.raises(ValueError):
        env.effort_limits(bad)


def test_clip_effort_at_the_limits(env):
    lim = np.array([100.0, 150.0, 20.0])
    tau = np.array([100.0, -150.0, 19.0])
    np.testing.assert_array_equal(env.clip_effort(tau, lim), tau)  # on the limit: unchanged
    over = np.array([up(100.0), down(-150.0), 1e300])
    np.testing.assert_array_equal(env.clip_effort(over, lim), [100.0, -150.0, 20.0])
    # limits above the description's never widen it
    np.testing.assert_array_equal(env.clip_effort(np.array([1e9, -1e9, 1e9]), np.full(3, 1e12)), [300, -150, 20])
    refused("non_finite_output", env.clip_effort, np.array([np.nan, 0.0, 0.0]))
    refused("non_finite_output", env.clip_effort, np.array([0.0, np.inf, 0.0]))


def test_check_efforts_at_the_limit(env):
    eff = np.tile(EFF, (3, 1)) * np.array([[1], [-1], [0.5]])
    env.check_efforts(eff)  # exactly at the limits: accepted
    eff[2, 2] = up(EFF[2])
    exc = refused("effort_limits", env.check_efforts, eff)
    assert "points[2].effort of j3" in str(exc)
    lowered = np.array([300.0, 100.0, 20.0])
    eff = np.zeros((1, 3))
    eff[0, 1] = 100.0
    env.check_efforts(eff, lowered)
    eff[0, 1] = up(100.0)
    refused("effort_limits", env.check_efforts, eff, lowered)


@settings(max_examples=200, deadline=None)
@given(tau=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=3, max_size=3),
       lim=st.lists(st.floats(min_value=1e-6, max_value=1e12), min_size=3, max_size=3))
def test_property_no_command_leaves_the_description_limits(tau, lim):
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF)
    out = env.clip_effort(np.array(tau), np.array(lim))
    assert np.all(np.abs(out) <= EFF)
    try:
        used = env.effort_limits(lim)
    except ValueError:
        assert np.any(np.array(lim) > EFF * (1 + LIMIT_RTOL))
    else:
        assert np.all(used <= EFF)


# ---------------------------------------------------------------------------------------------- states
def test_position_margin_boundary(env):
    m = env.position_margin
    zero = np.zeros(3)
    for j in range(3):
        q = np.zeros(3)
        q[j] = UPPER[j] + m
        env.check_state(q, zero)  # exactly the margin outside: accepted
        q[j] = up(UPPER[j] + m)
        exc = refused("position_limits", env.check_state, q, zero)
        assert NAMES[j] in str(exc)
        q[j] = LOWER[j] - m
        env.check_state(q, zero)
        q[j] = down(LOWER[j] - m)
        refused("position_limits", env.check_state, q, zero)


def test_velocity_margin_boundary(env):
    q = np.zeros(3)
    vmax = VEL * (1 + env.velocity_margin)
    for j in range(3):
        qd = np.zeros(3)
        qd[j] = -vmax[j]
        env.check_state(q, qd)
        qd[j] = down(-vmax[j])
        exc = refused("velocity_limits", env.check_state, q, qd)
        assert NAMES[j] in str(exc)


def test_impossible_finite_states_are_refused(env):
    refused("position_limits", env.check_state, np.full(3, 1e300), np.zeros(3))
    refused("position_limits", env.check_state, np.array([10.0, 0, 0]), np.zeros(3))
    refused("velocity_limits", env.check_state, np.zeros(3), np.array([0.0, -1e300, 0.0]))


@settings(max_examples=300, deadline=None)
@given(q=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=3, max_size=3),
       qd=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=3, max_size=3))
def test_property_an_accepted_state_is_within_the_limits_and_margins(q, qd):
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF)
    q, qd = np.array(q), np.array(qd)
    try:
        env.check_state(q, qd)
    except Refused:
        return
    m = env.position_margin
    assert np.all(q >= LOWER - m) and np.all(q <= UPPER + m)
    assert np.all(np.abs(qd) <= VEL * (1 + env.velocity_margin))


def test_max_jump(env):
    np.testing.assert_array_equal(env.max_jump(0.0), np.full(3, env.jump_margin))
    np.testing.assert_allclose(env.max_jump(0.01), VEL * (1 + env.velocity_margin) * 0.01 + env.jump_margin)
    np.testing.assert_array_equal(env.max_jump(-1.0), env.max_jump(0.0))


@settings(max_examples=200, deadline=None)
@given(q=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=3, max_size=3))
def test_property_hold_target_is_inside_the_limits(q):
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF)
    h = env.hold_target(np.array(q))
    assert np.all(h >= LOWER) and np.all(h <= UPPER)
    inside = (np.array(q) >= LOWER) & (np.array(q) <= UPPER)
    np.testing.assert_array_equal(h[inside], np.array(q)[inside])


# ---------------------------------------------------------------------------------------------- plans
def line(q0, q1, duration=2.0, m=41):
    """A quintic rest-to-rest line sampled like a plan (positions, velocities, accelerations)."""
    t = np.linspace(0.0, duration, m)
    s = t / duration
    f = 10 * s**3 - 15 * s**4 + 6 * s**5
    fd = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
    fdd = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
    d = np.asarray(q1, float) - np.asarray(q0, float)
    return SampledTrajectory(t, q0 + f[:, None] * d, fd[:, None] * d, fdd[:, None] * d)


def test_check_path_accepts_a_path_inside(env):
    env.check_path(line(np.zeros(3), UPPER), start=np.zeros(3))


def test_check_path_refuses_a_path_beyond_a_position_limit(env):
    tol = 1e-6  # check_path_limits' default position tolerance
    env.check_path(line(np.zeros(3), UPPER + [0, tol, 0]), start=np.zeros(3))
    exc = refused("path_limits", env.check_path, line(np.zeros(3), UPPER + [0, 2 * tol, 0]), start=np.zeros(3))
    assert "j2" in str(exc)


def test_check_path_refuses_a_path_beyond_a_velocity_limit(env):
    # a quintic line's peak velocity is 15/8 d / T: put it just above and just below j1's limit
    d = VEL[0] * 2.0 * 8 / 15
    env.check_path(line(np.array([-1.8, 0, 0]), np.array([-1.8 + d * (1 - 1e-4), 0, 0])))
    exc = refused("path_limits", env.check_path, line(np.array([-1.8, 0, 0]), np.array([-1.8 + d * (1 + 1e-4), 0, 0])))
    assert "velocity limits of j1" in str(exc)


def test_a_refused_start_segment_says_so(env):
    """No point at t = 0: JTC's segment from the arm to the first point.  Refused there (the arm far from the first
    point), the refusal says so and by how much; refused later (the plan itself too fast), it does not."""
    t = np.array([0.1, 1.0])
    q = np.zeros((2, 3))
    v = np.zeros((2, 3))
    # from rest at 0 to rest at the first point in 0.1 s (cubic): peak velocity 1.5 x / 0.1, just above / below j1's
    x = VEL[0] * 0.1 / 1.5
    env.check_path(SampledTrajectory(t, q, v, start=np.array([-x * (1 - 1e-4), 0, 0])), start=np.array([-x, 0, 0]))
    exc = refused("path_limits", env.check_path, SampledTrajectory(t, q, v, start=np.array([-x * (1 + 1e-4), 0, 0])),
                  start=np.array([-x * (1 + 1e-4), 0, 0]))
    assert "in the segment from where the arm is to the first point" in str(exc) and "t = 0.1 s" in str(exc)
    assert f"j1 is {x * (1 + 1e-4):.4g} from it" in str(exc)
    # the same arm, the first point at t = 0: nothing is added, and a too-fast plan is not blamed on the start
    d = VEL[0] * 2.0 * 8 / 15 * (1 + 1e-4)
    late = line(np.zeros(3), np.array([d, 0, 0]))
    exc = refused("path_limits", env.check_path, late, start=np.zeros(3))
    assert "segment from where the arm is" not in str(exc)
    shifted = SampledTrajectory(late.times + 0.5, late.positions, late.velocities, late.accelerations,
                                start=np.zeros(3))  # started, but the start segment is at rest: not the cause
    exc = refused("path_limits", env.check_path, shifted, start=np.zeros(3))
    assert "segment from where the arm is" not in str(exc)


def test_an_arm_outside_its_limits_may_be_brought_back_never_farther(env):
    out = np.array([0.0, UPPER[1] + 0.04, 0.0])  # measured 0.04 beyond j2's upper limit (within the margin)
    env.check_path(line(out, np.zeros(3)), start=out)  # back toward the range: accepted
    exc = refused("path_limits", env.check_path, line(out, out + [0, 0.005, 0]), start=out)  # farther out
    assert "j2" in str(exc)
    lo, hi = env.path_bounds(out, out)
    assert hi[1] == out[1] and lo[1] == LOWER[1]
    # the bound never exceeds the margin, whatever the start says
    far = np.array([0.0, UPPER[1] + 1.0, 0.0])
    assert env.path_bounds(far)[1][1] == UPPER[1] + env.position_margin
    # ending outside the limits (where the arm would be held) is refused even from outside
    refused("path_limits", env.check_path, line(out, out - [0, 0.01, 0]), start=out)


@settings(max_examples=100, deadline=None)
@given(start=st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       goal=st.lists(st.floats(-5, 5), min_size=3, max_size=3))
def test_property_an_accepted_path_never_goes_farther_out_than_the_arm(start, goal):
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL * 100, EFF)
    start, goal = np.array(start), np.array(goal)
    traj = line(start, goal)
    try:
        env.check_path(traj, start=start)
    except Refused:
        return
    q = traj.evaluate(np.linspace(0, traj.duration, 2001))[0]
    tol = 1e-6
    allowed_hi = np.maximum(UPPER, np.minimum(start, UPPER + env.position_margin)) + tol
    allowed_lo = np.minimum(LOWER, np.maximum(start, LOWER - env.position_margin)) - tol
    assert np.all(q <= allowed_hi + 1e-12) and np.all(q >= allowed_lo - 1e-12)
    assert np.all(goal <= UPPER + tol) and np.all(goal >= LOWER - tol)


# ---------------------------------------------------------------------------------------------- gains
def test_gains_at_the_stability_bounds():
    period = 0.002
    kd_max = 2.0 / GAIN_MARGIN / period
    names = ["a", "b"]
    check_gains([kd_max, 1.0], [kd_max, 1.0], period, names)  # Kd T = 1 and Kp T = Kd: accepted
    with pytest.raises(ValueError, match="Kd of a"):
        check_gains([1.0, 1.0], [up(kd_max), 1.0], period, names)
    kp_max = 2.0 * 10.0 / GAIN_MARGIN / period
    check_gains([1.0, kp_max], [1.0, 10.0], period, names)
    with pytest.raises(ValueError, match="Kp of b"):
        check_gains([1.0, up(kp_max)], [1.0, 10.0], period, names)


def test_gains_of_the_issue_are_refused_and_defaults_accepted():
    from robot_dynamics.control.gains import computed_torque_gains

    kp, kd = computed_torque_gains(20.0, 1.0, 6)  # the controller's defaults at 500 Hz
    check_gains(kp, kd, 1 / 500, [f"j{i}" for i in range(6)])
    kp[0] = 1e9  # gains.joint1.p = 1e9 of the issue
    with pytest.raises(ValueError, match="Kp of j0"):
        check_gains(kp, kd, 1 / 500, [f"j{i}" for i in range(6)])


def test_torque_gains_are_judged_per_unit_inertia():
    period = 0.002
    a = np.array([2.0])
    check_gains([2.0 * 10.0 / period * 0.999], [2.0 * 10.0], period, ["a"], inertia=a)
    with pytest.raises(ValueError, match="per unit inertia"):
        check_gains([1.0], [2.0 / period * 1.001], period, ["a"], inertia=a)


@pytest.mark.parametrize("period", [0.0, -1.0, np.inf, np.nan])
def test_gains_need_a_positive_period(period):
    with pytest.raises(ValueError, match="period"):
        check_gains([1.0], [1.0], period, ["a"])


def _spectral_radius(kp: float, kd: float, period: float) -> float:
    """The sampled PD loop's closed-loop matrix (an oracle independent of the Jury conditions)."""
    T = period
    a = np.array([[1 - kp * T * T / 2, T - kd * T * T / 2], [-kp * T, 1 - kd * T]])
    return float(np.max(np.abs(np.linalg.eigvals(a))))


@settings(max_examples=300, deadline=None)
@given(kp=st.floats(1e-3, 1e7), kd=st.floats(1e-3, 1e5))
def test_property_accepted_gains_give_a_stable_sampled_loop(kp, kd):
    period = 0.002
    try:
        check_gains([kp], [kd], period, ["a"])
    except ValueError:
        return
    assert _spectral_radius(kp, kd, period) < 1.0


# ---------------------------------------------------------------------------------------------- positions only
ACC = np.array([10.0, 12.0, 20.0])


def test_positions_only_velocity_jumps_at_the_acceleration_bound():
    """Played linearly, a positions-only trajectory's velocity jumps at its points: each jump must be within what
    the acceleration limit makes in the shorter adjacent segment (from rest at the start, to rest at the end)."""
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL * 10, EFF, ACC)
    T = 0.4
    d = ACC[0] * T * T  # from rest: the jump d / T equals a T exactly
    t = np.array([0.0, T])
    env.check_path(SampledTrajectory(t, np.array([[0.0, 0, 0], [d, 0, 0]])))
    rtol = 1e-6  # check_path_limits' rate tolerance, shared
    over = d * (1 + 2 * rtol)
    exc = refused("path_limits", env.check_path, SampledTrajectory(t, np.array([[0.0, 0, 0], [over, 0, 0]])))
    assert "velocity of j1 jumps" in str(exc)
    # a reversal at an interior point: jump 2 d / T within a min(T, T)?  d = a T^2 / 2 at the bound
    d2 = ACC[1] * T * T / 2
    three = np.array([0.0, T, 2 * T])
    path = np.array([[0.0, 0, 0], [0, d2, 0], [0, 0, 0]])
    env.check_path(SampledTrajectory(three, path))
    path[1, 1] = d2 * (1 + 2 * rtol)
    exc = refused("path_limits", env.check_path, SampledTrajectory(three, path))
    assert "velocity of j2 jumps" in str(exc)
    # the same points with velocities (cubic, continuous velocity) are judged by the path check only
    env.check_path(SampledTrajectory(three, path, np.zeros((3, 3))))


def test_positions_only_reversal_of_the_simulated_arm_is_refused():
    """The case that drove the simulated RX-90 to 3.9 x its velocity limit and out of its limits: joint3 out and
    back by 1 rad at full speed, positions only."""
    model = load_model("rx90")
    env = SafetyEnvelope.from_model(model)
    v = model.limits["velocity"][2]
    T = 1.0 / v
    q = np.zeros((3, 6))
    q[1, 2] = 1.0
    refused("path_limits", env.check_path, SampledTrajectory([0.0, T, 2 * T], q), start=np.zeros(6))
    # a one-point hold (zero distance) is fine
    env.check_path(SampledTrajectory([0.2], np.zeros((1, 6)), start=np.zeros(6)), start=np.zeros(6))


def test_no_acceleration_limit_no_jump_check():
    env = SafetyEnvelope(NAMES, LOWER, UPPER, VEL * 100, EFF)
    assert np.all(np.isinf(env.acceleration))
    env.check_path(SampledTrajectory([0.0, 0.1, 0.2], np.array([[0.0, 0, 0], [1.0, 0, 0], [0.0, 0, 0]])))
