"""Customized symbolic models (001 §7.5, SYMORO style): inverse dynamics, gravity, inertia matrix, regressor
and the O(n) direct dynamics of 001 §7.6.2.

The recursion of 001 §7.4.3 (eqs. 7.51–7.61) is expanded into scalar assignments
for one given robot: the Newton–Euler recursion is the one of :mod:`robot_dynamics.dynamics.recursion`
(shared with the NumPy model), run with :class:`SymbolicArithmetic`, whose vectors are expressions that
record statements.  Every element of a vector or matrix that contains an
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
The direct dynamic model takes the joint torque Γ_j where the others take q̈_j (``QDPj``)
and returns q̈_j (``QDDj``); its divisions ``JDj = 1/H_j`` are :class:`Reciprocal` atoms.

Generation time: the recursions are written once over a small expression type (``_X``) that
applies sympy's automatic simplifications (so the statements and counts are the ones sympy
gives) at a fraction of sympy's cost; the surviving statements are converted to sympy once,
at the end.  Generation is linear in the number of statements (O(n) for inverse, direct
dynamics and gravity, O(n²) for the inertia matrix and the regressor); the base parameters
are computed once per model (memoized on its content) and shared by the programs.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from sympy.core.basic import _args_sortkey

from ..dynamics.recursion import Kinematics, forward, newton_euler
from ..model.mdh import PRISMATIC, ROUND_OFF_TOL

__all__ = [
    "CustomizedModel",
    "Statement",
    "base_parameter_choice",
    "count_operations",
    "customized_forward_dynamics",
    "customized_gravity_torques",
    "customized_inertia_matrix",
    "customized_inverse_dynamics",
    "customized_regressor",
]

GENERATOR_VERSION = "11"  # 11: direct dynamics (001 §7.6.2), divisions; own expression type, sympy at the end


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


class Reciprocal(sp.Symbol):
    """``1/x`` of a run-time variable ``x``: one division (counted as a multiplication, as the seed does).

    An atom whose name is the C/Python text ``(1.0/x)``, so that the emitters print it as it is; its
    ``free_symbols`` are ``{x}`` so that dead-code elimination and the input scan see the dependence.
    Constant reciprocals are ordinary ``sp.Pow(x, -1)`` hoisted into the constants."""

    def __new__(cls, base: sp.Symbol) -> Reciprocal:
        obj = super().__new__(cls, f"(1.0/{base.name})", real=True)
        obj.base_symbol = base
        return obj

    def __getnewargs__(self) -> tuple[sp.Symbol]:
        return (self.base_symbol,)

    @property
    def free_symbols(self) -> set[sp.Basic]:
        return {self.base_symbol}


# --------------------------------------------------------------- counting
def count_operations(expr: sp.Expr) -> tuple[int, int, int]:
    """(multiplications, additions, signs) of one right-hand side, counted as the seed does.

    A division (:class:`Reciprocal`) counts as one multiplication."""
    if isinstance(expr, Reciprocal):
        return 1, 0, 0
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
    numeric: dict[str, float] = field(default_factory=dict, repr=False)  # parameters and constants, evaluated

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
        out = {"multiplications": m, "additions": a, "sin_cos": sincos, "sign": s, "dof": self.dof}
        div = sum(isinstance(st.expr, Reciprocal) for st in self.body)
        if div:
            out["divisions"] = div  # included in the multiplications
        return out

    def used_inputs(self) -> set[str]:
        """Names of the run-time input atoms used by the program."""
        defined = {s.name for s in self.statements} | set(self.values)
        used: set[str] = set()
        for e in [s.expr for s in self.body] + list(self.outputs):
            used |= {x.name for x in e.free_symbols}
        return used - defined

    def constant_values(self) -> dict[str, float]:
        """Numeric values of the parameters and of the hoisted constants."""
        if self.numeric and all(st.name in self.numeric for st in self.constants):
            return {**self.values, **{st.name: self.numeric[st.name] for st in self.constants}}
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


# --------------------------------------------------------------- expressions
# A small expression type for the generator: sums of terms c·Π base^k with integer (or rational)
# coefficients, bases being named atoms or nested sums.  It applies exactly sympy's automatic
# simplifications that matter here (flattening, collecting like terms and powers, a number times a sum
# distributed, everything else left as written), so the statements, their nesting and their operation
# counts are those sympy would give (checked: the converted statements equal sympy's canonical forms), at a
# tenth of sympy's cost or less; the surviving statements are converted to sympy once, at the end.
_Coeff = int | Fraction


class _Atom:
    """A named scalar: parameter, input, statement variable, ``sign(x)`` or ``1/x`` (interned by name)."""

    __slots__ = ("name", "kind", "arg", "mono", "free", "_sympy", "__weakref__")
    _table: dict[str, _Atom] = {}

    def __new__(cls, name: str, kind: str = "sym", arg: _Atom | None = None) -> _Atom:
        a = cls._table.get(name)
        if a is None:
            a = object.__new__(cls)
            a.name, a.kind, a.arg = name, kind, arg
            a.mono = frozenset(((a, 1),))
            a.free = frozenset((a,)) if arg is None else arg.free
            a._sympy = None
            a = cls._table.setdefault(name, a)  # atomic: one atom per name, also across threads
        return a

    def sympy(self) -> sp.Expr:
        if self._sympy is None:
            if self.kind == "sign":
                self._sympy = sp.sign(self.arg.sympy())
            elif self.kind == "rec":
                self._sympy = Reciprocal(self.arg.sympy())
            else:
                self._sympy = _sym(self.name)
        return self._sympy

    def __repr__(self) -> str:
        return self.name


_E0: frozenset = frozenset()


class _X:
    """Immutable expression: ``t`` maps a monomial (frozenset of (base, exponent)) to its coefficient."""

    __slots__ = ("t", "_h", "_free")

    def __init__(self, t: dict[frozenset, _Coeff]) -> None:
        self.t = t
        self._h: int | None = None
        self._free: frozenset[_Atom] | None = None

    # ---- construction
    @staticmethod
    def num(c: _Coeff) -> _X:
        return _X({_E0: c}) if c else _X({})

    @staticmethod
    def atom(a: _Atom) -> _X:
        return _X({a.mono: 1})

    # ---- queries (named like sympy's where the recursions use them)
    @property
    def is_Number(self) -> bool:  # noqa: N802
        return not self.t or (len(self.t) == 1 and _E0 in self.t)

    @property
    def is_Symbol(self) -> bool:  # noqa: N802
        if len(self.t) != 1:
            return False
        ((m, c),) = self.t.items()
        if c != 1 or len(m) != 1:
            return False
        ((base, e),) = m
        return e == 1 and isinstance(base, _Atom) and base.kind == "sym"

    @property
    def is_Atom(self) -> bool:  # noqa: N802
        return self.is_Number or self.is_Symbol

    def number(self) -> _Coeff:
        return self.t.get(_E0, 0) if self.is_Number else None

    def as_atom(self) -> _Atom | None:
        return next(iter(next(iter(self.t))))[0] if self.is_Symbol else None

    def single(self) -> tuple[frozenset, _Coeff] | None:
        return next(iter(self.t.items())) if len(self.t) == 1 else None

    @property
    def free(self) -> frozenset[_Atom]:
        """The plain atoms the expression depends on (through sign, 1/x and nested sums too)."""
        if self._free is None:
            s: set[_Atom] = set()
            for m in self.t:
                for base, _ in m:
                    if base.__class__ is _Atom and base.arg is None:
                        s.add(base)
                    else:
                        s |= base.free
            self._free = frozenset(s)
        return self._free

    # ---- equality and hashing (structural)
    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(frozenset(self.t.items()))
        return self._h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _X):
            return self is other or (hash(self) == hash(other) and self.t == other.t)
        if isinstance(other, int | Fraction):
            return self.is_Number and self.t.get(_E0, 0) == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    # ---- arithmetic (sympy's automatic rules)
    def __add__(self, other: _X | _Coeff) -> _X:
        o = other if isinstance(other, _X) else _X.num(other)
        if not o.t:
            return self
        if not self.t:
            return o
        t = dict(self.t)
        for m, c in o.t.items():
            v = t.get(m, 0) + c
            if v:
                t[m] = v
            else:
                del t[m]
        return _X(t)

    __radd__ = __add__

    def __neg__(self) -> _X:
        return _X({m: -c for m, c in self.t.items()})

    def __sub__(self, other: _X | _Coeff) -> _X:
        return self + (-other if isinstance(other, _X) else _X.num(-other))

    def __rsub__(self, other: _Coeff) -> _X:
        return _X.num(other) + (-self)

    def scale(self, c: _Coeff) -> _X:
        if c == 0 or not self.t:
            return _X({})
        if c == 1:
            return self
        return _X({m: v * c for m, v in self.t.items()})

    def __mul__(self, other: _X | _Coeff) -> _X:
        if not isinstance(other, _X):
            return self.scale(other)
        if not self.t or not other.t:
            return _X({})
        if self.is_Number:
            return other.scale(self.t[_E0])
        if other.is_Number:
            return self.scale(other.t[_E0])
        a, b = self.single(), other.single()
        if a is not None and b is not None:
            return _X({_mono_mul(a[0], b[0]): a[1] * b[1]})
        if a is not None:  # term × sum: the sum stays a factor
            return _X({_mono_mul(a[0], frozenset(((other, 1),))): a[1]})
        if b is not None:
            return _X({_mono_mul(b[0], frozenset(((self, 1),))): b[1]})
        return _X({_mono_mul(frozenset(((self, 1),)), frozenset(((other, 1),))): 1})

    __rmul__ = __mul__

    def __pow__(self, k: int) -> _X:
        if k == 1:
            return self
        if self.is_Number:
            return _X.num(self.t.get(_E0, 0) ** k)
        a = self.single()
        if a is not None:
            return _X({frozenset((base, e * k) for base, e in a[0]): a[1] ** k})
        return _X({frozenset(((self, k),)): 1})

    def __repr__(self) -> str:
        return str(self.sympy())

    # ---- transformations
    def sympy(self) -> sp.Expr:
        """The sympy expression, assembled without re-evaluation: the structure is already sympy's canonical
        one (see the class docstring), only the arguments are put in sympy's order."""
        terms = []
        number = None
        for m, c in self.t.items():
            k = sp.Rational(c) if isinstance(c, Fraction) else sp.Integer(c)
            if not m:
                number = k
                continue
            f = [base.sympy() if e == 1 else sp.Pow(base.sympy(), sp.Integer(e), evaluate=False) for base, e in m]
            if len(f) == 1 and c == 1:
                terms.append(f[0])
                continue
            if all(base.__class__ is _Atom and base.kind == "sym" and e == 1 for base, e in m):
                f.sort(key=lambda x: x.name)  # Basic.compare of two symbols: by name
            else:
                f.sort(key=_args_sortkey)
            terms.append(sp.Mul._from_args(f if c == 1 else [k, *f], True))
        if number is not None and not terms:
            return number
        if len(terms) == 1 and number is None:
            return terms[0]
        terms.sort(key=_args_sortkey)
        return sp.Add._from_args(terms if number is None else [number, *terms], True)

    def expand(self) -> _X:
        """Every product of sums distributed (sympy's ``expand`` of a polynomial)."""
        if all(isinstance(base, _Atom) for m in self.t for base, _ in m):
            return self
        out = _X({})
        for m, c in self.t.items():
            term = _X({_E0: c})
            for base, e in m:
                f = _X.atom(base) if isinstance(base, _Atom) else base.expand()
                for _ in range(e):
                    term = _poly_mul(term, f)
            out = out + term
        return out

    def diff(self, a: _Atom) -> _X:
        """∂/∂a of an expanded expression (atoms independent; sign and 1/x atoms are constants)."""
        t: dict[frozenset, _Coeff] = {}
        for m, c in self.t.items():
            for base, e in m:
                if base is a:
                    nm = frozenset((b2, e2) for b2, e2 in m if b2 is not a) if e == 1 else frozenset(
                        (b2, e2 - 1 if b2 is a else e2) for b2, e2 in m)
                    t[nm] = t.get(nm, 0) + c * e
                    break
        return _X({m: c for m, c in t.items() if c})

    def subs(self, mapping: dict[_Atom, _X]) -> _X:
        """Atoms replaced by expressions (rebuilt with the arithmetic above)."""
        if not (self.free & mapping.keys()):
            return self
        out = _X({})
        for m, c in self.t.items():
            term = _X({_E0: c})
            for base, e in m:
                f = (mapping.get(base) or _X.atom(base)) if isinstance(base, _Atom) else base.subs(mapping)
                term = term * f**e
            out = out + term
        return out

    def evaluate(self, values: dict[_Atom, float]) -> float:
        """Numeric value given the values of its atoms."""
        total = 0.0
        for m, c in self.t.items():
            v = float(c)
            for base, e in m:
                if isinstance(base, _Atom):
                    x = 1.0 / values[base.arg] if base.kind == "rec" else values[base]
                else:
                    x = base.evaluate(values)
                v *= x**e
            total += v
        return total


