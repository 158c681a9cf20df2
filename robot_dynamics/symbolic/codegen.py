"""Code emitters for customized models, their compiled cache, and the engine behind the dynamics API.

* :func:`python_source` — a NumPy function evaluating a customized program on a batch of states.
* :func:`python_scalar_source` — the same program for one state in plain Python floats (``math.sin``,
  ``q[j]``; no NumPy per operation): the single-state engine when no C compiler is available.
* :func:`c_source` — a CPython extension module (C API + NumPy C API) evaluating it in C: one state
  per call of a dedicated scalar function, or four states at a time in SIMD registers for a batch.
  Large programs are split into functions of bounded size, spread over several translation units
  compiled in parallel: gcc's register allocation time grows faster than linearly with the size of
  one straight-line function (the 24-joint regressor took 270 s as one function).
* :class:`Engine` — what :class:`~robot_dynamics.model.robot_model.RobotModel` calls for
  ``inverse_dynamics``, ``nonlinear_effects``, ``gravity_torques``, ``inertia_matrix``, ``regressor``
  and ``forward_dynamics``: the compiled customized program of the model (001 §7.5, §7.6.2) once it
  is ready, the NumPy model until then.  Once a function has been called ``ROBOT_DYNAMICS_COMPILE_AFTER``
  times (default 20; a batch of N states counts 1 + N/256; one-off calls never start anything), a
  background thread loads its program from the cache, or has it generated and compiled in a background
  process (one build at a time), progress reported by :mod:`logging` (logger ``robot_dynamics.symbolic.codegen``,
  never on stdout).  No caller ever waits for a compiler: until the program is loaded, calls use NumPy.
  A failed build is logged (warning) and NumPy stays in use.  Without a C compiler, or when the build
  failed, the inverse dynamics and H (``PYTHON_KINDS``) get the generated scalar Python program instead
  (:func:`python_scalar_source`, generated in a background thread, or in the caller's thread by
  ``model.compile(wait=True)``): single states run it (6 joints: ~8 µs per call vs 0.2-0.5 ms for NumPy), batches
  stay on NumPy; ``model.engine`` reports ``python``.  The generator's own calls of the API
  (e.g. the numerical base parameters) never start builds.  The compiled programs and the NumPy
  model agree to round-off (about 1e-15 relative), not bit for bit: where a run must be bitwise
  repeatable, choose the engine (``ROBOT_DYNAMICS_ENGINE``, :meth:`RobotModel.compile`,
  :meth:`RobotModel.set_backend`).
* :class:`GeneratedBackend` — the explicit, synchronous ``"generated"`` backend of
  :meth:`RobotModel.set_backend` (``lang="c"`` or ``"python"``, choice of parameters).

Environment
-----------
``ROBOT_DYNAMICS_ENGINE``
    ``auto`` (default: background compilation as above), ``compiled`` (the first call of each
    function compiles or loads its program and waits for it: deterministic, the compiled code from
    the first call on), ``numpy`` (never compile unless asked by ``model.compile()`` or
    ``set_backend("generated")``: the NumPy model only), ``python`` (never compile unless asked: the
    generated scalar Python program of ``PYTHON_KINDS`` for single states, generated at the first call,
    the NumPy model otherwise; deterministic, no C compiler involved).
``ROBOT_DYNAMICS_COMPILE_AFTER``
    calls before a background build starts (``auto``), default 20; 0 builds at the first call.
``ROBOT_DYNAMICS_CACHE``
    the cache directory; default ``$XDG_CACHE_HOME/robot_dynamics/codegen`` (``~/.cache/...``).
``CC``
    the C compiler (default ``gcc``, else ``cc``); none found: the NumPy model is used.

Cache
-----
One entry per compiled module: ``rdgen_<key><EXT_SUFFIX>`` and ``rdgen_<key>.json``.  The key
hashes the model description (:meth:`RobotModel.to_dict`), the program kind and options, the
generator's own source (the files of ``customized_model.py``, ``codegen.py`` and the package modules
the generator uses, see :func:`generator_hash`), the compiler (path, version, size and date of the
binary), the flags, the CPU (``-march=native``), Python and NumPy versions.  A build runs under an
exclusive lock file (``rdgen_<key>.lock``, so concurrent processes build once), writes into a
temporary directory and publishes by atomic renames, the shared object first, then the metadata
holding its SHA-256.  An entry is used only if its metadata parse, name its key and match the
checksum of the shared object; otherwise — or when loading fails — it is rebuilt once.

The generated functions take URDF joint values (``q, qd, qdd`` of shape ``(n,)`` or ``(N, n)``) and
an optional wrench ``fe`` ``(6,)``/``(N, 6)`` exerted by link n on the environment in R_n about O_n;
they check shapes and finiteness and return float64 arrays.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import json
import logging
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC

__all__ = [
    "ENGINE_ENV",
    "Engine",
    "GeneratedBackend",
    "build_module",
    "c_source",
    "cache_dir",
    "compile_c",
    "compiler",
    "generated_backend",
    "generator_hash",
    "load_python",
    "model_key",
    "python_scalar_source",
    "python_source",
    "release_buffers",
]

log = logging.getLogger(__name__)

ENGINE_ENV = "ROBOT_DYNAMICS_ENGINE"
COMPILE_AFTER_ENV = "ROBOT_DYNAMICS_COMPILE_AFTER"
CACHE_ENV = "ROBOT_DYNAMICS_CACHE"
DEFAULT_COMPILE_AFTER = 20
_WRENCH = ("FX", "FY", "FZ", "CX", "CY", "CZ")

# size of one generated C function, in characters of its statements (~8 per operation): gcc's
# compile time stays about linear in the program size with functions of this size (measured at
# 12-48 joints, see bench/bench_default_api.py --compile)
CHUNK_CHARS = 24_000
CFLAGS = ("-O2", "-march=native", "-fPIC", "-fno-math-errno", "-fno-semantic-interposition")
# programs larger than these (characters of C statements) get no 4-lane SIMD version / are compiled at -O1
SIMD_MAX_CHARS = 200_000
O1_MIN_CHARS = 200_000


def cache_dir() -> Path:
    """``$ROBOT_DYNAMICS_CACHE``, else ``$XDG_CACHE_HOME/robot_dynamics/codegen`` (default ``~/.cache/...``)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "robot_dynamics" / "codegen"


# --------------------------------------------------------------- printing (sympy expressions, no sympy import)
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


def python_source(cm: Any, func_name: str = "generated") -> str:
    """Source of ``func_name(q, qd, qdd, fe=None)``: NumPy, vectorized over (N, n) batches."""
    vals = cm.constant_values()
    lines = [
        f"# customized {cm.kind} of {cm.name!r} ({cm.parameters} parameters, simplified={cm.simplified})",
        f"# generated by robot_dynamics.symbolic.codegen (generator {generator_hash()[:12]}): "
        + ", ".join(f"{k}={v}" for k, v in cm.counts().items()),
        "import numpy as np",
        "",
    ]
    for k in sorted(vals):
        lines.append(f"{k} = {_num(vals[k])}")
    lines += ["", "", f"def {func_name}(q, qd, qdd, fe=None):", "    nb = q.shape[0]"]
    if cm.wrench:
        lines.append("    if fe is None:")
        lines.append("        fe = np.zeros((nb, 6))")
    for name, code in _inputs(cm, "python"):
        lines.append(f"    {name} = {code}")
    for st in cm.body:
        lines.append(f"    {st.name} = {_expr(st.expr, 'python')}")
    shape = ", ".join(str(s) for s in cm.output_shape)
    lines.append(f"    out = np.zeros((nb, {len(cm.outputs)}))")
    for k, (o, s) in enumerate(zip(cm.outputs, _output_signs(cm), strict=True)):
        if o != 0:
            lines.append(f"    out[:, {k}] = {'-' if s < 0 else ''}({_expr(o, 'python')})")
    lines.append(f"    return out.reshape((nb, {shape}))")
    return "\n".join(lines) + "\n"


def load_python(source: str, func_name: str = "generated") -> Callable[..., np.ndarray]:
    """Execute a generated Python source and return its function."""
    ns: dict[str, Any] = {}
    exec(compile(source, f"<generated {func_name}>", "exec"), ns)  # noqa: S102 - our own generated code
    return ns[func_name]


# --------------------------------------------------------------- Python: one state in plain floats
_SIGN_OF_NAME = re.compile(r"RD_SIGN\((\w+)\)")
# kinds whose scalar Python program the engine generates when it has no compiled one (the control laws' call)
PYTHON_KINDS = ("id",)


def _scalar(c: str) -> str:
    """The C text of an expression as Python: the sign of a name inline, of an expression by ``_sgn``."""
    return _SIGN_OF_NAME.sub(r"(1.0 if \1 > 0.0 else -1.0 if \1 < 0.0 else 0.0)", c).replace("RD_SIGN(", "_sgn(")


def python_scalar_source(cm: Any, func_name: str = "generated") -> str:
    """Source of ``func_name(q, qd=(), qdd=(), fe=(0.0,) * 6)``: one state, plain Python floats.

    The statements of :func:`python_source` (the same customized program, 001 §7.5) printed for scalars:
    ``q[j]`` are floats of sequences (lists: index them, no NumPy per operation), ``math.sin``/``math.cos``,
    the constants are cells of a closure (no global lookups); returns the flat outputs (URDF signs applied,
    :func:`_output_signs`) as a list of floats.  The single-state program of :class:`Engine` when no C
    compiler is available (6 joints: ~5 µs, 6x faster than the hand-written scalar Newton–Euler it replaced)."""
    vals = cm.constant_values()
    lines = [
        f"# customized {cm.kind} of {cm.name!r} ({cm.parameters} parameters, simplified={cm.simplified}): "
        "one state, plain floats",
        f"# generated by robot_dynamics.symbolic.codegen (generator {generator_hash()[:12]}): "
        + ", ".join(f"{k}={v}" for k, v in cm.counts().items()),
        "",
        "",
        "def _make():",
        "    from math import cos, sin",
        "",
        "    def _sgn(x):",
        "        return 1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0",
        "",
    ]
    lines += [f"    {k} = {_num(vals[k])}" for k in sorted(vals)]
    lines += ["", f"    def {func_name}(q, qd=(), qdd=(), fe=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)):"]
    lines += [f"        {name} = {code}" for name, code in _inputs(cm, "c")]
    lines += [f"        {st.name} = {_scalar(_expr(st.expr, 'c'))}" for st in cm.body]
    outs = ["0.0" if o == 0 else f"{'-' if s < 0 else ''}({_scalar(_expr(o, 'c'))})"
            for o, s in zip(cm.outputs, _output_signs(cm), strict=True)]
    lines += ["        return [" + ", ".join(outs) + "]", "", f"    return {func_name}", "", "", f"{func_name} = _make()"]
    return "\n".join(lines) + "\n"


