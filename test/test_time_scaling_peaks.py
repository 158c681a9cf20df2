"""Issue 29: the effort-limited time scalings keep their promise between the samples (001 §8.3, eq. 7.61).

Each function is checked on a grid 100x finer than its own samples, with both one-sided values at every
breakpoint (where a trapezoid's or a bang-bang's acceleration jumps), on the path it promises
(robot_dynamics.trajectory.time_scaling module docstring):

* ``scale_to_effort_limits``, ``retime_to_limits`` of a planned trajectory, ``fit_samples_to_effort_limits``
  (``~/plan``): the continuous, stretched profile q(t/k), qd/k, qdd/k^2; for the latter also every returned sample
  exactly (the controller compares the points' efforts with the limits, without tolerance);
* ``retime_to_limits`` of a :class:`SampledTrajectory`: the interpolation of the returned points.

Efforts: ``model.inverse_dynamics`` (the same model the functions use: Newton-Euler with friction and rotor inertia),
peak |Gamma_j| / limit_j <= 1 + 1e-9.  The breakpoints here are the profiles' phase switches by hand (001 eqs. 8.15,
8.19, 8.36: tau, t_f - tau, t_f / 2), not the code's.
"""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics.model.robots import load_model
from robot_dynamics.trajectory import (
    PROFILES,
    SampledTrajectory,
    fit_samples_to_effort_limits,
    retime_to_limits,
    scale_to_effort_limits,
    through_waypoints,
)

MODEL = load_model("rx90")
LIM = MODEL.limits
TIGHT = np.array([40.0, 120.0, 25.0, 40.0, 40.0, 20.0])  # the generator test's: joints 1 and 3 bind
WAYPOINTS = np.array([[0.0, -0.5, 0.5, 0.0, 0.3, 0.0], [1.2, 0.4, -0.6, 1.5, -0.8, -1.6],
                      [-0.5, -0.2, 0.8, -0.5, 0.6, 1.0]])
BOUND = 1.0 + 1e-9
PLAN_PERIOD = 0.01  # ~/plan's default sample period
COARSE = 0.05  # the samples of scale_to_effort_limits / retime_to_limits here
CASES = {"trapezoid": ("trapezoid", 2), "smooth_trapezoid": ("smooth_trapezoid", 2), "bang_bang": ("bang_bang", 2),
         "cubic": ("cubic", 2), "quintic": ("quintic", 2), "linear": ("linear", 2), "waypoints": (None, 3)}


def _switches(traj) -> np.ndarray:
    """Phase switches of a sequence of point-to-point profiles, by hand from each segment's t_f and tau."""
    out, start = [], 0.0
    for seg in traj.segments:
        tf = seg.duration
        b = [0.0, tf] + ([seg.tau, tf - seg.tau] if seg.tau is not None else [])
        b += [tf / 2] if seg.profile == "bang_bang" else []
        out += [start + x for x in b]
        start += tf
    return np.array(out)


def _continuous_states(base, k: float, spacing: float) -> tuple[np.ndarray, ...]:
    """States of base played k times slower on a grid of ``spacing`` (its own time) and 1e-12 t_f on either side
    of every switch of the base; at the stops (the ends of the segments) also the arm at rest, qd = 0 exactly, with
    the acceleration of either side (the model's sign(0) = 0: no Coulomb friction at that instant)."""
    T = base.duration
    sw = _switches(base)
    t = np.concatenate([np.linspace(0.0, T, int(np.ceil(T / spacing)) + 1), sw - 1e-12 * T, sw + 1e-12 * T])
    q, qd, qdd = base.evaluate(np.clip(t, 0.0, T))
    stops = np.concatenate([[0.0], np.cumsum([seg.duration for seg in base.segments])])
    for side in (-1e-12, 1e-12):
        qs, _, qdds = base.evaluate(np.clip(stops, 0.0, T))
        qdds = base.evaluate(np.clip(stops + side * T, 0.0, T))[2]
        q, qd, qdd = np.vstack([q, qs]), np.vstack([qd, np.zeros_like(qs)]), np.vstack([qdd, qdds])
    return q, qd / k, qdd / k**2


