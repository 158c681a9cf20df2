"""A trajectory given by samples, interpolated like ros2_control's joint_trajectory_controller.

The interpolation degree follows the filled fields of the points: positions
only -> linear; + velocities -> cubic Hermite; + accelerations -> quintic
Hermite.  Segment polynomials are computed once; ``evaluate`` is vectorized
(one ``searchsorted`` and a Horner scheme), and ``at(t)`` is the control cycle's
single-time path: a cursor on the current segment (amortized O(1) for times that
move forward, a binary search otherwise) and one 3x6 by 6xn product of the
powers of s with the segment's coefficients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Trajectory, Triple

PATH_POSITION_TOLERANCE = 1e-6
"""Slack (rad or m, absolute) of :func:`check_path_limits` beyond the position limits: the one policy of the
controller (which accepts a trajectory with the defaults) and of the planner (which verifies its plans with them)."""
PATH_RATE_TOLERANCE = 1e-6
"""Slack (relative: x the limit) of :func:`check_path_limits` beyond the velocity and acceleration limits."""
CHUNK_ROWS = 16384
"""Rows (segment x joint, or states) processed at once by the path bounds: the memory stays bounded."""


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
        self.started = False
        if start is not None:
            s = _array(start, "start", (n,))
            if t[0] > 0:
                self.started = True
                t = np.concatenate([[0.0], t])
                p = np.vstack([s, p])
                v = np.vstack([np.zeros(n), v])
                a = np.vstack([np.zeros(n), a])
        self.n = n
        self.degree = degree
        self.times = t
        self.positions = p
        self.velocities = v if degree >= 3 else None  # the fields given (after ``start``), None when absent
        self.accelerations = a if degree == 5 else None
        self.duration = float(t[-1])
        self._coef = self._coefficients(t, p, v, a, degree)  # (segments, 6, n)
        self._cursor = 0
        self._times = t.tolist()
        self._powers = np.zeros((3, 6))
        self._hold = (p[0].copy(), np.zeros(n), np.zeros(n))

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

    def at(self, t: float) -> Triple:
        """(q, qd, qdd) at one time ``t`` (s, finite), shapes (n,): the same values as ``evaluate(t)``.

        Clamped like ``evaluate``: before 0 the start is held and after ``duration`` the end, at zero
        velocity and acceleration.  The segment is found from the previous call's (a cursor moved forward,
        so a control loop pays O(1) per cycle; a binary search when time jumps)."""
        times = self._times
        segments = len(times) - 1
        if segments == 0:
            return self._hold[0].copy(), self._hold[1].copy(), self._hold[2].copy()
        inside = 0.0 <= t <= self.duration
        tc = min(max(t, times[0]), self.duration)
        k = self._cursor
        if not (times[k] <= tc < times[k + 1]):
            if k + 2 <= segments and times[k + 1] <= tc < times[k + 2]:
                k += 1
            else:
                k = min(max(int(np.searchsorted(self.times, tc, side="right")) - 1, 0), segments - 1)
            self._cursor = k
        s = tc - times[k]
        pw = self._powers
        s2 = s * s
        s3 = s2 * s
        s4 = s3 * s
        pw[0] = (1.0, s, s2, s3, s4, s4 * s)
        if inside and t >= times[0]:
            pw[1] = (0.0, 1.0, 2.0 * s, 3.0 * s2, 4.0 * s3, 5.0 * s4)
            pw[2] = (0.0, 0.0, 2.0, 6.0 * s, 12.0 * s2, 20.0 * s3)
        else:  # held: the position only
            pw[1:] = 0.0
        out = pw @ self._coef[k]
        return out[0], out[1], out[2]

    def from_state(self, q: Any, qd: Any, qdd: Any) -> tuple[SampledTrajectory, SampledTrajectory]:
        """This trajectory with its start segment (``started``: JTC's segment to a first point later than t = 0)
        leaving the moving state (``q``, ``qd``, ``qdd``) instead of a position at rest: a quintic to the first
        point (its velocity and acceleration when given, else 0), so the motion it replaces goes on continuous to
        the acceleration at t = 0.  Returns (the trajectory, its start segment alone: to check it)."""
        if not self.started:
            raise ValueError("only a trajectory whose first point is later than t = 0 has a start segment")
        n = self.n
        start = [_array(x, what, (n,)) for x, what in ((q, "q"), (qd, "qd"), (qdd, "qdd"))]
        end = [self.positions[1],
               np.zeros(n) if self.velocities is None else self.velocities[1],
               np.zeros(n) if self.accelerations is None else self.accelerations[1]]
        segment = SampledTrajectory(self.times[:2], *(np.vstack(pair) for pair in zip(start, end, strict=True)))
        new = object.__new__(SampledTrajectory)
        new.__dict__.update(self.__dict__)
        new.positions = self.positions.copy()
        new.positions[0] = start[0]
        for name, value in (("velocities", start[1]), ("accelerations", start[2])):
            if getattr(self, name) is not None:
                setattr(new, name, getattr(self, name).copy())
                getattr(new, name)[0] = value
        new._coef = self._coef.copy()
        new._coef[0] = segment._coef[0]
        new._cursor = 0
        new._powers = np.zeros((3, 6))
        new._hold = (start[0].copy(), np.zeros(n), np.zeros(n))
        return new, segment

    def breakpoints(self) -> np.ndarray:
        """0 and the points' times: each segment between them is one polynomial."""
        return np.unique(np.concatenate([[0.0], self.times]))

    def segment_states(self, seg: np.ndarray, s: np.ndarray) -> Triple:
        """(q, qd, qdd), shapes (N, n), of segments ``seg`` (N,) at offsets ``s`` (N,) from their start: the
        segment polynomials themselves (s = 0 and s = T_k give the one-sided values at the points)."""
        c = self._coef[seg]  # (N, 6, n)
        s = np.asarray(s, dtype=float)[:, None]
        q = ((((c[:, 5] * s + c[:, 4]) * s + c[:, 3]) * s + c[:, 2]) * s + c[:, 1]) * s + c[:, 0]
        qd = (((5 * c[:, 5] * s + 4 * c[:, 4]) * s + 3 * c[:, 3]) * s + 2 * c[:, 2]) * s + c[:, 1]
        qdd = ((20 * c[:, 5] * s + 12 * c[:, 4]) * s + 6 * c[:, 3]) * s + 2 * c[:, 2]
        return q, qd, qdd

    def _evaluate(self, t: np.ndarray) -> Triple:
        if self._coef.shape[0] == 0:  # a single point: hold it
            q = np.broadcast_to(self.positions[0], (t.size, self.n)).copy()
            return q, np.zeros_like(q), np.zeros_like(q)
        before = t < self.times[0]
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self._coef.shape[0] - 1)
        q, qd, qdd = self.segment_states(k, np.maximum(t, self.times[0]) - self.times[k])
        if np.any(before):
            qd[before] = 0.0
            qdd[before] = 0.0
        return q, qd, qdd


