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
  then the ``stale_behavior`` (``gravity_hold``: the arm braked to rest, then gravity torques at
  the last position, for at most ``stale_hold_timeout`` s, then nothing: the drive's command
  timeout applies; ``none``); every transition is logged and published at once.  Coming back from ``stale``, after a time
  jump (clock or stamps going back, or leaping forward) the running trajectory is dropped and
  the arm holds where it is; the law's internal state is reset.
* **Outputs**: every command is finite and within the effort limits, or it is not sent.
* **Lockstep** (``trigger: state``): one command per new state stamp, labelled with it
  (:mod:`.lockstep`); a repeated stamp gets the same command again, never a second law cycle.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
import time

import numpy as np
from control_msgs.msg import JointTrajectoryControllerState, SpeedScalingFactor
from geometry_msgs.msg import PoseStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import SetDynamicParameters

from ..model.robot_model import RobotModel
from ..safety import limit_guard as lg
from . import cdr
from .command_interfaces import check_mode, interface_set
from .controller.actions import Actions
from .controller.context import (
    Context,
    build_context,
)
from .controller.core import STALE, TRACKING, ControlCore
from .controller.inputs import Inputs
from .controller.loop import CLOCK_OVERRIDE_NS, LoopInput
from .controller.parameters import CONTEXT_PARAMETERS, JOINT_PARAMETERS, PARAMETERS, joint_parameters, jtc_ignored
from .controller.pose import pose_guard
from .controller.reporting import Reporting
from .controller.statistics import LoopStatistics
from .description import RobotDescription
from .diagnostics import DiagnosticsPublisher
from .request_gate import reader_memory_profile, trim_for
from .runtime import LatestWorker, Refusals, run_node
from .trajectory_action import (
    FollowJointTrajectoryServer,
)

# modules the run-time paths import lazily (a swap's base parameters: sympy; a pose reference's inverse kinematics;
# a description update's URDF parser; quaternions): imported at start-up, never beside the running loop — an import
# holds the GIL for tens of ms at a time (the first identified-parameter swap held the loop 45-64 periods on a
# loaded host); ``~/statistics`` lists any module imported after the first model was in use
PRELOAD = ("sympy", "robot_dynamics.dynamics.base_parameters", "robot_dynamics.dynamics.dynamic_terms",
           "robot_dynamics.kinematics.redundancy", "robot_dynamics.kinematics.analytic_ik",
           "robot_dynamics.model.urdf_conversion", "scipy.spatial.transform", "yaml")


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


