"""Planned joint trajectories as a controller receives them: the core of ``trajectory_generator``'s ``~/plan``.

:func:`plan_samples` plans through waypoints (minimum time under the velocity and acceleration limits, 001 §8.3),
stretches the plan uniformly to the effort limits (001 §8.3, :func:`~.time_scaling.fit_samples_to_effort_limits`),
samples it for a controller (:func:`~.playback.playback_samples`: every period and at every breakpoint, times in
nanoseconds) and *verifies* the result with the controller's own acceptance test,
:func:`~.sampled.check_path_limits` with its default tolerances (:data:`~.sampled.PATH_POSITION_TOLERANCE`,
:data:`~.sampled.PATH_RATE_TOLERANCE`) on the :class:`~.sampled.SampledTrajectory` the controller builds from the
points: one policy for both.

By construction the interpolation of the samples follows the plan (exactly between breakpoints; within the
neighbouring samples' velocities and on the plan's side of a stop around an acceleration switch), so the check
passes with the plan at the limits themselves: no margin is taken off the limits and the plan is not slower than
the exact one (the interpolated velocity peaks measured at 1 + 8e-10 of the limit from the nanosecond rounding of
the switch times, against the 1e-6 tolerance).  Should the check still fail on a velocity (it has not been seen:
the fallback guards a bug, not a known case), the plan is stretched uniformly by the measured peak ratio (exact
polynomial peaks, :func:`~.sampled.peak_rates`) and sampled again, and ``velocity_stretch`` reports it; a position
outside the limits is an error (a plan stays between its waypoints).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import TimeScaledTrajectory, Trajectory
from .joint_space import through_waypoints
from .optimal_timing import time_optimal
from .sampled import PATH_RATE_TOLERANCE, SampledTrajectory, check_path_limits, peak_rates
from .time_scaling import FittedSamples, TimeScalingResult, fit_samples_to_effort_limits, retime_to_limits


def plan_joint_trajectory(waypoints: np.ndarray, v_max: np.ndarray, a_max: np.ndarray, profile: str,
                          duration: float) -> Trajectory:
    """Minimum-time synchronized trajectory through ``waypoints`` (m, n), stopping at each (001 §8.3), optionally
    stretched to ``duration`` (velocity and acceleration limits only; the effort limits come after)."""
    traj = through_waypoints(waypoints, v_max, a_max, profile=profile)
    if duration > 0:
        if traj.duration <= 0:
            return traj
        if duration < traj.duration * (1 - 1e-12):
            raise ValueError(f"duration {duration} s is shorter than the minimum {traj.duration:.6g} s for these limits")
        traj = TimeScaledTrajectory(traj, duration / traj.duration)
    return traj


@dataclass
class PlannedSamples:
    """A plan as sent to a controller.

    times (N,) as a message carries them; q, qd, qdd, effort (N, n): the points' states and feed-forward efforts;
    fields: 3 (send positions, velocities, accelerations) or 1 (positions only: the velocity jumps, linear profile
    through waypoints); base: the minimum-time plan of the velocity and acceleration limits; effort_scale: the
    smallest stretch of the effort limits; scale: the stretch applied (>= effort_scale; a requested duration);
    velocity_stretch: the extra stretch of the verification (1.0: none was needed); peak_effort_ratio(_before):
    max |Gamma| / limit at the points / of the unstretched plan; played: what the controller interpolates.
    """

    times: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    effort: np.ndarray
    fields: int
    base: Trajectory
    effort_scale: float
    scale: float
    velocity_stretch: float
    peak_effort_ratio: float
    peak_effort_ratio_before: float
    played: SampledTrajectory

    @property
    def duration(self) -> float:
        return float(self.times[-1])


def _planned(fit: FittedSamples, base: Trajectory, stretch: float) -> PlannedSamples:
    return PlannedSamples(fit.times, fit.q, fit.qd, fit.qdd, fit.effort, fit.fields, base, fit.min_scale, fit.scale,
                          stretch, fit.peak_ratio, fit.peak_ratio_before, fit.played())


def plan_samples(waypoints: Any, v_max: Any, a_max: Any, profile: str, period: float, dynamics: Any, *,
                 lower: Any = None, upper: Any = None, effort_limits: Any = None, duration: float = 0.0,
                 names: list[str] | None = None, max_samples: int | None = None,
                 timing: str = "uniform") -> PlannedSamples:
    """The samples ``~/plan`` returns (see the module docstring): plan, stretch to the effort limits, sample every
    ``period`` and at the breakpoints, verify with the controller's :func:`check_path_limits`.

    ``waypoints`` (m, n), the first one the start (it may be outside the position limits: an arm brought back; the
    path then only moves inward from it); ``v_max``, ``a_max`` the planning limits (the velocity check uses
    ``v_max``, never above the robot's); ``lower``/``upper``/``effort_limits`` default to ``dynamics.limits``;
    ``duration`` > 0 asks for a longer plan (ValueError when shorter than the minimum); ``max_samples`` bounds the
    points (ValueError beyond).  ``timing="time_optimal"``: the plan's path retimed to the fastest motion within the
    velocity, acceleration and effort limits together (:func:`~.optimal_timing.time_optimal`) before it is sampled
    (``duration`` may then only lengthen it; ``effort_scale`` is ~1: the time law is within the effort limits).
    """
    if timing not in ("uniform", "time_optimal"):
        raise ValueError(f"timing must be 'uniform' or 'time_optimal', got {timing!r}")
    W = np.asarray(waypoints, dtype=float)
    if profile == "linear" and W.ndim == 2 and W.shape[0] > 2:
        raise ValueError("profile linear through intermediate waypoints jumps the velocity at each of them (an "
                         "infinite acceleration: no arm follows it, a reversal overshoots its velocity limit); use "
                         "trapezoid, smooth_trapezoid, bang_bang, cubic or quintic, or plan the segments one by one")
    limits = getattr(dynamics, "limits", {})
    lower = np.asarray(limits["lower"] if lower is None else lower, dtype=float)
    upper = np.asarray(limits["upper"] if upper is None else upper, dtype=float)
    v_max = np.broadcast_to(np.asarray(v_max, dtype=float), (W.shape[1],))
    base = plan_joint_trajectory(W, v_max, a_max, profile, 0.0)
    if timing == "time_optimal" and base.duration > 0:
        base = time_optimal(base, dynamics, effort_limits, v_max, acceleration_limits=a_max, names=names).trajectory
    return sample_for_controller(base, dynamics, period, v_max, lower, upper, effort_limits, duration, names,
                                 max_samples, W[0])


def sample_for_controller(base: Trajectory, dynamics: Any, period: float, v_max: np.ndarray, lower: np.ndarray,
                          upper: np.ndarray, effort_limits: Any = None, duration: float = 0.0,
                          names: list[str] | None = None, max_samples: int | None = None,
                          start: np.ndarray | None = None) -> PlannedSamples:
    """``base`` stretched to the effort limits (or to ``duration``), sampled every ``period`` and at its breakpoints,
    and verified with the controller's :func:`check_path_limits` (stretched again by the interpolated velocity's
    excess, should there be one; ``start`` may be outside the position limits: the path only moves inward)."""
    if duration > 0 and base.duration > 0 and duration < base.duration * (1 - 1e-12):
        raise ValueError(f"duration {duration} s is shorter than the minimum {base.duration:.6g} s for these limits")
    if max_samples is not None and max(base.duration, duration) / period > max_samples:
        raise ValueError(f"{max(base.duration, duration) / period:.0f} samples exceed {max_samples}; use a longer "
                         f"sample_period")
    fit = fit_samples_to_effort_limits(base, dynamics, period, effort_limits, duration=duration, names=names,
                                       max_samples=max_samples)
    stretch = 1.0
    for _ in range(4):
        if max_samples is not None and fit.times.size > max_samples:  # the breakpoints add a few to the period's
            raise ValueError(f"{fit.times.size} samples exceed {max_samples}; use a longer sample_period")
        played = fit.played()
        try:
            check_path_limits(played, lower, upper, v_max, names=names, start=start)
            return _planned(fit, base, stretch)
        except ValueError:
            peak = float(np.max(peak_rates(played)[0] / v_max))
            if not peak > 1.0 + 0.5 * PATH_RATE_TOLERANCE or base.duration <= 0:
                raise  # a position: no stretch helps
        stretch *= peak * (1.0 + 1e-9)
        fit = fit_samples_to_effort_limits(base, dynamics, period, effort_limits,
                                           duration=fit.scale * peak * (1.0 + 1e-9) * base.duration, names=names,
                                           max_samples=max_samples)
    raise ValueError(f"could not bring the sampled plan within the velocity limits (x{stretch:.9g})")


def retime_samples(times: Any, positions: Any, velocities: Any, accelerations: Any, dynamics: Any, period: float,
                   effort_limits: Any = None, velocity_limits: Any = None, *, acceleration_limits: Any = None,
                   lower: Any = None, upper: Any = None, names: list[str] | None = None,
                   max_samples: int | None = None) -> tuple[PlannedSamples, TimeScalingResult, float]:
    """``~/time_scale`` with ``timing: time_optimal``: the path the points interpolate (as a controller plays them;
    within the position limits) retimed to the fastest motion within the limits
    (:func:`~.time_scaling.retime_to_limits` ``method="time_optimal"``), then sampled for a controller every
    ``period`` and at the time law's breakpoints (:func:`sample_for_controller`).  Returns (samples, retiming, the
    peak |qd_j| / limit_j of the samples' interpolation)."""
    traj = SampledTrajectory(times, positions, velocities, accelerations)
    limits = getattr(dynamics, "limits", {})
    lower = np.asarray(limits["lower"] if lower is None else lower, dtype=float)
    upper = np.asarray(limits["upper"] if upper is None else upper, dtype=float)
    check_path_limits(traj, lower, upper, names=names)
    res = retime_to_limits(traj, dynamics, effort_limits, velocity_limits, acceleration_limits=acceleration_limits,
                           method="time_optimal", names=names)
    vel = np.asarray(limits["velocity"] if velocity_limits is None else velocity_limits, dtype=float)
    vel = np.broadcast_to(vel, (traj.n,))
    fit = sample_for_controller(res.trajectory, dynamics, period, vel, lower, upper, effort_limits, names=names,
                                max_samples=max_samples)
    return fit, res, float(np.max(peak_rates(fit.played)[0] / vel))


