"""Issue 29: ``~/time_scale`` does bounded work: a request above ``max_points`` is refused with the cause before any
per-point work, and the time scaling itself runs in bounded memory (the dense effort grid by chunks).

The node's pure parts are called directly: :func:`check_point_count` (first thing ``_time_scale`` does), the
refusal formatting of ``TrajectoryGenerator._answer``, and the core :func:`retime_points` the node calls on the
points.  Memory by ``tracemalloc`` (numpy reports its buffers to it); no wall-clock assertion.
"""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.runtime import Refused
from robot_dynamics.ros.trajectory_generator import PARAMETERS, TrajectoryGenerator, check_point_count
from robot_dynamics.trajectory import through_waypoints
from robot_dynamics.trajectory.time_scaling import retime_points

MODEL = load_model("rx90")
LIM = MODEL.limits
MAX_POINTS = PARAMETERS.params["max_points"].default


def test_default_limit_is_sane():
    assert MAX_POINTS == 20_000


@pytest.mark.parametrize("count", [MAX_POINTS, MAX_POINTS + 1])
def test_point_count_boundary(count):
    """At the limit accepted; one more refused as ``too_large`` naming the count and the parameter."""
    if count <= MAX_POINTS:
        check_point_count(count, MAX_POINTS)
        return
    with pytest.raises(Refused) as exc:
        check_point_count(count, MAX_POINTS, "~/time_scale trajectory")
    assert exc.value.cause == "too_large"
    assert f"{count} points exceeds max_points={MAX_POINTS}" in str(exc.value)


def test_refusal_answered_with_the_cause():
    """The node answers a refused request with success false and "too_large: ..." (its _answer)."""

    class Points:  # a request whose points may not be touched: only their number is read
        def __len__(self) -> int:
            return MAX_POINTS + 1

        def __iter__(self):
            raise AssertionError("per-point work before the size check")

    request = SimpleNamespace(trajectory=SimpleNamespace(points=Points()))
    response = SimpleNamespace(success=None, message="")
    out = TrajectoryGenerator._answer(
        lambda req, _resp: check_point_count(len(req.trajectory.points), MAX_POINTS, "~/time_scale trajectory"),
        request, response)
    assert out.success is False
    assert out.message == (f"too_large: ~/time_scale trajectory with {MAX_POINTS + 1} points exceeds "
                           f"max_points={MAX_POINTS}")


def _points(count: int) -> tuple[np.ndarray, ...]:
    """A quintic through 40 random waypoints sampled at ``count`` points (positions, velocities, accelerations)."""
    rng = np.random.default_rng(0)
    W = rng.uniform(LIM["lower"] * 0.9, LIM["upper"] * 0.9, (40, 6))
    base = through_waypoints(W, LIM["velocity"], LIM["acceleration"], profile="quintic")
    t = np.linspace(0.0, base.duration, count)
    return (t, *base.evaluate(t))


def _peak(count: int) -> tuple[float, float]:
    """(tracemalloc peak in MB of the node's time-scaling work on ``count`` points, the scale found)."""
    args = _points(count)
    tracemalloc.start()
    try:
        res, tau = retime_points(*args, MODEL, names=MODEL.joint_names)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert tau.shape == (count, 6) and np.all(np.isfinite(tau))
    return peak, res.scale


@pytest.mark.slow
def test_time_scaling_memory_is_bounded():
    """20 000 points (the default max_points) in < 80 MB (measured 34 MB with either dynamics engine; 739 MB
    (compiled engine) to 828 MB (NumPy engine) before the work went by chunks): a chunk of 4096 states of inverse
    dynamics (~7-12 MB) and the chunks' grids, plus the trajectory's own arrays (its polynomials, the scaled copy,
    the grid values: ~1 kB a point).  The growth per point stays that of those arrays: < 2.5 kB a point between
    5 000 and 20 000 points (measured 0.9 kB; 37 kB a point before)."""
    small, _ = _peak(5_000)
    large, scale = _peak(20_000)
    print(f"\ntime scaling peak memory: 5 000 points {small:.1f} MB, 20 000 points {large:.1f} MB (scale {scale:.6f})")
    assert large < 80.0
    assert (large - small) / 15_000 * 1e3 < 2.5  # kB per point
