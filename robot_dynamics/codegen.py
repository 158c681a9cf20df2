"""Code emitters for customized models: vectorized Python/NumPy and a compiled C extension.

* :func:`python_source` — a NumPy function evaluating the program on a batch of states.
* :func:`c_source` — a CPython extension module (C API + NumPy C API, no cffi needed)
  whose function loops over the states of a batch; :func:`compile_c` builds it with
  ``gcc`` into ``$XDG_CACHE_HOME/robot_dynamics/codegen`` (default ``~/.cache``), keyed
  by the hash of the generated source, and loads it.  Nothing is written in the repository.
* :class:`GeneratedBackend` — the ``"generated"`` backend of
  :meth:`RobotModel.set_backend`: ``inverse_dynamics`` and ``regressor`` with the
  signatures of :mod:`robot_dynamics.inverse_dynamics`.  The generated model of a given
  robot is cached by a hash of the robot description, so a second process loads the
  compiled module without regenerating it.

The generated functions take URDF joint values (``q, qd, qdd`` of shape ``(n,)`` or
``(N, n)``, float64) and an optional wrench ``fe`` ``(6,)``/``(N, 6)`` exerted by
link n on the environment in R_n about O_n; they do not check for NaN (the backend does).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp

from .customized_model import (
    GENERATOR_VERSION,
    CustomizedModel,
    customized_gravity_torques,
    customized_inertia_matrix,
    customized_inverse_dynamics,
    customized_regressor,
)
from .mdh import PRISMATIC

__all__ = [
    "GeneratedBackend",
    "c_source",
    "cache_dir",
    "compile_c",
    "generated_backend",
    "load_python",
    "python_source",
]

_WRENCH = ("FX", "FY", "FZ", "CX", "CY", "CZ")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/robot_dynamics/codegen`` (default ``~/.cache/robot_dynamics/codegen``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "robot_dynamics" / "codegen"


# --------------------------------------------------------------- printing
def _num(x: float) -> str:
    return repr(float(x))


def _expr(e: sp.Expr, lang: str) -> str:
    """Print an expression of the program (sums of products, integer powers, sign)."""
    if e.is_Symbol:
        return str(e)
    if e.is_Number:
        return _num(float(e))
    if e.is_Add:
        out = ""
        for k, t in enumerate(e.args):
            if t.could_extract_minus_sign():
                out += (" - " if k else "-") + _term(-t, lang)
            else:
                out += (" + " if k else "") + _term(t, lang)
        return out
    return _term(e, lang)


def _term(e: sp.Expr, lang: str) -> str:
    if e.is_Mul:
        coeff, factors = e.as_coeff_mul()
        parts = [_factor(f, lang) for f in factors]
        if coeff == -1:
            return "-" + "*".join(parts)
        if coeff != 1:
            parts.insert(0, _num(float(coeff)))
        return "*".join(parts)
    if e.is_Pow:
        b = _factor(e.base, lang)
        return "*".join([b] * int(e.exp))
    if isinstance(e, sp.sign):
        a = _expr(e.args[0], lang)
        return {"python": f"np.sign({a})", "c": f"RD_SIGN({a})"}.get(lang, f"rd_sign4({a})")
    if e.is_Add:
        return f"({_expr(e, lang)})"
    return _expr(e, lang)


def _factor(e: sp.Expr, lang: str) -> str:
    if e.is_Add or (e.is_Number and e < 0):
        return f"({_expr(e, lang)})"
    return _term(e, lang)


def _inputs(cm: CustomizedModel, lang: str) -> list[tuple[str, str]]:
    """(name, code) of the input atoms the program uses; ``q[j]`` etc. are column accessors."""
    used = cm.used_inputs()
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


def _output_signs(cm: CustomizedModel) -> list[float]:
    """URDF sign of each flat output: tau_urdf_j = sign_j tau_mdh_j (row j of the regressor)."""
    signs = [s for _, s, _ in cm.joints]
    if cm.kind == "inertia_matrix":  # A_urdf = S A_mdh S with S = diag(sign)
        n = cm.dof
        return [signs[k // n] * signs[k % n] for k in range(n * n)]
    per_row = int(np.prod(cm.output_shape[1:])) if len(cm.output_shape) > 1 else 1
    return [signs[k // per_row] for k in range(len(cm.outputs))]


def python_source(cm: CustomizedModel, func_name: str = "generated") -> str:
    """Source of ``func_name(q, qd, qdd, fe=None)``: NumPy, vectorized over (N, n) batches."""
    vals = cm.constant_values()
    lines = [
        f"# customized {cm.kind} of {cm.name!r} ({cm.parameters} parameters, simplified={cm.simplified})",
        f"# generated by robot_dynamics.codegen {GENERATOR_VERSION}: "
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


# --------------------------------------------------------------- C
_C_HEADER = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#define RD_SIGN(x) ((double)(((x) > 0) - ((x) < 0)))
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
"""

