"""Closed-form inverse geometric model (IGM): the equation types of 002 Appendix 1 and the wrist-partitioned IGM
of six-joint arms whose last three revolute axes intersect (Pieper's class, solved by Paul's method).

Equation types (002 Appendix 1, "Table 4.1"; the IGM chapter itself is absent from the seed, errata 41)::

    type 1  X r = Y                                                       (prismatic joint)
    type 2  X Sθ + Y Cθ = Z                                               [A1.1]-[A1.10]
    type 3  X1 Sθ + Y1 Cθ = Z1,   X2 Sθ + Y2 Cθ = Z2                      [A1.11]-[A1.16]
    type 4  X1 r Sθ = Y1,   X2 r Cθ = Y2                                  [A1.17]-[A1.18]
    type 5  X1 Sθ = Y1 + Z1 r,   X2 Cθ = Y2 + Z2 r                        [A1.19]-[A1.21]
    type 6  W Sθj = X Cθi + Y Sθi + Z1,   W Cθj = X Sθi − Y Cθi + Z2      [A1.22]-[A1.23]
    type 7  W1 Cθj + W2 Sθj = X Cθi + Y Sθi + Z1,
            W1 Sθj − W2 Cθj = X Sθi − Y Cθi + Z2                          [A1.24]-[A1.25]
    type 8  X Cθi + Y C(θi + θj) = Z1,   X Sθi + Y S(θi + θj) = Z2        [A1.26]-[A1.30]

Each ``solve_typeN`` returns *all* real solutions as a list (empty when there is none): angles in [−π, π],
``(θ, r)`` pairs for types 4-5, ``(θi, θj)`` pairs for types 6-8.  Tolerance: with s = max(1, largest |coefficient|),
a length-like quantity (a coefficient, √(X² + Y²), |Z| − √(X² + Y²), a residual) is zero when its magnitude is
≤ ``tol``·s, a determinant when it is ≤ ``tol`` times the product of the norms of its rows.  Degenerate cases:

* an equation that vanishes identically (type 1: X = Y = 0; type 2: X = Y = Z = 0; type 3: both equations):
  every θ (r) solves it; the list holds one representative, ``default``;
* a tangent type 2 (|Z| = √(X² + Y²), a double root, e.g. the arm stretched out): one solution;
* a type 3 whose two equations are dependent (X1Y2 − X2Y1 = 0): one equation is solved as a type 2 and the
  solutions that satisfy the other are kept ([A1.14] note);
* coefficients outside a type's definition (type 4-5: X1 X2 = 0, type 5: Z1 = Z2 = 0, type 6: W = 0,
  type 7: W1 = W2 = 0, type 8: X Y = 0; an unknown then no longer appears): ValueError.

IGM (:func:`analytic_inverse_geometry`): joints 4, 5, 6 revolute with d5 = r5 = d6 = 0 and sin α5, sin α6 ≠ 0
(their axes meet at O4 = O5, the wrist centre); joints 1, 2 revolute, joint 3 revolute or prismatic.  The wrist
centre ^0P_4 = ^0P_6 − r6 ^0a_6 depends on q1, q2, q3 only; writing ^0P_4 = Rot(z, θ1) Rot(x, α2) Trans(x, d2)
Rot(z, θ2) g(q3) (the constant part of row 1 moved to the left), with g = ^2P_4 without the rotation θ2, the
positioning equations are decoupled by one of three invariants:

* route "z2" (sin α2 ≠ 0 and z2 ∥ z3 for a revolute joint 3, z2 ⊥ z3 for a prismatic one, so that g_z, the
  coordinate of O4 along z2, is a constant): the component of ^1P_4 along z2 gives a type 2 in θ1; then
  g_x² + g_y² gives a type 2 in θ3 (solved in the half-angle form of [A1.9], accurate at both ends of its range)
  or a quadratic in r3 (a type 4 when g_x = 0: the Stanford arm), then θ2 by a type 3.  This is the book's route
  for the RX-90, and the route of PUMA- or KUKA-like shoulders (d2 ≠ 0).
* route "norm" (d2 = 0): ‖^0P_4‖² = ‖g‖² gives θ3 (type 2) or r3 (quadratic), then the z coordinate of ^0P_4
  gives θ2 (type 2), then θ1 (type 3).
* route "z1" (z1 ∥ z2, d2 ≠ 0): the z coordinate gives θ3 (type 2) or r3 (type 1), the norm θ2 (type 2), then θ1
  (type 3).

The wrist: with M = Rot(x, α4)ᵀ ^3R_6 = Rot(z, θ4) Rot(x, α5) Rot(z, θ5) Rot(x, α6) Rot(z, θ6), the third column
gives θ4 and θ5 (an orthogonal wrist, Cα5 = Cα6 = 0: a type 4 in (θ4, S5) and C5 from M33, as the book solves the
RX-90; otherwise θ5 from M33, a type 2 with X = 0, then θ4 by a type 3), and Paul's pre-multiplication by
(^3R_5)ᵀ leaves Rot(x, α6) Rot(z, θ6), whose first row gives θ6 ([A1.15]-[A1.16]).  Generic count:
2 (θ1) x 2 (q3) x 2 (θ5) = 8 (fewer when a branch is out of reach).
At a singular configuration the joint left free (θ1 with O4 on z1, θ2 with O4 on z2, θ4 with z4 ∥ z6) takes its
value in ``q_ref`` (default: 0 clipped to the limits), so the configurations of a family are represented by one.
Any other arm: ValueError (use the numeric IGM, :func:`robot_dynamics.kinematics.redundancy.inverse_kinematics`).
The MDH values found are turned into URDF joint values by q = sign (θ − θ_offset) (r for a prismatic joint; see
:mod:`robot_dynamics.model.robot_model`) and every solution is checked by the DGM.

Numerics near singular configurations: a double root is declared only at the rounding level of the coefficients
(two roots closer than 1e-7 are then merged), the free joints are snapped at ``tol``; the joint values there are
ill-conditioned (a pose error ε moves them by ε / distance to the singularity) but every returned solution
reproduces the pose to ``tolerance``.  The routes "norm" and "z1" and a non-orthogonal wrist use [A1.9] as printed:
within about √(round-off) of a singular configuration where a squared equation reaches its minimum 0, a solution
may be missed there (the numeric IGM remains).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.mdh import PRISMATIC, REVOLUTE, mdh_transform
from .geometric_model import _check_target, _link

if TYPE_CHECKING:
    from ..model.data import RobotData

TOL = 1e-10
"""Default tolerance of the equation solvers (see the module docstring)."""

TWO_PI = 2.0 * math.pi


def _scale(*coefficients: float) -> float:
    return max(1.0, *(abs(c) for c in coefficients))


def _finite(*values: float) -> None:
    if not math.isfinite(sum(values)):  # an inf or NaN makes the sum inf or NaN
        for v in values:
            if not math.isfinite(v):
                raise ValueError("equation coefficients must be finite")


# ------------------------------------------------------------------------------------------ equation types
def solve_type1(X: float, Y: float, *, tol: float = TOL, default: float = 0.0) -> list[float]:
    """Type 1, X r = Y (prismatic joint): r = Y/X.  X = Y = 0: every r, ``[default]``; X = 0 ≠ Y: none."""
    X, Y = float(X), float(Y)
    _finite(X, Y)
    s = _scale(X, Y)
    if abs(X) > tol * s:
        return [Y / X]
    return [float(default)] if abs(Y) <= tol * s else []


def solve_type2(X: float, Y: float, Z: float, *, tol: float = TOL, default: float = 0.0,
                tangent_tol: float | None = None) -> list[float]:
    """Type 2, X Sθ + Y Cθ = Z (002 [A1.1]-[A1.10]).

    Sθ = (XZ + εY√(X² + Y² − Z²))/(X² + Y²), Cθ = (YZ − εX√(X² + Y² − Z²))/(X² + Y²), ε = ±1 [A1.9],
    θ = atan2(Sθ, Cθ) [A1.10]; the cases X = 0 [A1.2]-[A1.3], Y = 0 [A1.4]-[A1.5] and Z = 0 [A1.6] are particular
    cases of [A1.9].  Two solutions when Z² < X² + Y², one when Z² = X² + Y² (|Z| − √(X² + Y²) within
    −``tol``·s and ``tangent_tol``·s, default ``tol``), none beyond; X = Y = 0 (a singular configuration, [A1.6]
    note): none, or ``[default]`` when Z = 0 too."""
    X, Y, Z = float(X), float(Y), float(Z)
    _finite(X, Y, Z)
    s = max(1.0, abs(X), abs(Y), abs(Z))
    r = math.hypot(X, Y)
    if r <= tol * s:
        return [float(default)] if abs(Z) <= tol * s else []
    gap = r - abs(Z)
    if gap < -tol * s:
        return []
    if gap <= (tol if tangent_tol is None else tangent_tol) * s:  # the double root Sθ = XZ/r², Cθ = YZ/r², |Z| = r
        e = 1.0 if Z >= 0.0 else -1.0
        return [math.atan2(e * X, e * Y)]
    root = math.sqrt(gap * (r + abs(Z)))  # √(X² + Y² − Z²)
    r2 = r * r
    return [math.atan2((X * Z + e * Y * root) / r2, (Y * Z - e * X * root) / r2) for e in (1.0, -1.0)]


def _residual3(X1: float, Y1: float, Z1: float, X2: float, Y2: float, Z2: float, t: float) -> float:
    st, ct = math.sin(t), math.cos(t)
    return max(abs(X1 * st + Y1 * ct - Z1), abs(X2 * st + Y2 * ct - Z2))


def solve_type3(
    X1: float, Y1: float, Z1: float, X2: float, Y2: float, Z2: float, *, tol: float = TOL, default: float = 0.0,
    residual_tol: float | None = None,
) -> list[float]:
    """Type 3, X1 Sθ + Y1 Cθ = Z1 and X2 Sθ + Y2 Cθ = Z2 (002 [A1.11]-[A1.16]).

    Sθ = (Z1Y2 − Z2Y1)/(X1Y2 − X2Y1) [A1.12], Cθ = (Z2X1 − Z1X2)/(X1Y2 − X2Y1) [A1.13], θ = atan2(Sθ, Cθ)
    [A1.14] (Y1 = X2 = 0: θ = atan2(Z1/X1, Z2/Y2) [A1.15]-[A1.16]): one solution, or none when the two equations
    are inconsistent (residual above ``residual_tol``·s, default ``tol``·s).  Dependent equations (X1Y2 − X2Y1 = 0):
    the one with the larger (X, Y) is solved as a type 2 and its solutions that satisfy the other are kept; both
    equations void: none, or ``[default]`` when Z1 = Z2 = 0."""
    X1, Y1, Z1, X2, Y2, Z2 = float(X1), float(Y1), float(Z1), float(X2), float(Y2), float(Z2)
    _finite(X1, Y1, Z1, X2, Y2, Z2)
    s = max(1.0, abs(X1), abs(Y1), abs(Z1), abs(X2), abs(Y2), abs(Z2))
    n1, n2 = math.hypot(X1, Y1), math.hypot(X2, Y2)
    det = X1 * Y2 - X2 * Y1
    if n1 <= tol * s and n2 <= tol * s:
        return [float(default)] if max(abs(Z1), abs(Z2)) <= tol * s else []
    res = (tol if residual_tol is None else residual_tol) * s
    if abs(det) > tol * n1 * n2:
        t = math.atan2((Z1 * Y2 - Z2 * Y1) / det, (Z2 * X1 - Z1 * X2) / det)
        return [t] if _residual3(X1, Y1, Z1, X2, Y2, Z2, t) <= res else []
    first = solve_type2(X1, Y1, Z1, tol=tol, default=default) if n1 >= n2 else solve_type2(X2, Y2, Z2, tol=tol,
                                                                                           default=default)
    return [t for t in first if _residual3(X1, Y1, Z1, X2, Y2, Z2, t) <= res]


def solve_type4(X1: float, Y1: float, X2: float, Y2: float, *, tol: float = TOL,
                default: float = 0.0) -> list[tuple[float, float]]:
    """Type 4, X1 r Sθ = Y1 and X2 r Cθ = Y2 (002 [A1.17]-[A1.18]): (θ, r) pairs.

    r = ±√((Y1/X1)² + (Y2/X2)²), θ = atan2(Y1/(X1 r), Y2/(X2 r)) [A1.18]: two solutions (r, θ) and (−r, θ + π);
    r = 0 (Y1 = Y2 = 0): θ is free, ``[(default, 0.0)]``.  X1 = 0 or X2 = 0: ValueError (not a type 4)."""
    X1, Y1, X2, Y2 = float(X1), float(Y1), float(X2), float(Y2)
    _finite(X1, Y1, X2, Y2)
    s = _scale(X1, Y1, X2, Y2)
    if abs(X1) <= tol * s or abs(X2) <= tol * s:
        raise ValueError("type 4 needs X1 != 0 and X2 != 0 (otherwise r and θ do not both appear)")
    a, b = Y1 / X1, Y2 / X2
    r = math.hypot(a, b)
    if r <= tol * s:
        return [(float(default), 0.0)]
    return [(math.atan2(a, b), r), (math.atan2(-a, -b), -r)]


def solve_type5(X1: float, Y1: float, Z1: float, X2: float, Y2: float, Z2: float, *, tol: float = TOL
                ) -> list[tuple[float, float]]:
    """Type 5, X1 Sθ = Y1 + Z1 r and X2 Cθ = Y2 + Z2 r (002 [A1.19]-[A1.21]): (θ, r) pairs.

    Normalized to Sθ = V1 + W1 r, Cθ = V2 + W2 r [A1.20]; squaring and adding gives
    (W1² + W2²) r² + 2(V1W1 + V2W2) r + V1² + V2² − 1 = 0, real when W1² + W2² − (V1W2 − V2W1)² ≥ 0 [A1.21];
    then θ = atan2(V1 + W1 r, V2 + W2 r) (a type 3, [A1.16]).  Two solutions, one (tangent) or none.
    X1 X2 = 0 or Z1 = Z2 = 0: ValueError (not a type 5)."""
    X1, Y1, Z1, X2, Y2, Z2 = (float(v) for v in (X1, Y1, Z1, X2, Y2, Z2))
    _finite(X1, Y1, Z1, X2, Y2, Z2)
    s = _scale(X1, Y1, Z1, X2, Y2, Z2)
    if abs(X1) <= tol * s or abs(X2) <= tol * s:
        raise ValueError("type 5 needs X1 != 0 and X2 != 0")
    if math.hypot(Z1, Z2) <= tol * s:
        raise ValueError("type 5 needs Z1 != 0 or Z2 != 0 (otherwise r does not appear)")
    v1, w1, v2, w2 = Y1 / X1, Z1 / X1, Y2 / X2, Z2 / X2
    a = w1 * w1 + w2 * w2
    half_b = v1 * w1 + v2 * w2
    disc = a - (v1 * w2 - v2 * w1) ** 2  # [A1.21] = half_b² − a (V1² + V2² − 1)
    if disc < -tol * s * max(1.0, a):
        return []
    roots = [-half_b / a] if disc <= tol * s * max(1.0, a) else [(-half_b + e * math.sqrt(disc)) / a for e in (1, -1)]
    out = []
    for r in roots:
        t = math.atan2(v1 + w1 * r, v2 + w2 * r)
        if max(abs(X1 * math.sin(t) - Y1 - Z1 * r), abs(X2 * math.cos(t) - Y2 - Z2 * r)) <= tol * s:
            out.append((t, r))
    return out


def _type7(W1: float, W2: float, X: float, Y: float, Z1: float, Z2: float, tol: float,
           default: float) -> list[tuple[float, float]]:
    s = _scale(W1, W2, X, Y, Z1, Z2)
    n2 = W1 * W1 + W2 * W2
    b1, b2 = 2.0 * (Z1 * Y + Z2 * X), 2.0 * (Z1 * X - Z2 * Y)  # [A1.23]
    b3 = n2 - X * X - Y * Y - Z1 * Z1 - Z2 * Z2  # [A1.23] (W² − ...), [A1.25] (W1² + W2² − ...)
    out = []
    for ti in solve_type2(b1, b2, b3, tol=tol, default=default):
        ci, si = math.cos(ti), math.sin(ti)
        r1, r2 = X * ci + Y * si + Z1, X * si - Y * ci + Z2
        tj = math.atan2((r1 * W2 + r2 * W1) / n2, (r1 * W1 - r2 * W2) / n2)  # the type 3 in θj
        cj, sj = math.cos(tj), math.sin(tj)
        if max(abs(W1 * cj + W2 * sj - r1), abs(W1 * sj - W2 * cj - r2)) <= tol * s:
            out.append((ti, tj))
    return out


def solve_type6(W: float, X: float, Y: float, Z1: float, Z2: float, *, tol: float = TOL,
                default: float = 0.0) -> list[tuple[float, float]]:
    """Type 6, W Sθj = X Cθi + Y Sθi + Z1 and W Cθj = X Sθi − Y Cθi + Z2 (002 [A1.22]-[A1.23]): (θi, θj) pairs.

    Squaring and adding gives the type 2 *in θi* (errata 46) B1 Sθi + B2 Cθi = B3 with B1 = 2(Z1Y + Z2X),
    B2 = 2(Z1X − Z2Y), B3 = W² − X² − Y² − Z1² − Z2² [A1.23]; then θj = atan2(Sθj, Cθj) from the two equations
    (a type 3).  Z1 = Z2 = 0 and W² = X² + Y²: θi free, ``default``.  W = 0: ValueError (θj does not appear)."""
    W, X, Y, Z1, Z2 = (float(v) for v in (W, X, Y, Z1, Z2))
    _finite(W, X, Y, Z1, Z2)
    if abs(W) <= tol * _scale(W, X, Y, Z1, Z2):
        raise ValueError("type 6 needs W != 0 (otherwise θj does not appear)")
    s = _scale(W, X, Y, Z1, Z2)
    b1, b2 = 2.0 * (Z1 * Y + Z2 * X), 2.0 * (Z1 * X - Z2 * Y)
    b3 = W * W - X * X - Y * Y - Z1 * Z1 - Z2 * Z2
    out = []
    for ti in solve_type2(b1, b2, b3, tol=tol, default=default):
        ci, si = math.cos(ti), math.sin(ti)
        r1, r2 = X * ci + Y * si + Z1, X * si - Y * ci + Z2
        tj = math.atan2(r1 / W, r2 / W)  # [A1.15]-[A1.16]
        if max(abs(W * math.sin(tj) - r1), abs(W * math.cos(tj) - r2)) <= tol * s:
            out.append((ti, tj))
    return out


def solve_type7(W1: float, W2: float, X: float, Y: float, Z1: float, Z2: float, *, tol: float = TOL,
                default: float = 0.0) -> list[tuple[float, float]]:
    """Type 7, W1 Cθj + W2 Sθj = X Cθi + Y Sθi + Z1 and W1 Sθj − W2 Cθj = X Sθi − Y Cθi + Z2 (002 [A1.24]-[A1.25]):
    (θi, θj) pairs.

    Squaring and adding gives B1 Sθi + B2 Cθi = B3, B1, B2 as in type 6 and B3 = W1² + W2² − X² − Y² − Z1² − Z2²
    [A1.25]; then θj from the type 3 Sθj = (R1W2 + R2W1)/(W1² + W2²), Cθj = (R1W1 − R2W2)/(W1² + W2²), R1, R2 the
    right-hand sides.  W1 = W2 = 0: ValueError (θj does not appear)."""
    W1, W2, X, Y, Z1, Z2 = (float(v) for v in (W1, W2, X, Y, Z1, Z2))
    _finite(W1, W2, X, Y, Z1, Z2)
    if math.hypot(W1, W2) <= tol * _scale(W1, W2, X, Y, Z1, Z2):
        raise ValueError("type 7 needs W1 != 0 or W2 != 0 (otherwise θj does not appear)")
    return _type7(W1, W2, X, Y, Z1, Z2, tol, default)


def solve_type8(X: float, Y: float, Z1: float, Z2: float, *, tol: float = TOL,
                default: float = 0.0) -> list[tuple[float, float]]:
    """Type 8, X Cθi + Y C(θi + θj) = Z1 and X Sθi + Y S(θi + θj) = Z2 (002 [A1.26]-[A1.30]): (θi, θj) pairs.

    Cθj = (Z1² + Z2² − X² − Y²)/(2XY) [A1.27], θj = atan2(±√(1 − Cθj²), Cθj) [A1.28] (the type 2
    2XY Cθj = Z1² + Z2² − X² − Y²); then with B1 = X + Y Cθj, B2 = Y Sθj: Sθi = (B1Z2 − B2Z1)/(B1² + B2²),
    Cθi = (B1Z1 + B2Z2)/(B1² + B2²) [A1.29], θi = atan2(Sθi, Cθi) [A1.30].  B1 = B2 = 0 (|X| = |Y|, folded,
    Z1 = Z2 = 0): θi free, ``default``.  X Y = 0: ValueError (not a type 8)."""
    X, Y, Z1, Z2 = (float(v) for v in (X, Y, Z1, Z2))
    _finite(X, Y, Z1, Z2)
    s = _scale(X, Y, Z1, Z2)
    if abs(X) <= tol * s or abs(Y) <= tol * s:
        raise ValueError("type 8 needs X != 0 and Y != 0")
    out = []
    for tj in solve_type2(0.0, 2.0 * X * Y, Z1 * Z1 + Z2 * Z2 - X * X - Y * Y, tol=tol):
        b1, b2 = X + Y * math.cos(tj), Y * math.sin(tj)
        n = b1 * b1 + b2 * b2
        ti = float(default) if math.sqrt(n) <= tol * s else math.atan2((b1 * Z2 - b2 * Z1) / n, (b1 * Z1 + b2 * Z2) / n)
        res = max(abs(X * math.cos(ti) + Y * math.cos(ti + tj) - Z1),
                  abs(X * math.sin(ti) + Y * math.sin(ti + tj) - Z2))
        if res <= tol * s:
            out.append((ti, tj))
    return out


# ----------------------------------------------------------------------------------- wrist-partitioned IGM
_ZERO = 1e-12  # a geometric parameter (m, or the sine/cosine of an MDH angle) within this of 0 is 0
_RESIDUAL = 1e-7  # consistency of the follow-up type 3 systems of the IGM (the DGM check of every solution is final)
# A double root of the IGM's type 2 equations only at the rounding level of their coefficients: a wider band would
# snap near-singular roots, and where the squared equation's minimum is 0 (the RX-90 folds its wrist centre onto O2,
# D3 = RL4) the snapped root misses the pose by the square root of the band.
_TANGENT = 1e-15
_DUPLICATE = 1e-7  # solutions closer than this (rad, m) are one (two roots of a near-double root)


@dataclass(frozen=True)
class _Arm:
    """The constants of a wrist-partitioned arm (see the module docstring)."""

    route: str  # "z2", "norm" or "z1"
    prismatic3: bool
    alpha: tuple[float, ...]
    ca: tuple[float, ...]
    sa: tuple[float, ...]
    d: tuple[float, ...]
    r: tuple[float, ...]  # MDH r (joint 3 prismatic: its offset)
    theta3: float  # MDH theta of a prismatic joint 3
    h: tuple[float, float, float]  # ^3P_4 moved by Trans(z, r3): (d4, −r4 Sα4, r4 Cα4 [+ r3 when revolute])
    r6: float
    pre_inv: np.ndarray  # (Rot(z, γ1) Trans(z, b1) Rot(x, α1) Trans(x, d1) Trans(z, r1))⁻¹ (q1 revolute)
    base_inv: np.ndarray
    link_inv: np.ndarray  # (^6T_link)⁻¹


def _arm(model: RobotData, link: str | None) -> _Arm:
    """Recognise a wrist-partitioned arm solvable by the equation types; ValueError saying why not."""
    j, t_link = _link(model, link)
    name = link or model.tip_link
    if model.dof != 6:
        raise ValueError(f"no closed-form IGM: the arm has {model.dof} joints, the analytic IGM handles 6")
    if j != 6:
        raise ValueError(f"no closed-form IGM for link {name!r}: it is attached to frame {j}, not to the last frame 6")
    if model.is_tree or np.any(model.gamma[1:] != 0.0) or np.any(model.b[1:] != 0.0):
        raise ValueError("no closed-form IGM: the analytic IGM handles serial chains (no gamma, b after joint 1)")
    sig = model.sigma
    if sig[0] != REVOLUTE or sig[1] != REVOLUTE or np.any(sig[3:] != REVOLUTE):
        raise ValueError("no closed-form IGM: joints 1, 2, 4, 5, 6 must be revolute (joint 3 revolute or prismatic)")
    al, d, r = model.alpha, model.d, model.r
    ca = tuple(math.cos(a) for a in al)
    sa = tuple(math.sin(a) for a in al)
    if abs(d[4]) > _ZERO or abs(r[4]) > _ZERO or abs(d[5]) > _ZERO:
        raise ValueError("no closed-form IGM: the last three joint axes do not intersect (needs d5 = r5 = d6 = 0)")
    if abs(sa[4]) <= _ZERO or abs(sa[5]) <= _ZERO:
        raise ValueError("no closed-form IGM: consecutive wrist axes are collinear (sin alpha5 or sin alpha6 = 0)")
    p3 = bool(sig[2] == PRISMATIC)
    h1, h2 = d[3], -r[3] * sa[3]
    h3 = r[3] * ca[3] + (0.0 if p3 else r[2])
    small = lambda x: abs(x) <= _ZERO  # noqa: E731
    if not p3 and small(h1) and small(h2):
        raise ValueError("degenerate arm: the wrist centre is on axis 3, joint 3 does not move it")
    if not p3 and small(d[2]) and small(sa[2]):
        raise ValueError("degenerate arm: axes 2 and 3 are collinear")
    route = ""
    if not small(sa[1]) and (small(ca[2]) if p3 else small(sa[2])):
        route = "z2"
    elif small(d[1]) and not small(sa[1]):
        route = "norm"
    elif small(sa[1]) and not small(d[1]) and (not small(ca[2]) if p3 else not small(sa[2])):
        route = "z1"
    if route == "norm" and not p3 and math.hypot(d[2] * h2 - r[1] * sa[2] * h1, d[2] * h1 + r[1] * sa[2] * h2) <= _ZERO:
        raise ValueError("degenerate arm: the distance of the wrist centre to O1 does not depend on joint 3")
    if not route:
        raise ValueError(
            "no closed-form IGM by the equation types of 002 Appendix 1: the position of the wrist centre gives no "
            "equation in a single joint (needs z2 parallel to z3 [prismatic joint 3: perpendicular], d2 = 0, or "
            "z1 parallel to z2 with d2 != 0); use the numeric IGM (model.inverse_kinematics)")
    pre = mdh_transform(al[0], d[0], 0.0, r[0], model.gamma[0], model.b[0])
    return _Arm(route, p3, tuple(float(a) for a in al), ca, sa, tuple(float(x) for x in d),
                tuple(float(x) for x in r), float(model.theta[2]),
                (float(h1), float(h2), float(h3)), float(r[5]), np.linalg.inv(pre), np.linalg.inv(model.base_transform),
                np.linalg.inv(t_link))


def supports_analytic_inverse_geometry(model: Any, link: str | None = None) -> bool:
    """True when :func:`analytic_inverse_geometry` can solve ``link`` (default the tip) of ``model``."""
    try:
        _arm(model, link)
    except (ValueError, AttributeError, KeyError, TypeError):
        return False
    return True


def _g(arm: _Arm, q3: float) -> tuple[float, float, float]:
    """g(q3) = Trans(z, r2) Rot(x, α3) Trans(x, d3) Rot(z, θ3) Trans(z, r3) ^3P_4 (see the module docstring)."""
    h1, h2, h3 = arm.h
    if arm.prismatic3:
        t3, h3 = arm.theta3, h3 + q3
    else:
        t3 = q3
    c3, s3 = math.cos(t3), math.sin(t3)
    ux, uy, uz = c3 * h1 - s3 * h2 + arm.d[2], s3 * h1 + c3 * h2, h3
    return ux, arm.ca[2] * uy - arm.sa[2] * uz, arm.sa[2] * uy + arm.ca[2] * uz + arm.r[1]


def _roots(a: float, b: float, c: float, tol: float) -> list[float]:
    """Real roots h3 of a h3² + b h3 + c = 0 (a > 0); none below −``tol``, a double root up to the rounding level."""
    s = _scale(a, b, c)
    half = 0.5 * b
    disc = half * half - a * c
    if disc < -tol * s * s:
        return []
    if disc <= _TANGENT * s * s:
        return [-half / a]
    root = math.sqrt(disc)
    return [(-half + root) / a, (-half - root) / a]


def _type2_half_angle(X: float, Y: float, low: float, high: float, low_scale: float, high_scale: float,
                      tol: float) -> list[float]:
    """The type 2 X Sθ + Y Cθ = Z (X² + Y² > 0) given low = Z + √(X² + Y²) and high = √(X² + Y²) − Z, each the
    difference of two terms of magnitude ``low_scale``, ``high_scale``: θ = φ ± 2 atan2(√high, √low),
    φ = atan2(X, Y), the half-angle form of [A1.9] (same solutions; accurate also when Z is near ±√(X² + Y²)).
    None when low or high < −``tol``·s, one (double root) when either is at the rounding level of its terms (a
    difference with a zero term, e.g. the RX-90 folding its wrist centre onto O2, is never rounded to 0)."""
    s = max(1.0, abs(X), abs(Y), abs(low), abs(high))
    if low < -tol * s or high < -tol * s:
        return []
    phi = math.atan2(X, Y)
    if high <= _TANGENT * high_scale:
        return [phi]
    if low <= _TANGENT * low_scale:
        return [float(_wrap(phi + math.pi))]
    psi = 2.0 * math.atan2(math.sqrt(high), math.sqrt(low))
    return [float(_wrap(phi + psi)), float(_wrap(phi - psi))]


def _positions(arm: _Arm, p: np.ndarray, defaults: np.ndarray, tol: float) -> list[tuple[float, float, float]]:
    """(θ1, θ2, q3) (MDH values) placing the wrist centre at ``p`` (in the frame of row 1's constant part)."""
    px, py, pz = (float(v) for v in p)
    ca, sa, d, r = arm.ca, arm.sa, arm.d, arm.r
    h1, h2, h3 = arm.h
    out = []

    def type2(X: float, Y: float, Z: float, default: float) -> list[float]:
        return solve_type2(X, Y, Z, tol=tol, tangent_tol=_TANGENT, default=default)

    def q3_from_h3(x: float) -> float:  # a prismatic joint 3: h3 = r3 + r4 Cα4
        return x - h3

    def frame1(t1: float) -> tuple[float, float, float]:
        c1, s1 = math.cos(t1), math.sin(t1)
        return c1 * px + s1 * py, -s1 * px + c1 * py, pz  # ^1P_4 = Rot(z, −θ1) P

    def theta1(t2: float, q3: float) -> list[float]:  # Rot(z, θ1) ^1P_4 = P (x and y rows): type 3
        g = _g(arm, q3)
        c2, s2 = math.cos(t2), math.sin(t2)
        vx, vy, vz = c2 * g[0] - s2 * g[1] + d[1], s2 * g[0] + c2 * g[1], g[2]
        qx, qy = vx, ca[1] * vy - sa[1] * vz
        return solve_type3(-qy, qx, px, qx, qy, py, tol=tol, default=defaults[0], residual_tol=_RESIDUAL)

    if arm.route == "z2":
        g3 = _g(arm, 0.0 if arm.prismatic3 else defaults[2])[2]  # constant on this route
        for t1 in type2(sa[1] * px, -sa[1] * py, g3 - ca[1] * pz, defaults[0]):
            qx, qy, qz = frame1(t1)
            wx, wy = qx - d[1], ca[1] * qy + sa[1] * qz  # Rot(x, −α2) ^1P_4 − (d2, 0, 0) = Rot(z, θ2) g
            rho = wx * wx + wy * wy
            if arm.prismatic3:  # g = (gx, −Sα3 h3, g3): g_x² + h3² = ρ
                gx = _g(arm, 0.0)[0]
                if abs(gx) <= _ZERO:  # type 4: wx = Sα3 h3 Sθ2, wy = −Sα3 h3 Cθ2
                    for t2, hh in solve_type4(sa[2], wx, -sa[2], wy, tol=tol, default=defaults[1]):
                        out.append((t1, t2, q3_from_h3(hh)))
                    continue
                q3s = [q3_from_h3(x) for x in _roots(1.0, 0.0, gx * gx - rho, tol)]
            else:  # g_x² + g_y² = (d3 + C3h1 − S3h2)² + (S3h1 + C3h2)²: type 2 in θ3, from (‖h_xy‖ ∓ |d3|)² ≤ ρ
                lo2, hi2 = (math.hypot(h1, h2) - abs(d[2])) ** 2, (math.hypot(h1, h2) + abs(d[2])) ** 2
                q3s = _type2_half_angle(-2.0 * d[2] * h2, 2.0 * d[2] * h1, rho - lo2, hi2 - rho, max(rho, lo2),
                                        max(rho, hi2), tol)
            for q3 in q3s:
                gx, gy, _ = _g(arm, q3)  # wx = C2 gx − S2 gy, wy = S2 gx + C2 gy: type 3 in θ2
                for t2 in solve_type3(-gy, gx, wx, gx, gy, wy, tol=tol, default=defaults[1], residual_tol=_RESIDUAL):
                    out.append((t1, t2, q3))
        return out

    n2 = px * px + py * py + pz * pz
    if arm.route == "norm":  # d2 = 0: ‖P‖² = ‖g‖²
        if arm.prismatic3:
            c3, s3 = math.cos(arm.theta3), math.sin(arm.theta3)
            uy = s3 * h1 + c3 * h2
            k = h1 * h1 + h2 * h2 + d[2] ** 2 + 2.0 * d[2] * (c3 * h1 - s3 * h2) + r[1] ** 2 + 2.0 * r[1] * sa[2] * uy
            q3s = [q3_from_h3(x) for x in _roots(1.0, 2.0 * r[1] * ca[2], k - n2, tol)]
        else:
            const = h1 * h1 + h2 * h2 + h3 * h3 + d[2] ** 2 + r[1] ** 2 + 2.0 * r[1] * ca[2] * h3
            q3s = type2(-2.0 * d[2] * h2 + 2.0 * r[1] * sa[2] * h1, 2.0 * d[2] * h1 + 2.0 * r[1] * sa[2] * h2,
                        n2 - const, defaults[2])
        for q3 in q3s:
            gx, gy, gz = _g(arm, q3)  # Pz = Sα2 (S2 gx + C2 gy) + Cα2 gz: type 2 in θ2
            for t2 in type2(sa[1] * gx, sa[1] * gy, pz - ca[1] * gz, defaults[1]):
                out.extend((t1, t2, q3) for t1 in theta1(t2, q3))
        return out

    # route "z1": z1 ∥ z2, Pz = Cα2 g_z(q3)
    if arm.prismatic3:
        c3, s3 = math.cos(arm.theta3), math.sin(arm.theta3)
        uy = s3 * h1 + c3 * h2
        q3s = [q3_from_h3(x) for x in solve_type1(ca[2], ca[1] * pz - r[1] - sa[2] * uy, tol=tol,
                                                   default=defaults[2] + h3)]
    else:
        q3s = type2(sa[2] * h1, sa[2] * h2, ca[1] * pz - r[1] - ca[2] * h3, defaults[2])
    for q3 in q3s:
        gx, gy, gz = _g(arm, q3)  # ‖P‖² = ‖g‖² + d2² + 2 d2 (C2 gx − S2 gy): type 2 in θ2
        for t2 in type2(-2.0 * d[1] * gy, 2.0 * d[1] * gx, n2 - gx * gx - gy * gy - gz * gz - d[1] ** 2, defaults[1]):
            out.extend((t1, t2, q3) for t1 in theta1(t2, q3))
    return out


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _wrist(arm: _Arm, m: np.ndarray, defaults: np.ndarray, tol: float) -> list[tuple[float, float, float]]:
    """(θ4, θ5, θ6) with Rot(z, θ4) Rot(x, α5) Rot(z, θ5) Rot(x, α6) Rot(z, θ6) = ``m`` (= Rot(x, α4)ᵀ ^3R_6).

    The third column: M a = Rot(z, θ4) v, v = (Sα6 S5, −Cα5 Sα6 C5 − Sα5 Cα6, −Sα5 Sα6 C5 + Cα5 Cα6).  Orthogonal
    wrist (Cα5 = Cα6 = 0, the RX-90's): Sα6 S5 S4 = M23, Sα6 S5 C4 = M13 is a type 4 in (θ4, r = S5) and
    C5 = −M33/(Sα5 Sα6), which stays well conditioned at the singularity S5 = 0 (θ4 free).  Otherwise M33 gives
    θ5 (type 2 with X = 0; a double root at S5 = 0) and the first two rows θ4 (type 3)."""
    ca5, sa5, ca6, sa6 = arm.ca[4], arm.sa[4], arm.ca[5], arm.sa[5]
    pairs: list[tuple[float, float]] = []
    if abs(ca5) <= _ZERO and abs(ca6) <= _ZERO:
        c5 = -float(m[2, 2]) / (sa5 * sa6)
        for t4, s5 in solve_type4(sa6, float(m[1, 2]), sa6, float(m[0, 2]), tol=tol, default=defaults[3]):
            pairs.append((t4, math.atan2(s5, c5)))
    else:
        for t5 in solve_type2(0.0, -sa5 * sa6, float(m[2, 2]) - ca5 * ca6, tol=tol, tangent_tol=_TANGENT,
                              default=defaults[4]):
            c5, s5 = math.cos(t5), math.sin(t5)
            v1, v2 = sa6 * s5, -ca5 * sa6 * c5 - sa5 * ca6
            pairs.extend((t4, t5) for t4 in solve_type3(-v2, v1, float(m[0, 2]), v1, v2, float(m[1, 2]), tol=tol,
                                                         default=defaults[3], residual_tol=_RESIDUAL))
    out = []
    for t4, t5 in pairs:
        # Paul: (Rot(z, θ4) Rot(x, α5) Rot(z, θ5))ᵀ M = Rot(x, α6) Rot(z, θ6), whose first row is (C6, −S6, 0);
        # the first column of Rot(z, θ4) Rot(x, α5) Rot(z, θ5) is (C4C5 − S4Cα5S5, S4C5 + C4Cα5S5, Sα5S5)
        c4, s4, c5, s5 = math.cos(t4), math.sin(t4), math.cos(t5), math.sin(t5)
        col = (c4 * c5 - s4 * ca5 * s5, s4 * c5 + c4 * ca5 * s5, sa5 * s5)
        row0 = col[0] * m[0, 0] + col[1] * m[1, 0] + col[2] * m[2, 0]
        row1 = col[0] * m[0, 1] + col[1] * m[1, 1] + col[2] * m[2, 1]
        for t6 in solve_type3(0.0, 1.0, float(row0), -1.0, 0.0, float(row1), tol=tol, default=defaults[5],
                              residual_tol=_RESIDUAL):
            out.append((t4, t5, t6))
    return out


def _mdh_solutions(arm: _Arm, t06: np.ndarray, defaults: np.ndarray, tol: float) -> list[np.ndarray]:
    """All MDH joint vectors (θ1, θ2, θ3 or r3, θ4, θ5, θ6) giving ^0T_6 = ``t06`` (not deduplicated)."""
    pw = t06[:3, 3] - arm.r6 * t06[:3, 2]  # wrist centre O4 = O6 − r6 a6
    p = arm.pre_inv[:3, :3] @ pw + arm.pre_inv[:3, 3]
    a = arm.pre_inv[:3, :3] @ t06[:3, :3]  # Rot(z, θ1) ^1R_6
    rx2, rx3, rx4t = _rot_x(arm.alpha[1]), _rot_x(arm.alpha[2]), _rot_x(arm.alpha[3]).T
    out = []
    for t1, t2, q3 in _positions(arm, p, defaults, tol):
        r03 = _rot_z(t1) @ rx2 @ _rot_z(t2) @ rx3 @ _rot_z(arm.theta3 if arm.prismatic3 else q3)
        m = rx4t @ r03.T @ a  # Rot(x, α4)ᵀ ^3R_6
        for t4, t5, t6 in _wrist(arm, m, defaults, tol):
            out.append(np.array([t1, t2, q3, t4, t5, t6]))
    return out


def _to_urdf(model: RobotData, mdh: list[np.ndarray]) -> list[np.ndarray]:
    """MDH joint values -> URDF joint values (q = sign (θ − θ_offset), or with r), duplicates (mod 2π) removed."""
    offset = np.where(model.sigma == PRISMATIC, model.r, model.theta)
    revolute = model.sigma != PRISMATIC
    out: list[np.ndarray] = []
    for x in mdh:
        q = model.sign * (x - offset)
        if not any(np.abs(np.where(revolute, _wrap(q - o), q - o)).max() <= _DUPLICATE for o in out):
            out.append(q)
    return out


def _wrap(x: Any) -> Any:
    """Angles to [−π, π]."""
    return np.remainder(np.asarray(x) + math.pi, TWO_PI) - math.pi


def _pose_errors(model: RobotData, qs: np.ndarray, link: str | None, target: np.ndarray) -> np.ndarray:
    """max(position error (m), rotation angle (rad)) of each configuration of ``qs`` (N, n) against ``target``."""
    t = model.forward_kinematics(qs, link)
    dp = np.abs(t[:, :3, 3] - target[:3, 3]).max(axis=1)
    rel = np.einsum("ij,njk->nik", target[:3, :3].T, t[:, :3, :3])
    cos = np.clip(0.5 * (np.trace(rel, axis1=1, axis2=2) - 1.0), -1.0, 1.0)
    sin = 0.5 * np.linalg.norm(np.stack([rel[:, 2, 1] - rel[:, 1, 2], rel[:, 0, 2] - rel[:, 2, 0],
                                         rel[:, 1, 0] - rel[:, 0, 1]], axis=1), axis=1)
    return np.maximum(dp, np.arctan2(sin, cos))


def _turns(model: RobotData, q: np.ndarray, q_ref: np.ndarray | None, all_turns: bool) -> list[np.ndarray]:
    """``q`` with each revolute angle moved by 2πk into its joint range: the turn nearest ``q_ref`` (else nearest the
    middle of the range), every turn with ``all_turns``; a joint with no turn in range keeps the turn nearest it."""
    lim = model.limits
    lower, upper = lim["lower"], lim["upper"]
    eps = 1e-12
    choices: list[list[float]] = []
    for j in range(model.dof):
        v = float(q[j])
        if model.sigma[j] == PRISMATIC:
            choices.append([v])
            continue
        lo, hi = float(lower[j]), float(upper[j])
        mid = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else min(max(0.0, lo), hi)
        aim = float(q_ref[j]) if q_ref is not None else mid
        if not (math.isfinite(lo) and math.isfinite(hi)):
            best = v + TWO_PI * round((aim - v) / TWO_PI)
            if best < lo - eps or best > hi + eps:  # a half-infinite range: the turn nearest the finite limit
                edge = lo if best < lo else hi
                best = v + TWO_PI * (math.ceil((lo - eps - v) / TWO_PI) if edge == lo else
                                     math.floor((hi + eps - v) / TWO_PI))
            choices.append([best])
            continue
        k0, k1 = math.ceil((lo - eps - v) / TWO_PI), math.floor((hi + eps - v) / TWO_PI)
        inside = [v + TWO_PI * k for k in range(k0, k1 + 1)]
        if not inside:  # out of range whatever the turn: the turn nearest the range
            centre = min(max(aim, lo), hi)
            choices.append([v + TWO_PI * round((centre - v) / TWO_PI)])
        elif all_turns:
            choices.append(inside)
        else:
            choices.append([min(inside, key=lambda x: abs(x - aim))])
    return [np.array(c) for c in itertools.product(*choices)]


def _finish(model: RobotData, sols: list[np.ndarray], link: str | None, target: np.ndarray,
            q_ref: np.ndarray | None, within_limits: bool, all_turns: bool, tolerance: float) -> list[np.ndarray]:
    """Checked by the DGM, turned into the joint ranges, within-limit solutions first."""
    if not sols:
        return []
    err = _pose_errors(model, np.array(sols), link, target)
    sols = [q for q, e in zip(sols, err, strict=True) if e <= tolerance]
    lim = model.limits
    inside = []
    out = []
    for q in sols:
        for v in _turns(model, q, q_ref, all_turns):
            ok = bool(np.all(v >= lim["lower"] - 1e-12) and np.all(v <= lim["upper"] + 1e-12))
            if ok or not within_limits:
                out.append(v)
                inside.append(ok)
    order = sorted(range(len(out)), key=lambda i: (not inside[i], 0.0 if q_ref is None
                                                   else float(np.linalg.norm(out[i] - q_ref))))
    return [out[i] for i in order]


def _defaults(model: RobotData, q_ref: Any) -> tuple[np.ndarray | None, np.ndarray]:
    """(q_ref checked, MDH values of the joints left free at singular configurations)."""
    lim = model.limits
    if q_ref is None:
        return None, model.to_mdh(np.clip(0.0, lim["lower"], lim["upper"]))
    q = model.check_joint_vector(q_ref, "q_ref")
    if q.ndim != 1:
        raise ValueError("q_ref must be a single joint vector of shape (n,)")
    return q, model.to_mdh(q)


def analytic_inverse_geometry(
    model: RobotData,
    pose: Any,
    link: str | None = None,
    *,
    q_ref: Any = None,
    within_limits: bool = False,
    all_turns: bool = False,
    tolerance: float = 1e-9,
    tol: float = TOL,
) -> list[np.ndarray]:
    """Every joint configuration (URDF coordinates) placing ``link`` (default the tip) at ``pose`` (4x4 in
    ``base_link``), by the closed-form wrist-partitioned IGM (module docstring; 8 for a generic pose, [] when the
    pose is out of reach).

    Each solution is checked by the DGM (position and rotation errors ≤ ``tolerance``, m and rad; a solution
    failing it is dropped) and each revolute angle is moved by 2πk into its joint range (the turn nearest
    ``q_ref``, else nearest the middle of the range; ``all_turns``: one solution per combination of turns inside
    the ranges).  Solutions within the joint limits come first (then by distance to ``q_ref``); ``within_limits``
    keeps only those.  At a singular configuration, the joint left free takes its ``q_ref`` value (default 0 or the
    nearest limit).  ``tol``: tolerance of the equation solvers.  ValueError for an arm outside the class solved
    here (use the numeric IGM ``model.inverse_kinematics``)."""
    arm = _arm(model, link)
    target = _check_target(pose, False)
    q_ref, defaults = _defaults(model, q_ref)
    if not (math.isfinite(tolerance) and tolerance > 0 and math.isfinite(tol) and tol > 0):
        raise ValueError("tolerance and tol must be finite and > 0")
    t06 = arm.base_inv @ target @ arm.link_inv
    sols = _to_urdf(model, _mdh_solutions(arm, t06, defaults, tol))
    return _finish(model, sols, link, target, q_ref, within_limits, all_turns, tolerance)


def nearest_inverse_geometry(model: RobotData, pose: Any, q_ref: Any, link: str | None = None, *,
                             tolerance: float = 1e-9, tol: float = TOL) -> np.ndarray | None:
    """The solution of :func:`analytic_inverse_geometry` nearest ``q_ref`` (each revolute angle at the turn nearest
    ``q_ref``, joint limits ignored: the configuration a continuous motion from ``q_ref`` reaches), or None when
    the pose has no solution.  Used by the task-space planner to keep its path continuous."""
    arm = _arm(model, link)
    target = _check_target(pose, False)
    q_ref, defaults = _defaults(model, q_ref)
    if not (math.isfinite(tolerance) and tolerance > 0 and math.isfinite(tol) and tol > 0):
        raise ValueError("tolerance and tol must be finite and > 0")
    return _nearest(model, arm, target, q_ref, defaults, link, tolerance, tol)


def _nearest(model: RobotData, arm: _Arm, target: np.ndarray, q_ref: np.ndarray, defaults: np.ndarray,
             link: str | None, tolerance: float, tol: float) -> np.ndarray | None:
    t06 = arm.base_inv @ target @ arm.link_inv
    mdh = _mdh_solutions(arm, t06, defaults, tol)
    if not mdh:
        return None
    qs = np.array(_to_urdf(model, mdh))
    qs = np.where(model.sigma != PRISMATIC, q_ref + _wrap(qs - q_ref), qs)
    best = qs[int(np.argmin(np.linalg.norm(qs - q_ref, axis=1)))]
    return best if _pose_errors(model, best[None], link, target)[0] <= tolerance else None


def rx90_inverse_geometry(
    model: RobotData,
    pose: Any,
    link: str | None = None,
    *,
    q_ref: Any = None,
    within_limits: bool = False,
    all_turns: bool = False,
    tolerance: float = 1e-9,
    tol: float = TOL,
) -> list[np.ndarray]:
    """Closed-form IGM of the Stäubli RX-90 (002 Table 3.1 geometry: α = (0, π/2, 0, −π/2, π/2, −π/2),
    d3 = D3, r4 = RL4, other d, r zero except r6) by Paul's method, written as the book solves it (options and
    result as :func:`analytic_inverse_geometry`; joint signs, offsets, base and tool of ``model`` are honoured).

    With P the wrist centre (^0P_6 − r6 ^0a_6) and [s n a] = ^0R_6:
    θ1: −S1 Px + C1 Py = 0 (type 2: θ1 = atan2(Py, Px), θ1 + π);
    θ2: X S2 + Y C2 = Z, X = −2 Pz D3, Y = −2 B1 D3, Z = RL4² − D3² − Pz² − B1², B1 = Px C1 + Py S1 (type 2);
    θ3: RL4 S3 = −Pz S2 − B1 C2 + D3, RL4 C3 = −B1 S2 + Pz C2 (type 3, [A1.15]);
    [F G H]ᵀ = ^3a_6 = ^3R_0 a = [−C4 S5, C5, S4 S5]ᵀ: S4 S5 = H, C4 S5 = −F (type 4 with r = S5),
    θ5 = atan2(S5, G); θ6 from ^5R_6 = ^5R_3 ^3R_6 = Rot(x, −π/2) Rot(z, θ6) (Paul's pre-multiplication):
    θ6 = atan2(−^5R_6[0, 1], ^5R_6[0, 0]).  ValueError if ``model`` does not have that geometry."""
    j, t_link = _link(model, link)
    expect = (0.0, math.pi / 2, 0.0, -math.pi / 2, math.pi / 2, -math.pi / 2)
    ok = (model.dof == 6 and j == 6 and not model.is_tree and np.all(model.sigma == REVOLUTE)
          and np.allclose(model.alpha, expect, rtol=0.0, atol=1e-12) and np.all(np.abs(model.gamma) <= 1e-12)
          and np.all(np.abs(model.b) <= 1e-12) and np.all(np.abs(np.delete(model.d, 2)) <= 1e-12)
          and np.all(np.abs(model.r[[0, 1, 2, 4]]) <= 1e-12))
    if not ok:
        raise ValueError("not an RX-90 geometry (002 Table 3.1); use analytic_inverse_geometry")
    target = _check_target(pose, False)
    q_ref, defaults = _defaults(model, q_ref)
    d3, rl4 = float(model.d[2]), float(model.r[3])
    t06 = np.linalg.inv(model.base_transform) @ target @ np.linalg.inv(t_link)
    px, py, pz = t06[:3, 3] - model.r[5] * t06[:3, 2]
    r06 = t06[:3, :3]
    mdh = []
    for t1 in solve_type2(-px, py, 0.0, tol=tol, tangent_tol=_TANGENT, default=defaults[0]):
        c1, s1 = math.cos(t1), math.sin(t1)
        b1 = px * c1 + py * s1
        for t2 in solve_type2(-2 * pz * d3, -2 * b1 * d3, rl4**2 - d3**2 - pz**2 - b1**2, tol=tol, tangent_tol=_TANGENT,
                              default=defaults[1]):
            c2, s2 = math.cos(t2), math.sin(t2)
            for t3 in solve_type3(rl4, 0.0, -pz * s2 - b1 * c2 + d3, 0.0, rl4, -b1 * s2 + pz * c2, tol=tol,
                                  default=defaults[2], residual_tol=_RESIDUAL):
                r03 = _rot_z(t1) @ _rot_x(math.pi / 2) @ _rot_z(t2 + t3)
                r36 = r03.T @ r06
                f, g, h = r36[:, 2]
                for t4, s5 in solve_type4(1.0, h, 1.0, -f, tol=tol, default=defaults[3]):
                    t5 = math.atan2(s5, g)
                    r35 = _rot_x(-math.pi / 2) @ _rot_z(t4) @ _rot_x(math.pi / 2) @ _rot_z(t5)
                    r56 = r35.T @ r36
                    mdh.append(np.array([t1, t2, t3, t4, t5, math.atan2(-r56[0, 1], r56[0, 0])]))
    return _finish(model, _to_urdf(model, mdh), link, target, q_ref, within_limits, all_turns, tolerance)


__all__ = [
    "analytic_inverse_geometry",
    "nearest_inverse_geometry",
    "rx90_inverse_geometry",
    "solve_type1",
    "solve_type2",
    "solve_type3",
    "solve_type4",
    "solve_type5",
    "solve_type6",
    "solve_type7",
    "solve_type8",
    "supports_analytic_inverse_geometry",
]
