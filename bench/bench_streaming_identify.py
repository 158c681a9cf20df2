"""Streaming identification (issue 30): time and peak RSS of ``robot-dynamics identify rx90 DATA`` on a periodic
6-joint recording at 1 kHz tiled to the lengths asked (minutes), one process each.

    .venv/bin/python bench/bench_streaming_identify.py 1 10 60
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
from robot_dynamics.cli import main


def peak_mb():
    # VmHWM: this process's own peak (a new address space at exec); getrusage's ru_maxrss is kept across exec
    # and starts at the forking parent's peak (1090 MB seen: pytest's, not identify's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024


t0 = time.monotonic()
code = main(["identify", "rx90", sys.argv[1], "--json"])
print(json.dumps({"code": code, "seconds": time.monotonic() - t0,
                  "peak_mb": peak_mb()}), file=sys.stderr)
"""


def minute_recording() -> tuple[np.ndarray, np.ndarray, list[str]]:
    sys.path.insert(0, str(ROOT / "test"))
    from test_identification_streaming import PERIOD, recording

    d = recording(PERIOD, seed=0)
    return d.q, d.effort, d.joint_names


def main(minutes: list[float]) -> None:
    q, effort, names = minute_recording()
    with tempfile.TemporaryDirectory() as tmp:
        for m in minutes:
            reps = int(np.ceil(m))
            n = int(round(m * q.shape[0]))
            path = Path(tmp) / f"rec{m:g}.npz"
            np.savez(path, t=np.arange(n) / 1000.0, q=np.tile(q, (reps, 1))[:n], effort=np.tile(effort, (reps, 1))[:n],
                     joint_names=np.array(names))
            out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, cwd=ROOT)
            fig = json.loads(out.stderr.strip().splitlines()[-1])
            path.unlink()
            print(f"{m:g} min ({n} samples): exit {fig['code']}, {fig['seconds']:.1f} s, peak RSS {fig['peak_mb']:.0f} MB",
                  flush=True)


if __name__ == "__main__":
    main([float(x) for x in sys.argv[1:]] or [1.0, 10.0])