def _played_states(traj: SampledTrajectory, per: int = 100) -> tuple[np.ndarray, ...]:
    """The interpolation through the points, ``per`` cells per segment, both ends (1e-12 of it inside); and where a
    joint's velocity (beyond 1e-9, the rounding at a stop) changes sign between two of those (the interpolation may
    reverse a joint near a stop), the
    crossing by bisection with that joint's velocity +-1e-300 (the Coulomb friction Fc sign(qd) jumps there: the
    effort's one-sided limits)."""
    u = np.linspace(0.0, 1.0, per + 1)
    u[0], u[-1] = 1e-12, 1.0 - 1e-12
    t = (traj.times[:-1, None] + np.diff(traj.times)[:, None] * u[None, :]).ravel()
    q, qd, qdd = traj.evaluate(t)
    # the points themselves: their own values (the interpolation's there, without its rounding residue)
    q, qd, qdd = np.vstack([q, traj.positions]), np.vstack([qd, traj.velocities]), np.vstack([qdd, traj.accelerations])
    v = qd[: t.size].reshape(-1, per + 1, traj.n)
    v = np.where(np.abs(v) > 1e-9, v, 0.0)  # at a stop the interpolated velocity is rounding noise: no reversal
    seg, cell, joint = np.nonzero(np.sign(v[:, :-1]) * np.sign(v[:, 1:]) < 0)
    lo, hi = t.reshape(-1, per + 1)[seg, cell], t.reshape(-1, per + 1)[seg, cell + 1]
    sign_lo = np.sign(v[seg, cell, joint])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        same = np.sign(traj.evaluate(mid)[1][np.arange(mid.size), joint]) == sign_lo
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    if lo.size:
        cq, cqd, cqdd = traj.evaluate(0.5 * (lo + hi))
        for tiny in (-1e-300, 1e-300):
            side = cqd.copy()
            side[np.arange(lo.size), joint] = tiny
            q, qd, qdd = np.vstack([q, cq]), np.vstack([qd, side]), np.vstack([qdd, cqdd])
    return q, qd, qdd


def _peak(q, qd, qdd, effort, model=MODEL) -> float:
    out = 0.0
    for lo in range(0, q.shape[0], 20000):
        sl = slice(lo, lo + 20000)
        out = max(out, float(np.max(np.abs(model.inverse_dynamics(q[sl], qd[sl], qdd[sl])) / effort)))
    return out


def _check_all(base, effort, coarse: float = COARSE, period: float = PLAN_PERIOD, model=MODEL) -> dict[str, float]:
    """Peak ratios of the four promises for one planned trajectory (``coarse``: the samples of the first three,
    ``period``: fit_samples'); asserts each <= BOUND.  The functions and the check use the same ``model``."""
    peaks, minimal = {}, {}  # minimal: the peak a stretch no larger than needed must reach (a margin of 1e-6 on k)
    res = scale_to_effort_limits(base, model, effort, period=coarse)
    peaks["scale_to_effort_limits"] = _peak(*_continuous_states(base, res.scale, coarse / 100), effort, model)
    minimal["scale_to_effort_limits"] = 1.0 - 1e-5 if res.scale > 1.0 else 0.0  # (the oracle grid misses ~1e-6)
    res = retime_to_limits(base, model, effort, np.inf, period=coarse)
    peaks["retime_to_limits (profile)"] = _peak(*_continuous_states(base, res.scale, coarse / 100), effort, model)
    minimal["retime_to_limits (profile)"] = 1.0 - 1e-5 if res.binding == "effort" else 0.0
    t, q, qd, qdd = base.sample(coarse)
    res = retime_to_limits(SampledTrajectory(t, q, qd, qdd), model, effort, np.inf, time_quantum=1e-9)
    peaks["retime_to_limits (points)"] = _peak(*_played_states(res.trajectory, 400), effort, model)  # 400 > 100
    minimal["retime_to_limits (points)"] = 1.0 - 5e-5 if res.binding == "effort" else 0.0  # sharp peaks: 400/seg
    fit = fit_samples_to_effort_limits(base, model, period, effort)
    peaks["fit_samples (profile)"] = _peak(*_continuous_states(base, fit.scale, period / fit.scale / 100), effort,
                                           model)
    minimal["fit_samples (profile)"] = 1.0 - 1e-5 if fit.scale > 1.0 else 0.0
    tau = model.inverse_dynamics(fit.q, fit.qd, fit.qdd)
    np.testing.assert_array_equal(fit.effort, tau)
    assert np.all(np.abs(fit.effort) <= effort)  # the controller's own check of the points: no tolerance
    peaks["fit_samples (points)"] = float(np.max(np.abs(tau) / effort))
    for name, value in peaks.items():
        assert minimal.get(name, 0.0) <= value <= BOUND, (name, value)
    return peaks


