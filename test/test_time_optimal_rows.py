"""The pieces of the time-optimal parameterization (robot_dynamics.trajectory.optimal_timing) tested alone: the
velocity rows that hold on every sample, the reversals found in closed form and by bisection, the rows' limit scaling
and margin, and the check's ratios against a direct evaluation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.model.robots import load_model
from robot_dynamics.trajectory.optimal_timing import (
    CHECK_THETA,
    Limits,
    PathTimeLaw,
    _check,
    _columns,
    _grid,
    _rowmax,
    _Rows,
    _Samples,
    reversals,
)
from robot_dynamics.trajectory.paths import spline_path

RX90 = load_model("rx90").replace(Fv=np.zeros(6))  # no viscous term: the rows without its tangent are exact
VEL = RX90.limits["velocity"]


def _samples(seed: int, m: int = 49, grid: int = 40) -> _Samples:
    w = np.random.default_rng(seed).uniform(-2.0, 2.0, (4, 6))
    p = spline_path(w)
    return _Samples(p, _grid(p, grid), np.linspace(0.0, 1.0, m), VEL)


def _X(samples: _Samples) -> np.ndarray:
    """1 / max_j (q'_j / v_j)^2 at every sample (N, M), straight from the path."""
    s, th = samples.s, samples.theta
    dq = samples.path.evaluate((s[:-1, None] + th * np.diff(s)[:, None]).ravel())[1]
    with np.errstate(divide="ignore"):
        return (1.0 / np.max(np.abs(dq) / VEL, axis=1) ** 2).reshape(s.size - 1, th.size)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([5, 9, 17]))
def test_velocity_rows_hold_on_every_sample_between_them(seed, points):
    samples = _samples(seed)
    theta_v, bound = samples.velocity_rows(points)
    X = _X(samples)
    # any x linear in theta under the bounds at the rows is under their chord; the chord must stay under X
    chord = np.stack([np.interp(samples.theta, theta_v, b) for b in bound])
    assert np.all(chord <= X * (1.0 + 1e-12))
    assert np.all(bound >= 0.0)
    idx = np.searchsorted(samples.theta, theta_v)
    assert np.all(bound <= X[:, idx] * (1.0 + 1e-12))  # never above the bound itself


def test_velocity_rows_are_lowered_no_more_than_needed():
    samples = _samples(3)
    theta_v, bound = samples.velocity_rows(17)
    X = _X(samples)
    idx = np.searchsorted(samples.theta, theta_v)
    lowered = bound < X[:, idx] * (1.0 - 1e-12)
    assert np.any(lowered), "the path should have convex stretches of X between rows"
    # just outside: raising a lowered bound by 1e-6 of it puts the chord above X at some sample
    i, k = np.argwhere(lowered)[0]
    raised = bound[i].copy()
    raised[k] *= 1.0 + 1e-6
    assert np.any(np.interp(samples.theta, theta_v, raised) > X[i] * (1.0 + 1e-12))


def test_reversals_in_closed_form_equal_the_bisection_between_samples():
    samples = _samples(7)
    seg, th = reversals(samples)
    assert seg.size >= 2, "the path should make joints reverse"
    blind = _Samples(dataclasses.replace(samples.path, velocity_zeros=None), samples.s, samples.theta, VEL)
    seg_b, th_b = reversals(blind)
    order, order_b = np.lexsort((th, seg)), np.lexsort((th_b, seg_b))
    np.testing.assert_array_equal(seg[order], seg_b[order_b])
    np.testing.assert_allclose(th[order], th_b[order_b], atol=1e-11)


def _setup(seed: int = 5, margin: float = 0.0):
    samples = _samples(seed)
    p, s = samples.path, samples.s
    lim = Limits(0.35 * RX90.limits["effort"], VEL, np.full(6, 20.0))
    cols = _columns(p, RX90.inverse_dynamics, s, lim, samples, True, True)
    co, theta, active = cols.stacked()
    w = 2.0 * theta * np.diff(s)[:, None]
    vt, Xv = samples.velocity_rows(17)
    return samples, lim, _Rows(co, w, active, lim, (2.0 * vt * np.diff(s)[:, None], Xv), margin), co, w


