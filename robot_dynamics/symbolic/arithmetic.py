"""The Newton–Euler recursion of :mod:`robot_dynamics.dynamics.recursion` (001 §7.4.3, eqs. 7.51–7.61) on
expressions that record statements (001 §7.5).

* :class:`SymbolicArithmetic` — the primitives of :class:`robot_dynamics.dynamics.recursion.Arithmetic`:
  vectors are lists of three expressions, every stored element that contains an operation becomes a
  variable of the :class:`~robot_dynamics.symbolic.builder._Builder` named like the seed's SYMORO output
  (``WI12``, ``W33``, ``WP13``, ``DV123``, ``U112``, ``VSP13``, ``VP13``, ``F13``, ``PIS23``, ``No13``,
  ``FDI14``, ``E13``, ``N13``, ``GAM1``; 001 Example 7.4 and Appendix "MOCOM II"); U_j (7.57) and
  ω × (J ω) use the DV products (001 §7.5.2).
* :class:`_Geometry` — ^{a(j)}R_j and ^{a(j)}P_j of one MDH row with exact zeros (angles that are
  multiples of π/2 give exact ±1/0; the γ, b of a Khalil–Kleinfinger tree row), and the congruence
  R M Rᵀ of 3x3 blocks (001 eq. 7.75).
* :func:`_newton_euler` — the joint torques GAM1..GAMn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dynamics.recursion import newton_euler
from ..model.mdh import PRISMATIC, ROUND_OFF_TOL
from .builder import _Builder
from .expressions import _ONE, _X, _ZERO, _sign, _v


# --------------------------------------------------------------- geometry helpers
def _exact_trig(angle: float) -> tuple[_X, _X] | None:
    """cos, sin as exact integers when ``angle`` is a multiple of π/2 to round-off (``ROUND_OFF_TOL``, the
    tolerance of the URDF conversion and the base parameters)."""
    kr = round(angle / (math.pi / 2))
    if abs(angle - kr * (math.pi / 2)) > ROUND_OFF_TOL:
        return None
    return _X.num([1, 0, -1, 0][kr % 4]), _X.num([0, 1, 0, -1][kr % 4])


class _Geometry:
    """^{a(j)}R_j = Rot(z, γ) Rot(x, α) Rot(z, θ) and ^{a(j)}P_j with exact zeros.

    A tree row (Khalil & Kleinfinger 1986) adds Rot(z, γ_j) Trans(z, b_j) before the serial
    row (see :mod:`robot_dynamics.model.mdh`); the γ and b terms are emitted only when they are
    nonzero, so a serial row gives the same program as before, and γ a multiple of π/2 gives
    exact ±1/0 like α."""

    def __init__(self, b: _Builder, model: Any, j: int) -> None:
        jt = model.joints[j - 1]
        self.b, self.j = b, j
        self.ca, self.sa = self._trig(jt.alpha, "CA", "SA")
        blen = float(jt.b)
        self.cg, self.sg = self._trig(float(jt.gamma), "CG", "SG")
        self.gamma = not (self.cg == 1 and self.sg == 0)  # Rot(z, γ) is not the identity
        self.prismatic = jt.sigma == PRISMATIC
        if self.prismatic:
            self.c, self.s = self._trig(jt.theta, "C", "S")
            r = _v(f"Q{j}")
        else:
            self.c, self.s = _v(f"C{j}"), _v(f"S{j}")
            r = b.param(f"RL{j}", jt.r) if jt.r != 0.0 else _ZERO
        d = b.param(f"D{j}", jt.d) if jt.d != 0.0 else _ZERO
        bz = b.param(f"B{j}", blen) if blen != 0.0 else _ZERO
        # ^{a(j)}P_j = Rot(z, γ) (d, -r Sα, r Cα) + (0, 0, b)
        p = [d, -self.sa * r, self.ca * r]
        if self.gamma:
            p = [self.cg * p[0] - self.sg * p[1], self.sg * p[0] + self.cg * p[1], p[2]]
        p[2] = p[2] + bz
        if self.prismatic:
            px = p[0] if p[0].is_Atom else b.var(f"PX{j}", p[0])
            self.p = [px, b.var(f"PY{j}", p[1]), b.var(f"PZ{j}", p[2])]
        else:
            self.p = [p[0] if p[0].is_Atom else b.const(p[0]), b.const(p[1]), b.const(p[2])]

    def _trig(self, angle: float, cname: str, sname: str) -> tuple[_X, _X]:
        """cos, sin of a constant angle: exact for a multiple of π/2, else parameters ``CNj``, ``SNj``."""
        ex = _exact_trig(angle)
        if ex is not None:
            return ex
        return self.b.param(f"{cname}{self.j}", math.cos(angle)), self.b.param(f"{sname}{self.j}", math.sin(angle))

    def rt(self, v: list[_X], prefix: str) -> list[_X]:
        """^jR_{a(j)} v = Rot(z, θ)^T Rot(x, α)^T Rot(z, γ)^T v (intermediates kept when α, γ are general)."""
        ca, sa, c, s = self.ca, self.sa, self.c, self.s
        if self.gamma:
            cg, sg = self.cg, self.sg
            v = [cg * v[0] + sg * v[1], -sg * v[0] + cg * v[1], v[2]]
            if not (cg.is_Number and sg.is_Number):
                v = [self.b.var(f"{prefix}G1{self.j}", v[0]), self.b.var(f"{prefix}G2{self.j}", v[1]), v[2]]
        t2 = ca * v[1] + sa * v[2]
        t3 = -sa * v[1] + ca * v[2]
        if not (ca.is_Number and sa.is_Number):
            t2 = self.b.var(f"{prefix}A2{self.j}", t2)
        return [c * v[0] + s * t2, -s * v[0] + c * t2, t3]

    def r(self, v: list[_X], prefix: str) -> list[_X]:
        """^{a(j)}R_j v = Rot(z, γ) Rot(x, α) Rot(z, θ) v."""
        ca, sa, c, s = self.ca, self.sa, self.c, self.s
        u2 = s * v[0] + c * v[1]
        if not (ca.is_Number and sa.is_Number):
            u2 = self.b.var(f"{prefix}B2{self.j}", u2)
        out = [c * v[0] - s * v[1], ca * u2 - sa * v[2], sa * u2 + ca * v[2]]
        if self.gamma:
            cg, sg = self.cg, self.sg
            if not (cg.is_Number and sg.is_Number):
                out = [self.b.var(f"{prefix}H1{self.j}", out[0]), self.b.var(f"{prefix}H2{self.j}", out[1]), out[2]]
            out = [cg * out[0] - sg * out[1], sg * out[0] + cg * out[1], out[2]]
        return out

    # ---- congruence R M R^T of 3x3 blocks (direct dynamics, 001 eq. 7.75)
    def _planar_steps(self) -> list[tuple[int, int, int, _X, _X, str]]:
        """R = Rot(z, γ) Rot(x, α) Rot(z, θ) as planar rotations (a, b, t, cos, sin, key), innermost first."""
        steps = [(0, 1, 2, self.c, self.s, "T"), (1, 2, 0, self.ca, self.sa, "A")]
        if self.gamma:
            steps.append((0, 1, 2, self.cg, self.sg, "G"))
        return steps

    def _trig2(self, key: str, c: _X, s: _X) -> tuple[_X, _X, _X, _X]:
        """cos², cos·sin, 2 cos·sin, cos² − sin² of one angle (computed once per joint and angle)."""
        if not hasattr(self, "_t2"):
            self._t2: dict[str, tuple[_X, _X, _X, _X]] = {}
        if key not in self._t2:
            b, j = self.b, self.j
            cc = b.var(f"CC{key}{j}", c**2)
            cs = b.var(f"CS{key}{j}", c * s)
            self._t2[key] = (cc, cs, b.var(f"CST{key}{j}", 2 * cs), b.var(f"CD{key}{j}", 2 * cc - 1))
        return self._t2[key]

    def congruence(self, m: list[list[_X]], prefix: str, symmetric: bool) -> list[list[_X]]:
        """^{a(j)}R_j M ^{a(j)}R_j^T of a 3x3 block M (symmetric: only the upper triangle is computed).

        Each planar rotation [[c, −s], [s, c]] on the index pair (a, b) uses s² = 1 − c²::

            M'_aa = M_bb + c² Δ − cs (M_ab + M_ba),  M'_bb = M_aa + M_bb − M'_aa,  Δ = M_aa − M_bb
            M'_ab = cs Δ + c² (M_ab + M_ba) − M_ba,  M'_ba = cs Δ + c² (M_ab + M_ba) − M_ab
            (symmetric: M'_ab = cs Δ + (c² − s²) M_ab, M'_aa = M_bb + c² Δ − 2cs M_ab)

        and rows/columns (a, b) against the third index t as a plane vector rotation."""
        b, j = self.b, self.j
        m = [list(r) for r in m]
        for ia, ib, t, c, s, key in self._planar_steps():
            if c.is_Number and s.is_Number:  # exact: a signed permutation or the identity
                rot = [[_ONE, _ZERO, _ZERO], [_ZERO, _ONE, _ZERO], [_ZERO, _ZERO, _ONE]]
                rot[ia][ia], rot[ia][ib], rot[ib][ia], rot[ib][ib] = c, -s, s, c
                m = [[sum((rot[r][k] * m[k][l] * rot[c2][l] for k in range(3) for l in range(3)), _ZERO)
                      for c2 in range(3)] for r in range(3)]
                continue
            cc, cs, cs2, cd = self._trig2(key, c, s)
            nm = f"{prefix}{key}"
            new = [[_ZERO] * 3 for _ in range(3)]
            new[t][t] = m[t][t]
            new[ia][t] = b.var(f"{nm}{ia + 1}{t + 1}{j}", c * m[ia][t] - s * m[ib][t])
            new[ib][t] = b.var(f"{nm}{ib + 1}{t + 1}{j}", s * m[ia][t] + c * m[ib][t])
            delta = b.var(f"{nm}D{j}", m[ia][ia] - m[ib][ib])
            if symmetric:
                new[t][ia], new[t][ib] = new[ia][t], new[ib][t]
                new[ia][ia] = b.var(f"{nm}{ia + 1}{ia + 1}{j}", m[ib][ib] + cc * delta - cs2 * m[ia][ib])
                new[ib][ib] = b.var(f"{nm}{ib + 1}{ib + 1}{j}", m[ia][ia] + m[ib][ib] - new[ia][ia])
                new[ia][ib] = new[ib][ia] = b.var(f"{nm}{ia + 1}{ib + 1}{j}", cs * delta + cd * m[ia][ib])
            else:
                new[t][ia] = b.var(f"{nm}{t + 1}{ia + 1}{j}", c * m[t][ia] - s * m[t][ib])
                new[t][ib] = b.var(f"{nm}{t + 1}{ib + 1}{j}", s * m[t][ia] + c * m[t][ib])
                sab = b.var(f"{nm}S{j}", m[ia][ib] + m[ib][ia])
                new[ia][ia] = b.var(f"{nm}{ia + 1}{ia + 1}{j}", m[ib][ib] + cc * delta - cs * sab)
                new[ib][ib] = b.var(f"{nm}{ib + 1}{ib + 1}{j}", m[ia][ia] + m[ib][ib] - new[ia][ia])
                x = b.var(f"{nm}X{j}", cs * delta + cc * sab)
                new[ia][ib] = b.var(f"{nm}{ia + 1}{ib + 1}{j}", x - m[ib][ia])
                new[ib][ia] = b.var(f"{nm}{ib + 1}{ia + 1}{j}", x - m[ia][ib])
            m = new
        return m


def _cross(a: list[_X], b: list[_X]) -> list[_X]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _gravity_r0(model: Any) -> np.ndarray:
    g = model.base_transform[:3, :3].T @ model.gravity
    g[np.abs(g) <= ROUND_OFF_TOL * max(np.linalg.norm(g), 1.0)] = 0.0  # round-off of the base rotation
    return g


@dataclass
class _LinkState:
    """What the symbolic arithmetic derives from ω_j, ω̇_j: DV_ik = ω_i ω_k, DV_ii = −ω_i², U_j = ω̂̇_j + ω̂_j ω̂_j
    (7.57, written with the DV elements; None in a velocity pass) and ω̇_j."""

    dv: list[list[_X]]
    u: list[list[_X]] | None
    wd: list[_X] | None


class SymbolicArithmetic:
    """The primitives of :class:`robot_dynamics.dynamics.recursion.Arithmetic` on expressions that record
    statements in a :class:`_Builder` (001 §7.5): vectors are lists of three expressions, every stored element
    that contains an operation becomes a variable named like the seed's (``WI12``, ``WP13``, ``VSP13``, …),
    rotations keep the exact zeros of the MDH structure (:class:`_Geometry`), U_j and ω × (J ω) use the DV
    products (001 §7.5.2).

    ``par``: standard name -> parameter expression; ``joint_rates(j)`` gives (q̇_j, q̈_j) (default the
    symbols ``QPj``, ``QDPj``; numbers specialize the program); ``wrench``: the wrench ``FXn … CZn`` of the
    last link; ``gravity``: v̇_0 = −g with the parameters ``G1..G3`` (else 0)."""

    def __init__(
        self, model: Any, b: _Builder, par: dict[str, _X],
        joint_rates: Callable[[int], tuple[_X, _X]] | None = None, wrench: bool = False, gravity: bool = True,
    ) -> None:
        self.model, self.b, self.par = model, b, par
        self.n = model.dof
        self.joint_rates, self.wrench, self.gravity = joint_rates, wrench, gravity
        self.geo: dict[int, _Geometry] = {}

    def geometry(self, j: int) -> _Geometry:
        """^{a(j)}R_j, ^{a(j)}P_j of joint j (its constants emitted when first used)."""
        g = self.geo.get(j)
        if g is None:
            g = self.geo[j] = _Geometry(self.b, self.model, j)
        return g

    def p(self, k: str, j: int) -> _X:
        return self.par.get(f"{k}{j}", _ZERO)

    def ms(self, j: int) -> list[_X]:
        return [self.p("MX", j), self.p("MY", j), self.p("MZ", j)]

    # ---- the primitives
    def rates(self, j: int) -> tuple[_X, _X]:
        return self.joint_rates(j) if self.joint_rates else (_v(f"QP{j}"), _v(f"QDP{j}"))

    @staticmethod
    def zero() -> list[_X]:
        return [_ZERO, _ZERO, _ZERO]

    def base_acceleration(self) -> list[_X]:
        g = _gravity_r0(self.model) if self.gravity else np.zeros(3)
        return [-(self.b.param(f"G{i}", g[i - 1]) if g[i - 1] != 0.0 else _ZERO) for i in (1, 2, 3)]

    def store(self, name: str, j: int, v: list[_X]) -> list[_X]:
        return self.b.vec(name, j, v)

    def store_scalar(self, name: str, j: int, s: _X) -> _X:
        return self.b.var(f"{name}{j}", s)

    def to_link(self, j: int, v: list[_X], name: str) -> list[_X]:
        return self.geometry(j).rt(v, name)

    def to_antecedent(self, j: int, v: list[_X], name: str) -> list[_X]:
        return self.geometry(j).r(v, name)

    def position_cross(self, j: int, v: list[_X]) -> list[_X]:
        return _cross(self.geometry(j).p, v)

    @staticmethod
    def add(u: list[_X], v: list[_X]) -> list[_X]:
        return [u[0] + v[0], u[1] + v[1], u[2] + v[2]]

    @staticmethod
    def scale(c: int, v: list[_X]) -> list[_X]:
        return [c * x for x in v]

    @staticmethod
    def cross_axis(v: list[_X], s: _X) -> list[_X]:
        return [s * v[1], -(s * v[0]), _ZERO]

    @staticmethod
    def add_axis(v: list[_X], s: _X) -> list[_X]:
        return [v[0], v[1], v[2] + s]

    @staticmethod
    def axis(v: list[_X]) -> _X:
        return v[2]

    def link_state(self, j: int, w: list[_X], wd: list[_X] | None) -> _LinkState:
        b, z = self.b, _ZERO
        dv = [[z] * 3 for _ in range(3)]
        for i in range(3):
            dv[i][i] = b.var(f"DV{i + 1}{i + 1}{j}", -w[i] ** 2)
            for k in range(i + 1, 3):
                dv[i][k] = dv[k][i] = b.var(f"DV{i + 1}{k + 1}{j}", w[i] * w[k])
        if wd is None:
            return _LinkState(dv, None, None)
        uj = [
            [dv[1][1] + dv[2][2], dv[0][1] - wd[2], dv[0][2] + wd[1]],
            [dv[0][1] + wd[2], dv[0][0] + dv[2][2], dv[1][2] - wd[0]],
            [dv[0][2] - wd[1], dv[1][2] + wd[0], dv[0][0] + dv[1][1]],
        ]
        u = [[b.var(f"U{r + 1}{c + 1}{j}", uj[r][c]) for c in range(3)] for r in range(3)]
        return _LinkState(dv, u, wd)

    def transport(self, j: int, state_a: _LinkState, vd_a: list[_X]) -> list[_X]:
        u, pj = state_a.u, self.geometry(j).p
        return [sum((u[r][c] * pj[c] for c in range(3)), vd_a[r]) for r in range(3)]

    def link_force(self, j: int, state: _LinkState, vd: list[_X]) -> list[_X]:
        ms, m, u = self.ms(j), self.p("M", j), state.u
        return [m * vd[r] + sum(u[r][c] * ms[c] for c in range(3)) for r in range(3)]

    def link_moment(self, j: int, state: _LinkState) -> list[_X]:
        """J ω̇ + ω × (J ω) with the U and DV elements: ω̇_2 − ω_1ω_3 = −U31, ω̇_3 + ω_1ω_2 = U21, ..."""
        b, uu, dv = self.b, state.u, state.dv
        xx, xy, xz, yy, yz, zz = (self.p(k, j) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
        pis1, pis2, pis3 = b.const(zz - yy, f"PIS1{j}"), b.const(xx - zz, f"PIS2{j}"), b.const(yy - xx, f"PIS3{j}")
        d11, d22, d33 = dv[0][0], dv[1][1], dv[2][2]
        d12, d13, d23 = dv[0][1], dv[0][2], dv[1][2]
        wp1, wp2, wp3 = state.wd
        if xy == 0 and xz == 0 and yz == 0:
            return [xx * wp1 + pis1 * d23, yy * wp2 + pis2 * d13, zz * wp3 + pis3 * d12]
        return [
            xx * wp1 - xy * uu[2][0] + xz * uu[1][0] + yz * (d33 - d22) + pis1 * d23,
            yy * wp2 + xy * uu[2][1] - yz * uu[0][1] + xz * (d11 - d33) + pis2 * d13,
            zz * wp3 - xz * uu[1][2] + yz * uu[0][2] + xy * (d22 - d11) + pis3 * d12,
        ]

    def ms_cross(self, j: int, vd: list[_X]) -> list[_X]:
        return _cross(self.ms(j), vd)

    def external_wrench(self, j: int) -> tuple[list[_X], list[_X]] | None:
        if not (self.wrench and j == self.n):
            return None
        return [_v(f"FX{j}"), _v(f"FY{j}"), _v(f"FZ{j}")], [_v(f"CX{j}"), _v(f"CY{j}"), _v(f"CZ{j}")]

    def joint_terms(self, j: int, tau: _X, qd: _X, qdd: _X) -> _X:
        return tau + self.p("Ia", j) * qdd + self.p("Fv", j) * qd + self.p("Fc", j) * _sign(qd)


def _tree(model: Any) -> tuple[list[int], list[bool]]:
    return [int(a) for a in model.antecedent], [jt.sigma == PRISMATIC for jt in model.joints]


def _newton_euler(
    model: Any, b: _Builder, par: dict[str, _X], wrench: bool,
    progress: Callable[[str], None] | None,
    joint_rates: Callable[[int], tuple[_X, _X]] | None = None,
    gravity: bool = True,
) -> list[_X]:
    """The Newton–Euler recursion of :mod:`robot_dynamics.dynamics.recursion` (001 eqs. 7.51–7.61) on
    scalars; returns GAM1..GAMn.

    ``joint_rates(j)`` gives (q̇_j, q̈_j) (default the symbols QPj, QDPj); numbers there
    specialize the recursion (e.g. q̇ = q̈ = 0 for the gravity torques)."""
    ar = SymbolicArithmetic(model, b, par, joint_rates, wrench, gravity)
    return newton_euler(ar, *_tree(model), progress=progress)
