"""The limit guard (robot_dynamics/safety/limit_guard.py) at its boundaries, against oracles that are not its
formulas: the defining inequalities evaluated on a finely sampled motion, MuJoCo's accelerations, and a MuJoCo
RX-90 driven by an adversary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.model.robots import load_model
from robot_dynamics.safety import SafetyEnvelope
from robot_dynamics.safety import limit_guard as lg

B, DT, VMAX = 200.0, 0.01, 6.0


def one_joint(period: float = DT, braking: float = B, vmax: float = VMAX) -> lg.LimitGuard:
    return lg.LimitGuard(np.array([-1.0]), np.array([1.0]), np.array([vmax]), np.array([braking]), period)


def upper(guard: lg.LimitGuard, q: float, v: float, age: float = 0.0) -> float:
    return float(guard.acceleration_bounds(np.array([q]), np.array([v]), age)[1][0])


def motion(q: float, v: float, a: float, dt: float, n: int = 2001) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities of constant acceleration ``a`` over [0, dt], sampled."""
    t = np.linspace(0.0, dt, n)
    return q + v * t + 0.5 * a * t * t, v + a * t


def stoppable(q: float, v: float, braking: float = B, limit: float = 1.0) -> bool:
    """The oracle of viability: braking at ``braking`` from (q, v) stops at or before ``limit``."""
    return v <= 0.0 or q + v * v / (2.0 * braking) <= limit + 1e-12


# ---------------------------------------------------------------- the bound at its boundary
@pytest.mark.parametrize("q, v", [(0.0, 0.0), (0.5, 3.0), (0.9, 4.0), (0.97, 1.0), (0.2, 5.9)])
def test_upper_bound_is_the_largest_acceleration_that_stays_stoppable(q, v):
    """Constant a_hi over δt: the motion stays inside and ends stoppable (or at the velocity limit); a_hi + 1e-6
    breaks one of the two (the bound is tight)."""
    g = one_joint()
    a = upper(g, q, v)
    qs, vs = motion(q, v, a, DT)
    assert qs.max() <= 1.0 + 1e-12 and vs.max() <= VMAX + 1e-9 and stoppable(qs[-1], vs[-1])
    qs, vs = motion(q, v, a + 1e-6, DT)
    assert qs.max() > 1.0 or vs.max() > VMAX or not stoppable(qs[-1], vs[-1], limit=1.0)


def test_on_the_braking_curve_the_bound_brakes_at_b():
    """q̇ = sqrt(2 B d): a_hi -> −B as δt -> 0 (continuous-time braking curve)."""
    d = 0.3
    v = np.sqrt(2 * B * d)
    for dt, tol in ((1e-3, 0.02), (1e-5, 2e-4)):
        assert upper(one_joint(dt), 1.0 - d, v) == pytest.approx(-B, rel=tol)


def test_velocity_limit_bound():
    g = one_joint(braking=1e9)  # viability far away: the velocity bound alone
    assert upper(g, 0.0, VMAX - 0.5) == pytest.approx(0.5 / DT)
    assert upper(g, 0.0, VMAX) == pytest.approx(0.0, abs=1e-9)
    g = one_joint(braking=1e9)
    assert upper(g, -0.9, VMAX + 100.0) == pytest.approx(-100.0 / DT)  # back to the velocity limit in δt ...
    g = lg.LimitGuard(np.array([-1e6]), np.array([1e6]), np.array([VMAX]), np.array([1e3]), DT)
    assert upper(g, 0.0, VMAX + 100.0) == -1e3  # ... never braking harder than B for it


def test_not_viable_brakes_at_least_at_b():
    """Beyond the braking curve the limit cannot be kept with B: at least B (as hard as the effort allows)."""
    g = one_joint()
    q, v = 0.9, np.sqrt(2 * B * 0.1) * 1.5
    assert upper(g, q, v) <= -B
    g = one_joint(period=1e-3)
    q, v = 0.999, 100.0  # no real root: −B
    assert upper(g, q, v) == -B


