"""The limit guard against an adversary on MuJoCo's RX-90: ± the effort limits in a random sign pattern every
0.2 s, for 6 s, a fresh command every ``hold`` periods of 2 ms (1: a loop on time; 25: each command held 50 ms).

Usage: ``python bench/bench_limit_guard.py [--runs 14] [--holds 1 25]``.

Per run and per guard (``clip``: the guard, then the effort clip, as the controller did before; ``within``: the
guard given the effort limits, :func:`robot_dynamics.safety.limit_guard.within_effort`): the arm's largest excursion
beyond its limits (rad) and the cycles whose command leaves the acceleration bounds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from robot_dynamics import load_model  # noqa: E402
from robot_dynamics.safety import limit_guard as lg  # noqa: E402
from robot_dynamics.sim.simulator import MujocoArm  # noqa: E402


def run(model, guard, effort, seed: int, hold: int, within: bool, steps: int = 3000) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    lower, upper = np.asarray(model.limits["lower"]), np.asarray(model.limits["upper"])
    arm = MujocoArm(model, timestep=0.001)
    arm.reset(rng.uniform(lower, upper) * 0.5)
    worst, outside, tau, sign = -np.inf, 0, np.zeros(model.dof), np.ones(model.dof)
    for k in range(steps):
        s = arm.state()
        if k % hold == 0:
            if k % 100 == 0:
                sign = rng.choice([-1.0, 1.0], model.dof)
            kw = dict(effort=effort, inertia=model.inertia_matrix) if within else {}
            tau = np.clip(guard.apply(sign * effort, s.q, s.qd, model.forward_dynamics, model.inverse_dynamics, **kw),
                          -effort, effort)
            lo, hi = guard.acceleration_bounds(s.q, s.qd)
            a = model.forward_dynamics(s.q, s.qd, tau)
            outside += bool(np.any(a > hi + 1e-6 * guard.braking) or np.any(a < lo - 1e-6 * guard.braking))
        arm.step(tau, 2)
        q = arm.state().q
        worst = max(worst, float(np.max(np.maximum(q - upper, lower - q))))
    return worst, outside


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=14)
    ap.add_argument("--holds", type=int, nargs="+", default=[1, 25])
    args = ap.parse_args()
    model = load_model("rx90")
    model.compile("inverse_dynamics", "forward_dynamics")
    effort = np.asarray(model.limits["effort"], float)
    braking = lg.braking_acceleration(effort, lg.sampled_extremes(model), model.limits.get("acceleration"))
    guard = lg.LimitGuard.for_loop(model.limits["lower"], model.limits["upper"], model.limits["velocity"], braking,
                                   500.0)
    print("| hold (periods) | guard | largest excursion beyond the limits (rad): max, median | cycles outside the "
          "bounds per run: max |")
    print("|---|---|---|---|")
    for hold in args.holds:
        for within in (False, True):
            res = np.array([run(model, guard, effort, seed, hold, within) for seed in range(args.runs)])
            print(f"| {hold} | {'within' if within else 'clip'} | {res[:, 0].max():.4f}, {np.median(res[:, 0]):.4f} | "
                  f"{int(res[:, 1].max())} |")


if __name__ == "__main__":
    main()
