"""The command interfaces a controller writes and a drive takes (issue 33; JTC's ``command_interfaces`` names and
combinations): ``effort`` (the control laws' torques), ``position``, ``velocity``, ``position`` + ``velocity``, and
``position`` + ``velocity`` + ``effort`` (the model's feed-forward effort beside the servo's set points).  Each
interface is a ``std_msgs/Float64MultiArray`` on ``<prefix>/commands`` (ForwardCommandController's topic, the
joints' order), the prefixes the nodes' ``effort_controller``, ``position_controller`` and ``velocity_controller``
parameters.  Pure Python: what both nodes decide (the set allowed, the commands of a cycle) is tested here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ORDER = ("position", "velocity", "effort")
INTERFACE_SETS = (("effort",), ("position",), ("velocity",), ("position", "velocity"), ("position", "velocity", "effort"))
"""The combinations accepted (canonical order), as JTC's ``command_interfaces`` with a model-based effort."""


def interface_set(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` in canonical order, or ``ValueError`` naming the combinations allowed."""
    given = [str(n) for n in names]
    unknown = [n for n in given if n not in ORDER]
    chosen = tuple(n for n in ORDER if n in given)
    if unknown or len(set(given)) != len(given) or chosen not in INTERFACE_SETS:
        allowed = "; ".join(" + ".join(s) for s in INTERFACE_SETS)
        raise ValueError(f"command_interfaces {given} is not one of: {allowed}")
    return chosen


def check_mode(interfaces: tuple[str, ...], *, lockstep: bool, command_space: str) -> None:
    """``ValueError`` when position or velocity set points meet a setting that only efforts fit: lockstep (its answers
    are efforts) or motor-side commands (motor torques)."""
    if interfaces != ("effort",) and (lockstep or command_space != "joint"):
        raise ValueError(f"command_interfaces {list(interfaces)} needs real time (not lockstep, trigger timer) and "
                         f"command_space joint (lockstep answers and motor torques are efforts)")


def joint_commands(interfaces: tuple[str, ...], q: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
                   tau_ff: np.ndarray, velocity_kp: float, velocity_limit: np.ndarray) -> dict[str, np.ndarray]:
    """A cycle's commands per interface (model order) from its reference (within the limits: a checked trajectory, a
    hold target): position: the reference; velocity alone: the reference velocity plus ``velocity_kp`` (1/s) times
    the position error (JTC's velocity interface with a P term), beside a position: the reference velocity (the
    drive's servo corrects the position); both within the velocity limits; effort: ``tau_ff`` (the model's effort at
    the reference; the caller clips it to the effort limits)."""
    out: dict[str, np.ndarray] = {}
    if "position" in interfaces:
        out["position"] = np.array(q_ref, dtype=float)
    if "velocity" in interfaces:
        v = np.array(qd_ref, dtype=float)
        if "position" not in interfaces:
            v = v + velocity_kp * (np.asarray(q_ref, float) - np.asarray(q, float))
        out["velocity"] = np.clip(v, -velocity_limit, velocity_limit)
    if "effort" in interfaces:
        out["effort"] = np.array(tau_ff, dtype=float)
    return out


def hold_commands(interfaces: tuple[str, ...], q_hold: np.ndarray) -> dict[str, np.ndarray]:
    """What a servo-driven arm is told when the controller stops commanding motion (stale states, shutdown): hold
    ``q_hold`` at rest (position), stop (velocity 0); no effort (the drive's own servo holds the arm)."""
    out: dict[str, np.ndarray] = {}
    if "position" in interfaces:
        out["position"] = np.array(q_hold, dtype=float)
    if "velocity" in interfaces:
        out["velocity"] = np.zeros(len(q_hold))
    return out


__all__ = ["INTERFACE_SETS", "ORDER", "check_mode", "hold_commands", "interface_set", "joint_commands"]
