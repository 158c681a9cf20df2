"""What an identified-parameter swap costs a control loop in the same Python process (the GIL).

The controller builds a swapped model beside its loop thread (``~/set_dynamic_parameters``: ``updated_model`` from
base parameters, then the customized program compiled in a child process).  This bench runs a 500 Hz loop thread
(sleep to an absolute deadline, then one compiled inverse dynamics, as the controller's cycle) in a fresh process
and does the swap's work in another thread, twice per repeat:

* ``cold``: nothing imported beforehand (the controller before the fix: the base-parameter code and sympy were
  imported by the first swap);
* ``preloaded``: the modules of ``computed_torque_controller.PRELOAD`` imported before the loop starts (what the
  node does now, before its first model is in use).

Printed per case: the loop's worst lateness during the swap and the cycles more than 10 ms late (min/median over
``--repeats`` fresh processes), and the ratio cold/preloaded of the worst lateness::

    .venv/bin/python bench/bench_swap_jitter.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import importlib, json, sys, threading, time
import numpy as np
from robot_dynamics.model.robots import load_model
preload = sys.argv[1] == "preloaded"
if preload:
    from robot_dynamics.ros.computed_torque_controller import PRELOAD
    for name in PRELOAD:
        importlib.import_module(name)
from robot_dynamics.identification.update import updated_model
model = load_model("rx90")
model.compile("inverse_dynamics")
z = np.zeros(model.dof)
late, stop = [], threading.Event()

def loop():
    t = time.monotonic()
    while not stop.is_set():
        t += 0.002
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)
        late.append(time.monotonic() - t)
        model.inverse_dynamics(z, z, z)

th = threading.Thread(target=loop)
th.start()
time.sleep(0.5)
n0 = len(late)
t0 = time.perf_counter()
base = model.base_parameters()  # (in the controller: inside updated_model, from the identifier's base names)
new = updated_model(model, list(base.names), np.asarray(base.values) * 1.05)
new.compile("inverse_dynamics", isolated=True)
swap = time.perf_counter() - t0
time.sleep(0.3)
stop.set()
th.join()
x = np.array(late[n0:]) * 1e3
print(json.dumps({"max_ms": float(x.max()), "over_10ms": int((x > 10).sum()), "swap_s": swap}))
"""


def run(case: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, case], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    res: dict[str, list[dict]] = {"cold": [], "preloaded": []}
    for _ in range(args.repeats):
        for case in res:
            res[case].append(run(case))
    print(f"500 Hz loop thread beside a swap (RX-90 base parameters, {args.repeats} fresh processes per case)")
    worst = {}
    for case, rows in res.items():
        m = np.array([r["max_ms"] for r in rows])
        n = np.array([r["over_10ms"] for r in rows])
        s = np.array([r["swap_s"] for r in rows])
        worst[case] = m
        print(f"  {case:10s} worst lateness min {m.min():6.1f} / median {np.median(m):6.1f} ms; cycles > 10 ms late "
              f"min {n.min()} / median {np.median(n):.0f}; swap {np.median(s):.2f} s")
    print(f"  cold / preloaded worst lateness (median): {np.median(worst['cold']) / np.median(worst['preloaded']):.1f}x")


if __name__ == "__main__":
    main()
