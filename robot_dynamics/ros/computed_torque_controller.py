"""Node ``computed_torque_controller``: a joint-space dynamic controller next to ros2_control.

Python cannot be a ros2_control plugin, so this node talks to the topics of a
``forward_command_controller/ForwardCommandController`` (``interface_name: effort``):

* subscribes ``/joint_states`` (sensor-data QoS, joints mapped by name, only the latest sample kept); with the
  default ``loop: thread`` and ``state_input: loop`` the loop thread takes the latest state (and ``/clock`` under
  ``use_sim_time``) itself as serialized bytes at the start of each cycle and reads them with :mod:`.cdr` — no
  executor dispatch, no message conversion (process CPU per 1 kHz cycle 470 -> ~240 µs, ``bench/bench_loop.py``);
* subscribes ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``, JTC semantics: a new
  trajectory replaces the current one; interpolation degree follows the filled fields);
* subscribes ``~/pose_reference`` (``geometry_msgs/PoseStamped``) under a task-space law: the pose of ``task_link``
  to hold (see *Pose reference* below);
* law ``elastic`` (elastic joints, 001 §7.3.8): subscribes ``motor_states_topic`` (``sensor_msgs/JointState`` of
  the motors, only while that law is in use) and holds gravity while no fresh valid motor state is there;
* publishes ``/<effort_controller>/commands`` (``std_msgs/Float64MultiArray``, configured joint order:
  joint efforts Γ, or with ``command_space: motor`` the motor torques τ_m = J_qmᵀ Γ of the robot's
  ``transmissions.*`` parameters, 001 eq. 7.33, the effort limits applied to Γ) and ``~/controller_state`` (``robot_dynamics_interfaces/ControllerState``);
* serves ``~/statistics`` (``std_srvs/Trigger``): loop rate, period error p50/p99/max, missed cycles,
  per-phase CPU of the cycle (sampling, law, publish), process CPU per cycle, mode and refusals, and
  ``imported_while_running`` (modules imported beside the running loop: each import holds the GIL) as JSON
  (the figures ``bench/bench_loop.py`` prints);
* publishes ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``, every ``diagnostic_period`` s of steady clock,
  :mod:`.diagnostics`): the loop figures of the last period (rate, period error, missed cycles), the mode and its
  reason, saturated joints, refusals — OK, WARN (missed >= 1 %, saturation, no model/state) or ERROR (stale).

The control cycle (:meth:`ComputedTorqueControllerNode.step`) costs little more than the law: the
reference comes from :meth:`SampledTrajectory.at` (cursor, O(1) amortized), the command and state
messages are preallocated and filled in place, inputs validated on arrival are not checked again,
and ``~/controller_state`` goes out at ``state_publish_rate`` (control time, default 100 Hz; 0 = every
cycle; ``state_publish_divider`` >= 1 keeps the old every-n-th-cycle behaviour and, with
``trigger: state``, every lockstep cycle is published unless a divider is set).  ``loop`` chooses
how the timer-triggered cycle is driven: ``thread`` (default: a dedicated thread on the steady clock,
absolute deadlines; the executor only runs the inputs, services and watchdog), ``timer`` (a timer of
the single-threaded executor, on the node clock) or ``events`` (the same timer on rclpy's
EventsExecutor).  ``realtime_priority`` (1-99; 0 = off) asks SCHED_FIFO for the loop's thread and
``cpu_affinity`` pins it; whether it was granted is logged.

Laws (parameter ``law``): ``computed_torque`` (001 eq. 9.22/9.24), ``position`` (9.29),
``predictive`` (9.31), ``pd_gravity`` (9.12), ``pid`` (9.5/9.10), and in the task space of ``task_link``
``task_space_computed_torque`` (9.33–9.35, ``task_space`` is the same law; null-space term ``null_space`` on a
redundant arm) and ``task_space_pid`` (9.17).  A joint trajectory under a task-space law is followed through the law's
joint-reference path (X^d = DGM(q^d), ...); a pose reference holds X^d with zero twist and acceleration.

Pose reference (``~/pose_reference``, task-space laws only): validated on arrival (finite; quaternion of non-zero
norm, normalized; ``frame_id`` empty or the model's base link; a non-zero stamp within ``state_timeout`` of the
clock), then in a worker thread the inverse kinematics from the current position (damped least squares, no random
restart) must reach it with every joint at least ``pose_limit_margin`` inside its limits, else refused
(``pose_unreachable``).  Adopted at a cycle boundary, it replaces the running trajectory (a goal is preempted) and
is held (mode ``holding``, reason ``pose reference ...``; the published joint reference is the IK solution) until a
trajectory or a new pose arrives.  While holding it, a joint closer than ``pose_limit_margin`` to a position limit
or faster than its velocity limit makes the controller hold the current joint position instead (logged), with
joint-space computed torque at the same ``omega``/``xi`` (``Context.hold_controller``: the task-space law may be the
cause) until the next trajectory, pose or law.

Safety, by construction:

* **One validation at the boundary** (:mod:`.validation`): a joint state or trajectory that is
  malformed, non-finite, lacks a joint, is too large, or is stamped too far from the clock is
  refused with its cause (logged once per cause and period, counted in ``inputs_refused``); no
  input can raise into the executor.
* **Whole-path check**: a trajectory is accepted only if its *interpolated* path (not only its
  points) stays within the position and velocity limits, and its ``effort`` fields within the
  effort limits (:func:`~robot_dynamics.trajectory.sampled.check_path_limits`).  The check runs
  in a worker thread (the subscription takes raw bytes, so even deserializing a huge message stays
  off the executor); the control cycle picks the result up at a cycle boundary.  ``max_trajectory_points`` bounds the work.
* **State machine** (``ControllerState.mode``): ``no_model`` -> ``no_state`` -> ``holding`` /
  ``tracking``; ``stale`` when the last state is older than ``state_timeout`` (steady clock) —
  then the ``stale_behavior`` (``gravity_hold``: gravity torques at the last position; ``none``);
  every transition is logged and published at once.  Coming back from ``stale``, after a time
  jump (clock or stamps going back, or leaping forward) the running trajectory is dropped and
  the arm holds where it is; the law's internal state is reset.
* **Outputs**: every command is finite and within the effort limits, or it is not sent.
* **Lockstep** (``trigger: state``): one command per new state stamp, labelled with it
  (:mod:`.lockstep`); a repeated stamp gets the same command again, never a second law cycle.
"""

