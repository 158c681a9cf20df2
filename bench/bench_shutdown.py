"""Shutdown of the bring-up on a loaded machine: SIGINT to the runner (``robot-dynamics bringup``), time until every
node has exited, over several runs, and whether the controller sent its holding command first.

    .venv/bin/python bench/bench_shutdown.py              # 10 runs, two CPU hogs (one per core)
    .venv/bin/python bench/bench_shutdown.py --runs 3 --hogs 0

Each run: start the runner, wait until the controller commands the arm (its first ``~/controller_state`` in
``holding`` and 2 s more), SIGINT the runner, then read its account (``bringup: <node> exited (0) <t> s after the
stop began``) and whether the controller logged ``sent the holding command`` (that the arm applied it is what
``test/test_runner_signals.py`` checks, from the arm's next state).
Printed: per run the slowest node and its time; then min / median / max over the runs of the last exit, and how
many runs had the holding command sent.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXITED = re.compile(r"bringup: (\w+) exited \((-?\d+)\) ([0-9.]+) s after the stop began")


def one_run(log: Path, timeout: float = 120.0) -> tuple[dict[str, float], bool, float]:
    """(node -> exit time after the stop began, holding command sent, wall time SIGINT -> runner gone)."""
    runner = [str(ROOT / ".venv" / "bin" / "robot-dynamics"), "bringup", "--robot", "rx90", "--sim", "mujoco"]
    with open(log, "w") as out:
        proc = subprocess.Popen(runner, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        end = time.monotonic() + timeout
        while "mode holding" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"the bring-up did not come up:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        time.sleep(2.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        wall = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    exits = {m.group(1): float(m.group(3)) for m in EXITED.finditer(text)}
    return exits, "sent the holding command" in text, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--hogs", type=int, default=2, help="busy processes loading the machine meanwhile")
    args = ap.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(20 + os.getpid() % 40))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    logs = Path(tempfile.mkdtemp(prefix="bench_shutdown_"))
    last, acked = [], 0
    try:
        for k in range(args.runs):
            exits, ack, wall = one_run(logs / f"run{k}.log")
            slowest = max(exits, key=exits.get)
            last.append(max(exits.values()))
            acked += ack
            print(f"run {k}: {len(exits)} nodes exited, last {slowest} at {exits[slowest]:.2f} s, runner gone after "
                  f"{wall:.2f} s, holding command {'sent' if ack else 'NOT sent'}", flush=True)
    finally:
        for h in hogs:
            h.kill()
    a = np.array(last)
    print(f"last node exit after SIGINT over {len(a)} runs with {args.hogs} CPU hog(s): min {a.min():.2f} / median "
          f"{np.median(a):.2f} / max {a.max():.2f} s; holding command sent in {acked}/{len(a)} runs; "
          f"load average {os.getloadavg()[0]:.2f}; logs in {logs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