_C_WRAPPER = r"""
static PyObject *as_array(PyObject *o, const char *what) {
    PyObject *a = PyArray_FROMANY(o, NPY_DOUBLE, 1, 2, NPY_ARRAY_IN_ARRAY);
    if (a == NULL) PyErr_Format(PyExc_ValueError, "%s must be a float array of 1 or 2 dimensions", what);
    return a;
}

static PyObject *py_eval(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "expected (q, qd, qdd[, fe])");
        return NULL;
    }
    PyObject *a[4] = {NULL, NULL, NULL, NULL};
    PyObject *out = NULL;
    static const char *names[4] = {"q", "qd", "qdd", "fe"};
    int k;
    for (k = 0; k < 3; k++) {
        a[k] = as_array(args[k], names[k]);
        if (a[k] == NULL) goto done;
    }
    PyArrayObject *q = (PyArrayObject *)a[0];
    int nd = PyArray_NDIM(q);
    npy_intp nb = nd == 2 ? PyArray_DIM(q, 0) : 1;
    if (PyArray_DIM(q, nd - 1) != RD_DOF) {
        PyErr_Format(PyExc_ValueError, "q must have %d columns", RD_DOF);
        goto done;
    }
    for (k = 1; k < 3; k++) {
        PyArrayObject *x = (PyArrayObject *)a[k];
        if (PyArray_NDIM(x) != nd || PyArray_DIM(x, nd - 1) != RD_DOF || (nd == 2 && PyArray_DIM(x, 0) != nb)) {
            PyErr_Format(PyExc_ValueError, "%s must have the shape of q", names[k]);
            goto done;
        }
    }
    const double *fe = NULL;
    npy_intp fe_step = 0;
    static const double zeros[6] = {0, 0, 0, 0, 0, 0};
    if (nargs == 4 && args[3] != Py_None) {
        a[3] = as_array(args[3], "fe");
        if (a[3] == NULL) goto done;
        PyArrayObject *f = (PyArrayObject *)a[3];
        int fnd = PyArray_NDIM(f);
        if (PyArray_DIM(f, fnd - 1) != 6 || (fnd == 2 && PyArray_DIM(f, 0) != nb)) {
            PyErr_SetString(PyExc_ValueError, "fe must have shape (6,) or (N, 6)");
            goto done;
        }
        fe = (const double *)PyArray_DATA(f);
        fe_step = fnd == 2 ? 6 : 0;
    } else {
        fe = zeros;
    }
    for (k = 0; k < 4; k++) {  /* reject NaN/inf like the NumPy model */
        if (a[k] == NULL) continue;
        const double *v = (const double *)PyArray_DATA((PyArrayObject *)a[k]);
        npy_intp m = PyArray_SIZE((PyArrayObject *)a[k]);
        for (npy_intp i = 0; i < m; i++) {
            if (!isfinite(v[i])) {
                PyErr_Format(PyExc_ValueError, "%s contains NaN or inf", names[k]);
                goto done;
            }
        }
    }
    npy_intp dims[4];
    int ond = 0;
    if (nd == 2) dims[ond++] = nb;
    RD_OUT_DIMS
    out = PyArray_SimpleNew(ond, dims, NPY_DOUBLE);
    if (out == NULL) goto done;
    const double *qv = (const double *)PyArray_DATA(q);
    const double *qdv = (const double *)PyArray_DATA((PyArrayObject *)a[1]);
    const double *qddv = (const double *)PyArray_DATA((PyArrayObject *)a[2]);
    double *ov = (double *)PyArray_DATA((PyArrayObject *)out);
    if (nb == 1) {
        rd_eval(qv, qdv, qddv, fe, ov);
    } else {
        npy_intp b = 0;
        Py_BEGIN_ALLOW_THREADS
        for (; b + 4 <= nb; b += 4) {  /* 4 states at a time in SIMD registers */
            rd_eval4(qv + b * RD_DOF, qdv + b * RD_DOF, qddv + b * RD_DOF, fe + b * fe_step, (int)fe_step,
                     ov + b * RD_NOUT);
        }
        for (; b < nb; b++) {
            rd_eval(qv + b * RD_DOF, qdv + b * RD_DOF, qddv + b * RD_DOF, fe + b * fe_step, ov + b * RD_NOUT);
        }
        Py_END_ALLOW_THREADS
    }
done:
    for (k = 0; k < 4; k++) Py_XDECREF(a[k]);
    return out;
}

static PyMethodDef methods[] = {
    {"evaluate", (PyCFunction)(void (*)(void))py_eval, METH_FASTCALL, "evaluate(q, qd, qdd[, fe])"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, RD_MODNAME_STR, NULL, -1, methods};

PyMODINIT_FUNC RD_INIT(void) {
    import_array();
    return PyModule_Create(&moddef);
}
"""


