"""Uniform time scaling of a trajectory to respect the effort limits (001 §8.3, [Hollerbach 84]).

Playing a trajectory k times slower, q_k(t) = q(t/k), gives qd/k and qdd/k^2, so
for the model of 001 eq. 7.61

    Gamma(k) = A(q) qdd / k^2 + C(q, qd) qd / k^2 + Q(q) + Fv qd / k + Fc sign(qd) + Ia qdd / k^2.

With x = 1/k every effort is an exact quadratic c0 + c1 x + c2 x^2 in x (for
x > 0 sign(qd/k) = sign(qd)).  The three coefficients of each state and joint
are obtained from three calls of the inverse dynamics at x = 1, 1/2, 1/4, which
handles gravity, the velocity/acceleration terms and both friction terms
exactly (no need to split the model; without friction c1 = 0 and this is the
classic tau(k) = (tau - tau(q,0,0))/k^2 + tau(q,0,0)).

The scale is the smallest k such that every slower playback (k' >= k) respects the limits: 1/k is the smallest
positive root of |c0 + c1 x + c2 x^2| = limit over the states and joints.  If a static term alone (gravity +
Coulomb, c0) exceeds a limit, no stretch helps: ValueError.

*Which* states: the trajectory between its samples, not only at them (:mod:`.effort_bounds`): a dense grid on every
smooth piece, both one-sided values at each breakpoint (where the acceleration of a trapezoid or a bang-bang jumps),
a zoom into the cells near the peak, and both sides of every velocity reversal (where Fc sign(qd) jumps), so that
the peak |Gamma_j| / limit_j of the result stays <= 1 + 1e-9 on any finer grid.  At a stop (qd = 0) both readings
count: the model's sign(0) = 0 (no Coulomb friction at that instant) and the limit of the motion on either side
(Coulomb friction in its direction).  The rest before 0 and after the end is not part of the trajectory.  The
functions differ in the path they promise:

* :func:`scale_to_effort_limits`: the trajectory itself (for a planned profile: the continuous profile);
* :func:`retime_to_limits`: a :class:`~robot_dynamics.trajectory.sampled.SampledTrajectory` is the path a
  controller interpolates through its points: that interpolation, segment by segment (``subsamples`` cells each),
  checked again on the result after its times are rounded; any other trajectory: itself.  The velocity limits bind
  through the exact peaks of the interpolated path (:func:`~robot_dynamics.trajectory.sampled.peak_rates`), k
  may be < 1 (faster);
* :func:`fit_samples_to_effort_limits` (``~/plan``): the continuous (stretched) profile at every instant, and
  every returned sample's own state (the samples of :func:`~robot_dynamics.trajectory.playback.playback_samples`:
  at a breakpoint the sample's acceleration lies between the one-sided ones).  What a controller interpolates
  between the samples is that profile except within the guard samples around an acceleration switch (0.1 ms at
  the default period), where a C^2 interpolation cannot jump: there its acceleration swings past the switch's
  values by up to ~37 % of the jump (a property of the quintic Hermite interpolation, not of the plan); the points
  themselves, which the controller checks, are within the limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import TimeScaledTrajectory, Trajectory
from .effort_bounds import (
    CHUNK_STATES,
    Dynamics,
    Pieces,
    continuous_pieces,
    peak_effort_ratio,
    quadratics,
    ratio,
    row_crossings,
    sampled_pieces,
    scan,
    smallest_crossing,
    smallest_positive_root,
    states_crossing,
    static_error,
)
from .optimal_timing import DEFAULT_GRIDPOINTS, limit_vector, time_optimal
from .playback import breakpoint_states, message_times, playback_samples
from .sampled import SampledTrajectory, check_path_limits, peak_rates


@dataclass
class TimeScalingResult:
    """Outcome of :func:`scale_to_effort_limits`.

    trajectory: the (possibly) stretched trajectory; scale: k (>= 1 for scale_to_effort_limits); duration: its t_f;
    peak_ratio_before / peak_ratio: max_j,t |Gamma_j| / limit_j before (on the grid) / after scaling (grid and
    refined cells);
    margin: 1 - peak_ratio (>= 0 when feasible; ~0 when the stretch was needed).
    """

    trajectory: Trajectory
    scale: float
    duration: float
    peak_ratio_before: float
    peak_ratio: float
    effort_scale: float = 0.0    # retime_to_limits: smallest k of the effort limits alone (0: none binds)
    velocity_scale: float = 0.0  # retime_to_limits: smallest k of the velocity limits alone (0: none binds)
    binding: str = ""  # retime_to_limits: "effort", "velocity", "acceleration", "minimum" (min_scale) or "none"
    peak_velocity_ratio: float = 0.0  # retime_to_limits: max_j,t |qd_j| / v_j after scaling

    @property
    def margin(self) -> float:
        return 1.0 - self.peak_ratio


def _dynamics_function(dynamics: Any) -> Dynamics:
    if hasattr(dynamics, "inverse_dynamics"):
        return dynamics.inverse_dynamics
    if callable(dynamics):
        return dynamics
    raise ValueError("dynamics must be a RobotModel (with inverse_dynamics) or a callable (q, qd, qdd) -> efforts")


_limit_vector = limit_vector  # one validator (optimal_timing's)


def _effort_limits(dynamics: Any, effort_limits: Any, n: int) -> np.ndarray:
    if effort_limits is None:
        if not hasattr(dynamics, "limits"):
            raise ValueError("effort_limits are required when dynamics is a plain callable")
        effort_limits = dynamics.limits["effort"]
    return _limit_vector(effort_limits, n, "effort limits")


def _sample_times(traj: Trajectory, period: float | None) -> np.ndarray:
    if traj.duration == 0.0:
        return np.zeros(1)
    if period is None:
        period = traj.duration / 2000.0
    return traj.sample(period)[0]


def _efforts(fn: Dynamics, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """fn over the rows, :data:`CHUNK_STATES` at a time (bounded memory), shape-checked."""
    out = np.empty_like(q)
    for lo in range(0, q.shape[0], CHUNK_STATES):
        sl = slice(lo, lo + CHUNK_STATES)
        tau = np.asarray(fn(q[sl], qd[sl], qdd[sl]), dtype=float)
        if tau.shape != q[sl].shape:
            raise ValueError(f"dynamics returned shape {tau.shape}, expected {q[sl].shape}")
        out[sl] = tau
    return out


def efforts_along(traj: Trajectory, dynamics: Any, times: Any, scale: float = 1.0) -> np.ndarray:
    """Efforts (len(times), n) needed to play ``traj`` stretched by ``scale`` (times are of the base trajectory)."""
    fn = _dynamics_function(dynamics)
    t = np.atleast_1d(np.asarray(times, dtype=float))
    out = np.empty((t.size, traj.n))
    for lo in range(0, t.size, CHUNK_STATES):
        q, qd, qdd = traj.evaluate(t[lo:lo + CHUNK_STATES])
        out[lo:lo + CHUNK_STATES] = _efforts(fn, q, qd / scale, qdd / scale**2)
    return out


# kept for callers of the former private helpers
_smallest_positive_root = smallest_positive_root
_quadratics = quadratics


def _first_crossing(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, lim: np.ndarray,
                    names: list[str] | None = None) -> float:
    """Smallest x > 0 where some |c0 + c1 x + c2 x^2| reaches its limit (inf if none); ValueError when the
    static term c0 (gravity + Coulomb friction) alone is at or beyond a limit."""
    if (err := static_error(c0, lim, names)) is not None:
        raise err
    return float(np.min(row_crossings(c0, c1, c2, lim), initial=math.inf))


_peak_ratio = ratio


def scale_to_effort_limits(traj: Trajectory, dynamics: Any, effort_limits: Any = None,
                           period: float | None = None) -> TimeScalingResult:
    """Smallest uniform time stretch k >= 1 that keeps |Gamma_j(t)| <= effort_j at every t (module docstring).

    dynamics: a RobotModel (``inverse_dynamics`` batch (N, n)) or a callable
    (q, qd, qdd) -> (N, n) efforts.  effort_limits: (n,) or scalar, default
    ``dynamics.limits["effort"]``.  period: spacing of the grid on the *unscaled* trajectory (default
    duration / 2000), its breakpoints added (both sides), the cells near the peak refined.
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    pieces = continuous_pieces(traj, _sample_times(traj, period), 1)
    x_star, before = smallest_crossing(pieces, fn, lim)
    k = 1.0 if x_star >= 1.0 else (1.0 / x_star) * (1.0 + 1e-12)
    out = traj if k == 1.0 else TimeScaledTrajectory(traj, k)
    return TimeScalingResult(out, k, out.duration, before, peak_effort_ratio(pieces, fn, lim, k))