def _instead(kind: str) -> str:
    """What runs ``kind`` when it has no compiled program (log messages)."""
    return "the generated scalar Python program takes over" if kind in PYTHON_KINDS else "the NumPy model stays in use"


def _scalar_id_entries(model: Any, f: Callable[..., list[float]],
                       numpy: dict[str, Callable[..., np.ndarray]]) -> dict[str, Callable[..., np.ndarray]]:
    """``evaluate(q, qd, qdd)`` and ``nle(q, qd)`` running the scalar inverse dynamics ``f``
    (:func:`python_scalar_source`) for one state of finite (n,) vectors; anything else (a batch, NaN, a
    wrong shape, a division by zero) goes to the NumPy model ``numpy[...]``, which validates and raises."""
    n = model.dof
    shape, zeros = (n,), [0.0] * n
    ndarray, f64, asarray, array, isfinite = np.ndarray, np.dtype(np.float64), np.asarray, np.array, math.isfinite

    def floats(x: Any) -> list[float] | None:
        if type(x) is not ndarray or x.dtype != f64:
            try:
                x = asarray(x, dtype=f64)
            except (TypeError, ValueError):
                return None
        return x.tolist() if x.shape == shape else None

    def evaluate(q: Any, qd: Any, qdd: Any) -> np.ndarray:
        a, b, c = floats(q), floats(qd), floats(qdd)
        # a finite sum: every value is finite (NaN and inf propagate)
        if a is not None and b is not None and c is not None and isfinite(sum(a) + sum(b) + sum(c)):
            try:
                return array(f(a, b, c))
            except ArithmeticError:
                pass
        return numpy["id"](model, q, qd, qdd)

    def nle(q: Any, qd: Any) -> np.ndarray:
        a, b = floats(q), floats(qd)
        if a is not None and b is not None and isfinite(sum(a) + sum(b)):
            try:
                return array(f(a, b, zeros))
            except ArithmeticError:
                pass
        return numpy["nle"](model, q, qd)

    return {"evaluate": evaluate, "nle": nle}


# --------------------------------------------------------------- C: programs
_C_COMMON = r"""
#ifndef RD_COMMON_H
#define RD_COMMON_H
#include <math.h>
#include <stdlib.h>
#include <string.h>
#define RD_SIGN(x) ((double)(((x) > 0) - ((x) < 0)))
#define RD_HIDDEN __attribute__((visibility("hidden")))
#define RD_PART __attribute__((visibility("hidden"), noinline))
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4l __attribute__((vector_size(32)));
#define RD_GATHER(a, st, j) ((v4d){(a)[j], (a)[(st) + (j)], (a)[2 * (st) + (j)], (a)[3 * (st) + (j)]})

static inline v4d rd_sign4(v4d x) {
    v4l a = x > 0.0, b = x < 0.0;  /* -1 where true */
    return __builtin_convertvector(b - a, v4d);
}

/* sin and cos of 4 angles: Cody-Waite reduction by pi/2 (fdlibm's 33-bit split) and the
   Cephes minimax polynomials on [-pi/4, pi/4] (about 1 ulp); libm beyond |x| > 1e5. */
static inline void rd_sincos4(v4d x, v4d *s, v4d *c) {
    if (fabs(x[0]) > 1e5 || fabs(x[1]) > 1e5 || fabs(x[2]) > 1e5 || fabs(x[3]) > 1e5) {
        for (int l = 0; l < 4; l++) { (*s)[l] = sin(x[l]); (*c)[l] = cos(x[l]); }
        return;
    }
    const double magic = 6755399441055744.0; /* 1.5 * 2^52: round to nearest integer */
    v4d kd = x * 0.63661977236758134308 + magic;
    v4l k = (v4l)kd;
    kd = kd - magic;
    v4d r = ((x - kd * 1.57079632673412561417e+00) - kd * 6.07710050630396597660e-11) - kd * 2.02226624871116645580e-21;
    v4d z = r * r;
    v4d sr = r + r * z * (((((1.58962301576546568060e-10 * z - 2.50507477628578072866e-8) * z
              + 2.75573136213857245213e-6) * z - 1.98412698295895385996e-4) * z + 8.33333333332211858878e-3) * z
              - 1.66666666666666307295e-1);
    v4d cr = 1.0 - 0.5 * z + z * z * (((((-1.13585365213876817300e-11 * z + 2.08757008419747316778e-9) * z
              - 2.75573141792967388112e-7) * z + 2.48015872888517045348e-5) * z - 1.38888888888730564116e-3) * z
              + 4.16666666666665929218e-2);
    v4l swap = -(k & 1);                    /* all ones for odd quadrants */
    v4l si = ((v4l)cr & swap) | ((v4l)sr & ~swap);
    v4l ci = ((v4l)sr & swap) | ((v4l)cr & ~swap);
    v4l sgn_s = (k & 2) << 62, sgn_c = ((k + 1) & 2) << 62;
    *s = (v4d)(si ^ sgn_s);
    *c = (v4d)(ci ^ sgn_c);
}
#endif
"""

_STACK_BYTES = 131072  # work arrays larger than this are allocated on the heap


class _Item:
    """One line of a program: an input atom, a statement, or an output store."""

    __slots__ = ("name", "c", "c4", "deps", "consts", "out", "trig", "cost")

    def __init__(self, name: str | None, c: str, c4: str, deps: set[str], consts: set[str],
                 out: tuple[int, float] | None = None, trig: int = 0) -> None:
        self.name, self.c, self.c4, self.deps, self.consts, self.out, self.trig = name, c, c4, deps, consts, out, trig
        self.cost = len(c) + 16


def _program_items(cm: Any, vals: dict[str, float]) -> tuple[list[_Item], int]:
    """Inputs, statements and outputs in evaluation order (each output right after its last operand).

    The 4-lane code of a statement is its scalar code with the vector ``sign``; inputs differ."""
    body = cm.body
    at = {st.name: i for i, st in enumerate(body)}
    read: set[str] = set()

    def printed(e: Any) -> tuple[str, str, set[str]]:
        names: set[str] = set()
        c = _expr(e, "c", names)
        read.update(names)
        return c, c.replace("RD_SIGN(", "rd_sign4("), names

    stmts = [printed(st.expr) for st in body]
    outs = [(k, sg, printed(o)) for k, (o, sg) in enumerate(zip(cm.outputs, _output_signs(cm), strict=True))
            if o != 0]
    used = read - set(at) - vals.keys()  # the run-time inputs (S1, C1, QP1, ...)
    items: list[_Item] = []
    c4_inputs = dict(_inputs(cm, "c4", used))
    for name, code in _inputs(cm, "c", used):
        trig = int(name[1:]) if name[0] in "SC" and code.startswith(("sin(", "cos(")) else 0
        items.append(_Item(name, code, c4_inputs[name], {f"TH{trig}"} if trig else set(), set(), trig=trig))
    n_inputs = len(items)
    defined = {it.name for it in items} | set(at)

    def item(name: str | None, c: str, c4: str, names: set[str], out: tuple[int, float] | None = None) -> _Item:
        return _Item(name, c, c4, names & defined, {k for k in names if k in vals}, out=out)

    outputs: dict[int, list[_Item]] = {}
    for k, sg, (c, c4, names) in outs:
        last = max((at[s] for s in names if s in at), default=-1)
        outputs.setdefault(last, []).append(
            item(None, f"{'-' if sg < 0 else ''}({c})", f"{'-' if sg < 0 else '+'} ({c4})", names, (k, sg)))
    items += outputs.get(-1, [])
    for i, (st, (c, c4, names)) in enumerate(zip(body, stmts, strict=True)):
        items.append(item(st.name, c, c4, names))
        items += outputs.get(i, [])
    return items, n_inputs


def _chunks(items: list[_Item], n_inputs: int, budget: int) -> list[list[int]]:
    """Split the item indices into consecutive parts of about ``budget`` characters (inputs in the first)."""
    parts: list[list[int]] = [list(range(n_inputs))]
    acc = sum(items[i].cost for i in parts[0])
    for i in range(n_inputs, len(items)):
        if acc > budget and parts[-1]:
            parts.append([])
            acc = 0
        parts[-1].append(i)
        acc += items[i].cost
    return [p for p in parts if p] or [[]]