def c_source(cm: CustomizedModel, module_name: str = "rdgen") -> str:
    """C source of a CPython extension module ``module_name`` with ``evaluate(q, qd, qdd[, fe])``."""
    vals = cm.constant_values()
    lines = [
        f"/* customized {cm.kind} of {cm.name!r} ({cm.parameters} parameters, simplified={cm.simplified}) */",
        "/* " + ", ".join(f"{k}={v}" for k, v in cm.counts().items()) + " */",
        _C_HEADER,
        f"#define RD_DOF {cm.dof}",
        f"#define RD_NOUT {len(cm.outputs)}",
    ]
    for k in sorted(vals):
        lines.append(f"static const double {k} = {_num(vals[k])};")
    # outputs that are structurally zero (most of a tree's regressor) are filled once, not written one by one:
    # gcc's register allocation time grows fast with the size of these straight-line functions
    zero_fill = any(o == 0 for o in cm.outputs)
    lines.append("")
    lines.append("static void rd_eval(const double *q, const double *qd, const double *qdd, const double *fe,"
                 " double *restrict out) {")
    lines.append("    (void)q; (void)qd; (void)qdd; (void)fe;")
    if zero_fill:
        lines.append("    for (int k = 0; k < RD_NOUT; k++) out[k] = 0.0;")
    for name, code in _inputs(cm, "c"):
        lines.append(f"    const double {name} = {code};")
    for st in cm.body:
        lines.append(f"    const double {st.name} = {_expr(st.expr, 'c')};")
    for k, (o, s) in enumerate(zip(cm.outputs, _output_signs(cm), strict=True)):
        if o != 0:
            lines.append(f"    out[{k}] = {'-' if s < 0 else ''}({_expr(o, 'c')});")
    lines.append("}")
    lines.append("")
    lines.append("static void rd_eval4(const double *q, const double *qd, const double *qdd, const double *fe, int fs,"
                 " double *restrict out) {")
    lines.append("    (void)q; (void)qd; (void)qdd; (void)fe; (void)fs;")
    if zero_fill:
        lines.append("    for (int k = 0; k < 4 * RD_NOUT; k++) out[k] = 0.0;")
    lines.append("    const v4d RD_Z4 = {0.0, 0.0, 0.0, 0.0};")
    done: set[str] = set()
    for name, code in _inputs(cm, "c4"):
        if name[0] in "SC" and code.startswith(("sin(", "cos(")):
            j = name[1:]
            if j not in done:
                done.add(j)
                lines.append(f"    v4d S{j}, C{j};")
                lines.append(f"    rd_sincos4(TH{j}, &S{j}, &C{j});")
            continue
        lines.append(f"    const v4d {name} = RD_Z4 + {code};")
    for st in cm.body:
        lines.append(f"    const v4d {st.name} = RD_Z4 + {_expr(st.expr, 'c4')};")
    for k, (o, sg) in enumerate(zip(cm.outputs, _output_signs(cm), strict=True)):
        if o == 0:
            continue
        lines.append(f"    {{ const v4d t = RD_Z4 {'-' if sg < 0 else '+'} ({_expr(o, 'c4')});")
        lines.append(f"      out[{k}] = t[0]; out[RD_NOUT + {k}] = t[1]; out[2 * RD_NOUT + {k}] = t[2];"
                     f" out[3 * RD_NOUT + {k}] = t[3]; }}")
    lines.append("}")
    dims = "".join(f"dims[ond++] = {d}; " for d in cm.output_shape)
    wrapper = (
        _C_WRAPPER.replace("RD_OUT_DIMS", dims)
        .replace("RD_MODNAME_STR", json.dumps(module_name))
        .replace("RD_INIT", f"PyInit_{module_name}")
    )
    return "\n".join(lines) + "\n" + wrapper


