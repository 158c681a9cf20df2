"""The statement builder of the customized models (001 §7.5.2).

:class:`_Builder` emits scalar assignments while propagating the known zeros and ±1: every element
that contains an operation becomes an intermediate variable, elements without an operation are
propagated as they are, so multiplications by 0 and ±1 and additions of 0 disappear.

* Constant expressions of the geometric and inertial parameters are hoisted
  (the seed's ``*`` lines) and not counted.
* Identical right-hand sides are computed once (hash-consing common subexpressions).
* Variables without effect on the outputs are removed by a backward scan (:func:`_live`).

:meth:`_Builder.program` converts the surviving statements to sympy (run-time divisions as
:class:`~robot_dynamics.symbolic.expressions.Reciprocal` atoms).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sympy as sp

from .expressions import _X, _ZERO, _Atom, _Coeff
from .program import Statement


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
