"""Per-cycle cost of the control laws (001 ch. 9) vs a Pinocchio-based computed torque, same run.

Usage: ``python bench/bench_controller.py [URDF or bundled name] [--calls N]``
(default: the bundled RX-90).  Each law is called N times (default 5000) on random
states/references; the median and 99th percentile of one ``compute`` call are
printed, plus the same computed-torque law written with ``pin.rnea`` (C++), and the
ratio ours / Pinocchio.  Also times the vectorized ``model.inverse_dynamics`` for one
state, which the controllers do not use in the loop (see control/realtime_dynamics.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robot_dynamics.control import CONTROLLERS, make_controller  # noqa: E402
from robot_dynamics.model.robot_model import RobotModel  # noqa: E402


def per_call(fn, args_list) -> np.ndarray:
    out = np.empty(len(args_list))
    for i, a in enumerate(args_list):
        t0 = time.perf_counter()
        fn(*a)
        out[i] = time.perf_counter() - t0
    return out * 1e6


def pinocchio_computed_torque(path: str, model: RobotModel, kp: np.ndarray, kd: np.ndarray):
    """[9.22]/[9.24] with pin.rnea; same friction/rotor terms and saturation as ours."""
    pm = pin.buildModelFromUrdf(path)
    pm.gravity.linear[:] = model.gravity
    idx = [pm.idx_vs[pm.getJointId(name)] for name in model.joint_names]
    if sorted(idx) != list(range(model.dof)) or pm.nv != model.dof:
        raise SystemExit("bench needs a URDF whose Pinocchio model has exactly the chain joints")
    perm = np.argsort(idx)  # Pinocchio order -> our order
    inv = np.asarray(idx)
    pdata = pm.createData()
    lim = model.limits["effort"]
    fc, fv, ia = model.Fc, model.Fv, model.Ia

    def law(t, q, qd, qr, qdr, qddr):
        w = qddr + kd * (qdr - qd) + kp * (qr - q)
        tau_p = pin.rnea(pm, pdata, q[perm], qd[perm], w[perm])
        tau = tau_p[inv] + fc * np.sign(qd) + fv * qd + ia * w
        return np.clip(tau, -lim, lim)

    return law


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("urdf", nargs="?", default="rx90")
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    path = args.urdf if Path(args.urdf).exists() else str(ROOT / "urdf" / f"{args.urdf}.urdf")
    model = RobotModel.from_urdf(path)
    n = model.dof
    rng = np.random.default_rng(0)
    states = [(0.0, *rng.uniform(-1.5, 1.5, (5, n))) for _ in range(args.calls)]
    print(f"robot {model.name} ({path}), n = {n}, {args.calls} calls, numpy {np.__version__}, "
          f"pinocchio {pin.__version__}")
    a = np.ones(n)  # gains only; cost does not depend on them
    ct = make_controller("computed_torque", model, 20.0)
    pin_law = pinocchio_computed_torque(path, model, ct.kp, ct.kd)
    for s in states[:20]:  # same law, same numbers
        np.testing.assert_allclose(ct.compute(*s), pin_law(*s), rtol=1e-9, atol=1e-9)
    rows = []
    for name in CONTROLLERS:
        ctrl = make_controller(name, model, 20.0, a=a)
        rows.append((name, per_call(ctrl.compute, states)))
    t_pin = per_call(pin_law, states)
    rows.append(("computed_torque (pin.rnea)", t_pin))
    fast = RobotModel.from_urdf(path)
    fast.set_backend("generated")  # the customized model compiled to C (what the controller node uses)
    ct_gen = make_controller("computed_torque", fast, 20.0, inverse_dynamics=fast.inverse_dynamics)
    for s in states[:20]:
        np.testing.assert_allclose(ct_gen.compute(*s), pin_law(*s), rtol=1e-9, atol=1e-9)
    rows.append(("computed_torque (generated C)", per_call(ct_gen.compute, states)))
    q0 = states[0][1]
    rows.append(("model.inverse_dynamics, 1 state", per_call(model.inverse_dynamics, [(q0, q0, q0)] * 500)))
    print(f"{'law':34s} {'median us':>10s} {'p99 us':>10s} {'vs pin':>8s}")
    med_pin = np.median(t_pin)
    for name, t in rows:
        print(f"{name:34s} {np.median(t):10.1f} {np.percentile(t, 99):10.1f} {np.median(t) / med_pin:8.1f}")


if __name__ == "__main__":
    main()