from __future__ import annotations

import array
import gc
import importlib
import json
import math
import os
import sys
import threading
import time

import numpy as np
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import SetDynamicParameters

from ..identification.update import updated_model
from ..model.robot_model import RobotModel
from ..safety import limit_guard as lg
from ..symbolic.codegen import PROGRAM_MODULE_PREFIX
from ..trajectory.sampled import SampledTrajectory
from . import cdr, lockstep, validation
from .controller.context import (
    Context,
    build_context,
)
from .controller.core import NO_MODEL, NO_STATE, STALE, TRACKING, ControlCore
from .controller.parameters import CONTEXT_PARAMETERS, JOINT_PARAMETERS, PARAMETERS, TASK_SPACE_LAWS, joint_parameters
from .controller.pose import POSE_IK_TOLERANCE, PoseHold, pose_guard, pose_text
from .controller.statistics import LoopStatistics
from .conversions import short
from .description import RobotDescription
from .diagnostics import ERROR, OK, WARN, DiagnosticsPublisher, Report
from .runtime import LatestWorker, Refusals, Refused, guarded, run_node
from .trajectory_action import (
    INVALID_GOAL,
    INVALID_JOINTS,
    JOINT_CAUSES,
    OLD_HEADER_TIMESTAMP,
    FollowJointTrajectoryServer,
    GoalError,
    GoalRun,
    tolerances,
)

# modules the run-time paths import lazily (a swap's base parameters: sympy; a pose reference's inverse kinematics;
# a description update's URDF parser; quaternions): imported at start-up, never beside the running loop — an import
# holds the GIL for tens of ms at a time (the first identified-parameter swap held the loop 45-64 periods on a
# loaded host); ``~/statistics`` lists any module imported after the first model was in use
PRELOAD = ("sympy", "robot_dynamics.dynamics.base_parameters", "robot_dynamics.dynamics.dynamic_terms",
           "robot_dynamics.kinematics.redundancy", "robot_dynamics.kinematics.analytic_ik",
           "robot_dynamics.model.urdf_conversion", "scipy.spatial.transform", "yaml")



# serialized size bound of one trajectory point, checked before deserializing (generous: 40 joints x 4 fields)
MAX_BYTES_PER_POINT = 2048
STATE_WAIT = 2.0  # s a goal waits for the first valid joint state (action thread)
MODEL_BUILD_WAIT = 120.0  # s a trajectory waits for the model being built (code generation on a cold cache)


STATE_QUEUE = 10  # /joint_states kept between two cycles with state_input loop (each validated and counted)
CLOCK_OVERRIDE_NS = 10_000_000  # with state_input loop: the node clock follows /clock to within 10 ms

MAX_POSE_BYTES = 4096  # serialized PoseStamped (a longer frame_id is refused before deserializing)


def _completed(msg: JointTrajectory, names: list[str], q: np.ndarray) -> JointTrajectory:
    """``msg`` with the joints of ``names`` it lacks held at ``q`` (model order; zero velocity, acceleration and
    effort where the points give those fields); itself when it names them all or names an unknown one (refused by
    the check that follows, with its reason)."""
    given = list(msg.joint_names)
    missing = [j for j in names if j not in given]
    if not missing or not set(given) <= set(names):
        return msg
    hold = [float(q[names.index(j)]) for j in missing]
    zeros = [0.0] * len(missing)
    out = JointTrajectory(header=msg.header, joint_names=given + missing)
    for p in msg.points:
        out.points.append(JointTrajectoryPoint(
            positions=list(p.positions) + hold if len(p.positions) else [],
            velocities=list(p.velocities) + zeros if len(p.velocities) else [],
            accelerations=list(p.accelerations) + zeros if len(p.accelerations) else [],
            effort=list(p.effort) + zeros if len(p.effort) else [], time_from_start=p.time_from_start))
    return out


class _NodeOutputs:
    """The node's side of its control core (:class:`~.controller.core.Outputs`): logs, mode messages, buffers."""

    def __init__(self, node: ComputedTorqueControllerNode) -> None:
        self.node = node

    def transition(self, mode: str, reason: str, changed: bool) -> None:
        # one call site per severity: rclpy refuses a call site whose severity changes
        if mode == STALE:
            self.node.get_logger().warning(f"mode {mode}: {reason}")
        else:
            self.node.get_logger().info(f"mode {mode}: {reason}")
        if changed or mode == TRACKING:
            self.node._publish_state(None)

    def publish_mode(self) -> None:
        self.node._publish_state(None)

    def context_in_use(self, ctx: Context, old: Context | None, changed: str | None) -> None:
        node = self.node
        node.law = node.state_msg.law = ctx.law
        if node._modules_in_use is None:
            node._modules_in_use = set(sys.modules)

    def allocate(self, ctx: Context) -> None:
        self.node._allocate_messages(ctx)

    def log(self, level: str, text: str) -> None:
        if level == "warning":
            self.node.get_logger().warning(text)
        else:
            self.node.get_logger().info(text)

    def refuse(self, cause: str, text: str) -> None:
        self.node.refusals.refuse(cause, text)

    def latest_refusal(self) -> tuple[str, str] | None:
        return self.node.refusals.latest


