"""Per-cycle cost of the control laws (001 ch. 9) vs a Pinocchio-based computed torque, same run.

Usage: ``python bench/bench_controller.py [URDF or bundled name] [--calls N]``
(default: the bundled RX-90).  Each law is called N times (default 5000) on random
states/references; the median and 99th percentile of one ``compute`` call are printed,
plus the same computed-torque law written with ``pin.rnea`` (C++), and the ratio
ours / Pinocchio.  The laws call ``model.inverse_dynamics``, i.e. the model's engine
(:class:`robot_dynamics.symbolic.codegen.Engine`); three copies of the model are timed:

* ``compiled``: the customized program compiled to C (``model.compile``), what the laws run by default;
* ``python``: the generated scalar Python program, the engine of a machine without a C compiler
  (here ``codegen.compiler`` is made to find none);
* ``numpy``: the NumPy model (``model.set_backend("numpy")``).

plus one state of ``model.inverse_dynamics`` alone on each engine.
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
from robot_dynamics.control.base import DEFAULT_COULOMB_BAND  # noqa: E402
from robot_dynamics.dynamics.friction import coulomb  # noqa: E402
from robot_dynamics.model.robot_model import RobotModel  # noqa: E402
from robot_dynamics.symbolic import codegen  # noqa: E402


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
        tau = tau_p[inv] + coulomb(fc, qdr, DEFAULT_COULOMB_BAND) + fv * qd + ia * w  # Coulomb on q̇_d
        return np.clip(tau, -lim, lim)

    return law


def engines(path: str) -> dict[str, RobotModel]:
    """One model per engine of ``inverse_dynamics``: compiled C, generated scalar Python, NumPy."""
    compiled = RobotModel.from_urdf(path)
    status = compiled.compile("inverse_dynamics")["inverse_dynamics"]
    if status != "compiled":
        raise SystemExit(f"the inverse dynamics did not compile ({status}): is there a C compiler?")
    python = RobotModel.from_urdf(path)
    real = codegen.compiler
    codegen.compiler = lambda: None  # as on a machine without a C compiler
    try:
        assert python.compile("inverse_dynamics")["inverse_dynamics"] == "python"
    finally:
        codegen.compiler = real
    numpy_model = RobotModel.from_urdf(path)
    numpy_model.set_backend("numpy")
    return {"compiled": compiled, "python": python, "numpy": numpy_model}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("urdf", nargs="?", default="rx90")
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    path = args.urdf if Path(args.urdf).exists() else str(ROOT / "urdf" / f"{args.urdf}.urdf")
    models = engines(path)
    model = models["compiled"]
    n = model.dof
    rng = np.random.default_rng(0)
    states = [(0.0, *rng.uniform(-1.5, 1.5, (5, n))) for _ in range(args.calls)]
    print(f"robot {model.name} ({path}), n = {n}, {args.calls} calls, numpy {np.__version__}, "
          f"pinocchio {pin.__version__}")
    a = np.ones(n)  # gains only; cost does not depend on them
    ct = make_controller("computed_torque", model, 20.0)
    pin_law = pinocchio_computed_torque(path, model, ct.kp, ct.kd)
    rows = []
    for name in CONTROLLERS:
        ctrl = make_controller(name, model, 20.0, a=a)
        rows.append((f"{name} (compiled)", per_call(ctrl.compute, states)))
    for engine in ("python", "numpy"):
        law = make_controller("computed_torque", models[engine], 20.0)
        for s in states[:20]:  # same law, same numbers
            np.testing.assert_allclose(law.compute(*s), pin_law(*s), rtol=1e-9, atol=1e-9)
        calls = states if engine != "numpy" else states[:500]
        rows.append((f"computed_torque ({engine})", per_call(law.compute, calls)))
    for s in states[:20]:
        np.testing.assert_allclose(ct.compute(*s), pin_law(*s), rtol=1e-9, atol=1e-9)
    t_pin = per_call(pin_law, states)
    rows.append(("computed_torque (pin.rnea)", t_pin))
    q0 = states[0][1:4]
    for engine, m in models.items():
        assert m.engine["inverse_dynamics"] == engine, m.engine
        rows.append((f"model.inverse_dynamics, 1 state ({engine})", per_call(m.inverse_dynamics, [q0] * 500)))
    print(f"{'law':44s} {'median us':>10s} {'p99 us':>10s} {'vs pin':>8s}")
    med_pin = np.median(t_pin)
    for name, t in rows:
        print(f"{name:44s} {np.median(t):10.1f} {np.percentile(t, 99):10.1f} {np.median(t) / med_pin:8.1f}")


if __name__ == "__main__":
    main()