def test_when_both_sides_cannot_hold_the_side_moved_toward_wins():
    """A long δt (an old state): braking for the upper limit, held for all of δt, would turn the joint back past
    the lower one; moving up, the upper side's bound is used, moving down the lower side's."""
    g = one_joint(period=0.1875, braking=228.0, vmax=np.inf)
    v = np.sqrt(2 * 228.0)
    lo, hi = g.acceleration_bounds(np.array([0.0]), np.array([v]))
    assert lo[0] == hi[0] == pytest.approx(-228.0, rel=1e-6)
    lo, hi = g.acceleration_bounds(np.array([0.0]), np.array([-v]))
    assert lo[0] == hi[0] == pytest.approx(228.0, rel=1e-6)


def test_turning_back_within_the_period_keeps_the_farthest_point_inside():
    """A state close to the limit moving toward it: the bound turns the joint back within δt; the farthest point,
    not the end, is what stays inside (the case a bound on the end position alone gets wrong)."""
    g = one_joint(period=0.05)
    q, v = 1.0 - 0.0092, 1.834
    a = upper(g, q, v)
    assert v + a * 0.05 < 0  # turns within the period
    qs, _ = motion(q, v, a, 0.05)
    assert qs.max() <= 1.0 + 1e-12
    assert a == pytest.approx(-v * v / (2 * 0.0092))  # the farthest point exactly at the limit


def test_beyond_the_limit_it_is_brought_back():
    g = one_joint()
    k_v = min(lg.RETURN_GAIN, 0.5 / DT)
    d = 0.02  # 0.02 beyond the upper limit, at rest: back at k_r d
    assert upper(g, 1.0 + d, 0.0) == pytest.approx(max(-B, k_v * -lg.RETURN_RATE * d))
    # already coming back faster than that: no push outward
    assert upper(g, 1.0 + d, -1.0) > 0
    lo, hi = g.acceleration_bounds(np.array([1.0 + d]), np.array([0.0]))
    assert lo[0] <= hi[0] < 0


def test_the_age_of_the_state_lengthens_the_horizon():
    g = one_joint()
    assert upper(g, 0.0, 0.0, age=0.2) == upper(one_joint(DT + 0.2), 0.0, 0.0)
    assert upper(g, 0.0, 0.0, age=-1.0) == upper(g, 0.0, 0.0)  # a stamp ahead of the clock: no shorter horizon


def test_at_the_limit_still_moving_toward_it_the_bound_stays_finite():
    g = one_joint()
    assert upper(g, 1.0, 1e-3) == -lg.MAX_BRAKING * B
    assert upper(g, 1.0 - 1e-12, 1.0) == -lg.MAX_BRAKING * B


def test_unlimited_joint_is_not_bounded():
    g = lg.LimitGuard(np.array([-np.inf]), np.array([np.inf]), np.array([np.inf]), np.array([B]), DT)
    lo, hi = g.acceleration_bounds(np.array([1e6]), np.array([1e3]))
    assert lo[0] == -np.inf and hi[0] == np.inf


def test_a_guard_refuses_a_bad_period_or_braking():
    with pytest.raises(ValueError, match="period"):
        one_joint(period=0.0)
    with pytest.raises(ValueError, match="braking"):
        one_joint(braking=0.0)
    assert lg.LimitGuard.for_loop(np.array([-1.0]), np.array([1.0]), np.array([1.0]), np.array([B]), 500.0).period \
        == lg.GUARD_HORIZON
    assert lg.LimitGuard.for_loop(np.array([-1.0]), np.array([1.0]), np.array([1.0]), np.array([B]), 10.0).period \
        == pytest.approx(lg.GUARD_PERIODS / 10.0)


