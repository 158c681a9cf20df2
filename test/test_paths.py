"""Geometric paths (robot_dynamics.trajectory.paths): evaluation against SciPy's PPoly (an independent
implementation), and the closed-form sign changes of dq/ds against a brute-force scan and Brent's method."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import CubicSpline, PPoly
from scipy.optimize import brentq

from robot_dynamics.trajectory.paths import as_path, line_path, spline_path


@pytest.mark.parametrize("degree", [0, 1, 2, 3, 5])
def test_ppoly_path_equals_scipy_at_any_s_and_at_the_breakpoints(degree):
    rng = np.random.default_rng(degree)
    x = np.array([0.0, 0.3, 0.7, 1.0])
    pp = PPoly(rng.normal(size=(degree + 1, 3, 4)), x)
    path = as_path(pp)
    s = np.concatenate([rng.uniform(-0.2, 1.2, 300), x])  # unsorted, outside (clipped), on every breakpoint
    clipped = np.clip(s, 0.0, 1.0)
    for order, mine in enumerate(path.evaluate(s)):
        np.testing.assert_allclose(mine, pp(clipped, order), rtol=0, atol=1e-13)
    assert (path.velocity_zeros is None) == (degree > 3)  # closed form up to cubic paths


def test_a_ppoly_with_decreasing_breakpoints_is_refused():
    with pytest.raises(ValueError, match="increasing breakpoints"):
        as_path(PPoly(np.ones((2, 2, 1)), np.array([1.0, 0.5, 0.0])))


def test_line_path_is_the_affine_map():
    path = line_path([1.0, 2.0, 3.0], [0.0, 5.0, -1.0])
    q, dq, ddq = path.evaluate(np.array([0.0, 0.25, 1.0]))
    np.testing.assert_allclose(q, [[1.0, 2.0, 3.0], [0.75, 2.75, 2.0], [0.0, 5.0, -1.0]], atol=1e-15)
    np.testing.assert_array_equal(dq, np.tile([-1.0, 3.0, -4.0], (3, 1)))
    np.testing.assert_array_equal(ddq, 0.0)
    s, j = path.velocity_zeros()
    assert s.size == 0 and j.size == 0


def _brute_sign_changes(cs: CubicSpline) -> list[tuple[float, int]]:
    g = np.linspace(cs.x[0], cs.x[-1], 400_001)
    v = cs(g, 1)
    out = []
    for j in range(v.shape[1]):
        for k in np.flatnonzero(np.sign(v[:-1, j]) * np.sign(v[1:, j]) < 0):
            out.append((brentq(lambda t, j=j: cs(t, 1)[j], g[k], g[k + 1], xtol=1e-15), j))
    return sorted(out)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 7), st.integers(0, 2**32 - 1))
def test_velocity_zeros_are_every_sign_change_of_the_spline(count, seed):
    rng = np.random.default_rng(seed)
    cs = CubicSpline(np.sort(rng.uniform(0.0, 3.0, count)) + np.arange(count) * 0.05, rng.normal(size=(count, 4)))
    s, j = as_path(cs).velocity_zeros()
    brute = _brute_sign_changes(cs)
    assert s.size == len(brute)
    np.testing.assert_allclose(s, [b[0] for b in brute], atol=1e-9)
    np.testing.assert_array_equal(j, [b[1] for b in brute])
    assert np.all(np.diff(s) >= 0.0)


def test_a_touch_is_no_sign_change_and_a_simple_root_is_one():
    # dq/ds = 3 (s - 0.5)^2 touches 0 at 0.5 (no reversal); 3 s^2 - 0.75 crosses at 0.5
    touch = PPoly(np.array([[1.0], [-1.5], [0.75], [0.0]]), np.array([0.0, 1.0]))
    cross = PPoly(np.array([[1.0], [0.0], [-0.75], [0.0]]), np.array([0.0, 1.0]))
    assert as_path(touch).velocity_zeros()[0].size == 0
    s, j = as_path(cross).velocity_zeros()
    np.testing.assert_allclose(s, [0.5], atol=1e-15)
    np.testing.assert_array_equal(j, [0])


def test_spline_path_of_two_waypoints_is_the_line():
    a = spline_path([[0.0, 1.0], [2.0, -1.0]])
    b = line_path([0.0, 1.0], [2.0, -1.0])
    s = np.linspace(0.0, 1.0, 5)
    for u, v in zip(a.evaluate(s), b.evaluate(s), strict=True):
        np.testing.assert_array_equal(u, v)
