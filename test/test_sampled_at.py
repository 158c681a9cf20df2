"""``SampledTrajectory.at(t)``, the control cycle's single-time sampler (cursor + one small product),
gives exactly what the vectorized ``evaluate`` gives, whatever the order of the times asked."""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics.trajectory.sampled import SampledTrajectory


def _traj(degree: int, start: bool, m: int = 7, n: int = 3, seed: int = 0) -> SampledTrajectory:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(0.05, 0.4, m)) + (0.3 if start else 0.0)
    p = rng.uniform(-1, 1, (m, n))
    v = rng.uniform(-1, 1, (m, n)) if degree >= 3 else None
    a = rng.uniform(-1, 1, (m, n)) if degree == 5 else None
    return SampledTrajectory(times, p, v, a, start=rng.uniform(-1, 1, n) if start else None)


def _times(traj: SampledTrajectory, rng: np.random.Generator) -> list[float]:
    forward = np.linspace(-0.2, traj.duration + 0.2, 400)  # a control loop: increasing, crossing every knot
    knots = list(traj.times)  # exactly at the knots, both ends included
    jumps = rng.uniform(-0.5, traj.duration + 0.5, 200)  # time jumps both ways
    return [*forward, *knots, *jumps, *forward[::-1]]


@pytest.mark.parametrize("degree", [1, 3, 5])
@pytest.mark.parametrize("start", [False, True])
def test_at_matches_evaluate(degree: int, start: bool) -> None:
    traj = _traj(degree, start)
    rng = np.random.default_rng(degree)
    checked_inside = 0
    for t in _times(traj, rng):
        q, qd, qdd = traj.at(float(t))
        eq, eqd, eqdd = traj.evaluate(float(t))
        np.testing.assert_allclose(q, eq, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(qd, eqd, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(qdd, eqdd, rtol=1e-9, atol=1e-9)
        checked_inside += bool(0 < t < traj.duration and np.any(qd != 0))
    assert checked_inside > 300  # the moving part was compared, not only held ends


def test_at_single_point_and_independent_results() -> None:
    one = SampledTrajectory([0.5], [[0.1, -0.2]])
    for t in (-1.0, 0.0, 0.5, 2.0):
        q, qd, qdd = one.at(t)
        np.testing.assert_array_equal(q, [0.1, -0.2])
        np.testing.assert_array_equal(qd, 0.0)
        np.testing.assert_array_equal(qdd, 0.0)
        q[:] = 9.0  # the caller's copy: the trajectory is unchanged
    np.testing.assert_array_equal(one.at(0.0)[0], [0.1, -0.2])
    traj = _traj(5, False)
    q1 = traj.at(0.3)[0]
    keep = q1.copy()
    traj.at(0.9)
    np.testing.assert_array_equal(q1, keep)
