"""Dynamics-aware speed scaling's pure pieces (robot_dynamics/ros/controller/effort_scaling.py): the largest factor
at which |a f^2 + b f + c| stays within the limit (oracle: a dense grid of f), the prediction along the path
(oracle: the model's inverse dynamics at the scaled reference, 001 eq. 7.61), the measured offset's filter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from robot_dynamics import load_model
from robot_dynamics.ros.controller.effort_scaling import OFFSET_TIME, EffortScaling, largest_factor
from robot_dynamics.trajectory.sampled import SampledTrajectory

F = np.linspace(0.0, 1.0, 200_001)


def oracle(a, b, c, lim) -> float:
    """The largest grid f with every grid f' <= f feasible."""
    ok = np.abs(np.multiply.outer(F**2, a) + np.multiply.outer(F, b) + c) <= lim
    ok = ok.reshape(F.size, -1).all(axis=1)
    if not ok[0]:
        return 0.0
    bad = np.flatnonzero(~ok)
    return 1.0 if bad.size == 0 else F[bad[0] - 1]


def test_boundaries_of_the_largest_factor():
    # a f^2 = 4 f^2 <= 1: F = 0.5 exactly; just inside / outside
    assert largest_factor(4.0, 0.0, 0.0, 1.0) == pytest.approx(0.5, abs=1e-15)
    assert abs(4.0 * np.nextafter(0.5, 0.0) ** 2) <= 1.0 and abs(4.0 * np.nextafter(0.5, 1.0) ** 2) > 1.0
    assert largest_factor(4.0, 0.0, 0.0, 4.0) == 1.0  # the limit reached at f = 1 exactly: all of it
    assert largest_factor(4.0, 0.0, 0.0, 4.0 * (1 - 1e-12)) < 1.0
    assert largest_factor(0.0, 0.0, np.nextafter(1.0, 0.0), 1.0) == 1.0  # static effort inside the limit: allowed
    assert largest_factor(0.0, 0.0, 1.0, 1.0) == 0.0  # at it (or beyond) at rest: stop
    assert largest_factor(0.0, 2.0, 0.0, 1.0) == pytest.approx(0.5)  # linear (viscous)
    assert largest_factor(-4.0, 0.0, 0.5, 1.0) == pytest.approx(np.sqrt(1.5 / 4.0))  # crosses -limit
    # a dip that returns: c = 0.9, a f^2 + b f going down to -1.9 and back: the first crossing counts
    assert largest_factor(8.0, -8.0, 0.9, 1.0) == pytest.approx(0.5 - np.sqrt(0.1 / 8.0), rel=1e-12)
    # several joints and points: the smallest
    assert largest_factor([4.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]) == pytest.approx(0.5)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(-50, 50), st.floats(-20, 20), st.floats(-3, 3), st.floats(0.5, 5.0)),
                min_size=1, max_size=6))
def test_the_largest_factor_is_the_grid_oracles(rows):
    a, b, c, lim = (np.array(x) for x in zip(*rows, strict=True))
    assume(np.all(np.abs(np.abs(c) - lim) > 1e-6))  # (a static effort exactly at the limit: the unit test above)
    got = largest_factor(a, b, c, lim)
    want = oracle(a, b, c, lim)
    assert 0.0 <= got <= 1.0
    assert got == pytest.approx(want, abs=2.0 / (F.size - 1))  # the grid's resolution
    if np.any(np.abs(c) >= lim):  # at or beyond the limit at rest already: stop
        assert got == 0.0
        return
    f = np.linspace(0.0, got, 2001)  # every factor up to it within the limit (1e-9 of rounding)
    assert np.all(np.abs(np.multiply.outer(f**2, a) + np.multiply.outer(f, b) + c) <= lim * (1 + 1e-9) + 1e-12)


@pytest.fixture(scope="module")
def model():
    return load_model("rx90")


def fast_path(model, duration: float = 0.3) -> SampledTrajectory:
    t = np.linspace(0.0, duration, 61)
    u = t / duration
    d = np.array([1.2, -0.9, 1.0, 1.5, -1.1, 1.4])
    s, sd, sdd = 10 * u**3 - 15 * u**4 + 6 * u**5, (30 * u**2 - 60 * u**3 + 30 * u**4) / duration, \
        (60 * u - 180 * u**2 + 120 * u**3) / duration**2
    q0 = np.array([0.1, -0.3, 0.4, 0.0, 0.5, 0.1])
    return SampledTrajectory(t, q0 + s[:, None] * d, sd[:, None] * d, sdd[:, None] * d)


def test_the_prediction_is_the_models_effort_at_the_scaled_reference(model):
    """At the factor it allows, the model's inverse dynamics at the scaled reference (q, q' f, q'' f^2) of every
    point of the window stays within margin x limit, and at a factor 1 % above it one does not (oracle: the model's
    own inverse dynamics, not the a/b/c split)."""
    traj = fast_path(model)
    effort = np.asarray(model.limits["effort"], float) * 0.5
    es = EffortScaling(enabled=True, margin=0.9, horizon=0.3)
    cap = es.update(traj, 0.0, 1.0, effort, model.inverse_dynamics, list(model.joint_names))
    assert 0.05 < cap < 1.0 and es.limiting in model.joint_names
    ts = np.linspace(0.0, 0.3, 8)
    q, qd, qdd = traj.evaluate(ts)

    def peak(f: float) -> float:
        return float((np.abs(model.inverse_dynamics(q, qd * f, qdd * f * f)) / (0.9 * effort)).max())

    assert peak(cap) <= 1.0 + 1e-9 and peak(1.01 * cap) > 1.0
    print(f"\nfactor allowed {cap:.4f} (limited by {es.limiting}); peak effort / (0.9 limit) there {peak(cap):.6f}")