def _program_units(cm: Any, prefix: str, units: int = 1, budget: int | None = None,
                   simd: bool | None = None) -> tuple[list[str], str]:
    """C translation units of one program and the declarations of its two entry points::

        int <prefix>_eval(q, qd, qdd, fe, out)        one state; out: the flat outputs
        int <prefix>_eval4(q, qd, qdd, fe, fs, out)   four consecutive states (rows), SIMD lanes

    (0 = success, -1 = out of memory).  The statements are cut into parts of ``budget`` characters,
    each a function of its own (values crossing parts go through a work array); the parts are spread
    over at most ``units`` translation units.  ``simd`` (default: programs up to ``SIMD_MAX_CHARS``):
    emit the 4-lane version, else ``_eval4`` runs the scalar one four times (half the code to compile)."""
    budget = CHUNK_CHARS if budget is None else budget
    vals = cm.constant_values()
    items, n_inputs = _program_items(cm, vals)
    parts = _chunks(items, n_inputs, budget)
    size = sum(it.cost for it in items)
    simd = size <= SIMD_MAX_CHARS if simd is None else simd
    nout = len(cm.outputs)
    zero_fill = any(o == 0 for o in cm.outputs)
    part_of = {}
    for p, idx in enumerate(parts):
        for i in idx:
            if items[i].name is not None:
                part_of[items[i].name] = p
    slots: dict[str, int] = {}
    loads: list[list[str]] = [[] for _ in parts]
    for p, idx in enumerate(parts):
        seen: set[str] = set()
        for i in idx:
            for d in items[i].deps:
                if part_of[d] != p and d not in seen:
                    seen.add(d)
                    loads[p].append(d)
                    if d not in slots:
                        slots[d] = len(slots)
    nw = max(len(slots), 1)
    single = len(parts) == 1

    def part_code(p: int, lang: str) -> list[str]:
        c4 = lang == "c4"
        t = "v4d" if c4 else "double"
        lines = []
        if c4:
            lines.append("    const v4d RD_Z4 = {0.0, 0.0, 0.0, 0.0};")
        for d in sorted(loads[p], key=slots.__getitem__):
            lines.append(f"    const {t} {d} = w[{slots[d]}];")
        done_trig: set[int] = set()
        for i in parts[p]:
            it = items[i]
            if it.out is not None:
                k, _ = it.out
                if c4:
                    lines.append(f"    {{ const v4d t = RD_Z4 {it.c4};")
                    lines.append(f"      out[{k}] = t[0]; out[{nout} + {k}] = t[1]; out[{2 * nout} + {k}] = t[2];"
                                 f" out[{3 * nout} + {k}] = t[3]; }}")
                else:
                    lines.append(f"    out[{k}] = {it.c};")
                continue
            if c4 and it.trig:
                j = it.trig
                if j not in done_trig:
                    done_trig.add(j)
                    lines.append(f"    v4d S{j}, C{j};")
                    lines.append(f"    rd_sincos4(TH{j}, &S{j}, &C{j});")
            elif c4:
                lines.append(f"    const v4d {it.name} = RD_Z4 + {it.c4};")
            else:
                lines.append(f"    const double {it.name} = {it.c};")
            if it.name in slots:
                lines.append(f"    w[{slots[it.name]}] = {it.name};")
        return lines

    args1 = ("const double *restrict q, const double *restrict qd, const double *restrict qdd, "
             "const double *restrict fe")
    void = "    (void)q; (void)qd; (void)qdd; (void)fe;"

    def part_fn(p: int, lang: str) -> str:
        c4 = lang == "c4"
        sig = (f"RD_PART void {prefix}_p{p}{'_4' if c4 else ''}({args1}, {'int fs, ' if c4 else ''}"
               f"{'v4d' if c4 else 'double'} *restrict w, double *restrict out)")
        body = [void + (" (void)fs;" if c4 else "") + " (void)w;", *part_code(p, lang)]
        return sig + " {\n" + "\n".join(body) + "\n}\n"

    def consts_of(ps: list[int]) -> str:
        names: set[str] = set()
        for p in ps:
            for i in parts[p]:
                names |= items[i].consts
        return "".join(f"static const double {k} = {_num(vals[k])};\n" for k in sorted(names))

    def driver(lang: str) -> str:
        c4 = lang == "c4"
        t = "v4d" if c4 else "double"
        if c4 and not simd:
            return (f"RD_HIDDEN int {prefix}_eval4(const double *q, const double *qd, const double *qdd, "
                    f"const double *fe, int fs, double *restrict out) {{\n"
                    f"    for (int l = 0; l < 4; l++) {{\n"
                    f"        int rc = {prefix}_eval(q + l * RD_DOF, qd + l * RD_DOF, qdd + l * RD_DOF, fe + l * fs,"
                    f" out + l * {nout});\n        if (rc) return rc;\n    }}\n    return 0;\n}}\n")
        size = 32 if c4 else 8
        nfill = 4 * nout if c4 else nout
        head = (f"RD_HIDDEN int {prefix}_eval{'4' if c4 else ''}(const double *q, const double *qd, const double *qdd, "
                f"const double *fe, {'int fs, ' if c4 else ''}double *restrict out) {{")
        lines = [head]
        if zero_fill:
            lines.append(f"    memset(out, 0, {nfill} * sizeof(double));")
        if single:
            lines.append("    (void)q; (void)qd; (void)qdd; (void)fe;" + (" (void)fs;" if c4 else ""))
            lines += part_code(0, lang)
            lines.append("    return 0;")
            return "\n".join(lines) + "\n}\n"
        heap = nw * size > _STACK_BYTES
        if heap:
            alloc = f"aligned_alloc(32, {nw * size})" if c4 else f"malloc({nw * size})"
            lines.append(f"    {t} *w = ({t} *){alloc};")
            lines.append("    if (w == NULL) return -1;")
        else:
            lines.append(f"    {t} w[{nw}];")
        call_args = "q, qd, qdd, fe, " + ("fs, " if c4 else "") + "w, out"
        for p in range(len(parts)):
            lines.append(f"    {prefix}_p{p}{'_4' if c4 else ''}({call_args});")
        if heap:
            lines.append("    free(w);")
        lines.append("    return 0;")
        return "\n".join(lines) + "\n}\n"

    head = (f"/* customized {cm.kind} of {cm.name!r} ({cm.parameters} parameters, simplified={cm.simplified}): "
            f"{cm.dof} joints, {len(items) - n_inputs} statements and outputs in {len(parts)} part(s)"
            f"{'' if simd else ', no SIMD version'} */\n")
    common = _C_COMMON + f"#ifndef RD_DOF\n#define RD_DOF {cm.dof}\n#endif\n"
    decls = (f"RD_HIDDEN int {prefix}_eval(const double *q, const double *qd, const double *qdd, const double *fe,"
             f" double *restrict out);\n"
             f"RD_HIDDEN int {prefix}_eval4(const double *q, const double *qd, const double *qdd, const double *fe,"
             f" int fs, double *restrict out);\n")
    if single:
        return [head + common + consts_of([0]) + driver("c") + driver("c4")], decls
    # spread the parts over the units by cost
    units = max(1, min(units, len(parts)))
    costs = [sum(items[i].cost for i in idx) for idx in parts]
    total = sum(costs)
    groups: list[list[int]] = [[]]
    acc = 0.0
    for p, c in enumerate(costs):
        if acc >= total / units * len(groups) and len(groups) < units:
            groups.append([])
        groups[-1].append(p)
        acc += c
    out = []
    for g, ps in enumerate(groups):
        text = head + common + consts_of(ps)
        if g == 0:
            for p in range(len(parts)):
                if p not in ps:
                    text += f"RD_PART void {prefix}_p{p}({args1}, double *restrict w, double *restrict out);\n"
                    if simd:
                        text += f"RD_PART void {prefix}_p{p}_4({args1}, int fs, v4d *restrict w, double *restrict out);\n"
        for p in ps:
            text += part_fn(p, "c") + (part_fn(p, "c4") if simd else "")
        if g == 0:
            text += driver("c") + driver("c4")
        out.append(text if size <= O1_MIN_CHARS else f"/* rd-flags: -O1 */\n{text}")
    return out, decls


# --------------------------------------------------------------- C: the Python module
_C_MODULE_HEAD = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
"""

_C_RUNNER = r"""
typedef int (*rd_one_fn)(const double *const *in, const double *fe, double *out);
typedef int (*rd_four_fn)(const double *const *in, const double *fe, int fs, double *out);

typedef struct {
    int nstate, has_fe, ond;
    npy_intp nout, odims[2];
    const char *names[3];
    const char *usage;
    rd_one_fn one;
    rd_four_fn four;
    PyObject **cache;  /* the last big output, reused once nothing else references it (rd_output) */
} rd_entry;

/* Outputs of RD_REUSE_MIN..RD_REUSE_MAX bytes: a fresh array that size costs more in page faults and the
   kernel's zeroing of its pages than the program costs to fill it, so each entry keeps its last big output
   and hands it out again when its only reference is the cache's own (the caller dropped it and every view
   of it), with the same shape, C-contiguous, writeable float64.  Every output element is written by the
   programs, so nothing of the previous result survives.  rd_release() drops the cached arrays. */
#define RD_REUSE_MIN (4L << 20)
#define RD_REUSE_MAX (256L << 20)

static PyObject *rd_output(const rd_entry *e, int ond, npy_intp *dims) {
    npy_intp total = 8;
    for (int k = 0; k < ond; k++) total *= dims[k];
    if (total < RD_REUSE_MIN || total > RD_REUSE_MAX) return PyArray_SimpleNew(ond, dims, NPY_DOUBLE);
    PyObject *c = *e->cache;
    if (c != NULL && Py_REFCNT(c) == 1 && PyArray_CheckExact(c)) {
        PyArrayObject *a = (PyArrayObject *)c;
        int same = PyArray_NDIM(a) == ond && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_ISCARRAY(a) &&
                   PyArray_ISNOTSWAPPED(a) && PyArray_BASE(a) == NULL;
        for (int k = 0; same && k < ond; k++) same = PyArray_DIM(a, k) == dims[k];
        if (same) {
            Py_INCREF(c);
            return c;
        }
    }
    PyObject *o = PyArray_SimpleNew(ond, dims, NPY_DOUBLE);
    if (o != NULL) {
        Py_INCREF(o);
        Py_XSETREF(*e->cache, o);
    }
    return o;
}

static const double rd_zero[4 * RD_DOF > 6 ? 4 * RD_DOF : 6];

static void rd_shape(PyArrayObject *a, char *buf, size_t len) {
    int nd = PyArray_NDIM(a);
    size_t p = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < nd && p < len; i++) p += (size_t)snprintf(buf + p, len - p, i ? ", %ld" : "%ld", (long)PyArray_DIM(a, i));
    if (p < len) snprintf(buf + p, len - p, nd == 1 ? ",)" : ")");
}

static int rd_finite(PyArrayObject *a, const char *what) {
    const double *v = (const double *)PyArray_DATA(a);
    npy_intp m = PyArray_SIZE(a);
    for (npy_intp i = 0; i < m; i++) {
        if (!isfinite(v[i])) {
            PyErr_Format(PyExc_ValueError, "%s contains NaN or inf", what);
            return -1;
        }
    }
    return 0;
}

