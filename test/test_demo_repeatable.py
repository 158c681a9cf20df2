"""The lockstep demo is a deterministic function of its inputs (issue 13): two runs, one of them with a CPU hog
on the machine, give bit-identical tracking figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from robot_dynamics.demo import run_demo

pytestmark = [pytest.mark.ros, pytest.mark.slow]

FIELDS = ("duration_s", "samples", "max_tracking_error_rad", "rms_tracking_error_rad", "final_error_rad")


def _moves(out) -> list[dict]:
    report = json.loads((out / "report.json").read_text())
    assert report["ok"], report
    return [{k: m[k] for k in FIELDS} for m in report["moves"]]


def test_lockstep_demo_is_bit_for_bit_repeatable(tmp_path):
    assert run_demo(str(tmp_path / "a"), lockstep_only=True) == 0
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert run_demo(str(tmp_path / "b"), lockstep_only=True) == 0
    finally:
        hog.kill()
        hog.wait()
    a, b = _moves(tmp_path / "a"), _moves(tmp_path / "b")
    assert [m["samples"] for m in a] == [597, 1001]  # every control cycle of each window recorded
    assert a == b, (a, b)  # exact equality of every figure of both moves
    assert a[0]["max_tracking_error_rad"] < 1e-3  # and they are good figures (computed torque, exact model)
