"""A plan from a moving state (robot_dynamics.trajectory.planning.start_segment, ``~/plan``'s start_from_reference):
the shortest start segment that keeps the limits, the same the controller builds from its reference
(SampledTrajectory.from_state).  Oracles: a dense evaluation of the quintic's closed form (its six boundary
conditions solved by numpy), the model's inverse dynamics on it, and the controller's own start segment."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.model.robots import load_model
from robot_dynamics.trajectory.planning import START_TIMES, at_rest, start_segment
from robot_dynamics.trajectory.sampled import SampledTrajectory

RX90 = load_model("rx90")
LIM = RX90.limits
LO, HI, V, A = LIM["lower"], LIM["upper"], LIM["velocity"], LIM["acceleration"]


def quintic(q0, v0, a0, q1, T, t):
    """The quintic with q, qd, qdd = (q0, v0, a0) at 0 and (q1, 0, 0) at T, solved from its six conditions."""
    M = np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0],
                  [1, T, T**2, T**3, T**4, T**5], [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4],
                  [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3]], dtype=float)
    c = np.linalg.solve(M, np.vstack([q0, v0, a0, q1, np.zeros_like(q0), np.zeros_like(q0)]))
    p = np.polynomial.polynomial
    return (p.polyval(t, c).T, p.polyval(t, p.polyder(c, 1)).T, p.polyval(t, p.polyder(c, 2)).T)


def peaks(q0, v0, a0, q1, T):
    t = np.linspace(0.0, T, 20001)
    q, qd, qdd = quintic(q0, v0, a0, q1, T, t)
    tau = RX90.inverse_dynamics(q, qd, qdd)
    outside = float(np.max(np.maximum(q - HI, LO - q)))
    return outside, float(np.max(np.abs(qd) / V)), float(np.max(np.abs(qdd) / A)), \
        float(np.max(np.abs(tau) / LIM["effort"]))


Q0 = np.array([0.1, -0.3, 0.4, 0.5, -0.2, 0.3])
V0 = np.array([1.0, -0.5, 0.8, 2.0, -1.0, 3.0])
A0 = np.array([2.0, 0.0, -3.0, 5.0, 0.0, 1.0])
Q1 = np.array([0.5, 0.2, -0.3, 0.4, 0.1, 0.0])


def test_the_shortest_segment_keeps_every_limit_and_a_shorter_one_does_not():
    seg = start_segment(Q0, V0, A0, Q1, LO, HI, V, A, RX90)
    T = float(seg.times[-1])
    k = int(np.searchsorted(START_TIMES, T))
    assert START_TIMES[k] == T and k > 0
    outside, v, a, e = peaks(Q0, V0, A0, Q1, T)
    assert outside <= 1e-9 and v <= 1 + 1e-6 and a <= 1 + 1e-6 and e <= 1 + 1e-6
    shorter = peaks(Q0, V0, A0, Q1, START_TIMES[k - 1])  # just inside the search: the duration before fails
    assert shorter[0] > 1e-9 or max(shorter[1:]) > 1 + 1e-6
    # the segment is the closed-form quintic, continuous with the moving state
    t = np.linspace(0.0, T, 7)
    for mine, oracle in zip(seg.evaluate(t), quintic(Q0, V0, A0, Q1, T, t), strict=True):
        np.testing.assert_allclose(mine, oracle, atol=1e-9)


def test_the_controller_builds_the_same_segment_from_its_reference():
    seg = start_segment(Q0, V0, A0, Q1, LO, HI, V, A, RX90)
    T = float(seg.times[-1])
    plan = SampledTrajectory(np.array([T, T + 1.0]), np.vstack([Q1, Q1 + 0.1]), np.zeros((2, 6)), np.zeros((2, 6)),
                             start=Q0)  # a first point later than t = 0, as ~/plan sends it
    _, theirs = plan.from_state(Q0, V0, A0)
    t = np.linspace(0.0, T, 11)
    for mine, controller in zip(seg.evaluate(t), theirs.evaluate(t), strict=True):
        np.testing.assert_allclose(mine, controller, atol=1e-12)


def test_a_state_that_cannot_stop_before_a_limit_is_refused():
    q = HI - 1e-3  # every joint at its upper limit, moving up at its velocity limit: no stop inside
    with pytest.raises(ValueError, match="no start segment"):
        start_segment(q, V, np.zeros(6), Q1, LO, HI, V, A, RX90)
    with pytest.raises(ValueError, match="finite"):
        start_segment(np.full(6, np.nan), V0, A0, Q1, LO, HI, V, A, RX90)


@pytest.mark.parametrize(("factor", "feasible"), [(1.0, True), (0.2, False)])
def test_the_effort_limits_bound_the_segment(factor, feasible):
    """From rest to a target: with the robot's effort limits the segment keeps them (on a grid 20,000 fine); at 0.2
    of them the arm cannot even hold itself against gravity on the way: refused, saying so."""
    lim = factor * LIM["effort"]
    if feasible:
        seg = start_segment(Q0, np.zeros(6), np.zeros(6), Q1, LO, HI, V, A, RX90, lim)
        assert peaks(Q0, np.zeros(6), np.zeros(6), Q1, float(seg.times[-1]))[3] <= 1 + 1e-6
    else:
        with pytest.raises(ValueError, match="efforts"):
            start_segment(Q0, np.zeros(6), np.zeros(6), Q1, LO, HI, V, A, RX90, lim)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_any_moving_state_gets_a_segment_within_the_limits_or_a_refusal(seed):
    rng = np.random.default_rng(seed)
    q0 = rng.uniform(0.7 * LO, 0.7 * HI)
    v0 = rng.uniform(-0.5, 0.5, 6) * V
    a0 = rng.uniform(-0.5, 0.5, 6) * A
    q1 = rng.uniform(0.7 * LO, 0.7 * HI)
    try:
        seg = start_segment(q0, v0, a0, q1, LO, HI, V, A, RX90)
    except ValueError as exc:
        assert "no start segment" in str(exc)
        return
    outside, v, a, e = peaks(q0, v0, a0, q1, float(seg.times[-1]))
    assert outside <= 1e-6 and v <= 1 + 1e-6 and a <= 1 + 1e-6 and e <= 1 + 1e-4


def test_a_single_waypoint_plan_is_the_point_at_rest():
    fit = at_rest(Q1, RX90)
    assert fit.duration == 0.0 and fit.fields == 3
    np.testing.assert_allclose(fit.effort[0], RX90.gravity_torques(Q1), atol=1e-12)
    assert fit.peak_effort_ratio == pytest.approx(float(np.max(np.abs(RX90.gravity_torques(Q1)) / LIM["effort"])))