def _mono_mul(a: frozenset, b: frozenset) -> frozenset:
    if not a:
        return b
    if not b:
        return a
    if len(a) == 1 and len(b) == 1:
        ((ba, ea),) = a
        ((bb, eb),) = b
        return a | b if ba is not bb and ba != bb else frozenset(((ba, ea + eb),))
    d = dict(a)
    for base, e in b:
        d[base] = d.get(base, 0) + e
    return frozenset(d.items())


def _poly_mul(a: _X, b: _X) -> _X:
    """Product of two expanded expressions, distributed."""
    t: dict[frozenset, _Coeff] = {}
    for ma, ca in a.t.items():
        for mb, cb in b.t.items():
            m = _mono_mul(ma, mb)
            t[m] = t.get(m, 0) + ca * cb
    return _X({m: c for m, c in t.items() if c})


def _v(name: str) -> _X:
    """The expression of a plain named atom."""
    return _X.atom(_Atom(name))


def _sign(x: _X) -> _X:
    """sign(x) of an atom x, as an atom."""
    if x.is_Number:
        c = x.number()
        return _X.num((c > 0) - (c < 0))
    a = x.as_atom()
    if a is None:
        raise ValueError("sign of a composite expression")
    return _X.atom(_Atom(f"sign({a.name})", "sign", a))


