"""The simulated arm's position and velocity drives (``command_interfaces`` with position or velocity, issue 33):
set points on ``<position_controller>/commands`` and ``<velocity_controller>/commands`` (``Float64MultiArray``,
``joints`` order, as ForwardCommandController), held by a servo at every simulation step
(:mod:`robot_dynamics.sim.servo`; a position alone has a velocity set point 0: the servo lags a moving set point by
2 zeta / w times its speed), the servo compensating the plant's own bias efforts, or with an effort command beside
them that effort as the feed-forward instead.  A mixin of the node."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from std_msgs.msg import Float64MultiArray

from ..sim.servo import servo_gains
from .command_interfaces import check_mode, interface_set
from .runtime import Refused, guarded


class ServoDrive:
    """Set points taken, validated and clipped (positions to the joint limits, velocities to the velocity limits),
    and the servo's step: the node's attributes (``lock``, ``arm``, ``model``, ``cmd_to_model``, ``counts``...)."""

    def _setup_servo(self, v: dict[str, Any]) -> None:
        self.interfaces = interface_set(v["command_interfaces"])
        self.servo = self.interfaces != ("effort",)
        self.servo_bandwidth, self.servo_damping = v["servo_bandwidth"], v["servo_damping"]
        self.q_cmd: np.ndarray | None = None
        self.qd_cmd: np.ndarray | None = None
        self.kp = self.kd = 0.0
        check_mode(self.interfaces, lockstep=self.lockstep, command_space=v["command_space"])
        for kind in ("position", "velocity"):
            if kind in self.interfaces:
                self.create_subscription(Float64MultiArray, f"{v[kind + '_controller']}/commands",
                                         partial(self.on_set_point, kind), 10)

    def _servo_model(self) -> None:
        """The servo's gains; the set points forgotten (lock held)."""
        self.q_cmd = self.qd_cmd = None
        if self.servo:
            self.kp, self.kd = servo_gains(self.servo_bandwidth, self.servo_damping,
                                           position="position" in self.interfaces)

    @guarded()
    def on_set_point(self, kind: str, msg: Float64MultiArray) -> None:
        with self.lock:
            self.counts["received"] += 1
            if self.arm is None:
                raise Refused("no_model", f"{kind} command before the robot model is known: dropped")
            n = len(msg.data)
            if n != self.model.dof:
                raise Refused("command_length", f"{kind} command of length {n}, expected {self.model.dof} "
                                                f"{self.joints}: dropped")
            data = np.array(msg.data, dtype=float)
            if not np.all(np.isfinite(data)):
                raise Refused("command_nonfinite", f"{kind} command with a non-finite value: dropped (the watchdog "
                                                   "is not fed)")
            x = data[self.cmd_to_model]
            lim = self.model.limits
            lo, hi = (lim["lower"], lim["upper"]) if kind == "position" else (-lim["velocity"], lim["velocity"])
            clipped = np.clip(x, lo, hi)
            if np.any(clipped != x):
                self.counts["clipped"] += 1
                self.notices.notice("clipped", f"{kind} command clipped to the limits: {x.tolist()}")
            if kind == "position":
                self.q_cmd = clipped
            else:
                self.qd_cmd = clipped
            self._fed()

    def _servo_advance(self) -> None:
        """One control period of the servo on the latest set points (lock held; running)."""
        arm = self.arm
        q, qd = arm.state(noisy=False)[1:3]
        ff = "effort" in self.interfaces
        tau_ff = self.command if ff and self.command.size else np.zeros(arm.dof)
        arm.servo_step(q if self.q_cmd is None else self.q_cmd, np.zeros(arm.dof) if self.qd_cmd is None
                       else self.qd_cmd, tau_ff, self.kp, self.kd, self.substeps, bias=not ff,
                       velocity_limit=self.model.limits["velocity"])


__all__ = ["ServoDrive"]