/* the array itself when it is a C-contiguous float64 ndarray (borrowed), else a converted copy in *hold */
static PyArrayObject *rd_array(PyObject *o, PyObject **hold) {
    if (PyArray_CheckExact(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_TYPE(a) == NPY_DOUBLE && PyArray_ISCARRAY_RO(a) && PyArray_ISNOTSWAPPED(a)) return a;
    }
    *hold = PyArray_FROMANY(o, NPY_DOUBLE, 0, 0, NPY_ARRAY_IN_ARRAY);
    return (PyArrayObject *)*hold;
}

static PyObject *rd_run(const rd_entry *e, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < e->nstate || nargs > e->nstate + e->has_fe) {
        PyErr_Format(PyExc_TypeError, "expected %s", e->usage);
        return NULL;
    }
    PyObject *hold[4] = {NULL, NULL, NULL, NULL};
    PyObject *out = NULL;
    const double *in[3] = {NULL, NULL, NULL};
    const double *fe = rd_zero;
    int fs = 0, nd = 1, k, rc = 0;
    npy_intp nb = 1;
    char s1[64], s2[64];
    PyArrayObject *first = NULL;
    for (k = 0; k < e->nstate; k++) {
        PyArrayObject *a = rd_array(args[k], &hold[k]);
        if (a == NULL) goto done;
        int d = PyArray_NDIM(a);
        if (d < 1 || d > 2 || PyArray_DIM(a, d - 1) != RD_DOF) {
            rd_shape(a, s1, sizeof s1);
            PyErr_Format(PyExc_ValueError, "%s must have shape (%d,) or (N, %d), got %s", e->names[k], RD_DOF, RD_DOF, s1);
            goto done;
        }
        if (rd_finite(a, e->names[k])) goto done;
        if (k == 0) {
            first = a;
            nd = d;
            nb = d == 2 ? PyArray_DIM(a, 0) : 1;
        } else if (d != nd || (d == 2 && PyArray_DIM(a, 0) != nb)) {
            rd_shape(a, s1, sizeof s1);
            rd_shape(first, s2, sizeof s2);
            PyErr_Format(PyExc_ValueError, "%s has shape %s, expected %s like %s", e->names[k], s1, s2, e->names[0]);
            goto done;
        }
        in[k] = (const double *)PyArray_DATA(a);
    }
    for (; k < 3; k++) in[k] = in[0];
    if (e->has_fe && nargs > e->nstate && args[e->nstate] != Py_None) {
        PyArrayObject *f = rd_array(args[e->nstate], &hold[3]);
        if (f == NULL) goto done;
        int fd = PyArray_NDIM(f);
        if (fd < 1 || fd > 2 || PyArray_DIM(f, fd - 1) != 6 || (fd == 2 && (nd != 2 || PyArray_DIM(f, 0) != nb))) {
            PyErr_SetString(PyExc_ValueError, "fe must have shape (6,) or (N, 6)");
            goto done;
        }
        if (rd_finite(f, "fe")) goto done;
        fe = (const double *)PyArray_DATA(f);
        fs = fd == 2 ? 6 : 0;
    }
    npy_intp dims[3];
    int ond = 0;
    if (nd == 2) dims[ond++] = nb;
    for (k = 0; k < e->ond; k++) dims[ond++] = e->odims[k];
    out = rd_output(e, ond, dims);
    if (out == NULL) goto done;
    double *ov = (double *)PyArray_DATA((PyArrayObject *)out);
    if (nd == 1) {
        rc = e->one(in, fe, ov);
    } else {
        npy_intp b = 0;
        const double *ib[3];
        Py_BEGIN_ALLOW_THREADS
        for (; b + 4 <= nb && rc == 0; b += 4) {  /* 4 states at a time in SIMD registers */
            for (k = 0; k < 3; k++) ib[k] = in[k] + b * RD_DOF;
            rc = e->four(ib, fe + b * fs, fs, ov + b * e->nout);
        }
        for (; b < nb && rc == 0; b++) {
            for (k = 0; k < 3; k++) ib[k] = in[k] + b * RD_DOF;
            rc = e->one(ib, fe + b * fs, ov + b * e->nout);
        }
        Py_END_ALLOW_THREADS
    }
    if (rc == -1) {
        PyErr_NoMemory();
    } else if (rc == -2) {
        PyErr_SetString(PyExc_ValueError, "non-finite accelerations: the inertia matrix is not positive definite "
                                          "(check the inertial parameters) or the states overflow");
    }
    if (rc) Py_CLEAR(out);
done:
    for (k = 0; k < 4; k++) Py_XDECREF(hold[k]);
    return out;
}

static int rd_check_finite(int rc, const double *out, npy_intp m) {
    if (rc) return rc;
    for (npy_intp i = 0; i < m; i++) if (!isfinite(out[i])) return -2;
    return 0;
}
"""

# entry modes: "prog" calls the program with (q, qd, qdd); "nle" with q̈ = 0; "fd" checks the outputs are finite
_MODULE_ENTRIES: dict[str, list[tuple[str, str, str, tuple[str, ...], bool, str]]] = {
    # kind: [(python name, mode, program, state names, wrench, docstring)]
    "id": [("evaluate", "prog", "id", ("q", "qd", "qdd"), True, "Joint efforts (001 eqs. 7.51-7.61)."),
           ("nle", "nle", "id", ("q", "qd"), True, "H(q, qd) = efforts at zero acceleration (001 eq. 7.62).")],
    "gravity": [("evaluate", "prog", "gravity", ("q",), False, "Gravity efforts Q(q).")],
    "inertia": [("evaluate", "prog", "inertia", ("q",), False, "Inertia matrix A(q) with rotor inertias.")],
    "regressor": [("evaluate", "prog", "regressor", ("q", "qd", "qdd"), False, "Standard regressor W (001 eq. 9.3).")],
    "fd": [("evaluate", "fd", "fd", ("q", "qd", "tau"), True, "Joint accelerations (001 sec. 7.6.2).")],
}


def _module_unit(entries: list[tuple[str, str, str, tuple[str, ...], bool, str]], module_name: str,
                 programs: dict[str, Any], decls: dict[str, str]) -> str:
    """The C unit of the Python module ``module_name``: argument checks and the ``entries``."""
    dof = next(iter(programs.values())).dof
    text = [_C_MODULE_HEAD, _C_COMMON, f"#define RD_DOF {dof}\n", *decls.values(), _C_RUNNER]
    methods = []
    for k, (pyname, mode, prog, names, wrench, doc) in enumerate(entries):
        cm = programs[prog]
        nout = len(cm.outputs)
        shape = list(cm.output_shape)
        a = ", ".join(f"in[{i}]" for i in range(3)) if mode != "nle" else "in[0], in[1], rd_zero"
        one = f"{prog}_eval({a}, fe, out)"
        four = f"{prog}_eval4({a}, fe, fs, out)"
        if mode == "fd":
            one = f"rd_check_finite({one}, out, {nout})"
            four = f"rd_check_finite({four}, out, {4 * nout})"
        usage = f"{pyname}({', '.join(names)}{'[, fe]' if wrench else ''})"
        nm = (list(names) + ["q", "q"])[:3]
        text.append(
            f"static int e{k}_one(const double *const *in, const double *fe, double *out) {{ return {one}; }}\n"
            f"static int e{k}_four(const double *const *in, const double *fe, int fs, double *out) "
            f"{{ return {four}; }}\n"
            f"static PyObject *rd_cache_e{k} = NULL;\n"
            f"static const rd_entry rd_e{k} = {{{len(names)}, {int(wrench)}, {len(shape)}, {nout}, "
            f"{{{shape[0]}, {shape[1] if len(shape) > 1 else 0}}}, {{{', '.join(json.dumps(x) for x in nm)}}}, "
            f"{json.dumps(usage)}, e{k}_one, e{k}_four, &rd_cache_e{k}}};\n"
            f"static PyObject *py_e{k}(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{\n"
            f"    (void)self;\n    return rd_run(&rd_e{k}, args, nargs);\n}}\n"
        )
        methods.append(f'    {{"{pyname}", (PyCFunction)(void (*)(void))py_e{k}, METH_FASTCALL, '
                       f"{json.dumps(usage + ': ' + doc)}}},")
    text.append("static PyObject *rd_release(PyObject *self, PyObject *unused) {\n    (void)self; (void)unused;\n"
                + "".join(f"    Py_CLEAR(rd_cache_e{k});\n" for k in range(len(entries)))
                + "    Py_RETURN_NONE;\n}\n")
    methods.append('    {"release", (PyCFunction)rd_release, METH_NOARGS, "Drop the big outputs kept for reuse."},')
    text.append("static PyMethodDef methods[] = {\n" + "\n".join(methods) + "\n    {NULL, NULL, 0, NULL}\n};\n")
    text.append(f"static struct PyModuleDef moddef = {{PyModuleDef_HEAD_INIT, {json.dumps(module_name)}, NULL, -1, "
                f"methods, NULL, NULL, NULL, NULL}};\n"
                f"PyMODINIT_FUNC PyInit_{module_name}(void) {{\n    import_array();\n"
                f"    return PyModule_Create(&moddef);\n}}\n")
    return "".join(text)


def module_sources(kind: str, programs: dict[str, Any], module_name: str, units: int = 1) -> list[str]:
    """C units of the extension module ``module_name`` of ``kind`` (``id``, ``gravity``, ``inertia``,
    ``regressor``, ``fd``): the module unit first, then the program units."""
    prog_units: list[str] = []
    decls: dict[str, str] = {}
    for prefix, cm in programs.items():
        u, d = _program_units(cm, prefix, units=units)
        prog_units += u
        decls[prefix] = d
    return [_module_unit(_MODULE_ENTRIES[kind], module_name, programs, decls), *prog_units]


def c_source(cm: Any, module_name: str = "rdgen") -> str:
    """C source (one file) of a CPython extension ``module_name`` with ``evaluate(q, qd, qdd[, fe])``
    evaluating the customized program ``cm`` (any kind: the same three state arguments)."""
    units, _ = _program_units(cm, "prog", units=1)
    entries = [("evaluate", "prog", "prog", ("q", "qd", "qdd"), cm.wrench, f"customized {cm.kind}.")]
    head = units[0].split("\n", 1)[0] + "\n"
    module = _module_unit(entries, module_name, {"prog": cm}, {"prog": ""})
    # one file: Python.h first, then the program, then the module (the declarations are definitions above)
    i = module.index("typedef int (*rd_one_fn)")
    return head + module[:i] + units[0] + module[i:]


# --------------------------------------------------------------- compiler and cache key
def compiler() -> str | None:
    """Path of the C compiler (``$CC`` or gcc/cc) or None."""
    cc = os.environ.get("CC")
    if cc and shutil.which(cc):
        return shutil.which(cc)
    return shutil.which("gcc") or shutil.which("cc")


@lru_cache(maxsize=8)
def _compiler_id(cc: str) -> str:
    """Compiler identity: resolved path, size and date of the binary, and its version."""
    real = os.path.realpath(cc)
    st = os.stat(real)
    try:
        ver = subprocess.run([cc, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        ver = "?"
    return f"{real}:{st.st_size}:{st.st_mtime_ns}:{ver}"


@lru_cache(maxsize=1)
def _host_tag() -> str:
    """Machine and CPU flags (the extension is built with -march=native), Python and NumPy versions."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return (f"{platform.machine()}:{sys.implementation.cache_tag}:{sysconfig.get_config_var('EXT_SUFFIX')}:"
            f"numpy {np.__version__}:{hashlib.sha256(flags.encode()).hexdigest()[:12]}")


