"""Benchmark the generated inverse dynamics against ``pin.rnea`` in the same run.

Usage: ``python bench/bench_codegen.py [--batch N] [ROBOT ...]`` (default: rx90, ur5,
panda arm = 7 dof with the fingers locked).  For each robot prints

* the single-call time of the compiled generated function (``backend.evaluate``, a
  C extension taking NumPy arrays) and of ``model.inverse_dynamics`` with the
  ``"generated"`` backend (input validation included) vs one ``pin.rnea`` call;
* a batch of N states (default 10 000): the C loop and the vectorized NumPy code
  vs a Python loop of ``pin.rnea``;
* the operation counts and the largest deviation from the NumPy Newton–Euler.

Ratios are measured in the same run (ours / Pinocchio for single calls, Pinocchio / ours
for the batch speed-up).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]

from timing import best_time  # noqa: E402

from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics  # noqa: E402
from robot_dynamics.model.robot_model import RobotModel  # noqa: E402
from robot_dynamics.symbolic.codegen import GeneratedBackend  # noqa: E402
from robot_dynamics.symbolic.customized_model import customized_inverse_dynamics  # noqa: E402


def robot_path(name: str) -> str:
    if Path(name).exists():
        return name
    if name in ("ur5", "panda"):
        from example_robots import example_urdf

        return str(example_urdf(name))
    return str(ROOT / "urdf" / f"{name}.urdf")


def bench(name: str, nb: int) -> dict:
    path = robot_path(name)
    tip = "panda_link8" if name == "panda" else None
    m = RobotModel.from_urdf(path, tip_link=tip)
    if tip is not None:  # the 7-dof arm chain alone, exported so that Pinocchio sees the same bodies
        path = str(Path(tempfile.mkdtemp()) / f"{name}_arm.urdf")
        Path(path).write_text(m.to_urdf())
        m = RobotModel.from_urdf(path)
    m = m.replace(Fc=np.zeros(m.dof), Fv=np.zeros(m.dof))  # Pinocchio's rnea has no friction; same work on both sides
    full = pin.buildModelFromUrdf(path)
    lock = [full.getJointId(nm) for nm in full.names[1:] if nm not in m.joint_names]
    pm = pin.buildReducedModel(full, lock, pin.neutral(full)) if lock else full
    pd = pm.createData()
    perm = np.argsort([pm.idx_vs[pm.getJointId(nm)] for nm in m.joint_names])
    n = m.dof
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.uniform(-2, 2, (nb, n)) for _ in range(3))
    qp, vp, ap = (np.ascontiguousarray(x[:, perm]) for x in (q, qd, qdd))
    t0 = time.perf_counter()
    be_c = GeneratedBackend(m, lang="c")
    t_gen = time.perf_counter() - t0
    be_py = GeneratedBackend(m, lang="python")
    m.set_backend("generated")
    counts = customized_inverse_dynamics(m, parameters="base", simplified=True).counts()
    ref = inverse_dynamics(m, q[:200], qd[:200], qdd[:200])
    dev = np.abs(be_c.evaluate(q[:200], qd[:200], qdd[:200]) - ref).max() / np.abs(ref).max()
    f = be_c.evaluate
    q0, qd0, qdd0 = q[0].copy(), qd[0].copy(), qdd[0].copy()
    qp0, vp0, ap0 = qp[0].copy(), vp[0].copy(), ap[0].copy()
    t_single = best_time(lambda: f(q0, qd0, qdd0), number=20000)
    t_model = best_time(lambda: m.inverse_dynamics(q0, qd0, qdd0), number=5000)
    t_pin = best_time(lambda: pin.rnea(pm, pd, qp0, vp0, ap0), number=20000)
    t_batch = best_time(lambda: f(q, qd, qdd), repeat=5)
    t_batch_py = best_time(lambda: be_py.evaluate(q, qd, qdd), repeat=3)

    def pin_loop() -> None:
        for i in range(nb):
            pin.rnea(pm, pd, qp[i], vp[i], ap[i])

    t_pin_loop = best_time(pin_loop, repeat=3)
    # Pinocchio agrees with the generated code (same robot, no friction)
    tau_pin = np.array([pin.rnea(pm, pd, qp[i], vp[i], ap[i]) for i in range(20)])[:, np.argsort(perm)]
    dev_pin = np.abs(f(q[:20], qd[:20], qdd[:20]) - tau_pin).max() / np.abs(tau_pin).max()
    return {
        "robot": name, "dof": n, **{k: counts[k] for k in ("multiplications", "additions")},
        "setup_s": t_gen, "single_us": t_single * 1e6, "model_call_us": t_model * 1e6, "pin_rnea_us": t_pin * 1e6,
        "single_ratio": t_single / t_pin, "batch_ms": t_batch * 1e3, "batch_numpy_ms": t_batch_py * 1e3,
        "pin_loop_ms": t_pin_loop * 1e3, "batch_speedup": t_pin_loop / t_batch,
        "numpy_batch_speedup": t_pin_loop / t_batch_py, "rel_dev_numpy_ne": dev, "rel_dev_pinocchio": dev_pin,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("robots", nargs="*", default=["rx90", "ur5", "panda"])
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [bench(r, args.batch) for r in args.robots]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"numpy {np.__version__}, pinocchio {pin.__version__}, batch = {args.batch}")
    head = (f"{'robot':8s} {'n':>2s} {'mult':>5s} {'add':>5s} | {'gen C':>8s} {'model()':>8s} {'rnea':>8s} "
            f"{'ratio':>6s} | {'C batch':>9s} {'np batch':>9s} {'rnea loop':>10s} {'speedup':>8s} {'np x':>6s} | dev")
    print(head)
    for r in rows:
        print(f"{r['robot']:8s} {r['dof']:2d} {r['multiplications']:5d} {r['additions']:5d} | "
              f"{r['single_us']:6.2f}us {r['model_call_us']:6.2f}us {r['pin_rnea_us']:6.2f}us {r['single_ratio']:6.2f} | "
              f"{r['batch_ms']:7.2f}ms {r['batch_numpy_ms']:7.2f}ms {r['pin_loop_ms']:8.1f}ms {r['batch_speedup']:7.0f}x "
              f"{r['numpy_batch_speedup']:5.0f}x | {max(r['rel_dev_numpy_ne'], r['rel_dev_pinocchio']):.1e}")


if __name__ == "__main__":
    main()
