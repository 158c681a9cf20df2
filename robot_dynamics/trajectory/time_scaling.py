"""Uniform time scaling of a trajectory to respect the effort limits (001 §8.3, [Hollerbach 84]).

Playing a trajectory k times slower, q_k(t) = q(t/k), gives qd/k and qdd/k^2, so
for the model of 001 eq. 7.61

    Gamma(k) = A(q) qdd / k^2 + C(q, qd) qd / k^2 + Q(q) + Fv qd / k + Fc sign(qd) + Ia qdd / k^2.

With x = 1/k every effort is an exact quadratic c0 + c1 x + c2 x^2 in x (for
x > 0 sign(qd/k) = sign(qd)).  The three coefficients of each sample and joint
are obtained from three calls of the inverse dynamics at x = 1, 1/2, 1/4, which
handles gravity, the velocity/acceleration terms and both friction terms
exactly (no need to split the model; without friction c1 = 0 and this is the
classic tau(k) = (tau - tau(q,0,0))/k^2 + tau(q,0,0)).

The returned scale is the smallest k >= 1 such that every slower playback
(k' >= k) respects the limits at every sample: 1/k is the smallest positive
root of |c0 + c1 x + c2 x^2| = limit over all samples and joints.  If a static
term alone (gravity + Coulomb, c0) exceeds a limit, no stretch helps: ValueError.
Limits are checked at the samples only (choose a fine ``period``).

:func:`retime_to_limits` is the optimal uniform scale either way (k < 1 speeds a slow
trajectory up): the smallest k > 0 with the effort limits at every sample (the same
quadratics in x = 1/k, any x > 0) and the velocity limits (|qd/k| <= v, so
k >= max_t |qd_j(t)| / v_j; exact on the interpolated path of a
:class:`~robot_dynamics.trajectory.sampled.SampledTrajectory`, whose effort samples are
every segment at ``subsamples`` + 1 evenly spaced points, both ends included, so both
one-sided values at a point are checked).  :func:`fit_samples_to_effort_limits`
stretches a planned trajectory so that its samples at a given period (what a
trajectory message carries) and a dense grid between them respect the effort limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import TimeScaledTrajectory, Trajectory
from .sampled import SampledTrajectory, peak_rates

Dynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class TimeScalingResult:
    """Outcome of :func:`scale_to_effort_limits`.

    trajectory: the (possibly) stretched trajectory; scale: k (>= 1 for scale_to_effort_limits); duration: its t_f;
    peak_ratio_before / peak_ratio: max_j,t |Gamma_j| / limit_j before / after scaling;
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


def efforts_along(traj: Trajectory, dynamics: Any, times: Any, scale: float = 1.0) -> np.ndarray:
    """Efforts (len(times), n) needed to play ``traj`` stretched by ``scale`` (times are of the base trajectory)."""
    fn = _dynamics_function(dynamics)
    q, qd, qdd = traj.evaluate(np.atleast_1d(np.asarray(times, dtype=float)))
    tau = np.asarray(fn(q, qd / scale, qdd / scale**2), dtype=float)
    if tau.shape != q.shape:
        raise ValueError(f"dynamics returned shape {tau.shape}, expected {q.shape}")
    return tau