# ------------------------------------------------------------ optimal uniform scale (both ways)
def segment_grid(traj: SampledTrajectory, subsamples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, qd, qdd) of every segment of ``traj`` at s = i T / subsamples, i = 0..subsamples (both ends: the
    one-sided values at each point), from the segment polynomials; the single point of a one-point trajectory.
    (All at once: for long trajectories :func:`~.effort_bounds.sampled_pieces` goes by chunks.)"""
    T = np.diff(traj.times)
    if T.size == 0:
        q = traj.positions[:1].copy()
        return q, np.zeros_like(q), np.zeros_like(q)
    u = np.linspace(0.0, 1.0, int(subsamples) + 1)
    seg = np.repeat(np.arange(T.size), u.size)
    return traj.segment_states(seg, np.tile(u, T.size) * T[seg])


def scaled_samples(traj: SampledTrajectory, k: float, time_quantum: float = 0.0) -> SampledTrajectory:
    """The points of ``traj`` played k times slower (001 §8.3): times k t_i (rounded to ``time_quantum`` when
    > 0, e.g. 1e-9 for a message's nanoseconds), velocities / k, accelerations / k^2; the same fields (so the
    same interpolation degree, hence the same path)."""
    t = traj.times * k
    if time_quantum == 1e-9:  # a message's nanoseconds, read back as a receiver does
        t = message_times(t)
    elif time_quantum > 0:
        t = np.round(t / time_quantum) * time_quantum
    v = None if traj.velocities is None else traj.velocities / k
    a = None if traj.accelerations is None else traj.accelerations / k**2
    return SampledTrajectory(t, traj.positions, v, a)


def _scale_from_limits(x_star: float, peak_v: np.ndarray, vel: np.ndarray) -> tuple[float, float]:
    k_eff = 0.0 if math.isinf(x_star) else 1.0 / x_star
    finite = np.isfinite(vel)
    k_vel = float(np.max(peak_v[finite] / vel[finite])) if np.any(finite) else 0.0
    return k_eff, k_vel


def _grid_rates(pieces: Pieces, n: int) -> tuple[np.ndarray, np.ndarray]:
    """max |qd_j|, max |qdd_j| over the grid of ``pieces`` (both sides of the breakpoints), chunked."""
    peaks = [np.zeros(n), np.zeros(n)]

    def objective(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        peaks[0] = np.maximum(peaks[0], np.abs(qd).max(axis=0, initial=0.0))
        peaks[1] = np.maximum(peaks[1], np.abs(qdd).max(axis=0, initial=0.0))
        return np.zeros(q.shape[0])

    scan(pieces, objective)
    return peaks[0], peaks[1]


def retime_to_limits(traj: Trajectory, dynamics: Any, effort_limits: Any = None, velocity_limits: Any = None, *,
                     acceleration_limits: Any = None, subsamples: int = 20, period: float | None = None,
                     min_scale: float = 0.0, margin: float = 1e-6, time_quantum: float = 0.0,
                     names: list[str] | None = None, method: str = "uniform",
                     gridpoints: Any = DEFAULT_GRIDPOINTS) -> TimeScalingResult:
    """Optimal uniform time scale k > 0 (q_k(t) = q(t/k), 001 §8.3; k < 1 plays faster) such that every
    k' >= k keeps |Gamma_j| <= effort_j and |qd_j| <= velocity_j (see the module docstring).

    ``traj`` a :class:`SampledTrajectory`: efforts on its interpolation (``subsamples`` cells per segment, both
    ends, refined near the peak), velocity exact on the interpolated path (:func:`peak_rates`); the result's
    trajectory is :func:`scaled_samples` (times rounded to ``time_quantum``) and is checked again after rounding
    (k grows by the excess if a rounded time pushed a value over).  Another trajectory: itself, on a grid of
    ``period`` (default duration / 100 / subsamples) and its breakpoints (both sides).  k = max(k_effort,
    k_velocity) (1 + margin), at least ``min_scale``; 1 when no finite limit binds.  Limits default to
    ``dynamics.limits`` (``effort``, ``velocity``); inf = unlimited.  ``acceleration_limits`` (default none):
    |qdd_j / k^2| <= a_j too, i.e. k >= sqrt(max_t |qdd_j| / a_j).  ValueError when a static effort alone exceeds
    a limit.  Memory: bounded (chunks of :data:`~.effort_bounds.CHUNK_STATES` states), whatever the length.

    ``method="time_optimal"``: not a uniform stretch but the fastest time law along the same path (the
    configurations ``traj`` goes through, its time as the path parameter) within the same limits, on the continuous
    curve (:func:`~.optimal_timing.time_optimal` on ``gridpoints``); the result's ``trajectory`` is a
    :class:`~.optimal_timing.PathTimeLaw` that starts and ends at rest, ``scale`` its duration over ``traj``'s.
    ``min_scale``, ``time_quantum`` and ``subsamples`` belong to the uniform method.
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    if velocity_limits is None:
        velocity_limits = dynamics.limits["velocity"] if hasattr(dynamics, "limits") else np.inf
    vel = _limit_vector(velocity_limits, n, "velocity limits")
    acc = _limit_vector(np.inf if acceleration_limits is None else acceleration_limits, n, "acceleration limits")
    if method == "time_optimal":
        if min_scale > 0.0 or time_quantum > 0.0:
            raise ValueError("min_scale and time_quantum apply to the uniform method, not to time_optimal")
        return _time_optimal_result(traj, fn, lim, vel, acc, gridpoints, names)
    if method != "uniform":
        raise ValueError(f"method must be 'uniform' or 'time_optimal', got {method!r}")
    sampled = isinstance(traj, SampledTrajectory)
    if sampled:
        pieces = sampled_pieces(traj, subsamples)
        peak_v, peak_a = peak_rates(traj)
    else:
        p = period if period is not None else (traj.duration / 100.0 / subsamples if traj.duration > 0 else 1.0)
        pieces = continuous_pieces(traj, _sample_times(traj, p), 1)
        peak_v, peak_a = _grid_rates(pieces, n)
    x_eff, before = smallest_crossing(pieces, fn, lim, names)
    k_eff, k_vel = _scale_from_limits(x_eff, peak_v, vel)
    k_acc = math.sqrt(_scale_from_limits(math.inf, peak_a, acc)[1])
    scales = {"effort": k_eff, "velocity": k_vel, "acceleration": k_acc}
    binding = max(scales, key=scales.get)
    k = scales[binding] * (1.0 + margin)
    if k == 0.0:
        binding, k = "none", 1.0
    if min_scale > k:
        k, binding = float(min_scale), "minimum"
    for _ in range(8):
        if sampled:
            out = scaled_samples(traj, k, time_quantum)
            e_ratio = peak_effort_ratio(sampled_pieces(out, subsamples), fn, lim)
            pv, pa = peak_rates(out)
        else:
            out = TimeScaledTrajectory(traj, k)
            e_ratio = peak_effort_ratio(pieces, fn, lim, k)
            pv, pa = peak_v / k, peak_a / k**2
        v_ratio = float(np.max(pv / vel))
        worst = max(e_ratio, v_ratio, float(np.max(pa / acc)))
        if worst <= 1.0:
            break
        k *= 1.0 + 2.0 * (worst - 1.0) + margin  # a rounded time pushed a value over: a little slower
    else:
        raise ValueError(f"could not fit the limits after rounding the times (peak ratio {worst:.9g})")
    return TimeScalingResult(out, k, out.duration, before, e_ratio, k_eff, k_vel, binding, v_ratio)


