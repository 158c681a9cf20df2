"""The two-variable linear programs of the reachability analysis (:mod:`.optimal_timing`): per segment i of the
grid, rows Au u + Ax x <= C in (u_i, x_i) (arrays (N, R); a row with C = inf and zero coefficients is none),
x_{i+1} = x_i + 2 ds_i u_i; backward the controllable sets K_i = [lo_i, hi_i] (Fourier-Motzkin projection of the
rows and of x_{i+1} in K_{i+1} onto x), forward the greatest admissible u_i (H. Pham and Q.-C. Pham, IEEE T-RO 2018).

Two implementations of the same arithmetic (the same IEEE operations in the same order, no contraction into fused
multiply-adds): :func:`solve_numpy`, and a C kernel compiled once into the code cache of
:mod:`robot_dynamics.symbolic.codegen_build` (0.7 instead of 60 ms for the 201 segments and 242 rows a segment of an
RX-90 spline).  ``$ROBOT_DYNAMICS_ENGINE`` chooses as
for the dynamics: ``auto`` (default) builds the kernel in a background thread at the first call and uses NumPy
until it is there, ``compiled`` waits for it, ``numpy``/``python`` never build it; without a C compiler NumPy.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

X_CAP = 1e30
"""Greatest sd^2: where the path stands still (q' = q'' = 0) any speed is admissible, and the time law passes in
~1e-15 of the segment's s."""
ZERO = 1e-12
"""|coefficient of u| below this (relative to the row's size) makes a row a bound on x alone."""


@dataclass(frozen=True)
class _Bounds:
    """Per segment: u <= bu + gu x (rows up to R), u >= bl + gl x, and the interval of x the rows allow alone."""

    bu: np.ndarray
    gu: np.ndarray
    bl: np.ndarray
    gl: np.ndarray
    xlo: np.ndarray
    xhi: np.ndarray


def _bounds(Au: np.ndarray, Ax: np.ndarray, C: np.ndarray) -> _Bounds:
    """Rows (N, R) to bounds on u as functions of x and the x interval where they admit a u (Fourier-Motzkin)."""
    size = np.abs(Au) + np.abs(Ax) + np.where(np.isfinite(C), np.abs(C), 0.0) + 1e-300
    up, low = Au > ZERO * size, Au < -ZERO * size
    with np.errstate(divide="ignore", invalid="ignore"):
        beta, gamma = C / Au, -Ax / Au
    bu, gu = _compact(up, (beta, np.inf), (gamma, 0.0))
    bl, gl = _compact(low, (beta, -np.inf), (gamma, 0.0))
    xlo = np.zeros(Au.shape[0])
    xhi = np.full(Au.shape[0], np.inf)
    # rows without u: Ax x <= C
    only_x = ~(up | low)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = C / Ax
    xhi = np.minimum(xhi, np.min(np.where(only_x & (Ax > 0), r, np.inf), axis=1))
    xlo = np.maximum(xlo, np.max(np.where(only_x & (Ax < 0), r, -np.inf), axis=1))
    bad = np.any(only_x & (Ax == 0) & (C < 0), axis=1)
    # pairs lower l, upper k: bl + gl x <= bu + gu x
    xlo, xhi = _pairs(bl[:, :, None], gl[:, :, None], bu[:, None, :], gu[:, None, :], xlo, xhi, axes=(1, 2))
    xhi = np.where(bad, -np.inf, xhi)
    return _Bounds(bu, gu, bl, gl, xlo, xhi)


def _compact(mask: np.ndarray, *fields: tuple[np.ndarray, float]) -> list[np.ndarray]:
    """Per row of (N, R), the entries where ``mask`` first (the others: the field's fill), trimmed to the greatest
    count of a row."""
    order = np.argsort(~mask, axis=1, kind="stable")
    count = max(int(np.max(mask.sum(axis=1), initial=0)), 1)
    return [np.take_along_axis(np.where(mask, v, fill), order, axis=1)[:, :count] for v, fill in fields]


def _pairs(bl: Any, gl: Any, bu: Any, gu: Any, xlo: Any, xhi: Any, axes: Any) -> tuple[Any, Any]:
    """Intersect [xlo, xhi] with {x : bl + gl x <= bu + gu x} over the pairs (reduced over ``axes``)."""
    alpha = gl - gu
    with np.errstate(invalid="ignore", divide="ignore"):
        rhs = bu - bl  # inf when a side is vacuous
        r = rhs / alpha
    finite = np.isfinite(rhs)
    hi = np.where(finite & (alpha > 0), r, np.inf)
    lo = np.where(finite & (alpha < 0), r, -np.inf)
    never = finite & (alpha == 0) & (rhs < 0)
    xhi = np.minimum(xhi, np.min(hi, axis=axes))
    xlo = np.maximum(xlo, np.max(lo, axis=axes))
    return xlo, np.where(np.any(never, axis=axes), -np.inf, xhi)


class InfeasiblePath(ValueError):
    """No admissible time law: the limits cannot be kept along the path (e.g. gravity alone exceeds an effort
    limit, or the path cannot start or end at the requested speed)."""


_NO_SPEED = ("no admissible speed at s = {s:.6g}: the limits cannot be kept along the path there (a static effort "
             "over its limit, or too little to stop before the end)")
_START = ("the start speed (sd^2 = {x:.6g}) is not in the controllable set [{lo:.6g}, {hi:.6g}]: the limits cannot "
          "be kept from the start")


def _interval(alpha: np.ndarray, rhs: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """[lo, hi] intersected with {x : alpha x <= rhs} for every row (rhs inf: no row)."""
    r = rhs / alpha
    pos, neg = alpha > 0, alpha < 0
    if pos.any():
        hi = min(hi, float(r[pos].min()))
    if neg.any():
        lo = max(lo, float(r[neg].max()))
    if ((alpha == 0) & (rhs < 0)).any():
        hi = -math.inf
    return lo, hi


def _solve(bd: _Bounds, ds: np.ndarray, x_start: float, x_end: float, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Controllable sets backward, the greatest admissible u forward: (x (N+1,), u (N,))."""
    N = ds.size
    lo, hi = np.empty(N + 1), np.empty(N + 1)
    lo[N] = hi[N] = x_end
    h2 = 2.0 * ds
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(N - 1, -1, -1):
            h = h2[i]
            # u >= (lo' - x) / h against the upper rows; u <= (hi' - x) / h against the lower rows
            a, b = _interval(-1.0 / h - bd.gu[i], bd.bu[i] - lo[i + 1] / h, bd.xlo[i], bd.xhi[i])
            a, b = _interval(bd.gl[i] + 1.0 / h, hi[i + 1] / h - bd.bl[i], a, b)
            if not a <= b * (1.0 + 1e-12) + 1e-300:
                raise InfeasiblePath(_NO_SPEED.format(s=s[i]))
            lo[i], hi[i] = a, min(max(a, b), X_CAP)
    if not lo[0] * (1.0 - 1e-9) - 1e-300 <= x_start <= hi[0] * (1.0 + 1e-9) + 1e-300:
        raise InfeasiblePath(_START.format(x=x_start, lo=lo[0], hi=hi[0]))
    x = np.empty(N + 1)
    u = np.empty(N)
    x[0] = x_start
    bu, gu, bl, gl = bd.bu, bd.gu, bd.bl, bd.gl
    for i in range(N):
        h = h2[i]
        xi = x[i]
        u_hi = min(float((bu[i] + gu[i] * xi).min()), (hi[i + 1] - xi) / h)
        u_lo = max(float((bl[i] + gl[i] * xi).max()), (lo[i + 1] - xi) / h)
        ui = u_hi if u_hi >= u_lo else u_lo
        x[i + 1] = min(max(xi + h * ui, lo[i + 1], 0.0), hi[i + 1])
        u[i] = (x[i + 1] - xi) / h
    return x, u




def solve_numpy(Au: np.ndarray, Ax: np.ndarray, C: np.ndarray, ds: np.ndarray, x_start: float, x_end: float,
                s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x (N+1,), u (N,)) in NumPy; :class:`InfeasiblePath` with the place (``s``: the grid) when there is none."""
    return _solve(_bounds(Au, Ax, C), ds, x_start, x_end, s)


_C_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>

#define RD_ZERO 1e-12

/* the same operations as solve_numpy, in the same order; returns 0, 1 (no admissible x at stage *where) or 2 (the
   start speed outside K_0) or -1 (out of memory) */
__attribute__((optimize("fp-contract=off")))
static int rd_reach(long N, long R, const double *Au, const double *Ax, const double *C, const double *ds,
                    double x_start, double x_end, double x_cap, double *x, double *u, double *lo, double *hi,
                    long *where) {
    double *bu = malloc(sizeof(double) * (size_t)(N * R * 4 + 2 * N));
    long *cnt = malloc(sizeof(long) * (size_t)(2 * N));
    if (bu == NULL || cnt == NULL) { free(bu); free(cnt); return -1; }
    double *gu = bu + N * R, *bl = gu + N * R, *gl = bl + N * R, *xlo = gl + N * R, *xhi = xlo + N;
    long *nu = cnt, *nl = cnt + N;
    for (long i = 0; i < N; i++) {
        double a0 = 0.0, b0 = INFINITY;
        int bad = 0;
        long ku = 0, kl = 0;
        for (long r = 0; r < R; r++) {
            double a = Au[i * R + r], b = Ax[i * R + r], c = C[i * R + r];
            double size = fabs(a) + fabs(b) + (isfinite(c) ? fabs(c) : 0.0) + 1e-300;
            if (a > RD_ZERO * size) { bu[i * R + ku] = c / a; gu[i * R + ku] = -b / a; ku++; }
            else if (a < -RD_ZERO * size) { bl[i * R + kl] = c / a; gl[i * R + kl] = -b / a; kl++; }
            else if (b > 0) { double v = c / b; if (v < b0) b0 = v; }
            else if (b < 0) { double v = c / b; if (v > a0) a0 = v; }
            else if (c < 0) bad = 1;
        }
        for (long l = 0; l < kl; l++)
            for (long k = 0; k < ku; k++) {
                double alpha = gl[i * R + l] - gu[i * R + k], rhs = bu[i * R + k] - bl[i * R + l];
                if (alpha > 0) { double v = rhs / alpha; if (v < b0) b0 = v; }
                else if (alpha < 0) { double v = rhs / alpha; if (v > a0) a0 = v; }
                else if (rhs < 0) bad = 1;
            }
        xlo[i] = a0; xhi[i] = bad ? -INFINITY : b0; nu[i] = ku; nl[i] = kl;
    }
    int rc = 0;
    lo[N] = hi[N] = x_end;
    for (long i = N - 1; i >= 0; i--) {
        double h = 2.0 * ds[i], a0 = xlo[i], b0 = xhi[i];
        int bad = 0;
        for (long k = 0; k < nu[i]; k++) {
            double alpha = -1.0 / h - gu[i * R + k], rhs = bu[i * R + k] - lo[i + 1] / h;
            if (alpha > 0) { double v = rhs / alpha; if (v < b0) b0 = v; }
            else if (alpha < 0) { double v = rhs / alpha; if (v > a0) a0 = v; }
            else if (rhs < 0) bad = 1;
        }
        if (bad) b0 = -INFINITY;
        bad = 0;
        for (long l = 0; l < nl[i]; l++) {
            double alpha = gl[i * R + l] + 1.0 / h, rhs = hi[i + 1] / h - bl[i * R + l];
            if (alpha > 0) { double v = rhs / alpha; if (v < b0) b0 = v; }
            else if (alpha < 0) { double v = rhs / alpha; if (v > a0) a0 = v; }
            else if (rhs < 0) bad = 1;
        }
        if (bad) b0 = -INFINITY;
        if (!(a0 <= b0 * (1.0 + 1e-12) + 1e-300)) { *where = i; rc = 1; goto out; }
        lo[i] = a0;
        hi[i] = fmin(a0 > b0 ? a0 : b0, x_cap);
    }
    if (!(lo[0] * (1.0 - 1e-9) - 1e-300 <= x_start && x_start <= hi[0] * (1.0 + 1e-9) + 1e-300)) { rc = 2; goto out; }
    x[0] = x_start;
    for (long i = 0; i < N; i++) {
        double h = 2.0 * ds[i], xi = x[i], uh = INFINITY, ul = -INFINITY;
        for (long k = 0; k < nu[i]; k++) { double v = bu[i * R + k] + gu[i * R + k] * xi; if (v < uh) uh = v; }
        for (long l = 0; l < nl[i]; l++) { double v = bl[i * R + l] + gl[i * R + l] * xi; if (v > ul) ul = v; }
        double kh = (hi[i + 1] - xi) / h, kl2 = (lo[i + 1] - xi) / h;
        if (kh < uh) uh = kh;
        if (kl2 > ul) ul = kl2;
        double ui = uh >= ul ? uh : ul;
        double nx = xi + h * ui;
        if (lo[i + 1] > nx) nx = lo[i + 1];
        if (0.0 > nx) nx = 0.0;
        if (hi[i + 1] < nx) nx = hi[i + 1];
        x[i + 1] = nx;
        u[i] = (nx - xi) / h;
    }
out:
    free(bu);
    free(cnt);
    return rc;
}

static PyObject *py_reach(PyObject *self, PyObject *args) {
    Py_buffer b[9];
    double xs, xe, cap;
    if (!PyArg_ParseTuple(args, "y*y*y*y*dddw*w*w*w*", &b[0], &b[1], &b[2], &b[3], &xs, &xe, &cap, &b[4], &b[5],
                          &b[6], &b[7]))
        return NULL;
    long N = (long)(b[3].len / 8), R = N > 0 ? (long)(b[0].len / 8 / N) : 0, where = -1;
    int rc = -3;
    if (N > 0 && b[1].len == b[0].len && b[2].len == b[0].len && b[4].len == 8 * (N + 1) && b[5].len == 8 * N &&
        b[6].len == 8 * (N + 1) && b[7].len == 8 * (N + 1)) {
        Py_BEGIN_ALLOW_THREADS
        rc = rd_reach(N, R, b[0].buf, b[1].buf, b[2].buf, b[3].buf, xs, xe, cap, b[4].buf, b[5].buf, b[6].buf,
                      b[7].buf, &where);
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 8; k++) PyBuffer_Release(&b[k]);
    if (rc == -3) { PyErr_SetString(PyExc_ValueError, "reach: inconsistent array sizes"); return NULL; }
    if (rc == -1) return PyErr_NoMemory();
    return Py_BuildValue("il", rc, where);
}

static PyMethodDef methods[] = {{"reach", py_reach, METH_VARARGS, "reachability analysis"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "@NAME@", NULL, -1, methods};
PyMODINIT_FUNC PyInit_@NAME@(void) { return PyModule_Create(&module); }
"""

_KERNEL: dict[str, Any] = {}
_BUILDING = threading.Lock()


def _build() -> Any:
    from ..symbolic.codegen_build import compile_c

    return compile_c(lambda name: _C_SOURCE.replace("@NAME@", name))


def _build_in_background() -> None:
    try:
        _KERNEL["module"] = _build()
    except Exception as exc:  # noqa: BLE001 - no compiler, a failed build: NumPy stays
        log.info("reachability kernel not compiled (%s): NumPy", exc)
        _KERNEL["module"] = None


def kernel(mode: str | None = None) -> Any:
    """The compiled kernel, or None (NumPy) while it builds, without a compiler, or in ``numpy``/``python``
    mode (``mode`` default: ``$ROBOT_DYNAMICS_ENGINE``)."""
    from ..symbolic.codegen_engine import engine_mode

    mode = mode or engine_mode()
    if mode in ("numpy", "python"):
        return None
    if "module" in _KERNEL:
        return _KERNEL["module"]
    if mode == "compiled":
        with _BUILDING:
            if "module" not in _KERNEL:
                _build_in_background()
        return _KERNEL["module"]
    if _BUILDING.acquire(blocking=False):
        if "module" not in _KERNEL and "thread" not in _KERNEL:
            _KERNEL["thread"] = threading.Thread(target=_build_in_background, name="reachability-kernel", daemon=True)
            _KERNEL["thread"].start()
        _BUILDING.release()
    return None


def solve(Au: np.ndarray, Ax: np.ndarray, C: np.ndarray, ds: np.ndarray, x_start: float, x_end: float,
          s: np.ndarray, mode: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(x (N+1,), u (N,)): the compiled kernel when there is one (:func:`kernel`), else :func:`solve_numpy`."""
    mod = kernel(mode)
    if mod is None:
        return solve_numpy(Au, Ax, C, ds, x_start, x_end, s)
    N = ds.size
    x, u, lo, hi = np.empty(N + 1), np.empty(N), np.empty(N + 1), np.empty(N + 1)
    rc, where = mod.reach(*(np.ascontiguousarray(v, dtype=float) for v in (Au, Ax, C, ds)), float(x_start),
                          float(x_end), X_CAP, x, u, lo, hi)
    if rc == 1:
        raise InfeasiblePath(_NO_SPEED.format(s=s[where]))
    if rc == 2:
        raise InfeasiblePath(_START.format(x=x_start, lo=lo[0], hi=hi[0]))
    return x, u