@settings(max_examples=300, deadline=None)
@given(d=st.floats(1e-9, 2.0), frac=st.floats(0.0, 1.0), dt=st.floats(1e-4, 0.2), b=st.floats(1.0, 500.0))
def test_property_every_stoppable_state_stays_stoppable(d, frac, dt, b):
    """From any stoppable state inside, the acceleration a_hi (or anything below it, down to −B) held for δt keeps
    the joint inside during the period and stoppable at its end (oracle: the sampled motion)."""
    g = one_joint(period=dt, braking=b, vmax=np.inf)
    q = 1.0 - d
    v = frac * np.sqrt(2 * b * d)  # stoppable
    a = upper(g, q, v)
    assert a >= -b * (1 + 1e-6)  # never more than B from a stoppable state (round-off near the limit)
    for a_used in (a, (a - b) / 2 if a > -b else a):
        qs, vs = motion(q, v, a_used, dt)
        assert qs.max() <= 1.0 + 1e-9 and stoppable(qs[-1], vs[-1], b, 1.0 + 1e-9)


# ---------------------------------------------------------------- the robot
@pytest.fixture(scope="module")
def rx90():
    m = load_model("rx90")
    return m, SafetyEnvelope.from_model(m), lg.sampled_extremes(m)


def test_check_holding_at_its_boundary(rx90):
    m, env, ext = rx90
    need = (1 + lg.HOLD_MARGIN) * ext.gravity_max
    effort = env.effort.copy()
    effort[1] = need[1]
    lg.check_holding(effort, ext.gravity_max, m.joint_names)  # exactly enough: accepted
    effort[1] = np.nextafter(need[1], 0)
    with pytest.raises(ValueError, match="joint2 .* below .* could not hold itself up"):
        lg.check_holding(effort, ext.gravity_max, m.joint_names)


def test_sampled_extremes_bound_the_gravity_and_inertia(rx90):
    """Against configurations the sampler did not draw: the sampled gravity maximum is within 5 % of the true one
    (a dense scan of joint2/joint3, where the RX-90's gravity lives), the inertias bracket A_jj within 10 %."""
    m, _, ext = rx90
    lim = m.limits
    g2, g3 = np.meshgrid(np.linspace(lim["lower"][1], lim["upper"][1], 121),
                         np.linspace(lim["lower"][2], lim["upper"][2], 121))
    q = np.zeros((g2.size, 6))
    q[:, 1], q[:, 2] = g2.ravel(), g3.ravel()
    dense = np.abs(m.gravity_torques(q)).max(axis=0)
    # within 5 % of the dense scan, which HOLD_MARGIN (10 %) covers
    assert np.all(ext.gravity_max[1:3] >= 0.95 * dense[1:3])
    diag = np.diagonal(m.inertia_matrix(np.random.default_rng(7).uniform(lim["lower"], lim["upper"], (200, 6))),
                       axis1=1, axis2=2)
    assert np.all(diag.min(0) >= ext.inertia_min * 0.9) and np.all(diag.max(0) <= ext.inertia_max * 1.1)


def test_braking_acceleration(rx90):
    _, env, ext = rx90
    cap = (env.effort - ext.gravity_max) / ext.inertia_max
    b = lg.braking_acceleration(env.effort, ext)
    np.testing.assert_allclose(b, lg.BRAKING_FRACTION * cap)
    big = np.full(6, 1e6)
    np.testing.assert_allclose(lg.braking_acceleration(env.effort, ext, big), cap)  # at most the capability
    small = np.full(6, 1e-3)
    np.testing.assert_allclose(lg.braking_acceleration(env.effort, ext, small), lg.BRAKING_FRACTION * cap)
    acc = lg.BRAKING_FRACTION * cap * 1.5  # a configured limit above half the capability: used
    np.testing.assert_allclose(lg.braking_acceleration(env.effort, ext, acc), acc)
    assert np.all(lg.braking_acceleration(ext.gravity_max * 0.5, ext) == lg.MIN_BRAKING)


