"""Effort bounds of a trajectory between its samples, in bounded memory (001 §8.3 time scaling, eq. 7.61 efforts).

A trajectory is cut into *pieces* on which it is smooth: the segments of a
:class:`~robot_dynamics.trajectory.sampled.SampledTrajectory` (one polynomial each), or the intervals between
consecutive knots of any other trajectory, its breakpoints among the knots.  Each piece is divided into ``sub``
cells; a quantity is evaluated at the cells' ends, the ends of a piece *inside* it (the one-sided values, so both
sides of an acceleration switch count), a chunk of pieces at a time (at most :data:`CHUNK_STATES` states: the
memory does not grow with the trajectory).  Then the cells whose grid values come near the extreme (within a
relative :data:`WINDOW`, or within four times the local second difference of the grid: the size of an excursion
between two grid points) are searched again: :data:`REFINE_POINTS` + 1 points across the cell, then across the two
sub-cells around the best one, :data:`REFINE_LEVELS` times (8x narrower each time: 5 levels leave 3e-5 of the cell,
so at a smooth extremum the value is off by ~1e-9 of its variation across the cell, itself ~1e-5 of the value).
Where a joint's velocity changes sign inside a cell the Coulomb friction jumps: the crossing is found by bisection
and both one-sided states count (:func:`reversals`).

Quantities: the smallest stretch factor x = 1/k at which an effort reaches its limit (:func:`smallest_crossing`,
the efforts being exact quadratics in x, see :mod:`.time_scaling`) and the peak ratio |Gamma_j| / limit_j of a
trajectory played k times slower (:func:`peak_effort_ratio`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .base import Trajectory, Triple
from .sampled import SampledTrajectory

Dynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
Objective = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

CHUNK_STATES = 4096
"""States (q, qd, qdd) evaluated at once: the inverse dynamics of a 6-joint arm then needs ~7 MB (compiled engine) to
~12 MB (NumPy engine)."""
WINDOW = 1e-3
"""Cells whose grid value is within this (relative) of the extreme are refined."""
REFINE_POINTS = 16
REFINE_LEVELS = 5
MAX_REFINED = 4096
"""Most cells refined (the closest to the extreme first)."""


@dataclass
class Pieces:
    """``count`` pieces of ``sub`` cells; ``states(piece, u)`` -> (q, qd, qdd) at fractions u in [0, 1] of the
    pieces (u = 0 and 1: the one-sided values inside the piece, a joint at rest moving off with qd = +-1e-300);
    ``extra()``: chunks of states to count as well: the same ends with qd = 0 exactly at rest (the model's
    sign(0) = 0: no Coulomb friction at the instant of a stop, 001 eq. 7.61), so that both readings of a one-sided
    value at a stop are within the limits."""

    count: int
    sub: int
    states: Callable[[np.ndarray, np.ndarray], Triple]
    extra: Callable[[], Iterator[Triple]] | None = None


def _at_rest(states: Triple) -> Triple:
    """``states`` with the +-1e-300 velocities of the one-sided ends set to 0."""
    q, qd, qdd = states
    return q, np.where(np.abs(qd) <= 1e-300, 0.0, qd), qdd


def sampled_pieces(traj: SampledTrajectory, sub: int) -> Pieces:
    """The segments of ``traj`` (the polynomials a controller plays), ``sub`` cells each; at the ends of a segment
    a joint at rest gets qd = +-1e-300 with the sign of its motion inside the segment (the limit of the Coulomb
    friction sign(qd), 001 eq. 7.61); the ends carry the points' own values (a velocity of 0 stays 0, not a
    rounding residue of either sign), and count once more with qd = 0 at rest as ``extra``."""
    T = np.diff(traj.times)
    if T.size == 0:
        return Pieces(1, 1, lambda p, u: tuple(np.repeat(x[None], p.size, axis=0) for x in
                                               (traj.positions[0], np.zeros(traj.n), np.zeros(traj.n))))

    def states(p: np.ndarray, u: np.ndarray) -> Triple:
        q, qd, qdd = traj.segment_states(p, u * T[p])
        end = (u <= 0.0) | (u >= 1.0)
        if np.any(end):
            pe, ue = p[end], u[end]
            point = pe + (ue >= 1.0)  # the point's own values (the polynomial there up to rounding)
            q[end] = traj.positions[point]
            if traj.velocities is not None:
                qd[end] = traj.velocities[point]
            if traj.accelerations is not None:
                qdd[end] = traj.accelerations[point]
            inside = traj.segment_states(pe, (ue + np.where(ue <= 0.0, 1e-9, -1e-9)) * T[pe])[1]
            v = qd[end]
            qd[end] = np.where(v == 0.0, np.copysign(1e-300, inside) * (inside != 0.0), v)
        return q, qd, qdd

    def ends() -> Iterator[Triple]:
        per = max(1, CHUNK_STATES // 2)
        for lo in range(0, T.size, per):
            p = np.arange(lo, min(T.size, lo + per))
            pp = np.concatenate([p, p])
            yield _at_rest(states(pp, np.concatenate([np.zeros(p.size), np.ones(p.size)])))

    return Pieces(T.size, int(sub), states, ends)


def continuous_pieces(traj: Trajectory, knots: np.ndarray, sub: int) -> Pieces:
    """``traj`` between consecutive points of ``knots`` and of its breakpoints, ``sub`` cells each (at least 4: the
    second differences of the grid then estimate what a cell may hide); the ends of a piece are read one-sided
    (:meth:`Trajectory.one_sided`, nudged by at most a quarter of the piece)."""
    sub = max(int(sub), 4)
    t = np.unique(np.clip(np.concatenate([np.asarray(knots, float), traj.breakpoints(), [0.0, traj.duration]]),
                          0.0, traj.duration))
    if t.size < 2:
        def still(p: np.ndarray, u: np.ndarray) -> Triple:
            q = traj.evaluate(np.zeros(p.size))[0]
            return q, np.zeros_like(q), np.zeros_like(q)
        return Pieces(1, 1, still)
    a, b = t[:-1], t[1:]
    nudge = np.minimum(1e-12 * max(traj.duration, 1e-9), 0.25 * (b - a))

    def states(p: np.ndarray, u: np.ndarray) -> Triple:
        q, qd, qdd = traj.evaluate(a[p] + u * (b[p] - a[p]))
        for end, side, at in ((u <= 0.0, 1, a), (u >= 1.0, -1, b)):
            if np.any(end):
                q[end], qd[end], qdd[end] = traj.one_sided(at[p[end]], side, nudge[p[end]])
        return q, qd, qdd

    def ends() -> Iterator[Triple]:  # the sides inside [0, duration] (not the rest before and after)
        b = traj.breakpoints()
        for lo in range(0, b.size, CHUNK_STATES // 2):
            bb = b[lo:lo + CHUNK_STATES // 2]
            yield traj.evaluate(bb)
            for side, inside in ((-1, bb > 0.0), (1, bb < traj.duration)):
                if np.any(inside):
                    yield _at_rest(traj.one_sided(bb[inside], side))

    return Pieces(t.size - 1, int(sub), states, ends)


def scan(pieces: Pieces, objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """Grid values (count, sub + 1) of ``objective`` (to be minimized), a chunk of pieces at a time, and the cells
    (count, sub) where some joint's velocity changes sign (its Coulomb friction jumps inside)."""
    sub = pieces.sub
    u = np.linspace(0.0, 1.0, sub + 1)
    per = max(1, CHUNK_STATES // (sub + 1))
    out = np.empty((pieces.count, sub + 1))
    flips = np.zeros((pieces.count, sub), dtype=bool)
    for lo in range(0, pieces.count, per):
        p = np.arange(lo, min(pieces.count, lo + per))
        q, qd, qdd = pieces.states(np.repeat(p, sub + 1), np.tile(u, p.size))
        out[p] = objective(q, qd, qdd).reshape(p.size, sub + 1)
        sg = np.sign(qd).reshape(p.size, sub + 1, -1)
        flips[p] = np.any(sg[:, :-1] * sg[:, 1:] < 0, axis=2)
    return out, flips


def reversals(pieces: Pieces, flips: np.ndarray, iterations: int = 60) -> Triple | None:
    """Both one-sided states (qd_j = -+1e-300) where a joint's velocity crosses zero inside a flagged cell, found by
    bisection: there the Coulomb friction Fc sign(qd) of 001 eq. 7.61 jumps and the effort peaks on one side."""
    cells = np.flatnonzero(flips.ravel())[:MAX_REFINED]
    if cells.size == 0:
        return None
    sub = pieces.sub
    p = cells // sub
    a = (cells % sub) / sub
    b = a + 1.0 / sub
    va, vb = pieces.states(p, a)[1], pieces.states(p, b)[1]
    rows, joints = np.nonzero(np.sign(va) * np.sign(vb) < 0)
    p, a, b, sa = p[rows], a[rows], b[rows], np.sign(va[rows, joints])
    for _ in range(iterations):
        mid = 0.5 * (a + b)
        same = np.sign(pieces.states(p, mid)[1][np.arange(p.size), joints]) == sa
        a, b = np.where(same, mid, a), np.where(same, b, mid)
    q, qd, qdd = pieces.states(p, 0.5 * (a + b))
    k = np.arange(p.size)
    lo, hi = qd.copy(), qd.copy()
    lo[k, joints], hi[k, joints] = -1e-300, 1e-300
    return np.vstack([q, q]), np.vstack([lo, hi]), np.vstack([qdd, qdd])


def _candidates(grid: np.ndarray) -> tuple[np.ndarray, float]:
    """Cells (flat index piece * sub + cell) that may hold a value below the grid's minimum, and that minimum
    (by chunks of pieces: no temporary as large as the grid)."""
    best = float(np.min(grid))
    if not math.isfinite(best):
        return np.zeros(0, int), best
    slack = WINDOW * abs(best)
    sub = grid.shape[1] - 1
    found, keys = [], []
    per = max(1, CHUNK_STATES // (sub + 1))
    for lo in range(0, grid.shape[0], per):
        g = grid[lo:lo + per]
        cells = np.minimum(g[:, :-1], g[:, 1:])
        key = cells
        if sub > 1:  # excursions between grid points ~ second differences of the grid
            with np.errstate(invalid="ignore"):
                d2 = np.abs(g[:, :-2] - 2.0 * g[:, 1:-1] + g[:, 2:])
            d2 = np.nan_to_num(d2, nan=0.0, posinf=0.0)  # next to a cell without a crossing: the window only
            local = np.maximum(np.pad(d2, ((0, 0), (1, 0)), mode="edge"), np.pad(d2, ((0, 0), (0, 1)), mode="edge"))
            key = np.where(np.isfinite(cells), cells - 4.0 * local, cells)
        idx = np.flatnonzero((key <= best + slack) | (cells <= best + slack))
        found.append(idx + lo * sub)
        keys.append(key.ravel()[idx])
    idx, key = np.concatenate(found), np.concatenate(keys)
    if idx.size > MAX_REFINED:
        idx = idx[np.argsort(key, kind="stable")[:MAX_REFINED]]
    return idx, best


def refine(pieces: Pieces, objective: Objective, cells: np.ndarray) -> float:
    """Smallest value of ``objective`` found inside each of ``cells`` (inf if none): :data:`REFINE_POINTS` + 1
    points across the cell, then across the two sub-cells around the best of them, :data:`REFINE_LEVELS` times
    (each level shrinks the bracket 8x; one batch of states per level, whatever the number of cells)."""
    sub = pieces.sub
    best = math.inf
    frac = np.linspace(0.0, 1.0, REFINE_POINTS + 1)
    per = max(1, CHUNK_STATES // (REFINE_POINTS + 1))
    for lo in range(0, cells.size, per):
        c = cells[lo:lo + per]
        p = c // sub
        a = (c % sub) / sub
        end = np.minimum(a + 1.0 / sub, 1.0)
        w = end - a
        for _ in range(REFINE_LEVELS):
            u = np.minimum(a[:, None] + w[:, None] * frac[None, :], end[:, None])
            v = objective(*pieces.states(np.repeat(p, frac.size), u.ravel())).reshape(c.size, frac.size)
            best = min(best, float(np.min(v)))
            i = np.argmin(v, axis=1)
            w = 2.0 * w / REFINE_POINTS
            a = np.clip(u[np.arange(c.size), np.maximum(i - 1, 0)], a, end - w)  # never outside the cell
    return best


def minimum(pieces: Pieces, objective: Objective, refine_objective: Objective | None = None) -> float:
    """Smallest value of ``objective`` on the pieces: the grid, then the refined cells near the extreme."""
    grid, flips = scan(pieces, objective)
    cells, best = _candidates(grid)
    if cells.size:
        best = min(best, refine(pieces, refine_objective or objective, cells))
    if pieces.extra is not None:
        for states in pieces.extra():
            best = min(best, _chunked_min(objective, states))
    if (extra := reversals(pieces, flips)) is not None:
        best = min(best, _chunked_min(refine_objective or objective, extra))
    return best


def _chunked_min(objective: Objective, states: Triple) -> float:
    """Smallest value of ``objective`` over ``states``, :data:`CHUNK_STATES` rows at a time."""
    q, qd, qdd = states
    best = math.inf
    for lo in range(0, q.shape[0], CHUNK_STATES):
        sl = slice(lo, lo + CHUNK_STATES)
        best = min(best, float(np.min(objective(q[sl], qd[sl], qdd[sl]), initial=np.inf)))
    return best


# ----------------------------------------------------------------------------- the two quantities
def quadratics(fn: Dynamics, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, ...]:
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


def smallest_positive_root(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Smallest root > 0 of a x^2 + b x + c = 0, elementwise (inf if none)."""
    out = np.full(a.shape, np.inf)
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), np.abs(c)) + 1e-300
    quad = np.abs(a) > 1e-12 * scale
    disc = b * b - 4.0 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
        qq = -0.5 * (b + np.copysign(sq, b))  # numerically stable pair of roots
        r1 = np.where(quad, qq / a, np.nan)
        r2 = np.where(quad, c / qq, np.nan)
        lin = np.where(~quad & (np.abs(b) > 0), -c / b, np.nan)
    for r in (r1, r2, lin):
        ok = np.isfinite(r) & (r > 0)
        out = np.where(ok, np.minimum(out, r), out)
    return out


def static_error(c0: np.ndarray, lim: np.ndarray, names: list[str] | None) -> ValueError | None:
    """The error to raise when a static effort c0 (gravity + Coulomb friction) is at or beyond its limit."""
    finite = np.isfinite(lim)
    over = (np.abs(c0) >= lim) & finite
    if not np.any(over):
        return None
    i, j = (int(v) for v in np.argwhere(over)[0])
    name = names[j] if names else f"joint {j}"
    return ValueError(f"{name}: the static effort (gravity + Coulomb friction) alone is {c0[i, j]:.6g}, beyond its "
                      f"limit {lim[j]:.6g}; no time scaling can make the trajectory feasible")


def row_crossings(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, lim: np.ndarray) -> np.ndarray:
    """Per row: the smallest x > 0 where some |c0 + c1 x + c2 x^2| reaches its (finite) limit (inf if none; 0 where
    the static term is already there)."""
    finite = np.isfinite(lim)
    if not np.any(finite) or c0.size == 0:
        return np.full(c0.shape[0], np.inf)
    x = np.full(c0.shape[0], np.inf)
    for s in (1.0, -1.0):
        r = smallest_positive_root(c2[:, finite], c1[:, finite], c0[:, finite] - s * lim[finite])
        x = np.minimum(x, r.min(axis=1))
    x[np.any((np.abs(c0) >= lim) & finite, axis=1)] = 0.0
    return x


class CrossingObjective:
    """x at which the states' efforts first reach a limit (:func:`row_crossings`); ``raise_static``: raise the
    :func:`static_error` instead of returning 0.  Records ``peak_at_one``: max |Gamma| / limit at x = 1."""

    def __init__(self, fn: Dynamics, lim: np.ndarray, names: list[str] | None, raise_static: bool = True) -> None:
        self.fn, self.lim, self.names, self.raise_static = fn, lim, names, raise_static
        self.peak_at_one = 0.0

    def __call__(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        c0, c1, c2 = quadratics(self.fn, q, qd, qdd)
        if self.raise_static and (err := static_error(c0, self.lim, self.names)) is not None:
            raise err
        self.peak_at_one = max(self.peak_at_one, ratio(c0 + c1 + c2, self.lim))
        return row_crossings(c0, c1, c2, self.lim)


def ratio(tau: np.ndarray, lim: np.ndarray) -> float:
    """max |tau_j| / lim_j over the rows and the joints with a finite limit (0 when none)."""
    finite = np.isfinite(lim)
    return float(np.max(np.abs(tau[:, finite]) / lim[finite])) if np.any(finite) and tau.size else 0.0


def smallest_crossing(pieces: Pieces, fn: Dynamics, lim: np.ndarray, names: list[str] | None = None
                      ) -> tuple[float, float]:
    """(x*, peak ratio at x = 1 on the grid): the smallest x = 1/k > 0 at which an effort of the pieces reaches its
    limit (inf if none); every x < x* keeps all of them inside.  ValueError for a static effort beyond a limit."""
    obj = CrossingObjective(fn, lim, names)
    x = minimum(pieces, obj, CrossingObjective(fn, lim, names, raise_static=False))
    if x <= 0.0:
        raise ValueError("a static effort (gravity + Coulomb friction) reaches its limit between the samples; no time "
                         "scaling can make the trajectory feasible")
    return x, obj.peak_at_one


def peak_effort_ratio(pieces: Pieces, fn: Dynamics, lim: np.ndarray, scale: float = 1.0) -> float:
    """max_t,j |Gamma_j| / limit_j of the pieces played ``scale`` times slower (qd / k, qdd / k^2): grid + refined."""
    k = float(scale)

    def objective(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        tau = np.asarray(fn(q, qd / k, qdd / k**2), dtype=float)
        finite = np.isfinite(lim)
        if not np.any(finite):
            return np.zeros(q.shape[0])
        return -np.max(np.abs(tau[:, finite]) / lim[finite], axis=1)

    return -minimum(pieces, objective)


def states_crossing(fn: Dynamics, lim: np.ndarray, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                    names: list[str] | None = None) -> float:
    """Smallest crossing x of given states (e.g. the samples' own), chunked; ValueError for a static overload."""
    return _chunked_min(CrossingObjective(fn, lim, names), (q, qd, qdd))
