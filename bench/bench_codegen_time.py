"""Generation and compilation time of the customized programs (issue 15: bounded generation).

Usage: ``python bench/bench_codegen_time.py [--joints 6 12 24 48] [--tree 48] [--programs id gravity inertia
regressor fd] [--no-compile] [--repeat 1]``.

For random chains of 6, 12, 24 and 48 joints (general geometry, every joint revolute or prismatic, with
friction and rotor inertia: ``pinocchio_from_mdh.random_model``) and a 48-joint tree, prints per program

* ``base s``: the base parameters of the model (:mod:`robot_dynamics.dynamics.base_parameters`, computed once per
  model and shared by the programs; the regressor uses the standard parameters);
* ``generate s``: the symbolic part (:mod:`robot_dynamics.symbolic.customized_model`), statements and operations;
* ``compile s``: C source and gcc through :mod:`robot_dynamics.symbolic.codegen` as it is (``module_sources`` +
  ``build_module``: the split, parallel build the engine uses), into a fresh cache directory;
* the growth exponent of each column between consecutive sizes (time ∝ n^k; the issue asks k ≤ 2) and the
  total generation + compilation time of each model.

Then the operation counts of the RX-90 direct dynamics beside the seed's (001 §7.6.2: 889 ×/653 + with base
parameters [Khalil 97], 637 ×/423 + with the simplified parameters of Table 7.4).  Times are wall-clock on
this machine (min of ``--repeat`` runs); nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]
os.environ["ROBOT_DYNAMICS_CACHE"] = tempfile.mkdtemp(prefix="rd_bench_cache_")  # cold cache

from pinocchio_from_mdh import random_model  # noqa: E402

from robot_dynamics import codegen  # noqa: E402
from robot_dynamics import customized_model as cmod  # noqa: E402
from robot_dynamics.model.robots import load_model  # noqa: E402

GENERATORS = {
    "id": lambda m: cmod.customized_inverse_dynamics(m, "base", simplified=True, wrench=True),
    "gravity": lambda m: cmod.customized_gravity_torques(m, "base", simplified=True),
    "inertia": lambda m: cmod.customized_inertia_matrix(m, "base", simplified=True),
    "regressor": lambda m: cmod.customized_regressor(m),
    "fd": lambda m: cmod.customized_forward_dynamics(m, "base", simplified=True, wrench=True),
}


def compile_program(kind: str, cm: cmod.CustomizedModel, tag: str) -> float:
    """Seconds to emit and compile ``cm`` with the code generator as it is today."""
    t0 = time.perf_counter()
    if hasattr(codegen, "module_sources") and hasattr(codegen, "build_module"):
        units = max(1, min(os.cpu_count() or 1, 8))
        codegen.build_module(f"bench_{tag}_{os.getpid()}_{time.monotonic_ns()}",
                             lambda name: codegen.module_sources(kind, {kind: cm}, name, units=units))
    else:
        codegen.compile_c(lambda name: codegen.c_source(cm, name))
    return time.perf_counter() - t0


def bench_model(label: str, m, programs: list[str], compile_: bool, repeat: int) -> list[dict]:
    t0 = time.perf_counter()
    cmod._parameter_table(m, "base", True, False)
    t_base = time.perf_counter() - t0
    rows = []
    for kind in programs:
        best = math.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            cm = GENERATORS[kind](m)
            best = min(best, time.perf_counter() - t0)
        c = cm.counts()
        t_c = compile_program(kind, cm, f"{label}_{kind}") if compile_ else math.nan
        rows.append({"model": label, "n": m.dof, "program": kind, "base": t_base if kind != "regressor" else 0.0,
                     "generate": best, "compile": t_c, "statements": len(cm.body), "mult": c["multiplications"],
                     "add": c["additions"]})
        print(f"{label:>9} {m.dof:>3} {kind:>9} {rows[-1]['base']:>7.2f} {best:>10.2f} {t_c:>9.2f} "
              f"{len(cm.body):>7} {c['multiplications']:>8} {c['additions']:>8}", flush=True)
    return rows


def growth(rows: list[dict], programs: list[str], key: str) -> None:
    chains = sorted({r["n"] for r in rows if r["model"].startswith("chain")})
    for kind in programs:
        pts = {r["n"]: r[key] for r in rows if r["program"] == kind and r["model"].startswith("chain")}
        ks = []
        for a, b in zip(chains, chains[1:], strict=False):
            if pts.get(a, 0) > 0.02 and pts.get(b, 0) > 0 and not math.isnan(pts[b]):
                ks.append(f"{a}->{b}: {math.log(pts[b] / pts[a]) / math.log(b / a):.2f}")
        print(f"  {kind:>9} {key:>8}: " + (", ".join(ks) if ks else "(too fast to measure)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--joints", type=int, nargs="*", default=[6, 12, 24, 48])
    ap.add_argument("--tree", type=int, nargs="*", default=[48])
    ap.add_argument("--programs", nargs="*", default=list(GENERATORS), choices=list(GENERATORS))
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"{'model':>9} {'n':>3} {'program':>9} {'base s':>7} {'generate s':>10} {'compile s':>9} "
          f"{'stmts':>7} {'mult':>8} {'add':>8}")
    rows: list[dict] = []
    for n in args.joints:
        m = random_model(np.random.default_rng(n), n, friction=True)
        rows += bench_model(f"chain{n}", m, args.programs, not args.no_compile, args.repeat)
    for n in args.tree:
        m = random_model(np.random.default_rng(1000 + n), n, tree=True, friction=True)
        rows += bench_model(f"tree{n}", m, args.programs, not args.no_compile, args.repeat)
    print("\ngrowth exponents k (time ∝ n^k) between consecutive chain sizes:")
    for key in ("generate", "compile"):
        if key == "compile" and args.no_compile:
            continue
        growth(rows, args.programs, key)
    print("\ntotal per model (base parameters + every program generated and compiled):")
    for label in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == label]
        gen = rs[0]["base"] + sum(r["generate"] for r in rs)
        comp = sum(r["compile"] for r in rs)
        worst = max(rs, key=lambda r: r["generate"] + (0 if math.isnan(r["compile"]) else r["compile"]))
        print(f"  {label:>9}: generate {gen:.2f} s, compile {comp:.2f} s, slowest program {worst['program']} "
              f"({worst['generate'] + (0 if math.isnan(worst['compile']) else worst['compile']):.2f} s)")
    print("\nRX-90 direct dynamics (001 §7.6.2), operations counted as the seed counts them:")
    from test_customized_model import _general_rx90, _table_7_4_rx90

    cases = [
        ("bundled RX-90 (friction, rotor inertia), base", load_model("rx90"), False, (889, 653)),
        ("RX-90, general inertias, base", _general_rx90(np.random.default_rng(76)), False, (889, 653)),
        ("RX-90, Table 7.4 simplified, base", _table_7_4_rx90(np.random.default_rng(74)), True, (637, 423)),
    ]
    for label, m, simplified, (sm, sa) in cases:
        c = cmod.customized_forward_dynamics(m, "base", simplified=simplified).counts()
        ci = cmod.customized_inverse_dynamics(m, "base", simplified=simplified).counts()
        print(f"  {label:<46} ours {c['multiplications']:>4} × {c['additions']:>4} + "
              f"({c.get('divisions', 0)} divisions, {c['sign']} sign)   seed {sm} × {sa} +   "
              f"[inverse dynamics: {ci['multiplications']} × {ci['additions']} +]")


if __name__ == "__main__":
    main()