_ZERO = _X({})
_ONE = _X.num(1)


# --------------------------------------------------------------- builder
@dataclass
class _Stmt:
    name: str
    atom: _Atom
    x: _X
    constant: bool


class _Builder:
    """Emit scalar assignments while propagating the known zeros and ±1."""

    def __init__(self) -> None:
        self.statements: list[_Stmt] = []
        self.const_atoms: set[_Atom] = set()
        self.values: dict[str, float] = {}
        self.numeric: dict[_Atom, float] = {}  # values of the parameters and hoisted constants
        self._rhs: dict[_X, _X] = {}
        self._names: set[str] = set()
        self._suffix: dict[str, int] = {}
        self._k = 0

    # ---- atoms
    def param(self, name: str, value: float) -> _X:
        a = _Atom(name)
        self.const_atoms.add(a)
        self.values[name] = float(value)
        self.numeric[a] = float(value)
        return _X.atom(a)

    def is_const(self, e: _X) -> bool:
        return e.free <= self.const_atoms

    @staticmethod
    def _atomic(e: _X) -> bool:
        """A number, a symbol or minus a symbol (no operation)."""
        if e.is_Number:
            return True
        t = e.single()
        if t is None or t[1] not in (1, -1) or len(t[0]) != 1:
            return False
        ((base, k),) = t[0]
        return k == 1 and isinstance(base, _Atom) and base.kind == "sym"

    def _fresh(self, name: str) -> str:
        """``name``, or ``name_2``, ``name_3``, … when taken (a counter per base name: no rescans)."""
        base = name
        k = self._suffix.get(base, 1)
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._suffix[base] = k
        self._names.add(name)
        return name

    def _emit(self, name: str, e: _X, constant: bool) -> _X:
        nm = self._fresh(name)
        a = _Atom(nm)
        self.statements.append(_Stmt(nm, a, e, constant))
        s = _X.atom(a)
        self._rhs[e] = s
        if constant:
            self.const_atoms.add(a)
            self.numeric[a] = e.evaluate(self.numeric)
        return s

    # ---- constants
    def const(self, e: _X, name: str | None = None) -> _X:
        """Hoist a constant expression; returns an atom (or -atom)."""
        e = e.expand()
        if self._atomic(e):
            return e
        if _could_extract_minus_sign(e):
            return -self.const(-e, name)
        s = self._rhs.get(e)
        if s is not None:
            return s
        self._k += 1
        return self._emit(name or f"K{self._k}", e, True)

    def _hoist(self, e: _X) -> _X:
        """Replace constant composite sub-products by hoisted constants."""
        if len(e.t) > 1:  # a sum: its constant terms become one constant
            const_terms = _ZERO
            out = _ZERO
            for m, c in e.t.items():
                term = _X({m: c})
                if term.free <= self.const_atoms:
                    const_terms = const_terms + term
                else:
                    out = out + self._hoist_term(m, c)
            return (self.const(const_terms) if const_terms.t else _ZERO) + out
        if not e.t:
            return e
        ((m, c),) = e.t.items()
        return self._hoist_term(m, c)

    def _hoist_term(self, m: frozenset, c: _Coeff) -> _X:
        if not m or (len(m) == 1 and c == 1 and next(iter(m))[1] == 1 and isinstance(next(iter(m))[0], _Atom)):
            return _X({m: c})  # a number or an atom
        if len(m) == 1 and c == 1:  # a power
            ((base, k),) = m
            return (_X.atom(base) if isinstance(base, _Atom) else self._hoist(base)) ** k
        consts = [_X.num(c)]
        others = []
        for base, k in m:
            f = _X.atom(base) if isinstance(base, _Atom) else base
            if f.free <= self.const_atoms:
                consts.append(f**k)
            else:
                others.append((f if isinstance(base, _Atom) else self._hoist(base)) ** k)
        cst = consts[0]
        for f in consts[1:]:
            cst = cst * f
        if not (cst.is_Number or self._atomic(cst)):
            one = cst.single()  # sympy's as_coeff_Mul: a unit coefficient stays out of the constant
            cst = self.const(_X({one[0]: 1})).scale(one[1]) if one and one[1] in (1, -1) else self.const(cst)
        out = cst
        for f in others:
            out = out * f
        return out

    # ---- variables
    def var(self, name: str, e: _X | _Coeff) -> _X:
        """Assign ``e`` to a new intermediate variable if it contains an operation."""
        if not isinstance(e, _X):
            e = _X.num(e)
        if self._atomic(e):
            return e
        if self.is_const(e):
            return self.const(e, name)
        e = self._hoist(e)
        if self._atomic(e):
            return e
        s = self._rhs.get(e)
        if s is not None:
            return s
        s = self._rhs.get(-e)
        if s is not None:
            return -s
        return self._emit(name, e, False)

    def vec(self, prefix: str, j: int, v: Iterable[_X]) -> list[_X]:
        return [self.var(f"{prefix}{i}{j}", x) for i, x in enumerate(v, start=1)]

    def reciprocal(self, name: str, x: _X) -> _X:
        """``name = 1/x`` (a division; for a constant ``x`` a hoisted constant)."""
        if not x.is_Symbol:
            x = self.var(f"{name}X", x) if not self.is_const(x) else self.const(x)
        if x.single() is not None and x.single()[1] == -1:  # 1/(-a) = -(1/a)
            return -self.reciprocal(name, -x)
        a = x.as_atom()
        r = _X.atom(_Atom(f"(1.0/{a.name})", "rec", a))
        s = self._rhs.get(r)
        if s is not None:
            return s
        if a in self.const_atoms:
            st = self._emit(name, r, True)
            return st
        return self._emit(name, r, False)

    # ---- result
    def program(self, outputs: list[_X]) -> tuple[list[Statement], list[sp.Expr], dict[str, float], dict[str, float]]:
        """Dead code eliminated (001 §7.5.2), converted to sympy: statements, outputs, used parameter values and
        the numeric values of the parameters and constants used."""
        kept = _live(self.statements, outputs)
        needed = set().union(*(st.x.free for st in kept)) if kept else set()
        stmts = [Statement(st.name, _rec_sympy(st.x, st.constant), st.constant) for st in kept]
        used = set(needed)
        for o in outputs:
            used |= o.free
        values = {k: v for k, v in self.values.items() if _Atom(k) in used}
        numeric = {a.name: v for a, v in self.numeric.items() if a in used or a.name in values}
        numeric.update({st.name: self.numeric[st.atom] for st in kept if st.constant})
        return stmts, [o.sympy() for o in outputs], values, numeric


