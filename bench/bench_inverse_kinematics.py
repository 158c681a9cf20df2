"""Numeric IGM of the 7-joint Panda: today's damped least squares vs the redundancy-resolving iteration
(002 §6.5-§6.6, joint-limit avoidance), with a Pinocchio damped-least-squares loop as a reference.

Usage: ``python bench/bench_inverse_kinematics.py [--count 1000] [--tip panda_hand_tcp] [--seed 0]``.
Targets are the poses of ``count`` random configurations within the joint limits (seeded).  A solve
counts as a success when it returns a configuration strictly inside the limits whose pose, through
Pinocchio's DGM, is within 1e-8 of the target (every element of the 4x4 matrix).  Times are CPU times
of the process per pose (``time.process_time``: less sensitive than wall time to the other jobs of a
shared machine).  Also printed: Klein's joint-limit measure [6.38] max |qᵢ − q_moy,i|/Δqᵢ (0 at
mid-range, 0.5 on a limit) and the number of solutions within 1 % of a limit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]

from example_robots import example_urdf  # noqa: E402
from pinocchio_oracle import PinocchioURDF, reduced  # noqa: E402

from robot_dynamics.model.robot_model import RobotModel  # noqa: E402

FINGERS = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}


def pinocchio_dls(path: Path, tip: str, names: list[str]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The CLIK loop of Pinocchio's documentation (log6 error in the tip frame, damped least squares with
    λ² = 1e-12, unit step), iterates clamped to the limits, 5 random restarts of 300 iterations; fingers
    locked (reduced model, 7 joints)."""
    model = reduced(pin.buildModelFromUrdf(str(path)), FINGERS)
    data = model.createData()
    fid = model.getFrameId(tip, pin.BODY)
    idx = [model.joints[model.getJointId(n)].idx_q for n in names]
    if idx != list(range(len(names))):
        raise RuntimeError("unexpected Pinocchio joint order")
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    rng = np.random.default_rng(0)

    def solve(target: np.ndarray, q0: np.ndarray) -> np.ndarray:
        o_m_des = pin.SE3(target[:3, :3], target[:3, 3])
        for attempt in range(6):
            q = q0.copy() if attempt == 0 else rng.uniform(lo, hi)
            for _ in range(300):
                pin.forwardKinematics(model, data, q)
                pin.updateFramePlacement(model, data, fid)
                i_m_d = data.oMf[fid].actInv(o_m_des)
                err = pin.log(i_m_d).vector
                if np.abs(err).max() < 1e-11:
                    return q
                jac = pin.computeFrameJacobian(model, data, q, fid)  # LOCAL
                jac = -pin.Jlog6(i_m_d.inverse()) @ jac
                v = -jac.T @ np.linalg.solve(jac @ jac.T + 1e-12 * np.eye(6), err)
                q = np.clip(pin.integrate(model, q, v), lo, hi)
        raise ValueError("did not converge")

    return solve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--tip", default="panda_hand_tcp")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-pinocchio", action="store_true")
    args = ap.parse_args()
    path = example_urdf("panda")
    model = RobotModel.from_urdf(str(path), tip_link=args.tip)
    oracle = PinocchioURDF(path)
    lower, upper = model.limits["lower"], model.limits["upper"]
    mid, span = 0.5 * (lower + upper), upper - lower
    qs = np.random.default_rng(args.seed).uniform(lower, upper, (args.count, model.dof))

    def pose(q: np.ndarray) -> np.ndarray:
        return oracle.link_poses(model.joint_names, q, [args.tip], model.base_link)[args.tip]

    targets = [pose(q) for q in qs]
    methods: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "dls (today's default)": lambda t: model.inverse_kinematics(t),
        "joint-limit avoidance (default p = 6)": lambda t: model.inverse_kinematics(t, secondary="joint_limits"),
        "joint-limit avoidance, quadratic [6.36]": lambda t: model.inverse_kinematics(
            t, secondary="joint_limits", joint_limit_power=2.0),
        "pseudo-inverse, no criterion": lambda t: model.inverse_kinematics(
            t, method="pseudo_inverse", secondary="none"),
    }
    if not args.skip_pinocchio:
        solve = pinocchio_dls(path, args.tip, model.joint_names)
        methods["Pinocchio DLS loop (reference)"] = lambda t: solve(t, mid.copy())
    print(f"Panda, tip {args.tip}, {args.count} poses of random configurations within the limits (seed {args.seed})")
    print(f"{'method':42s} {'success':>8s} {'reached':>8s} {'min ms':>8s} {'median':>8s} {'mean':>8s} "
          f"{'[6.38]':>7s} {'<1%':>5s}")
    medians = {}
    for name, fn in methods.items():
        ok = reached = 0
        times, klein = [], []
        near = 0
        for target in targets:
            t0 = time.process_time()
            try:
                sol = fn(target)
            except ValueError:
                times.append(time.process_time() - t0)
                continue
            times.append(time.process_time() - t0)
            good = np.abs(pose(sol) - target).max() <= 1e-8
            inside = bool(np.all(sol > lower) and np.all(sol < upper))
            reached += good
            ok += good and inside
            k = float(np.max(np.abs(sol - mid) / span))
            klein.append(k)
            near += k > 0.49
        t = 1e3 * np.array(times)
        medians[name] = np.median(t)
        print(f"{name:42s} {100 * ok / args.count:7.1f}% {100 * reached / args.count:7.1f}% {t.min():8.2f} "
              f"{np.median(t):8.2f} {t.mean():8.2f} {np.median(klein):7.3f} {near:5d}")
    print("success: strictly inside the limits and within 1e-8 of the pose; reached: within 1e-8 (limits aside);")
    print("[6.38]: median over the solutions of max |q_i - q_moy,i| / dq_i; <1%: solutions within 1 % of a limit")
    if "Pinocchio DLS loop (reference)" in medians:
        ref = medians["Pinocchio DLS loop (reference)"]
        print("median time / Pinocchio's: " + ", ".join(
            f"{k.split(' (')[0]} {v / ref:.2f}" for k, v in medians.items() if not k.startswith("Pinocchio")))


if __name__ == "__main__":
    main()
