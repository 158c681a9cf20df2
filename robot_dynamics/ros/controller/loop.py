"""The controller node's loop: the dedicated loop thread (absolute deadlines on the steady clock, optional
SCHED_FIFO and CPU affinity) and, with ``state_input: loop``, its own inputs taken at the start of each cycle as
serialized bytes (``/joint_states``, ``/clock``) and read with :mod:`..cdr`: no executor dispatch, no message
conversion.  A mixin of :class:`~robot_dynamics.ros.computed_torque_controller.ComputedTorqueControllerNode`."""

from __future__ import annotations

import os
import time

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState

from .. import cdr, validation
from ..runtime import Refused
from .context import (
    Context,
)

STATE_QUEUE = 10  # /joint_states kept between two cycles with state_input loop (each validated and counted)
CLOCK_OVERRIDE_NS = 10_000_000  # with state_input loop: the node clock follows /clock to within 10 ms


def _never_called(msg: object) -> None:
    """Callback of the loop's input subscriptions: no executor spins their node (the loop takes them)."""


class LoopInput:
    """The node's loop thread and the inputs it takes itself (mixin of the controller node: its attributes)."""

    def _setup_loop_input(self) -> None:
        """``state_input: loop``: ``/joint_states`` (and ``/clock`` with ``use_sim_time``) subscribed as raw bytes
        on a hidden node of this process that no executor spins; the loop thread takes them at the start of
        each cycle (:meth:`_take_inputs`), so a state costs a take and a CDR read (~10 µs), not an executor
        dispatch and a message conversion (~150 µs).  The node's own /clock subscription (rclpy's TimeSource)
        is dropped: the loop sets the node clock from the /clock it takes, and ``use_sim_time`` cannot change
        at run time (refused with the reason)."""
        side = Node(f"_{self.get_name()}_loop_input", namespace=self.get_namespace(), context=self.context,
                    use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
        self._input_node = side
        self._state_reader = cdr.JointStateReader(validation.MAX_JOINT_STATE_NAMES)
        sensor = qos_profile_sensor_data  # best effort, keep last: what arrived since the last cycle, bounded
        queue = QoSProfile(history=sensor.history, depth=STATE_QUEUE, reliability=sensor.reliability,
                           durability=sensor.durability)
        self._state_sub = side.create_subscription(JointState, self.resolve_topic_name("joint_states"),
                                                   _never_called, queue, raw=True)
        if self._sim_time:
            time_source = getattr(self, "_time_source", None)
            if time_source is not None and hasattr(time_source, "detach_node"):
                time_source.detach_node()  # its /clock subscription: the loop takes /clock instead
            self._clock_sub = side.create_subscription(
                ClockMsg, self.resolve_topic_name("/clock"), _never_called,
                QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
        self.add_on_set_parameters_callback(self._refuse_sim_time_change)

    def _refuse_sim_time_change(self, params: list[Parameter]) -> SetParametersResult:
        for p in params:
            if p.name == "use_sim_time" and bool(p.value) != self._sim_time:
                return SetParametersResult(successful=False, reason="use_sim_time is fixed at start with "
                                                                    "state_input: loop (restart the node)")
        return SetParametersResult(successful=True)

    def _take_inputs(self) -> None:
        """Loop thread, at the start of a cycle: the latest /clock (a depth-1 queue) and every /joint_states since
        the last cycle (up to ``STATE_QUEUE``), each validated as :meth:`on_joint_states` does (a refusal is counted
        and logged; the last valid one is the state).  The node clock follows the /clock taken to within
        ``CLOCK_OVERRIDE_NS`` (the loop itself uses the exact value)."""
        sub = self._clock_sub
        if sub is not None:
            with sub.handle:
                got = sub.handle.take_message(ClockMsg, True)
            if got is not None:
                try:
                    ns = cdr.read_clock(got[0])
                except cdr.CDRError as exc:
                    self.refusals.refuse("malformed_clock", f"/clock: {exc}")
                else:
                    self._sim_ns = ns
                    if not 0 <= ns - self._override_ns < CLOCK_OVERRIDE_NS:
                        self._override_ns = ns
                        self.get_clock().set_ros_time_override(Time(nanoseconds=ns, clock_type=ClockType.ROS_TIME))
        sub = self._state_sub
        while True:  # every state since the last cycle, in order: each validated and counted, the last valid wins
            with sub.handle:
                got = sub.handle.take_message(JointState, True)
            if got is None:
                return
            if self.core.ctx is None:  # no model to validate it against yet
                continue
            try:
                q, qd, stamp = self._read_state(got[0], self.core.ctx)
                self._state_arrived(q, qd, stamp)
            except Refused as exc:
                self.refusals.refuse(exc.cause, str(exc))
            except Exception as exc:  # noqa: BLE001 - no message can stop the loop
                self.refusals.refuse("malformed", f"joint_states: {type(exc).__name__}: {exc}")

    def _read_state(self, raw: bytes, ctx: Context) -> tuple[np.ndarray, np.ndarray, float]:
        """(q, qd, stamp) of a serialized JointState: the CDR reader, or rclpy's deserializer (the reference)
        for anything the reader does not parse exactly."""
        try:
            return validation.joint_state_view(self._state_reader.read(raw), ctx.index)
        except cdr.CDRError:
            pass
        try:
            msg = deserialize_message(raw, JointState)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"joint_states cannot be deserialized: {exc}") from None
        return validation.joint_state(msg, ctx.index)

    def _apply_scheduling(self, priority: int | None = None, what: str = "the loop") -> None:
        """SCHED_FIFO at ``priority`` (default ``realtime_priority``) and the ``cpu_affinity`` for the calling
        thread, when permitted (CAP_SYS_NICE or an RLIMIT_RTPRIO allowance); says clearly what was and was not
        granted.  With the loop thread, the executor's thread gets ``realtime_priority - 1`` (``what`` = "the
        executor"): it holds the GIL in the input callbacks, and preempted by ordinary load it would stall the loop
        thread waiting for the GIL (priority inversion)."""
        log = self.get_logger()
        executor = priority is not None
        priority = self.rt_priority if priority is None else priority
        got = []
        if self.cpu_affinity and not executor:
            try:
                os.sched_setaffinity(0, self.cpu_affinity)
                got.append(f"cpus {sorted(os.sched_getaffinity(0))}")
            except (OSError, ValueError) as exc:
                log.warning(f"cpu_affinity {self.cpu_affinity} not granted ({exc}): running on the inherited CPUs")
        if priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
                got.append(f"SCHED_FIFO priority {priority}")
                log.info(f"real-time scheduling granted to {what}: SCHED_FIFO priority {priority}")
            except (OSError, AttributeError) as exc:
                log.warning(f"real-time scheduling NOT granted to {what} (SCHED_FIFO priority {priority}: {exc}; "
                            f"needs CAP_SYS_NICE or an rtprio limit): {what} runs at default priority")
        if executor:
            self.executor_scheduling = ", ".join(got) or "default"
        else:
            self.scheduling = ", ".join(got) or "default"

    def _run_loop(self) -> None:
        """The dedicated loop thread: one cycle per period at absolute deadlines on the steady clock
        (a late cycle is run at once; more than one period late, the schedule restarts from now).  The period
        is read every cycle: a new ``rate`` takes effect from the next deadline."""
        self._apply_scheduling()
        deadline = time.monotonic_ns() + self._period_ns
        sleep, mono = time.sleep, time.monotonic_ns
        while not self._stop_loop.is_set():
            period_ns = self._period_ns
            wait = deadline - mono()
            if wait > 0:
                sleep(wait * 1e-9)
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - the loop never dies
                self.refusals.refuse("cycle_error", f"control cycle: {type(exc).__name__}: {exc}")
            deadline += period_ns
            late = mono() - deadline
            if late > period_ns:
                deadline += (late // period_ns) * period_ns  # cycles missed: keep the phase, do not burst
