"""The CPython extension module (C API + NumPy C API) around the compiled programs of
:mod:`~robot_dynamics.symbolic.codegen_c`.

* :func:`module_sources` — the C units of the module of one kind (``id``, ``gravity``, ``inertia``,
  ``regressor``, ``fd``) and its entries (``evaluate``; ``nle``, the inverse dynamics at q̈ = 0, 001 eq. 7.62);
* :func:`c_source` — a one-file module with ``evaluate`` for any customized program.

The generated functions take URDF joint values (``q, qd, qdd`` of shape ``(n,)`` or ``(N, n)``) and
an optional wrench ``fe`` ``(6,)``/``(N, 6)`` exerted by link n on the environment in R_n about O_n;
they check shapes and finiteness and return float64 arrays (batches: four states at a time in SIMD
registers, with the GIL released).
"""

from __future__ import annotations

import json
from typing import Any

from .codegen_c import _C_COMMON, _program_units

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
