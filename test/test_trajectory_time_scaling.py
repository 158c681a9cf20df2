"""Uniform time scaling against effort limits (001 §8.3, Hollerbach): oracle = bisection on independent torques."""

import math

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf

from robot_dynamics import RobotModel
from robot_dynamics.trajectory import point_to_point, scale_to_effort_limits, through_waypoints

M, L, G, FV, FC = 2.0, 0.5, 9.81, 0.3, 0.2


def pendulum(q, qd, qdd):
    """Hand-derived 1-dof pendulum (angle from the downward vertical): m l^2 qdd + m g l sin q + Fv qd + Fc sign qd."""
    return M * L**2 * qdd + M * G * L * np.sin(q) + FV * qd + FC * np.sign(qd)


def bisect_scale(traj, torque, limit, times, lo=1.0, hi=64.0):
    """Smallest k with max |torque(q(t), qd/k, qdd/k^2)| <= limit on ``times`` (base-time samples), by bisection."""
    q, qd, qdd = traj.evaluate(times)

    def ok(k):
        return np.all(np.abs(torque(q, qd / k, qdd / k**2)) <= limit)

    assert ok(hi)
    if ok(lo):
        return lo
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def switch_times(traj) -> np.ndarray:
    """Phase switches of a point-to-point profile by hand (001 eqs. 8.15, 8.19, 8.36), both sides (1e-12 t_f off)."""
    tf = traj.duration
    b = [0.0, tf] + ([traj.tau, tf - traj.tau] if traj.tau is not None else []) + ([tf / 2] if traj.profile == "bang_bang" else [])
    b = np.array(b)
    return np.clip(np.concatenate([b * (1 - 1e-12), b * (1 + 1e-12), b - 1e-12 * tf, b + 1e-12 * tf]), 0.0, tf)


@pytest.mark.parametrize("profile", ["trapezoid", "quintic", "smooth_trapezoid", "bang_bang"])
def test_pendulum_smallest_stretch(profile):
    """The smallest stretch of the *continuous* profile: a dense grid plus both sides of every phase switch (the
    trapezoid's peak effort is at the end of its acceleration phase, on one side of the switch)."""
    traj = point_to_point([0.0], [math.pi / 2], 8.0, 40.0, profile)
    limit = 12.0  # static peak m g l = 9.81 N m, inertial m l^2 * 40 = 20 N m: infeasible unscaled
    res = scale_to_effort_limits(traj, pendulum, limit)
    times = np.sort(np.concatenate([np.linspace(0.0, traj.duration, 20001), switch_times(traj)]))
    k_ref = bisect_scale(traj, pendulum, limit, times)
    assert res.peak_ratio_before > 1.0
    # never below the oracle's states (a subset of the continuum), above by at most the grid's miss of a smooth peak
    assert res.scale > 1.0 and k_ref * (1 - 1e-12) <= res.scale <= k_ref * (1 + 1e-7), (res.scale, k_ref)
    if profile in ("trapezoid", "bang_bang"):  # the peak at a switch: the oracle has it
        assert res.scale == pytest.approx(k_ref, rel=1e-9)
    assert res.duration == pytest.approx(res.scale * traj.duration, rel=1e-12)
    assert res.peak_ratio <= 1.0 + 1e-12 and res.margin == pytest.approx(0.0, abs=1e-6)
    # the stretched trajectory really needs those efforts: q(t/k), qd/k, qdd/k^2 (Hollerbach)
    st = res.trajectory
    q, qd, qdd = st.evaluate(times * res.scale)
    q0, qd0, qdd0 = traj.evaluate(times)
    assert np.allclose(q, q0) and np.allclose(qd, qd0 / res.scale) and np.allclose(qdd, qdd0 / res.scale**2)
    assert np.max(np.abs(pendulum(q, qd, qdd))) <= limit * (1 + 1e-9)
    # any slower playback stays feasible
    for k in np.linspace(res.scale, 4 * res.scale, 7):
        assert np.max(np.abs(pendulum(q0, qd0 / k, qdd0 / k**2))) <= limit * (1 + 1e-9)