class ComputedTorqueControllerNode(Node):

    def __init__(self) -> None:
        super().__init__("computed_torque_controller")
        self.params = PARAMETERS.copy()
        v = self.params.declare(self)
        self.law = v["law"]
        self.trigger = v["trigger"]
        self.rate = v["rate"]
        self.period = 1.0 / self.rate
        self._period_ns = round(self.period * 1e9)  # read by the loop thread every cycle (live rate)
        self.divider = v["state_publish_divider"]
        if self.divider == 0 and self.trigger == "state":
            self.divider = 1  # lockstep records every cycle
        self.state_period = 1.0 / v["state_publish_rate"] if v["state_publish_rate"] > 0 else 0.0
        self.next_state_time = -math.inf  # control time of the next ~/controller_state (by rate)
        self.loop = v["loop"]
        self.executor_kind = v["executor"]  # read by runtime.run_node
        # the loop thread takes its inputs itself (timer trigger, loop thread)
        self.loop_input = v["state_input"] == "loop" and self.trigger == "timer" and self.loop == "thread"
        self.rt_priority = v["realtime_priority"]
        self.cpu_affinity = list(v["cpu_affinity"])
        self.scheduling = "default"  # what the loop got (reported by ~/statistics)
        self.max_points = v["max_trajectory_points"]
        self.start_tolerance = v["start_tolerance"]
        sys.setswitchinterval(0.0005)  # the control thread waits at most this long for the GIL

        self.refusals = Refusals(self)
        # the control cycle's state machine, references, law and guard (pure: controller.core); its lock is the
        # node's (the loop thread vs the executor's and the action's callbacks; uncontended: ~0.1 us)
        self.core = ControlCore(_NodeOutputs(self), trigger=self.trigger, timeout=v["state_timeout"],
                                stale_behavior=v["stale_behavior"], pose_margin=v["pose_limit_margin"],
                                motor_topic=v["motor_states_topic"])
        self._lock = self.core.lock
        self.mode_wall = 0.0
        self._last_answer: tuple[float, Float64MultiArray] | None = None
        window = v["statistics_window"]
        self.stats = LoopStatistics(max(100, min(10_000_000, round(window * self.rate))))
        self.cycle = 0
        self._extremes: tuple[RobotModel, lg.Extremes] | None = None
        self._stop_loop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        # preallocated outputs, filled in place every cycle (see _allocate_messages)
        self.cmd_msg = Float64MultiArray()
        self._cmd_view = np.zeros(0)
        self._clipped = np.zeros(0)  # the cycle's command clipped to the limits (model order)
        self._state_views: dict[str, np.ndarray] = {}

        # heavy input work (deserializing and checking a trajectory, building/compiling a model) runs in
        # worker threads: the single-threaded executor only ever runs short callbacks
        self._ctx_ready = threading.Event()
        self._modules_in_use: set[str] | None = None  # sys.modules when the first model came into use
        self.trajectory_worker = LatestWorker(self.check_trajectory, "trajectory_check")
        self.model_worker = LatestWorker(self._build_model, "model_build")
        self.pose_worker = LatestWorker(self.check_pose, "pose_check")  # the inverse kinematics of a pose reference
        topic = f"{v['effort_controller']}/commands"  # relative: a namespace moves the whole robot
        self.cmd_pub = self.create_publisher(Float64MultiArray, topic, 10)
        # lockstep: one state per cycle, deep enough that a recorder never loses one
        depth = 1000 if self.trigger == "state" else 100
        self.state_pub = self.create_publisher(ControllerState, "~/status", depth)
        self.state_msg = ControllerState(law=self.law)
        # JTC's state (control_msgs): the same reference/feedback/error/output objects as ~/status, filled once
        self.jtc_pub = self.create_publisher(JointTrajectoryControllerState, "~/controller_state", depth)
        self.jtc_msg = JointTrajectoryControllerState(speed_scaling_factor=1.0)
        # sensor-data QoS keeps only the latest sample; state-triggered (lockstep) control must see every state
        state_qos = qos_profile_sensor_data if self.trigger == "timer" else 10
        self._input_node: Node | None = None
        self._state_sub = self._clock_sub = None
        self._raw_cmd: cdr.Float64MultiArrayWriter | None = None
        self._sim_ns = 0  # the latest /clock (ns), taken by the loop thread (loop_input with use_sim_time)
        self._override_ns = -CLOCK_OVERRIDE_NS  # the node clock's last override from it
        self._sim_time = bool(self.get_parameter("use_sim_time").value)
        self.params.attach(self, self._apply_parameters)
        if self.loop_input:
            self._setup_loop_input()
        else:
            self.create_subscription(JointState, "joint_states", self.on_joint_states, state_qos)
        # raw: the executor thread only sees bytes; the worker deserializes and checks
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10, raw=True)
        # law elastic: the motors' state (subscribed only while that law is in use: a 500 Hz topic costs the
        # executor otherwise); (stamp, θ, θ̇) joint side, replaced as a whole
        self._motor_sub = None
        self._motor_topic = v["motor_states_topic"]
        if self.law == "elastic":
            self._subscribe_motor_states()
        self.create_subscription(PoseStamped, "~/pose_reference", self.on_pose_reference, 10, raw=True)
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        # goals are counted before rclpy converts them (a huge goal would hold the GIL from the loop for seconds)
        self.action = FollowJointTrajectoryServer(
            self, v["action_monitor_rate"], max_points=lambda: self.max_points,
            on_oversize=lambda why: self.refusals.refuse("too_large", f"~/follow_joint_trajectory: {why}"))
        if self.action.server.gate is None:
            self.get_logger().warning("~/follow_joint_trajectory: this rclpy does not allow counting a goal's points "
                                      "before converting it: max_trajectory_points is checked after the conversion")
        self.side_nodes = (self.action.node,)  # spun by runtime.run_node (multithreaded: execute callbacks wait)
        # building a model (maybe compiling it) takes time: on the side node's threads, never the executor's
        self.action.node.create_service(SetDynamicParameters, self.resolve_service_name("~/set_dynamic_parameters"),
                                        self.on_set_dynamic_parameters)
        self.executor_scheduling = "default"
        if self.trigger == "timer" and self.loop == "thread":
            self._loop_thread = threading.Thread(target=self._run_loop, name="control_loop", daemon=True)
            if self.rt_priority > 1:
                self._apply_scheduling(self.rt_priority - 1, "the executor")  # this thread spins the executor
        elif self.trigger == "timer":
            self.timer = self.create_timer(self.period, self.step)
            self._apply_scheduling()  # the executor's thread (this one) runs the cycle
        # the watchdog runs on the steady clock: a paused simulation also stops /clock
        self.watchdog_timer = self.create_timer(self.core.timeout / 5, self.watchdog,
                                                clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.description = RobotDescription(self, self._on_model, lock_from_joint_states=True)
        self._diag_k = 0  # cycle count and process CPU time at the previous /diagnostics
        self._diag_cpu = time.process_time()
        self.diagnostics = DiagnosticsPublisher(self, "control loop", self._diagnostics, self._robot_name)
        self.get_logger().info(f"law {self.law}, {self.rate:.0f} Hz ({self.trigger}, loop {self.loop}, executor {self.executor_kind}), "
                               f"commands on {self.resolve_topic_name(topic)}")
        if self._loop_thread is not None:
            self._loop_thread.start()

    # ------------------------------------------------------------ loop
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

    # -------------------------------------------------------------- setup
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        """Executor thread: the per-joint parameters of the model's joints declared (JTC's ``gains.<joint>.*``,
        ``constraints.<joint>.*``; start values from the node's parameters), then the context built in the worker."""
        try:
            self.params.extend(self, [p for j in model.joint_names for p in joint_parameters(j)])
        except ValueError as exc:
            self.get_logger().error(f"robot model not used: per-joint parameter {exc}")
            return
        self.model_worker.put(model)

    def _build_model(self, model: RobotModel) -> None:
        """Worker: build the control context (may compile code) and hand it to the control cycle; the first time,
        import the modules of :data:`PRELOAD` before (the loop has no model yet: no arm to hold up)."""
        try:
            if self._modules_in_use is None:
                for name in PRELOAD:
                    importlib.import_module(name)
            self.core.queue_context(self._build_context(model), None)
            self._ctx_ready.set()
            self.get_logger().info(f"dynamic model engine: {model.engine['inverse_dynamics']}")
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f"robot model not usable by the controller: {type(exc).__name__}: {exc}")

    def _build_context(self, model: RobotModel, values: dict | None = None) -> Context:
        """The control context of ``model`` with the parameter ``values`` (default: the node's): :func:`build_context`."""
        return build_context(model, self.params.values if values is None else values, self._extremes_of(model))

    def _extremes_of(self, model: RobotModel) -> lg.Extremes:
        """The gravity and inertia extremes of ``model`` (sampled once per model: it is immutable)."""
        cached = self._extremes
        if cached is None or cached[0] is not model:
            cached = self._extremes = (model, lg.sampled_extremes(model))
        return cached[1]

    def _subscribe_motor_states(self) -> None:
        """Executor thread: subscribe ``motor_states_topic`` once (law elastic)."""
        if self._motor_sub is None:
            self.core.motor_state = None  # one from an earlier subscription is stale: "no motor state yet" until one comes
            self._motor_sub = self.create_subscription(JointState, self._motor_topic, self.on_motor_states,
                                                       qos_profile_sensor_data)
            self.get_logger().info(f"law elastic: motor states from {self.resolve_topic_name(self._motor_topic)}")

    def on_motor_states(self, msg: JointState) -> None:
        """The motors' positions and velocities (motor side) -> θ, θ̇ joint side (``transmissions.*``); a message
        that does not name every joint's motor with finite values is refused."""
        try:
            ctx = self.core.ctx or self.core.pending_ctx
            if ctx is None:
                return
            model = ctx.model
            index = {nm: k for k, nm in enumerate(msg.name)}
            try:
                cols = [index[f"{j}_motor"] if f"{j}_motor" in index else index[j] for j in model.joint_names]
            except KeyError:
                raise Refused("motor_state_names", f"motor states naming {short(list(msg.name))} lack a motor of "
                                                   f"{model.joint_names}") from None
            if len(msg.position) != len(msg.name) or len(msg.velocity) != len(msg.name):
                raise Refused("motor_state_ragged", "motor states without one position and velocity per name")
            qm = np.asarray(msg.position, float)[cols]
            qmd = np.asarray(msg.velocity, float)[cols]
            if not (np.all(np.isfinite(qm)) and np.all(np.isfinite(qmd))):
                raise Refused("motor_state_nonfinite", "motor state with a non-finite value")
            tr = model.transmission
            if tr is not None:  # q = J_qm q_m (001 eq. 7.31)
                qm, qmd = tr.joint_positions(qm), tr.joint_velocities(qmd)
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            self.core.motor_state = (stamp, qm, qmd)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
        except Exception as exc:  # noqa: BLE001 - never raise into the executor
            self.refusals.refuse("motor_state_error", f"motor states: {type(exc).__name__}: {exc}")

    def _apply_parameters(self, changes: dict) -> None:
        """Executor thread, a ``SetParameters`` call accepted by the schema: a new law, gains, limits or friction
        options build a new control context now (``ValueError`` refuses the change with its reason: nothing
        changes), adopted at the next cycle boundary keeping the running trajectory; rates, timeouts and
        tolerances change under the cycle's lock.  Logged."""
        values = {**self.params.values, **changes}
        rebuild = bool(CONTEXT_PARAMETERS & changes.keys()) or any(k.startswith("gains.") for k in changes)
        if rebuild:
            base = self.core.pending_ctx or self.core.ctx
            if base is not None:  # (without a model yet, the first context is built with the new values)
                ctx = self._build_context(base.model, values)
                self.core.queue_context(ctx, ", ".join(sorted(changes)))
            if values["law"] == "elastic":
                self._subscribe_motor_states()
            elif self._motor_sub is not None:  # another law: the 500 Hz motor states would only cost the executor
                self.destroy_subscription(self._motor_sub)  # (the elastic law, until the next cycle adopts the new
                self._motor_sub = None                       # one, keeps the last motor state: fresh for a cycle)
        with self._lock:
            if "rate" in changes:
                self.rate = values["rate"]
                self.period = 1.0 / self.rate
                self._period_ns = round(self.period * 1e9)
                if getattr(self, "timer", None) is not None:  # loop: timer
                    self.timer.timer_period_ns = self._period_ns
            if "state_timeout" in changes:
                self.core.set_timeout(values["state_timeout"])
            if "state_publish_rate" in changes:
                r = values["state_publish_rate"]
                self.state_period = 1.0 / r if r > 0 else 0.0
            self.core.stale_behavior = values["stale_behavior"]
            self.max_points = values["max_trajectory_points"]
            self.start_tolerance = values["start_tolerance"]
            self.core.pose_margin = values["pose_limit_margin"]
        self.get_logger().info(f"parameters set: {changes}" + (" (applied at the next cycle)" if rebuild else ""))

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


    # ------------------------------------------------------------ inputs
    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        ctx = self.core.ctx
        if ctx is None:
            with self._lock:
                self.core.take_pending(None)
            ctx = self.core.ctx
            if ctx is None:
                return
        q, qd, stamp = validation.joint_state(msg, ctx.index)
        now_clock = self.now()
        if self.trigger == "state":
            # lockstep: the stamp is the control time (0 is a valid sim time)
            if self.core.state_stamp is not None and stamp == self.core.state_stamp and self._last_answer is not None:
                self.cmd_pub.publish(self._last_answer[1])  # the same answer again, never a second law cycle
                return
            with self._lock:
                self.core.lockstep_state(q, qd, stamp, time.monotonic())
                self.step()
            return
        self._state_arrived(q, qd, stamp, now_clock)

    def _state_arrived(self, q: np.ndarray, qd: np.ndarray, stamp: float, now_clock: float | None = None) -> None:
        """A valid timer-triggered state judged by the safety envelope's :class:`StateMonitor` (stamps against the
        clock, order, impossible values, jumps, two sources disagreeing), then accepted (or ``Refused``)."""
        self.core.state_arrived(q, qd, stamp, self.control_time() if now_clock is None else now_clock,
                                time.monotonic())

    @guarded()
    def on_trajectory(self, raw: bytes) -> None:
        """Executor thread: a size check on the serialized bytes, then hand over to the worker."""
        if len(raw) > self.max_points * MAX_BYTES_PER_POINT:
            raise Refused("too_large", f"trajectory message of {len(raw)} bytes (max_trajectory_points "
                                       f"{self.max_points})")
        self.trajectory_worker.put(raw)

    @guarded()
    def check_trajectory(self, raw: bytes) -> None:
        """Worker: deserialize, validate the whole interpolated path; the control cycle adopts the result."""
        ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None and self.model_worker.busy():  # the model is being built: wait for it (worker thread)
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None:
            raise Refused("no_model", "trajectory before the robot model")
        gc.disable()  # one burst of allocations: no collector pauses for the control thread meanwhile
        try:
            msg = deserialize_message(raw, JointTrajectory)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"trajectory message cannot be deserialized: {exc}") from None
        finally:
            gc.enable()
        traj, stamp = self._checked_trajectory(msg, ctx)
        self.core.queue_trajectory((traj, stamp, len(msg.points), None))

    @guarded()
    def on_pose_reference(self, raw: bytes) -> None:
        """Executor thread: a pose reference validated (message, frame, stamp, law), then handed to the worker that
        solves its inverse kinematics (:meth:`check_pose`)."""
        if len(raw) > MAX_POSE_BYTES:
            raise Refused("too_large", f"pose reference message of {len(raw)} bytes")
        ctx = self.core.pending_ctx or self.core.ctx
        if ctx is None:
            raise Refused("pose_no_model", "pose reference before the robot model")
        try:
            msg = deserialize_message(raw, PoseStamped)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"pose reference cannot be deserialized: {exc}") from None
        pose, stamp = validation.pose_stamped(msg, ctx.model.base_link)
        if ctx.task_link is None:
            raise Refused("pose_joint_space_law", f"pose reference under the joint-space law {ctx.law}: set law to one "
                                                  f"of {', '.join(TASK_SPACE_LAWS)} first")
        if stamp != 0.0:
            age = self.control_time() - stamp
            if age > self.core.timeout:
                raise Refused("pose_stale_stamp", f"pose reference stamped {age:.3f} s in the past (state_timeout "
                                                  f"{self.core.timeout} s)")
            if age < -self.core.timeout:
                raise Refused("pose_future_stamp", f"pose reference stamped {-age:.3f} s in the future (state_timeout "
                                                   f"{self.core.timeout} s)")
        self.pose_worker.put((pose, self.core.trajectories_accepted))

    @guarded()
    def check_pose(self, item: tuple[np.ndarray, int]) -> None:
        """Worker: the pose's inverse kinematics from the current position (002 eqs 6.16-6.17, no random restart);
        queued for the next cycle when it converges with every joint ``pose_limit_margin`` inside its limits."""
        pose, trajectories = item
        ctx = self.core.pending_ctx or self.core.ctx
        if ctx is None or ctx.task_link is None:
            raise Refused("pose_joint_space_law", "pose reference: the law is no longer a task-space law")
        q = self.core.q
        if q is None:
            raise Refused("pose_no_state", f"pose reference before a valid joint state (mode {self.core.mode})")
        q = q.copy()
        names, margin, link = ctx.model.joint_names, self.core.pose_margin, ctx.task_link
        text = pose_text(pose, link, ctx.model.base_link)
        zero, unlimited = np.zeros(ctx.model.dof), np.full(ctx.model.dof, np.inf)
        why = pose_guard(q, zero, ctx.lower, ctx.upper, unlimited, margin, names)
        if why is not None:
            raise Refused("pose_near_limits", f"pose reference ({text}) refused: the arm is too near a limit to hold "
                                              f"a pose ({why}); move it away with a joint trajectory first")
        t0 = time.monotonic()
        try:
            # the facade's numeric IGM (damped least squares, iterates clamped to the limits), no random restart
            q_ref = ctx.model.inverse_kinematics(pose, q, link, restarts=0, tolerance=POSE_IK_TOLERANCE)
        except ValueError as exc:
            raise Refused("pose_unreachable", f"pose reference ({text}) not reachable from the current position "
                                              f"within the joint limits: {exc}") from None
        why = pose_guard(q_ref, zero, ctx.lower, ctx.upper, unlimited, margin, names)
        if why is not None:
            raise Refused("pose_unreachable", f"pose reference ({text}) needs {why}")
        if not self.core.queue_pose(PoseHold(pose=pose, q_ref=q_ref, link=link, text=text), trajectories):
            self.get_logger().info(f"pose reference ({text}) superseded by a trajectory that came meanwhile")
            return
        self.get_logger().info(f"pose reference accepted: {text}; inverse kinematics in "
                               f"{(time.monotonic() - t0) * 1e3:.1f} ms, q = {np.round(q_ref, 4).tolist()}")

    def _checked_trajectory(self, msg: JointTrajectory, ctx: Context) -> tuple[SampledTrajectory, float | None]:
        """The trajectory of ``msg`` with its start time (None: now) once its whole interpolated path is within
        the limits (``Refused`` with the cause otherwise); worker or action thread."""
        data = validation.trajectory(msg, ctx.model.joint_names, self.max_points)
        q = self.core.q
        start = None if q is None else q.copy()
        if start is not None and data["times"][0] == 0.0:
            dev = np.abs(data["positions"][0] - start)
            if np.any(dev > self.start_tolerance):
                j = int(np.argmax(dev))
                raise Refused("start_deviation", f"first point at t = 0 is {dev[j]:.3g} from the arm on "
                                                 f"{ctx.model.joint_names[j]} (start_tolerance {self.start_tolerance})")
        try:
            traj = SampledTrajectory(data["times"], data["positions"], data["velocities"], data["accelerations"],
                                     start=start)
        except ValueError as exc:
            raise Refused("path_limits", str(exc)) from None
        # the interpolated path within the limits (an arm outside them: only back toward the range), its end inside
        ctx.envelope.check_path(traj, start=start, names=ctx.model.joint_names)
        if data["effort"] is not None:
            ctx.envelope.check_efforts(data["effort"], ctx.effort)
        stamp = data["stamp"]
        return traj, (stamp if stamp > 0 else None)

    def on_set_dynamic_parameters(self, request: SetDynamicParameters.Request,
                                  response: SetDynamicParameters.Response) -> SetDynamicParameters.Response:
        """Side thread: identified parameters swapped into the running controller without a restart.  The new model
        and control context are built here (the loop keeps commanding with the old ones), adopted at a cycle boundary
        keeping the running trajectory (law state reset), and the answer comes once the loop uses them."""
        try:
            base = self.core.pending_ctx or self.core.ctx
            if base is None:
                raise ValueError("no robot model yet (robot_description not received)")
            model = updated_model(base.model, list(request.names), np.asarray(request.values, dtype=float))
            ctx = self._build_context(model)
        except Exception as exc:  # noqa: BLE001 - a bad request is answered, the controller keeps its model
            response.success, response.message = False, f"{type(exc).__name__}: {exc}"
            self.refusals.refuse("bad_dynamic_parameters", f"~/set_dynamic_parameters: {response.message}")
            return response
        source = request.source or "a client"
        self.core.queue_context(ctx, f"dynamic parameters from {source}")
        end = time.monotonic() + 2.0
        while self.core.ctx is not ctx and time.monotonic() < end:
            time.sleep(0.005)
        response.success = True
        response.message = (f"{len(request.names)} dynamic parameters from {source} " +
                            ("in use" if self.core.ctx is ctx else "adopted at the next cycle (the loop is not running)"))
        return response

    # ------------------------------------------------------------ action
    def prepare_goal(self, handle) -> GoalRun:
        """Action thread: the goal's trajectory checked like the topic's, its tolerances; ``GoalError`` (code and
        reason) when it cannot run."""
        goal = handle.request
        ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None and self.model_worker.busy():
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None:
            raise GoalError(INVALID_GOAL, "no robot model yet (robot_description not received)")
        end = time.monotonic() + STATE_WAIT
        while self.core.q is None and time.monotonic() < end:  # a goal right after start-up: the first state is near
            time.sleep(0.01)
        if self.core.q is None:
            raise GoalError(INVALID_GOAL, f"no valid joint state yet (mode {self.core.mode}: {self.core.mode_reason})")
        if len(goal.trajectory.points) > self.max_points:
            raise GoalError(INVALID_GOAL, f"trajectory with {len(goal.trajectory.points)} points exceeds "
                                          f"max_trajectory_points={self.max_points}")
        names = ctx.model.joint_names
        values = self.params.values
        defaults = {
            "trajectory": [values.get(f"constraints.{j}.trajectory", 0.0) for j in names],
            "goal": [values.get(f"constraints.{j}.goal", 0.0) for j in names],
            "stopped_velocity_tolerance": values["constraints.stopped_velocity_tolerance"],
            "goal_time": values["constraints.goal_time"],
        }
        tol = tolerances(goal, names, defaults)
        trajectory = goal.trajectory
        if values["allow_partial_joints_goal"]:
            trajectory = _completed(trajectory, names, self.core.q)
        try:
            traj, stamp = self._checked_trajectory(trajectory, ctx)
        except Refused as exc:
            self.refusals.refuse(exc.cause, f"goal: {exc}")
            raise GoalError(INVALID_JOINTS if exc.cause in JOINT_CAUSES else INVALID_GOAL, f"{exc.cause}: {exc}") \
                from None
        if stamp is not None:
            late = self.control_time() - (stamp + traj.duration)
            if late > 0:
                raise GoalError(OLD_HEADER_TIMESTAMP, f"the trajectory stamped {stamp:.3f} s ended {late:.3f} s ago")
        run = GoalRun(handle, tol, points=len(goal.trajectory.points))
        run.checks_path = tol.checks_path
        run.trajectory, run.stamp = traj, stamp
        return run

    def submit_goal(self, run: GoalRun) -> None:
        """Action thread: hand the goal's trajectory to the next cycle (it preempts a running goal then)."""
        self.core.queue_trajectory((run.trajectory, run.stamp, run.points, run))

    def cancel_goal(self, run: GoalRun) -> None:
        """Action thread: a cancel request; the arm holds where it is (a goal still queued is dropped)."""
        self.core.cancel(run)

    def goal_feedback(self, run: GoalRun):
        """Action thread: desired, actual and error of the last ``~/controller_state`` (controller joint order)."""
        with self._lock:
            if self.core.goal is not run or self.core.ctx is None:
                return None
            m = self.jtc_msg
            fb = FollowJointTrajectory.Feedback(joint_names=list(m.joint_names))
            # copies: the loop fills the state message's arrays in place
            fb.header.stamp.sec, fb.header.stamp.nanosec = m.header.stamp.sec, m.header.stamp.nanosec
            ref, act, err = m.reference, m.feedback, m.error
            fb.desired = JointTrajectoryPoint(positions=ref.positions.tolist(), velocities=ref.velocities.tolist(),
                                              accelerations=ref.accelerations.tolist())
            fb.actual = JointTrajectoryPoint(positions=act.positions.tolist(), velocities=act.velocities.tolist())
            fb.error = JointTrajectoryPoint(positions=err.positions.tolist(), velocities=err.velocities.tolist())
            t = self.control_time() - self.core.trajectory_t0
            times = self.core.trajectory.times if self.core.trajectory is not None else None
        fb.index = int(np.searchsorted(times, t, side="right")) - 1 if times is not None else run.points - 1
        return fb

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        summary = self.stats.summary(self.period)
        if self.trigger == "state":  # lockstep: cycles follow the states, there is no period to miss
            summary.pop("missed_cycles", None)
            summary.pop("missed_pct", None)
        summary.update(mode=self.core.mode, mode_reason=self.core.mode_reason, refused=dict(self.refusals.counts),
                       limit_guard_cycles=self.core.guarded_cycles,
                       law=self.law, poses_accepted=self.core.poses_accepted,
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

    # --------------------------------------------------------- diagnostics
    def _robot_name(self) -> str:
        ctx = self.core.ctx
        return ctx.model.name if ctx is not None else ""

    def _diagnostics(self, dt: float) -> Report:
        """``/diagnostics`` (executor thread, every ``diagnostic_period``): the loop figures of the cycles since
        the previous report (a slice of the ring, not the whole ``statistics_window``), the state machine,
        saturation and input counters.  OK: holding/tracking, missed < 1 %; WARN: missed >= 1 %, saturated,
        no_model/no_state; ERROR: stale, or no control cycle in the period while holding/tracking."""
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
        if mode == STALE:
            return Report(ERROR, f"stale: {reason}", values)
        if mode in (NO_MODEL, NO_STATE):
            return Report(WARN, f"{mode}: {reason}", values)
        if not new and not lockstep_mode:
            return Report(ERROR, f"{mode}, but no control cycle for {dt:.2f} s", values)
        level, problems = OK, []
        missed = float(values.get("missed_pct", 0.0))
        if missed >= 1.0:
            level = WARN
            problems.append(f"missed {missed:.1f} % of cycles")
        if saturated:
            level = WARN
            problems.append(f"saturated: {', '.join(saturated)}")
        line = f"{mode} at {rate:.0f} Hz (nominal {self.rate:.0f}), period error p99 " \
               f"{values['period_error_p99_ms']:.3f} ms"
        return Report(level, "; ".join([line, *problems]), values)

    # ------------------------------------------------------------- control
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def control_time(self) -> float:
        """Time of the control law: the state's stamp when triggered by states, else the node clock."""
        if self.trigger == "state" and self.core.state_stamp is not None:
            return self.core.state_stamp
        if self.loop_input:  # what the node clock says, without building rclpy Time objects
            return (self._sim_ns if self._sim_time else time.time_ns()) * 1e-9
        return self.now()


    def step(self) -> None:
        """One control cycle (timer, loop thread or lockstep state): the inputs taken, the core's
        :meth:`~.controller.core.ControlCore.update`, its command published; the phases timed for ``~/statistics``."""
        start = time.perf_counter_ns()  # the period is measured on the steady clock
        clock = time.thread_time_ns    # the phases in CPU time of this thread (preemption not counted)
        t0 = clock()
        core = self.core
        with core.lock:
            if self.loop_input:
                self._take_inputs()
            now = self.control_time()
            cycle = core.update(now, time.monotonic())
            if cycle is None:
                return
            t3 = clock()
            ctx = core.ctx
            answer = self._publish_cycle(ctx, cycle.tau, stamp=core.state_stamp if self.trigger == "state" else None)
            if self.trigger == "state":
                self._last_answer = (core.state_stamp, answer)
            t4 = clock()
            self.cycle += 1
            if self.divider:
                due = self.cycle % self.divider == 0
            else:
                due = now >= self.next_state_time
                if due:  # on the grid of the rate; a jump or a stall restarts it from now
                    nxt = self.next_state_time + self.state_period
                    self.next_state_time = nxt if now < nxt < now + self.state_period else now + self.state_period
            if due:
                self._publish_cycle_state(ctx, now, cycle.q_ref, cycle.qd_ref, cycle.qdd_ref, cycle.tau)
            t5 = clock()
            self.stats.tick(start, cycle.sampling_ns, cycle.law_ns, t4 - t3, t5 - t4,
                            t3 - t0 - cycle.sampling_ns - cycle.law_ns)

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
        self.state_pub.publish(m)
        j = self.jtc_msg
        j.header.stamp.sec, j.header.stamp.nanosec = m.header.stamp.sec, m.header.stamp.nanosec
        self.jtc_pub.publish(j)

    def watchdog(self) -> None:
        """Steady-clock watchdog: the safe output on stale states, and the mode published while idle."""
        with self._lock:
            self._watchdog()

    def _watchdog(self) -> None:
        self.core.take_pending(None)
        if self.core.ctx is None or self.core.q is None:
            if time.monotonic() - self.mode_wall > 1.0:
                self._publish_state(None)
            return
        if not self.core.is_stale(time.monotonic()):
            return
        if self.core.stale_behavior == "gravity_hold":
            self._publish(self.core.holding_torque(), hold=True)
        self._publish_state(None)

    def _publish(self, tau: np.ndarray, *, hold: bool = False) -> Float64MultiArray | None:
        """Publish ``tau`` (model order) if finite, clipped to the effort limits, in a new message (the safety
        path: stale hold, shutdown); returns the message."""
        ctx = self.core.ctx
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

    def on_shutdown(self) -> None:
        """Last holding command: gravity torques at the last measured position (the loop stopped first)."""
        self._stop_loop.set()
        if self._loop_thread is not None and self._loop_thread.is_alive():
            self._loop_thread.join(timeout=1.0)
        self.core.goal = None
        self.action.close("the controller is shutting down: holding the last position")
        self.trajectory_worker.stop()
        self.model_worker.stop()
        self.pose_worker.stop()
        if self.core.ctx is not None and self.core.q is not None:
            self._publish(self.core.holding_torque(), hold=True)
            self.get_logger().info("sent the holding command")
        if self._input_node is not None:
            self._input_node.destroy_node()
            self._input_node = None


def _never_called(msg: object) -> None:
    """Callback of the loop's input subscriptions: no executor spins their node (the loop takes them)."""


def main(args: list[str] | None = None) -> int:
    return run_node(ComputedTorqueControllerNode, args)


# the node, and the names other modules read here (the schema: tools/parameter_tables.py; the preload: benches)
__all__ = ["JOINT_PARAMETERS", "PARAMETERS", "PRELOAD", "ComputedTorqueControllerNode", "LoopStatistics", "joint_parameters",
           "main", "pose_guard"]

if __name__ == "__main__":
    raise SystemExit(main())

