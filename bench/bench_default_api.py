"""The default dynamics API (no opt-in) against Pinocchio, measured in the same run.

Usage::

    python bench/bench_default_api.py [--robots ur5,panda,rx90,tree12] [--batch 10000] [--repeat 7]
                                      [--compile 6,12,24,48] [--profile] [--json]

For each robot (UR5, the Panda's whole tree with its 9 joints, the RX-90, a random 12-joint tree) the
model is built the ordinary way and the default API is called until the engine reports the compiled
programs in use (``model.engine``; no ``compile()`` or ``set_backend()`` call: the background build
of a cold cache is part of the warm-up, its time is printed).  Then, per function (inverse dynamics vs
``pin.rnea``, regressor vs ``computeJointTorqueRegressor``, inertia matrix vs ``crba``, gravity vs
``computeGeneralizedGravity``, forward dynamics vs ``aba``, H vs ``nonLinearEffects``):

* single state: our call ``model.f(q, ...)`` and Pinocchio's, min and median over ``--repeat`` runs,
  and the ratio ours / Pinocchio (<= 1: as fast or faster);
* batch: one call on ``--batch`` states vs a Python loop of the Pinocchio function, min and median,
  and the speed-up Pinocchio / ours (>= 20 wanted).  For the regressor two floors are printed: the
  time to allocate and fill a fresh array of the output's size with NumPy (``fresh``: page faults and
  the kernel's page zeroing included) and to fill an array already in memory (``write``: memory
  bandwidth alone).  The compiled programs reuse a big output the caller dropped (codegen
  ``release_buffers``), so a loop of batch calls costs the ``write`` floor, not the ``fresh`` one;
  the dense (N, n, 13n) result bounds the speed-up from below by the write floor.

``--compile``: generation and gcc times per program for serial chains of those sizes (fresh cache);
``--profile``: where the time of one single-state call goes (UR5 inverse dynamics).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]

from example_robots import example_urdf  # noqa: E402
from pinocchio_from_mdh import pinocchio_model, random_model  # noqa: E402
from pinocchio_oracle import PinocchioURDF  # noqa: E402

from robot_dynamics import codegen  # noqa: E402
from robot_dynamics.model.robot_model import RobotModel  # noqa: E402

FUNCTIONS = [  # (ours, Pinocchio's, number of state arguments)
    ("inverse_dynamics", "rnea", 3),
    ("regressor", "computeJointTorqueRegressor", 3),
    ("inertia_matrix", "crba", 1),
    ("gravity_torques", "computeGeneralizedGravity", 1),
    ("forward_dynamics", "aba", 3),
    ("nonlinear_effects", "nonLinearEffects", 2),
]


def robot(name: str) -> tuple[RobotModel, pin.Model, list[int]]:
    """Our model, Pinocchio's, and the Pinocchio velocity index of each of our joints."""
    if name == "tree12":
        m = random_model(np.random.default_rng(12), n=12, tree=True, friction=True)
        return m, pinocchio_model(m), list(range(12))
    path = {"ur5": example_urdf("ur5"), "panda": example_urdf("panda"), "rx90": ROOT / "urdf" / "rx90.urdf"}[name]
    m = RobotModel.from_urdf(str(path))
    o = PinocchioURDF(Path(path))
    assert o.model.nv == m.dof, (name, o.model.nv, m.dof)
    return m, o.model, [o.v_index(nm) for nm in m.joint_names]


def timing(fn, number: int, repeat: int) -> tuple[float, float]:
    """(min, median) seconds per call over ``repeat`` runs of ``number`` calls."""
    runs = [t / number for t in timeit.repeat(fn, number=number, repeat=repeat)]
    return min(runs), statistics.median(runs)


def warm_up(m: RobotModel, timeout: float) -> float:
    """Call the default API (one state) until every function runs compiled code; returns the seconds."""
    z = np.zeros(m.dof)
    calls = {"inverse_dynamics": (z, z, z), "regressor": (z, z, z), "inertia_matrix": (z,), "gravity_torques": (z,),
             "forward_dynamics": (z, z, z), "nonlinear_effects": (z, z)}
    t0 = time.perf_counter()
    while set(m.engine.values()) != {"compiled"}:
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"{m.name}: not compiled after {timeout} s: {m.engine}")
        for f, args in calls.items():
            getattr(m, f)(*args)
        time.sleep(0.01)
    return time.perf_counter() - t0


