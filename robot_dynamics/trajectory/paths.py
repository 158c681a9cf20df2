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
    velocity_zeros: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None
    """() -> (s, joint) of every sign change of a dq_j/ds inside (s0, s1), in closed form where the path knows it
    (a line: none; a piecewise polynomial of degree <= 3: the roots of its quadratic derivatives); None: unknown
    (:mod:`.optimal_timing` then brackets them between samples)."""

    def evaluate(self, s: Any) -> Triple:
        s = np.clip(np.atleast_1d(np.asarray(s, dtype=float)), self.s0, self.s1)
        return self._evaluate(s)

    @property
    def length(self) -> float:
        return self.s1 - self.s0


def _from_ppoly(p: PPoly) -> GeometricPath:
    x = np.asarray(p.x, dtype=float)
    if x.size < 2 or np.any(np.diff(x) <= 0.0):
        raise ValueError("a PPoly path needs increasing breakpoints")
    c = np.asarray(p.c, dtype=float).reshape(p.c.shape[0], x.size - 1, -1)  # (order + 1, pieces, n)
    n = c.shape[2]

    order = c.shape[0] - 1
    exponents = np.arange(order, -1, -1, dtype=float)[:, None, None]  # of each coefficient row
    c1 = np.zeros_like(c)
    c1[1:] = (c * exponents)[:-1]  # the derivative's coefficients, on the same powers
    c2 = np.zeros_like(c)
    c2[1:] = (c1 * exponents)[:-1]

    def ev(s: np.ndarray) -> Triple:
        """Matrix products per piece: the powers of s - x_k (Vandermonde) times the coefficients of q and of its
        two derivatives, on the piece's run of s (sorted first if need be; the right piece at a breakpoint, as
        SciPy's PPoly)."""
        order_s = None if s.size < 2 or np.all(s[1:] >= s[:-1]) else np.argsort(s, kind="stable")
        ss = s if order_s is None else s[order_s]
        starts = np.concatenate([[0], np.searchsorted(ss, x[1:-1], side="left"), [ss.size]])
        out = (np.empty((s.size, n)), np.empty((s.size, n)), np.empty((s.size, n)))
        for k in range(x.size - 1):
            if starts[k + 1] > starts[k]:
                run = slice(starts[k], starts[k + 1])
                powers = np.vander(ss[run] - x[k], order + 1)
                for dst, coeffs in zip(out, (c, c1, c2), strict=True):
                    np.matmul(powers, coeffs[:, k], out=dst[run])
        if order_s is not None:
            for dst in out:
                dst[order_s] = dst.copy()
        return out

    def zeros() -> tuple[np.ndarray, np.ndarray]:
        return _quadratic_zeros(c, x)

    return GeometricPath(n, float(x[0]), float(x[-1]), x.copy(), ev, zeros if c.shape[0] <= 4 else None)


def _quadratic_zeros(c: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, joint) where dq_j/ds of a piecewise cubic (coefficients (4 or fewer, pieces, n), breakpoints x) changes
    sign strictly inside a piece: the simple roots of A t^2 + B t + C (a double root touches 0 without a change)."""
    c = np.concatenate([np.zeros((4 - c.shape[0], *c.shape[1:])), c]) if c.shape[0] < 4 else c
    A, B, C = 3.0 * c[0], 2.0 * c[1], c[2]
    h = np.diff(x)[:, None] * np.ones_like(C)
    scale = np.abs(A) * h * h + np.abs(B) * h + np.abs(C) + 1e-300
    quad = np.abs(A) * h * h > 1e-14 * scale
    disc = B * B - 4.0 * A * C
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(np.where(disc > 0.0, disc, np.nan))
        qq = -0.5 * (B + np.copysign(sq, B))
        roots = [np.where(quad, qq / A, np.nan), np.where(quad, C / qq, np.nan),
                 np.where(~quad & (np.abs(B) * h > 1e-14 * scale), -C / B, np.nan)]
    s, joint = [], []
    for r in roots:
        piece, j = np.nonzero((r > 0.0) & (r < h))
        s.append(x[piece] + r[piece, j])
        joint.append(j)
    s, joint = np.concatenate(s), np.concatenate(joint)
    order = np.argsort(s, kind="stable")
    return s[order], joint[order]


def line_path(q0: Any, q1: Any) -> GeometricPath:
    """The straight line q0 + s (q1 - q0), s in [0, 1], in joint space."""
    a, b = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"q0 and q1 must be vectors of the same length, got shapes {a.shape}, {b.shape}")
    d = b - a

    n = a.size
    line = np.stack([d, a])  # [s, 1] times this: q

    def ev(s: np.ndarray) -> Triple:
        return np.vander(s, 2) @ line, np.tile(d, (s.size, 1)), np.zeros((s.size, n))

    def zeros() -> tuple[np.ndarray, np.ndarray]:  # dq/ds = q1 - q0: constant, no sign change
        return np.zeros(0), np.zeros(0, dtype=int)

    return GeometricPath(a.size, 0.0, 1.0, np.array([0.0, 1.0]), ev, zeros)


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
