"""Per-call cost of the Coulomb compensation of the control laws (issue 16), compiled engine.

Usage: ``python bench/bench_coulomb_overhead.py [--calls N]``.  Each model-based law's ``compute`` is timed on
the same random states with the default options (Coulomb term on q̇^d, band) and with
``coulomb_velocity="measured", coulomb_velocity_band=0`` (the plain model: no correction, the cost before);
min and median of 7 repeats of N calls, per call, with the 1-minute load average.
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

from robot_dynamics.control import make_controller  # noqa: E402
from robot_dynamics.dynamics.friction import coulomb  # noqa: E402
from robot_dynamics.model import seed_robots  # noqa: E402


def per_call(fn, states, repeats: int = 7) -> tuple[float, float]:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for s in states:
            fn(*s)
        runs.append((time.perf_counter() - t0) / len(states) * 1e6)
    return min(runs), float(np.median(runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    model = seed_robots.rx90()
    print(f"engine: {model.compile('inverse_dynamics')}, load {os.getloadavg()[0]:.2f}, numpy {np.__version__}")
    rng = np.random.default_rng(0)
    states = [(0.0, *rng.uniform(-1.5, 1.5, (5, 6))) for _ in range(args.calls)]
    a = np.ones(6)
    print(f"{'law':18s} {'default us (min/med)':>22s} {'plain model us':>16s} {'overhead us':>12s}")
    for name in ("computed_torque", "predictive", "task_space"):
        new = make_controller(name, model, 20.0, a=a)
        old = make_controller(name, model, 20.0, a=a, coulomb_velocity="measured", coulomb_velocity_band=0.0)
        n_states = states if name != "task_space" else states[:1000]
        t_new, t_old = per_call(new.compute, n_states), per_call(old.compute, n_states)
        print(f"{name:18s} {t_new[0]:10.2f} / {t_new[1]:8.2f} {t_old[0]:7.2f} / {t_old[1]:6.2f} "
              f"{t_new[0] - t_old[0]:12.2f}")
    ct = make_controller("computed_torque", model, 20.0)
    s = states[0]
    t_fix = per_call(lambda: ct._dynamics(s[1], s[2], s[3], s[4], s[2]), [()] * args.calls)
    t_id = per_call(lambda: model.inverse_dynamics(s[1], s[2], s[3]), [()] * args.calls)
    t_helper = per_call(lambda: coulomb(model.Fc, s[4], 1e-3), [()] * 1000)
    print(f"law's dynamics call with the correction: {t_fix[0]:.2f} us (min), model.inverse_dynamics alone "
          f"{t_id[0]:.2f} us: correction {t_fix[0] - t_id[0]:.2f} us; friction.coulomb (validating helper) "
          f"{t_helper[0]:.2f} us")


if __name__ == "__main__":
    main()