def _time_optimal_result(traj: Trajectory, fn: Dynamics, lim: np.ndarray, vel: np.ndarray, acc: np.ndarray,
                         gridpoints: Any, names: list[str] | None) -> TimeScalingResult:
    """:func:`retime_to_limits` with ``method="time_optimal"``: the path of ``traj`` (s = its time)."""
    if traj.duration <= 0.0:
        raise ValueError("a trajectory of zero duration has no path to time")
    pieces = sampled_pieces(traj, 20) if isinstance(traj, SampledTrajectory) else \
        continuous_pieces(traj, _sample_times(traj, traj.duration / 2000.0), 1)
    _, before = smallest_crossing(pieces, fn, lim, names)
    res = time_optimal(traj, fn, lim, vel, acceleration_limits=acc, gridpoints=gridpoints, names=names)
    return TimeScalingResult(res.trajectory, res.duration / traj.duration, res.duration, before, res.effort_ratio,
                             binding=res.binding, peak_velocity_ratio=res.velocity_ratio)


def retime_points(times: Any, positions: Any, velocities: Any, accelerations: Any, dynamics: Any,
                  effort_limits: Any = None, velocity_limits: Any = None, *, acceleration_limits: Any = None,
                  lower: Any = None, upper: Any = None, only_stretch: bool = False,
                  names: list[str] | None = None) -> tuple[TimeScalingResult, np.ndarray]:
    """``~/time_scale``'s work on the points of a trajectory (arrays in model order): the path interpolated through
    them must be within the position limits (``lower``/``upper``, default ``dynamics.limits``; scaling never moves
    it), then :func:`retime_to_limits` (``only_stretch``: k >= 1; times rounded to the nanoseconds of a message)
    and the efforts at the returned points.  Returns (result, efforts (m, n)).  Memory: bounded chunks of
    :data:`~.effort_bounds.CHUNK_STATES` states plus O(m) arrays of the trajectory itself."""
    traj = SampledTrajectory(times, positions, velocities, accelerations)
    limits = getattr(dynamics, "limits", {})
    check_path_limits(traj, limits["lower"] if lower is None else lower, limits["upper"] if upper is None else upper,
                      names=names)
    res = retime_to_limits(traj, dynamics, effort_limits, velocity_limits, acceleration_limits=acceleration_limits,
                           min_scale=1.0 if only_stretch else 0.0, time_quantum=1e-9, names=names)
    out = res.trajectory
    return res, efforts_along(out, dynamics, out.times)  # at the points (the last one: its segment's end)


