"""Time-optimal parameterization under velocity and effort limits (robot_dynamics.trajectory.time_optimal).

Oracles: closed-form minimum times of a double integrator (bang-bang, 001 eq. 8.15 with the acceleration limit;
trapezoid under a velocity limit, 001 eq. 8.19), TOPP-RA on the same RX-90 paths (its result is optimal for its
grid and overshoots the limits between grid points: on a 1000-point grid it is a lower bound of any admissible
duration, on its default grid the reference of the duration), and the model's inverse dynamics on a grid 100x finer
than the parameterization's (efforts, velocities) with both one-sided values where a joint reverses (the Coulomb
friction jumps: the reversal found here by Brent's method, not by the code's bisection).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from robot_dynamics.model.robots import load_model
from robot_dynamics.trajectory import point_to_point, retime_to_limits
from robot_dynamics.trajectory.optimal_timing import MARGIN, InfeasiblePath, PathTimeLaw, time_optimal
from robot_dynamics.trajectory.paths import as_path, line_path, spline_path

RX90 = load_model("rx90")
RIGID_FV = RX90.replace(Fv=np.zeros(6))  # the dynamics TOPP-RA can express (Coulomb friction as fs_coef)
EFFORT = 0.35 * RX90.limits["effort"]
VEL = RX90.limits["velocity"]
BOUND = 1.0 + 1e-6


def fine_peaks(model, res, lim=EFFORT, vel=VEL, per_segment=100):
    """Peak |Gamma| / limit and |qd| / limit on a time grid 100x finer than the result's, plus both sides of every
    grid time (where sdd jumps)."""
    law = res.trajectory
    t = np.linspace(0.0, law.duration, per_segment * (res.s.size - 1) + 1)
    b = law.breakpoints()[1:-1]
    h = 1e-9 * law.duration
    t = np.sort(np.concatenate([t, b - h, b + h]))
    q, qd, qdd = law.evaluate(t)
    tau = model.inverse_dynamics(q, qd, qdd)
    return float(np.max(np.abs(tau) / lim)), float(np.max(np.abs(qd) / vel))


# ------------------------------------------------------------------ closed forms (a double integrator)
@pytest.mark.parametrize("margin", [0.0, MARGIN, 0.01])
def test_bang_bang_of_a_double_integrator_is_exact(margin):
    inertia, limit, dist = 2.0, 5.0, 1.5
    res = time_optimal(line_path([0.0], [dist]), lambda q, qd, qdd: inertia * qdd, [limit], [np.inf],
                       gridpoints=101, margin=margin)  # the switch (s = 1/2) on the grid
    limit *= 1.0 - margin  # the margin under the limit at the linear programs' points
    assert res.duration == pytest.approx(2.0 * np.sqrt(dist * inertia / limit), rel=1e-9)
    assert res.binding == "effort"
    assert res.effort_ratio == pytest.approx(1.0 - margin, abs=1e-9)
    q, qd, qdd = res.trajectory.evaluate(np.array([0.0, res.duration / 4, 3 * res.duration / 4, res.duration]))
    np.testing.assert_allclose(q[[0, -1], 0], [0.0, dist], atol=1e-12)
    np.testing.assert_allclose(qd[[0, -1], 0], [0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(qdd[1:3, 0], [limit / inertia, -limit / inertia], rtol=1e-9)


@pytest.mark.parametrize("margin", [-1e-9, 0.5, np.nan])
def test_margin_outside_its_range_is_refused(margin):
    with pytest.raises(ValueError, match="margin"):
        time_optimal(line_path([0.0], [1.0]), lambda q, qd, qdd: qdd, [1.0], [1.0], margin=margin)


def test_trapezoid_under_a_velocity_limit_is_never_faster_than_the_optimum():
    inertia, limit, v, dist = 1.0, 4.0, 1.0, 2.0
    best = dist / v + v * inertia / limit  # cruise at v, accelerate and brake at limit / inertia
    for margin in (0.0, MARGIN):
        res = time_optimal(line_path([0.0], [dist]), lambda q, qd, qdd: inertia * qdd, [limit], [v],
                           gridpoints=200, margin=margin)
        assert best <= res.duration <= best * 1.01
        assert res.velocity_ratio <= 1.0 + 1e-9
        assert res.velocity_ratio == pytest.approx(1.0 - margin, abs=1e-9)  # the cruise reaches the limit


def test_time_law_derivatives_are_those_of_its_positions():
    res = time_optimal(spline_path([[0.0, 0.0], [1.0, -0.5], [0.2, 0.8]]),
                       lambda q, qd, qdd: qdd + 0.3 * qd, [3.0, 2.0], [1.5, 1.5], gridpoints=60)
    law = res.trajectory
    t = np.random.default_rng(1).uniform(0.05, 0.95, 40) * law.duration
    b = law.breakpoints()
    t = t[np.min(np.abs(t[:, None] - b[None, :]), axis=1) > 1e-4]  # sdd jumps at the grid's times
    h = 1e-6
    q0, qd0, qdd0 = law.evaluate(t)
    qp, qdp, _ = law.evaluate(t + h)
    qm, qdm, _ = law.evaluate(t - h)
    np.testing.assert_allclose((qp - qm) / (2 * h), qd0, atol=1e-6)
    np.testing.assert_allclose((qdp - qdm) / (2 * h), qdd0, atol=1e-4)


# ------------------------------------------------------------------ RX-90 against TOPP-RA
def _toppra(waypoints, gridpoints=None):
    ta = pytest.importorskip("toppra")
    import toppra.algorithm as algo
    import toppra.constraint as constraint

    ta.setup_logging("WARNING")
    rigid = RIGID_FV.replace(Fc=np.zeros(6))
    spline = ta.SplineInterpolator(np.linspace(0.0, 1.0, len(waypoints)), waypoints)
    cons = [constraint.JointVelocityConstraint(np.vstack([-VEL, VEL]).T),
            constraint.JointTorqueConstraint(rigid.inverse_dynamics, np.vstack([-EFFORT, EFFORT]).T, RX90.Fc)]
    grid = None if gridpoints is None else np.linspace(0.0, 1.0, gridpoints)
    out = algo.TOPPRA(cons, spline, parametrizer="ParametrizeConstAccel", gridpoints=grid).compute_trajectory()
    assert out is not None, "TOPP-RA found no parameterization"
    return out.duration


PATHS = {
    "line": [[0.3, -0.4, 0.6, 1.0, -0.5, 0.2], [-1.2, 0.5, -0.8, -2.0, 0.9, 2.5]],
    "spline": [[0.3, -0.4, 0.6, 1.0, -0.5, 0.2], [1.4, 0.3, -0.2, -1.5, 1.2, -2.0],
               [-0.6, -0.2, 0.9, 2.2, -0.3, 1.0], [-1.5, 0.6, -0.4, -0.8, 0.5, -1.5]],
}


@pytest.mark.parametrize("kind", list(PATHS))
def test_rx90_path_against_toppra(kind):
    w = np.array(PATHS[kind])
    res = time_optimal(spline_path(w), RIGID_FV, EFFORT, VEL)
    ref, bound = _toppra(w), _toppra(w, gridpoints=1000)
    assert res.duration <= 1.01 * ref
    assert res.duration >= bound * (1 - 1e-4)  # no admissible time law is faster than a finer grid's optimum
    effort, velocity = fine_peaks(RIGID_FV, res)
    assert effort <= BOUND and velocity <= BOUND
    assert max(effort, velocity) >= 1.0 - 2 * MARGIN  # time-optimal: a limit binds (under the margin)
    assert res.peak_ratio <= 1.0 + 1e-9
    exact = time_optimal(spline_path(w), RIGID_FV, EFFORT, VEL, margin=0.0)
    assert max(fine_peaks(RIGID_FV, exact)) >= 1.0 - 1e-6  # without a margin the limit binds exactly
    assert max(fine_peaks(RIGID_FV, exact)) <= BOUND
    # the margin's cost: the effort left for motion (the limit minus gravity) shrinks by more than MARGIN L / L
    assert exact.duration <= res.duration <= exact.duration * (1.0 + 5 * MARGIN)
    q, qd, _ = res.trajectory.evaluate(np.array([0.0, res.duration]))
    np.testing.assert_allclose(q, w[[0, -1]], atol=1e-12)
    np.testing.assert_allclose(qd, 0.0, atol=1e-9)


def test_viscous_friction_and_reversals_kept_on_the_whole_curve():
    w = np.array(PATHS["spline"])
    res = time_optimal(spline_path(w), RX90, EFFORT, VEL)  # Fv != 0: the sqrt(x) term
    assert max(fine_peaks(RX90, res)) <= BOUND
    # both sides of each reversal of a joint inside the path (Coulomb friction jumps there)
    path = spline_path(w)
    s = np.linspace(0.0, 1.0, 2001)
    dq = path.evaluate(s)[1]
    found = 0
    for j in range(6):
        for k in np.nonzero(np.sign(dq[:-1, j]) * np.sign(dq[1:, j]) < 0)[0]:
            s_rev = brentq(lambda v, j=j: path.evaluate([v])[1][0, j], s[k], s[k + 1], xtol=1e-14)
            law = res.trajectory
            t_rev = np.interp(s_rev, *_s_of_t(law))
            for side in (-1e-9, 1e-9):
                q, qd, qdd = law.evaluate(np.array([t_rev + side * law.duration]))
                assert np.max(np.abs(RX90.inverse_dynamics(q, qd, qdd)) / EFFORT) <= BOUND
            found += 1
    assert found >= 3  # the path makes joints reverse


def _s_of_t(law: PathTimeLaw):
    t = np.linspace(0.0, law.duration, 20001)
    return law.path_state(t)[0], t


# ------------------------------------------------------------------ boundaries and refusals
def _pendulum(q, qd, qdd, inertia=0.5, weight=10.0):
    return inertia * qdd + weight * np.cos(q)  # gravity torque 10 N m at q = 0


@pytest.mark.parametrize(("factor", "feasible"), [(1.0 + 1e-3, True), (1.0 - 1e-6, False)])
def test_static_effort_at_the_start_just_inside_and_just_outside(factor, feasible):
    path = line_path([0.0], [0.6])  # the gravity torque is greatest at the start
    if feasible:
        res = time_optimal(path, _pendulum, [10.0 * factor], [np.inf], gridpoints=50)
        assert res.effort_ratio <= 1.0 + 1e-9 and res.duration > 0
    else:
        with pytest.raises(InfeasiblePath, match="s = 0"):
            time_optimal(path, _pendulum, [10.0 * factor], [np.inf], gridpoints=50)


def test_start_speed_beyond_the_controllable_set_is_refused():
    path = line_path([0.0], [0.1])
    with pytest.raises(InfeasiblePath, match="start speed"):
        time_optimal(path, lambda q, qd, qdd: qdd, [1.0], [np.inf], start_speed=10.0)  # cannot stop in 0.1 rad
    res = time_optimal(path, lambda q, qd, qdd: qdd, [1.0], [np.inf], start_speed=0.4, gridpoints=101)
    assert res.trajectory.evaluate(0.0)[1][0] == pytest.approx(0.04, rel=1e-9)  # qd = q' sd = 0.1 * 0.4


@pytest.mark.parametrize("bad", [dict(effort_limits=[-1.0]), dict(effort_limits=[1.0, 2.0]),
                                 dict(velocity_limits=[0.0]), dict(effort_limits=[np.nan]),
                                 dict(gridpoints=1), dict(gridpoints=[0.2, 1.0])])
def test_bad_arguments_are_refused(bad):
    args = dict(effort_limits=[1.0], velocity_limits=[1.0]) | bad
    with pytest.raises(ValueError):
        time_optimal(line_path([0.0], [1.0]), lambda q, qd, qdd: qdd, **args)


def test_a_callable_needs_effort_limits():
    with pytest.raises(ValueError, match="effort_limits"):
        time_optimal(line_path([0.0], [1.0]), lambda q, qd, qdd: qdd)


def test_paths_from_other_tools():
    w = np.array(PATHS["spline"])
    from scipy.interpolate import CubicSpline

    mine, theirs = as_path(w), as_path(CubicSpline(np.linspace(0, 1, 4), w))
    s = np.linspace(0, 1, 7)
    for a, b in zip(mine.evaluate(s), theirs.evaluate(s), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(theirs.knots, np.linspace(0, 1, 4))
    with pytest.raises(TypeError, match="cannot use"):
        as_path("a line")


# ------------------------------------------------------------------ through retime_to_limits
def test_retime_to_limits_time_optimal_follows_the_same_path_faster_than_a_stretch():
    traj = point_to_point(np.zeros(6), np.array([1.0, -0.6, 0.8, 1.5, -1.0, 2.0]), VEL, RX90.limits["acceleration"],
                          profile="quintic", duration=2.0)
    uniform = retime_to_limits(traj, RX90, EFFORT, VEL)
    best = retime_to_limits(traj, RX90, EFFORT, VEL, method="time_optimal")
    assert best.duration < 0.95 * uniform.duration
    assert best.scale == pytest.approx(best.duration / traj.duration)
    assert best.peak_ratio <= 1.0 + 1e-9 and best.peak_velocity_ratio <= 1.0 + 1e-9
    law = best.trajectory
    t = np.linspace(0.0, law.duration, 500)
    s = law.path_state(t)[0]
    np.testing.assert_allclose(law.evaluate(t)[0], traj.evaluate(s)[0], atol=1e-12)  # the same configurations
    with pytest.raises(ValueError, match="method"):
        retime_to_limits(traj, RX90, method="fastest")
    with pytest.raises(ValueError, match="uniform method"):
        retime_to_limits(traj, RX90, min_scale=1.0, method="time_optimal")


# ------------------------------------------------------------------ the invariant
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-0.8, 0.8), min_size=12, max_size=12), st.floats(0.2, 1.0))
def test_any_feasible_line_stays_within_the_limits_on_the_whole_curve(ends, factor):
    lo, hi = RX90.limits["lower"], RX90.limits["upper"]
    q0 = np.array(ends[:6]) * np.where(np.array(ends[:6]) < 0, -lo, hi)
    q1 = np.array(ends[6:]) * np.where(np.array(ends[6:]) < 0, -lo, hi)
    assume(np.max(np.abs(q1 - q0)) > 0.05)
    lim = factor * RX90.limits["effort"]
    q = line_path(q0, q1).evaluate(np.linspace(0, 1, 200))[0]
    assume(np.max((np.abs(RX90.gravity_torques(q)) + RX90.Fc) / lim) < 0.95)  # a slow enough motion exists
    res = time_optimal(line_path(q0, q1), RX90, lim, VEL, gridpoints=60)
    assert max(fine_peaks(RX90, res, lim=lim)) <= BOUND
    q, qd, _ = res.trajectory.evaluate(np.array([0.0, res.duration]))
    np.testing.assert_allclose(q, [q0, q1], atol=1e-12)
    np.testing.assert_allclose(qd, 0.0, atol=1e-9)


def test_python_api_example_runs_as_written(capsys):
    """docs/python_api.md's time-optimal block."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "python_api.md").read_text()
    section = text[text.index("## Time-optimal retiming"):]
    block = section[section.index("```python") + len("```python"):]
    block = block[:block.index("```")]
    exec(compile(block, "docs/python_api.md", "exec"), {})  # noqa: S102 - the documentation's own code
    out = capsys.readouterr().out
    duration, binding = float(out.split(" s,")[0]), out.split("bound by ")[1].split(",")[0]
    assert 0.5 < duration < 10.0 and binding in ("effort", "velocity")
    assert float(out.rsplit("peak ratio ", 1)[1]) <= 1.0 + 1e-9