def test_apply_keeps_the_command_inside_and_changes_only_what_it_must(rx90):
    """Inside the bounds: the same array.  Outside: MuJoCo's acceleration of the new command is the law's, clipped
    to the bounds (the guarded joint at its bound, the others unchanged)."""
    from robot_dynamics.sim.simulator import MujocoArm

    m, env, ext = rx90
    arm = MujocoArm(m)  # its friction is the model's (viscous, Coulomb)
    g = lg.LimitGuard.for_loop(m.limits["lower"], m.limits["upper"], env.velocity,
                               lg.braking_acceleration(env.effort, ext, env.acceleration), 500.0)
    q = np.array([0.1, -0.2, 0.3, 0.0, 0.5, 0.0])
    qd = np.zeros(6)
    tau = m.gravity_torques(q)
    assert g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics) is tau
    q[4] = m.limits["upper"][4] - 0.01  # joint5 near its upper limit, pushed up hard
    qd[4] = 1.0
    tau = m.gravity_torques(q) + np.array([0, 0, 0, 0, 30.0, 0])
    out = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics)
    assert out is not tau
    lo, hi = g.acceleration_bounds(q, qd)
    a_law = arm.accelerations(q, qd, tau)[0]
    a_out = arm.accelerations(q, qd, out)[0]
    assert a_law[4] > hi[4]
    assert a_out[4] == pytest.approx(hi[4], rel=1e-6, abs=1e-6)
    np.testing.assert_allclose(np.delete(a_out, 4), np.delete(a_law, 4), rtol=1e-6, atol=1e-6)
    bad = np.full(6, np.nan)
    assert g.apply(bad, q, qd, m.forward_dynamics, m.inverse_dynamics) is bad