START_TIMES = np.geomspace(1e-3, 120.0, 400)
"""Durations tried for a start segment from a moving state, shortest first (a ratio of 1.03 between two)."""
START_SUB = 32
"""Cells per start segment where the effort limits are checked (grid plus refinement, :mod:`.effort_bounds`)."""


def start_segment(q: Any, qd: Any, qdd: Any, first: Any, lower: Any, upper: Any, v_max: Any, a_max: Any,
                  dynamics: Any = None, effort_limits: Any = None, names: list[str] | None = None
                  ) -> SampledTrajectory:
    """The shortest start segment from a moving state (``q``, ``qd``, ``qdd``: a controller's running reference) to
    ``first`` at rest that keeps the limits: the controller's own start segment (the quintic of
    :meth:`~.sampled.SampledTrajectory.from_state`, continuous to the acceleration), its duration the first of
    :data:`START_TIMES` with the interpolated positions in [lower, upper] (or no farther out than ``q``), the
    velocities and accelerations within ``v_max``, ``a_max`` (:func:`check_path_limits`, the controller's
    tolerances) and, with ``dynamics``, the efforts within ``effort_limits`` (default ``dynamics.limits``) on
    :data:`START_SUB` cells refined.  A plan whose first point is ``first`` at that time, sent with header stamp 0,
    continues the running motion there.  ValueError when no duration keeps them (moving too fast toward a limit)."""
    from .effort_bounds import peak_effort_ratio, sampled_pieces

    n = np.asarray(first, float).size
    start = [np.asarray(x, float).reshape(n) for x in (q, qd, qdd)]
    end = np.asarray(first, float).reshape(n)
    if not all(np.all(np.isfinite(x)) for x in (*start, end)):
        raise ValueError("the moving state and the first waypoint must be finite")
    lim = getattr(dynamics, "limits", {}) if dynamics is not None else {}
    effort = None if dynamics is None else np.asarray(lim["effort"] if effort_limits is None else effort_limits, float)
    fn = None if dynamics is None else getattr(dynamics, "inverse_dynamics", dynamics)
    why = ["no duration tried"]

    def segment(T: float) -> SampledTrajectory | None:
        seg = SampledTrajectory(np.array([0.0, T]), np.vstack([start[0], end]), np.vstack([start[1], np.zeros(n)]),
                                np.vstack([start[2], np.zeros(n)]))
        try:
            check_path_limits(seg, lower, upper, v_max, a_max, names=names, start=start[0])
        except ValueError as exc:
            why[0] = str(exc)
            return None
        if fn is not None and peak_effort_ratio(sampled_pieces(seg, START_SUB), fn, effort) > 1.0:
            why[0] = "the efforts exceed their limits"
            return None
        return seg

    stride = 16  # every 16th duration first (a ratio of 1.6), then those below the first that keeps the limits
    for k in range(0, START_TIMES.size, stride):
        if (found := segment(START_TIMES[k])) is not None:
            for fine in range(max(k - stride + 1, 0), k):
                if (shorter := segment(START_TIMES[fine])) is not None:
                    return shorter
            return found
    raise ValueError(f"no start segment from the moving state keeps the limits (the longest tried, "
                     f"{START_TIMES[-1]:g} s: {why[0]})")


def at_rest(q: Any, dynamics: Any) -> PlannedSamples:
    """One point at rest at ``q`` (its feed-forward effort: the gravity torques): the plan to a single waypoint
    reached by a start segment."""
    q = np.asarray(q, float).reshape(1, -1)
    zero = np.zeros_like(q)
    fn = getattr(dynamics, "inverse_dynamics", dynamics)
    effort = np.asarray(fn(q, zero, zero), float).reshape(q.shape)
    point = SampledTrajectory(np.zeros(1), q, zero, zero)
    limits = getattr(dynamics, "limits", {}).get("effort")
    peak = 0.0 if limits is None else float(np.max(np.abs(effort) / np.asarray(limits, float)))
    return PlannedSamples(np.zeros(1), q, zero, zero, effort, 3, point, 1.0, 1.0, 1.0, peak, peak, point)
