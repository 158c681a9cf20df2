"""The lockstep protocol between ``computed_torque_controller`` and ``mujoco_sim``.

In lockstep the simulated arm advances exactly one control period per command that
*answers its latest state*, so a closed-loop run is a deterministic function of its
inputs whatever the load of the machine.  A command says which state it answers in
its ``layout`` (``std_msgs/MultiArrayLayout``, which ForwardCommandController ignores):
one dimension labelled ``state_stamp_ns=<header stamp of the answered state, ns>``.
A safety command that answers no state (the controller's hold on stale states, its
last command at shutdown) is labelled ``hold``; an unlabelled command is a plain
ForwardCommandController command.

The simulated arm in lockstep: steps on the first command whose label names the stamp
of its latest state (or on an unlabelled one); ignores labelled commands for any other
stamp (late or duplicate answers) and ``hold`` commands (it is frozen while it waits,
which already holds the arm).  The controller in ``trigger: state``: answers each new
stamp once, and answers a repeated stamp by re-sending the same command (never
re-running the law on it).
"""

from __future__ import annotations

from std_msgs.msg import Float64MultiArray, MultiArrayDimension

PREFIX = "state_stamp_ns="
HOLD = "hold"


def label_answer(msg: Float64MultiArray, stamp_ns: int) -> Float64MultiArray:
    """Mark ``msg`` as the answer to the state stamped ``stamp_ns``."""
    n = len(msg.data)
    msg.layout.dim = [MultiArrayDimension(label=f"{PREFIX}{int(stamp_ns)}", size=n, stride=n)]
    return msg


def label_hold(msg: Float64MultiArray) -> Float64MultiArray:
    """Mark ``msg`` as a safety command that answers no state."""
    n = len(msg.data)
    msg.layout.dim = [MultiArrayDimension(label=HOLD, size=n, stride=n)]
    return msg


def answered(msg: Float64MultiArray) -> int | str | None:
    """The stamp (ns) a command answers, ``"hold"``, or None for a plain (unlabelled) command."""
    dims = msg.layout.dim
    if not dims:
        return None
    label = dims[0].label
    if label == HOLD:
        return HOLD
    if label.startswith(PREFIX):
        try:
            return int(label[len(PREFIX):])
        except ValueError:
            return None
    return None


def stamp_ns(stamp) -> int:
    """``builtin_interfaces/Time`` -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
