"""Time-optimal retiming against TOPP-RA on random RX-90 paths (lines and 4-waypoint splines), effort limits at
0.35 of the robot's, its velocity limits.

Usage: ``python bench/bench_time_optimal.py [--paths 50] [--grid 200] [--seed 0] [--engine compiled|numpy]``.

Both tools get the same path (SciPy's cubic spline through the waypoints, TOPP-RA's ``SplineInterpolator``), the
same limits and the same dynamics: the model's, its viscous friction left out (TOPP-RA's torque constraint has
Coulomb friction, ``fs_coef``, but no term in sd); TOPP-RA calls the model's inverse dynamics one state at a time,
``time_optimal`` in batches.  Per path: durations and their ratio, the peak |Gamma_j| / limit_j and |qd_j| / v_j of
each result on a grid 100x finer than our parameterization's (uniform in time), and the compute time of each (best
of 3, in this process).  Paths whose static efforts (gravity + Coulomb) exceed 0.9 of a limit are drawn again: no
tool can start or stop there.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robot_dynamics import load_model  # noqa: E402
from robot_dynamics.trajectory.optimal_timing import time_optimal  # noqa: E402
from robot_dynamics.trajectory.paths import spline_path  # noqa: E402
from robot_dynamics.trajectory.reachability import kernel  # noqa: E402


def best(fn, repeat: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def peaks(model, traj_eval, duration: float, points: int, lim: np.ndarray, vel: np.ndarray) -> tuple[float, float]:
    t = np.linspace(0.0, duration, points)
    q, qd, qdd = traj_eval(t)
    tau = model.inverse_dynamics(q, qd, qdd)
    return float(np.max(np.abs(tau) / lim)), float(np.max(np.abs(qd) / vel))


def random_paths(model, count: int, rng: np.random.Generator, lim: np.ndarray):
    lo, hi = model.limits["lower"], model.limits["upper"]
    for k in range(count):
        m = 2 if k % 2 == 0 else 4
        while True:
            w = rng.uniform(0.8 * lo, 0.8 * hi, size=(m, model.dof))
            p = spline_path(w)
            q = p.evaluate(np.linspace(0.0, 1.0, 300))[0]
            if np.max((np.abs(model.gravity_torques(q)) + model.Fc) / lim) < 0.9:
                yield ("line" if m == 2 else "spline"), w, p
                break


def compare(w, path, model, rigid, lim, vel, grid, engine) -> tuple[float, ...]:
    """(duration ratio, our peak effort, velocity, TOPP-RA's peak effort, velocity, our s, TOPP-RA's s, durations)."""
    import toppra as ta
    import toppra.algorithm as algo
    import toppra.constraint as constraint

    spline = ta.SplineInterpolator(np.linspace(0.0, 1.0, w.shape[0]), w)
    cons = [constraint.JointVelocityConstraint(np.vstack([-vel, vel]).T),
            constraint.JointTorqueConstraint(rigid.inverse_dynamics, np.vstack([-lim, lim]).T, model.Fc)]
    t_ref, ref = best(lambda: algo.TOPPRA(cons, spline, parametrizer="ParametrizeConstAccel").compute_trajectory())
    t_ours, res = best(lambda: time_optimal(path, model, lim, vel, gridpoints=grid, engine=engine))
    fine = 100 * (res.s.size - 1) + 1
    ours = peaks(model, res.trajectory.evaluate, res.duration, fine, lim, vel)
    theirs = peaks(model, lambda t: (ref(t), ref(t, 1), ref(t, 2)), ref.duration, fine, lim, vel)
    return (res.duration / ref.duration, *ours, *theirs, t_ours, t_ref, res.duration, ref.duration)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--paths", type=int, default=50)
    ap.add_argument("--grid", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", choices=("compiled", "numpy"), default="compiled")
    args = ap.parse_args()
    import toppra as ta

    ta.setup_logging("WARNING")
    model = load_model("rx90").replace(Fv=np.zeros(6))
    rigid = model.replace(Fc=np.zeros(6))  # TOPP-RA adds the Coulomb friction itself (fs_coef)
    for m in (model, rigid):
        if args.engine == "compiled":
            m.compile()
        else:
            m.set_backend("numpy")
    kernel(args.engine)  # the reachability kernel compiled (or not) before the timings
    lim = 0.35 * model.limits["effort"]
    vel = model.limits["velocity"]
    rng = np.random.default_rng(args.seed)
    print(f"# {args.paths} RX-90 paths, grid {args.grid}, engine {args.engine}, load {os.getloadavg()[0]:.2f}")
    print("| path | ours s | TOPP-RA s | ratio | our peak effort / vel | TOPP-RA peak effort / vel | ours ms | "
          "TOPP-RA ms |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for kind, w, path in random_paths(model, args.paths, rng, lim):
        row = compare(w, path, model, rigid, lim, vel, args.grid, args.engine)
        rows.append(row)
        ratio, e, v, re, rv, t_ours, t_ref, d, dref = row
        print(f"| {kind} | {d:.4f} | {dref:.4f} | {ratio:.4f} | {e:.9f} / {v:.9f} | {re:.4f} / {rv:.4f} | "
              f"{t_ours * 1e3:.1f} | {t_ref * 1e3:.1f} |")
    r = np.array(rows)
    kinds = np.array(["line" if k % 2 == 0 else "spline" for k in range(len(rows))])
    cost = r[:, 5] / r[:, 6]  # compute time ratio per path
    print(f"\nduration ratio: median {np.median(r[:, 0]):.4f}, max {r[:, 0].max():.4f}; our peak effort "
          f"{r[:, 1].max():.9f}, velocity {r[:, 2].max():.9f}; TOPP-RA peak effort median {np.median(r[:, 3]):.4f}, "
          f"max {r[:, 3].max():.4f}; compute time ours / TOPP-RA: median {np.median(cost):.2f}, "
          f"max {cost.max():.2f}, all paths together {r[:, 5].sum() / r[:, 6].sum():.2f}")
    for kind in ("line", "spline"):
        pick = kinds == kind
        print(f"  {kind}s: compute time ours / TOPP-RA median {np.median(cost[pick]):.2f}, max {cost[pick].max():.2f},"
              f" together {r[pick, 5].sum() / r[pick, 6].sum():.2f} ({r[pick, 5].sum() * 1e3:.0f} / "
              f"{r[pick, 6].sum() * 1e3:.0f} ms)")

if __name__ == "__main__":
    main()