def _live(statements: list[_Stmt], outputs: list[_X]) -> list[_Stmt]:
    """The statements the outputs need (backward scan, 001 §7.5.2)."""
    needed: set[_Atom] = set()
    for o in outputs:
        needed |= o.free
    kept: list[_Stmt] = []
    for st in reversed(statements):
        if st.atom in needed:
            kept.append(st)
            needed |= st.x.free
    return kept[::-1]


def _rec_sympy(x: _X, constant: bool) -> sp.Expr:
    """sympy form of a statement: a constant 1/K is ``K**-1`` (evaluated numerically), a run-time one a
    :class:`Reciprocal` atom the emitters print as ``(1.0/x)``."""
    a = x.as_atom() if len(x.t) == 1 else None
    if a is None:
        t = x.single()
        if t is not None and t[1] == 1 and len(t[0]) == 1:
            ((base, k),) = t[0]
            if k == 1 and isinstance(base, _Atom) and base.kind == "rec":
                return sp.Pow(base.arg.sympy(), -1) if constant else base.sympy()
    return x.sympy()


def _could_extract_minus_sign(e: _X) -> bool:
    """sympy's ``could_extract_minus_sign`` (more negative terms than positive ones; a tie decided by sympy)."""
    t = e.single()
    if t is not None:
        return t[1] < 0
    neg = sum(1 for c in e.t.values() if c < 0)
    pos = len(e.t) - neg
    if pos != neg:
        return neg > pos
    return bool(e.sympy().could_extract_minus_sign())


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
    from ..dynamics.inverse_dynamics import regressor

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
    """Standard name -> (base name, value) from :mod:`robot_dynamics.dynamics.base_parameters` (000's
    closed-form method: the column carrying each base parameter), or None if unavailable."""
    try:
        from ..dynamics.base_parameters import base_parameters
    except ImportError:
        return None
    try:
        bp = base_parameters(model)
    except (ValueError, NotImplementedError, np.linalg.LinAlgError):
        return None
    names = model.standard_parameter_names
    return {names[int(c)]: (str(nm), float(v)) for c, nm, v in zip(bp.columns, bp.names, bp.values, strict=True)}


_TABLES: dict[tuple[str, str, bool, bool], dict[str, tuple[str, float]]] = {}


def _model_digest(model: Any) -> str:
    """Hash of everything the programs depend on (geometry, parameters, gravity, base transform)."""
    return hashlib.sha256(json.dumps(model.to_dict(), sort_keys=True).encode()).hexdigest()