def compiler() -> str | None:
    """Path of the C compiler (``$CC`` or gcc/cc) or None."""
    cc = os.environ.get("CC")
    if cc and shutil.which(cc):
        return shutil.which(cc)
    return shutil.which("gcc") or shutil.which("cc")


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


def compile_c(source_for: Callable[[str], str], key: str | None = None) -> Any:
    """Compile (or load from the cache) a generated extension module; returns the module.

    ``source_for(module_name)`` returns the C source; the module name is ``rdgen_<hash>``
    with the hash of the source generated for a fixed placeholder name.
    """
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler found (gcc/cc/$CC)")
    if key is None:
        key = hashlib.sha256(source_for("rdgen").encode()).hexdigest()[:20]
    name = f"rdgen_{key}"
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    so = d / f"{name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    if not so.exists():
        src = d / f"{name}.c"
        src.write_text(source_for(name))
        inc = [sysconfig.get_paths()["include"], np.get_include()]
        with tempfile.NamedTemporaryFile(dir=d, suffix=".so", delete=False) as tmp:
            tmp_path = tmp.name
        base = [cc, "-O2", "-march=native", "-shared", "-fPIC", "-fno-math-errno", *[f"-I{i}" for i in inc], str(src), "-o", tmp_path]
        cmd = [*base, "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            os.unlink(tmp_path)
            raise RuntimeError(f"compilation failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
        os.replace(tmp_path, so)  # atomic: concurrent processes see a complete file
    return _load_extension(name, so)


# --------------------------------------------------------------- backend
def _host_tag() -> str:
    """Machine and CPU flags: the extension is built with -march=native."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{platform.machine()}:{sys.version_info[:2]}:{hashlib.sha256(flags.encode()).hexdigest()[:8]}"


def model_key(model: Any, **options: Any) -> str:
    """Hash of the robot description, the generation options and the host (CPU flags, Python version)."""
    desc = json.dumps({"model": model.to_dict(), "options": options, "version": GENERATOR_VERSION,
                       "host": _host_tag()}, sort_keys=True)
    return hashlib.sha256(desc.encode()).hexdigest()[:20]


class GeneratedBackend:
    """Generated inverse dynamics (and regressor) of one model; see :meth:`RobotModel.set_backend`.

    ``lang="c"`` compiles a C extension (falls back to Python with a warning when no
    compiler is available); ``lang="python"`` uses the vectorized NumPy function.
    Default parameters: base parameters with the zero values exploited (exact).
    """

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
        self._id = self._build("id", progress)
        self._lazy: dict[str, Callable[..., np.ndarray]] = {}

    def _generate(self, kind: str, progress: Callable[[str], None] | None) -> CustomizedModel:
        if kind == "id":
            return customized_inverse_dynamics(self.model, wrench=True, progress=progress, **self.options)
        if kind == "inertia_matrix":
            return customized_inertia_matrix(self.model, progress=progress, **self.options)
        if kind == "gravity":
            return customized_gravity_torques(self.model, progress=progress, **self.options)
        return customized_regressor(self.model, progress=progress)

    def _build(self, kind: str, progress: Callable[[str], None] | None) -> Callable[..., np.ndarray]:
        opts = {} if kind == "regressor" else self.options
        key = model_key(self.model, kind=kind, lang=self.lang, **opts)
        if self.lang == "c":
            so = cache_dir() / f"rdgen_{key}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
            if so.exists():
                return compile_c(lambda _: "", key=key).evaluate
            cm = self._generate(kind, progress)
            return compile_c(lambda name: c_source(cm, name), key=key).evaluate
        cm = self._generate(kind, progress)
        return load_python(python_source(cm, "generated"), "generated")

    # ---- API mirroring robot_dynamics.inverse_dynamics
    def inverse_dynamics(
        self, q: Any, qd: Any, qdd: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base",
    ) -> np.ndarray:
        if (f_ext is None and gravity is None and self.lang == "c" and type(q) is np.ndarray
                and type(qd) is np.ndarray and type(qdd) is np.ndarray):
            return self._id(q, qd, qdd)  # fast path: the extension checks shapes and finiteness
        from .inverse_dynamics import check_states, external_wrenches, inverse_dynamics

        model = self.model
        (qb, qdb, qddb), batch = check_states(model, (q, "q"), (qd, "qd"), (qdd, "qdd"))
        if gravity is not None and not np.array_equal(np.asarray(gravity, float), self._gravity):
            return inverse_dynamics(model, q, qd, qdd, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
        fe = None
        if f_ext is not None:
            w = external_wrenches(model, qb, f_ext, f_ext_frame, batch)
            if np.any(w[:, :-1]):  # wrenches on inner links: not in the generated model
                return inverse_dynamics(model, q, qd, qdd, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
            fe = np.ascontiguousarray(w[:, -1])
        out = self._id(qb, qdb, qddb, fe)
        return out if batch else out[0]

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        from .inverse_dynamics import check_states, regressor

        model = self.model
        (qb, qdb, qddb), batch = check_states(model, (q, "q"), (qd, "qd"), (qdd, "qdd"))
        if gravity is not None and not np.array_equal(np.asarray(gravity, float), self._gravity):
            return regressor(model, q, qd, qdd, gravity=gravity)
        out = self._program("regressor")(qb, qdb, qddb)
        return out if batch else out[0]

    def _program(self, kind: str) -> Callable[..., np.ndarray]:
        if kind not in self._lazy:
            self._lazy[kind] = self._build(kind, self._progress)
        return self._lazy[kind]

    def inertia_matrix(self, q: Any) -> np.ndarray:
        """A(q) incl. rotor inertias: (n, n) or (N, n, n)."""
        from .inverse_dynamics import check_states

        (qb,), batch = check_states(self.model, (q, "q"))
        out = self._program("inertia_matrix")(qb, qb, qb)
        return out if batch else out[0]

    def gravity_torques(self, q: Any, gravity: Any = None) -> np.ndarray:
        """Q(q): (n,) or (N, n); another ``gravity`` than the model's uses the NumPy model."""
        from .dynamic_terms import gravity_torques
        from .inverse_dynamics import check_states

        if gravity is not None and not np.array_equal(np.asarray(gravity, float), self._gravity):
            return gravity_torques(self.model, q, gravity=gravity)
        (qb,), batch = check_states(self.model, (q, "q"))
        out = self._program("gravity")(qb, qb, qb)
        return out if batch else out[0]

    @property
    def evaluate(self) -> Callable[..., np.ndarray]:
        """The raw generated function ``f(q, qd, qdd[, fe])`` (no validation; float64 inputs)."""
        return self._id


_BACKENDS: dict[str, GeneratedBackend] = {}


def generated_backend(model: Any, lang: str = "c", **options: Any) -> GeneratedBackend:
    """The generated backend of ``model`` (memoized per model description and options)."""
    key = model_key(model, lang=lang, **options)
    be = _BACKENDS.get(key)
    if be is None or be.model is not model:
        be = GeneratedBackend(model, lang=lang, **options)
        _BACKENDS[key] = be
    return be


# --------------------------------------------------------------- CLI
def codegen_cli(args: Any) -> int:
    """``robot-dynamics codegen URDF --lang python|c [--simplified] [--base-parameters|--standard-parameters]
    [-o FILE] [--json]``: generate the customized model, print its operation counts."""
    from .robots import load_model

    model = load_model(args.urdf)

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
