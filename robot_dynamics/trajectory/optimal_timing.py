"""Time-optimal parameterization of a path under joint velocity, acceleration and effort limits that holds on the
continuous curve, not only on a grid.

A path q(s) (:mod:`.paths`) played with s(t) has qd = q' sd and qdd = q' sdd + q'' sd^2.  With x = sd^2 and
u = sdd, the efforts of 001 eq. 7.61 (rotor inertia and friction included) along the path are

    Gamma(s) = a(s) u + b(s) x + f(s) sqrt(x) + c(s)

with a = (A + Ia) q', b = (A + Ia) q'' + C(q, q') q', f = Fv q' (viscous) and c = Q + Fc sign(q') (gravity and
Coulomb friction in the direction of the motion), read off the model's inverse dynamics
(:func:`~.effort_bounds.quadratics` and one call at rest): any ``(q, qd, qdd) -> efforts`` works.

**Reachability analysis** (the method of TOPP-RA, H. Pham and Q.-C. Pham, IEEE T-RO 2018): on a grid
s_0 < ... < s_N, u is constant on each segment, so x(s) is linear there and x_{i+1} = x_i + 2 (s_{i+1} - s_i) u_i.
Backward, the controllable sets K_i (the x_i from which the end is reachable within the limits) are intervals, each
the projection of a two-variable polytope in (u_i, x_i), computed exactly (Fourier-Motzkin); forward, the greatest
admissible u_i keeps x_{i+1} in K_{i+1}.  Greedy forward on exact controllable sets is time-optimal for the
discretized problem.

**On the whole curve.** TOPP-RA checks the limits at the grid points with the segment's u (collocation); between
them, where u_i still acts and x, q, q', q'' move on, the efforts overshoot (median 5.7 %, up to 44 % on 50 random
RX-90 paths at 0.35 of its effort limits, ``bench/bench_time_optimal.py``).  Here each segment's effort and
acceleration constraints hold at *check points* s_i + theta (s_{i+1} - s_i), theta in :data:`CHECK_THETA` (the
two ends with the segment's own u, and between); there x = x_i + 2 theta (s_{i+1} - s_i) u_i is linear in
(u_i, x_i), so every check point adds exact linear constraints, with a relative :data:`MARGIN` under the limits.
The viscous term f sqrt(x) is bounded linearly on the safe side (the tangent at the previous solution where it loads
the joint, the chord up to the velocity limit, or nothing, where it helps).  Where a joint reverses inside a
segment (the path's closed form: :attr:`~.paths.GeometricPath.velocity_zeros`) its Coulomb friction jumps: a check
point there carries both one-sided readings; at a stop both the motion's Coulomb friction and the model's
sign(0) = 0 count.  The velocity limits, which need no dynamics, bind as rows at :data:`VEL_POINTS` of the samples
per segment, lowered so that x, linear between them, stays under the bound at every sample between.  The result is
then evaluated on ``check`` samples per segment (efforts with the model itself, velocities, accelerations); a
segment over a limit by more than ``tolerance`` has its limits lowered by twice its excess and the problem is
solved again (seldom, thanks to the margin).  Each solution is safe at every check point; the rounds only lower
limits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .base import Trajectory, Triple
from .effort_bounds import CHUNK_STATES, quadratics
from .paths import GeometricPath, as_path
from .reachability import InfeasiblePath, solve

DEFAULT_GRIDPOINTS = 200
"""Grid points of the path by default, Chebyshev-Lobatto nodes (denser at the ends, where the slow start and stop
take most of the time; the path's knots added): the discretization's cost in duration falls as 1/N (a segment's u
holds at both its ends); at 200 the durations are within 0.1 % (median), 0.8 % (max) of TOPP-RA's on 50 RX-90
paths, whose results overshoot the limits (``bench/bench_time_optimal.py``)."""
CHECK_THETA = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Where in each segment the effort and acceleration limits are rows of the linear programs (both ends first and
last)."""
VEL_POINTS = 17
"""Points per segment (both ends included) where the velocity limits bind as rows of their own (cheap: no
dynamics)."""
MAX_ROUNDS = 16
MAX_KNOTS_FACTOR = 2
"""A path with more knots than this many times the grid count (a long sampled trajectory) gets the grid alone: the
check between the grid points still holds the limits where q'' jumps at a knot, and the cost stays that of the
grid."""
MARGIN = 1e-4
"""Relative margin under every limit at the linear programs' points: between them the curve then seldom exceeds a
limit (excess up to 7e-5 on 50 RX-90 paths at :data:`CHECK_THETA`; the velocity rows hold on every sample, and
within 1e-6 between samples), so that one problem is usually solved instead of two, for a duration longer by about
as much."""
KEEP_STATES = 1 << 16
"""Path samples of the check kept across rounds (at most ~9 MB for 6 joints)."""


@dataclass(frozen=True)
class Coefficients:
    """Effort coefficients (Gamma = a u + b x + f sqrt(x) + c), path derivatives and the velocity bound on x
    (min_j velocity_j^2 / q'_j^2) at points of the path; arrays (P, n), X (P,).  ``c_other``: a second reading of c
    that must hold as well (where the Coulomb friction has two: at a stop, at a joint's reversal; else c)."""

    dq: np.ndarray
    ddq: np.ndarray
    a: np.ndarray
    b: np.ndarray
    f: np.ndarray
    c: np.ndarray
    X: np.ndarray
    g: np.ndarray
    c_other: np.ndarray

    def at_rest(self, where: np.ndarray) -> Coefficients:
        """The same with the reading without Coulomb friction as c_other where ``where`` (P,): the model's at the
        instant of a stop (sign(0) = 0), which counts as well as the motion's (001 eq. 7.61)."""
        return replace(self, c_other=np.where(where[:, None], self.g, self.c_other))


def coefficients(path: GeometricPath, fn: Any, s: np.ndarray, velocity: np.ndarray) -> Coefficients:
    """:class:`Coefficients` at the path points ``s`` (1-D), by chunks of :data:`CHUNK_STATES` points."""
    parts = []
    for lo in range(0, s.size, CHUNK_STATES):
        q, dq, ddq = path.evaluate(s[lo:lo + CHUNK_STATES])
        c0, c1, c2 = quadratics(fn, q, dq, ddq)  # Gamma(q, v q', v^2 q'') = c0 + c1 v + c2 v^2
        zero = np.zeros_like(q)
        g = np.asarray(fn(q, zero, zero), dtype=float)
        a = np.asarray(fn(q, zero, dq), dtype=float) - g
        with np.errstate(divide="ignore"):
            X = np.min(np.where(dq != 0.0, velocity**2 / dq**2, np.inf), axis=1)
        c1 = np.where(np.abs(c1) <= 1e-12 * (np.abs(c0) + np.abs(c1) + np.abs(c2)), 0.0, c1)  # rounding: no viscous
        parts.append((dq, ddq, a, c2, c1, c0, X, g, c0))
    return Coefficients(*(np.concatenate(p) for p in zip(*parts, strict=True)))


@dataclass(frozen=True)
class Limits:
    """Joint limits (n,) each, inf = none."""

    effort: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


def _rowmax(a: np.ndarray) -> np.ndarray:
    """max over the columns of (P, n) a: column by column (NumPy's reduction along a short last axis is ~7x
    slower)."""
    out = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.maximum(out, a[:, j], out=out)
    return out


class _Rows:
    """Linear constraints Au u + Ax x_i <= C of the check points (arrays (N, R)) from coefficients (N, K, n),
    w = 2 theta (s_{i+1} - s_i) (N, K) (x at the point = x_i + w u), which points count (N, K) and ``vel``: (w, X)
    (N, V) of more points where only the velocity limits count.  Built once; a call gives the rows for the
    segments' limit scales (N,) and the tangent points of the viscous bound (N, K) (None: the viscous term left
    out, a first estimate): the limits scale C only (effort and acceleration linearly, sd^2 quadratically)."""

    def __init__(self, co: Coefficients, w: np.ndarray, active: np.ndarray, lim: Limits,
                 vel: tuple[np.ndarray, np.ndarray] | None, margin: float) -> None:
        N, K, n = co.a.shape
        effort, acc = bool(np.any(np.isfinite(lim.effort))), bool(np.any(np.isfinite(lim.acceleration)))
        width = 2 * n * (effort + acc)  # per point: effort +, effort - (if any limit), acceleration +, - (idem)
        V = 0 if vel is None else vel[0].shape[1]
        self.full = [np.zeros((N, K * width + V)) for _ in range(5)]  # Au, Ax, C0, C1, C2: C = C0 + s C1 + s^2 C2
        Au, Ax, C0, C1, C2 = (v[:, :K * width].reshape(N, K, width) for v in self.full)  # views
        W = w[..., None]
        blocks = []
        if effort:
            blocks.append((co.a + W * co.b, co.b, -np.maximum(co.c, co.c_other), np.minimum(co.c, co.c_other),
                           lim.effort))  # both readings of the Coulomb friction hold
        if acc:
            blocks.append((co.dq + W * co.ddq, co.ddq, 0.0, 0.0, lim.acceleration))
        for k, (au, ax, c_plus, c_minus, limit) in enumerate(blocks):
            plus, minus = slice(2 * k * n, (2 * k + 1) * n), slice((2 * k + 1) * n, (2 * k + 2) * n)
            Au[..., plus], Ax[..., plus], C0[..., plus] = au, ax, c_plus
            Au[..., minus], Ax[..., minus], C0[..., minus] = -Au[..., plus], -Ax[..., plus], c_minus
            C1[..., plus] = C1[..., minus] = limit * (1.0 - margin)
        free = ~np.isfinite(C1) | ~active[..., None]  # an infinite limit or a point that does not count: no row
        for v, fill in zip((Au, Ax, C0, C1), (0.0, 0.0, np.inf, 0.0), strict=True):
            v[free] = fill
        if vel is not None:
            vw, vX = vel
            on = np.isfinite(vX)
            tail = slice(K * width, None)
            self.full[0][:, tail], self.full[1][:, tail] = np.where(on, vw, 0.0), on
            self.full[2][:, tail] = np.where(on, 0.0, np.inf)
            self.full[4][:, tail] = np.where(on, vX * (1.0 - margin) ** 2, 0.0)  # sd^2: the margin squared
        self.live_e = ~free[..., :2 * n] if effort else None
        self.co, self.W, self.n, self.width = co, W, n, width

    def __call__(self, scale: np.ndarray, xbar: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows (Au, Ax, C) (N, R) for the limit scales (N,) and the viscous term's tangent points (N, K) or
        None."""
        Au, Ax, C0, C1, C2 = self.full
        s = scale[:, None]
        C = C0 + s * C1 + (s * s) * C2
        if xbar is None:
            return Au, Ax, C
        if self.live_e is None:  # no effort limit: no viscous term to bound
            return Au, Ax, C
        Au, Ax = Au.copy(), Ax.copy()
        N, K, n = self.co.f.shape
        views = [v[:, :K * self.width].reshape(N, K, self.width) for v in (Au, Ax, C)]
        Xp = self.co.X[..., None]
        xb = np.maximum(xbar, 1e-12 * max(float(np.max(xbar, initial=0.0)), 1e-300))[..., None]
        sq = np.sqrt(xb)
        for half, sign in ((slice(0, n), 1.0), (slice(n, 2 * n), -1.0)):
            phi = sign * self.co.f  # coefficient of sqrt(x) in the row sign * Gamma <= L
            tangent = phi > 0.0  # phi sqrt(x) <= phi (sqrt(xb)/2 + x / (2 sqrt(xb)))
            chord = (phi < 0.0) & np.isfinite(Xp) & (Xp > 0.0)  # sqrt(x) >= x / sqrt(X) on [0, X]
            with np.errstate(divide="ignore", invalid="ignore"):
                k = (np.where(tangent, phi / (2.0 * sq), 0.0)
                     + np.where(chord, phi / np.sqrt(np.where(chord, Xp, 1.0)), 0.0))
            live = self.live_e[..., half]
            views[0][..., half] += np.where(live, k * self.W, 0.0)
            views[1][..., half] += np.where(live, k, 0.0)
            views[2][..., half] -= np.where(live & tangent, phi * sq / 2.0, 0.0)
        return Au, Ax, C


class PathTimeLaw(Trajectory):
    """q(s(t)) with s(t) piecewise quadratic: on segment i, sdd = u_i and sd^2 goes linearly in s from x_i to
    x_{i+1}.  Breakpoints: the grid's times (where sdd, hence qdd, may jump)."""

    def __init__(self, path: GeometricPath, s: np.ndarray, x: np.ndarray, u: np.ndarray) -> None:
        self.path, self.s, self.x, self.u = path, s, x, u
        self.n = path.n
        sd = np.sqrt(x)
        with np.errstate(divide="ignore"):
            dt = 2.0 * np.diff(s) / (sd[:-1] + sd[1:])
        if not np.all(np.isfinite(dt)):
            raise InfeasiblePath("the time law stops inside the path (sd = 0 on a segment)")
        self.times = np.concatenate([[0.0], np.cumsum(dt)])
        self.duration = float(self.times[-1])
        self._sd = sd

    def breakpoints(self) -> np.ndarray:
        return self.times.copy()

    def path_state(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(s, sd, sdd) at times t (inside [0, duration])."""
        i = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self.u.size - 1)
        tau = t - self.times[i]
        sd = np.maximum(self._sd[i] + self.u[i] * tau, 0.0)
        s = np.clip(self.s[i] + self._sd[i] * tau + 0.5 * self.u[i] * tau**2, self.s[i], self.s[i + 1])
        return s, sd, self.u[i]

    def _evaluate(self, t: np.ndarray) -> Triple:
        s, sd, sdd = self.path_state(t)
        q, dq, ddq = self.path.evaluate(s)
        return q, dq * sd[:, None], dq * sdd[:, None] + ddq * (sd**2)[:, None]


@dataclass
class TimeOptimalResult:
    """Outcome of :func:`time_optimal`: the retimed ``trajectory`` (a :class:`PathTimeLaw`), its ``duration``, the
    grid ``s`` (N+1,), sd^2 ``x`` (N+1,) and sdd ``u`` (N,) on it; the peak ratios |value| / limit on the check
    points (``check`` per segment and the worst points found): ``effort_ratio``, ``velocity_ratio``,
    ``acceleration_ratio``; ``rounds``: problems solved; ``binding``: the limit with the greatest ratio."""

    trajectory: PathTimeLaw
    duration: float
    s: np.ndarray
    x: np.ndarray
    u: np.ndarray
    effort_ratio: float
    velocity_ratio: float
    acceleration_ratio: float
    rounds: int
    binding: str

    @property
    def peak_ratio(self) -> float:
        return max(self.effort_ratio, self.velocity_ratio, self.acceleration_ratio)


def limit_vector(values: Any, n: int, what: str) -> np.ndarray:
    """Limits (n,) from a scalar or (n,) values: positive, inf allowed (ValueError otherwise)."""
    lim = np.asarray(values, dtype=float)
    if lim.ndim == 0:
        lim = np.full(n, float(lim))
    if lim.shape != (n,) or np.any(np.isnan(lim)) or np.any(lim <= 0.0):
        raise ValueError(f"{what} must be positive (inf allowed) with shape ({n},), got {lim}")
    return lim


def _limits(dynamics: Any, n: int, effort: Any, velocity: Any, acceleration: Any) -> Limits:
    own = getattr(dynamics, "limits", {})
    if effort is None and "effort" not in own:
        raise ValueError("effort_limits are required when dynamics is a plain callable")
    return Limits(limit_vector(own["effort"] if effort is None else effort, n, "effort limits"),
                  limit_vector(own.get("velocity", np.inf) if velocity is None else velocity, n, "velocity limits"),
                  limit_vector(np.inf if acceleration is None else acceleration, n, "acceleration limits"))


def _grid(path: GeometricPath, gridpoints: Any) -> np.ndarray:
    if np.ndim(gridpoints) == 0:
        count = int(gridpoints)
        if count < 2:
            raise ValueError(f"gridpoints must be >= 2, got {gridpoints}")
        nodes = 0.5 - 0.5 * np.cos(np.pi * np.arange(count) / (count - 1))  # Chebyshev-Lobatto: denser at the ends
        knots = path.knots if path.knots.size <= MAX_KNOTS_FACTOR * count else path.knots[[0, -1]]
        s = np.union1d(path.s0 + nodes * path.length, knots)
    else:
        s = np.unique(np.asarray(gridpoints, dtype=float))
        if s.size < 2 or s[0] != path.s0 or s[-1] != path.s1:
            raise ValueError(f"gridpoints must start at {path.s0} and end at {path.s1}")
    keep = np.concatenate([[True], np.diff(s) > 1e-12 * max(path.length, 1e-300)])
    return s[keep]


class _Samples:
    """q, q', q'' and max_j |q'_j| / velocity_j at the fractions ``theta`` (M,) of every segment of the grid ``s``,
    by chunks of segments; kept for the next rounds when there are at most :data:`KEEP_STATES` of them."""

    def __init__(self, path: GeometricPath, s: np.ndarray, theta: np.ndarray, velocity: np.ndarray) -> None:
        self.path, self.s, self.theta, self.velocity = path, s, theta, velocity
        self.per = max(1, CHUNK_STATES // theta.size)
        self._kept: dict[int, tuple[np.ndarray, ...]] | None = {} if (s.size - 1) * theta.size <= KEEP_STATES else None

    def chunks(self) -> Any:
        """(segments (k,), q, q', q'' (k M, n), max_j |q'_j| / velocity_j (k M,)) per chunk."""
        N = self.s.size - 1
        for lo in range(0, N, self.per):
            i = np.arange(lo, min(N, lo + self.per))
            if self._kept is not None and lo in self._kept:
                yield (i, *self._kept[lo])
                continue
            ds = (self.s[i + 1] - self.s[i])[:, None]
            q, dq, ddq = self.path.evaluate((self.s[i][:, None] + self.theta * ds).ravel())
            vals = (q, dq, ddq, _rowmax(np.abs(dq) * (1.0 / self.velocity)))
            if self._kept is not None:
                self._kept[lo] = vals
            yield (i, *vals)

    def velocity_rows(self, points: int) -> tuple[np.ndarray, np.ndarray]:
        """(theta (V,), sd^2 bounds (N, V)) at ``points`` of the samples per segment (both ends included), lowered
        so that x linear between them stays under X = 1 / max_j (q'_j / velocity_j)^2 at every sample between: per
        interval, both ends lowered by the greatest excess of the chord over X, or both set to the least X inside,
        whichever keeps more."""
        M = self.theta.size
        idx = np.unique(np.round(np.linspace(0, M - 1, min(points, M))).astype(int))
        N = self.s.size - 1
        out = np.empty((N, idx.size))
        ia = np.searchsorted(idx, np.arange(M), side="right") - 1  # the interval of each sample
        ia = np.minimum(ia, idx.size - 2)
        ta, tb = self.theta[idx[ia]], self.theta[idx[ia + 1]]
        wt = (self.theta - ta) / (tb - ta)
        for i, *_, dqv in self.chunks():
            with np.errstate(divide="ignore"):
                X = 1.0 / dqv.reshape(i.size, M) ** 2
            Xa, Xb = X[:, idx[ia]], X[:, idx[ia + 1]]
            with np.errstate(invalid="ignore"):
                excess = Xa + wt * (Xb - Xa) - X
            excess = np.where(np.isfinite(excess), np.maximum(excess, 0.0), 0.0)
            delta = np.maximum.reduceat(excess, idx[:-1], axis=1)  # (k, V - 1) per interval
            least = np.minimum.reduceat(X, idx[:-1], axis=1)
            least = np.minimum(least, X[:, idx[1:]])
            ends = X[:, idx]
            lower = (ends[:, :-1] - delta, ends[:, 1:] - delta)
            keep = (lower[0] + lower[1] >= 2.0 * least) & (np.minimum(*lower) >= 0.0)  # which keeps more
            ra = np.where(keep, lower[0], least)
            rb = np.where(keep, lower[1], least)
            bound = ends.copy()
            bound[:, :-1] = np.minimum(bound[:, :-1], ra)
            bound[:, 1:] = np.minimum(bound[:, 1:], rb)
            out[i] = np.maximum(bound, 0.0)
        return self.theta[idx], out


def _check(law: PathTimeLaw, fn: Any, lim: Limits, samples: _Samples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratios |value| / limit (N, M) of efforts, velocities, accelerations at the ``samples`` of each segment.
    Where sd = 0 (a stop) both readings of the Coulomb friction count: the motion's and the model's sign(0) = 0."""
    s, x, u, theta = law.s, law.x, law.u, samples.theta
    N, M = u.size, theta.size
    out = [np.zeros((N, M)) for _ in range(3)]
    inv_e, inv_a = 1.0 / lim.effort, 1.0 / lim.acceleration
    with_acc = bool(np.any(np.isfinite(lim.acceleration)))
    for i, q, dq, ddq, dqv in samples.chunks():
        ds = (s[i + 1] - s[i])[:, None]
        xx = np.maximum(x[i][:, None] + 2.0 * theta * ds * u[i][:, None], 0.0).ravel()
        uu = np.repeat(u[i], M)[:, None]
        sd = np.sqrt(xx)
        qd = dq * np.maximum(sd, 1e-300)[:, None]  # at rest: the direction of the motion (Coulomb friction)
        qdd = dq * uu
        qdd += ddq * xx[:, None]
        tau = np.asarray(fn(q, qd, qdd), dtype=float)
        if np.any(rest := sd == 0.0):
            tau[rest] = np.maximum(np.abs(tau[rest]), np.abs(fn(q[rest], np.zeros_like(qd[rest]), qdd[rest])))
        out[0][i] = _rowmax(np.abs(tau, out=tau) * inv_e).reshape(i.size, M)
        out[1][i] = (sd * dqv).reshape(i.size, M)
        if with_acc:
            out[2][i] = _rowmax(np.abs(qdd) * inv_a).reshape(i.size, M)
    return out[0], out[1], out[2]


def reversals(samples: _Samples) -> tuple[np.ndarray, np.ndarray]:
    """(segment, theta) of every sign change of a q'_j inside a segment (a joint reverses there and its Coulomb
    friction jumps): the path's own closed form (:attr:`~.paths.GeometricPath.velocity_zeros`) where it has one,
    else located between two of the ``samples`` by bisection to ~1e-13 of the segment."""
    path, s, theta = samples.path, samples.s, samples.theta
    ds = np.diff(s)
    if path.velocity_zeros is not None:
        at, _ = path.velocity_zeros()
        seg = np.clip(np.searchsorted(s, at, side="right") - 1, 0, ds.size - 1)
        th = (at - s[seg]) / ds[seg]
        inside = (th > 0.0) & (th < 1.0)  # a zero at a grid point: sign(0) there, as between samples
        return seg[inside], th[inside]
    seg, lo_t, hi_t, joint = [], [], [], []
    for i, _, dq, _, _ in samples.chunks():
        sg = np.sign(dq.reshape(i.size, theta.size, -1))
        a, m, j = np.nonzero(sg[:, :-1] * sg[:, 1:] < 0)  # strict changes (a zero at a grid point: sign(0) there)
        seg.append(i[a])
        lo_t.append(theta[m])
        hi_t.append(theta[m + 1])
        joint.append(j)
    seg, lo_t, hi_t, joint = (np.concatenate(v) if v else np.zeros(0) for v in (seg, lo_t, hi_t, joint))
    seg, joint = seg.astype(int), joint.astype(int)
    if seg.size == 0:
        return seg, lo_t
    sign_lo = np.sign(path.evaluate(s[seg] + lo_t * ds[seg])[1][np.arange(seg.size), joint])
    for _ in range(44):
        mid = 0.5 * (lo_t + hi_t)
        v = path.evaluate(s[seg] + mid * ds[seg])[1][np.arange(seg.size), joint]
        same = np.sign(v) == sign_lo
        lo_t, hi_t = np.where(same, mid, lo_t), np.where(same, hi_t, mid)
    return seg, 0.5 * (lo_t + hi_t)


@dataclass
class _Columns:
    """The check points: per column a theta (N,), whether it counts on each segment (N,), its coefficients."""

    theta: list[np.ndarray]
    active: list[np.ndarray]
    co: list[Coefficients]

    def add(self, theta: np.ndarray, active: np.ndarray, co: Coefficients) -> None:
        self.theta.append(theta)
        self.active.append(active)
        self.co.append(co)

    def stacked(self) -> tuple[Coefficients, np.ndarray, np.ndarray]:
        co = Coefficients(*(np.stack([getattr(c, f) for c in self.co], axis=1)
                            for f in Coefficients.__dataclass_fields__))
        return co, np.stack(self.theta, axis=1), np.stack(self.active, axis=1)


def _columns(p: GeometricPath, fn: Any, s: np.ndarray, lim: Limits, samples: _Samples, rest_start: bool,
             rest_end: bool) -> _Columns:
    """:data:`CHECK_THETA` in every segment, at a stop at either end the reading without Coulomb friction as well;
    a column per reversal of a joint inside a segment (the k-th of a segment in the k-th), with both one-sided
    readings of its Coulomb friction (1e-9 of the segment before and after; the coefficients of the side before)."""
    ds = np.diff(s)
    N = ds.size
    cols = _Columns([], [], [])
    every = np.ones(N, dtype=bool)
    every_co = coefficients(p, fn, (s[:-1] + np.asarray(CHECK_THETA)[:, None] * ds).ravel(), lim.velocity)
    for k, t in enumerate(CHECK_THETA):
        co = Coefficients(*(getattr(every_co, f)[k * N:(k + 1) * N] for f in Coefficients.__dataclass_fields__))
        for end, seg, on in ((0.0, 0, rest_start), (1.0, N - 1, rest_end)):
            if on and t == end:
                co = co.at_rest(np.arange(N) == seg)
        cols.add(np.full(N, t), every, co)
    seg, th = reversals(samples)
    rank = np.zeros(seg.size, dtype=int)
    for k in range(1, seg.size):
        rank[k] = np.count_nonzero(seg[:k] == seg[k])
    base = cols.co[0]
    for r in range(int(rank.max(initial=-1)) + 1):
        i, t = seg[rank == r], th[rank == r]
        before, after = (coefficients(p, fn, s[i] + np.clip(t + side, 0.0, 1.0) * ds[i], lim.velocity)
                         for side in (-1e-9, 1e-9))
        fields = {f: getattr(base, f).copy() for f in Coefficients.__dataclass_fields__}
        for f in fields:
            fields[f][i] = getattr(before, f)
        fields["c_other"][i] = after.c
        theta = np.zeros(N)
        theta[i] = np.clip(t - 1e-9, 0.0, 1.0)
        cols.add(theta, np.isin(np.arange(N), i), Coefficients(**fields))
    return cols


def time_optimal(path: Any, dynamics: Any, effort_limits: Any = None, velocity_limits: Any = None, *,
                 acceleration_limits: Any = None, gridpoints: Any = DEFAULT_GRIDPOINTS, check: int = 49,
                 tolerance: float = 1e-9, start_speed: float = 0.0, end_speed: float = 0.0,
                 names: list[str] | None = None, engine: str | None = None, margin: float = MARGIN
                 ) -> TimeOptimalResult:
    """The fastest time law along ``path`` (anything :func:`~.paths.as_path` takes) within the limits, on the
    continuous curve (module docstring).

    dynamics: a RobotModel or a callable (q, qd, qdd) -> efforts (N, n).  Limits: (n,) or scalars, inf = none;
    effort and velocity default to ``dynamics.limits``, acceleration to none.  gridpoints: a count
    (:data:`DEFAULT_GRIDPOINTS`: Chebyshev-Lobatto nodes of s, the path's knots added) or the grid itself.  check: points per segment where the result is verified (both
    ends included); tolerance: the relative excess allowed there.  start_speed / end_speed: sd at the ends (0: at
    rest).  names: the joints' names for the messages.  engine: the linear programs' (:func:`.reachability.kernel`:
    ``compiled``, ``numpy``; default ``$ROBOT_DYNAMICS_ENGINE``).  margin: the relative margin under the effort and
    acceleration limits at the linear programs' points (:data:`MARGIN`; 0: the exact optimum of the discretized
    problem, usually after a second problem where the curve exceeds a limit between those points).  :class:`InfeasiblePath` (a ValueError) when no time law
    keeps the limits.
    """
    p = as_path(path)
    fn = dynamics.inverse_dynamics if hasattr(dynamics, "inverse_dynamics") else dynamics
    if not callable(fn):
        raise ValueError("dynamics must be a RobotModel (with inverse_dynamics) or a callable (q, qd, qdd) -> efforts")
    lim = _limits(dynamics, p.n, effort_limits, velocity_limits, acceleration_limits)
    if not 0.0 <= float(margin) < 0.5:
        raise ValueError(f"margin must be in [0, 0.5), got {margin}")
    s = _grid(p, gridpoints)
    ds = np.diff(s)
    N = ds.size
    samples = _Samples(p, s, np.linspace(0.0, 1.0, max(int(check), 3)), lim.velocity)
    x_start, x_end = float(start_speed) ** 2, float(end_speed) ** 2
    cols = _columns(p, fn, s, lim, samples, x_start == 0.0, x_end == 0.0)
    for at_rest, seg, co in ((x_start == 0.0, 0, cols.co[0]), (x_end == 0.0, N - 1, cols.co[len(CHECK_THETA) - 1])):
        static = np.abs(np.stack([co.c[seg], co.g[seg]]))  # moving off / stopping, and at the instant of rest
        if at_rest and np.any(over := static > lim.effort):
            k, j = (int(v) for v in np.argwhere(over)[0])
            where = p.s0 if seg == 0 and co is cols.co[0] else p.s1
            raise InfeasiblePath(f"{names[j] if names else f'joint {j}'}: at rest at s = {where:.6g} the static "
                                 f"effort (gravity + Coulomb friction) is {static[k, j]:.6g}, beyond its limit "
                                 f"{lim.effort[j]:.6g}")
    viscous = any(np.any(c.f != 0.0) for c in cols.co)
    vt, Xv = samples.velocity_rows(VEL_POINTS)
    vel = (2.0 * vt * ds[:, None], Xv) if np.any(np.isfinite(Xv)) else None
    co, theta, active = cols.stacked()
    w = 2.0 * theta * ds[:, None]
    rows = _Rows(co, w, active, lim, vel, float(margin))
    scale = np.ones(N)
    xbar = None
    for rounds in range(1, MAX_ROUNDS + 1):
        Au, Ax, C = rows(scale, xbar if viscous else None)
        x, u = solve(Au, Ax, C, ds, x_start, x_end, s, engine)
        law = PathTimeLaw(p, s, x, u)
        new_xbar = x[:-1, None] + w * u[:, None]
        if viscous and xbar is None:  # the viscous term linearized at this first estimate from now on
            xbar = new_xbar
            continue
        ratios = _check(law, fn, lim, samples)
        worst = np.maximum.reduce(ratios)
        over = np.max(worst, axis=1) > 1.0 + tolerance
        settled = xbar is None or np.allclose(new_xbar, xbar, rtol=1e-3, atol=1e-12 * float(np.max(x)))
        if not np.any(over) and (not viscous or settled):
            peaks = [float(np.max(r)) for r in ratios]
            names = ("effort", "velocity", "acceleration")
            return TimeOptimalResult(law, law.duration, s, x, u, *peaks, rounds, names[int(np.argmax(peaks))])
        if viscous:
            xbar = new_xbar
        # a segment over a limit between its check points: its limits lowered by twice the excess
        scale = np.where(over, scale / np.max(worst, axis=1) ** 2 * (1.0 - 1e-9), scale)
    raise InfeasiblePath(f"the limits were not met on every check point after {MAX_ROUNDS} rounds "
                         f"(peak ratio {float(np.max(worst)):.9g})")
