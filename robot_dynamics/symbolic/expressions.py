"""The expressions of the customized models (001 §7.5).

* :class:`_X` — the generator's own expression type: sums of terms c·Π base^k with integer (or rational)
  coefficients over named atoms (:class:`_Atom`: parameters, inputs, statement variables, ``sign(x)``,
  ``1/x``) or nested sums, applying exactly sympy's automatic simplifications that matter here (see the
  comment above :class:`_Atom`).  The recursions are written once over it, so the statements and counts are
  the ones sympy gives at a fraction of sympy's cost; the surviving statements are converted to sympy once,
  at the end (:meth:`_X.sympy`).
* :class:`Reciprocal` — ``1/x`` of a run-time variable as a sympy atom: a division of the final program
  (the ``JDj = 1/H_j`` of the direct dynamics, 001 §7.6.2).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp
from sympy.core.basic import _args_sortkey


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