class ComputedTorqueControllerNode(LoopInput, Inputs, Actions, Reporting, Node):

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
                                stale_hold=v["stale_hold_timeout"], stale_goal_timeout=v["stale_goal_timeout"],
                                resume_tolerance=v["start_tolerance"],
                                motor_topic=v["motor_states_topic"])
        self._lock = self.core.lock
        self.mode_wall = 0.0
        self._last_answer: tuple[float, Float64MultiArray] | None = None
        window = v["statistics_window"]
        self.stats = LoopStatistics(max(100, min(10_000_000, round(window * self.rate))))
        self.cycle = 0
        self._extremes: tuple[RobotModel, lg.Extremes] | None = None
        self._last_swap: tuple[tuple, object] | None = None  # (names and values, the context built) of ~/set_dynamic_parameters
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
        # position / velocity drives (command_interfaces): set points on their own topics, the effort a feed-forward
        self.interfaces = interface_set(v["command_interfaces"])
        self.servo_out = self.interfaces != ("effort",)
        check_mode(self.interfaces, lockstep=self.trigger == "state", command_space=v["command_space"])
        self.set_point_pubs = {k: self.create_publisher(Float64MultiArray, f"{v[k + '_controller']}/commands", 10)
                               for k in ("position", "velocity") if k in self.interfaces}
        self.velocity_kp = v["velocity_kp"]
        self.core.feed_forward_only = self.servo_out
        # lockstep: one state per cycle, deep enough that a recorder never loses one (20 s at 500 Hz: a recorder
        # starved by a busy host lost 153 of 1001 cycles when this held 2 s)
        depth = 10000 if self.trigger == "state" else 100
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
        # JTC's speed scaling (transient local, as JTC's: a latched factor applies to a restarted controller)
        self.core.clock.configure(v["speed_scaling.initial_scaling_factor"], v["speed_scaling.ramp_time"])
        self.core.effort_scaling.enabled = v["speed_scaling.dynamics_aware"]
        self.core.effort_scaling.margin = v["speed_scaling.effort_margin"]
        self.create_subscription(SpeedScalingFactor, "~/speed_scaling_input", self.on_speed_scaling,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        # goals are counted before rclpy converts them (a huge goal would hold the GIL from the loop for seconds)
        self.action = FollowJointTrajectoryServer(
            self, v["action_monitor_rate"], max_points=lambda: self.max_points,
            on_oversize=self._goal_too_large)
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


    # -------------------------------------------------------------- setup
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        """Executor thread: the per-joint parameters of the model's joints declared (JTC's ``gains.<joint>.*``,
        ``constraints.<joint>.*``; start values from the node's parameters), then the context built in the worker."""
        try:
            self.params.extend(self, [p for j in model.joint_names for p in joint_parameters(j)])
        except ValueError as exc:
            self.get_logger().error(f"robot model not used: per-joint parameter {exc}")
            return
        if not getattr(self, "_jtc_warned", False):  # once: JTC parameters given that a torque controller ignores
            self._jtc_warned = True
            for text in jtc_ignored(set(self._parameter_overrides), model.joint_names):
                self.get_logger().warning(f"JTC parameter {text}")
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
            self.core.stale_hold = values["stale_hold_timeout"]
            self.core.clock.ramp_time = values["speed_scaling.ramp_time"]
            self.core.effort_scaling.enabled = values["speed_scaling.dynamics_aware"]
            self.core.effort_scaling.margin = values["speed_scaling.effort_margin"]
            self.max_points = values["max_trajectory_points"]
            self.start_tolerance = self.core.resume_tolerance = values["start_tolerance"]
            self.core.stale_goal_timeout = values["stale_goal_timeout"]
            self.core.pose_margin = values["pose_limit_margin"]
            self.velocity_kp = values["velocity_kp"]
        self.get_logger().info(f"parameters set: {changes}" + (" (applied at the next cycle)" if rebuild else ""))


    # ------------------------------------------------------------ inputs


    # ------------------------------------------------------------ action


    # --------------------------------------------------------- diagnostics


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
            if self.servo_out:
                answer = self._publish_set_points(ctx, core.q, cycle)
            else:
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
        wall = time.monotonic()
        if not self.core.is_stale(wall):
            return
        tau = self.core.stale_output(wall)  # gravity hold (None: braking in the loop, behaviour none, hold ended)
        if tau is not None:
            self._publish(tau, hold=True)
        self._publish_state(None)

    def _goal_too_large(self, why: str) -> None:
        """A goal refused by its point count: counted with its cause; the C take's buffers, freed by the DDS layer
        shortly after, go back to the system (the node's RSS back to its value before)."""
        self.refusals.refuse("too_large", f"~/follow_joint_trajectory: {why}")
        trim_for()

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


def main(args: list[str] | None = None) -> int:
    reader_memory_profile()  # before rclpy creates the participant: a huge goal's buffers freed once taken
    return run_node(ComputedTorqueControllerNode, args)


# the node, and the names other modules read here (the schema: tools/parameter_tables.py; the preload: benches)
__all__ = ["JOINT_PARAMETERS", "PARAMETERS", "PRELOAD", "ComputedTorqueControllerNode", "LoopStatistics", "joint_parameters",
           "main", "pose_guard"]

if __name__ == "__main__":
    raise SystemExit(main())