# ------------------------------------------------------------------ the compiled linear programs
@pytest.mark.parametrize("kind", list(PATHS))
def test_compiled_kernel_gives_the_numpy_result_bit_for_bit(kind):
    from robot_dynamics.trajectory import reachability

    if reachability.kernel("compiled") is None:
        pytest.fail("no C compiler here: the kernel cannot be checked")
    a = time_optimal(spline_path(np.array(PATHS[kind])), RX90, EFFORT, VEL, engine="numpy")
    b = time_optimal(spline_path(np.array(PATHS[kind])), RX90, EFFORT, VEL, engine="compiled")
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.u, b.u)
    assert a.rounds == b.rounds


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_both_kernels_refuse_alike(engine):
    """A stage with no admissible x (a row x <= -1) and a start speed outside K_0, in either implementation."""
    from robot_dynamics.trajectory.reachability import solve

    N = 4
    Au = np.array([[1.0, -1.0, 0.0]] * N)  # -1 <= u <= 1, x <= 4
    Ax = np.array([[0.0, 0.0, 1.0]] * N)
    C = np.array([[1.0, 1.0, 4.0]] * N)
    ds, s = np.full(N, 0.25), np.linspace(0.0, 1.0, N + 1)
    x, u = solve(Au, Ax, C, ds, 0.0, 0.0, s, engine)
    np.testing.assert_allclose(x, [0.0, 0.5, 1.0, 0.5, 0.0])  # bang-bang: x = 2 s u
    np.testing.assert_allclose(u, [1.0, 1.0, -1.0, -1.0])
    C2 = C.copy()
    C2[2, 2] = -1.0
    with pytest.raises(InfeasiblePath, match="s = 0.5"):
        solve(Au, Ax, C2, ds, 0.0, 0.0, s, engine)
    with pytest.raises(InfeasiblePath, match="start speed"):
        solve(Au, Ax, C, ds, 2.1, 0.0, s, engine)  # braking at 1 from sd^2 2.1 needs s 1.05 > 1
    solve(Au, Ax, C, ds, 1.9, 0.0, s, engine)  # ... from 1.9: 0.95, just inside


