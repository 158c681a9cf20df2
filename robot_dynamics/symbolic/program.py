"""A customized program (001 §7.5): :class:`CustomizedModel` — constants, statements and outputs of one
robot's model — and the operation counts (:func:`count_operations`).

Operation counts follow the seed: ``a*b*c`` is 2 multiplications, ``x**2`` one,
``-x`` and ``±1·x`` none, ``a + b - c`` two additions; sin/cos and sign are
counted apart; hoisted constants are free; a division
(:class:`~robot_dynamics.symbolic.expressions.Reciprocal`) counts as one multiplication.

The program is in MDH coordinates (``QPj``/``QDPj`` the MDH velocity and
acceleration, ``Sj``/``Cj`` the sine/cosine of θ_j, ``Qj`` the prismatic r_j,
``FXn … CZn`` the wrench exerted by link n on the environment, in R_n about O_n);
``CustomizedModel.joints`` maps the URDF inputs to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from .expressions import Reciprocal, _sym


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
