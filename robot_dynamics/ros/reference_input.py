"""A controller's running reference (``<controller>/controller_state``, control_msgs/JointTrajectoryControllerState)
as ``~/plan``'s start when it starts from the moving arm (``start_from_reference``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from control_msgs.msg import JointTrajectoryControllerState
from rclpy.node import Node
from rclpy.qos import QoSProfile

from .runtime import PolledSubscription, Refused, guarded
from .validation import MAX_JOINT_STATE_NAMES

REFERENCE_MAX_AGE = 1.0
"""s: the oldest reference (its stamp before the node's clock) a plan may start from."""


class ReferenceInput:
    """The latest reference of a controller, taken in batches by a thread (:class:`PolledSubscription`)."""

    def __init__(self, node: Node, topic: str, qos: QoSProfile, period: float) -> None:
        self.node = node
        self.refusals = node.refusals  # a bad message refused through the node's (rate-limited log, counts)
        self.latest: tuple[float, dict[str, tuple[float, float, float]]] | None = None
        self.input = PolledSubscription(node, JointTrajectoryControllerState, topic, qos, self.on_message, period)

    @guarded()
    def on_message(self, msg: JointTrajectoryControllerState) -> None:
        """Keep the latest reference (position, velocity, acceleration per joint; a mode notice without one is
        skipped), with its stamp."""
        names, ref = list(msg.joint_names), msg.reference
        if len(names) > MAX_JOINT_STATE_NAMES:
            raise Refused("too_large", f"controller_state with {len(names)} names")
        if not names or len(ref.positions) != len(names):
            return
        vel = list(ref.velocities) or [0.0] * len(names)
        acc = list(ref.accelerations) or [0.0] * len(names)
        if len(vel) != len(names) or len(acc) != len(names):
            raise Refused("bad_reference", f"controller_state reference with {len(ref.positions)} positions, "
                                           f"{len(vel)} velocities, {len(acc)} accelerations for {len(names)} names")
        values = {n: (p, v, a) for n, p, v, a in zip(names, ref.positions, vel, acc, strict=True)}
        if not all(math.isfinite(x) for triple in values.values() for x in triple):
            raise Refused("non_finite", "controller_state reference with a non-finite value")
        self.latest = (msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, values)

    def moving_start(self, joints: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd) of ``joints`` from the latest reference, stamped at most :data:`REFERENCE_MAX_AGE` s from
        the node's clock (sim time with ``use_sim_time``: a paused simulation ages nothing); ValueError else."""
        self.input.drain()
        got = self.latest
        now = self.node.get_clock().now().nanoseconds * 1e-9
        if got is None:
            raise ValueError(f"no reference from {self.input.sub.topic_name} yet: is the controller running?")
        if abs(now - got[0]) > REFERENCE_MAX_AGE:
            raise ValueError(f"the reference from {self.input.sub.topic_name} is {now - got[0]:.3g} s old, beyond "
                             f"{REFERENCE_MAX_AGE:g} s: is the controller running?")
        missing = [j for j in joints if j not in got[1]]
        if missing:
            raise ValueError(f"the controller's reference has no {missing}")
        rows = np.array([got[1][j] for j in joints])
        return rows[:, 0], rows[:, 1], rows[:, 2]
