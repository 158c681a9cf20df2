"""The integration tier's worker count (tools/ros_workers.py): two node stacks side by side only when the host has
the idle cores for them, at every boundary."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ros_workers  # noqa: E402


def test_two_workers_from_one_and_a_half_idle_cores() -> None:
    per = ros_workers.IDLE_PER_WORKER
    assert ros_workers.workers(2 * per) == 2  # just enough for two
    assert ros_workers.workers(2 * per - 1e-9) == 1  # just short: one
    assert ros_workers.workers(0.0) == 1  # a saturated host still runs the tier, one file at a time
    assert ros_workers.workers(64.0) == ros_workers.MAX_WORKERS == 2  # never more than the domains allow


def test_a_cpu_hog_on_one_of_two_cores_leaves_one_worker() -> None:
    assert ros_workers.workers(1.0) == 1  # `yes > /dev/null` beside the suite: one idle core
    assert ros_workers.workers(1.95) == 2  # an idle 2-core host


@given(st.floats(0.0, 1e3, allow_nan=False), st.integers(1, 8))
def test_property_workers_within_bounds_and_monotonic(idle: float, cap: int) -> None:
    n = ros_workers.workers(idle, cap)
    assert 1 <= n <= cap
    assert ros_workers.workers(idle + ros_workers.IDLE_PER_WORKER, cap) >= n


def test_idle_cores_measured_from_proc_stat() -> None:
    idle = ros_workers.idle_cores(0.2)
    assert 0.0 <= idle <= (os.cpu_count() or 1) + 1e-9