def bench_robot(name: str, nb: int, repeat: int, timeout: float) -> dict:
    m, pm, idx = robot(name)
    pd = pm.createData()
    t_warm = warm_up(m, timeout)
    n = m.dof
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(m.limits["lower"]), m.limits["lower"], -np.pi)
    hi = np.where(np.isfinite(m.limits["upper"]), m.limits["upper"], np.pi)
    q = lo + (hi - lo) * rng.random((nb, n))
    qd, qdd = rng.uniform(-2, 2, (2, nb, n))
    # Pinocchio's order: configuration and velocity vectors in its joint order
    qp, vp, ap = np.zeros((nb, pm.nq)), np.zeros((nb, pm.nv)), np.zeros((nb, pm.nv))
    assert pm.nq == pm.nv
    qp[:, idx], vp[:, idx], ap[:, idx] = q, qd, qdd
    # the same robot: our compiled inverse dynamics vs rnea + friction and rotor terms (001 eq. 7.61)
    k = min(nb, 50)
    tau_pin = np.array([pin.rnea(pm, pd, qp[i], vp[i], ap[i])[idx] for i in range(k)])
    tau_pin += m.Fc * np.sign(qd[:k]) + m.Fv * qd[:k] + m.Ia * qdd[:k]
    dev = float(np.abs(m.inverse_dynamics(q[:k], qd[:k], qdd[:k]) - tau_pin).max() / np.abs(tau_pin).max())
    rows = []
    for ours, theirs, nargs in FUNCTIONS:
        f, g = getattr(m, ours), getattr(pin, theirs)
        a1 = (q[0].copy(), qd[0].copy(), qdd[0].copy())[:nargs]
        p1 = (qp[0].copy(), vp[0].copy(), ap[0].copy())[:nargs]
        number = 20000 if n <= 9 else 5000
        s_ours = timing(lambda f=f, a1=a1: f(*a1), number, repeat)
        s_pin = timing(lambda g=g, p1=p1: g(pm, pd, *p1), number, repeat)
        ab = (q, qd, qdd)[:nargs]
        pb = (qp, vp, ap)[:nargs]
        b_ours = timing(lambda f=f, ab=ab: f(*ab), 1, repeat)

        def loop(g=g, pb=pb) -> None:
            for i in range(nb):
                g(pm, pd, *(x[i] for x in pb))

        b_pin = timing(loop, 1, max(3, repeat // 2))
        row = {"robot": name, "dof": n, "function": ours, "pinocchio": theirs,
               "single_us": [t * 1e6 for t in s_ours], "pin_single_us": [t * 1e6 for t in s_pin],
               "single_ratio": s_ours[0] / s_pin[0], "single_ratio_median": s_ours[1] / s_pin[1],
               "batch_ms": [t * 1e3 for t in b_ours], "pin_loop_ms": [t * 1e3 for t in b_pin],
               "batch_speedup": b_pin[0] / b_ours[0], "batch_speedup_median": b_pin[1] / b_ours[1]}
        if ours == "regressor":
            shape = (nb, n, 13 * n)
            row["floor_ms"] = timing(lambda shape=shape: np.empty(shape).fill(1.0), 1, repeat)[0] * 1e3
            held = np.empty(shape)
            row["write_floor_ms"] = timing(lambda held=held: held.fill(1.0), 1, repeat)[0] * 1e3
            del held
        rows.append(row)
    return {"robot": name, "dof": n, "warm_up_s": t_warm, "rel_dev_pinocchio": dev, "rows": rows}


def compile_times(sizes: list[int], kinds: list[str]) -> list[dict]:
    """Generation and gcc time per program for random serial chains (general geometry), in a fresh cache."""
    out = []
    with tempfile.TemporaryDirectory() as d:
        os.environ["ROBOT_DYNAMICS_CACHE"] = d
        for n in sizes:
            m = random_model(np.random.default_rng(n), n=n, tree=False, friction=True, prismatic=False)
            for kind in kinds:
                t0 = time.perf_counter()
                cm = codegen.generate_program(m, kind)
                t_gen = time.perf_counter() - t0
                name = f"rdgen_bench_{n}_{kind}"
                t0 = time.perf_counter()
                units = codegen.module_sources(kind, {kind: cm}, name, units=codegen._units_for(cm))
                t_emit = time.perf_counter() - t0
                work = Path(tempfile.mkdtemp(dir=d))
                t0 = time.perf_counter()
                codegen._compile_units(codegen.compiler(), units, name, work, None)
                t_cc = time.perf_counter() - t0
                c = cm.counts()
                row = {"dof": n, "kind": kind, "statements": len(cm.body), "multiplications": c["multiplications"],
                       "additions": c["additions"], "c_mb": sum(map(len, units)) / 1e6, "units": len(units),
                       "generate_s": t_gen, "emit_s": t_emit, "gcc_s": t_cc, "total_s": t_gen + t_emit + t_cc}
                out.append(row)
                print(f"  n={n:2d} {kind:10s} {row['statements']:6d} statements {row['c_mb']:6.2f} MB C in "
                      f"{row['units']} units: generate {t_gen:6.1f} s, emit {t_emit:5.1f} s, gcc {t_cc:6.1f} s, "
                      f"total {row['total_s']:6.1f} s", flush=True)
    return out


def profile() -> None:
    """Where one single-state call goes (UR5 inverse dynamics, compiled)."""
    m, pm, _ = robot("ur5")
    warm_up(m, 600)
    pd = pm.createData()
    z = np.random.default_rng(1).uniform(-1, 1, (3, m.dof))
    q, qd, qdd = z
    eng = m._engine
    tiny = RobotModel.from_urdf(str(ROOT / "urdf" / "planar2r.urdf"))
    tiny.compile("gravity_torques")
    items = [
        ("model.inverse_dynamics(q, qd, qdd)", lambda: m.inverse_dynamics(q, qd, qdd)),
        ("engine.id(q, qd, qdd) (the C entry)", lambda: eng.id(q, qd, qdd)),
        ("C entry of a 2-joint gravity (fixed cost)", lambda: tiny._engine.gravity(q[:2])),
        ("np.empty(6) (output allocation)", lambda: np.empty(6)),
        ("pin.rnea", lambda: pin.rnea(pm, pd, q, qd, qdd)),
        ("model.inverse_dynamics, list input", lambda: m.inverse_dynamics(list(q), list(qd), list(qdd))),
    ]
    print("\nwhere the time of one call goes (UR5, min over 7 runs of 20000 calls, lambda overhead included):")
    for label, f in items:
        print(f"  {label:45s} {timing(f, 20000, 7)[0] * 1e6:6.3f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", default="ur5,panda,rx90,tree12")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds allowed for the background builds")
    ap.add_argument("--compile", default="", help="chain sizes for the generation/compile table, e.g. 6,12,24,48")
    ap.add_argument("--kinds", default="id,inertia,regressor,fd,gravity")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)8.0f ms %(message)s", stream=sys.stderr)
    os.environ.pop("ROBOT_DYNAMICS_ENGINE", None)  # the default engine
    results = {"numpy": np.__version__, "pinocchio": pin.__version__, "batch": args.batch, "robots": [],
               "compile": []}
    robots = [r for r in args.robots.split(",") if r]
    if robots:
        print(f"numpy {np.__version__}, pinocchio {pin.__version__}, batch = {args.batch}, "
              f"{args.repeat} repeats; times: min / median; ratio = ours / Pinocchio (min, median); "
              f"speed-up = Pinocchio loop / ours (min, median)")
    for r in robots:
        res = bench_robot(r, args.batch, args.repeat, args.timeout)
        results["robots"].append(res)
        print(f"\n{r} ({res['dof']} joints): warm-up {res['warm_up_s']:.1f} s, "
              f"compiled ID vs rnea + friction: {res['rel_dev_pinocchio']:.1e} relative")
        print(f"  {'function':18s} {'ours us':>15s} {'Pinocchio us':>15s} {'ratio':>11s} | {'ours ms':>15s} "
              f"{'Pin. loop ms':>17s} {'speed-up':>13s}")
        for row in res["rows"]:
            s, p, b, pl = row["single_us"], row["pin_single_us"], row["batch_ms"], row["pin_loop_ms"]
            extra = (f"  (floors: fresh {row['floor_ms']:.1f} ms, write {row['write_floor_ms']:.1f} ms)"
                     if "floor_ms" in row else "")
            print(f"  {row['function']:18s} {s[0]:6.2f} / {s[1]:6.2f} {p[0]:6.2f} / {p[1]:6.2f} "
                  f"{row['single_ratio']:5.2f} {row['single_ratio_median']:5.2f} | {b[0]:6.2f} / {b[1]:6.2f} "
                  f"{pl[0]:8.1f} / {pl[1]:6.1f} {row['batch_speedup']:6.1f} {row['batch_speedup_median']:6.1f}{extra}")
    if args.compile:
        print("\ngeneration + compilation per program (random serial chains, fresh cache):")
        results["compile"] = compile_times([int(x) for x in args.compile.split(",")], args.kinds.split(","))
    if args.profile:
        profile()
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
