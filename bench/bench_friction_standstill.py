"""Effort at standstill with Coulomb friction compensation (issue 16): the arm holds a pose for 2 s.

Usage: ``python bench/bench_friction_standstill.py [--noise-qd 1e-4] [--hold 2.0] [--engine default|numpy]``

Closed loop in-process (``robot_dynamics.sim.closed_loop.run_closed_loop``): the bundled RX-90 (Coulomb
friction Fc = [3, 3, 2, 0.5, 0.5, 0.2] N·m), MuJoCo plant with the true Coulomb law −Fc sign(q̇) (001 eq.
7.61) and Gaussian velocity measurement noise, every model-based law at 1 kHz, reference = the pose (q̇^d = 0).
For each law and each Coulomb option (``measured``, band 0: the behaviour before issue 16; the law's
default; ``desired``; ``measured`` with a 0.01 rad/s band) it prints, per joint, the holding torque Q(q) and the peak-to-peak effort
over the hold, absolute and in % of |Q_j| and of max_j |Q_j|.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robot_dynamics.control import make_controller, max_diagonal_inertia  # noqa: E402
from robot_dynamics.model import seed_robots  # noqa: E402
from robot_dynamics.sim.closed_loop import run_closed_loop  # noqa: E402
from robot_dynamics.sim.simulator import MujocoArm  # noqa: E402
from robot_dynamics.trajectory import point_to_point  # noqa: E402

POSE = np.array([0.3, -0.3, -1.2, 0.4, 0.7, 0.2])  # Q = [0, 116, 28.8, -0.15, 0.39, 0] N·m
LAWS = ("computed_torque", "position", "predictive", "task_space", "pd_gravity")
OPTIONS = {"measured (old)": {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.0},
           "default (new)": {},
           "desired": {"coulomb_velocity": "desired"},
           "measured, band 0.01": {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.01}}


def hold(law: str, options: dict, noise_qd: float, duration: float, seed: int = 0, model=None, a=None):
    """Efforts (steps, n) of ``law`` holding POSE for ``duration`` s, and the holding torque Q(POSE)."""
    model = model or seed_robots.rx90()
    plant = MujocoArm(model, noise_qd=noise_qd, rng=seed)
    ctrl = make_controller(law, model, 20.0, 1.0, a=a, **options)
    traj = point_to_point(POSE, POSE, np.ones(model.dof), np.ones(model.dof))
    res = run_closed_loop(model, plant, ctrl, traj, settle_time=duration)
    assert res.metrics["stable"], res.metrics
    q = model.inverse_dynamics(POSE, np.zeros(model.dof), np.zeros(model.dof))
    return res.tau, np.asarray(q, float)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--noise-qd", type=float, default=1e-4, help="velocity measurement noise std (rad/s)")
    ap.add_argument("--hold", type=float, default=2.0, help="hold duration (s)")
    ap.add_argument("--engine", choices=("default", "numpy"), default="default")
    args = ap.parse_args()
    model = seed_robots.rx90()
    if args.engine == "numpy":
        model.set_backend("numpy")
    else:
        model.compile("inverse_dynamics")
    a = max_diagonal_inertia(model)
    print(f"RX-90 at q = {POSE.tolist()}, hold {args.hold} s at 1 kHz, velocity noise std {args.noise_qd} rad/s, "
          f"engine {model.engine['inverse_dynamics']}, load {os.getloadavg()[0]:.2f}")
    for law in LAWS:
        for label, opt in OPTIONS.items():
            if law == "pd_gravity" and label != "default (new)":
                continue  # no Coulomb term in [9.12]: the options change nothing
            tau, q = hold(law, opt, args.noise_qd, args.hold, model=model, a=a)
            p2p = np.ptp(tau, axis=0)
            with np.errstate(divide="ignore"):
                rel = 100 * p2p / np.abs(q)
            rel_max = 100 * p2p / np.abs(q).max()
            print(f"{law:16s} {label:20s} p2p N·m {np.array2string(p2p, precision=3)}  "
                  f"% of |Q_j| {np.array2string(rel, precision=2, max_line_width=200)}  "
                  f"max % of max|Q| {rel_max.max():.3f}")
    print(f"holding torque Q(q) N·m {np.array2string(q, precision=3)}")


if __name__ == "__main__":
    main()
