"""Locate the URDFs shipped by the ``example-robot-data`` wheel (test oracle data)."""

from __future__ import annotations

import sys
from pathlib import Path


def example_robot_data_dir() -> Path:
    """The ``share/example-robot-data/robots`` folder of the installed wheel."""
    for base in map(Path, sys.path):
        cand = base / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if cand.is_dir():
            return cand
        cand = base.parent.parent.parent / "share" / "example-robot-data" / "robots"
        if cand.is_dir():
            return cand
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


def example_urdf(name: str) -> Path:
    """Path of a known URDF: 'ur5', 'ur10' or 'panda'."""
    rel = {
        "ur5": "ur_description/urdf/ur5_robot.urdf",
        "ur10": "ur_description/urdf/ur10_robot.urdf",
        "panda": "panda_description/urdf/panda.urdf",
    }[name]
    return example_robot_data_dir() / rel
