"""Printing of the expressions of a customized program (sympy expressions, no sympy import), shared by the
emitters of :mod:`~robot_dynamics.symbolic.codegen_python` and :mod:`~robot_dynamics.symbolic.codegen_c`.

* :func:`_expr` — sums of products, positive integer powers and ``sign`` printed for Python (NumPy),
  C, or C on 4 SIMD lanes; a reciprocal ``(1.0/x)`` (:class:`~robot_dynamics.symbolic.expressions.Reciprocal`)
  is printed as its name;
* :func:`_inputs` — the run-time input atoms of the program (``Sj``, ``Cj``, ``Qj``, ``QPj``, ``QDPj``, the
  wrench ``FXn … CZn``) from URDF joint values (sign and offset of each joint);
* :func:`_output_signs` — the URDF sign of each flat output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC

_WRENCH = ("FX", "FY", "FZ", "CX", "CY", "CZ")


def _num(x: float) -> str:
    return repr(float(x))


_SIGN = {"python": "np.sign", "c": "RD_SIGN", "c4": "rd_sign4"}


def _expr(e: Any, lang: str, names: set[str] | None = None) -> str:
    """Print an expression of the program (sums of products, positive integer powers, sign); the names
    of the symbols it reads (a reciprocal ``(1.0/x)`` reads ``x``) are added to ``names``."""
    names = set() if names is None else names
    if e.is_Symbol:
        base = getattr(e, "base_symbol", None)
        names.add(e.name if base is None else base.name)
        return e.name
    if e.is_Add:
        out = []
        for k, t in enumerate(e.args):
            neg, body = _signed(t, lang, names)
            out.append(((" - " if k else "-") if neg else (" + " if k else "")) + body)
        return "".join(out)
    neg, body = _signed(e, lang, names)
    return "-" + body if neg else body


def _signed(e: Any, lang: str, names: set[str]) -> tuple[bool, str]:
    """(negative, code of the magnitude) of a term: number, product, power, sign or symbol."""
    if e.is_Number:
        v = float(e)
        return v < 0, _num(abs(v))
    if e.is_Mul:
        args = e.args
        coeff = 1.0
        if args[0].is_Number:
            coeff, args = float(args[0]), args[1:]
        parts = [_factor(f, lang, names) for f in args]
        if abs(coeff) != 1.0:
            parts.insert(0, _num(abs(coeff)))
        return coeff < 0, "*".join(parts)
    return False, _factor(e, lang, names)


def _factor(e: Any, lang: str, names: set[str]) -> str:
    if e.is_Symbol:
        return _expr(e, lang, names)
    if e.is_Add:
        return f"({_expr(e, lang, names)})"
    if e.is_Pow:
        k = int(e.exp)
        if k != e.exp or k < 1:
            raise ValueError(f"cannot print the power {e}: positive integer exponents only")
        return "*".join([_factor(e.base, lang, names)] * k)
    if e.func.__name__ == "sign":
        return f"{_SIGN[lang]}({_expr(e.args[0], lang, names)})"
    neg, body = _signed(e, lang, names)
    return f"(-{body})" if neg else body


def _inputs(cm: Any, lang: str, used: set[str] | None = None) -> list[tuple[str, str]]:
    """(name, code) of the input atoms the program uses (``used``, default ``cm.used_inputs()``);
    ``q[j]`` etc. are column accessors."""
    used = cm.used_inputs() if used is None else used
    out: list[tuple[str, str]] = []
    if lang == "python":
        col = lambda a, j: f"{a}[:, {j}]"  # noqa: E731
    elif lang == "c":
        col = lambda a, j: f"{a}[{j}]"  # noqa: E731
    else:  # c4: gather 4 states (rows of q, qd, qdd; rows of fe with stride fs)
        col = lambda a, j: f"RD_GATHER({a}, {'fs' if a == 'fe' else 'RD_DOF'}, {j})"  # noqa: E731
    sin, cos = ("np.sin", "np.cos") if lang == "python" else ("sin", "cos")
    for j, (sigma, sign, offset) in enumerate(cm.joints, start=1):
        qv = col("q", j - 1) if sign > 0 else f"(-{col('q', j - 1)})"
        qv = f"({qv} + {_num(offset)})" if offset != 0.0 else qv
        if sigma == PRISMATIC:
            if f"Q{j}" in used:
                out.append((f"Q{j}", qv))
        else:
            if f"S{j}" in used or f"C{j}" in used:
                out.append((f"TH{j}", qv))
            if f"S{j}" in used:
                out.append((f"S{j}", f"{sin}(TH{j})"))
            if f"C{j}" in used:
                out.append((f"C{j}", f"{cos}(TH{j})"))
        neg = "-" if sign < 0 else ""
        if f"QP{j}" in used:
            out.append((f"QP{j}", f"{neg}{col('qd', j - 1)}"))
        if f"QDP{j}" in used:
            out.append((f"QDP{j}", f"{neg}{col('qdd', j - 1)}"))
    n = cm.dof
    for k, w in enumerate(_WRENCH):
        if f"{w}{n}" in used:
            out.append((f"{w}{n}", col("fe", k)))
    return out


def _output_signs(cm: Any) -> list[float]:
    """URDF sign of each flat output: tau_urdf_j = sign_j tau_mdh_j (row j of the regressor)."""
    signs = [s for _, s, _ in cm.joints]
    if cm.kind == "inertia_matrix":  # A_urdf = S A_mdh S with S = diag(sign)
        n = cm.dof
        return [signs[k // n] * signs[k % n] for k in range(n * n)]
    per_row = int(np.prod(cm.output_shape[1:])) if len(cm.output_shape) > 1 else 1
    return [signs[k // per_row] for k in range(len(cm.outputs))]