def test_rows_scale_their_limits_and_keep_their_margin():
    samples, lim, rows, co, w = _setup(margin=0.0)
    _, _, rows_m, _, _ = _setup(margin=0.01)
    N = samples.s.size - 1
    Au, Ax, C = rows(np.ones(N), None)
    Au_h, Ax_h, C_h = rows(np.full(N, 0.5), None)
    np.testing.assert_array_equal(Au, Au_h)
    np.testing.assert_array_equal(Ax, Ax_h)
    K, n = co.a.shape[1], 6
    main = slice(0, K * 4 * n)
    both = np.isfinite(C[:, main])
    # effort rows: C = L - sign c; halving the scale removes L / 2
    e_plus = C[:, :n] - C_h[:, :n]
    np.testing.assert_allclose(e_plus, np.broadcast_to(lim.effort / 2.0, e_plus.shape), rtol=1e-12)
    # the velocity rows scale with sd^2: by 1/4
    vel = slice(K * 4 * n, None)
    np.testing.assert_allclose(C_h[:, vel], C[:, vel] / 4.0, rtol=1e-12)
    # the margin lowers every limit: effort and acceleration rows by margin L, the velocity rows' sd^2 bounds
    _, _, C_m = rows_m(np.ones(N), None)
    expected = np.tile(0.01 * np.concatenate([lim.effort] * 2 + [lim.acceleration] * 2), (N, K))
    np.testing.assert_allclose(C[:, main][both] - C_m[:, main][both], expected[both], rtol=1e-9)
    np.testing.assert_allclose(C_m[:, vel], C[:, vel] * 0.99**2, rtol=1e-12)  # the velocity under 0.99 v


def test_check_ratios_equal_a_direct_evaluation_of_the_law():
    samples, lim, rows, co, w = _setup()
    from robot_dynamics.trajectory.reachability import solve

    s = samples.s
    x, u = solve(*rows(np.ones(s.size - 1), None), np.diff(s), 0.0, 0.0, s, "numpy")
    law = PathTimeLaw(samples.path, s, x, u)
    effort, velocity, acceleration = _check(law, RX90.inverse_dynamics, lim, samples)
    i = 7  # one segment, every sample of it, evaluated through the law's own time
    t = law.times[i] + np.array([0.25, 0.5]) * (law.times[i + 1] - law.times[i])
    q, qd, qdd = law.evaluate(t)
    sp = law.path_state(t)[0]
    th = (sp - s[i]) / (s[i + 1] - s[i])
    tau = RX90.inverse_dynamics(q, qd, qdd)
    for k, t_k in enumerate(th):
        m = np.interp(t_k, samples.theta, np.arange(samples.theta.size))
        lo, hi = int(np.floor(m)), int(np.ceil(m))
        direct = np.max(np.abs(tau[k]) / lim.effort)
        assert min(effort[i, lo], effort[i, hi]) - 2e-3 <= direct <= max(effort[i, lo], effort[i, hi]) + 2e-3
        assert np.max(np.abs(qd[k]) / VEL) == pytest.approx(np.interp(m, [lo, hi], velocity[i, [lo, hi]]), rel=1e-2)
    # the linear programs' own points (samples k/48 for CHECK_THETA) hold exactly; between them the first
    # solution may exceed (the rounds lower those segments), not there
    at = np.rint(np.asarray(CHECK_THETA) * (samples.theta.size - 1)).astype(int)
    np.testing.assert_allclose(samples.theta[at], CHECK_THETA, atol=1e-15)
    assert np.max(effort[:, at]) <= 1.0 + 1e-9 and np.max(acceleration[:, at]) <= 1.0 + 1e-9
    assert np.max(effort) > 1.0 + 1e-6  # this coarse grid (40 points) exceeds between them: the check sees it


def test_rowmax_is_numpys():
    a = np.random.default_rng(0).normal(size=(50, 7))
    np.testing.assert_array_equal(_rowmax(a), np.max(a, axis=1))