def _smallest_positive_root(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Smallest root > 0 of a x^2 + b x + c = 0, elementwise (inf if none)."""
    out = np.full(a.shape, np.inf)
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), np.abs(c)) + 1e-300
    quad = np.abs(a) > 1e-12 * scale
    disc = b * b - 4.0 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
        # numerically stable pair of roots
        qq = -0.5 * (b + np.copysign(sq, b))
        r1 = np.where(quad, qq / a, np.nan)
        r2 = np.where(quad, c / qq, np.nan)
        lin = np.where(~quad & (np.abs(b) > 0), -c / b, np.nan)
    for r in (r1, r2, lin):
        ok = np.isfinite(r) & (r > 0)
        out = np.where(ok, np.minimum(out, r), out)
    return out


def _quadratics(fn: Dynamics, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, ...]:
    """(c0, c1, c2) with Gamma(x) = c0 + c1 x + c2 x^2 the efforts of (q, x qd, x^2 qdd), x = 1/k, from the
    inverse dynamics at x = 1, 1/2, 1/4 (exact: 001 eq. 7.61 is quadratic in (qd, qdd) scaled this way)."""

    def tau(k: float) -> np.ndarray:
        out = np.asarray(fn(q, qd / k, qdd / k**2), dtype=float)
        if out.shape != q.shape:
            raise ValueError(f"dynamics returned shape {out.shape}, expected {q.shape}")
        return out

    t1, t2, t4 = tau(1.0), tau(2.0), tau(4.0)
    c2 = (8.0 * t1 - 24.0 * t2 + 16.0 * t4) / 3.0
    c0 = (t1 - 6.0 * t2 + 8.0 * t4) / 3.0
    return c0, t1 - c2 - c0, c2


def _first_crossing(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, lim: np.ndarray,
                    names: list[str] | None = None) -> float:
    """Smallest x > 0 where some |c0 + c1 x + c2 x^2| reaches its limit (inf if none); ValueError when the
    static term c0 (gravity + Coulomb friction) alone is at or beyond a limit."""
    finite = np.isfinite(lim)
    if not np.any(finite) or c0.size == 0:
        return math.inf
    over = np.abs(c0) >= lim
    if np.any(over & finite):
        i, j = (int(v) for v in np.argwhere(over & finite)[0])
        name = names[j] if names else f"joint {j}"
        raise ValueError(f"{name}: the static effort (gravity + Coulomb friction) alone is {c0[i, j]:.6g}, beyond "
                         f"its limit {lim[j]:.6g}; no time scaling can make the trajectory feasible")
    x_star = math.inf
    for s in (1.0, -1.0):
        roots = _smallest_positive_root(c2[:, finite], c1[:, finite], (c0 - s * np.where(finite, lim, 0.0))[:, finite])
        if roots.size:
            x_star = min(x_star, float(np.min(roots)))
    return x_star


def _peak_ratio(tau: np.ndarray, lim: np.ndarray) -> float:
    finite = np.isfinite(lim)
    return float(np.max(np.abs(tau[:, finite]) / lim[finite])) if np.any(finite) and tau.size else 0.0


def scale_to_effort_limits(traj: Trajectory, dynamics: Any, effort_limits: Any = None,
                           period: float | None = None) -> TimeScalingResult:
    """Smallest uniform time stretch k >= 1 that keeps |Gamma_j(t)| <= effort_j (see module docstring).

    dynamics: a RobotModel (``inverse_dynamics`` batch (N, n)) or a callable
    (q, qd, qdd) -> (N, n) efforts.  effort_limits: (n,) or scalar, default
    ``dynamics.limits["effort"]``.  period: sampling period on the *unscaled*
    trajectory (default duration / 2000).
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    times = _sample_times(traj, period)
    q, qd, qdd = traj.evaluate(times)
    c0, c1, c2 = _quadratics(fn, q, qd, qdd)
    before = _peak_ratio(c0 + c1 + c2, lim)
    x_star = _first_crossing(c0, c1, c2, lim)
    k = 1.0 if x_star >= 1.0 else (1.0 / x_star) * (1.0 + 1e-12)
    out = traj if k == 1.0 else TimeScaledTrajectory(traj, k)
    after = efforts_along(traj, dynamics, times, k)
    return TimeScalingResult(out, k, out.duration, before, _peak_ratio(after, lim))


# ------------------------------------------------------------ optimal uniform scale (both ways)
def _limit_vector(values: Any, n: int, what: str) -> np.ndarray:
    lim = np.asarray(values, dtype=float)
    if lim.ndim == 0:
        lim = np.full(n, float(lim))
    if lim.shape != (n,) or np.any(np.isnan(lim)) or np.any(lim <= 0.0):
        raise ValueError(f"{what} must be positive (inf allowed) with shape ({n},), got {lim}")
    return lim


def segment_grid(traj: SampledTrajectory, subsamples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, qd, qdd) of every segment of ``traj`` at s = i T / subsamples, i = 0..subsamples (both ends: the
    one-sided values at each point), from the segment polynomials; the single point of a one-point trajectory."""
    coef = traj._coef  # (S, 6, n) power basis in s = t - t_k
    if coef.shape[0] == 0:
        q = traj.positions[:1].copy()
        return q, np.zeros_like(q), np.zeros_like(q)
    T = np.diff(traj.times)
    s = (T[:, None] * np.linspace(0.0, 1.0, int(subsamples) + 1)[None, :]).reshape(-1, 1)  # (S (sub+1), 1)
    c = np.repeat(coef, int(subsamples) + 1, axis=0)
    q = ((((c[:, 5] * s + c[:, 4]) * s + c[:, 3]) * s + c[:, 2]) * s + c[:, 1]) * s + c[:, 0]
    qd = (((5 * c[:, 5] * s + 4 * c[:, 4]) * s + 3 * c[:, 3]) * s + 2 * c[:, 2]) * s + c[:, 1]
    qdd = ((20 * c[:, 5] * s + 12 * c[:, 4]) * s + 6 * c[:, 3]) * s + 2 * c[:, 2]
    return q, qd, qdd


def scaled_samples(traj: SampledTrajectory, k: float, time_quantum: float = 0.0) -> SampledTrajectory:
    """The points of ``traj`` played k times slower (001 §8.3): times k t_i (rounded to ``time_quantum`` when
    > 0, e.g. 1e-9 for a message's nanoseconds), velocities / k, accelerations / k^2; the same fields (so the
    same interpolation degree, hence the same path)."""
    t = traj.times * k
    if time_quantum > 0:
        t = np.round(t / time_quantum) * time_quantum
    v = None if traj.velocities is None else traj.velocities / k
    a = None if traj.accelerations is None else traj.accelerations / k**2
    return SampledTrajectory(t, traj.positions, v, a)


def _scale_from_limits(x_star: float, peak_v: np.ndarray, vel: np.ndarray) -> tuple[float, float]:
    k_eff = 0.0 if math.isinf(x_star) else 1.0 / x_star
    finite = np.isfinite(vel)
    k_vel = float(np.max(peak_v[finite] / vel[finite])) if np.any(finite) else 0.0
    return k_eff, k_vel


def retime_to_limits(traj: Trajectory, dynamics: Any, effort_limits: Any = None, velocity_limits: Any = None, *,
                     acceleration_limits: Any = None, subsamples: int = 20, period: float | None = None, min_scale: float = 0.0,
                     margin: float = 1e-6, time_quantum: float = 0.0,
                     names: list[str] | None = None) -> TimeScalingResult:
    """Optimal uniform time scale k > 0 (q_k(t) = q(t/k), 001 §8.3; k < 1 plays faster) such that every
    k' >= k keeps |Gamma_j| <= effort_j and |qd_j| <= velocity_j (see the module docstring).

    ``traj`` a :class:`SampledTrajectory`: efforts on :func:`segment_grid` (``subsamples`` per segment),
    velocity exact on the interpolated path (:func:`peak_rates`); the result's trajectory is
    :func:`scaled_samples` (times rounded to ``time_quantum``) and is checked again after rounding (k grows by
    the excess if a rounded time pushed a value over).  Another trajectory: samples at ``period`` (default
    duration / 2000 / subsamples * 20) of the base trajectory.  k = max(k_effort, k_velocity) (1 + margin),
    at least ``min_scale``; 1 when no finite limit binds.  Limits default to ``dynamics.limits`` (``effort``,
    ``velocity``); inf = unlimited.  ``acceleration_limits`` (default none): |qdd_j / k^2| <= a_j too, i.e.
    k >= sqrt(max_t |qdd_j| / a_j).  ValueError when a static effort alone exceeds a limit.
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    if velocity_limits is None:
        velocity_limits = dynamics.limits["velocity"] if hasattr(dynamics, "limits") else np.inf
    vel = _limit_vector(velocity_limits, n, "velocity limits")
    acc = _limit_vector(np.inf if acceleration_limits is None else acceleration_limits, n, "acceleration limits")
    sampled = isinstance(traj, SampledTrajectory)

    def states(tr: Trajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if isinstance(tr, SampledTrajectory):
            return segment_grid(tr, subsamples)
        p = period if period is not None else (tr.duration / 100.0 / subsamples if tr.duration > 0 else 1.0)
        return tr.evaluate(_sample_times(tr, p))

    q, qd, qdd = states(traj)
    c0, c1, c2 = _quadratics(fn, q, qd, qdd)
    before = _peak_ratio(c0 + c1 + c2, lim)
    if sampled:
        peak_v, peak_a = peak_rates(traj)
    else:
        peak_v, peak_a = (np.max(np.abs(qd), axis=0), np.max(np.abs(qdd), axis=0)) if qd.size else (np.zeros(n),) * 2
    k_eff, k_vel = _scale_from_limits(_first_crossing(c0, c1, c2, lim, names), peak_v, vel)
    k_acc = math.sqrt(_scale_from_limits(math.inf, peak_a, acc)[1])
    scales = {"effort": k_eff, "velocity": k_vel, "acceleration": k_acc}
    binding = max(scales, key=scales.get)
    k = scales[binding] * (1.0 + margin)
    if k == 0.0:
        binding = "none"
    if k == 0.0:
        k = 1.0
    if min_scale > k:
        k, binding = float(min_scale), "minimum"
    for _ in range(8):
        out = scaled_samples(traj, k, time_quantum) if sampled else TimeScaledTrajectory(traj, k)
        if sampled:
            q2, qd2, qdd2 = segment_grid(out, subsamples)
            pv, pa = peak_rates(out)
        else:
            q2, qd2, qdd2 = q, qd / k, qdd / k**2
            pv, pa = peak_v / k, peak_a / k**2
        v_ratio = float(np.max(pv / vel))
        tau = np.asarray(fn(q2, qd2, qdd2), dtype=float)
        e_ratio = _peak_ratio(tau, lim)
        worst = max(e_ratio, v_ratio, float(np.max(pa / acc)))
        if worst <= 1.0:
            break
        k *= 1.0 + 2.0 * (worst - 1.0) + margin  # a rounded time pushed a value over: a little slower
    else:
        raise ValueError(f"could not fit the limits after rounding the times (peak ratio {worst:.9g})")
    return TimeScalingResult(out, k, out.duration, before, e_ratio, k_eff, k_vel, binding, v_ratio)


@dataclass
class FittedSamples:
    """Outcome of :func:`fit_samples_to_effort_limits`: the (stretched) trajectory and its samples.

    scale: stretch k applied to the base trajectory; min_scale: the smallest feasible k (effort limits on the
    samples and the dense grid); times, q, qd, qdd, effort: the samples at ``period`` (shapes (N,), (N, n));
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

    @property
    def duration(self) -> float:
        return self.trajectory.duration


def fit_samples_to_effort_limits(traj: Trajectory, dynamics: Any, period: float, effort_limits: Any = None,
                                 duration: float = 0.0, subsamples: int = 20, margin: float = 1e-6,
                                 names: list[str] | None = None, max_samples: int | None = None) -> FittedSamples:
    """Stretch ``traj`` (k >= 1, 001 §8.3) so that its samples at ``period`` carry feed-forward efforts within
    the limits, and sample it: the efforts of every sample and of a grid ``subsamples`` times denser (base-time
    spacing min(period, duration / 100) / subsamples) stay within ``effort_limits`` (default
    ``dynamics.limits["effort"]``) for every k' >= k.  ``duration`` > 0 asks for that duration (k = duration /
    traj.duration): ValueError when it is shorter than the feasible minimum, or when the result would need more
    than ``max_samples`` samples.  The samples' times are added to the grid when one of them is over (they are
    not grid points), until none is.
    """
    n = traj.n
    fn = _dynamics_function(dynamics)
    lim = _effort_limits(dynamics, effort_limits, n)
    if traj.duration <= 0:
        times, q, qd, qdd = traj.sample(period)
        tau = np.asarray(fn(q, qd, qdd), dtype=float)
        _first_crossing(tau, np.zeros_like(tau), np.zeros_like(tau), lim, names)
        return FittedSamples(traj, 1.0, 1.0, times, q, qd, qdd, tau, _peak_ratio(tau, lim), _peak_ratio(tau, lim))
    h = min(period, traj.duration / 100.0) / subsamples
    grid = _sample_times(traj, h)
    q, qd, qdd = traj.evaluate(grid)
    coefs = _quadratics(fn, q, qd, qdd)
    before = _peak_ratio(sum(coefs), lim)
    x_star = _first_crossing(*coefs, lim, names)
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
        out = traj if k == 1.0 else TimeScaledTrajectory(traj, k)
        times, q, qd, qdd = out.sample(period)
        tau = np.asarray(fn(q, qd, qdd), dtype=float)
        peak = _peak_ratio(tau, lim)
        if peak <= 1.0:
            return FittedSamples(out, k, k_min, times, q, qd, qdd, tau, before, peak)
        # a sample between grid points is over: its base-time state joins the grid (exact there for k' >= k)
        q0, qd0, qdd0 = traj.evaluate(np.clip(times / k, 0.0, traj.duration))
        x_star = min(x_star, _first_crossing(*_quadratics(fn, q0, qd0, qdd0), lim, names))
    raise ValueError(f"could not fit the samples to the effort limits (peak ratio {peak:.9g})")
