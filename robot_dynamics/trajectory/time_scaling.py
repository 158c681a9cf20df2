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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import TimeScaledTrajectory, Trajectory

Dynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class TimeScalingResult:
    """Outcome of :func:`scale_to_effort_limits`.

    trajectory: the (possibly) stretched trajectory; scale: k >= 1; duration: its t_f;
    peak_ratio_before / peak_ratio: max_j,t |Gamma_j| / limit_j before / after scaling;
    margin: 1 - peak_ratio (>= 0 when feasible; ~0 when the stretch was needed).
    """

    trajectory: Trajectory
    scale: float
    duration: float
    peak_ratio_before: float
    peak_ratio: float

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
    lim = np.asarray(effort_limits, dtype=float)
    if lim.ndim == 0:
        lim = np.full(n, float(lim))
    if lim.shape != (n,) or np.any(np.isnan(lim)) or np.any(lim <= 0.0):
        raise ValueError(f"effort limits must be positive (inf allowed) with shape ({n},), got {lim}")
    return lim


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


def scale_to_effort_limits(traj: Trajectory, dynamics: Any, effort_limits: Any = None,
                           period: float | None = None) -> TimeScalingResult:
    """Smallest uniform time stretch k >= 1 that keeps |Gamma_j(t)| <= effort_j (see module docstring).

    dynamics: a RobotModel (``inverse_dynamics`` batch (N, n)) or a callable
    (q, qd, qdd) -> (N, n) efforts.  effort_limits: (n,) or scalar, default
    ``dynamics.limits["effort"]``.  period: sampling period on the *unscaled*
    trajectory (default duration / 2000).
    """
    n = traj.n
    lim = _effort_limits(dynamics, effort_limits, n)
    times = _sample_times(traj, period)
    t1 = efforts_along(traj, dynamics, times, 1.0)
    t2 = efforts_along(traj, dynamics, times, 2.0)
    t4 = efforts_along(traj, dynamics, times, 4.0)
    # tau(x) = c0 + c1 x + c2 x^2 through x = 1, 1/2, 1/4
    c2 = (8.0 * t1 - 24.0 * t2 + 16.0 * t4) / 3.0
    c0 = (t1 - 6.0 * t2 + 8.0 * t4) / 3.0
    c1 = t1 - c2 - c0
    finite = np.isfinite(lim)
    before = float(np.max(np.abs(t1[:, finite]) / lim[finite])) if np.any(finite) else 0.0
    if np.any(np.abs(c0[:, finite]) >= lim[finite]):
        j = int(np.nonzero(np.any(np.abs(c0) >= lim, axis=0) & finite)[0][0])
        raise ValueError(f"joint {j}: the static effort (gravity + Coulomb friction) alone exceeds the limit "
                         f"{lim[j]}; no time scaling can make the trajectory feasible")
    x_star = math.inf
    for s in (1.0, -1.0):
        L = np.where(finite, lim, 0.0)
        roots = _smallest_positive_root(c2[:, finite], c1[:, finite], (c0 - s * L)[:, finite])
        if roots.size:
            x_star = min(x_star, float(np.min(roots)))
    k = 1.0 if x_star >= 1.0 else (1.0 / x_star) * (1.0 + 1e-12)
    out = traj if k == 1.0 else TimeScaledTrajectory(traj, k)
    after = efforts_along(traj, dynamics, times, k)
    peak = float(np.max(np.abs(after[:, finite]) / lim[finite])) if np.any(finite) else 0.0
    return TimeScalingResult(out, k, out.duration, before, peak)
