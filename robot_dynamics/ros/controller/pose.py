"""Pose references of the task-space laws: the checked pose held until replaced, and the guard that drops it when
the arm comes too near a limit.  Pure: no rclpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kinematics.geometric_model import rotation_vector

POSE_IK_TOLERANCE = 1e-9  # m and rad: the inverse kinematics of a pose reference must reach it this closely


def pose_guard(q: np.ndarray, qd: np.ndarray, lower: np.ndarray, upper: np.ndarray, velocity: np.ndarray,
               margin: float, names: list[str]) -> str | None:
    """Why a pose cannot be held at (q, q̇): a joint closer than ``margin`` to a position limit, or faster than its
    velocity limit (the first found, as a sentence); None when neither."""
    below, above = q - lower, upper - q
    room = np.minimum(below, above)
    if np.any(room < margin):
        j = int(np.argmin(room))
        side = "lower" if below[j] <= above[j] else "upper"
        return f"{names[j]} at {q[j]:.4f}, {room[j]:.4f} from its {side} limit (pose_limit_margin {margin:g})"
    velocity = np.where(velocity > 0, velocity, np.inf)  # a limit of 0 (unset in a URDF): none
    fast = np.abs(qd) > velocity
    if np.any(fast):
        j = int(np.argmax(np.abs(qd) / velocity))
        return f"{names[j]} moving at {qd[j]:.3f}, beyond its velocity limit {velocity[j]:.3f}"
    return None


def pose_text(pose: np.ndarray, link: str, base: str) -> str:
    """A pose for logs and the mode's reason: position (m) and rotation vector (rad) in ``base``."""
    p = ", ".join(f"{x:.4f}" for x in pose[:3, 3])
    r = ", ".join(f"{x:.4f}" for x in rotation_vector(pose[:3, :3]))
    return f"{link} at [{p}] m, rotation vector [{r}] rad in {base}"


@dataclass(frozen=True)
class PoseHold:
    """A pose reference checked by the inverse kinematics: held by a task-space law until replaced."""

    pose: np.ndarray   # (4, 4) of ``link`` in the base link
    q_ref: np.ndarray  # the inverse kinematics' solution (the published joint reference)
    link: str
    text: str