# ------------------------------------------------------------------ the CLI
def test_cli_plan_time_optimal_is_faster_and_within_the_limits(capsys):
    import json

    from robot_dynamics.cli import main

    goal = ["1", "1", "1", "1", "1", "1"]
    assert main(["plan", "rx90", "--goal", *goal, "--profile", "quintic", "--json", "--period", "0.002"]) == 0
    quintic = json.loads(capsys.readouterr().out)
    assert main(["plan", "rx90", "--goal", *goal, "--profile", "quintic", "--json", "--period", "0.002",
                 "--time-optimal"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["time_optimal"] and not quintic["time_optimal"]
    assert fast["duration"] < 0.9 * quintic["duration"]  # 0.636 vs 0.760 s: the quintic's shape is not the fastest
    lim = RX90.limits
    q, qd, qdd = (np.array(fast[k]) for k in ("positions", "velocities", "accelerations"))
    assert np.all(np.abs(qd) <= lim["velocity"] * (1 + 1e-9))
    assert np.all(np.abs(qdd) <= lim["acceleration"] * (1 + 1e-9))
    assert np.max(np.abs(RX90.inverse_dynamics(q, qd, qdd)) / lim["effort"]) <= 1.0 + 1e-9
    assert fast["binding"] == "acceleration" and np.max(np.abs(qdd) / lim["acceleration"]) > 0.99
    np.testing.assert_allclose(q[[0, -1]], [np.zeros(6), np.ones(6)], atol=1e-12)
    assert main(["plan", "rx90", "--goal", *goal, "--time-optimal", "--duration", "3"]) == 2
    assert "exclude each other" in capsys.readouterr().err


# ------------------------------------------------------------------ ~/plan's core
def test_plan_samples_time_optimal_through_waypoints():
    from robot_dynamics.trajectory.planning import plan_samples

    w = np.array([[0.8, -0.6, 0.9, 1.0, 0.7, -1.0], [0.2, 0.3, -0.4, -0.5, 0.2, 0.8], np.zeros(6)])
    lim = RX90.limits
    args = (w, lim["velocity"], lim["acceleration"], "quintic", 0.002, RX90)
    uniform = plan_samples(*args)
    fast = plan_samples(*args, timing="time_optimal")
    assert fast.duration < 0.9 * uniform.duration  # 1.04 vs 1.23 s
    assert fast.peak_effort_ratio <= 1.0 and fast.effort_scale == pytest.approx(1.0, abs=1e-6)
    assert np.min(np.abs(fast.q - w[1]).sum(axis=1)) < 1e-9  # through the waypoint
    np.testing.assert_allclose(fast.effort, RX90.inverse_dynamics(fast.q, fast.qd, fast.qdd), atol=1e-9)
    longer = plan_samples(*args, timing="time_optimal", duration=1.5)
    assert longer.duration == pytest.approx(1.5, abs=1e-9) and longer.peak_effort_ratio <= 1.0
    with pytest.raises(ValueError, match="shorter than the minimum"):
        plan_samples(*args, timing="time_optimal", duration=0.9 * fast.duration)
    with pytest.raises(ValueError, match="timing"):
        plan_samples(*args, timing="fastest")


def test_a_long_sampled_trajectory_costs_its_grid_not_its_points():
    from robot_dynamics.trajectory import SampledTrajectory

    t = np.linspace(0.0, 20.0, 20_001)  # 20,000 segments of a cubic interpolation (q'' jumps at every point)
    q = np.stack([0.5 * np.sin(t / 4), -0.3 + 0.2 * np.cos(t / 5), 0.4 * np.sin(t / 6), 0 * t, 0 * t, 0 * t], axis=1)
    qd = np.stack([0.125 * np.cos(t / 4), -0.04 * np.sin(t / 5), 0.4 / 6 * np.cos(t / 6), 0 * t, 0 * t, 0 * t], axis=1)
    res = time_optimal(SampledTrajectory(t, q, qd), RX90, EFFORT, VEL)
    assert res.s.size <= 200 + 2  # the default grid, not the 20,001 points
    assert max(fine_peaks(RX90, res)) <= BOUND
