"""Geometric paths q(s), s in [s0, s1], for time parameterization (:mod:`.optimal_timing`).

A :class:`GeometricPath` gives q(s) and its first two derivatives q'(s), q''(s) for an array of s, and the *knots*
where q'' may jump (the pieces of a spline, the breakpoints of a trajectory): a parameterization grid keeps them.
:func:`as_path` turns what the project and its neighbours produce into one: a line or a cubic spline through
waypoints (:func:`line_path`, :func:`spline_path`), a SciPy piecewise polynomial (``CubicSpline``, ``PPoly``: what
TOPP-RA's ``SplineInterpolator`` wraps), any object called as ``path(s, order)`` with a ``path_interval`` (TOPP-RA's
interpolators), or a :class:`~robot_dynamics.trajectory.base.Trajectory` (then s is its time: the retimed
trajectory goes through the same configurations, its breakpoints are the knots).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.interpolate import CubicSpline, PPoly

from .base import Trajectory, Triple


@dataclass(frozen=True)
class GeometricPath:
    """q(s) on [s0, s1]: ``evaluate(s) -> (q, dq/ds, d2q/ds2)`` for a 1-D array s (shapes (N, n)); ``knots``:
    sorted s where d2q/ds2 may jump (s0 and s1 included)."""

    n: int
    s0: float
    s1: float
    knots: np.ndarray
    _evaluate: Callable[[np.ndarray], Triple]

    def evaluate(self, s: Any) -> Triple:
        s = np.clip(np.atleast_1d(np.asarray(s, dtype=float)), self.s0, self.s1)
        return self._evaluate(s)

    @property
    def length(self) -> float:
        return self.s1 - self.s0


def _from_ppoly(p: PPoly) -> GeometricPath:
    d1, d2 = p.derivative(1), p.derivative(2)
    x = np.asarray(p.x, dtype=float)
    n = int(np.prod(p.c.shape[2:])) if p.c.ndim > 2 else 1

    def ev(s: np.ndarray) -> Triple:
        return (np.asarray(p(s)).reshape(s.size, n), np.asarray(d1(s)).reshape(s.size, n),
                np.asarray(d2(s)).reshape(s.size, n))

    return GeometricPath(n, float(x[0]), float(x[-1]), np.unique(x), ev)


def line_path(q0: Any, q1: Any) -> GeometricPath:
    """The straight line q0 + s (q1 - q0), s in [0, 1], in joint space."""
    a, b = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"q0 and q1 must be vectors of the same length, got shapes {a.shape}, {b.shape}")
    d = b - a

    def ev(s: np.ndarray) -> Triple:
        return a + s[:, None] * d, np.broadcast_to(d, (s.size, a.size)).copy(), np.zeros((s.size, a.size))

    return GeometricPath(a.size, 0.0, 1.0, np.array([0.0, 1.0]), ev)


def spline_path(waypoints: Any, s: Any = None, bc_type: Any = "not-a-knot") -> GeometricPath:
    """The cubic spline (C^2) through ``waypoints`` (m, n) at ``s`` (default 0, 1, ..., m - 1 normalized to
    [0, 1]); ``bc_type`` as :class:`scipy.interpolate.CubicSpline` (the default of TOPP-RA's SplineInterpolator);
    two waypoints: the line."""
    w = np.asarray(waypoints, dtype=float)
    if w.ndim != 2 or w.shape[0] < 2:
        raise ValueError(f"waypoints must be an (m >= 2, n) array, got shape {w.shape}")
    ss = np.linspace(0.0, 1.0, w.shape[0]) if s is None else np.asarray(s, dtype=float)
    if w.shape[0] == 2:
        return line_path(w[0], w[1]) if s is None else _from_ppoly(CubicSpline(ss, w, bc_type="clamped"))
    return _from_ppoly(CubicSpline(ss, w, bc_type=bc_type))


def as_path(path: Any) -> GeometricPath:
    """A :class:`GeometricPath` from a path, a SciPy PPoly/CubicSpline, a ``path(s, order)`` callable with a
    ``path_interval`` (TOPP-RA), a Trajectory (s = its time) or waypoints (m, n) (a cubic spline)."""
    if isinstance(path, GeometricPath):
        return path
    if isinstance(path, PPoly):
        return _from_ppoly(path)
    if isinstance(path, Trajectory):
        traj = path

        def ev_t(s: np.ndarray) -> Triple:
            return traj.evaluate(s)

        return GeometricPath(traj.n, 0.0, float(traj.duration), np.unique(traj.breakpoints()), ev_t)
    if callable(path) and hasattr(path, "path_interval"):
        s0, s1 = (float(v) for v in np.asarray(path.path_interval, dtype=float))
        knots = np.asarray(getattr(path, "ss_waypoints", [s0, s1]), dtype=float)

        def ev_c(s: np.ndarray) -> Triple:
            return (np.asarray(path(s, 0), dtype=float).reshape(s.size, -1),
                    np.asarray(path(s, 1), dtype=float).reshape(s.size, -1),
                    np.asarray(path(s, 2), dtype=float).reshape(s.size, -1))

        n = ev_c(np.array([s0]))[0].shape[1]
        return GeometricPath(n, s0, s1, np.unique(np.concatenate([[s0, s1], knots])), ev_c)
    if isinstance(path, (list, tuple, np.ndarray)):
        return spline_path(path)
    raise TypeError(f"cannot use {type(path).__name__} as a path: give waypoints, a line_path/spline_path, a SciPy "
                    "PPoly, a TOPP-RA interpolator or a Trajectory")
