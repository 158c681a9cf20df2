"""C emitter of customized programs: the translation units of one program (001 §7.5, §7.6.2).

:func:`_program_units` prints a program as a dedicated scalar function (one state per call) and a 4-lane
SIMD function (four states at a time in vector registers; ``rd_sincos4`` of :data:`_C_COMMON`).  Large
programs are split into functions of bounded size (``CHUNK_CHARS``), spread over several translation
units compiled in parallel: gcc's register allocation time grows faster than linearly with the size of
one straight-line function (the 24-joint regressor took 270 s as one function).  The CPython module
around the programs is printed by :mod:`~robot_dynamics.symbolic.codegen_cmodule`.
"""

from __future__ import annotations

from typing import Any

from .codegen_config import _STACK_BYTES, CHUNK_CHARS, O1_MIN_CHARS, SIMD_MAX_CHARS
from .codegen_printing import _expr, _inputs, _num, _output_signs

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
