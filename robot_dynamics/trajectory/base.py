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