@dataclass
class FittedSamples:
    """Outcome of :func:`fit_samples_to_effort_limits`: the (stretched) trajectory and its samples.

    scale: stretch k applied to the base trajectory; min_scale: the smallest feasible k (effort limits on the
    continuous profile and on the samples); times, q, qd, qdd, effort: the samples at ``period`` and at the
    breakpoints (:func:`~robot_dynamics.trajectory.playback.playback_samples`; times as a message carries them;
    shapes (N,), (N, n)); fields: 3, or 1 when a controller should get positions only (the velocity jumps);
    peak_ratio_before / peak_ratio: max |Gamma_j| / effort_j of the base (unscaled) grid / of the samples.
    """

    trajectory: Trajectory
    scale: float
    min_scale: float
    times: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    effort: np.ndarray
    peak_ratio_before: float
    peak_ratio: float
    fields: int = 3

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def played(self) -> SampledTrajectory:
        """The path a controller interpolates through the samples (what it checks and plays)."""
        if self.fields == 1:
            return SampledTrajectory(self.times, self.q)
        return SampledTrajectory(self.times, self.q, self.qd, self.qdd)


def fit_samples_to_effort_limits(traj: Trajectory, dynamics: Any, period: float, effort_limits: Any = None,
                                 duration: float = 0.0, subsamples: int = 20, margin: float = 1e-6,
                                 names: list[str] | None = None, max_samples: int | None = None) -> FittedSamples:
    """Stretch ``traj`` (k >= 1, 001 §8.3) so that it stays within ``effort_limits`` (default
    ``dynamics.limits["effort"]``) at every instant for every k' >= k, and sample it for a controller
    (:func:`~robot_dynamics.trajectory.playback.playback_samples`: every ``period`` and at the breakpoints).

    The continuous profile is checked on a grid of spacing min(period, duration / 100) / ``subsamples`` (base
    time), both sides of every breakpoint and refined near the peak (:mod:`.effort_bounds`); the states of the
    samples at the breakpoints (their accelerations chosen between the one-sided ones) too, and the samples
    actually returned are checked last (a state over its limit joins the set and k grows).  ``duration`` > 0 asks
    for that duration (k = duration / traj.duration): ValueError when it is shorter than the feasible minimum, or
    when the result would need more than ``max_samples`` samples.
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    if traj.duration <= 0:
        ps = playback_samples(traj, period)
        tau = _efforts(fn, ps.q, ps.qd, ps.qdd)
        if (err := static_error(tau, lim, names)) is not None:
            raise err
        peak = ratio(tau, lim)
        return FittedSamples(traj, 1.0, 1.0, ps.times, ps.q, ps.qd, ps.qdd, tau, peak, peak, ps.fields)
    h = min(period, traj.duration / 100.0)
    pieces = continuous_pieces(traj, _sample_times(traj, h), subsamples)
    x_star, before = smallest_crossing(pieces, fn, lim, names)
    _, bq, bv, ba, *_ = breakpoint_states(traj)
    x_star = min(x_star, states_crossing(fn, lim, bq, bv, ba, names))
    wanted = duration / traj.duration if duration > 0 else 0.0
    for _ in range(8):
        k_min = 1.0 if x_star >= 1.0 else (1.0 / x_star) * (1.0 + margin)
        if wanted and wanted < k_min * (1 - 1e-12):
            raise ValueError(f"duration {duration:.6g} s is shorter than the minimum {k_min * traj.duration:.6g} s "
                             f"within the effort limits (the velocity and acceleration limits allow "
                             f"{traj.duration:.6g} s)")
        k = wanted or k_min
        if max_samples is not None and k * traj.duration / period > max_samples:
            raise ValueError(f"{k * traj.duration / period:.0f} samples (stretched x{k:.6g} for the effort limits) "
                             f"exceed {max_samples}; use a longer sample_period")
        ps = playback_samples(traj, period, k)
        tau = _efforts(fn, ps.q, ps.qd, ps.qdd)
        peak = ratio(tau, lim)
        if peak <= 1.0:
            out = traj if k == 1.0 else TimeScaledTrajectory(traj, k)
            return FittedSamples(out, k, k_min, ps.times, ps.q, ps.qd, ps.qdd, tau, before, peak, ps.fields)
        # a sample over its limit (between grid points, or a breakpoint merged with another): its base-time state
        # joins the set (exact there for every k' >= k)
        x_star = min(x_star, states_crossing(fn, lim, ps.q, ps.qd * k, ps.qdd * k**2, names))
    raise ValueError(f"could not fit the samples to the effort limits (peak ratio {peak:.9g})")
