"""The joint trajectory interface shared by every generator of this package.

A trajectory of an n-joint robot is defined on [0, duration]:

* ``traj.n`` (alias ``traj.joint_count``): number of joints;
* ``traj.duration``: total time in seconds;
* ``traj.evaluate(t) -> (q, qd, qdd)``: scalar t gives three (n,) arrays, an
  array of times (N,) gives three (N, n) arrays.  Times outside [0, duration]
  are clamped: the robot rests at the start/final configuration (qd = qdd = 0);
* ``traj.sample(period) -> (times, q, qd, qdd)``: times 0, period, 2 period, ...
  plus the final time, ready for a trajectory_msgs/JointTrajectory;
* ``traj.breakpoints()``: the times (sorted, 0 and ``duration`` included) where the
  polynomial pieces of the trajectory join: the acceleration (the velocity, for the
  linear profile 001 eq. 8.4) may jump there, so ``one_sided`` gives both limits.

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

    def breakpoints(self) -> np.ndarray:
        """Times where the trajectory's smooth pieces join (sorted, 0 and ``duration`` included)."""
        return np.unique([0.0, self.duration])

    def one_sided(self, t: np.ndarray | float, side: int, nudge: float | np.ndarray | None = None) -> Triple:
        """(q, qd, qdd) at times ``t`` as the limits from the left (``side`` -1) or the right (+1).

        q is continuous (evaluated at t); qdd is read ``nudge`` (scalar or per time; default 1e-12 x duration) to
        that side; qd is the velocity at t unless it jumps there (the linear profile): then the side's, brought back
        along the acceleration (qd(t + h) - qdd h).  A joint at rest at t gets qd = +-1e-300, the sign of its motion
        on that side (the limit of sign(qd) in the Coulomb friction of 001 eq. 7.61).  Before 0 and after
        ``duration`` the trajectory rests: those sides give qd = qdd = 0."""
        ts, scalar = as_times(t)
        h = float(side) * np.broadcast_to(1e-12 * max(self.duration, 1e-9) if nudge is None else
                                          np.asarray(nudge, dtype=float), ts.shape)
        q, at, _ = self.evaluate(ts)
        _, near, qdd = self.evaluate(ts + h)
        hh = h[:, None]
        # the velocity at t unless it jumps there (then the side's, brought back along the acceleration)
        jumps = np.abs(near - at) > 1e-6 * np.maximum(np.abs(near), np.abs(at)) + 4.0 * np.abs(qdd * hh) + 1e-300
        qd = np.where(jumps, near - qdd * hh, at)
        # at rest the limit keeps the direction of the motion on that side, which decides the Coulomb friction
        # of 001 eq. 7.61: a velocity of 1e-300 with the sign of qd(t + h)
        rest = np.abs(qd) <= 1e-12 * np.abs(near)
        qd = np.where(rest, np.copysign(1e-300, near) * (near != 0), qd)
        if scalar:
            return q[0], qd[0], qdd[0]
        return q, qd, qdd

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

    def breakpoints(self) -> np.ndarray:
        return np.unique(np.concatenate([s0 + seg.breakpoints() for s0, seg in zip(self.starts, self.segments,
                                                                                    strict=False)]))

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

    def breakpoints(self) -> np.ndarray:
        return self.base.breakpoints() * self.k

    def _evaluate(self, t: np.ndarray) -> Triple:
        q, qd, qdd = self.base._evaluate(np.clip(t / self.k, 0.0, self.base.duration))
        return q, qd / self.k, qdd / self.k**2