@pytest.mark.parametrize("hold", [1, 25])
def test_a_mujoco_rx90_pushed_at_full_effort_stays_inside(rx90, hold):
    """An adversary commands ± the effort limits on every joint (toward the limits, then away and back), each
    command held ``hold`` periods of 2 ms (25: a loop 50 ms late); the guard's command, clipped to the limits,
    drives MuJoCo: the arm never leaves its limits by more than 0.02 rad and is far beyond without the guard."""
    from robot_dynamics.sim.simulator import MujocoArm

    m, env, ext = rx90
    m.compile("inverse_dynamics", "forward_dynamics")
    period = 0.002
    g = lg.LimitGuard.for_loop(m.limits["lower"], m.limits["upper"], env.velocity,
                               lg.braking_acceleration(env.effort, ext, env.acceleration), 1 / period)
    lower, upper_ = np.asarray(m.limits["lower"]), np.asarray(m.limits["upper"])

    def run(guarded: bool) -> float:
        arm = MujocoArm(m, timestep=0.001)
        arm.reset(np.zeros(6))
        worst, tau = -np.inf, np.zeros(6)
        for k in range(1500):
            s = arm.state()
            if k % hold == 0:
                sign = 1.0 if (k // 500) % 2 == 0 else -1.0
                tau = sign * env.effort * np.array([1, -1, 1, -1, 1, -1])
                if guarded:
                    tau = g.apply(tau, s.q, s.qd, m.forward_dynamics, m.inverse_dynamics)
                tau = np.clip(tau, -env.effort, env.effort)
            arm.step(tau, 2)
            q = arm.state().q
            worst = max(worst, float(np.max(np.maximum(q - upper_, lower - q))))
        return worst

    assert run(True) <= 0.02
    assert run(False) > 1.0  # the adversary is one


# ------------------------------------------------------------------ the guard's command within the effort limits
def _guard(m, env, ext, rate=500.0):
    return lg.LimitGuard.for_loop(m.limits["lower"], m.limits["upper"], env.velocity,
                                  lg.braking_acceleration(env.effort, ext, env.acceleration), rate)


def test_the_effort_clip_no_longer_undoes_the_guard(rx90):
    """An adversary pushes joint1 (at its lower limit) and joint5 (at its upper limit) with the whole effort: the
    guard's command A a' + H asks more than the limits of the shoulder, and clipping it afterwards (what the
    controller did) accelerated joint5 past its bound through the coupling; with the limits given to the guard, its
    command is within them and every acceleration inside the bounds."""
    m, env, ext = rx90
    g = _guard(m, env, ext)
    q = np.array([-2.7925, 0.698, -0.7398, -1.66, 2.0951, -0.8588])
    qd = np.array([-3e-4, 3.4149, 4.9831, -6.7581, 3.3e-3, -10.1071])
    tau = np.array([1.0, -1.0, 1.0, 1.0, 1.0, 1.0]) * env.effort
    lo, hi = g.acceleration_bounds(q, qd)
    naive = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics)
    assert np.any(np.abs(naive) > env.effort)  # precondition: the guard alone asks beyond the limits
    a_naive = m.forward_dynamics(q, qd, np.clip(naive, -env.effort, env.effort))
    assert np.max((a_naive - hi) / g.braking) > 0.01  # just outside: the clip breaks joint5's bound
    out = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics, effort=env.effort, inertia=m.inertia_matrix)
    assert np.all(np.abs(out) <= env.effort)
    a = m.forward_dynamics(q, qd, out)
    assert np.all(a <= hi + 1e-6 * g.braking) and np.all(a >= lo - 1e-6 * g.braking)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_guarded_commands_are_within_the_effort_limits_and_unchanged_when_they_fit(rx90, seed):
    m, env, ext = rx90
    g = _guard(m, env, ext)
    rng = np.random.default_rng(seed)
    lower, upper = np.asarray(m.limits["lower"]), np.asarray(m.limits["upper"])
    q = rng.uniform(lower - 0.02, upper + 0.02)
    at_limit = rng.random(6) < 0.3  # some joints at a limit exactly
    q[at_limit] = np.where(rng.random(6) < 0.5, lower, upper)[at_limit]
    qd = rng.uniform(-1.0, 1.0, 6) * env.velocity
    tau = rng.choice([-1.0, 1.0], 6) * env.effort * rng.uniform(0.2, 1.0, 6)
    naive = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics)
    out = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics, effort=env.effort, inertia=m.inertia_matrix)
    assert np.all(np.abs(out) <= env.effort)
    if np.all(np.abs(naive) <= env.effort):  # the guard's own command fits: nothing else changes
        np.testing.assert_array_equal(out, naive)
    else:  # never farther outside the bounds than the clip after the guard (what the controller sent before)
        lo, hi = g.acceleration_bounds(q, qd)

        def excess(x):
            a = m.forward_dynamics(q, qd, np.clip(x, -env.effort, env.effort))
            return float(np.sum(np.maximum(np.maximum(a - hi, lo - a), 0.0) / g.braking))

        assert excess(out) <= excess(naive) * (1 + 1e-9) + 1e-12


def test_within_effort_gives_the_target_when_it_is_within_reach(rx90):
    m, env, ext = rx90
    q, qd = np.array([0.3, -0.5, 0.8, 0.2, -0.4, 1.0]), np.array([0.5, -0.3, 0.2, 1.0, -1.0, 2.0])
    A, H = m.inertia_matrix(q), m.inverse_dynamics(q, qd, np.zeros(6))
    target = np.array([1.0, -2.0, 3.0, -4.0, 5.0, -6.0])
    gamma = lg.within_effort(A, H, target, env.effort, np.ones(6))
    np.testing.assert_allclose(gamma, m.inverse_dynamics(q, qd, target), rtol=1e-9, atol=1e-9)
    far = lg.within_effort(A, H, 1e4 * target, env.effort, np.ones(6))  # out of reach: at the limits, not beyond
    assert np.all(np.abs(far) <= env.effort) and np.any(np.isclose(np.abs(far), env.effort))


