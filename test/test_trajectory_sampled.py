"""SampledTrajectory (JTC-style interpolation) against exact polynomials (hand-derived oracle).

A Hermite interpolant of degree d reproduces any polynomial of degree <= d exactly
when fed its values and derivatives at the knots.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial import polynomial as P

from robot_dynamics.trajectory.sampled import SampledTrajectory


@settings(max_examples=60, deadline=None)
@given(degree=st.sampled_from([1, 3, 5]), seed=st.integers(0, 10_000), m=st.integers(2, 7))
def test_reproduces_polynomials_of_its_degree(degree, seed, m):
    rng = np.random.default_rng(seed)
    n = 3
    coefs = rng.normal(size=(n, degree + 1))
    times = np.sort(rng.uniform(0, 3, m)) + np.arange(m) * 0.2
    def ev(c, t, k):
        return P.polyval(t, P.polyder(c, k)) if k else P.polyval(t, c)
    pos = np.stack([ev(c, times, 0) for c in coefs], axis=1)
    vel = np.stack([ev(c, times, 1) for c in coefs], axis=1) if degree >= 3 else None
    acc = np.stack([ev(c, times, 2) for c in coefs], axis=1) if degree == 5 else None
    traj = SampledTrajectory(times, pos, vel, acc)
    t = np.linspace(times[0], times[-1], 101)
    q, qd, qdd = traj.evaluate(t)
    for j, c in enumerate(coefs):
        scale = 1 + np.abs(ev(c, t, 0)).max()
        np.testing.assert_allclose(q[:, j], ev(c, t, 0), atol=1e-8 * scale)
        if degree >= 3:
            np.testing.assert_allclose(qd[:, j], ev(c, t, 1), atol=1e-7 * scale)
        if degree == 5:
            np.testing.assert_allclose(qdd[:, j], ev(c, t, 2), atol=1e-6 * scale)


def test_holds_before_and_after_and_start_segment():
    traj = SampledTrajectory([1.0, 2.0], [[1.0], [3.0]], [[0.0], [0.0]], start=[0.0])
    q, qd, _ = traj.evaluate(np.array([0.0, 1.0, 2.0, 5.0]))
    np.testing.assert_allclose(q[:, 0], [0.0, 1.0, 3.0, 3.0])
    np.testing.assert_allclose(qd[[0, 3], 0], 0.0)
    single = SampledTrajectory([0.5], [[2.0, -1.0]])
    np.testing.assert_allclose(single.evaluate(3.0)[0], [2.0, -1.0])


@pytest.mark.parametrize(
    "args, match",
    [
        (([0.0, 0.0], [[1.0], [2.0]]), "increasing"),
        (([0.0, 1.0], [[1.0], [np.nan]]), "NaN"),
        (([0.0, 1.0], [[1.0, 2.0]]), "shape"),
        (([], np.zeros((0, 2))), "at least one"),
        (([0.0, 1.0], [[1.0], [2.0]], [[0.0]]), "velocities"),
    ],
)
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        SampledTrajectory(*args)
