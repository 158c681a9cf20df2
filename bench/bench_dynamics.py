"""Benchmark the dynamics core against Pinocchio on the same URDF in the same run.

Usage: ``python bench/bench_dynamics.py [URDF or bundled name] [--batch N]``
(default: the UR5 of example-robot-data).  Times a single call and a batch of N
states (default 10 000) for inverse dynamics vs ``pin.rnea``, the inertia matrix vs
``pin.crba`` and direct dynamics (both methods) vs ``pin.aba``; Pinocchio's batch is
a Python loop over its C++ calls.  Prints times and ratios (ours / Pinocchio).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]

from timing import best_time  # noqa: E402

from robot_dynamics.model.robot_model import RobotModel  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("urdf", nargs="?", default=None)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--tip", default=None)
    args = ap.parse_args()
    if args.urdf is None:
        from example_robots import example_urdf

        path = str(example_urdf("ur5"))
    else:
        path = args.urdf if Path(args.urdf).exists() else str(ROOT / "urdf" / f"{args.urdf}.urdf")
    m = RobotModel.from_urdf(path, tip_link=args.tip)
    pm = pin.buildModelFromUrdf(path)
    if pm.nv != m.dof:
        raise SystemExit("bench needs a URDF whose Pinocchio model has exactly the chain joints")
    pd = pm.createData()
    idx = [pm.idx_vs[pm.getJointId(name)] for name in m.joint_names]
    perm = np.argsort(idx)
    rng = np.random.default_rng(0)
    n, nb = m.dof, args.batch
    q, qd, qdd = (rng.uniform(-2, 2, (nb, n)) for _ in range(3))
    qp, vp, ap_ = (np.ascontiguousarray(x[:, perm]) for x in (q, qd, qdd))
    print(f"robot {m.name} ({path}), n = {n}, batch = {nb}, numpy {np.__version__}, pinocchio {pin.__version__}")
    rows = [
        ("inverse_dynamics vs rnea", lambda s: m.inverse_dynamics(q[s], qd[s], qdd[s]),
         lambda i: pin.rnea(pm, pd, qp[i], vp[i], ap_[i])),
        ("inertia_matrix vs crba", lambda s: m.inertia_matrix(q[s]), lambda i: pin.crba(pm, pd, qp[i])),
        ("forward_dynamics[cholesky] vs aba", lambda s: m.forward_dynamics(q[s], qd[s], qdd[s]),
         lambda i: pin.aba(pm, pd, qp[i], vp[i], ap_[i])),
        ("forward_dynamics[recursive] vs aba", lambda s: m.forward_dynamics(q[s], qd[s], qdd[s], method="recursive"),
         lambda i: pin.aba(pm, pd, qp[i], vp[i], ap_[i])),
        ("regressor vs computeJointTorqueRegressor", lambda s: m.regressor(q[s], qd[s], qdd[s]),
         lambda i: pin.computeJointTorqueRegressor(pm, pd, qp[i], vp[i], ap_[i])),
    ]  # fmt: skip
    print(f"{'':42s} {'single ours':>12s} {'single pin':>11s} {'ratio':>7s}   {'batch ours':>11s} {'batch pin':>10s} {'ratio':>7s}")
    for name, ours, theirs in rows:
        t1 = best_time(lambda ours=ours: ours(0), number=200)
        p1 = best_time(lambda theirs=theirs: theirs(0), number=2000)
        tb = best_time(lambda ours=ours: ours(slice(None)), repeat=3)

        def pin_batch(theirs=theirs) -> None:
            for i in range(nb):
                theirs(i)

        pb = best_time(pin_batch, repeat=3)
        print(f"{name:42s} {t1 * 1e6:10.1f}us {p1 * 1e6:9.2f}us {t1 / p1:7.1f}   {tb * 1e3:9.1f}ms {pb * 1e3:8.1f}ms {tb / pb:7.2f}")


if __name__ == "__main__":
    main()
