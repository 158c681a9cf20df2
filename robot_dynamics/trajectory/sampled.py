"""A trajectory given by samples, interpolated like ros2_control's joint_trajectory_controller.

The interpolation degree follows the filled fields of the points: positions
only -> linear; + velocities -> cubic Hermite; + accelerations -> quintic
Hermite.  Segment polynomials are computed once; ``evaluate`` is vectorized and
cheap for a single time (one ``searchsorted`` and a Horner scheme), so a
controller can call it every cycle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Trajectory, Triple


def _array(x: Any, what: str, shape: tuple[int, ...]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return a


class SampledTrajectory(Trajectory):
    """Piecewise polynomial through (times, positions[, velocities[, accelerations]]).

    ``times`` (m,) strictly increasing from >= 0; ``positions`` (m, n).  Before
    ``times[0]`` the trajectory holds ``positions[0]``... unless ``start`` (n,) is
    given, in which case a first segment goes from ``start`` at t = 0 to the
    first point (JTC behaviour when the first point is not at t = 0).
    """

    def __init__(
        self,
        times: Any,
        positions: Any,
        velocities: Any = None,
        accelerations: Any = None,
        start: Any = None,
    ) -> None:
        t = np.asarray(times, dtype=float).ravel()
        if t.size == 0:
            raise ValueError("a sampled trajectory needs at least one point")
        p = np.asarray(positions, dtype=float)
        if p.ndim != 2 or p.shape[0] != t.size:
            raise ValueError(f"positions must have shape ({t.size}, n), got {p.shape}")
        m, n = p.shape
        t = _array(t, "times", (m,))
        p = _array(p, "positions", (m, n))
        if t[0] < 0 or np.any(np.diff(t) <= 0):
            raise ValueError("times must be >= 0 and strictly increasing")
        degree = 1
        v = np.zeros((m, n))
        a = np.zeros((m, n))
        if velocities is not None:
            v = _array(velocities, "velocities", (m, n))
            degree = 3
            if accelerations is not None:
                a = _array(accelerations, "accelerations", (m, n))
                degree = 5
        if start is not None:
            s = _array(start, "start", (n,))
            if t[0] > 0:
                t = np.concatenate([[0.0], t])
                p = np.vstack([s, p])
                v = np.vstack([np.zeros(n), v])
                a = np.vstack([np.zeros(n), a])
        self.n = n
        self.degree = degree
        self.times = t
        self.positions = p
        self.duration = float(t[-1])
        self._coef = self._coefficients(t, p, v, a, degree)  # (segments, 6, n)

    @staticmethod
    def _coefficients(t: np.ndarray, p: np.ndarray, v: np.ndarray, a: np.ndarray, degree: int) -> np.ndarray:
        T = np.diff(t)[:, None]
        p0, p1, v0, v1, a0, a1 = p[:-1], p[1:], v[:-1], v[1:], a[:-1], a[1:]
        c = np.zeros((T.shape[0], 6, p.shape[1]))
        c[:, 0] = p0
        dp = p1 - p0
        if degree == 1:
            c[:, 1] = dp / T
        elif degree == 3:
            c[:, 1] = v0
            c[:, 2] = (3 * dp - (2 * v0 + v1) * T) / T**2
            c[:, 3] = (-2 * dp + (v0 + v1) * T) / T**3
        else:
            c[:, 1] = v0
            c[:, 2] = a0 / 2
            c[:, 3] = (20 * dp - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T**2) / (2 * T**3)
            c[:, 4] = (-30 * dp + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T**2) / (2 * T**4)
            c[:, 5] = (12 * dp - 6 * (v1 + v0) * T - (a0 - a1) * T**2) / (2 * T**5)
        return c

    def _evaluate(self, t: np.ndarray) -> Triple:
        if self._coef.shape[0] == 0:  # a single point: hold it
            q = np.broadcast_to(self.positions[0], (t.size, self.n)).copy()
            return q, np.zeros_like(q), np.zeros_like(q)
        before = t < self.times[0]
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self._coef.shape[0] - 1)
        s = (np.maximum(t, self.times[0]) - self.times[k])[:, None]
        c = self._coef[k]  # (N, 6, n)
        q = ((((c[:, 5] * s + c[:, 4]) * s + c[:, 3]) * s + c[:, 2]) * s + c[:, 1]) * s + c[:, 0]
        qd = (((5 * c[:, 5] * s + 4 * c[:, 4]) * s + 3 * c[:, 3]) * s + 2 * c[:, 2]) * s + c[:, 1]
        qdd = ((20 * c[:, 5] * s + 12 * c[:, 4]) * s + 6 * c[:, 3]) * s + 2 * c[:, 2]
        if np.any(before):
            qd[before] = 0.0
            qdd[before] = 0.0
        return q, qd, qdd
