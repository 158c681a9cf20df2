"""Base (minimum) inertial parameters: the closed-form direct method of 000 and a numerical check.

Closed form (000, Gautier & Khalil, §7–8)
------------------------------------------
The standard parameters of link j are ``XX XY XZ YY YZ ZZ MX MY MZ M`` (000 eq. 3) plus
``Ia Fc Fv`` (rotor inertia, Coulomb and viscous friction, 001 eq. 7.61).  The method:

(b) cascade from link n to link 1 (000 §7-2, theorems 5 and 6), grouping into the
    antecedent a(j):

    * revolute j, eq. (20) with errata 2: ``XXR_j = XX_j - YY_j`` and (YY_j, MZ_j, M_j)
      move to link a(j) as a body rigidly attached to it: ``YY_j (I - z zᵀ)`` about the
      joint axis, first moment ``MZ_j z`` and mass ``M_j`` at ``P_j``;
    * prismatic j, eq. (22) (the correct form of (21), errata 3–4):
      ``J_{a(j)} += ^{a}A_j J_j ^{j}A_a``.

(a)/(c) the first links (000 theorems 3, 4 and step c), generalised to any gravity
    direction (gravity in R0 = base_transformᵀ g), prismatic joints before the first
    revolute joint r1 and revolute joints parallel to it (before r2):

    * a link that never rotates (only prismatic joints from the base): J and MS have no
      effect, M stays (theorem 4);
    * a link rotating about a fixed direction u (all revolute joints on its path parallel
      to u): XXR, XY, XZ, YZ have no effect (theorem 3); for a prismatic link with
      z_j ∥ u, MZ_j has no effect and (MX_j, MY_j) group into its antecedent
      (``MS_a += A MS_j``, ``J_a += 2(P·m)I − P mᵀ − m Pᵀ``);
    * MX_j, MY_j have no effect when the kinetic term ``v_jᵀ(ω_j × MS_j)`` vanishes (every
      revolute ancestor axis passes through O_j, every prismatic ancestor ∥ ω_j) and the
      potential term is constant (g = 0, or the link rotates about u ∥ g) — theorem 3;
    * ``Ia_j`` groups with ``ZZR_j`` when ω_{a(j)} ⊥ z_j for all q (e.g. Ia1 with ZZR1, and
      Ia2 with ZZR2 on the RX-90); ``Ia_j`` groups with ``MR_j`` for a prismatic joint on the
      base whose axis is ⊥ g.

    Tree rows (Khalil & Kleinfinger 1987, ^aA_j = Rot(z,γ) Rot(x,α) Rot(z,θ), P_j = b z_a +
    Rot(z,γ)(d, −r sα, r cα)) use the same groupings with the general z_j, P_j; rows with γ = b = 0
    give exactly the serial relations.  The fixed-point rule (g = 0, every ancestor axis through a
    point C of axis j) tries the points Q_m = O_m − r_m z_m = O_a + b_m z_a (on axes m and a(m))
    down a coaxial chain with d = 0; a serial row gives Q_m = O_a, the serial rule.

    Step (c) is then checked numerically on a stacked regressor: the standard columns must
    equal ``W_b K`` (to round-off), and the number of base parameters is the numerical rank of
    the regressor (rule below).  If the candidate columns outnumber it (a dependency the rules
    miss, or one whose breaking effect is below the rank tolerance: an angle 1e-12 from kπ/2
    changes a column by ~1e-12, an angle 1e-6 from it can leave a second-order ~1e-12 effect),
    the Ia, Fc, Fv columns and the columns whose relation holds an Ia (ZZR_j = ZZ_j + Ia_j …)
    are kept, and the other inertial columns to keep are chosen by pivoting (well conditioned;
    the base-most among comparable columns, so the farthest parameter is eliminated, 000 §6).
    Each dropped inertial column is grouped with fitted float coefficients on kept inertial
    columns (``numerical`` lists those relations, ``method`` says so) and exact integer
    coefficients on rotor-inertia columns (e.g. ``IaR_j = Ia_j + ZZR_j`` when the two columns
    differ only below the tolerance: the relation of the nearby special geometry).  So a rotor
    inertia always keeps coefficient 1 in exactly one relation, never a fitted one, and friction
    is never grouped; a relation holding Ia_j may receive an *inertial* parameter through a
    fitted coefficient (a mass 1e-9 off a parallel axis, in ZZR1 = ZZ1 + Ia1 + …).  A column
    that would need a non-integer coefficient on an Ia column stays a separate parameter
    (noted: the count then exceeds the rank).

Tolerance policy
----------------
* Geometry: the closed-form rules treat an angle as exactly 0, ±π/2 or π, a length as exactly 0,
  only when it is so to round-off (``ROUND_OFF_TOL`` = 1e-15 rad or m, the same constant the
  URDF converter uses).  Anything else uses the general case of the rules, which is exact for any
  value: xarm7's α₂ = -π/2 + 3.7e-6 keeps Ia2 (63 parameters, not 62).  Derived tests (parallel
  axes, axes through a point) allow the round-off of composing n frames:
  ``(n + 1) · ROUND_OFF_TOL · max(1 m, L)``.
* Rank: columns are put in units of the robot's length L (:func:`column_weights`; not unit
  norm, which would amplify the cancellation round-off of structurally tiny columns into
  false rank), and a direction is independent when its singular value exceeds
  ``ε_r · max(σ_max, |g| L √N)`` of the scaled matrix, with ``ε_r = p · eps`` for p = 13n
  columns (the round-off of a column grows with the number of links; σ_i/σ_max converge as the
  number N of stacked samples grows, so ε_r must not grow with N as numpy's ``max(N, p) · eps``
  does).  ``|g| L √N`` (:func:`gravity_reference`) is the size of a gravity column: gravity is
  computed in every column even when its effect cancels (axes ∥ g), and sin(fl(π)) = 1.2e-16
  then leaves a round-off column relative to it, which σ_max of a small, slow robot is not.
  ``tol`` overrides ``ε_r``.  The count equals this rank; the relations are exact (closed form)
  unless step (c) grouped, in which case the base model reproduces the regressor to the rank
  threshold, which is what "numerically dependent" means.

Identifiability rank (issue 30): after step (c), the closed-form base regressor (length-scaled
columns) is given the rank ``σ > 1e-9 σ_max`` (:func:`~.base_rank.identifiable_rank`; why 1e-9:
:data:`~.base_rank.IDENTIFIABLE_RTOL`).  A right angle written ``1.57079632679`` leaves Ia_j and ZZR_j
separate in the closed form, with columns ~1e-12 apart: they are grouped by the same rules as step (c)
(``IaR_j = Ia_j + ZZR_j``, integer coefficient on Ia, friction never), ``rank_grouped`` lists the
relations changed, ``method`` ends with "identifiability rank" and notes say so.  With exact geometry
the closed form is full rank at this tolerance and nothing changes.  The rank helpers live in
:mod:`.base_rank` (re-exported here).

Numerical method (Gautier): QR with column pivoting of the stacked regressor of random
states gives the independent columns and ``β = R1⁻¹R2``, the rank by the rule above
(:func:`numerical_base_parameters`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp
from sympy.polys.domains import QQ
from sympy.polys.rings import ring

from ..model.data import RobotData
from ..model.inertia import INERTIAL_NAMES
from ..model.mdh import PRISMATIC, ROUND_OFF_TOL
from .base_rank import (
    IDENTIFIABLE_RTOL,
    NumericalBaseParameters,
    _check_model,
    _check_options,
    _numerical_grouping,
    _rank_and_threshold,
    _robot_size,
    column_weights,
    gravity_reference,
    identifiable_rank,
    numerical_base_parameters,
    numerical_rank,
    rank_tolerance,
    stacked_regressor,
)
from .inverse_dynamics import _gravity_r0

__all__ = [
    "BaseParameters",
    "NumericalBaseParameters",
    "base_parameters",
    "column_weights",
    "gravity_reference",
    "identifiable_rank",
    "numerical_base_parameters",
    "numerical_rank",
    "rank_tolerance",
    "stacked_regressor",
    "base_params_cli",
]

PARAM_KINDS = INERTIAL_NAMES + ("Ia", "Fc", "Fv")
XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M, IA, FC, FV = range(13)
_J_IDX = {(0, 0): XX, (0, 1): XY, (0, 2): XZ, (1, 1): YY, (1, 2): YZ, (2, 2): ZZ}
_RESIDUAL_TOL = 1e-11  # closed-form relations must reproduce W to round-off (relative to max |W|)

Form = dict[int, Any]  # standard column index -> coefficient (float or sympy)


# ----------------------------------------------------------------- results
@dataclass
class BaseParameters:
    """Base parameters of a model (000): ``values = matrix @ standard values``.

    ``names``: Khalil names (``ZZR1``, ``XXR2``, ``MY2``, ``Ia3``, ``Fc1`` …); a trailing R
    marks a grouped parameter.  ``relations``: sympy expressions in the standard
    parameters (``XX1`` … ``Fv<n>``) and the geometric parameters ``d<j>, r<j>, alpha<j>,
    theta<j>`` and, on tree rows, ``gamma<j>, b<j>`` (special angles 0, ±π/2, π and zero lengths
    are exact), built on first access.  ``eliminated``: standard parameters with no effect.  ``columns``: the standard column that carries
    each base parameter in :meth:`regressor`.
    """

    names: list[str]
    values: np.ndarray
    _relations: Any = field(repr=False)  # list of sympy expressions, or a function building it (lazy)
    eliminated: list[str]
    matrix: np.ndarray
    columns: np.ndarray
    method: str
    model: RobotData = field(repr=False)
    numerical: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    geometry: dict[sp.Symbol, float] = field(default_factory=dict, repr=False)
    rank_grouped: list[str] = field(default_factory=list)  # relations changed by the identifiability rank

    def __len__(self) -> int:
        return len(self.names)

    @property
    def relations(self) -> list[sp.Expr]:
        """The relations (sympy), built on first use: numbers and matrices do not need them."""
        if callable(self._relations):
            self._relations = self._relations()
        return self._relations

    @property
    def count(self) -> int:
        """Number of base parameters (inertial, Ia, Fc and Fv)."""
        return len(self.names)

    @property
    def inertial_count(self) -> int:
        """Number of base parameters carried by an inertial column (XX..M), the count of 000."""
        return int(sum(int(c) % 13 < 10 for c in self.columns))

    @property
    def relations_dict(self) -> dict[str, sp.Expr]:
        return dict(zip(self.names, self.relations, strict=True))

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        """Base regressor W_b, ``W_b @ values == inverse_dynamics``: (n, b) or (N, n, b)."""
        from .inverse_dynamics import regressor

        return regressor(self.model, q, qd, qdd, gravity=gravity)[..., self.columns]

    def table(self) -> str:
        """Plain-text table: name, relation (as printed: :func:`~.relations.printed_relations`), value."""
        from .relations import printed_relations

        rel = [r + ("   [numerical, step (c)]" if nm in self.numerical else "")
               + ("   [identifiability rank]" if nm in self.rank_grouped else "")
               for nm, r in zip(self.names, printed_relations(self), strict=True)]
        w = max([4] + [len(n) for n in self.names])
        lines = [f"{'name':<{w}}  {'value':>14}  relation", "-" * (w + 28)]
        lines += [f"{nm:<{w}}  {v:>14.6g}  {r}" for nm, v, r in zip(self.names, self.values, rel, strict=True)]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """``relation``: as printed (:func:`~.relations.printed_relations`); ``relation_symbolic``: :attr:`relations`."""
        from .relations import printed_relations

        printed = printed_relations(self)
        return {
            "robot": getattr(self.model, "name", ""),
            "method": self.method,
            "count": self.count,
            "inertial_count": self.inertial_count,
            "parameters": [
                {"name": nm, "relation": pr, "relation_symbolic": str(r), "value": float(v),
                 "numerical": nm in self.numerical, "rank_grouped": nm in self.rank_grouped}
                for nm, pr, r, v in zip(self.names, printed, self.relations, self.values, strict=True)
            ],
            "eliminated": list(self.eliminated),
            "notes": list(self.notes),
        }


# ----------------------------------------------------------------- geometry
def _special_trig(angle: float) -> tuple[int, int] | None:
    """Exact (cos, sin) when the angle is a multiple of π/2 to round-off (``ROUND_OFF_TOL``)."""
    k = round(angle / (math.pi / 2))
    if abs(angle - k * math.pi / 2) <= ROUND_OFF_TOL:
        return [(1, 0), (0, 1), (-1, 0), (0, -1)][k % 4]
    return None


@dataclass
class _Geometry:
    """Per-joint (cα, sα, cθ, sθ, d, r, cγ, sγ, b) as floats and as sympy expressions."""

    num: list[tuple[float, ...]]
    sym: list[tuple[Any, ...]]
    subs: dict[sp.Symbol, float]
    trig: dict[sp.Symbol, sp.Expr]  # placeholder symbols -> cos(angle), sin(angle) (cheaper to expand)


def _geo_angle(ang: float, name: str, subs: dict, trig: dict) -> tuple[list[float], list[Any]]:
    """(cos, sin) of one angle: exact integers at kπ/2 (to ``ROUND_OFF_TOL``), else placeholder symbols."""
    sc = _special_trig(ang)
    if sc is not None:
        return [float(sc[0]), float(sc[1])], [sp.Integer(sc[0]), sp.Integer(sc[1])]
    s = sp.Symbol(name, real=True)
    subs[s] = ang
    cs, sn = sp.Symbol(f"_cos_{name}", real=True), sp.Symbol(f"_sin_{name}", real=True)
    trig[cs], trig[sn] = sp.cos(s), sp.sin(s)
    return [math.cos(ang), math.sin(ang)], [cs, sn]


def _geo_length(val: float, name: str, subs: dict) -> tuple[list[float], list[Any]]:
    """One length: exact 0 within ``ROUND_OFF_TOL``, else a symbol."""
    if abs(val) <= ROUND_OFF_TOL:
        return [0.0], [sp.Integer(0)]
    s = sp.Symbol(name, real=True)
    subs[s] = val
    return [float(val)], [s]


def _geometry(model: RobotData) -> _Geometry:
    """Exact special values (angles kπ/2, zero lengths, to ``ROUND_OFF_TOL``), else symbols
    ``alpha<j>, theta<j>, d<j>, r<j>`` and, for a tree row, ``gamma<j>, b<j>``."""
    num, sym, subs, trig = [], [], {}, {}
    for j, jt in enumerate(model.joints, start=1):
        row_n: list[float] = []
        row_s: list[Any] = []
        for part in (_geo_angle(jt.alpha, f"alpha{j}", subs, trig), _geo_angle(jt.theta, f"theta{j}", subs, trig),
                     _geo_length(jt.d, f"d{j}", subs), _geo_length(jt.r, f"r{j}", subs),
                     _geo_angle(jt.gamma, f"gamma{j}", subs, trig), _geo_length(jt.b, f"b{j}", subs)):
            row_n += part[0]
            row_s += part[1]
        num.append(tuple(row_n))
        sym.append(tuple(row_s))
    return _Geometry(num, sym, subs, trig)


def _is_serial_row(geo_j: tuple[Any, ...]) -> bool:
    """γ_j = 0 and b_j = 0 exactly: the serial MDH row (002 eq. 3.2)."""
    cg, sg, b = geo_j[6:9]
    return bool(cg == 1 and sg == 0 and b == 0)


def _row_vectors(geo_j: tuple[Any, ...]) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any], Any, Any]:
    """z_j and P_j in R_{a(j)}, P_j·z_j and |P_j|² (P_j at the row's r_j).

    Tree row: ``^aA_j = Rot(z,γ) Rot(x,α) Rot(z,θ)``, ``P_j = b z_a + Rot(z,γ)(d, −r sα, r cα)``, so
    ``z_j = (sγ sα, −cγ sα, cα)``, ``P·z = r + b cα`` and ``|P|² = b² + d² + r² + 2 b r cα``
    (``b z_a``, ``d u_j``, ``r z_j`` with u_j ⊥ z_a, z_j).  A serial row gives ``(0, −sα, cα)``,
    ``(d, −r sα, r cα)``, ``r`` and ``d² + r²``.
    """
    ca, sa, _, _, d, r, cg, sg, b = geo_j
    if _is_serial_row(geo_j):
        return (0, -sa, ca), (d, -r * sa, r * ca), r, d * d + r * r
    zv = (sg * sa, -cg * sa, ca)
    pv = (cg * d + sg * r * sa, sg * d - cg * r * sa, b + r * ca)
    if isinstance(ca, float):  # numbers: from the components (b ≈ -r cα ≫ |P| when z_j ∥ z_a nearly)
        return zv, pv, sum(x * y for x, y in zip(pv, zv, strict=True)), sum(x * x for x in pv)
    return zv, pv, r + b * ca, b * b + d * d + r * r + 2 * b * r * ca


@dataclass
class _Kinematics:
    """Classification of every link at q = 0 (valid for all q, see the module docstring)."""

    path: list[list[int]]  # strict ancestors (1-based), base to j
    rot_dir: list[Any]  # None: never rotates; unit vector u in R0; "general"
    mxy_free: list[bool]  # revolute: MX_j, MY_j have no effect
    ia_on_zz: list[bool]  # revolute: Ia_j groups with ZZR_j
    m_to_ia: list[bool]  # prismatic: M_j = rigid mass on a(j) + Ia_j column
    parallel_prismatic: list[bool]  # prismatic with z_j ∥ u (MX, MY grouped, MZ no effect)
    ms_u_elim: list[int | None]  # prismatic rotating about u ∦ z_j: MS component along u has no effect
    last_rev: list[int]  # last revolute strict ancestor (1-based, 0 if none)
    fixed_point: list[Any] = field(default_factory=list)  # revolute, g = 0: [(m, ±1, ±1|0)] coaxial chain to C


def _geom_tols(model: RobotData) -> tuple[float, float]:
    """Round-off of derived geometry after composing n frames: directions ``(n + 1) · ROUND_OFF_TOL``,
    lengths that times ``max(1 m, Σ|d| + |r|)``."""
    size = _robot_size(model)
    return (model.dof + 1) * ROUND_OFF_TOL, (model.dof + 1) * ROUND_OFF_TOL * max(1.0, size)


def _kinematics(model: RobotData, g0: np.ndarray) -> _Kinematics:
    n = model.dof
    geom_tol, len_tol = _geom_tols(model)

    def _parallel(a: np.ndarray, b: np.ndarray, tol: float = geom_tol) -> bool:
        return bool(np.linalg.norm(np.cross(a, b)) <= tol)

    frames = model.link_frames(np.zeros(n))
    z = frames[:, :3, 2]
    o = frames[:, :3, 3]
    gn = float(np.linalg.norm(g0))
    gdir = g0 / gn if gn > 0 else None
    out = _Kinematics([], [], [], [], [], [], [], [], [])
    for j in range(1, n + 1):
        anc = []
        a = int(model.antecedent[j - 1])
        while a > 0:
            anc.append(a)
            a = int(model.antecedent[a - 1])
        anc = anc[::-1]
        out.path.append(anc)
        revs = [k for k in anc + [j] if model.sigma[k - 1] != PRISMATIC]
        if not revs:
            u: Any = None
        elif all(_parallel(z[k], z[revs[0]]) for k in revs):
            u = z[revs[0]] / np.linalg.norm(z[revs[0]])
        else:
            u = "general"
        out.rot_dir.append(u)
        prism = model.sigma[j - 1] == PRISMATIC
        rev_anc = [k for k in anc if model.sigma[k - 1] != PRISMATIC]
        out.last_rev.append(rev_anc[-1] if rev_anc else 0)
        fixed_u = isinstance(u, np.ndarray)
        # kinetic term v_j·(ω_j × MS_j) ≡ 0 and potential term of MX, MY constant (theorem 3)
        kin_free = u is not None
        for k in anc:
            if model.sigma[k - 1] == PRISMATIC:
                kin_free &= fixed_u and _parallel(z[k], u)
            else:
                kin_free &= _parallel(z[k], o[j] - o[k], len_tol) or bool(np.linalg.norm(o[j] - o[k]) <= len_tol)
        pot_const = gdir is None or (fixed_u and _parallel(u, gdir))
        out.mxy_free.append(bool(kin_free and pot_const and not prism))
        a = int(model.antecedent[j - 1])
        # g = 0 and a fixed point C = O_j + s z_j on axis j (every ancestor revolute, all axes through C):
        # only J about C matters, so MX_j, MY_j group into XZ_j, YZ_j.  Candidates, with d_m = 0 along
        # the way: Q_m = O_m - r_m z_m = O_a + b_m z_a (a = a(m)), on axes m and a; from Q_j, continue
        # through a coaxial antecedent a (d_a = 0, z_a ∥ z_j) to Q_a = Q_m - (b_m + r_a) z_a.  Entries
        # (m, c_r, c_b) give s = -Σ (c_r r_m + c_b b_m) (serial rows: s = -r_j - Σ ±r_k).
        chain: list[tuple[int, int, int]] | None = None
        if gdir is None and not prism and not out.mxy_free[-1] and a > 0 and abs(model.d[j - 1]) <= ROUND_OFF_TOL \
                and all(model.sigma[k - 1] != PRISMATIC for k in anc):
            chain, m = [(j, 1, 0)], j
            q_pt = o[j] - model.r[j - 1] * z[j]
            while True:
                k = int(model.antecedent[m - 1])
                if all(_parallel(z[mm], q_pt - o[mm], len_tol) or np.linalg.norm(q_pt - o[mm]) <= len_tol
                       for mm in anc):
                    break
                if k == 0 or abs(model.d[k - 1]) > ROUND_OFF_TOL or not _parallel(z[k], z[j]):
                    chain = None
                    break
                sgn = int(round(float(z[k] @ z[j])))
                if abs(model.b[m - 1]) > ROUND_OFF_TOL:
                    chain.append((m, 0, sgn))
                chain.append((k, sgn, 0))
                q_pt = o[k] - model.r[k - 1] * z[k]
                m = k
        out.fixed_point.append(chain)
        ua = out.rot_dir[a - 1] if a > 0 else None
        out.ia_on_zz.append(bool(not prism and (ua is None or (isinstance(ua, np.ndarray) and abs(ua @ z[j]) <= geom_tol))))
        # prismatic j translating along u (or never rotating), no velocity of O_a along z_j, g ⊥ z_j:
        # |v_j|² = |v_rigid|² + q̇_j², so M_j splits into a mass fixed on a(j) and the Ia_j column
        along = u is None or (fixed_u and _parallel(z[j], u))
        perp = all(abs(z[k] @ z[j]) <= geom_tol for k in anc if model.sigma[k - 1] == PRISMATIC)
        out.m_to_ia.append(bool(prism and along and perp and (gdir is None or abs(gdir @ z[j]) <= geom_tol)))
        out.parallel_prismatic.append(bool(prism and fixed_u and _parallel(z[j], u)))
        if prism and fixed_u and not _parallel(z[j], u):
            uj = frames[j, :3, :3].T @ u
            out.ms_u_elim.append(int(np.argmax(np.abs(uj) * np.array([1.0, 1.0, 1.0 + 1e-6]))))
        else:
            out.ms_u_elim.append(None)
    return out


class _PolyGeometry:
    """The symbolic geometry as sparse polynomials over QQ (``sympy.polys.rings``).

    Every coefficient of the cascade is a polynomial in cos/sin of the non-special angles and
    the non-zero lengths (sums and products of ^aA_j and P_j entries), except the division of
    the MS-along-u rule, which gets one inverse generator per link.  Polynomial arithmetic is far
    cheaper than ``sympy.expand`` on expressions (tiago: cascade 5 s -> 0.3 s); :meth:`expr`
    gives the same expanded sympy expression (with cos(alpha<j>) etc. in place of the
    generators)."""

    def __init__(self, geo: _Geometry, kin: _Kinematics) -> None:
        gens: list[sp.Symbol] = []
        for row in geo.sym:
            gens += [x for x in row if isinstance(x, sp.Symbol) and x not in gens]
        n_geo = len(gens)
        self.inv_index = {j: n_geo + t for t, j in enumerate(
            j for j in range(1, len(geo.sym) + 1) if kin.ms_u_elim[j - 1] is not None)}
        gens += [sp.Symbol(f"_inv_u{j}") for j in self.inv_index]
        out = ring(gens, QQ)
        self.ring, self.gens = out[0], list(out[1:])
        self.exprs: list[Any] = [geo.trig.get(g, g) for g in gens]
        self.rows = [tuple(self._elem(x, gens) for x in row) for row in geo.sym]

    def _elem(self, x: Any, gens: list[sp.Symbol]) -> Any:
        return self.gens[gens.index(x)] if isinstance(x, sp.Symbol) else self.ring(x)

    def div(self, a: Any, b: Any, j: int) -> Any:
        """a / b: by a number exactly, else a × (inverse generator of link j) = a / b."""
        if b.is_ground:
            return a * (QQ(1) / b.LC)
        t = self.inv_index[j]
        self.exprs[t] = 1 / self.expr(b)
        return a * self.gens[t]

    def expr(self, c: Any) -> sp.Expr:
        """The sympy expression of a polynomial (expanded; cos/sin of the angles)."""
        if not hasattr(c, "as_expr"):
            return sp.sympify(c)
        return c.as_expr(*self.exprs) if self.gens else sp.sympify(c.as_expr())


# ----------------------------------------------------------------- linear forms
def _axpy(target: Form, src: Form, c: Any) -> None:
    """target += c * src (drops exact zeros)."""
    if isinstance(c, (int, float)) and c == 0:
        return
    if isinstance(c, sp.Expr):
        if c == 0:
            return
        c = sp.expand_mul(c)
    for k, v in src.items():
        term = c * v
        if isinstance(term, sp.Expr) and not term.is_Number:
            term = sp.expand_mul(term)  # sums of expanded terms stay expanded (like terms combine)
        val = target.get(k, 0) + term
        if val == 0:
            target.pop(k, None)
        else:
            target[k] = val


def _rigid_mass(g: list[Form], mass: Form, pv: tuple[Any, Any, Any]) -> None:
    """Add a point mass at P (in R_a) to link a: J += M(P·P I − P Pᵀ), MS += M P, M += M."""
    pp = pv[0] * pv[0] + pv[1] * pv[1] + pv[2] * pv[2]
    for (rr, cc), kk in _J_IDX.items():
        _axpy(g[kk], mass, (pp if rr == cc else 0) - pv[rr] * pv[cc])
    for c3, kk in enumerate((MX, MY, MZ)):
        _axpy(g[kk], mass, pv[c3])
    _axpy(g[M], mass, 1)


def _rotation(geo_j: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """^{a}A_j = Rot(z, γ) Rot(x, α) Rot(z, θ) (000 eq. 1; γ = 0 for a serial row) for a constant θ."""
    ca, sa, ct, st = geo_j[:4]
    r0 = ((ct, -st, 0), (ca * st, ca * ct, -sa), (sa * st, sa * ct, ca))
    cg, sg = geo_j[6:8]
    if cg == 1 and sg == 0:
        return r0
    return (tuple(cg * r0[0][c] - sg * r0[1][c] for c in range(3)),
            tuple(sg * r0[0][c] + cg * r0[1][c] for c in range(3)), r0[2])


def _u_in_frame(model: RobotData, geo: list[tuple[Any, ...]], kin: _Kinematics, j: int) -> list[Any]:
    """Rotation axis u of a prismatic link j expressed in R_j: z of its last revolute ancestor
    carried through the constant rotations of the prismatic joints in between."""
    k = kin.last_rev[j - 1]
    chain = []
    m = j
    while m != k:
        chain.append(m)
        m = int(model.antecedent[m - 1])
    v: list[Any] = [0, 0, 1]
    for m in reversed(chain):  # v_m = A_mᵀ v_{a(m)}
        rot = _rotation(geo[m - 1])
        v = [sum(rot[t][c] * v[t] for t in range(3)) for c in range(3)]
    return v


def _cascade(
    model: RobotData, geo: list[tuple[Any, ...]], kin: _Kinematics, div: Any = None
) -> tuple[list[list[Form]], list[list[int]]]:
    """Steps (b) and (a) of 000 §8 on one coefficient ring (floats, or polynomials of
    :class:`_PolyGeometry`); ``div(a, b, j)`` divides in that ring (default ``a / b``).

    Returns the grouped forms P[j][k] (k = 0..12) and the kept parameter kinds per link.
    """
    if div is None:
        def div(a: Any, b: Any, j: int) -> Any:
            return a / b

    n = model.dof
    p: list[list[Form]] = [[{13 * j + k: 1} for k in range(13)] for j in range(n)]
    kept: list[list[int]] = [[] for _ in range(n)]
    for j in range(n, 0, -1):
        i = j - 1
        a = int(model.antecedent[i])
        ca, sa, _, _, d, r = geo[i][:6]
        serial = _is_serial_row(geo[i])
        zv, pv, pz, pp = _row_vectors(geo[i])  # z_j, P_j in R_a (serial: (0, -sα, cα), (d, -r sα, r cα))
        f = p[i]
        u = kin.rot_dir[i]
        if model.sigma[i] != PRISMATIC:
            _axpy(f[XX], f[YY], -1)  # XXR_j = XX_j - YY_j (000 eq. 20, errata 2)
            if a > 0 and not serial:  # tree row (Khalil & Kleinfinger 1987): general z_j, P_j
                g = p[a - 1]
                for (rr, cc), kk in _J_IDX.items():
                    dl = 1 if rr == cc else 0
                    _axpy(g[kk], f[YY], dl - zv[rr] * zv[cc])  # YY_j (I - z zᵀ)
                    _axpy(g[kk], f[MZ], 2 * pz * dl - pv[rr] * zv[cc] - zv[rr] * pv[cc])
                    _axpy(g[kk], f[M], pp * dl - pv[rr] * pv[cc])  # M_j (|P|² I - P Pᵀ)
                for c3, kk in enumerate((MX, MY, MZ)):
                    _axpy(g[kk], f[MZ], zv[c3])
                    _axpy(g[kk], f[M], pv[c3])
                _axpy(g[M], f[M], 1)
            elif a > 0:
                zv = (0, -sa, ca)  # z_j in R_a; P_j = d x_a + r z_j
                # I - z zᵀ and I - x xᵀ written with cα², sα² as in eq. (20)
                perp = {(0, 0): 1, (0, 1): 0, (0, 2): 0, (1, 1): ca * ca, (1, 2): sa * ca, (2, 2): sa * sa}
                xz = {(0, 0): 0, (0, 1): -sa, (0, 2): ca, (1, 1): 0, (1, 2): 0, (2, 2): 0}  # x zᵀ + z xᵀ
                g = p[a - 1]
                for key, kk in _J_IDX.items():
                    xperp = 0 if key[0] == 0 else (1 if key[0] == key[1] else 0)
                    _axpy(g[kk], f[YY], perp[key])
                    _axpy(g[kk], f[MZ], 2 * r * perp[key] - d * xz[key])
                    _axpy(g[kk], f[M], d * d * xperp + r * r * perp[key] - d * r * xz[key])
                for c3, kk in enumerate((MX, MY, MZ)):
                    _axpy(g[kk], f[MZ], zv[c3])
                    _axpy(g[kk], f[M], (d, -r * sa, r * ca)[c3])
                _axpy(g[M], f[M], 1)
            if kin.fixed_point[i] is not None:  # J about C: XZ_j + s MX_j, YZ_j + s MY_j
                s_c = -sum(cr * geo[k - 1][5] + cb * geo[k - 1][8] for k, cr, cb in kin.fixed_point[i])
                _axpy(f[XZ], f[MX], s_c)
                _axpy(f[YZ], f[MY], s_c)
            if u is None:
                ks: list[int] = []
            elif isinstance(u, np.ndarray):
                ks = [ZZ] if kin.mxy_free[i] else [ZZ, MX, MY]
            else:
                ks = [XX, XY, XZ, YZ, ZZ] + ([] if kin.mxy_free[i] or kin.fixed_point[i] is not None else [MX, MY])
            if kin.ia_on_zz[i]:
                _axpy(f[ZZ], f[IA], 1)
            else:
                ks.append(IA)
        else:
            if a > 0:
                rot = _rotation(geo[i])  # ^aA_j
                g = p[a - 1]
                for (rr, cc), kk in _J_IDX.items():  # eq. (22): J_a += A J_j Aᵀ
                    for (k1, l1), src in _J_IDX.items():
                        coef = rot[rr][k1] * rot[cc][l1] + (rot[rr][l1] * rot[cc][k1] if k1 != l1 else 0)
                        _axpy(g[kk], f[src], coef)
                if kin.parallel_prismatic[i]:
                    for c_src in (MX, MY):  # MS_a += A MS_j, J_a += 2(P·m)I - P mᵀ - m Pᵀ
                        mv = tuple(rot[rr][c_src - MX] for rr in range(3))
                        pm = sum(pv[t] * mv[t] for t in range(3))
                        for c3, kk in enumerate((MX, MY, MZ)):
                            _axpy(g[kk], f[c_src], mv[c3])
                        for (rr, cc), kk in _J_IDX.items():
                            dl = 1 if rr == cc else 0
                            _axpy(g[kk], f[c_src], 2 * pm * dl - pv[rr] * mv[cc] - mv[rr] * pv[cc])
            ks = [M] if u is None or kin.parallel_prismatic[i] else [MX, MY, MZ, M]
            kstar = kin.ms_u_elim[i]
            if kstar is not None:  # MS_j along u has no effect: m ~ m - (m_k*/u_k*) u
                uj = _u_in_frame(model, geo, kin, j)
                for c3 in range(3):
                    if c3 != kstar:
                        _axpy(f[MX + c3], f[MX + kstar], div(-uj[c3], uj[kstar], j))
                ks.remove(MX + kstar)
            if kin.m_to_ia[i]:  # M_j = mass fixed on a(j) at P_j(r_j) + Ia_j column
                if a > 0:
                    _rigid_mass(p[a - 1], f[M], pv)
                _axpy(f[IA], f[M], 1)
                ks.remove(M)
            ks.append(IA)
        kept[i] = sorted(ks) + [FC, FV]
    return p, kept


# ----------------------------------------------------------------- main entry
def base_parameters(
    model: RobotData, samples: int | None = None, seed: int = 0, tol: float | None = None,
    identifiable_rtol: float | None = IDENTIFIABLE_RTOL,
) -> BaseParameters:
    """Base parameters of ``model`` by the closed-form method of 000 with a numerical step (c).

    ``samples``/``seed`` set the random states of the step (c) check, ``tol`` its relative
    rank tolerance (default ``p · eps``, module docstring).  Gravity is
    ``model.gravity`` (its direction matters, theorem 3).  ``identifiable_rtol``: the
    identifiability rank decision after step (c) (:func:`~.base_rank.identifiable_rank`, default
    1e-9 of σ_max, see :data:`~.base_rank.IDENTIFIABLE_RTOL`); ``None`` skips it (count = round-off rank).
    """
    _check_model(model)
    _check_options(samples, tol)
    if identifiable_rtol is not None and not 0.0 < identifiable_rtol < 1.0:
        raise ValueError(f"identifiable_rtol must be in (0, 1) or None, got {identifiable_rtol!r}")
    n = model.dof
    g0 = _gravity_r0(model, None)
    kin = _kinematics(model, g0)
    geo = _geometry(model)
    p_num, kept = _cascade(model, geo.num, kin)
    poly = _PolyGeometry(geo, kin)
    p_sym, kept_s = _cascade(model, poly.rows, kin, poly.div)
    assert kept == kept_s
    names_std = model.standard_parameter_names
    std_syms = [sp.Symbol(s, real=True) for s in names_std]
    cols, rel_num, rel_poly, names = [], [], [], []
    for i in range(n):
        for k in kept[i]:
            col = 13 * i + k
            fs = p_sym[i][k]
            rel_poly.append(sorted(fs.items()))
            rel_num.append(p_num[i][k])
            cols.append(col)
            grouped = set(fs) != {col} or fs[col] != 1
            names.append(f"{PARAM_KINDS[k]}{'R' if grouped else ''}{i + 1}")
    nb, ns = len(cols), 13 * n
    kmat = np.zeros((nb, ns))
    for b, fnum in enumerate(rel_num):
        for c_i, c in fnum.items():
            kmat[b, c_i] = float(c)
    cols_a = np.array(cols, dtype=int)
    method = "closed-form"
    notes: list[str] = []
    numerical_idx: list[int] = []
    support = [{c_i for c_i, _ in form} for form in rel_poly]  # standard columns in each relation
    added: list[list[tuple[Any, int]]] = [[] for _ in range(nb)]  # step (c): (coefficient, dropped b)
    # step (c): W == W[:, cols] K and independence of the candidate columns
    w = stacked_regressor(model, samples, seed)
    wn = max(float(np.abs(w).max()), 1e-300)
    resid = float(np.abs(w - w[:, cols_a] @ kmat).max()) / wn
    if resid > _RESIDUAL_TOL:
        notes.append(f"closed-form relations do not reproduce the regressor (residual {resid:.2e}); numerical fallback")
        return _numerical_fallback(model, w, rank_tolerance(w.shape, tol), notes)
    dw_all = column_weights(model)
    rank, thr = _rank_and_threshold(w * dw_all, rank_tolerance(w.shape, tol),
                                    gravity_reference(model, w.shape[0]))  # numerical_rank
    keep_l = list(range(nb))
    decided: list[int] = []  # base indices whose relation changed by the identifiability rank
    for stage in ("step (c)", "identifiability rank")[: 1 if identifiable_rtol is None else 2]:
        if stage != "step (c)":  # on what step (c) kept: directions below identifiable_rtol · σ_max
            rank, thr = identifiable_rank(w[:, cols_a[keep_l]] * dw_all[cols_a[keep_l]], thr, identifiable_rtol)
        kinds = [cols[b] % 13 for b in keep_l]
        rotor = [kinds[i] < IA and any(c % 13 == IA for c in support[b]) for i, b in enumerate(keep_l)]
        sub = cols_a[keep_l]
        keep_i, dep_i, weak_i = _numerical_grouping(w[:, sub] * dw_all[sub], dw_all[sub], thr, rank, kinds, rotor)
        weak = [keep_l[i] for i in weak_i]
        dep_s = {keep_l[d]: {keep_l[t]: c for t, c in coef.items()} for d, coef in dep_i.items()}
        tag = "step (c)" if stage == "step (c)" else f"identifiability rank (σ < {identifiable_rtol:g} σ_max)"
        for b in weak:
            notes.append(f"{tag}: {names[b]} is numerically dependent at the rank tolerance but cannot be grouped "
                         "without a fitted coefficient on a rotor inertia; kept as a separate parameter")
        if not dep_s:
            continue
        method += " + numerical step (c)" if stage == "step (c)" else " + identifiability rank"
        for b_dep, coef in dep_s.items():
            notes.append(f"{tag}: {names[b_dep]} depends on " + ", ".join(names[t] for t in coef)
                         if coef else f"{tag}: {names[b_dep]} has no effect at the rank tolerance")
            for b, c in coef.items():
                kmat[b] += c * kmat[b_dep]
                exact = isinstance(c, int)  # rotor inertia: exact integer coefficient
                added[b].append((sp.Integer(c) if exact else sp.Float(c, 15), b_dep))
                support[b] |= support[b_dep]
                names[b] = f"{PARAM_KINDS[cols[b] % 13]}R{cols[b] // 13 + 1}"
                if (not exact or b_dep in numerical_idx) and b not in numerical_idx:
                    numerical_idx.append(b)  # a fitted coefficient, here or in the relation grouped
                if (stage != "step (c)" or b_dep in decided) and b not in decided:
                    decided.append(b)
                if exact:
                    notes.append(f"{tag}: {names[b_dep]} is numerically equal to {c:+d} × the rotor column of "
                                 f"{names[b]} (the exact relation of the nearby special geometry): grouped with an "
                                 "integer coefficient")
        keep_l = [b for b in keep_l if b not in dep_s]
        if stage != "step (c)":
            notes.append(f"identifiability rank: the closed form gave {len(keep_l) + len(dep_s)} parameters for "
                         f"a rank of {rank} at σ > {identifiable_rtol:g} σ_max (length-scaled random states): "
                         + ", ".join(names[b] for b in dep_s) + " grouped into the others or without effect "
                         "(changed relations listed in rank_grouped)")
    numerical = [names[b] for b in numerical_idx if b in keep_l]
    rank_grouped = [names[b] for b in decided if b in keep_l]
    if numerical:
        notes.append("the closed-form rules missed a dependency at the rank tolerance: relations marked numerical")
    kmat = kmat[keep_l]
    cols_a = cols_a[keep_l]
    names = [names[b] for b in keep_l]
    present = set().union(*[support[b] for b in keep_l])
    eliminated = [s for c, s in enumerate(names_std) if c not in present]
    values = kmat @ model.standard_parameter_values

    def relations() -> list[sp.Expr]:
        base: dict[int, sp.Expr] = {}

        def rel(b: int) -> sp.Expr:
            if b not in base:
                base[b] = sp.Add(*[poly.expr(c) * std_syms[c_i] for c_i, c in rel_poly[b]])
            return base[b]

        def full(b: int) -> sp.Expr:  # a grouped relation may itself have grouped one (two stages)
            return sp.Add(rel(b), *[c * full(d) for c, d in added[b]]) if added[b] else rel(b)

        return [full(b) for b in keep_l]

    return BaseParameters(names, values, relations, eliminated, kmat, cols_a, method, model, numerical, notes,
                          geo.subs, rank_grouped)


def _numerical_fallback(model: RobotData, w: np.ndarray, rtol: float, notes: list[str]) -> BaseParameters:
    """Whole-model numerical grouping (used only if the closed form fails), :func:`_numerical_grouping`
    on all standard columns: inertial columns grouped among themselves (Ia only with an exact integer
    coefficient); Ia, Fc, Fv stay separate parameters."""
    names_std = model.standard_parameter_names
    std_syms = [sp.Symbol(s, real=True) for s in names_std]
    dw = column_weights(model)
    ws = w * dw
    rank, thr = _rank_and_threshold(ws, rtol, gravity_reference(model, w.shape[0]))
    keep, dep, weak = _numerical_grouping(ws, dw, thr, rank, [c % 13 for c in range(w.shape[1])], [False] * w.shape[1])
    row = {c: i for i, c in enumerate(keep)}
    kmat = np.zeros((len(keep), w.shape[1]))
    for c in keep:
        kmat[row[c], c] = 1.0
    for c_dep, coef in dep.items():
        for c, v in coef.items():
            kmat[row[c], c_dep] += v
    cols = np.array(keep, dtype=int)
    rels = [sp.Add(*[(sp.Integer(int(v)) if float(v).is_integer() else sp.Float(v, 15)) * std_syms[c]
                     for c, v in enumerate(r) if v != 0.0]) for r in kmat]
    names = [f"{names_std[c][:-len(str(c // 13 + 1))]}R{c // 13 + 1}" for c in cols]
    elim = [names_std[c] for c in range(w.shape[1]) if not np.any(kmat[:, c] != 0.0)]
    notes += [f"{names_std[c]} is numerically dependent but kept (rotor inertia)" for c in weak]
    return BaseParameters(names, kmat @ model.standard_parameter_values, rels, elim, kmat, cols, "numerical",
                          model, list(names), notes)


# ----------------------------------------------------------------- CLI
def base_params_cli(args: Any, model: RobotData) -> int:
    """``robot-dynamics base-params URDF [--base L] [--tip L] [--json]`` on the loaded ``model`` (the CLI
    loads it): table name, relation, value."""
    import json

    bp = base_parameters(model)
    if getattr(args, "json", False):
        print(json.dumps(bp.to_dict(), indent=2))
        return 0
    print(f"robot {model.name!r}: {model.dof} joints, {bp.count} base parameters "
          f"({bp.inertial_count} inertial + {bp.count - bp.inertial_count} Ia/Fc/Fv), method: {bp.method}")
    print(bp.table())
    print("no effect: " + (", ".join(bp.eliminated) if bp.eliminated else "none"))
    for note in bp.notes:
        print("note: " + note)
    return 0
