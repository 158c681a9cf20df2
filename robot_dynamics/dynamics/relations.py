"""Base-parameter relations as printed (issue 30): the geometry's values substituted, simplified by sympy.

:attr:`~.base_parameters.BaseParameters.relations` are exact symbolic forms in the standard parameters and
the geometric symbols ``alpha<j>, theta<j>, d<j>, r<j>`` (``gamma<j>, b<j>`` on tree rows).  What
``base-params`` prints (table and ``--json``) is each relation with the geometry's values put in:

* values: an angle within ``ROUND_OFF_TOL`` of a multiple of π/2 is that multiple exactly, a length within
  ``ROUND_OFF_TOL`` of 0 is 0 (the policy of the closed-form rules, :mod:`robot_dynamics.model.mdh`); any
  other value is the model's float (a URDF's ``1.5708`` stays ``1.5708``: it is 3.7e-6 from π/2, and the
  relations of that geometry are not those of π/2);
* sympy evaluates and expands the substituted relation: a linear form Σ c_k P_k in the standard parameters;
* round-off: the coefficients are compared in the units of the robot's length L
  (:func:`~.base_rank.column_weights`: ``|c_k| w_k / w_b`` for the relation's own column b); a term at or
  below ``(n + 1) · ROUND_OFF_TOL`` of the relation's largest such coefficient is round-off of the frame
  arithmetic (the derived-geometry tolerance of the closed form) and dropped, and a coefficient within that
  relative tolerance of an integer is that integer (``1 - cos(α)²`` at α 4.9e-12 from π/2 is 1 in float64);
* printing: integers as integers (``2*MZ4``, no ``1.0*``), other coefficients to 15 significant digits,
  parameters with the same coefficient grouped (``0.2025*(M3 + M4 + M5 + M6)``), terms in the order of the
  standard parameters (link by link).

Printing never changes what a relation means beyond round-off: parsed back with sympy, a printed relation's
coefficients equal the numerical grouping (:attr:`~.base_parameters.BaseParameters.matrix`) to 1e-12
(``test/test_base_relations_printed.py``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import sympy as sp

from ..model.mdh import ROUND_OFF_TOL

__all__ = ["exact_geometry", "printed_relations", "relation_coefficients", "relation_text"]

_ANGLE = re.compile(r"(alpha|theta|gamma)\d+")


def exact_geometry(geometry: dict[sp.Symbol, float]) -> dict[sp.Symbol, sp.Expr]:
    """Symbol -> value to substitute: k·π/2 and 0 exactly within ``ROUND_OFF_TOL``, else the float."""
    out: dict[sp.Symbol, sp.Expr] = {}
    for sym, val in geometry.items():
        v = float(val)
        if _ANGLE.fullmatch(sym.name):
            k = round(v / (np.pi / 2))
            out[sym] = k * sp.pi / 2 if abs(v - k * np.pi / 2) <= ROUND_OFF_TOL else sp.Float(v)
        else:
            out[sym] = sp.Integer(0) if abs(v) <= ROUND_OFF_TOL else sp.Float(v)
    return out


def relation_coefficients(expr: sp.Expr, subs: dict[sp.Symbol, sp.Expr], index: dict[sp.Symbol, int]
                          ) -> dict[int, int | float] | None:
    """Standard column -> coefficient of ``expr`` with ``subs`` put in (an int where sympy keeps an Integer);
    None when something other than a linear form in the standard parameters ``index`` is left."""
    e = sp.expand(expr.xreplace(subs))
    out: dict[int, int | float] = {}
    for term, coef in e.as_coefficients_dict().items():
        if term not in index or not coef.is_number:
            return None
        c = sp.N(coef) if not coef.is_Integer else coef
        if c != 0:
            out[index[term]] = int(c) if c.is_Integer else float(c)
    return out


def _clean(coefs: dict[int, int | float], weights: np.ndarray, col: int, tol: float) -> dict[int, int | float]:
    """Round-off terms dropped and near-integers snapped (module docstring)."""
    norm = {k: abs(float(c)) * weights[k] / weights[col] for k, c in coefs.items()}
    scale = max(norm.values(), default=0.0)
    out: dict[int, int | float] = {}
    for k, c in coefs.items():
        if norm[k] <= tol * scale:
            continue
        if isinstance(c, float) and abs(c - round(c)) <= tol * max(1.0, abs(c)):
            c = int(round(c))
        out[k] = c
    return out


def relation_text(coefs: dict[int, int | float], names: list[str]) -> str:
    """``XX2 - YY2 - 0.2025*(M3 + M4 + M5 + M6)``: equal non-unit coefficients grouped, standard order."""
    groups: dict[int | float, list[int]] = {}
    items: list[tuple[int, int | float, list[int]]] = []
    for k in sorted(coefs):
        c = coefs[k]
        if c in (1, -1) or c not in groups:
            members = [k]
            if c not in (1, -1):
                groups[c] = members
            items.append((k, c, members))
        else:
            groups[c].append(k)
    out = ""
    for i, (_, c, members) in enumerate(items):
        mag = abs(c)
        body = " + ".join(names[k] for k in members)
        if mag == 1:
            term = body
        else:
            num = str(mag) if isinstance(mag, int) else format(mag, ".15g")
            term = f"{num}*{body}" if len(members) == 1 else f"{num}*({body})"
        sign = "-" if c < 0 else "+"
        out += (f"-{term}" if sign == "-" else term) if i == 0 else f" {sign} {term}"
    return out or "0"


def printed_relations(bp: Any) -> list[str]:
    """The relations of ``bp`` (:class:`~.base_parameters.BaseParameters`) as printed (module docstring)."""
    from .base_rank import column_weights

    model = bp.model
    names = list(model.standard_parameter_names)
    index = {sp.Symbol(s, real=True): i for i, s in enumerate(names)}
    subs = exact_geometry(bp.geometry)
    weights = column_weights(model)
    tol = (model.dof + 1) * ROUND_OFF_TOL
    out = []
    for expr, col in zip(bp.relations, bp.columns, strict=True):
        coefs = relation_coefficients(expr, subs, index)
        if coefs is None:  # not a linear form in the standard parameters: sympy's own simplification
            out.append(str(sp.simplify(expr.xreplace(subs))))
            continue
        out.append(relation_text(_clean(coefs, weights, int(col), tol), names))
    return out