@pytest.mark.parametrize("seed", [1, 4])
def test_an_adversary_in_random_sign_patterns_keeps_the_arm_inside(rx90, seed):
    """± the effort limits in a random sign pattern every 0.2 s, a fresh command every 2 ms, on MuJoCo's RX-90: the
    guard with the limits keeps the arm within 0.005 rad of its limits and every cycle inside the bounds."""
    from robot_dynamics.sim.simulator import MujocoArm

    m, env, ext = rx90
    m.compile("inverse_dynamics", "forward_dynamics")
    g = _guard(m, env, ext)
    lower, upper = np.asarray(m.limits["lower"]), np.asarray(m.limits["upper"])
    rng = np.random.default_rng(seed)
    arm = MujocoArm(m, timestep=0.001)
    arm.reset(rng.uniform(lower, upper) * 0.5)
    worst, outside = -np.inf, 0
    for k in range(3000):
        s = arm.state()
        if k % 100 == 0:
            sign = rng.choice([-1.0, 1.0], 6)
        out = g.apply(sign * env.effort, s.q, s.qd, m.forward_dynamics, m.inverse_dynamics, effort=env.effort,
                      inertia=m.inertia_matrix)
        lo, hi = g.acceleration_bounds(s.q, s.qd)
        a = m.forward_dynamics(s.q, s.qd, out)
        outside += bool(np.any(a > hi + 1e-6 * g.braking) or np.any(a < lo - 1e-6 * g.braking))
        arm.step(out, 2)
        worst = max(worst, float(np.max(np.maximum(arm.state().q - upper, lower - arm.state().q))))
    assert outside == 0
    assert worst <= 0.005


def test_the_shipped_drive_watchdog_is_within_the_guard_horizon():
    """The guard bounds each command as if it held GUARD_HORIZON s; the simulated drive of the shipped
    configuration must not hold one longer (it held 0.1 s: a stalled controller's last command, within the bounds
    for 50 ms, took joint5 0.052 rad past its limit in CI)."""
    from pathlib import Path

    import yaml

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "robot_dynamics.yaml").read_text())
    timeout = cfg["/**/mujoco_sim"]["ros__parameters"]["command_timeout"]
    assert 0.0 < timeout <= lg.GUARD_HORIZON


def test_a_law_just_past_a_velocity_bound_keeps_its_motion(rx90):
    """The task-space law starting a move at rest, as the controller node computed it (shoulder and elbow saturated,
    the wrist 8 rad/s^2 past its velocity bound): the guard's A a' + H asks 0.3 N m more than the elbow's limit; the
    command within the limits keeps every acceleration inside the bounds and near the law's (a guard that braked to
    rest there held the arm still: the task-space node test never reached its pose)."""
    m, env, ext = rx90
    g = _guard(m, env, ext)
    q, qd = np.array([0.5, -0.4, 0.6, 0.5, 0.4, -0.5]), np.array([0.0, 0.0, 0.001, -0.002, 0.002, -0.002])
    tau = np.array([-299.9, -89.3, -150.0, -2.9, 11.0, 6.3])
    lo, hi = g.acceleration_bounds(q, qd)
    a_tau = m.forward_dynamics(q, qd, tau)
    naive = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics)
    assert a_tau[4] > hi[4] and np.any(np.abs(naive) > env.effort)  # preconditions: the case of the fix
    out = g.apply(tau, q, qd, m.forward_dynamics, m.inverse_dynamics, effort=env.effort, inertia=m.inertia_matrix)
    assert np.all(np.abs(out) <= env.effort)
    a = m.forward_dynamics(q, qd, out)
    assert np.all(a <= hi + 1e-6 * g.braking) and np.all(a >= lo - 1e-6 * g.braking)
    assert np.max(np.abs(a - np.clip(a_tau, lo, hi)) / g.braking) < 0.05  # the law's motion, not a stop
