"""CPU cost of one cycle of the controller's pure core (a state judged by the safety envelope, then
``ControlCore.update``: reference, law, limit guard) against the law alone, same run.

Usage: ``python bench/bench_control_cycle.py [bundled name] [--cycles N] [--repeats R]``
(default: the RX-90, 5000 cycles, 5 repeats).  Prints the min and median over the repeats of the CPU time
(``time.process_time``) per cycle, and each as a ratio to the law's own ``compute`` on the same states: what the
state machine, the state monitor and the limit guard add to the law.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robot_dynamics import load_model  # noqa: E402
from robot_dynamics.ros.controller import core as cc  # noqa: E402
from robot_dynamics.ros.controller.context import build_context  # noqa: E402
from robot_dynamics.ros.controller.parameters import PARAMETERS  # noqa: E402
from robot_dynamics.safety import limit_guard as lg  # noqa: E402

PERIOD = 0.002


class _Quiet:
    """The node's side of the core, doing nothing."""

    def transition(self, mode, reason, changed):
        pass

    def publish_mode(self):
        pass

    def context_in_use(self, ctx, old, changed):
        pass

    def allocate(self, ctx):
        pass

    def log(self, level, text):
        pass

    def refuse(self, cause, text):
        pass

    def latest_refusal(self):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("robot", nargs="?", default="rx90")
    ap.add_argument("--cycles", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    model = load_model(args.robot)
    values = {k: p.default for k, p in PARAMETERS.params.items()}
    ctx = build_context(model, values, lg.sampled_extremes(model))
    core = cc.ControlCore(_Quiet(), trigger="timer", timeout=0.1, stale_behavior="gravity_hold", pose_margin=0.05)
    core.queue_context(ctx, None)
    core.update(0.0, 0.0)
    lo, hi = np.asarray(model.limits["lower"], float), np.asarray(model.limits["upper"], float)
    q0 = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), 0.0)
    n = model.dof
    clock = [0.0]

    def cycles(count: int) -> None:
        for k in range(count):
            clock[0] += PERIOD
            t = clock[0]
            core.state_arrived(q0 + 1e-4 * np.sin(k + np.arange(n)), np.zeros(n), t, t, t)
            core.update(t, t)

    zero = np.zeros(n)
    law = ctx.controller

    def laws(count: int) -> None:
        for k in range(count):
            law.compute(clock[0], q0 + 1e-4 * np.sin(k + np.arange(n)), zero, q0, zero, zero)

    cycles(500)  # warm (the compiled engine, the first state)
    result = {}
    for name, fn in (("law alone", laws), ("core cycle", cycles)):
        per = []
        for _ in range(args.repeats):
            t0 = time.process_time()
            fn(args.cycles)
            per.append((time.process_time() - t0) / args.cycles * 1e6)
        result[name] = (min(per), float(np.median(per)))
    ref = result["law alone"]
    print(f"{args.robot} ({n} joints), law {ctx.law}, {args.cycles} cycles x {args.repeats}: CPU us per cycle "
          "(min / median), ratio to the law alone")
    for name, (mn, med) in result.items():
        print(f"  {name:<11} {mn:7.1f} / {med:7.1f} us   {mn / ref[0]:5.2f} / {med / ref[1]:5.2f} x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
