"""The demo's report says when the machine was loaded, next to its real-time figures (a busy host, not the
controller, then explains missed cycles): the boundary is one runnable task per core."""

from __future__ import annotations

import math

from robot_dynamics.demo import load_text


def test_load_is_reported_and_flagged_above_one_task_per_core():
    at = load_text([2.0, 1.0, 0.5], 2)
    assert at == "host load average 2.00 / 1.00 / 0.50 (1/5/15 min) on 2 cores"
    above = load_text([math.nextafter(2.0, 3.0), 1.0, 0.5], 2)
    assert above.endswith(": a loaded machine, the real-time figures above measure the load, not the controller")