def _parameter_table(model: Any, parameters: str, simplified: bool, all_symbols: bool) -> dict[str, tuple[str, float]]:
    """Standard name -> (symbol name, value) of the parameters kept in the program.

    Memoized by the model's content: the base parameters are computed once for all the programs of a model."""
    key = (_model_digest(model), parameters, simplified, all_symbols)
    if key not in _TABLES:
        if len(_TABLES) > 64:
            _TABLES.clear()
        _TABLES[key] = _parameter_table_uncached(model, parameters, simplified, all_symbols)
    return dict(_TABLES[key])


def _parameter_table_uncached(
    model: Any, parameters: str, simplified: bool, all_symbols: bool,
) -> dict[str, tuple[str, float]]:
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
    stmts, outs, values, numeric = b.program(gam)
    return CustomizedModel(
        name=model.name, dof=model.dof, statements=stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=wrench, output_shape=(model.dof,),
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
        numeric=numeric,
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
    else:
        outs = _composite_inertia_matrix(model, b, par, progress)
        shape = (n, n)
    stmts, souts, values, numeric = b.program(outs)
    return CustomizedModel(
        name=model.name, dof=n, statements=stmts, outputs=souts, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=False, kind=kind, output_shape=shape,
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
        numeric=numeric,
    )


def customized_gravity_torques(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the gravity torques Q(q) (NE with q̇ = q̈ = 0)."""
    return _specialized(model, "gravity", parameters, simplified, progress)


def customized_inertia_matrix(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the inertia matrix A(q) incl. rotor inertias, by composite links (001 §7.6.1).

    (The Newton–Euler columns of 001 eq. 7.64 cost about twice as many operations: 1523 × vs 719 × for a
    general 12-joint chain.)"""
    return _specialized(model, "inertia_matrix", parameters, simplified, progress)


def _link_wrench_basis(b: _Builder, j: int, kin: Kinematics) -> list[list[_X]]:
    """The wrench [f_j; n_j] of link j at O_j (7.55, 7.56 with n += MS × v̇) per unit standard parameter
    XX XY XZ YY YZ ZZ MX MY MZ M, with the DV and U elements of the forward recursion (cf.
    :meth:`SymbolicArithmetic.link_moment`)."""
    z = _ZERO
    st = kin.state[j]
    dv, u, wp, vp = st.dv, st.u, kin.wd[j], kin.vd[j]
    d11, d22, d33, d12, d13, d23 = dv[0][0], dv[1][1], dv[2][2], dv[0][1], dv[0][2], dv[1][2]
    dd = [b.var(f"DD{k}{j}", e) for k, e in enumerate((d22 - d11, d11 - d33, d33 - d22), start=1)]
    moments = [
        [wp[0], d13, -d12],  # XX
        [-u[2][0], u[2][1], dd[0]],  # XY
        [u[1][0], dd[1], -u[1][2]],  # XZ
        [-d23, wp[1], d12],  # YY
        [dd[2], -u[0][1], u[0][2]],  # YZ
        [d23, -d13, wp[2]],  # ZZ
    ]
    out = [[z, z, z, *m] for m in moments]
    out.append([u[0][0], u[1][0], u[2][0], z, -vp[2], vp[1]])  # MX: U e_1; e_1 × v̇
    out.append([u[0][1], u[1][1], u[2][1], vp[2], z, -vp[0]])  # MY
    out.append([u[0][2], u[1][2], u[2][2], -vp[1], vp[0], z])  # MZ
    out.append([vp[0], vp[1], vp[2], z, z, z])  # M
    return out


def customized_regressor(model: Any, progress: Callable[[str], None] | None = None) -> CustomizedModel:
    """Customized program of the standard-parameter regressor W (n, 13n), URDF column order (001 eq. 9.3).

    Column π of link j, row i (j or an ancestor of j): W_iπ = a_iᵀ ^iS_jᵀ w_j(π) = ζ_{ij}ᵀ w_j(π), with
    w_j(π) the wrench of link j per unit π (:func:`_link_wrench_basis`) and ζ_{ij} = ^jS_i a_i the axis
    of joint i carried to frame j by the motion transforms of 7.23a (ζ_jj = a_j, ζ_{i,k} = ^kS_j ζ_{ij} for
    a successor k of j).  Rotor inertia, Coulomb and viscous friction: q̈_j, sign(q̇_j), q̇_j in row j.
    Outputs are row-major W entries in MDH torque sign (the caller applies ``sign_j`` to row j).
    """
    t0 = time.perf_counter()
    b = _Builder()
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    basis: dict[int, list[list[_X]]] = {}

    def link(j: int, kin: Kinematics) -> None:
        basis[j] = _link_wrench_basis(b, j, kin)

    ar = SymbolicArithmetic(model, b, {})
    forward(ar, *_tree(model), link=link, progress=progress)  # the forward recursion of Newton–Euler
    geo = ar.geo
    unit = {j: [_ZERO] * 6 for j in range(1, n + 1)}
    for j in range(1, n + 1):
        unit[j][2 if geo[j].prismatic else 5] = _ONE
    zeta: dict[tuple[int, int], list[_X]] = {}
    out = [[_ZERO] * (13 * n) for _ in range(n)]
    for j in range(1, n + 1):
        if progress:
            progress(f"regressor: link {j}/{n}")
        zeta[j, j] = unit[j]
        a, gj = ant[j - 1], geo[j]
        while a > 0:  # ^jS_a ζ = [R^T (v + ω × P); R^T ω] (7.23a) for every i = a(j), a(a(j)), ...
            zv, zw = zeta[a, ant[j - 1]][:3], zeta[a, ant[j - 1]][3:]
            wxp = _cross(zw, gj.p)
            zeta[a, j] = (b.vec(f"ZV{a}_", j, gj.rt([zv[r] + wxp[r] for r in range(3)], f"ZV{a}_"))
                          + b.vec(f"ZW{a}_", j, gj.rt(zw, f"ZW{a}_")))
            a = ant[a - 1]
        i = j
        while i > 0:
            zt = zeta[i, j]
            for k, wk in enumerate(basis[j]):
                out[i - 1][13 * (j - 1) + k] = sum((zt[r] * wk[r] for r in range(6)), _ZERO)
            i = ant[i - 1]
        qp = _v(f"QP{j}")
        out[j - 1][13 * (j - 1) + 10: 13 * j] = [_v(f"QDP{j}"), b.var(f"SGN{j}", _sign(qp)), qp]
    outs = [x for row in out for x in row]
    stmts, souts, values, numeric = b.program(outs)
    return CustomizedModel(
        name=model.name, dof=n, statements=stmts, outputs=souts, values=values, joints=_joint_inputs(model),
        parameters="standard", simplified=False, wrench=False, kind="regressor", output_shape=(n, 13 * n),
        parameter_names=list(model.standard_parameter_names), generation_time=time.perf_counter() - t0,
        numeric=numeric,
    )


# --------------------------------------------------------------- direct dynamics
def _spatial_inertia(p: Callable[[str], _X]) -> list[list[_X]]:
    """^j𝕀_j of 001 eq. 7.21, ordering [v; ω] / [f; m], about O_j in R_j (symmetric 6x6)."""
    xx, xy, xz, yy, yz, zz = (p(k) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
    mx, my, mz, m = p("MX"), p("MY"), p("MZ"), p("M")
    return [
        [m, _ZERO, _ZERO, _ZERO, mz, -my],
        [_ZERO, m, _ZERO, -mz, _ZERO, mx],
        [_ZERO, _ZERO, m, my, -mx, _ZERO],
        [_ZERO, -mz, my, xx, xy, xz],
        [mz, _ZERO, -mx, xy, yy, yz],
        [-my, mx, _ZERO, xz, yz, zz],
    ]


def _hat(v: list[_X]) -> list[list[_X]]:
    return [[_ZERO, -v[2], v[1]], [v[2], _ZERO, -v[0]], [-v[1], v[0], _ZERO]]


def _matmul(a: list[list[_X]], b: list[list[_X]]) -> list[list[_X]]:
    return [[sum((a[r][k] * b[k][c] for k in range(3)), _ZERO) for c in range(3)] for r in range(3)]


def _add_screw_congruence(tgt: list[list[_X]], gj: _Geometry, kk: list[list[_X]], prefix: str) -> None:
    """``tgt += ^jS_{a(j)}ᵀ 𝕂 ^jS_{a(j)}`` for a symmetric 6x6 𝕂 in R_j (7.75; composite inertias).

    ^jS_a = diag(Rᵀ, Rᵀ) T with T = [[1, −P̂], [0, 1]] (7.23a), so with the blocks of R 𝕂 Rᵀ (rotated by
    :meth:`_Geometry.congruence`) [[A, B], [Bᵀ, C]]: Tᵀ [[A, B], [Bᵀ, C]] T = [[A, B − A P̂], [·, C + P̂ (B − A P̂) − Bᵀ P̂]]."""
    b, j = gj.b, gj.j
    ka = gj.congruence([row[:3] for row in kk[:3]], f"{prefix}A", True)
    kb = gj.congruence([row[3:] for row in kk[:3]], f"{prefix}B", False)
    kc = gj.congruence([row[3:] for row in kk[3:]], f"{prefix}C", True)
    ph = _hat(gj.p)
    apm = _matmul(ka, ph)
    kb2 = [[b.var(f"{prefix}T{r + 1}{c + 1}{j}", kb[r][c] - apm[r][c]) for c in range(3)] for r in range(3)]
    e1 = _matmul(ph, kb2)
    e2 = _matmul([[kb[c][r] for c in range(3)] for r in range(3)], ph)
    for r in range(3):
        for c in range(3):
            if c >= r:
                tgt[r][c] = tgt[r][c] + ka[r][c]
                tgt[3 + r][3 + c] = tgt[3 + r][3 + c] + kc[r][c] + e1[r][c] - e2[r][c]
            tgt[r][3 + c] = tgt[r][3 + c] + kb2[r][c]
    for r in range(6):
        for c in range(r):
            tgt[r][c] = tgt[c][r]


def _composite_inertia_matrix(
    model: Any, b: _Builder, par: dict[str, _X], progress: Callable[[str], None] | None,
) -> list[_X]:
    """A(q) incl. the rotor inertias by composite links (001 §7.6.1, its Appendix 8 method), row-major n x n.

    𝕀c_j = 𝕀_j + Σ_{a(k)=j} ^kS_jᵀ 𝕀c_k ^kS_j (7.75 with 𝕂 = 𝕀c); column j: the wrench F = 𝕀c_j a_j carried
    to each ancestor i by F ← ^kS_{a(k)}ᵀ F gives A_ij = a_iᵀ F, and A_jj = a_jᵀ 𝕀c_j a_j + Ia_j."""
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    geo = {j: _Geometry(b, model, j) for j in range(1, n + 1)}
    ic = {j: _spatial_inertia(lambda k, j=j: par.get(f"{k}{j}", _ZERO)) for j in range(1, n + 1)}
    axis = {j: 2 if geo[j].prismatic else 5 for j in range(1, n + 1)}
    for j in range(n, 0, -1):
        if progress:
            progress(f"inertia matrix, composite links: link {j}/{n}")
        m = ic[j]
        for r in range(6):
            for c in range(r, 6):
                m[r][c] = m[c][r] = b.var(f"JC{r + 1}{c + 1}{j}", m[r][c])
        if ant[j - 1] > 0:
            _add_screw_congruence(ic[ant[j - 1]], geo[j], m, "IC")
    out = [[_ZERO] * n for _ in range(n)]
    for j in range(1, n + 1):
        if progress:
            progress(f"inertia matrix: column {j}/{n}")
        f = [ic[j][r][axis[j]] for r in range(6)]
        out[j - 1][j - 1] = b.var(f"AJ{j}{j}", f[axis[j]] + par.get(f"Ia{j}", _ZERO))
        i = j
        while ant[i - 1] > 0:  # ^iS_{a(i)}ᵀ F = [R f; P × (R f) + R m]
            gi = geo[i]
            ff = b.vec("FC", i, gi.r(f[:3], "FC"))
            fm = gi.r(f[3:], "MC")
            pf = _cross(gi.p, ff)
            i = ant[i - 1]
            f = ff + b.vec("MC", i, [fm[r] + pf[r] for r in range(3)])
            out[i - 1][j - 1] = out[j - 1][i - 1] = f[axis[i]]
    return [x for row in out for x in row]


def _direct_dynamics(
    model: Any, b: _Builder, par: dict[str, _X], wrench: bool, progress: Callable[[str], None] | None,
) -> list[_X]:
    """O(n) direct dynamic model of 001 §7.6.2.1 (eqs. 7.67–7.79) on scalars; returns q̈_1..q̈_n (MDH).

    Run-time inputs: ``Sj, Cj`` (or ``Qj``), ``QPj`` and the joint torque Γ_j as the atom ``QDPj`` (the third
    input slot of the emitters, see :func:`customized_forward_dynamics`).  Spatial vectors are [v; ω], [f; m];
    a_j = e_6 (revolute) or e_3 (prismatic).  With ν_j = H_j⁻¹ (τ_j + a_jᵀβ*_j − (𝕀*_j a_j)ᵀ γ_j) the
    equations are used in the equivalent forms (expand 7.72 in 7.73 and 7.77)::

        α_j = 𝕀*_j γ_j + (𝕀*_j a_j) ν_j − β*_j                       (7.73)
        q̈_j = ν_j − GK_jᵀ (^jS_{a(j)} ^{a(j)}V̇_{a(j)}),  GK_j = 𝕀*_j a_j / H_j   (7.77)
        𝕂_j a_j = Ia_j GK_j,  𝕂_j = 𝕀*_j − GK_j (𝕀*_j a_j)ᵀ elsewhere   (7.72)

    so that a zero rotor inertia makes row and column a_j of 𝕂_j exact zeros."""
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    z = _ZERO

    def p(k: str, j: int) -> _X:
        return par.get(f"{k}{j}", z)

    g = _gravity_r0(model)
    gs = [b.param(f"G{i}", g[i - 1]) if g[i - 1] != 0.0 else z for i in (1, 2, 3)]
    # i) first forward recursion: ω_j (the velocity pass of the Newton–Euler recursion), γ_j (7.68), β_j (7.70)
    ww: dict[int, list[list[_X]]] = {0: [[z] * 3 for _ in range(3)]}  # ω̂_j ω̂_j
    gam: dict[int, list[_X]] = {}
    beta: dict[int, list[_X]] = {}

    def first(j: int, kin: Kinematics) -> None:
        a = ant[j - 1]
        gj = ar.geometry(j)
        qp = _v(f"QP{j}")
        wi, dv = kin.wi[j], kin.state[j].dv
        wwj = [[dv[r][c] for c in range(3)] for r in range(3)]
        for i in range(3):  # ω̂ω̂ = ωωᵀ − |ω|² 1: diagonal −ω_k² − ω_l²
            o1, o2 = [k for k in range(3) if k != i]
            wwj[i][i] = b.var(f"WW{i + 1}{i + 1}{j}", dv[o1][o1] + dv[o2][o2])
        ww[j] = wwj
        # γ_j (7.68): ^jR_{a(j)} [ω_a × (ω_a × P_j)] + 2σ_j ω_{a(j)} × q̇_j a_j; σ̄_j ω_{a(j)} × q̇_j a_j
        pj = gj.p
        lin = gj.rt([sum((ww[a][r][c] * pj[c] for c in range(3)), z) for r in range(3)], "GV")
        cor = [qp * wi[1], -qp * wi[0], z]
        if gj.prismatic:
            gam[j] = b.vec("GV", j, [lin[r] + 2 * cor[r] for r in range(3)]) + [z, z, z]
        else:
            gam[j] = b.vec("GV", j, lin) + b.vec("GW", j, cor)
        # β_j (7.70) = −F_ej − [ω × (ω × MS); ω × (J ω)]
        ms = [p("MX", j), p("MY", j), p("MZ", j)]
        xx, xy, xz, yy, yz, zz = (p(k, j) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
        bl = [-sum((wwj[r][c] * ms[c] for c in range(3)), z) for r in range(3)]
        d11, d22, d33, d12, d13, d23 = dv[0][0], dv[1][1], dv[2][2], dv[0][1], dv[0][2], dv[1][2]
        pis1, pis2, pis3 = b.const(zz - yy, f"PIS1{j}"), b.const(xx - zz, f"PIS2{j}"), b.const(yy - xx, f"PIS3{j}")
        ba = [
            -(yz * (d33 - d22) + pis1 * d23 + xz * d12 - xy * d13),
            -(xz * (d11 - d33) + pis2 * d13 + xy * d23 - yz * d12),
            -(xy * (d22 - d11) + pis3 * d12 + yz * d13 - xz * d23),
        ]
        if wrench and j == n:
            bl = [bl[0] - _v(f"FX{j}"), bl[1] - _v(f"FY{j}"), bl[2] - _v(f"FZ{j}")]
            ba = [ba[0] - _v(f"CX{j}"), ba[1] - _v(f"CY{j}"), ba[2] - _v(f"CZ{j}")]
        beta[j] = bl + ba

    ar = SymbolicArithmetic(model, b, par)
    forward(ar, *_tree(model), accelerations=False, link=first, progress=progress,
            label="direct dynamics, first forward recursion")
    geo = ar.geo
    # ii) backward recursion (7.71–7.75); 𝕀*_j, β*_j start at 𝕀_j, β_j and collect the successors' terms
    istar = {j: _spatial_inertia(lambda k, j=j: p(k, j)) for j in range(1, n + 1)}
    nu: dict[int, _X] = {}
    gk: dict[int, list[_X]] = {}
    jd: dict[int, _X] = {}
    ias: dict[int, list[_X]] = {}
    for j in range(n, 0, -1):
        if progress:
            progress(f"direct dynamics, backward recursion: link {j}/{n}")
        a = ant[j - 1]
        gj = geo[j]
        ax = 2 if gj.prismatic else 5
        ist = istar[j]
        for r in range(6):
            for c in range(r, 6):
                ist[r][c] = ist[c][r] = b.var(f"JA{r + 1}{c + 1}{j}", ist[r][c])
        bs = b.vec("BS", j, beta[j])
        ia = [ist[r][ax] for r in range(6)]
        ias[j] = ia
        iaj = p("Ia", j)
        jh = b.var(f"JH{j}", ia[ax] + iaj)  # H_j (7.71)
        if b.is_const(jh) and jh.evaluate(b.numeric) == 0.0:
            raise ValueError(f"joint {j} ({model.joints[j - 1].name}) moves no inertia and has no rotor inertia: "
                             "the inertia matrix is singular, there is no direct dynamic model")
        jd[j] = b.reciprocal(f"JD{j}", jh)
        qp = _v(f"QP{j}")
        tau = _v(f"QDP{j}") - p("Fc", j) * _sign(qp) - p("Fv", j) * qp  # τ_j (7.82)
        gj_ = gam[j]
        u = b.var(f"TAU{j}", tau + bs[ax] - sum((ia[r] * gj_[r] for r in range(6)), z))
        nu[j] = b.var(f"NU{j}", jd[j] * u)
        if a == 0:
            continue
        gkj = gk[j] = b.vec("GK", j, [ia[r] * jd[j] for r in range(6)])
        kk = [[z] * 6 for _ in range(6)]
        for r in range(6):
            for c in range(r, 6):
                # 𝕂_j a_j = Ia_j GK_j (row and column a_j), else 𝕀*_rc − GK_r (𝕀* a)_c
                e = iaj * gkj[c if r == ax else r] if ax in (r, c) else ist[r][c] - gkj[r] * ia[c]
                kk[r][c] = kk[c][r] = b.var(f"KK{r + 1}{c + 1}{j}", e)
        alpha = b.vec("AL", j, [sum((ist[r][c] * gj_[c] for c in range(6)), z) + ia[r] * nu[j] - bs[r]
                                for r in range(6)])
        _add_screw_congruence(istar[a], gj, kk, "K")  # 7.75
        # 7.74: β*_a −= ^jS_aᵀ α_j = [R α_f; P × (R α_f) + R α_n]
        af = b.vec("AF", j, gj.r(alpha[:3], "AF"))
        an = gj.r(alpha[3:], "AN")
        pf = _cross(gj.p, af)
        beta[a] = [beta[a][r] - af[r] for r in range(3)] + [beta[a][3 + r] - an[r] - pf[r] for r in range(3)]
    # iii) second forward recursion (7.76–7.78), v̇_0 = −g, ω̇_0 = 0
    vp: dict[int, list[_X]] = {0: [-x for x in gs]}
    wp: dict[int, list[_X]] = {0: [z, z, z]}
    qdd: list[_X] = [z] * n
    for j in range(1, n + 1):
        if progress:
            progress(f"direct dynamics, second forward recursion: link {j}/{n}")
        a = ant[j - 1]
        gj = geo[j]
        ax = 2 if gj.prismatic else 5
        wxp = _cross(wp[a], gj.p)
        x = gj.rt([vp[a][r] + wxp[r] for r in range(3)], "VS") + gj.rt(wp[a], "WS")  # 7.76
        x = b.vec("VS", j, x[:3]) + b.vec("WS", j, x[3:])
        if a == 0:
            acc = nu[j] - jd[j] * sum((ias[j][r] * x[r] for r in range(6)), z)
        else:
            acc = nu[j] - sum((gk[j][r] * x[r] for r in range(6)), z)
        qdd[j - 1] = b.var(f"QDD{j}", acc)  # 7.77
        v = [x[r] + gam[j][r] + (qdd[j - 1] if r == ax else z) for r in range(6)]  # 7.78
        vp[j] = b.vec("VP", j, v[:3])
        wp[j] = b.vec("WP", j, v[3:])
    return qdd


def customized_forward_dynamics(
    model: Any,
    parameters: str = "base",
    simplified: bool = False,
    wrench: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized symbolic direct dynamic model q̈ = f(q, q̇, Γ) of ``model`` (001 §7.6.2, O(n)).

    Same builder and options as :func:`customized_inverse_dynamics`; rotor inertia enters H_j (7.71),
    friction makes τ_j = Γ_j − Fc_j sign(q̇_j) − Fv_j q̇_j (7.82).  The program's run-time inputs are
    (q, q̇, Γ) in URDF coordinates: Γ_j arrives in the emitters' third slot (``qdd``, atoms ``QDPj``,
    with the joint sign like an acceleration), so the emitters of :mod:`robot_dynamics.symbolic.codegen` evaluate
    it as ``f(q, qd, tau[, fe])``; outputs are q̈_j (``QDDj``).
    """
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    qdd = _direct_dynamics(model, b, par, wrench, progress)
    if progress:
        progress("eliminating dead variables")
    stmts, outs, values, numeric = b.program(qdd)
    return CustomizedModel(
        name=model.name, dof=model.dof, statements=stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=wrench, kind="forward_dynamics",
        output_shape=(model.dof,), parameter_names=[sym for sym, _ in table.values()],
        generation_time=time.perf_counter() - t0, numeric=numeric,
    )