def test_feasible_trajectory_is_not_stretched_and_margin_reported():
    traj = point_to_point([0.0], [0.3], 0.5, 1.0, "trapezoid")
    res = scale_to_effort_limits(traj, pendulum, 10.0)
    assert res.scale == 1.0 and res.trajectory is traj
    times = np.concatenate([np.linspace(0, traj.duration, 20001), switch_times(traj)])
    ref = np.max(np.abs(pendulum(*traj.evaluate(times)))) / 10.0
    assert ref <= res.peak_ratio <= ref * (1 + 1e-9) and res.margin == pytest.approx(1 - ref)


def test_static_effort_too_large_is_an_error():
    traj = point_to_point([0.0], [math.pi / 2], 1.0, 1.0, "cubic")
    with pytest.raises(ValueError, match="static"):
        scale_to_effort_limits(traj, pendulum, 5.0)  # m g l sin(pi/2) = 9.81 > 5
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, pendulum, None)  # a plain callable needs limits
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, pendulum, [1.0, 2.0])
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, 3.0, 1.0)


def test_ur5_model_against_pinocchio_bisection():
    path = str(example_urdf("ur5"))
    model = RobotModel.from_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()

    def rnea(q, qd, qdd):  # independent oracle: Pinocchio's RNEA, loop over samples
        return np.array([pin.rnea(pm, data, a, b, c) for a, b, c in zip(q, qd, qdd, strict=True)])

    W = np.array([[0.0, -1.0, 1.2, -0.5, 0.3, 0.0], [1.5, -0.4, 0.2, -1.2, 1.0, 1.0], [0.5, -1.5, 1.8, 0.0, -0.5, 2.0]])
    traj = through_waypoints(W, 3 * model.limits["velocity"], 150.0, profile="quintic", via_velocities="auto")
    res = scale_to_effort_limits(traj, model, period=traj.duration / 400)
    # the continuous trajectory, 20x denser than the function's grid: Pinocchio once per state, then the exact
    # scaling of a friction-free model, Gamma(k) = g(q) + (rnea(q, qd, qdd) - g(q)) / k^2, bisected on k
    times = np.linspace(0.0, traj.duration, 400 * 20 + 1)
    q, qd, qdd = traj.evaluate(times)
    g = rnea(q, np.zeros_like(q), np.zeros_like(q))
    dyn = rnea(q, qd, qdd) - g
    lim = model.limits["effort"]
    k_ref = bisect_scale(_States(q, np.zeros_like(q), dyn), lambda _q, _v, d: g + d, lim, None)
    assert res.peak_ratio_before > 1.0
    assert k_ref * (1 - 1e-12) <= res.scale <= k_ref * (1 + 1e-7), (res.scale, k_ref)
    assert res.peak_ratio <= 1.0 + 1e-9
    assert np.max(np.abs(g + dyn / res.scale**2) / lim) <= 1.0 + 1e-9


def test_peak_rates_bound_the_interpolated_path():
    """Exact peaks of |qd|, |qdd| between the points: never below a dense sampling, and check_path_limits agrees."""
    from robot_dynamics.trajectory import SampledTrajectory, peak_rates
    from robot_dynamics.trajectory.sampled import check_path_limits

    rng = np.random.default_rng(3)
    for fields in (1, 2, 3):
        t = np.concatenate([[0.0], np.cumsum(rng.uniform(0.05, 0.3, 19))])
        p, v, a = rng.normal(size=(20, 3)), rng.normal(size=(20, 3)), 3 * rng.normal(size=(20, 3))
        traj = SampledTrajectory(t, p, v if fields > 1 else None, a if fields > 2 else None)
        pv, pa = peak_rates(traj)
        _, qd, qdd = traj.evaluate(np.linspace(0.0, traj.duration, 200_001))
        assert np.all(np.abs(qd).max(axis=0) <= pv * (1 + 1e-12)) and np.all(np.abs(qd).max(axis=0) >= pv * (1 - 1e-6))
        assert np.all(np.abs(qdd).max(axis=0) <= pa * (1 + 1e-12) + 1e-12)
        check_path_limits(traj, -np.inf, np.inf, pv, rate_tolerance=1e-9)
        with pytest.raises(ValueError, match="velocity"):
            check_path_limits(traj, -np.inf, np.inf, pv * (1 - 1e-5), rate_tolerance=0.0)