# ------------------------------------------------------------------ path limits
def _bernstein_matrix(m: int) -> np.ndarray:
    """M with b = M @ alpha: Bernstein coefficients on [0, 1] of sum_i alpha_i u^i (degree m)."""
    from math import comb

    mat = np.zeros((m + 1, m + 1))
    for k in range(m + 1):
        for i in range(k + 1):
            mat[k, i] = comb(k, i) / comb(m, i)
    return mat


def _first_violation(b: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_levels: int = 40) -> tuple[int, float, float] | None:
    """First row whose polynomial (Bernstein coefficients ``b`` (K, m+1) on [0, 1]) leaves [lo, hi].

    Convex-hull bounds, refined by de Casteljau halving only where a bound crosses a limit: exact
    up to the bounds' convergence (quadratic in the sub-interval length).  Returns (row, u, value)
    of a point outside the interval, or None when the whole path stays inside.
    """
    rows = np.arange(b.shape[0])
    u0 = np.zeros(b.shape[0])
    width = 1.0
    for _ in range(max_levels):
        out = (b.max(axis=1) > hi[rows]) | (b.min(axis=1) < lo[rows])
        if not np.any(out):
            return None
        b, rows, u0 = b[out], rows[out], u0[out]
        for end, u in ((0, 0.0), (-1, width)):  # end points are exact values of the polynomial
            bad = (b[:, end] > hi[rows]) | (b[:, end] < lo[rows])
            if np.any(bad):
                k = int(np.flatnonzero(bad)[0])
                return int(rows[k]), float(u0[k] + u), float(b[k, end])
        # de Casteljau at u = 1/2: left and right halves
        m = b.shape[1] - 1
        left = np.empty_like(b)
        right = np.empty_like(b)
        work = b.copy()
        for r in range(m + 1):
            left[:, r] = work[:, 0]
            right[:, m - r] = work[:, m - r]
            work = 0.5 * (work[:, :-1] + work[:, 1:])
        width *= 0.5
        b = np.concatenate([left, right])
        rows = np.concatenate([rows, rows])
        u0 = np.concatenate([u0, u0 + width])
    k = int(np.argmax(np.maximum(b.max(axis=1) - hi[rows], lo[rows] - b.min(axis=1))))
    return int(rows[k]), float(u0[k]), float(b[k].max() if b[k].max() > hi[rows[k]] else b[k].min())


