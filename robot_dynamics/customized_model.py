"""Customized symbolic Newton–Euler inverse dynamic model (001 §7.5, SYMORO style).

The recursion of 001 §7.4.3 (eqs. 7.51–7.61) is expanded into scalar assignments
for one given robot.  Every element of a vector or matrix that contains an
operation becomes an intermediate variable named like the seed's SYMORO output
(``WI12``, ``W33``, ``WP13``, ``DV123``, ``U112``, ``VSP13``, ``VP13``, ``F13``,
``PIS23``, ``No13``, ``FDI14``, ``E13``, ``N13``, ``GAM1``; 001 Example 7.4 and
Appendix "MOCOM II"); elements without an operation are propagated as they are,
so multiplications by 0 and ±1 and additions of 0 disappear (001 §7.5.2).

* Constant expressions of the geometric and inertial parameters are hoisted
  (the seed's ``*`` lines) and not counted.
* Identical right-hand sides are computed once (hash-consing common subexpressions).
* Variables without effect on the torques are removed by a backward scan.
* Parameters: ``"standard"`` (10 inertial parameters per link), or ``"base"``
  (001 §7.5.3: parameters without effect removed, grouped ones replaced by their
  regrouped value).  ``simplified=True`` additionally treats the inertial
  parameters whose value is zero in the model as structural zeros (001 Table 7.5
  note: diagonal inertia tensors and first moments with zero components).

Operation counts follow the seed: ``a*b*c`` is 2 multiplications, ``x**2`` one,
``-x`` and ``±1·x`` none, ``a + b - c`` two additions; sin/cos and sign are
counted apart; hoisted constants are free.

The program is in MDH coordinates (``QPj``/``QDPj`` the MDH velocity and
acceleration, ``Sj``/``Cj`` the sine/cosine of θ_j, ``Qj`` the prismatic r_j,
``FXn … CZn`` the wrench exerted by link n on the environment, in R_n about O_n).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from .mdh import PRISMATIC, ROUND_OFF_TOL

__all__ = [
    "CustomizedModel",
    "Statement",
    "base_parameter_choice",
    "count_operations",
    "customized_gravity_torques",
    "customized_inertia_matrix",
    "customized_inverse_dynamics",
    "customized_regressor",
]

GENERATOR_VERSION = "10"  # 9: tree rows (gamma, b); C: zero outputs filled once, restrict
_ZERO = sp.Integer(0)
_ONE = sp.Integer(1)


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


# --------------------------------------------------------------- counting
def count_operations(expr: sp.Expr) -> tuple[int, int, int]:
    """(multiplications, additions, signs) of one right-hand side, counted as the seed does."""
    if expr.is_Atom:
        return 0, 0, 0
    if expr.is_Add:
        m = a = s = 0
        for t in expr.args:
            mm, aa, ss = count_operations(t)
            m, a, s = m + mm, a + aa, s + ss
        return m, a + len(expr.args) - 1, s
    if expr.is_Mul:
        coeff, factors = expr.as_coeff_mul()
        m = len(factors) - 1 + (0 if abs(coeff) == 1 else 1)
        a = s = 0
        for f in factors:
            mm, aa, ss = count_operations(f)
            m, a, s = m + mm, a + aa, s + ss
        return m, a, s
    if expr.is_Pow:
        k = int(expr.exp)
        if k < 1 or k != expr.exp:
            raise ValueError(f"unsupported power {expr}")
        mm, aa, ss = count_operations(expr.base)
        return mm + k - 1, aa, ss
    if isinstance(expr, sp.sign):
        mm, aa, ss = count_operations(expr.args[0])
        return mm, aa, ss + 1
    raise ValueError(f"unsupported expression {expr!r}")


# --------------------------------------------------------------- program
@dataclass
class Statement:
    """``name = expr``; ``constant`` statements (the seed's ``*`` lines) depend on parameters only."""

    name: str
    expr: sp.Expr
    constant: bool = False

    @property
    def symbol(self) -> sp.Symbol:
        return _sym(self.name)


@dataclass
class CustomizedModel:
    """A customized scalar program computing the joint torques ``GAM1..GAMn`` (MDH coordinates).

    ``statements`` lists the constants (``constant=True``, hoisted) and the run-time
    assignments in order; ``outputs`` are the torque expressions (usually symbols).
    ``values`` gives the numeric value of every parameter symbol; ``joints`` gives
    per joint (sigma, sign, offset) to map URDF inputs to ``Sj, Cj, Qj, QPj, QDPj``.
    """

    name: str
    dof: int
    statements: list[Statement]
    outputs: list[sp.Expr]
    values: dict[str, float]
    joints: list[tuple[int, float, float]]
    parameters: str
    simplified: bool
    wrench: bool
    kind: str = "inverse_dynamics"
    output_shape: tuple[int, ...] = ()
    parameter_names: list[str] = field(default_factory=list)
    generation_time: float = 0.0

    # ---- counts
    @property
    def constants(self) -> list[Statement]:
        return [s for s in self.statements if s.constant]

    @property
    def body(self) -> list[Statement]:
        return [s for s in self.statements if not s.constant]

    def counts(self) -> dict[str, int]:
        """Operation counts of the run-time part: multiplications, additions, sin/cos, sign."""
        m = a = s = 0
        for st in self.body:
            mm, aa, ss = count_operations(st.expr)
            m, a, s = m + mm, a + aa, s + ss
        for o in self.outputs:
            mm, aa, ss = count_operations(o)
            m, a, s = m + mm, a + aa, s + ss
        used = self.used_inputs()
        sincos = sum(1 for x in used if x[:1] in ("S", "C") and x[1:].isdigit())
        return {"multiplications": m, "additions": a, "sin_cos": sincos, "sign": s, "dof": self.dof}

    def used_inputs(self) -> set[str]:
        """Names of the run-time input atoms used by the program."""
        defined = {s.name for s in self.statements} | set(self.values)
        used: set[str] = set()
        for e in [s.expr for s in self.body] + list(self.outputs):
            used |= {str(x) for x in e.free_symbols}
        return used - defined

    def constant_values(self) -> dict[str, float]:
        """Numeric values of the parameters and of the hoisted constants."""
        vals = dict(self.values)
        for st in self.constants:
            vals[st.name] = float(st.expr.evalf(subs={_sym(k): v for k, v in vals.items()}, n=17))
        return vals

    def to_text(self) -> str:
        """SYMORO-like listing; constant lines are marked with ``*``."""
        lines = [f"{'*' if s.constant else ''}{s.name}={s.expr}" for s in self.statements]
        names = [f"GAM{j}" for j in range(1, len(self.outputs) + 1)] if self.kind == "inverse_dynamics" else None
        for k, o in enumerate(self.outputs):
            lhs = names[k] if names else f"OUT{k}"
            if str(o) != lhs:
                lines.append(f"{lhs}={o}")
        c = self.counts()
        lines.append(f"# {c['multiplications']} multiplications, {c['additions']} additions, {c['sin_cos']} sin/cos")
        return "\n".join(lines)

    def equations(self) -> list[sp.Eq]:
        """The program as sympy equations (constants first)."""
        return [sp.Eq(s.symbol, s.expr) for s in self.statements]


# --------------------------------------------------------------- builder
class _Builder:
    """Emit scalar assignments while propagating the known zeros and ±1."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []
        self.const_names: set[str] = set()
        self.values: dict[str, float] = {}
        self._rhs: dict[sp.Expr, sp.Symbol] = {}
        self._names: set[str] = set()
        self._k = 0

    # ---- atoms
    def param(self, name: str, value: float) -> sp.Symbol:
        self.const_names.add(name)
        self.values[name] = float(value)
        return _sym(name)

    def is_const(self, e: sp.Expr) -> bool:
        return all(str(s) in self.const_names for s in e.free_symbols)

    @staticmethod
    def _atomic(e: sp.Expr) -> bool:
        return e.is_Atom or (e.is_Mul and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol)

    def _fresh(self, name: str) -> str:
        base, k = name, 1
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    # ---- constants
    def const(self, e: sp.Expr, name: str | None = None) -> sp.Expr:
        """Hoist a constant expression; returns an atom (or -atom)."""
        e = sp.expand(e) if not e.is_Atom else e
        if self._atomic(e):
            return e
        if e.could_extract_minus_sign():
            return -self.const(-e, name)
        if e in self._rhs:
            return self._rhs[e]
        self._k += 1
        nm = self._fresh(name or f"K{self._k}")
        s = _sym(nm)
        self.statements.append(Statement(nm, e, True))
        self.const_names.add(nm)
        self._rhs[e] = s
        return s

    def _hoist(self, e: sp.Expr) -> sp.Expr:
        """Replace constant composite sub-products by hoisted constants."""
        if e.is_Atom:
            return e
        if e.is_Add:
            const_terms = [t for t in e.args if self.is_const(t)]
            rest = [self._hoist(t) for t in e.args if not self.is_const(t)]
            c = self.const(sp.Add(*const_terms)) if const_terms else _ZERO
            return sp.Add(c, *rest)
        if e.is_Mul:
            consts = [f for f in e.args if self.is_const(f)]
            others = [self._hoist(f) for f in e.args if not self.is_const(f)]
            c = sp.Mul(*consts)
            if not (c.is_Number or self._atomic(c)):
                num, rest = c.as_coeff_Mul()
                c = num * self.const(rest) if abs(num) == 1 else self.const(c)
            return sp.Mul(c, *others)
        if e.is_Pow:
            return sp.Pow(self._hoist(e.base), e.exp)
        if isinstance(e, sp.sign):
            return sp.sign(self._hoist(e.args[0]))
        return e

    # ---- variables
    def var(self, name: str, e: sp.Expr) -> sp.Expr:
        """Assign ``e`` to a new intermediate variable if it contains an operation."""
        e = sp.sympify(e)
        if self._atomic(e):
            return e
        if self.is_const(e):
            return self.const(e, name)
        e = self._hoist(e)
        if self._atomic(e):
            return e
        if e in self._rhs:
            return self._rhs[e]
        neg = -e
        if neg in self._rhs:
            return -self._rhs[neg]
        nm = self._fresh(name)
        s = _sym(nm)
        self.statements.append(Statement(nm, e))
        self._rhs[e] = s
        return s

    def vec(self, prefix: str, j: int, v: Iterable[sp.Expr]) -> list[sp.Expr]:
        return [self.var(f"{prefix}{i}{j}", x) for i, x in enumerate(v, start=1)]


def _dead_code_elimination(statements: list[Statement], outputs: list[sp.Expr]) -> list[Statement]:
    """Scan from the end and keep the assignments that the outputs need (001 §7.5.2)."""
    needed: set[sp.Symbol] = set()
    for o in outputs:
        needed |= o.free_symbols
    kept: list[Statement] = []
    for st in reversed(statements):
        s = st.symbol
        if s in needed:
            kept.append(st)
            needed |= st.expr.free_symbols
    return kept[::-1]


# --------------------------------------------------------------- geometry helpers
def _exact_trig(angle: float) -> tuple[sp.Expr, sp.Expr] | None:
    """cos, sin as exact integers when ``angle`` is a multiple of π/2 to round-off (``ROUND_OFF_TOL``, the
    tolerance of the URDF conversion and the base parameters)."""
    kr = round(angle / (math.pi / 2))
    if abs(angle - kr * (math.pi / 2)) > ROUND_OFF_TOL:
        return None
    return sp.Integer([1, 0, -1, 0][kr % 4]), sp.Integer([0, 1, 0, -1][kr % 4])


class _Geometry:
    """^{a(j)}R_j = Rot(z, γ) Rot(x, α) Rot(z, θ) and ^{a(j)}P_j with exact zeros.

    A tree row (Khalil & Kleinfinger 1986) adds Rot(z, γ_j) Trans(z, b_j) before the serial
    row (see :mod:`robot_dynamics.mdh`); the γ and b terms are emitted only when they are
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
            r = _sym(f"Q{j}")
        else:
            self.c, self.s = _sym(f"C{j}"), _sym(f"S{j}")
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

    def _trig(self, angle: float, cname: str, sname: str) -> tuple[sp.Expr, sp.Expr]:
        """cos, sin of a constant angle: exact for a multiple of π/2, else parameters ``CNj``, ``SNj``."""
        ex = _exact_trig(angle)
        if ex is not None:
            return ex
        return self.b.param(f"{cname}{self.j}", math.cos(angle)), self.b.param(f"{sname}{self.j}", math.sin(angle))

    def rt(self, v: list[sp.Expr], prefix: str) -> list[sp.Expr]:
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

    def r(self, v: list[sp.Expr], prefix: str) -> list[sp.Expr]:
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


def _cross(a: list[sp.Expr], b: list[sp.Expr]) -> list[sp.Expr]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


# --------------------------------------------------------------- base parameters
@dataclass
class BaseParameterChoice:
    """Numeric base parameters: kept standard columns, their regrouped values and relations."""

    kept: list[str]
    values: np.ndarray
    grouped: dict[str, dict[str, float]]
    eliminated: list[str]


def base_parameter_choice(model: Any, seed: int = 0) -> BaseParameterChoice:
    """Select base parameters among the standard ones (001 §7.5.3, 000 eq. 20).

    Columns of the standard regressor at random states are taken greedily in the
    order XX XY XZ YZ ZZ MX MY (all links), Ia Fc Fv, then YY MZ M, so that the
    parameters eliminated are those the seed regroups (YY_j, MZ_j, M_j of a revolute
    joint).  The relation ``β = p_B + K p_D`` is solved by least squares on the
    sampled regressor (exact up to rounding; coefficients below 1e-9 are zeroed).
    """
    from .inverse_dynamics import regressor

    n = model.dof
    rng = np.random.default_rng(seed)
    ns = max(12, 3 * n)
    q = rng.uniform(-math.pi, math.pi, (ns, n))
    q = np.where(model.sigma == PRISMATIC, rng.uniform(-1.0, 1.0, (ns, n)), q)
    w = regressor(model, q, rng.normal(size=(ns, n)), rng.normal(size=(ns, n)))
    w = w.reshape(ns * n, 13 * n)
    names = model.standard_parameter_names
    idx = {nm: k for k, nm in enumerate(names)}
    first = ("XX", "XY", "XZ", "YZ", "ZZ", "MX", "MY")
    order = [f"{k}{j}" for j in range(1, n + 1) for k in first]
    order += [f"{k}{j}" for j in range(1, n + 1) for k in ("Ia", "Fc", "Fv")]
    order += [f"{k}{j}" for j in range(n, 0, -1) for k in ("M", "MZ", "YY")]
    scale = np.linalg.norm(w, axis=0)
    tol = 1e-9 * max(scale.max(), 1.0)
    basis = np.zeros((w.shape[0], 0))
    kept: list[str] = []
    for nm in order:
        col = w[:, idx[nm]]
        if scale[idx[nm]] <= tol:
            continue
        res = col - basis @ (basis.T @ col)
        res = res - basis @ (basis.T @ res)
        if np.linalg.norm(res) > 1e-7 * scale[idx[nm]]:
            basis = np.column_stack([basis, res / np.linalg.norm(res)])
            kept.append(nm)
    kept.sort(key=lambda x: idx[x])
    dep = [nm for nm in names if nm not in kept]
    wb = w[:, [idx[k] for k in kept]]
    wd = w[:, [idx[k] for k in dep]]
    kmat = np.linalg.lstsq(wb, wd, rcond=None)[0] if dep else np.zeros((len(kept), 0))
    kmat[np.abs(kmat) < 1e-9] = 0.0
    p = model.standard_parameter_values
    values = p[[idx[k] for k in kept]] + kmat @ p[[idx[k] for k in dep]]
    grouped = {
        kb: {dep[c]: float(kmat[r, c]) for c in range(len(dep)) if kmat[r, c] != 0.0}
        for r, kb in enumerate(kept)
    }
    eliminated = list(dep)
    return BaseParameterChoice(kept, values, {k: v for k, v in grouped.items() if v}, eliminated)


def _parameter_symbol_name(std_name: str, grouped: bool) -> str:
    """'XX2' -> 'XXR2' for a regrouped parameter (000 eq. 20 naming)."""
    k = std_name.rstrip("0123456789")
    j = std_name[len(k):]
    return f"{k}R{j}" if grouped else std_name


# --------------------------------------------------------------- generation
def _closed_form_base_parameters(model: Any) -> dict[str, tuple[str, float]] | None:
    """Standard name -> (base name, value) from :mod:`robot_dynamics.base_parameters` (000's
    closed-form method: the column carrying each base parameter), or None if unavailable."""
    try:
        from .base_parameters import base_parameters
    except ImportError:
        return None
    try:
        bp = base_parameters(model)
    except (ValueError, NotImplementedError, np.linalg.LinAlgError):
        return None
    names = model.standard_parameter_names
    return {names[int(c)]: (str(nm), float(v)) for c, nm, v in zip(bp.columns, bp.names, bp.values, strict=True)}


def _parameter_table(model: Any, parameters: str, simplified: bool, all_symbols: bool) -> dict[str, tuple[str, float]]:
    """Standard name -> (symbol name, value) of the parameters kept in the program."""
    names = model.standard_parameter_names
    if parameters == "standard":
        vals = dict(zip(names, model.standard_parameter_values, strict=True))
        table = {nm: (nm, float(v)) for nm, v in vals.items()}
        if not all_symbols:
            # rotor inertia and friction enter only if present (001 §7.5.3: friction apart)
            table = {k: t for k, t in table.items() if not (k[:2] in ("Ia", "Fc", "Fv") and t[1] == 0.0)}
    elif parameters == "base":
        table = _closed_form_base_parameters(model)
        if table is None:
            ch = base_parameter_choice(model)
            table = {nm: (_parameter_symbol_name(nm, nm in ch.grouped), float(v)) for nm, v in zip(
                ch.kept, ch.values, strict=True)}
        if not all_symbols:
            table = {k: t for k, t in table.items() if not (k[:2] in ("Fc", "Fv") and t[1] == 0.0)}
    else:
        raise ValueError(f"parameters must be 'standard' or 'base', got {parameters!r}")
    if simplified:
        ref = max([abs(v) for _, v in table.values()] + [1.0])
        table = {k: t for k, t in table.items() if abs(t[1]) > 1e-12 * ref}
    return table


def _gravity_r0(model: Any) -> np.ndarray:
    g = model.base_transform[:3, :3].T @ model.gravity
    g[np.abs(g) <= ROUND_OFF_TOL * max(np.linalg.norm(g), 1.0)] = 0.0  # round-off of the base rotation
    return g


def _newton_euler(
    model: Any, b: _Builder, par: dict[str, sp.Expr], wrench: bool,
    progress: Callable[[str], None] | None,
    joint_rates: Callable[[int], tuple[sp.Expr, sp.Expr]] | None = None,
    gravity: bool = True,
) -> list[sp.Expr]:
    """Forward/backward recursions (001 eqs. 7.51–7.61) on scalars; returns GAM1..GAMn.

    ``joint_rates(j)`` gives (q̇_j, q̈_j) (default the symbols QPj, QDPj); numbers there
    specialize the recursion (e.g. 001 eq. 7.64 for a column of A)."""
    n = model.dof

    def rates(j: int) -> tuple[sp.Expr, sp.Expr]:
        return joint_rates(j) if joint_rates else (_sym(f"QP{j}"), _sym(f"QDP{j}"))

    ant = [int(a) for a in model.antecedent]
    z = _ZERO

    def p(k: str, j: int) -> sp.Expr:
        return par.get(f"{k}{j}", z)

    g = _gravity_r0(model) if gravity else np.zeros(3)
    gs = [b.param(f"G{i}", g[i - 1]) if g[i - 1] != 0.0 else z for i in (1, 2, 3)]
    w: dict[int, list[sp.Expr]] = {0: [z, z, z]}
    wp: dict[int, list[sp.Expr]] = {0: [z, z, z]}
    vp: dict[int, list[sp.Expr]] = {0: [-x for x in gs]}
    u: dict[int, list[list[sp.Expr]]] = {0: [[z] * 3 for _ in range(3)]}
    geo: dict[int, _Geometry] = {}
    f_link: dict[int, list[sp.Expr]] = {}
    n_link: dict[int, list[sp.Expr]] = {}
    for j in range(1, n + 1):
        if progress:
            progress(f"forward recursion: link {j}/{n}")
        a = ant[j - 1]
        gj = geo[j] = _Geometry(b, model, j)
        qp, qdp = rates(j)
        wi = b.vec("WI", j, gj.rt(w[a], "WI"))  # 7.51
        if gj.prismatic:
            wj = wi
            wpj = b.vec("WP", j, gj.rt(wp[a], "WP"))
        else:
            wj = [wi[0], wi[1], b.var(f"W3{j}", wi[2] + qp)]  # 7.52
            r = gj.rt(wp[a], "WP")
            wpj = b.vec("WP", j, [r[0] + qp * wi[1], r[1] - qp * wi[0], r[2] + qdp])  # 7.53
        w[j], wp[j] = wj, wpj
        # DV_ik = ω_i ω_k, DV_ii = -ω_i² and U = ω̂̇ + ω̂ω̂ (7.57)
        dv = [[z] * 3 for _ in range(3)]
        for i in range(3):
            dv[i][i] = b.var(f"DV{i + 1}{i + 1}{j}", -wj[i] ** 2)
            for k in range(i + 1, 3):
                dv[i][k] = dv[k][i] = b.var(f"DV{i + 1}{k + 1}{j}", wj[i] * wj[k])
        uj = [
            [dv[1][1] + dv[2][2], dv[0][1] - wpj[2], dv[0][2] + wpj[1]],
            [dv[0][1] + wpj[2], dv[0][0] + dv[2][2], dv[1][2] - wpj[0]],
            [dv[0][2] - wpj[1], dv[1][2] + wpj[0], dv[0][0] + dv[1][1]],
        ]
        u[j] = [[b.var(f"U{r + 1}{c + 1}{j}", uj[r][c]) for c in range(3)] for r in range(3)]
        # v̇_j (7.54) through VSP = U_{a} P_j + v̇_{a}
        pj = gj.p
        vsp = b.vec("VSP", j, [sum((u[a][r][c] * pj[c] for c in range(3)), vp[a][r]) for r in range(3)])
        vr = gj.rt(vsp, "VP")
        if gj.prismatic:
            vr = [vr[0] + 2 * qp * wi[1], vr[1] - 2 * qp * wi[0], vr[2] + qdp]
        vp[j] = b.vec("VP", j, vr)
        # link wrench at O_j (7.55, 7.56) with the DV expansion of ω × (J ω)
        ms = [p("MX", j), p("MY", j), p("MZ", j)]
        m = p("M", j)
        f_link[j] = b.vec("F", j, [m * vp[j][r] + sum(u[j][r][c] * ms[c] for c in range(3)) for r in range(3)])
        xx, xy, xz, yy, yz, zz = (p(k, j) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
        pis1, pis2, pis3 = b.const(zz - yy, f"PIS1{j}"), b.const(xx - zz, f"PIS2{j}"), b.const(yy - xx, f"PIS3{j}")
        d11, d22, d33 = dv[0][0], dv[1][1], dv[2][2]
        d12, d13, d23 = dv[0][1], dv[0][2], dv[1][2]
        wp1, wp2, wp3 = wpj
        # J ω̇ + ω × (J ω) with the U elements: ω̇_2 - ω_1ω_3 = -U31, ω̇_3 + ω_1ω_2 = U21, ...
        uu = u[j]
        no = [
            xx * wp1 - xy * uu[2][0] + xz * uu[1][0] + yz * (d33 - d22) + pis1 * d23,
            yy * wp2 + xy * uu[2][1] - yz * uu[0][1] + xz * (d11 - d33) + pis2 * d13,
            zz * wp3 - xz * uu[1][2] + yz * uu[0][2] + xy * (d22 - d11) + pis3 * d12,
        ]
        if xy == 0 and xz == 0 and yz == 0:
            no = [xx * wp1 + pis1 * d23, yy * wp2 + pis2 * d13, zz * wp3 + pis3 * d12]
        n_link[j] = b.vec("No", j, no)
    # backward recursion (7.58–7.61)
    children: dict[int, list[int]] = {j: [] for j in range(n + 1)}
    for j in range(1, n + 1):
        children[ant[j - 1]].append(j)
    e_tot: dict[int, list[sp.Expr]] = {}
    n_tot: dict[int, list[sp.Expr]] = {}
    fdi: dict[int, list[sp.Expr]] = {}
    gam: list[sp.Expr] = [z] * n
    for j in range(n, 0, -1):
        if progress:
            progress(f"backward recursion: link {j}/{n}")
        ej = list(f_link[j])
        nj = list(n_link[j])
        ms = [p("MX", j), p("MY", j), p("MZ", j)]
        msv = _cross(ms, vp[j])
        nj = [nj[r] + msv[r] for r in range(3)]
        if wrench and j == n:
            ej = [ej[0] + _sym(f"FX{j}"), ej[1] + _sym(f"FY{j}"), ej[2] + _sym(f"FZ{j}")]
            nj = [nj[0] + _sym(f"CX{j}"), nj[1] + _sym(f"CY{j}"), nj[2] + _sym(f"CZ{j}")]
        for k in children[j]:
            gk = geo[k]
            rn = gk.r(n_tot[k], "N")
            pf = _cross(gk.p, fdi[k])
            ej = [ej[r] + fdi[k][r] for r in range(3)]
            nj = [nj[r] + rn[r] + pf[r] for r in range(3)]
        e_tot[j] = b.vec("E", j, ej)
        n_tot[j] = b.vec("N", j, nj)
        fdi[j] = b.vec("FDI", j, geo[j].r(e_tot[j], "FDI"))
        qp, qdp = rates(j)
        tau = e_tot[j][2] if geo[j].prismatic else n_tot[j][2]
        tau = tau + p("Ia", j) * qdp + p("Fv", j) * qp + p("Fc", j) * sp.sign(qp)
        gam[j - 1] = b.var(f"GAM{j}", tau)
    return gam


def _joint_inputs(model: Any) -> list[tuple[int, float, float]]:
    return [(int(jt.sigma), float(jt.sign), float(jt.offset)) for jt in model.joints]


def customized_inverse_dynamics(
    model: Any,
    parameters: str = "base",
    simplified: bool = False,
    wrench: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized symbolic inverse dynamic model of ``model`` (001 §7.5).

    ``parameters``: ``"base"`` (default) or ``"standard"``; ``simplified``: zero-valued
    inertial parameters are structural zeros; ``wrench``: include the wrench
    ``FXn … CZn`` exerted by link n on the environment (as in the seed appendix).
    Rotor inertia and friction terms are included when non-zero in the model.
    """
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    gam = _newton_euler(model, b, par, wrench, progress)
    if progress:
        progress("eliminating dead variables")
    stmts = _dead_code_elimination(b.statements, gam)
    used = set().union(*[s.expr.free_symbols for s in stmts], *[g.free_symbols for g in gam])
    values = {k: v for k, v in b.values.items() if _sym(k) in used}
    return CustomizedModel(
        name=model.name, dof=model.dof, statements=stmts, outputs=gam, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=wrench, output_shape=(model.dof,),
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
    )


def _specialized(
    model: Any, kind: str, parameters: str, simplified: bool, progress: Callable[[str], None] | None,
) -> CustomizedModel:
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    n = model.dof
    if kind == "gravity":
        outs = _newton_euler(model, b, par, False, progress, joint_rates=lambda j: (_ZERO, _ZERO))
        shape: tuple[int, ...] = (n,)
    else:  # inertia matrix: column i is NE with q̇ = 0, g = 0, q̈ = e_i (001 eq. 7.64, errata 34)
        cols = []
        for i in range(1, n + 1):
            if progress:
                progress(f"inertia matrix: column {i}/{n}")
            cols.append(_newton_euler(model, b, par, False, None, gravity=False,
                                      joint_rates=lambda j, i=i: (_ZERO, _ONE if j == i else _ZERO)))
        # lower triangle from column i (rows j >= i: the backward recursion stops at link i), mirrored
        outs = [cols[min(r, c)][max(r, c)] for r in range(n) for c in range(n)]
        shape = (n, n)
    stmts = _dead_code_elimination(b.statements, outs)
    used = set().union(*[s.expr.free_symbols for s in stmts], *[o.free_symbols for o in outs])
    values = {k: v for k, v in b.values.items() if _sym(k) in used}
    return CustomizedModel(
        name=model.name, dof=n, statements=stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=False, kind=kind, output_shape=shape,
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
    )


def customized_gravity_torques(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the gravity torques Q(q) (NE with q̇ = q̈ = 0)."""
    return _specialized(model, "gravity", parameters, simplified, progress)


def customized_inertia_matrix(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the inertia matrix A(q) incl. rotor inertias, by NE columns (001 eq. 7.64)."""
    return _specialized(model, "inertia_matrix", parameters, simplified, progress)


def customized_regressor(model: Any, progress: Callable[[str], None] | None = None) -> CustomizedModel:
    """Customized program of the standard-parameter regressor W (n, 13n), URDF column order.

    The inverse dynamic program is generated with every standard parameter as a
    symbol and differentiated statement by statement (forward mode) with respect
    to each parameter; the model is linear in them (001 eq. 9.3), so the
    derivatives are the regressor columns.  Outputs are row-major W entries in
    MDH torque sign (the caller applies ``sign_j`` to row j).
    """
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, "standard", False, all_symbols=True)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    gam = _newton_euler(model, b, par, False, progress)
    stmts = _dead_code_elimination(b.statements, gam)
    psyms = [par[nm] for nm in model.standard_parameter_names]
    pset = set(psyms)
    # derivatives of each statement with respect to each parameter
    deriv: dict[sp.Symbol, dict[sp.Symbol, sp.Expr]] = {}
    const_map = {s.symbol: s.expr for s in stmts if s.constant}
    db = _Builder()
    db.const_names = set(b.const_names)
    db.values = dict(b.values)
    db._names = {s.name for s in stmts}
    body = [s for s in stmts if not s.constant]
    for k, st in enumerate(body):
        if progress and k % 50 == 0:
            progress(f"regressor: differentiating statement {k}/{len(body)}")
        e = st.expr.xreplace(const_map) if st.expr.free_symbols & set(const_map) else st.expr
        direct = e.free_symbols & pset
        via = [v for v in e.free_symbols if v in deriv]
        if not direct and not via:
            continue
        targets: set[sp.Symbol] = set(direct)
        for v in via:
            targets |= set(deriv[v])
        dd: dict[sp.Symbol, sp.Expr] = {}
        for p in targets:
            de = e.diff(p) if p in direct else _ZERO
            for v in via:
                dv = deriv[v].get(p)
                if dv is not None:
                    de = de + e.diff(v) * dv
            de = sp.expand(de) if de.is_Add or de.is_Mul else de
            if de != 0:
                dd[p] = db.var(f"d{st.name}_{p}", de)
        if dd:
            deriv[st.symbol] = dd
    n = model.dof
    outs: list[sp.Expr] = []
    for j in range(n):
        g = gam[j]
        for p in psyms:
            if g == 0:
                outs.append(_ZERO)
            elif g.is_Symbol and g in deriv:
                outs.append(deriv[g].get(p, _ZERO))
            else:
                outs.append(sp.expand(g.diff(p)))
    all_stmts = [s for s in stmts if not s.constant] + db.statements
    all_stmts = [s for s in stmts if s.constant] + all_stmts
    all_stmts = _dead_code_elimination(all_stmts, outs)
    used = set().union(*[s.expr.free_symbols for s in all_stmts], *[o.free_symbols for o in outs])
    values = {k: v for k, v in db.values.items() if _sym(k) in used}
    return CustomizedModel(
        name=model.name, dof=n, statements=all_stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters="standard", simplified=False, wrench=False, kind="regressor", output_shape=(n, 13 * n),
        parameter_names=[str(p) for p in psyms], generation_time=time.perf_counter() - t0,
    )