def test_disabled_or_easy_paths_give_one_and_predictions_wait_their_cycle(model):
    traj = fast_path(model)
    names = list(model.joint_names)
    big = np.asarray(model.limits["effort"], float) * 100
    off = EffortScaling(enabled=False)
    assert off.update(traj, 0.0, 1.0, big * 1e-3, model.inverse_dynamics, names) == 1.0
    es = EffortScaling(enabled=True)
    assert es.update(traj, 0.0, 1.0, big, model.inverse_dynamics, names) == 1.0 and es.limiting == ""
    small = big * 3e-3
    calls = []

    def counted(*args):
        calls.append(1)
        return model.inverse_dynamics(*args)

    es.reset()
    caps = [es.update(traj, 0.0, 1.0, small, counted, names) for _ in range(11)]
    assert len(calls) == 3 * 3  # cycles 1, 6 and 11 predict (three calls each)
    assert caps[0] < 1.0 and len(set(caps)) == 1


def test_the_offset_is_a_first_order_filter_of_the_extra_effort():
    es = EffortScaling(enabled=True)
    dt = 0.002
    for _ in range(1000):
        es.measure(np.array([3.0, -1.0]), np.array([1.0, 1.0]), dt)
    np.testing.assert_allclose(es.offset, [2.0, -2.0], rtol=1e-9)
    es2 = EffortScaling()
    es2.measure(np.array([1.0]), np.array([0.0]), dt)
    assert es2.offset[0] == pytest.approx(dt / OFFSET_TIME)
    es2.measure(np.array([1.0]), np.array([0.0]), 10.0)  # a long gap: the new value at once, never beyond
    assert es2.offset[0] == 1.0


# ------------------------------------------------------------------------------- in the controller's cycle
def _core(model, dynamics_aware: bool, fraction: float):
    """The controller's pure core on the RX-90 with effort limits at ``fraction`` of the robot's (the gravity of
    joint 2 needs 0.28 of its own), holding at the fast path's start."""
    from test_controller_core import make_core

    from robot_dynamics.ros.controller.context import build_context
    from robot_dynamics.ros.controller.parameters import PARAMETERS
    from robot_dynamics.safety import limit_guard as lg

    limits = np.asarray(model.limits["effort"], float) * fraction
    limits[1] = max(limits[1], 0.5 * model.limits["effort"][1])  # joint 2 holds the arm up (1.1 x gravity)
    values = {**{k: p.default for k, p in PARAMETERS.params.items()}, "backend": "numpy",
              "effort_limits": limits.tolist()}
    ctx = build_context(model, values, lg.sampled_extremes(model))
    core, out = make_core(ctx)
    core.effort_scaling.enabled = dynamics_aware
    q0 = fast_path(model).at(0.0)[0]
    core.update(10.0, 10.0)
    core.state_arrived(q0, np.zeros(6), 10.0, 10.0, 10.0)
    core.update(10.0, 10.0)
    return core, out, limits


def _run(core, traj, t_end: float = 3.0, dt: float = 0.002):
    """The arm exactly on the reference (ideal tracking); per cycle (factor, |tau| / limit)."""
    from test_controller_core import goal

    run = goal(seq=1)
    core.queue_trajectory((traj, None, traj.times.size, run))
    t, rows, ref = 10.0, [], (core.q, np.zeros(6))
    extra = 5  # cycles after the goal's end
    while t < 10.0 + t_end and extra > 0:
        extra -= run.status is not None
        t = round(t + dt, 9)
        core.state_arrived(ref[0], ref[1], t, t, t)
        cycle = core.update(t, t)
        ref = (cycle.q_ref, cycle.qd_ref)
        rows.append((core.clock.factor, np.abs(cycle.tau) / core.ctx.effort))
    return run, rows


def test_the_cycle_slows_the_path_down_ahead_of_its_demanding_part(model):
    """A path planned too fast for limits at 0.25 x the robot's (joint 2 at 0.5: it holds the arm up): without
    dynamics-aware scaling the commands sit at the limit for 60 cycles; with it the factor takes the cap the whole
    path allows at the start (at rest: at once) and no command reaches the limit, the goal succeeds; the controller
    says so once each way."""
    traj = fast_path(model, 0.6)
    core, _, _ = _core(model, False, 0.25)
    _, rows = _run(core, traj)
    at_limit_off = sum(r.max() >= 1.0 - 1e-9 for _, r in rows)
    core, out, _ = _core(model, True, 0.25)
    run, rows = _run(core, traj)
    factors = np.array([f for f, _ in rows])
    at_limit_on = sum(r.max() >= 1.0 - 1e-9 for _, r in rows)
    print(f"\nwithout: {at_limit_off} cycles at the effort limit; with: {at_limit_on}, lowest factor "
          f"{factors.min():.3f}")
    assert at_limit_off > 40 and at_limit_on == 0
    assert run.status == "succeeded" and factors.min() < 0.9
    said = [t for level, t in out.logs if "dynamics-aware speed scaling" in t]
    assert len(said) == 2 and "factor at most" in said[0] and "requested factor again" in said[-1]


def test_the_parameters_ranges():
    from robot_dynamics.ros.controller.parameters import PARAMETERS

    on, margin = PARAMETERS.params["speed_scaling.dynamics_aware"], PARAMETERS.params["speed_scaling.effort_margin"]
    assert on.default is False and on.live and margin.default == 0.9 and margin.live
    assert margin.check(0.05) == 0.05 and margin.check(1.0) == 1.0
    for bad in (np.nextafter(0.05, 0.0), np.nextafter(1.0, 2.0)):
        with pytest.raises(ValueError):
            margin.check(float(bad))