@pytest.fixture(scope="module")
def fast_model():
    """The RX-90 with the compiled programs (the nodes' default engine; the NumPy reference of the other tests
    costs ~1 ms a call, which the 2800 time scalings below would pay tens of thousands of times)."""
    model = load_model("rx90")
    model.set_backend("auto")
    model.compile("inverse_dynamics", wait=True)
    return model


@pytest.mark.parametrize("effort", ["tight", "urdf x0.45"])
def test_rx90_trapezoid_peaks(effort):
    """The reported case: the RX-90 trapezoid through the generator test's waypoints, stretched by the effort
    limits (the premise: the unscaled plan needs more), on both sides of every acceleration switch."""
    limits = TIGHT if effort == "tight" else LIM["effort"] * 0.45
    base = through_waypoints(WAYPOINTS, LIM["velocity"], LIM["acceleration"], profile="trapezoid")
    assert _peak(*_continuous_states(base, 1.0, 1e-3), limits) > 1.1
    peaks = _check_all(base, limits)
    print(f"\nRX-90 trapezoid ({effort}): " + ", ".join(f"{k} {v:.12f}" for k, v in peaks.items()))
    assert max(peaks.values()) > 1.0 - 1e-4  # tight: the stretch is no larger than needed


PLANS = 50  # per profile: 400 plans in all, each checked on grids 100x finer than its samples


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_random_plans_peaks(case, fast_model):
    """PLANS random plans per profile (waypoint plans cycle through the profiles), the effort limits set per plan so
    that the stretch binds (0.6 of the plan's unscaled peak, at least 1.15 x its static load, Coulomb friction either
    way: an interpolation may move a joint backwards a little).  Samples every 0.05 s for the first three functions,
    every 0.01 s (~/plan's default) for fit_samples; the grids 100x finer."""
    profile, count = CASES[case]
    rng = np.random.default_rng(2901)
    worst: dict[str, float] = {}
    stretched = 0
    for i in range(PLANS):
        prof = profile or PROFILES[i % len(PROFILES)]
        W = rng.uniform(LIM["lower"], LIM["upper"], (count, 6))
        base = through_waypoints(W, LIM["velocity"], LIM["acceleration"], profile=prof)
        q, qd, qdd = _continuous_states(base, 1.0, base.duration / 200)
        dynamic = np.max(np.abs(fast_model.inverse_dynamics(q, qd, qdd)), axis=0)
        static = np.max(np.abs(fast_model.inverse_dynamics(q, 0 * qd, 0 * qdd)), axis=0) + MODEL.Fc  # either sign
        effort = np.maximum(0.6 * dynamic, 1.15 * static)
        stretched += _peak(q, qd, qdd, effort, fast_model) > 1.0
        for name, value in _check_all(base, effort, PLAN_PERIOD * 5, PLAN_PERIOD, fast_model).items():
            worst[name] = max(worst.get(name, 0.0), value)
    print(f"\n{case}: worst peak ratios " + ", ".join(f"{k} {v:.12f}" for k, v in worst.items()))
    assert stretched >= 0.9 * PLANS  # the premise: the limits bind
