"""Conversion time of the Panda URDF (7 dof) to the MDH model: ``python bench/bench_conversion.py``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))

from example_robots import example_urdf  # noqa: E402

from robot_dynamics import RobotModel  # noqa: E402


def main(repeats: int = 50) -> None:
    text = example_urdf("panda").read_text()
    RobotModel.from_urdf(text, tip_link="panda_link8")  # warm-up (imports)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = RobotModel.from_urdf(text, tip_link="panda_link8")
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"panda ({model.dof} dof) URDF -> MDH: median {1e3 * times[len(times) // 2]:.2f} ms, "
          f"min {1e3 * times[0]:.2f} ms, max {1e3 * times[-1]:.2f} ms over {repeats} runs (target < 50 ms)")


if __name__ == "__main__":
    main()