_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)", re.MULTILINE)


def _generator_files() -> list[Path]:
    """codegen.py, customized_model.py and the package modules they import (at module level or inside
    functions, e.g. the base parameters), read from their ``from .x import`` statements."""
    here = Path(__file__).resolve().parent
    roots = [here / "codegen.py", here / "customized_model.py"]
    files = set(roots)
    for f in roots:
        try:
            text = f.read_text()
        except OSError:
            continue
        for dots, mod, names in _RELATIVE_IMPORT.findall(text):
            base = f.parent
            for _ in range(len(dots) - 1):
                base = base.parent
            cands = [base.joinpath(*mod.split(".")).with_suffix(".py")] if mod else \
                [base / f"{n.strip().split()[0]}.py" for n in names.split(",") if n.strip()]
            files.update(c for c in cands if c.is_file())
    return sorted(files)


def _generator_sources() -> list[tuple[str, bytes]]:
    """(file name, content) of the generator's source files (:func:`_generator_files`)."""
    out = []
    for f in _generator_files():
        try:
            out.append((f.name, f.read_bytes()))
        except OSError:  # no source next to the bytecode: the file name alone
            out.append((f.name, b""))
    return out


def _hash_sources() -> str:
    h = hashlib.sha256()
    for name, data in _generator_sources():
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def generator_hash() -> str:
    """SHA-256 of the generator's source files (:func:`_generator_sources`) as this process imported
    them (computed once, when this module is imported): part of every cache key."""
    return _hash_sources()


def _check_generator_unchanged() -> None:
    """Refuse to build when the generator's files changed on disk since they were hashed: the code
    running here would be published under the key of another source."""
    if _hash_sources() != generator_hash():
        raise RuntimeError("the generator's source files changed since this process imported them: "
                           "restart it to compile programs")


def model_key(model: Any, **options: Any) -> str:
    """Cache key: the model description, the options (kind, language, parameters), the generator's
    source, the compiler and flags, the host."""
    cc = compiler()
    desc = json.dumps({
        "model": model.to_dict(), "options": options, "generator": generator_hash(),
        "compiler": _compiler_id(cc) if cc else None, "flags": CFLAGS, "host": _host_tag(),
        "split": (CHUNK_CHARS, SIMD_MAX_CHARS, O1_MIN_CHARS, _STACK_BYTES),
    }, sort_keys=True, default=str)
    return hashlib.sha256(desc.encode()).hexdigest()[:24]


# --------------------------------------------------------------- cache entries
_EXT = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
PROGRAM_MODULE_PREFIX = "rdgen_"  # the module name of a compiled program: the prefix and its key
_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()
# > 0 while this thread generates a program: the generator's own calls of the dynamics API (e.g. the
# numerical base parameters use model.regressor) run the NumPy model and never start another build
_GENERATING = threading.local()


def _paths(key: str, d: Path | None = None) -> tuple[Path, Path, Path]:
    d = cache_dir() if d is None else d
    name = f"{PROGRAM_MODULE_PREFIX}{key}"
    return d / f"{name}{_EXT}", d / f"{name}.json", d / f"{name}.lock"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _valid_entry(key: str, d: Path | None = None) -> bool:
    """The entry's metadata parse, name its key, and match the shared object's size and checksum."""
    so, meta, _ = _paths(key, d)
    try:
        info = json.loads(meta.read_text())
        return (isinstance(info, dict) and info.get("key") == key and so.stat().st_size == info.get("size")
                and _sha256(so) == info.get("sha256"))
    except (OSError, ValueError):
        return False


def _load_extension(name: str, path: Path) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def cache_load(key: str) -> Any | None:
    """The module of a valid cache entry (loaded once per process), else None."""
    mod = _LOADED.get(key)
    if mod is not None:
        return mod
    if not _valid_entry(key):
        return None
    so, _, _ = _paths(key)
    try:
        mod = _load_extension(f"{PROGRAM_MODULE_PREFIX}{key}", so)
    except (ImportError, OSError) as exc:
        log.warning("cache entry %s does not load (%s): rebuilding it", so.name, exc)
        return None
    _LOADED[key] = mod
    return mod


def release_buffers() -> None:
    """Drop the big batch outputs (4–256 MB) the loaded programs keep for reuse.

    A compiled program hands its last big output out again once nothing references it any more (the
    caller dropped the result and every view of it): a fresh array of that size costs more in page faults
    and page zeroing than the program costs to fill it.  Each program entry keeps at most one such array."""
    for mod in list(_LOADED.values()):
        release = getattr(mod, "release", None)
        if release is not None:
            release()


class _FileLock:
    """Exclusive advisory lock (``flock``) on a lock file: concurrent processes build an entry once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> _FileLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except ImportError:  # not POSIX: no lock, the atomic renames still keep entries whole
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None


def _compile_units(cc: str, units: list[str], module_name: str, work: Path,
                   progress: Callable[[str], None] | None) -> Path:
    """Compile the units in parallel (one process per core) and link the module; returns the .so path."""
    inc = [sysconfig.get_paths()["include"], np.get_include()]
    objs, procs = [], []
    jobs = max(1, min(len(units), os.cpu_count() or 1))
    t0 = time.perf_counter()
    for i, text in enumerate(units):
        src = work / f"{module_name}_{i}.c"
        src.write_text(text)
        obj = work / f"{module_name}_{i}.o"
        objs.append(obj)
        extra = text[len("/* rd-flags: "):text.index(" */")].split() if text.startswith("/* rd-flags: ") else []
        cmd = [cc, *CFLAGS, *extra, *[f"-I{p}" for p in inc], "-c", str(src), "-o", str(obj)]
        while len([p for p in procs if p[0].poll() is None]) >= jobs:
            time.sleep(0.01)
        procs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), cmd))
    for p, cmd in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"compilation failed: {' '.join(cmd)}\n{err[-2000:]}")
    out = work / f"{module_name}{_EXT}"
    cmd = [cc, "-shared", *[str(o) for o in objs], "-o", str(out), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"link failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    if progress:
        progress(f"compiled {len(units)} unit(s) in {time.perf_counter() - t0:.1f} s")
    return out


def build_module(key: str, sources: Callable[[str], list[str]], *, describe: dict[str, Any] | None = None,
                 progress: Callable[[str], None] | None = None) -> Any:
    """The extension module of cache entry ``key``: loaded if valid, else built and published.

    ``sources(module_name)`` returns the C units (generation happens there, only when building).
    Concurrent builders of one key (threads or processes) take turns on the entry's lock file;
    the second finds the entry built.  A corrupted entry is rebuilt once."""
    mod = cache_load(key)
    if mod is not None:
        return mod
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler found (gcc/cc/$CC)")
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    so, meta, lock = _paths(key, d)
    name = f"{PROGRAM_MODULE_PREFIX}{key}"
    with _LOCK, _FileLock(lock):
        for attempt in (0, 1):
            mod = cache_load(key)  # another process may have built it meanwhile
            if mod is not None:
                return mod
            if attempt:
                break
            for stale in d.glob(f".{name}.*"):  # left by a builder killed mid-way (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            t0 = time.perf_counter()
            _GENERATING.depth = getattr(_GENERATING, "depth", 0) + 1
            try:
                units = sources(name)
            finally:
                _GENERATING.depth -= 1
            t_gen = time.perf_counter() - t0
            work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=d))
            try:
                built = _compile_units(cc, units, name, work, progress)
                info = {**(describe or {}), "key": key, "size": built.stat().st_size, "sha256": _sha256(built),
                        "generator": generator_hash(), "compiler": _compiler_id(cc), "flags": list(CFLAGS),
                        "units": len(units), "generation_s": round(t_gen, 3),
                        "compile_s": round(time.perf_counter() - t0 - t_gen, 3), "created": time.time()}
                for p in (meta, so):  # unpublish a bad entry first (its metadata, then the object)
                    if p.exists():
                        p.unlink()
                os.replace(built, so)  # atomic: readers see the old file, none, or the complete new one
                tmp_meta = work / "meta.json"
                tmp_meta.write_text(json.dumps(info, indent=1))
                os.replace(tmp_meta, meta)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    raise RuntimeError(f"cache entry {so} does not load after a rebuild")


def compile_c(source_for: Callable[[str], str], key: str | None = None) -> Any:
    """Compile (or load from the cache) a one-file extension module; returns the module.

    ``source_for(module_name)`` returns the C source; without ``key``, the hash of the source
    generated for a placeholder name (plus compiler and flags) is the key."""
    if key is None:
        cc = compiler()
        ident = f"{_compiler_id(cc) if cc else ''}{CFLAGS}{_host_tag()}"
        key = hashlib.sha256((source_for("rdgen") + ident).encode()).hexdigest()[:24]
    return build_module(key, lambda name: [source_for(name)])


# --------------------------------------------------------------- programs of a model
def generate_program(model: Any, kind: str, parameters: str = "base", simplified: bool = True,
                     progress: Callable[[str], None] | None = None) -> Any:
    """The customized program of ``kind``: ``id`` (with the end-effector wrench), ``gravity``,
    ``inertia``, ``regressor`` (standard parameters), ``fd`` (direct dynamics, with the wrench)."""
    from . import customized_model as cmod

    _check_generator_unchanged()

    if kind == "id":
        return cmod.customized_inverse_dynamics(model, parameters=parameters, simplified=simplified, wrench=True,
                                                progress=progress)
    if kind == "gravity":
        return cmod.customized_gravity_torques(model, parameters=parameters, simplified=simplified, progress=progress)
    if kind == "inertia":
        return cmod.customized_inertia_matrix(model, parameters=parameters, simplified=simplified, progress=progress)
    if kind == "regressor":
        return cmod.customized_regressor(model, progress=progress)
    if kind == "fd":
        fd = getattr(cmod, "customized_forward_dynamics", None)
        if fd is None:
            raise RuntimeError("no customized direct dynamic model in this version of customized_model")
        return fd(model, parameters=parameters, simplified=simplified, wrench=True, progress=progress)
    raise ValueError(f"unknown program kind {kind!r}")


def _options(kind: str, parameters: str, simplified: bool) -> dict[str, Any]:
    return {} if kind == "regressor" else {"parameters": parameters, "simplified": simplified}


def _units_for(cm: Any) -> int:
    """Translation units of a program (its parts compiled in parallel): one per core, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def _build_kind(model: Any, kind: str, key: str, parameters: str = "base", simplified: bool = True,
                progress: Callable[[str], None] | None = None,
                generate: Callable[[str], Any] | None = None, origin: str = "explicit") -> Any:
    """Load or build the module of ``kind`` for ``model`` under ``key``."""
    def sources(name: str) -> list[str]:
        if progress:
            progress(f"generating the customized {kind} program of {model.name!r} ({model.dof} joints)")
        cm = generate(kind) if generate else generate_program(model, kind, parameters, simplified, progress)
        if progress:
            progress(f"{len(cm.body)} statements; compiling")
        return module_sources(kind, {kind: cm}, name, units=_units_for(cm))

    return build_module(key, sources, describe={"robot": model.name, "dof": model.dof, "kind": kind, "origin": origin,
                                                **_options(kind, parameters, simplified)}, progress=progress)


