"""Time the base-parameter computation (closed form of 000 + numerical step c) and the QR method.

Usage: ``python bench/bench_base_parameters.py [--repeat R]``.  Robots: the bundled seed robots,
UR5, Panda (7 dof) and a general 7R robot with generic angles (symbolic cos/sin in every
relation, the heaviest case for sympy).  Prints counts (inertial / with Ia, Fc, Fv), the
numerical rank, the first-call time and the best wall time of R runs of each method (target < 2 s for 7 dof).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]

from robot_dynamics.dynamics.base_parameters import base_parameters, numerical_base_parameters  # noqa: E402
from robot_dynamics.model.robot_model import MDHJoint, RobotModel  # noqa: E402
from robot_dynamics.model.seed_robots import SEED_ROBOTS  # noqa: E402


def general_7r() -> RobotModel:
    rng = np.random.default_rng(7)
    joints = [MDHJoint(f"j{j}", j - 1, 0, float(rng.uniform(0.3, 1.2)), float(rng.uniform(0.1, 0.5)),
                       float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 0.5))) for j in range(1, 8)]
    from pinocchio_from_mdh import random_inertial

    return RobotModel(joints=joints, inertial=np.array([random_inertial(rng) for _ in range(7)]),
                      gravity=np.array([1.0, -2.0, -9.0]))


def best_time(fn, repeat: int) -> float:  # noqa: ANN001
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from example_robots import example_urdf

    robots = {k: f() for k, f in SEED_ROBOTS.items()}
    robots["ur5"] = RobotModel.from_urdf(str(example_urdf("ur5")))
    robots["panda"] = RobotModel.from_urdf(str(example_urdf("panda")), tip_link="panda_hand_tcp")
    robots["general_7r"] = general_7r()
    print(f"{'robot':<12} {'dof':>3} {'inertial':>8} {'all':>4} {'rank':>4}  {'first call [s]':>14} "
          f"{'closed form [s]':>15} {'QR [s]':>8}  method")
    for name, m in robots.items():
        t0 = time.perf_counter()
        bp = base_parameters(m)  # first call: sympy's cache is cold for this geometry
        t_first = time.perf_counter() - t0
        num = numerical_base_parameters(m)
        t_bp = best_time(lambda m=m: base_parameters(m), args.repeat)
        t_num = best_time(lambda m=m: numerical_base_parameters(m), args.repeat)
        print(f"{name:<12} {m.dof:>3} {bp.inertial_count:>8} {bp.count:>4} {num.rank:>4}  {t_first:>14.4f} "
              f"{t_bp:>15.4f} {t_num:>8.4f}  {bp.method}")


if __name__ == "__main__":
    main()