@pytest.mark.parametrize("slow", [0.3, 3.0])
def test_retime_to_limits_both_ways_pendulum(slow):
    """Optimal uniform scale, faster or slower than the input: the hand-derived pendulum by bisection on the same
    states (segment grid, both ends), the velocity bound by hand (|qd| / k <= v)."""
    from robot_dynamics.trajectory import SampledTrajectory, retime_to_limits
    from robot_dynamics.trajectory.time_scaling import segment_grid

    base = point_to_point([0.0], [math.pi / 2], 8.0, 40.0, "quintic")
    t, q, qd, qdd = base.sample(base.duration / 50)
    traj = SampledTrajectory(t * slow, q, qd / slow, qdd / slow**2)
    limit, vmax = 12.0, 20.0
    res = retime_to_limits(traj, pendulum, limit, vmax, time_quantum=1e-9)
    gq, gqd, gqdd = segment_grid(traj, 20)
    k_eff = bisect_scale(_States(gq, gqd, gqdd), pendulum, limit, None, lo=1e-3, hi=64.0)
    k_vel = 15.0 / 8.0 * (math.pi / 2) / base.duration / slow / vmax  # quintic peak speed 15/8 D / t_f
    assert res.binding == "effort" and k_eff > k_vel
    assert res.scale == pytest.approx(k_eff, rel=1e-5) and (res.scale < 1.0) == (slow > 1.0)
    assert res.velocity_scale == pytest.approx(k_vel, rel=1e-6)
    assert res.peak_ratio <= 1.0 and res.peak_velocity_ratio <= 1.0
    out = res.trajectory
    sub = (out.times[:-1, None] + np.diff(out.times)[:, None] * np.arange(10)[None, :] / 10).ravel()
    assert np.max(np.abs(pendulum(*out.evaluate(sub)))) <= limit  # 10 per interval: within the 20-per-segment grid
    # between the grid points the efforts may pass the limit by O((T / 20)^2): here 50 segments, 1.4e-6
    tq, tqd, tqdd = out.evaluate(np.linspace(0.0, res.duration, 20_001))
    assert np.max(np.abs(pendulum(tq, tqd, tqdd))) <= limit * (1 + 1e-5)
    # only_stretch keeps k >= 1
    assert retime_to_limits(traj, pendulum, limit, vmax, min_scale=1.0).scale >= 1.0


class _States:
    """A 'trajectory' that returns fixed states (for bisect_scale on a segment grid)."""

    def __init__(self, q, qd, qdd) -> None:
        self.states = (q, qd, qdd)

    def evaluate(self, _times):
        return self.states


def test_fit_samples_to_effort_limits_samples_and_duration():
    from robot_dynamics.trajectory import fit_samples_to_effort_limits

    traj = point_to_point([0.0], [math.pi / 2], 8.0, 40.0, "trapezoid")
    fit = fit_samples_to_effort_limits(traj, pendulum, 0.01, 12.0)
    assert fit.min_scale > 1.0 and fit.scale == fit.min_scale
    assert np.max(np.abs(pendulum(fit.q, fit.qd, fit.qdd))) <= 12.0
    np.testing.assert_allclose(fit.effort, pendulum(fit.q, fit.qd, fit.qdd), rtol=0, atol=0)
    k_ref = bisect_scale(traj, pendulum, 12.0, np.linspace(0.0, traj.duration, 20_001))
    assert fit.scale == pytest.approx(k_ref, rel=5e-3)  # the grid is 20x the samples, not exact at a phase switch
    with pytest.raises(ValueError, match="shorter than the minimum"):
        fit_samples_to_effort_limits(traj, pendulum, 0.01, 12.0, duration=traj.duration * fit.scale * 0.999)
    longer = fit_samples_to_effort_limits(traj, pendulum, 0.01, 12.0, duration=traj.duration * fit.scale * 2)
    assert longer.duration == pytest.approx(traj.duration * fit.scale * 2) and longer.peak_ratio < 1.0
    with pytest.raises(ValueError, match="exceed"):
        fit_samples_to_effort_limits(traj, pendulum, 1e-4, 12.0, max_samples=100)
