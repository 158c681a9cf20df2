"""How many integration-tier workers (test files side by side, each with its node processes) this host can run now:
``make test`` asks before the tier starts (``ROS_WORKERS=auto``, the default).  Two when about two cores sat idle
over the last ``SAMPLE`` s (/proc/stat), one otherwise: real-time node stacks starved by a busy machine miss their
deadlines, and a second worker would only deepen that (seen: a CPU hog beside two workers left 6 of 187 tests
without their preconditions, one worker beside it none)."""

from __future__ import annotations

import os
import sys
import time

SAMPLE = 2.0  # s of /proc/stat
MAX_WORKERS = 2  # the domains of test/conftest.py: three per run at most; two node stacks fill two cores
IDLE_PER_WORKER = 0.75  # idle cores a worker needs (its node stack idles at ~0.8 of a core, the test process aside)


def workers(idle_cores: float, max_workers: int = MAX_WORKERS) -> int:
    """Workers for ``idle_cores`` idle cores: one per ``IDLE_PER_WORKER``, at least one, at most ``max_workers``."""
    return max(1, min(max_workers, int(idle_cores / IDLE_PER_WORKER)))


def cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all cores since boot (/proc/stat: idle + iowait count as idle)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields[:8])


def idle_cores(sample: float = SAMPLE) -> float:
    """Cores idle on average over the next ``sample`` s."""
    idle0, total0 = cpu_times()
    time.sleep(sample)
    idle1, total1 = cpu_times()
    if total1 <= total0:
        return float(os.cpu_count() or 1)
    return (idle1 - idle0) / (total1 - total0) * (os.cpu_count() or 1)


if __name__ == "__main__":
    idle = idle_cores()
    n = workers(idle)
    print(f"integration tier: {idle:.2f} idle core(s) -> {n} worker(s)", file=sys.stderr)
    print(n)