# --------------------------------------------------------------- explicit backend
_BACKEND_KINDS = {"inverse_dynamics": "id", "nonlinear_effects": "id", "gravity_torques": "gravity",
                  "inertia_matrix": "inertia", "regressor": "regressor", "forward_dynamics": "fd"}
_ALIASES = {"inertia_matrix": "inertia"}  # kind names of GeneratedBackend before issue 15


class _PythonModule:
    """Generated Python programs behind the C modules' entries (validation, one state or a batch)."""

    def __init__(self, model: Any, kind: str, f: Callable[..., np.ndarray]) -> None:
        self.raw = f
        self.evaluate = _python_entry(model, kind, f)
        if kind == "id":
            ev = self.evaluate
            self.nle = lambda q, qd, fe=None: ev(q, qd, np.zeros(np.shape(q)), fe)


class GeneratedBackend:
    """Generated inverse dynamics, regressor, inertia matrix, gravity, H and direct dynamics of one model,
    built synchronously (see :meth:`RobotModel.set_backend`).

    ``lang="c"`` compiles C extensions (falls back to Python with a warning when no compiler is
    available); ``lang="python"`` uses the vectorized NumPy functions.  Default parameters: base
    parameters with the zero values exploited (exact).  The inverse dynamics is built at once,
    the other programs at their first use."""

    name = "generated"

    def __init__(
        self, model: Any, lang: str = "c", parameters: str = "base", simplified: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if lang not in ("c", "python"):
            raise ValueError(f"lang must be 'c' or 'python', got {lang!r}")
        if lang == "c" and compiler() is None:
            warnings.warn("no C compiler found: the generated backend uses the NumPy code", RuntimeWarning, stacklevel=2)
            lang = "python"
        self.model = model
        self.lang = lang
        self.options = {"parameters": parameters, "simplified": simplified}
        self._progress = progress
        self._gravity = np.array(model.gravity, float)
        self._modules: dict[str, Any] = {}
        self._id = self._program("id")

    def _generate(self, kind: str, progress: Callable[[str], None] | None) -> Any:
        kind = _ALIASES.get(kind, kind)
        return generate_program(self.model, kind, progress=progress, **self.options)

    def _build(self, kind: str, progress: Callable[[str], None] | None) -> Any:
        """The module of ``kind``: a compiled extension, or the generated Python program behind the same entries."""
        kind = _ALIASES.get(kind, kind)
        if self.lang == "c":
            key = model_key(self.model, kind=kind, lang="c", **_options(kind, **self.options))
            return _build_kind(self.model, kind, key, progress=progress,
                               generate=lambda k: self._generate(k, progress), **self.options)
        f = load_python(python_source(self._generate(kind, progress), "generated"), "generated")
        return _PythonModule(self.model, kind, f)

    def _module(self, kind: str) -> Any:
        kind = _ALIASES.get(kind, kind)
        if kind not in self._modules:
            self._modules[kind] = self._build(kind, self._progress)
        return self._modules[kind]

    def _program(self, kind: str) -> Callable[..., np.ndarray]:
        return self._module(kind).evaluate

    def function(self, name: str) -> Callable[..., np.ndarray]:
        """The validated function behind ``RobotModel.<name>`` (``inverse_dynamics``, ``nonlinear_effects``,
        ``gravity_torques``, ``inertia_matrix``, ``regressor``, ``forward_dynamics``): positional states
        (and an optional wrench on link n for the first two and the last), shapes and finiteness checked."""
        mod = self._module(_BACKEND_KINDS[name])
        return mod.nle if name == "nonlinear_effects" else mod.evaluate

    # ---- API mirroring robot_dynamics.dynamics.inverse_dynamics
    def inverse_dynamics(
        self, q: Any, qd: Any, qdd: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base",
    ) -> np.ndarray:
        from ..dynamics.inverse_dynamics import inverse_dynamics

        return _dispatch(self.model, self._id, inverse_dynamics, (q, qd, qdd), ("q", "qd", "qdd"), f_ext, gravity,
                         f_ext_frame, self._gravity)

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        from ..dynamics.inverse_dynamics import regressor

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return regressor(self.model, q, qd, qdd, gravity=gravity)
        return self._program("regressor")(q, qd, qdd)

    def inertia_matrix(self, q: Any) -> np.ndarray:
        """A(q) incl. rotor inertias: (n, n) or (N, n, n)."""
        return self._program("inertia")(q)

    def gravity_torques(self, q: Any, gravity: Any = None) -> np.ndarray:
        """Q(q): (n,) or (N, n); another ``gravity`` than the model's uses the NumPy model."""
        from ..dynamics.dynamic_terms import gravity_torques

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return gravity_torques(self.model, q, gravity=gravity)
        return self._program("gravity")(q)

    def nonlinear_effects(self, q: Any, qd: Any, gravity: Any = None) -> np.ndarray:
        """H(q, qd) (001 eq. 7.62): the inverse dynamics at zero acceleration."""
        from ..dynamics.dynamic_terms import nonlinear_effects

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return nonlinear_effects(self.model, q, qd, gravity=gravity)
        return self.function("nonlinear_effects")(q, qd)

    def forward_dynamics(
        self, q: Any, qd: Any, tau: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base",
    ) -> np.ndarray:
        """q̈ by the customized O(n) direct dynamic model (001 §7.6.2)."""
        from ..dynamics.forward_dynamics import forward_dynamics

        return _dispatch(self.model, self._program("fd"), forward_dynamics, (q, qd, tau), ("q", "qd", "tau"), f_ext,
                         gravity, f_ext_frame, self._gravity)

    @property
    def evaluate(self) -> Callable[..., np.ndarray]:
        """The raw generated inverse dynamics ``f(q, qd, qdd[, fe])`` (C: checks shapes and finiteness;
        Python: float64 (N, n) arrays, no checks)."""
        return self._module("id").raw if self.lang == "python" else self._id


def _python_entry(model: Any, kind: str, f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A generated Python program behind the C entry's signature (validation, single state or batch)."""
    from ..dynamics.inverse_dynamics import check_states

    names = {"id": ("q", "qd", "qdd"), "regressor": ("q", "qd", "qdd"), "fd": ("q", "qd", "tau"),
             "gravity": ("q",), "inertia": ("q",)}[kind]
    wrench = kind in ("id", "fd")

    def entry(*args: Any) -> np.ndarray:
        if not len(names) <= len(args) <= len(names) + wrench:
            raise TypeError(f"expected ({', '.join(names)}{'[, fe]' if wrench else ''})")
        states, batch = check_states(model, *zip(args[: len(names)], names, strict=True))
        states = states + [states[0]] * (3 - len(states))
        fe = args[len(names)] if len(args) > len(names) else None
        if fe is not None:
            fe = np.ascontiguousarray(np.broadcast_to(np.asarray(fe, float), (states[0].shape[0], 6)))
        out = f(*states, fe) if wrench else f(*states)
        if kind == "fd" and not np.all(np.isfinite(out)):
            raise ValueError("non-finite accelerations: the inertia matrix is not positive definite "
                             "(check the inertial parameters) or the states overflow")
        return out if batch else out[0]

    return entry


def _same_gravity(gravity: Any, g: np.ndarray) -> bool:
    return np.array_equal(np.asarray(gravity, float), g)


def _dispatch(model: Any, fast: Callable[..., np.ndarray], slow: Callable[..., np.ndarray], states: tuple[Any, ...],
              names: tuple[str, ...], f_ext: Any, gravity: Any, f_ext_frame: str, g_model: np.ndarray) -> np.ndarray:
    """``fast(*states[, fe])`` when the wrench acts on link n only and gravity is the model's, else
    ``slow(model, *states, f_ext=..., gravity=..., f_ext_frame=...)`` (the NumPy model)."""
    if gravity is not None and not _same_gravity(gravity, g_model):
        return slow(model, *states, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
    if f_ext is None:
        return fast(*states)
    from ..dynamics.inverse_dynamics import check_states, external_wrenches

    (qb, *_), batch = check_states(model, *zip(states, names, strict=True))
    w = external_wrenches(model, qb, f_ext, f_ext_frame, batch)
    if w is None or np.any(w[:, :-1]):  # wrenches on inner links: not in the generated programs
        return slow(model, *states, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
    fe = np.ascontiguousarray(w[:, -1])
    return fast(*states, fe if batch else fe[0])


def generated_backend(model: Any, lang: str = "c", **options: Any) -> GeneratedBackend:
    """The generated backend of ``model`` (compiled programs come from the cache when built before)."""
    return GeneratedBackend(model, lang=lang, **options)


# --------------------------------------------------------------- the engine behind RobotModel
# engine attribute -> (module kind, entry in the module, public name)
_ATTRS = {
    "id": ("id", "evaluate", "inverse_dynamics"),
    "nle": ("id", "nle", "nonlinear_effects"),
    "gravity": ("gravity", "evaluate", "gravity_torques"),
    "inertia": ("inertia", "evaluate", "inertia_matrix"),
    "regressor": ("regressor", "evaluate", "regressor"),
    "fd": ("fd", "evaluate", "forward_dynamics"),
}
_PUBLIC = {pub: attr for attr, (_, _, pub) in _ATTRS.items()}
DEFAULT_COMPILE = ("inverse_dynamics", "nonlinear_effects", "gravity_torques", "inertia_matrix", "forward_dynamics")


def engine_mode() -> str:
    """``$ROBOT_DYNAMICS_ENGINE``: ``auto`` (default), ``compiled``, ``numpy`` or ``python``."""
    mode = (os.environ.get(ENGINE_ENV) or "auto").strip().lower()
    if mode not in ("auto", "compiled", "numpy", "python"):
        warnings.warn(f"{ENGINE_ENV}={mode!r} is not auto, compiled, numpy or python: using auto", RuntimeWarning,
                      stacklevel=3)
        mode = "auto"
    return mode


def _compile_after() -> int:
    try:
        return max(0, int(os.environ.get(COMPILE_AFTER_ENV, DEFAULT_COMPILE_AFTER)))
    except ValueError:
        return DEFAULT_COMPILE_AFTER


def _numpy_functions() -> dict[str, Callable[..., np.ndarray]]:
    from ..dynamics.dynamic_terms import gravity_torques, inertia_matrix, nonlinear_effects
    from ..dynamics.forward_dynamics import forward_dynamics
    from ..dynamics.inverse_dynamics import inverse_dynamics, regressor

    return {"id": inverse_dynamics, "nle": nonlinear_effects, "gravity": gravity_torques,
            "inertia": inertia_matrix, "regressor": regressor, "fd": forward_dynamics}


_BUILD_SLOT = threading.Semaphore(1)  # one background build at a time (each uses every core)
_WORKERS: set[subprocess.Popen] = set()


@atexit.register
def _stop_workers() -> None:
    for p in list(_WORKERS):
        if p.poll() is None:
            p.kill()


class Engine:
    """The functions behind the dynamics methods of one (immutable) model.

    Attributes ``id, nle, gravity, inertia, regressor, fd`` are callables taking the states
    positionally (``id``, ``nle``, ``fd`` also an optional wrench on link n): the compiled program of
    the model once loaded, the NumPy model until then (see the module docstring for the modes)."""

    def __init__(self, model: Any, mode: str | None = None) -> None:
        self.model = model
        self.mode = mode or engine_mode()
        self.generated: GeneratedBackend | None = None
        self._numpy = _numpy_functions()
        self._lock = threading.Lock()
        self._state: dict[str, str] = {}  # kind -> new | building | ready | failed | unavailable
        self._score: dict[str, int] = {}
        self._done: dict[str, threading.Event] = {}
        self._pinned = False  # set_backend("numpy" | "generated"): programs built later are not put in use
        self._modules: dict[str, Any] = {}
        self._keys: dict[str, str] = {}
        self._python: dict[str, Callable[..., list[float]]] = {}  # kind -> generated scalar Python program in use
        self._python_done: dict[str, threading.Event] = {}
        self._python_lock = threading.Lock()
        self._threshold = _compile_after()
        self._install_fallbacks()

    # ---- dispatch tables
    def _install_fallbacks(self) -> None:
        model = self.model
        for attr, f in self._numpy.items():
            if self.mode == "numpy":
                setattr(self, attr, _bind(f, model))
            else:
                setattr(self, attr, self._fallback(attr, f))

    def _fallback(self, attr: str, f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        kind = _ATTRS[attr][0]
        model = self.model

        def fallback(*args: Any) -> np.ndarray:
            if self._touch(kind, args[0] if args else None):
                return getattr(self, attr)(*args)  # compiled synchronously ("compiled" mode)
            return f(model, *args)

        return fallback

    def _install(self, kind: str, mod: Any) -> None:
        """(lock held) Put a loaded program in use — unless the backend was chosen explicitly since the
        build started (``set_backend("numpy" | "generated")``): a late build never overrides that choice."""
        self._modules[kind] = mod
        if self._pinned:
            return
        for attr, (k, entry, _) in _ATTRS.items():
            if k == kind:
                setattr(self, attr, getattr(mod, entry))

    def set_generated(self, backend: GeneratedBackend | None) -> None:
        """Explicit backends: a :class:`GeneratedBackend` (built synchronously, function by function at its
        first call), or None for the NumPy model only."""
        self.generated = backend
        self._pinned = True
        if backend is None:
            self.mode = "numpy"
            self._install_fallbacks()
            return
        self.mode = "generated"
        for attr, (_, _, pub) in _ATTRS.items():
            setattr(self, attr, self._lazy_generated(attr, pub))

    def _lazy_generated(self, attr: str, pub: str) -> Callable[..., np.ndarray]:
        def first_call(*args: Any) -> np.ndarray:
            be = self.generated
            assert be is not None
            f = be.function(pub)
            setattr(self, attr, f)
            return f(*args)

        if pub == "inverse_dynamics" and self.generated is not None:
            return self.generated.function(pub)
        return first_call

    # ---- state machine of the automatic engine
    def _touch(self, kind: str, q: Any) -> bool:
        """Count a fallback call; past the threshold, load or build the program in the background.
        True: compiled now (``compiled`` mode)."""
        if getattr(_GENERATING, "depth", 0):
            return False  # a call made by the generator itself
        if self.mode == "python":  # the scalar Python program from the first call on, never a compiler
            return kind in PYTHON_KINDS and kind not in self._python_done and self._python_start(kind, wait=True)
        if self.mode == "compiled":
            if self._state.get(kind, "new") == "new":
                return self._ensure(kind) or self._python_start(kind, wait=True)
            return False
        if self.mode != "auto":
            return False
        w = 1
        if getattr(q, "ndim", None) == 2:
            w += len(q) // 256
        with self._lock:
            score = self._score[kind] = self._score.get(kind, 0) + w
            if score >= self._threshold and self._state.get(kind, "new") == "new":
                if compiler() is None:
                    self._state[kind] = "unavailable"
                    self._python_start(kind, wait=False)
                else:
                    self._start_build(kind)
        return False

    def _key(self, kind: str) -> str:
        if kind not in self._keys:
            self._keys[kind] = model_key(self.model, kind=kind, lang="c", **_options(kind, "base", True))
        return self._keys[kind]

    def _start_build(self, kind: str) -> None:
        """(lock held) Load ``kind`` from the cache, or build it in a background process."""
        self._state[kind] = "building"
        self._done[kind] = threading.Event()
        threading.Thread(target=self._background_build, args=(kind,), name=f"rd-build-{kind}", daemon=True).start()

    def _background_build(self, kind: str) -> None:
        name = self.model.name
        t0 = time.perf_counter()
        try:
            mod = cache_load(self._key(kind))
            if mod is None:
                with _BUILD_SLOT:
                    mod = cache_load(self._key(kind))  # built meanwhile by another model of the same description
                    if mod is None:
                        log.info("%s: compiling the customized %s program in the background", name, kind)
                        _build_in_worker(self.model, kind, self._key(kind),
                                         lambda msg: log.debug("%s %s: %s", name, kind, msg))
                        mod = cache_load(self._key(kind))
                        if mod is None:
                            raise RuntimeError("the built cache entry does not load")
                log.info("%s: compiled %s ready after %.1f s", name, kind, time.perf_counter() - t0)
            else:
                log.debug("%s: compiled %s loaded from the cache", name, kind)
        except Exception as exc:  # noqa: BLE001 - never let a background thread fail silently
            log.warning("%s: compiling %s failed, %s: %s", name, kind, _instead(kind), exc)
            with self._lock:
                self._state[kind] = "failed"
                self._done[kind].set()
            self._python_start(kind, wait=False)
            return
        with self._lock:
            self._install(kind, mod)
            self._state[kind] = "ready"
            self._done[kind].set()

    def _ensure(self, kind: str) -> bool:
        """Load or build ``kind`` in this thread (waits for a running background build).  True if compiled."""
        with self._lock:
            st = self._state.get(kind, "new")
            if st == "ready":
                return True
            if compiler() is None:
                self._state[kind] = "unavailable"
                return False
            ev = self._done.get(kind)
            running = st == "building" and ev is not None
            if not running:
                self._state[kind] = "building"
                ev = self._done[kind] = threading.Event()
        if running:
            assert ev is not None
            ev.wait()
            return self._state.get(kind) == "ready"
        try:
            mod = _build_kind(self.model, kind, self._key(kind), origin=f"engine ({self.mode})",
                              progress=lambda msg: log.debug("%s %s: %s", self.model.name, kind, msg))
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: compiling %s failed, %s: %s", self.model.name, kind, _instead(kind), exc)
            with self._lock:
                self._state[kind] = "failed"
                ev.set()
            return False
        with self._lock:
            self._install(kind, mod)
            self._state[kind] = "ready"
            ev.set()
        return True

    # ---- the generated scalar Python program (no C compiler, or its build failed)
    def _python_start(self, kind: str, wait: bool) -> bool:
        """Generate the scalar Python program of ``kind`` (:func:`python_scalar_source`) and run it for single
        states (batches stay on NumPy): in a background thread, or in this one with ``wait`` (a generation
        already running is waited for).  True once it is in use; kinds outside ``PYTHON_KINDS``: False."""
        if kind not in PYTHON_KINDS:
            return False
        with self._python_lock:
            done = self._python_done.get(kind)
            first = done is None
            if first:
                done = self._python_done[kind] = threading.Event()
        assert done is not None
        if first and wait:
            self._python_generate(kind, done)
        elif first:
            threading.Thread(target=self._python_generate, args=(kind, done), name=f"rd-python-{kind}",
                             daemon=True).start()
        if wait:
            done.wait()
        return kind in self._python

    def _python_generate(self, kind: str, done: threading.Event) -> None:
        name, t0 = self.model.name, time.perf_counter()
        f = None
        _GENERATING.depth = getattr(_GENERATING, "depth", 0) + 1  # the generator's own calls stay on NumPy
        try:
            from .customized_model import customized_inverse_dynamics

            cm = customized_inverse_dynamics(self.model, parameters="base", simplified=True, wrench=True)
            f = load_python(python_scalar_source(cm, "generated"), "generated")
        except Exception as exc:  # noqa: BLE001 - never let a background thread fail silently
            log.warning("%s: generating the scalar Python %s failed, the NumPy model stays in use: %s", name, kind, exc)
        finally:
            _GENERATING.depth -= 1
        if f is not None:
            entries = _scalar_id_entries(self.model, f, self._numpy)
            with self._lock:
                # a compiled program loaded meanwhile stays in use; an explicit backend chosen since, too
                if self._state.get(kind) != "ready" and not self._pinned:
                    self._python[kind] = f
                    for attr, (k, entry, _) in _ATTRS.items():
                        if k == kind:
                            setattr(self, attr, entries[entry])
                    log.info("%s: generated scalar Python %s in use for single states after %.2f s", name, kind,
                             time.perf_counter() - t0)
        done.set()

    # ---- public helpers
    def compile(self, functions: tuple[str, ...] = DEFAULT_COMPILE, wait: bool = True,
                isolated: bool = False) -> dict[str, str]:
        """Compile (or load) the programs of ``functions`` now; ``wait``: block until they are ready.  Without a
        C compiler (or when the build fails) the kinds of ``PYTHON_KINDS`` get the generated scalar Python
        program instead (``python``), generated in this thread with ``wait``, in a background thread without.
        ``isolated`` (with ``wait``): a program not in the cache is generated and compiled in a child process,
        as background builds are, so this process's other threads (a control loop) never wait for the GIL
        while the generator runs (~1 s of pure Python for a 6-joint arm)."""
        kinds = []
        for f in functions:
            if f not in _PUBLIC:
                raise ValueError(f"unknown function {f!r}; known: {sorted(_PUBLIC)}")
            k = _ATTRS[_PUBLIC[f]][0]
            if k not in kinds:
                kinds.append(k)
        if self.mode == "generated":
            assert self.generated is not None
            for f in functions:
                setattr(self, _PUBLIC[f], self.generated.function(f))
            return {f: "generated" for f in functions}
        if self._pinned:  # compile() after set_backend("numpy"): the latest explicit request wins
            self._pinned = False
            for k in kinds:
                if k in self._modules:
                    self._install(k, self._modules[k])
        for k in kinds:
            if wait and isolated and compiler() is not None:
                with self._lock:
                    if self._state.get(k, "new") in ("new", "failed"):
                        self._start_build(k)
                    ev = self._done.get(k)
                if ev is not None:
                    ev.wait()
                if self._state.get(k) != "ready" and k not in self._python:  # failed: as below, in this thread
                    self._python_start(k, wait=True)
            elif wait:
                if not self._ensure(k):  # no compiler or a failed build: the generated scalar Python program
                    self._python_start(k, wait=True)
            else:
                with self._lock:
                    if self._state.get(k, "new") == "new" and compiler() is not None:
                        self._start_build(k)
                    elif compiler() is None:
                        self._state.setdefault(k, "unavailable")
                        self._python_start(k, wait=False)
        return {f: s for f, s in self.status().items() if f in functions}

    def status(self) -> dict[str, str]:
        """Per public function: ``compiled`` (the compiled customized program), ``building``, ``python`` (no
        C compiler, or its build failed: the generated scalar Python program runs single states, NumPy
        batches) or ``numpy`` (the NumPy model)."""
        out = {}
        for kind, _, pub in _ATTRS.values():
            if self.mode == "generated" or self._pinned:  # an explicit backend: what runs, whatever was built
                out[pub] = self.mode
                continue
            st = self._state.get(kind, "new")
            out[pub] = ("compiled" if st == "ready" else "building" if st == "building"
                        else "python" if kind in self._python else "numpy")
        return out

    # ---- calls with options (wrench, other gravity, method)
    def inverse_dynamics(self, q: Any, qd: Any, qdd: Any, f_ext: Any, gravity: Any, f_ext_frame: str) -> np.ndarray:
        if f_ext is None and (gravity is None or _same_gravity(gravity, self.model.gravity)):
            return self.id(q, qd, qdd)
        if "id" not in self._modules and self.generated is None:
            return self._numpy["id"](self.model, q, qd, qdd, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
        return _dispatch(self.model, self.id, self._numpy["id"], (q, qd, qdd), ("q", "qd", "qdd"), f_ext, gravity,
                         f_ext_frame, self.model.gravity)

    def forward_dynamics(self, q: Any, qd: Any, tau: Any, f_ext: Any, method: str | None, gravity: Any,
                         f_ext_frame: str) -> np.ndarray:
        fd = self._numpy["fd"]
        if method is not None:
            return fd(self.model, q, qd, tau, f_ext=f_ext, method=method, gravity=gravity, f_ext_frame=f_ext_frame)
        if f_ext is None and (gravity is None or _same_gravity(gravity, self.model.gravity)):
            return self.fd(q, qd, tau)
        if "fd" not in self._modules and self.generated is None:
            return fd(self.model, q, qd, tau, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
        return _dispatch(self.model, self.fd, fd, (q, qd, tau), ("q", "qd", "tau"), f_ext, gravity, f_ext_frame,
                         self.model.gravity)

    def with_gravity(self, attr: str, gravity: Any, *states: Any) -> np.ndarray:
        """``attr`` (nle, gravity, regressor) with a gravity vector: the model's → the engine, else NumPy."""
        if _same_gravity(gravity, self.model.gravity):
            return getattr(self, attr)(*states)
        return self._numpy[attr](self.model, *states, gravity=gravity)


def _bind(f: Callable[..., np.ndarray], model: Any) -> Callable[..., np.ndarray]:
    def call(*args: Any) -> np.ndarray:
        return f(model, *args)

    return call


# --------------------------------------------------------------- background build process
def _build_in_worker(model: Any, kind: str, key: str, progress: Callable[[str], None]) -> None:
    """Generate and compile ``kind`` in a child process (no GIL contention with the caller's threads)."""
    pkg_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OPENBLAS_NUM_THREADS"] = env.get("OPENBLAS_NUM_THREADS", "1")
    env[ENGINE_ENV] = "numpy"  # the models of the build process never start builds of their own
    spec = {"key": key, "kind": kind, "model": model.to_dict(), "cache": str(cache_dir()), "generator": generator_hash(),
            "cls": f"{type(model).__module__}:{type(model).__qualname__}"}
    p = subprocess.Popen([sys.executable, "-c", f"import {__name__} as m; m._worker()"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    _WORKERS.add(p)
    tail: list[str] = []
    try:
        assert p.stdin is not None and p.stderr is not None
        p.stdin.write(json.dumps(spec))
        p.stdin.close()
        for line in p.stderr:
            line = line.rstrip()
            if line.startswith("progress: "):
                progress(line[10:])
            elif line:
                tail = (tail + [line])[-20:]
        rc = p.wait()
    finally:
        _WORKERS.discard(p)
    if rc != 0:
        raise RuntimeError(f"build process exited with {rc}: " + "\n".join(tail))


WORKER_NICE = 10  # the build process and its compilers yield the CPU to the caller's process (a control loop)


def _worker() -> None:
    """Entry of the build process: a JSON spec on stdin, progress lines on stderr.  Runs at nice
    +``WORKER_NICE`` (its compilers inherit it): a build started beside a running control loop never takes its
    cores."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    spec = json.loads(sys.stdin.read())
    if spec["generator"] != generator_hash():
        sys.exit("the generator's source files changed since the parent process imported them")
    os.environ[CACHE_ENV] = spec["cache"]
    mod_name, cls_name = spec["cls"].split(":")
    cls = getattr(importlib.import_module(mod_name), cls_name)
    model = cls.from_dict(spec["model"])

    def progress(msg: str) -> None:
        print(f"progress: {msg}", file=sys.stderr, flush=True)

    _build_kind(model, spec["kind"], spec["key"], progress=progress, origin="background")


# --------------------------------------------------------------- CLI
def codegen_cli(args: Any, model: Any) -> int:
    """``robot-dynamics codegen URDF --lang python|c [--simplified] [--base-parameters|--standard-parameters]
    [-o FILE] [--json]``: generate the customized model of ``model`` (loaded by the CLI from ``args.urdf``),
    print its operation counts."""
    from .customized_model import customized_inverse_dynamics

    def progress(msg: str) -> None:
        print(f"codegen: {msg}", file=sys.stderr, flush=True)

    cm = customized_inverse_dynamics(
        model, parameters=args.parameters, simplified=args.simplified, wrench=True, progress=progress,
    )
    source = python_source(cm, "inverse_dynamics") if args.lang == "python" else c_source(cm, "rdgen")
    if args.output:
        Path(args.output).write_text(source)
    counts = cm.counts()
    info = {
        **counts, "robot": model.name, "parameters": args.parameters, "simplified": args.simplified,
        "lang": args.lang, "statements": len(cm.body), "constants": len(cm.constants),
        "generation_time_s": round(cm.generation_time, 3), "output": args.output,
    }
    if args.json:
        print(json.dumps(info))
    else:
        print(f"{model.name}: {model.dof} dof, {args.parameters} parameters{' (simplified)' if args.simplified else ''}")
        print(f"{counts['multiplications']} multiplications, {counts['additions']} additions, "
              f"{counts['sin_cos']} sin/cos, {counts['sign']} sign")
        if args.output:
            print(f"{args.lang} code written to {args.output}")
    return 0


generator_hash()  # the generator's source as imported now (see _check_generator_unchanged)
