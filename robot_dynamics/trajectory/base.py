"""The joint trajectory interface shared by every generator of this package.

A trajectory of an n-joint robot is defined on [0, duration]:

* ``traj.n`` (alias ``traj.joint_count``): number of joints;
* ``traj.duration``: total time in seconds;
* ``traj.evaluate(t) -> (q, qd, qdd)``: scalar t gives three (n,) arrays, an
  array of times (N,) gives three (N, n) arrays.  Times outside [0, duration]
  are clamped: the robot rests at the start/final configuration (qd = qdd = 0);
* ``traj.sample(period) -> (times, q, qd, qdd)``: times 0, period, 2 period, ...
  plus the final time, ready for a trajectory_msgs/JointTrajectory.

Subclasses implement ``_evaluate(t)`` for a 1-D array of times inside [0, duration].
"""

from __future__ import annotations

import math

import numpy as np

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


def as_times(t: np.ndarray | float) -> tuple[np.ndarray, bool]:
    """Times as a finite 1-D array and whether the input was a scalar."""
    a = np.asarray(t, dtype=float)
    if a.ndim > 1:
        raise ValueError(f"t must be a scalar or a 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("t contains NaN or inf")
    return np.atleast_1d(a), a.ndim == 0


class Trajectory:
    """Base class: a joint trajectory on [0, duration] (see the module docstring)."""

    n: int
    duration: float

    @property
    def joint_count(self) -> int:
        return self.n

    def _evaluate(self, t: np.ndarray) -> Triple:  # pragma: no cover - abstract
        raise NotImplementedError

    def evaluate(self, t: np.ndarray | float) -> Triple:
        """(q, qd, qdd) at time(s) t: shapes (n,) for a scalar, (len(t), n) for an array."""
        ts, scalar = as_times(t)
        inside = (ts >= 0.0) & (ts <= self.duration)
        q, qd, qdd = self._evaluate(np.clip(ts, 0.0, self.duration))
        qd = np.where(inside[:, None], qd, 0.0)
        qdd = np.where(inside[:, None], qdd, 0.0)
        if scalar:
            return q[0], qd[0], qdd[0]
        return q, qd, qdd

    def sample(self, period: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(times, q, qd, qdd) at 0, period, 2 period, ... and at the final time (shapes (N,), (N, n))."""
        period = float(period)
        if not (math.isfinite(period) and period > 0.0):
            raise ValueError(f"period must be finite and positive, got {period}")
        count = math.floor(self.duration / period * (1.0 + 1e-12))
        times = period * np.arange(count + 1)
        times = times[times < self.duration - 1e-9 * period] if self.duration > 0 else times[:1]
        times = np.append(times, self.duration) if self.duration > 0 else times
        q, qd, qdd = self.evaluate(times)
        return times, q, qd, qdd

    @property
    def q_start(self) -> np.ndarray:
        return self.evaluate(0.0)[0]

    @property
    def q_end(self) -> np.ndarray:
        return self.evaluate(self.duration)[0]


class PiecewiseTrajectory(Trajectory):
    """Concatenation of trajectories played one after the other."""

    def __init__(self, segments: list[Trajectory]) -> None:
        if not segments:
            raise ValueError("a piecewise trajectory needs at least one segment")
        n = segments[0].n
        if any(s.n != n for s in segments):
            raise ValueError("all segments must have the same number of joints")
        self.segments = list(segments)
        self.n = n
        self.starts = np.concatenate([[0.0], np.cumsum([s.duration for s in segments])])
        self.duration = float(self.starts[-1])

    def _evaluate(self, t: np.ndarray) -> Triple:
        idx = np.clip(np.searchsorted(self.starts, t, side="right") - 1, 0, len(self.segments) - 1)
        q = np.empty((t.size, self.n))
        qd = np.empty_like(q)
        qdd = np.empty_like(q)
        for k, seg in enumerate(self.segments):  # loop over segments, vectorized over samples
            m = idx == k
            if np.any(m):
                q[m], qd[m], qdd[m] = seg._evaluate(np.clip(t[m] - self.starts[k], 0.0, seg.duration))
        return q, qd, qdd


class TimeScaledTrajectory(Trajectory):
    """Uniform time scaling q_k(t) = q(t/k): qd/k, qdd/k^2 (001 §8.3, Hollerbach 84)."""

    def __init__(self, base: Trajectory, k: float) -> None:
        k = float(k)
        if not (math.isfinite(k) and k > 0.0):
            raise ValueError(f"time scale k must be finite and positive, got {k}")
        self.base, self.k = base, k
        self.n = base.n
        self.duration = base.duration * k

    def _evaluate(self, t: np.ndarray) -> Triple:
        q, qd, qdd = self.base._evaluate(np.clip(t / self.k, 0.0, self.base.duration))
        return q, qd / self.k, qdd / self.k**2


# quintic Hermite basis on s in [0, 1] (ascending powers s^0..s^5) for
# q0, h v0, h^2 a0, q1, h v1, h^2 a1
_QUINTIC_HERMITE = np.array([
    [1, 0, 0, -10, 15, -6],
    [0, 1, 0, -6, 8, -3],
    [0, 0, 0.5, -1.5, 1.5, -0.5],
    [0, 0, 0, 10, -15, 6],
    [0, 0, 0, -4, 7, -3],
    [0, 0, 0, 0.5, -1, 0.5],
])


class SampledTrajectory(Trajectory):
    """Piecewise quintic Hermite interpolation of knots (t_k, q_k, qd_k, qdd_k): C^2, exact at the knots."""

    def __init__(self, times: np.ndarray, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> None:
        times = np.asarray(times, dtype=float)
        if times.ndim != 1 or times.size < 2 or times[0] != 0.0 or np.any(np.diff(times) <= 0):
            raise ValueError("knot times must be increasing, start at 0, and number at least 2")
        shape = (times.size, np.asarray(q).shape[-1])
        arrays = [np.asarray(a, dtype=float) for a in (q, qd, qdd)]
        if any(a.shape != shape for a in arrays) or not all(np.all(np.isfinite(a)) for a in arrays):
            raise ValueError(f"knot values must be finite with shape {shape}")
        self.times, (self.q_knots, self.qd_knots, self.qdd_knots) = times, arrays
        self.n = shape[1]
        self.duration = float(times[-1])

    def _evaluate(self, t: np.ndarray) -> Triple:
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self.times.size - 2)
        h = (self.times[k + 1] - self.times[k])[:, None]
        s = (t - self.times[k])[:, None] / h
        p = np.arange(6)
        pw = s ** p  # (N, 6)
        pw1 = np.where(p > 0, p * s ** np.maximum(p - 1, 0), 0.0)
        pw2 = np.where(p > 1, p * (p - 1) * s ** np.maximum(p - 2, 0), 0.0)
        b0, b1, b2 = pw @ _QUINTIC_HERMITE.T, pw1 @ _QUINTIC_HERMITE.T, pw2 @ _QUINTIC_HERMITE.T  # (N, 6)
        coef = np.stack([self.q_knots[k], h * self.qd_knots[k], h * h * self.qdd_knots[k],
                         self.q_knots[k + 1], h * self.qd_knots[k + 1], h * h * self.qdd_knots[k + 1]], axis=1)
        q = np.einsum("nb,nbj->nj", b0, coef)
        qd = np.einsum("nb,nbj->nj", b1, coef) / h
        qdd = np.einsum("nb,nbj->nj", b2, coef) / h**2
        return q, qd, qdd
