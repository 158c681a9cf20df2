"""The controller node's outputs and reports: the command and state messages preallocated and filled in place
each cycle, the safety path's commands (stale hold, shutdown), mode notices, ``~/statistics`` and ``/diagnostics``.
A mixin of :class:`~robot_dynamics.ros.computed_torque_controller.ComputedTorqueControllerNode`."""

from __future__ import annotations

import array
import json
import sys
import time
from typing import Any

import numpy as np
from rclpy.time import Time
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics_interfaces.msg import ControllerState

from ...symbolic.codegen import PROGRAM_MODULE_PREFIX
from .. import cdr, lockstep
from ..command_interfaces import hold_commands, joint_commands
from ..diagnostics import Report
from ..runtime import Refused
from .context import (
    Context,
)
from .health import loop_level
from .modes import STALE


class Reporting:
    """The node's commands, mode and state messages, statistics and diagnostics (mixin of the controller node)."""

    def _allocate_messages(self, ctx: Context) -> None:
        """The command and state messages of ``ctx``'s joints, and NumPy views on their arrays (command
        order): a cycle fills them in place, no message or list is built per cycle."""
        n = ctx.model.dof
        zeros = [0.0] * n
        self.cmd_msg = Float64MultiArray(data=zeros)
        self._cmd_view = np.frombuffer(self.cmd_msg.data, dtype=np.float64)
        if self.loop_input:
            self._raw_cmd = cdr.Float64MultiArrayWriter(n)
        m = self.state_msg
        m.joint_names = list(ctx.joints)
        m.reference = JointTrajectoryPoint(positions=zeros, velocities=zeros, accelerations=zeros)
        m.feedback = JointTrajectoryPoint(positions=zeros, velocities=zeros)
        m.error = JointTrajectoryPoint(positions=zeros, velocities=zeros)
        self._effort = array.array("d", zeros)
        m.output = JointTrajectoryPoint(effort=self._effort)
        self._effort = m.output.effort  # the message's own array
        v = self._state_views = {}
        for key, pt, field in (("q_ref", m.reference, "positions"), ("qd_ref", m.reference, "velocities"),
                               ("qdd_ref", m.reference, "accelerations"), ("q", m.feedback, "positions"),
                               ("qd", m.feedback, "velocities"), ("e", m.error, "positions"),
                               ("ed", m.error, "velocities")):
            v[key] = np.frombuffer(getattr(pt, field), dtype=np.float64)
        v["tau"] = np.frombuffer(self._effort, dtype=np.float64)
        j = self.jtc_msg  # control_msgs' state shares the points (filled once for both)
        j.joint_names = list(ctx.joints)
        j.reference, j.feedback, j.error, j.output = m.reference, m.feedback, m.error, m.output
        self._clipped = np.zeros(n)

    def _publish_cycle(self, ctx: Context, tau: np.ndarray, *, stamp: float | None) -> Float64MultiArray | None:
        """Publish the cycle's ``tau`` (model order, finite, saturated by the law) in the preallocated message
        (lockstep: labelled with ``stamp``, returned), or serialized in place when the loop takes its inputs."""
        raw = self._raw_cmd
        # the last guard: within the limits in use, never above the description's (the law saturates already)
        tau = ctx.envelope.clip_effort(tau, ctx.effort, out=self._clipped)
        if ctx.to_motor is not None:  # motor torques (001 eq. 7.33)
            tau = ctx.to_motor @ tau
        if raw is not None and stamp is None:  # serialized in place: no message conversion
            np.take(tau, ctx.to_cmd, out=raw.data)
            self.cmd_pub.publish(raw.bytes())
            return None
        msg = self.cmd_msg
        np.take(tau, ctx.to_cmd, out=self._cmd_view)
        if stamp is not None:
            dims = msg.layout.dim
            label = f"{lockstep.PREFIX}{round(stamp * 1e9)}"
            if dims:
                dims[0].label = label
            else:
                lockstep.label_answer(msg, round(stamp * 1e9))
        self.cmd_pub.publish(msg)
        return msg

    def _publish_cycle_state(self, ctx: Context, now: float, q_ref: np.ndarray, qd_ref: np.ndarray,
                             qdd_ref: np.ndarray, tau: np.ndarray) -> None:
        """``~/controller_state`` of a cycle, filled in place (command order)."""
        m = self.state_msg
        v = self._state_views
        o = ctx.to_cmd
        self.mode_wall = time.monotonic()
        ns = round(now * 1e9)
        m.header.stamp.sec, m.header.stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        m.mode, m.mode_reason = self.core.mode, self.core.mode_reason
        m.stale_state = False
        m.trajectories_accepted = self.core.trajectories_accepted
        m.inputs_refused = min(self.refusals.total(), 2**32 - 1)
        np.take(q_ref, o, out=v["q_ref"])
        np.take(qd_ref, o, out=v["qd_ref"])
        np.take(qdd_ref, o, out=v["qdd_ref"])
        np.take(self.core.q, o, out=v["q"])
        np.take(self.core.qd, o, out=v["qd"])
        np.subtract(v["q_ref"], v["q"], out=v["e"])
        np.subtract(v["qd_ref"], v["qd"], out=v["ed"])
        np.take(tau, o, out=v["tau"])
        m.saturated = bool(ctx.controller.saturated.any())
        m.speed_scaling_factor = self.core.clock.factor
        self.state_pub.publish(m)
        j = self.jtc_msg
        j.speed_scaling_factor = m.speed_scaling_factor
        j.header.stamp.sec, j.header.stamp.nanosec = m.header.stamp.sec, m.header.stamp.nanosec
        self.jtc_pub.publish(j)

    def _publish_set_points(self, ctx: Context, q: np.ndarray, cycle: Any) -> None:
        """A cycle's commands to position / velocity drives (:func:`~..command_interfaces.joint_commands`, command
        order), the feed-forward effort clipped to the effort limits."""
        cmds = joint_commands(self.interfaces, q, cycle.q_ref, cycle.qd_ref, cycle.tau, self.velocity_kp, ctx.velocity)
        for kind, x in cmds.items():
            if kind == "effort":
                x = ctx.envelope.clip_effort(x, ctx.effort)
            pub = self.cmd_pub if kind == "effort" else self.set_point_pubs[kind]
            pub.publish(Float64MultiArray(data=x[ctx.to_cmd].tolist()))

    def _publish(self, tau: np.ndarray, *, hold: bool = False) -> Float64MultiArray | None:
        """Publish ``tau`` (model order) if finite, clipped to the effort limits, in a new message (the safety
        path: stale hold, shutdown); returns the message.  Position / velocity drives are told to hold the arm
        where it is held (:func:`~..command_interfaces.hold_commands`) instead."""
        ctx = self.core.ctx
        if self.servo_out:
            q = self.core.hold if self.core.hold is not None else self.core.q
            if q is not None:
                for kind, x in hold_commands(self.interfaces, q).items():
                    self.set_point_pubs[kind].publish(Float64MultiArray(data=x[ctx.to_cmd].tolist()))
            return None
        try:
            tau = ctx.envelope.clip_effort(tau, ctx.effort)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
            return None
        if ctx.to_motor is not None:  # motor torques (001 eq. 7.33)
            tau = ctx.to_motor @ tau
        msg = Float64MultiArray(data=tau[ctx.to_cmd].tolist())
        if hold:
            lockstep.label_hold(msg)
        self.cmd_pub.publish(msg)
        return msg

    def _publish_state(self, now: float | None) -> None:
        """A mode notice on ``~/controller_state`` (no ``output.effort``): transitions and the idle watchdog."""
        m = ControllerState(law=self.law)
        self.mode_wall = time.monotonic()
        m.header.stamp = Time(nanoseconds=round((self.control_time() if now is None else now) * 1e9)).to_msg()
        m.mode, m.mode_reason = self.core.mode, self.core.mode_reason
        m.stale_state = self.core.mode == STALE
        m.trajectories_accepted = self.core.trajectories_accepted
        m.inputs_refused = min(self.refusals.total(), 2**32 - 1)
        ctx = self.core.ctx
        if ctx is not None:
            m.joint_names = list(ctx.joints)
            if self.core.q is not None and self.core.hold is not None:
                o = ctx.to_cmd
                zero = [0.0] * ctx.model.dof
                m.reference = JointTrajectoryPoint(positions=self.core.hold[o].tolist(), velocities=zero, accelerations=zero)
                m.feedback = JointTrajectoryPoint(positions=self.core.q[o].tolist(), velocities=self.core.qd[o].tolist())
                m.error = JointTrajectoryPoint(positions=(self.core.hold - self.core.q)[o].tolist(),
                                               velocities=(-self.core.qd)[o].tolist())
        self.state_pub.publish(m)

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        summary = self.stats.summary(self.period)
        if self.trigger == "state":  # lockstep: cycles follow the states, there is no period to miss
            summary.pop("missed_cycles", None)
            summary.pop("missed_pct", None)
        summary.update(mode=self.core.mode, mode_reason=self.core.mode_reason, refused=dict(self.refusals.counts),
                       limit_guard_cycles=self.core.guarded_cycles, blind_cycles=self.core.blind_cycles,
                       law=self.law, poses_accepted=self.core.poses_accepted,
                       speed_scaling={"factor": self.core.clock.factor, "requested": self.core.clock.requested,
                                      "dynamics_cap": self.core.clock.cap,
                                      "limiting_joint": self.core.effort_scaling.limiting},
                       nominal_rate_hz=self.rate, loop=self.loop if self.trigger == "timer" else "state",
                       executor=self.executor_kind, state_input="loop" if self.loop_input else "executor",
                       scheduling=self.scheduling, executor_scheduling=self.executor_scheduling,
                       imported_while_running=self.imported_while_running())
        response.success = True
        response.message = json.dumps(summary)
        return response

    def imported_while_running(self) -> list[str]:
        """The modules imported since the first model came into use (each import held the GIL from the loop),
        but a new model's compiled programs (a dlopen of ~1 ms, what a swap needs)."""
        start = self._modules_in_use
        return [] if start is None else sorted(m for m in set(sys.modules) - start
                                               if not m.startswith(PROGRAM_MODULE_PREFIX))

    def _robot_name(self) -> str:
        ctx = self.core.ctx
        return ctx.model.name if ctx is not None else ""

    def _diagnostics(self, dt: float) -> Report:
        """``/diagnostics`` (executor thread, every ``diagnostic_period``): the loop figures of the cycles since
        the previous report (a slice of the ring, not the whole ``statistics_window``), the state machine,
        saturation and input counters; the level and message by :func:`.health.loop_level`."""
        got = self._lock.acquire(timeout=0.01)  # mode and reason as one pair (the loop holds it for a cycle)
        try:
            mode, reason, ctx = self.core.mode, self.core.mode_reason, self.core.ctx
        finally:
            if got:
                self._lock.release()
        s = self.stats.recent(self.period, self._diag_k)
        cpu = time.process_time()
        new = s["window_cycles"]
        cpu_per_cycle = (cpu - self._diag_cpu) / new * 1e6 if new else 0.0
        self._diag_k, self._diag_cpu = s["cycles"], cpu
        lockstep_mode = self.trigger == "state"  # cycles follow the states: no period to miss
        sat = None if ctx is None else ctx.controller.saturated
        saturated = [] if sat is None or not sat.any() else [ctx.model.joint_names[int(j)] for j in np.flatnonzero(sat)]
        rate = s.get("rate_hz", 0.0) if new else 0.0
        values: dict[str, object] = {
            "mode": mode, "mode_reason": reason,
            "rate_hz": rate, "nominal_rate_hz": self.rate,
            "period_error_p50_ms": s.get("period_error_p50_ms", 0.0),
            "period_error_p99_ms": s.get("period_error_p99_ms", 0.0),
            "period_error_max_ms": s.get("period_error_max_ms", 0.0),
        }
        if not lockstep_mode:
            values.update(missed_cycles=s.get("missed_cycles", 0), missed_pct=s.get("missed_pct", 0.0))
        values.update({
            "cycles": s["cycles"], "window_cycles": new, "window_s": dt,
            "cycle_us": s.get("cycle_us", 0.0), "process_cpu_per_cycle_us": cpu_per_cycle,
            "saturated_joints": saturated, "saturated_count": len(saturated),
            "inputs_refused": self.refusals.total(), "trajectories_accepted": self.core.trajectories_accepted,
            "poses_accepted": self.core.poses_accepted,
            "loop": self.loop if self.trigger == "timer" else "state", "executor": self.executor_kind,
            "scheduling": self.scheduling,
        })
        values.update({f"refused.{cause}": n for cause, n in sorted(self.refusals.counts.items())})
        level, message = loop_level(mode, reason, window_cycles=new, lockstep=lockstep_mode,
                                    missed_pct=float(values.get("missed_pct", 0.0)), saturated=saturated,
                                    rate_hz=rate, nominal_hz=self.rate, p99_ms=values["period_error_p99_ms"],
                                    period_s=dt)
        return Report(level, message, values)