def _max_abs_on_unit(b: np.ndarray) -> np.ndarray:
    """max over u in [0, 1] of |sum_i b_i u^i| for each row of ``b`` (R, m+1), m <= 4: the end points and the
    real parts (clipped to [0, 1]) of the roots of the derivative (companion eigenvalues for the full degree,
    the formulas of the lower degrees as well: extra candidates inside [0, 1] never overestimate)."""
    rows, m1 = b.shape
    powers = np.arange(m1)

    def value(u: np.ndarray) -> np.ndarray:  # u (R, K)
        return np.abs((b[:, None, :] * u[:, :, None] ** powers).sum(axis=-1))

    cands = [np.zeros((rows, 1)), np.ones((rows, 1))]
    d = b[:, 1:] * np.arange(1, m1)  # derivative coefficients, degree m - 1
    deg = d.shape[1] - 1
    if deg >= 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            cands.append(np.where(d[:, 1:2] != 0, -d[:, :1] / d[:, 1:2], 0.0))  # linear part
            if deg >= 2:
                a, bb, c = d[:, 2], d[:, 1], d[:, 0]
                disc = np.sqrt(np.maximum(bb * bb - 4 * a * c, 0.0))
                for sgn in (1.0, -1.0):
                    cands.append(np.where(a != 0, (-bb + sgn * disc) / (2 * a), 0.0)[:, None])
            if deg >= 3:
                lead = d[:, deg]
                full = lead != 0
                roots = np.zeros((rows, deg))
                if np.any(full):
                    comp = np.zeros((int(full.sum()), deg, deg))
                    comp[:, 1:, :-1] = np.eye(deg - 1)
                    comp[:, :, -1] = -d[full, :deg] / lead[full, None]
                    roots[full] = np.linalg.eigvals(comp).real
                cands.append(roots)
    u = np.clip(np.nan_to_num(np.concatenate(cands, axis=1), nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)
    return value(u).max(axis=1)


def peak_rates(traj: SampledTrajectory) -> tuple[np.ndarray, np.ndarray]:
    """(max_t |qd_j|, max_t |qdd_j|), shapes (n,), over the *interpolated* path of ``traj`` (every segment,
    not only the samples): exact up to rounding (end points and critical points of each segment polynomial).
    A linear trajectory's velocity is its segments' slopes (its acceleration is 0 between the points)."""
    coef = traj._coef
    if coef.shape[0] == 0:
        return np.zeros(traj.n), np.zeros(traj.n)
    S, _, n = coef.shape
    T = np.diff(traj.times)
    out = [np.zeros(n), np.zeros(n)]
    step = max(1, CHUNK_ROWS // n)
    for lo in range(0, S, step):  # segments in chunks: bounded memory for long trajectories
        c, Tc = coef[lo:lo + step], T[lo:lo + step]
        for d in (1, 2):
            m = 5 - d
            fact = np.array([np.prod(np.arange(i + 1, i + d + 1)) for i in range(m + 1)], float)
            alpha = c[:, d:, :] * fact[None, :, None] * (Tc[:, None] ** np.arange(m + 1))[:, :, None]  # (S, m+1, n)
            b = alpha.transpose(0, 2, 1).reshape(-1, m + 1)
            out[d - 1] = np.maximum(out[d - 1], _max_abs_on_unit(b).reshape(-1, n).max(axis=0))
    return out[0], out[1]


def check_path_limits(
    traj: SampledTrajectory,
    lower: np.ndarray,
    upper: np.ndarray,
    velocity: np.ndarray | None = None,
    acceleration: np.ndarray | None = None,
    *,
    names: list[str] | None = None,
    position_tolerance: float = PATH_POSITION_TOLERANCE,
    rate_tolerance: float = PATH_RATE_TOLERANCE,
    start: np.ndarray | None = None,
) -> None:
    """Raise ``ValueError`` naming the joint, time and value where the *interpolated* path of ``traj``
    leaves the position limits [lower, upper], |qd| <= velocity or |qdd| <= acceleration.

    The check covers every segment between the samples (not only the samples): polynomial
    bounds refined by subdivision (see :func:`_first_violation`).  Infinite limits are not
    checked.  ``start``: the arm's position when the trajectory is taken; a joint that is already
    outside its limits (an arm being brought back) may not go farther out than it is.
    Tolerances: ``position_tolerance`` (rad or m, absolute), ``rate_tolerance`` (x the limit); the defaults
    :data:`PATH_POSITION_TOLERANCE` and :data:`PATH_RATE_TOLERANCE` are the controller's acceptance, which the
    planner's plans are verified against (:func:`~robot_dynamics.trajectory.planning.plan_samples`).
    """
    coef = traj._coef  # (S, 6, n) power basis in s = t - t_k
    if coef.shape[0] == 0:
        coef = np.zeros((1, 6, traj.n))
        coef[0, 0] = traj.positions[0]
        T = np.ones(1)
    else:
        T = np.diff(traj.times)
    S, _, n = coef.shape
    names = names or [f"joint {j}" for j in range(n)]
    lower = np.broadcast_to(np.asarray(lower, float), (n,))
    upper = np.broadcast_to(np.asarray(upper, float), (n,))
    powers = T[:, None] ** np.arange(6)[None, :]  # (S, 6)
    lo_q, hi_q = lower - position_tolerance, upper + position_tolerance
    if start is not None:
        lo_q, hi_q = np.minimum(lo_q, start), np.maximum(hi_q, start)
    checks = [("position", 0, lo_q, hi_q)]
    if velocity is not None:
        v = np.broadcast_to(np.asarray(velocity, float), (n,)) * (1 + rate_tolerance)
        checks.append(("velocity", 1, -v, v))
    if acceleration is not None:
        a = np.broadcast_to(np.asarray(acceleration, float), (n,)) * (1 + rate_tolerance)
        checks.append(("acceleration", 2, -a, a))
    step = max(1, CHUNK_ROWS // n)  # segments at a time: bounded memory (one chunk for up to CHUNK_ROWS rows)
    for what, d, lo, hi in checks:
        if not np.any(np.isfinite(lo) | np.isfinite(hi)):
            continue
        # coefficients of the d-th derivative in u = s / T on [0, 1]: alpha_i = a_{i+d} (i+d)!/i! T^i
        m = 5 - d
        fact = np.array([np.prod(np.arange(i + 1, i + d + 1)) for i in range(m + 1)], float)
        for first in range(0, S, step):
            sl = slice(first, first + step)
            alpha = coef[sl, d:, :] * fact[None, :, None] * powers[sl, : m + 1, None]  # (S, m+1, n)
            b = np.einsum("ki,sij->sjk", _bernstein_matrix(m), alpha).reshape(-1, m + 1)
            count = b.shape[0] // n
            lo_k = np.where(np.isfinite(np.tile(lo, count)), np.tile(lo, count), -np.inf)
            hi_k = np.where(np.isfinite(np.tile(hi, count)), np.tile(hi, count), np.inf)
            hit = _first_violation(b, lo_k, hi_k)
            if hit is not None:
                break
        if hit is not None:
            row, u, value = hit
            seg, j = divmod(row + first * n, n)
            t = float(traj.times[seg] + u * T[seg]) if traj._coef.shape[0] else 0.0
            bound = f"[{lo[j]:.6g}, {hi[j]:.6g}]"
            raise ValueError(
                f"the interpolated path leaves the {what} limits of {names[j]}: {value:.6g} at t = {t:.6g} s "
                f"(limits {bound})"
            )
