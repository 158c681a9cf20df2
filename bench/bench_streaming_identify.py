"""Streaming identification (issue 30): time and peak RSS of ``robot-dynamics identify rx90 DATA`` on a periodic
6-joint recording at 1 kHz tiled to the lengths asked (minutes), one process each (OLS; the streaming test's
child, which reads the process's own peak, VmHWM).

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


def _test_module():  # noqa: ANN202 - the recording and the measuring child are the streaming test's own
    sys.path.insert(0, str(ROOT / "test"))
    import test_identification_streaming

    return test_identification_streaming


def minute_recording() -> tuple[np.ndarray, np.ndarray, list[str]]:
    t = _test_module()
    PERIOD, recording = t.PERIOD, t.recording  # noqa: N806

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
            out = subprocess.run([sys.executable, "-c", _test_module().PEAK, str(path)], capture_output=True, text=True, cwd=ROOT)
            fig = json.loads(out.stderr.strip().splitlines()[-1])
            path.unlink()
            print(f"{m:g} min ({n} samples): exit {fig['code']}, {fig['seconds']:.1f} s, peak RSS {fig['peak_mb']:.0f} MB",
                  flush=True)


if __name__ == "__main__":
    main([float(x) for x in sys.argv[1:]] or [1.0, 10.0])
