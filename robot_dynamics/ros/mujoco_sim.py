"""Node ``mujoco_sim``: a MuJoCo-simulated arm with the topic interface of ros2_control and the safety of a drive.

Interface
* publishes ``joint_states`` (``sensor_msgs/JointState``, reliable, depth 10, like joint_state_broadcaster:
  name, position, velocity, effort = the *applied* effort, see below) and ``/clock`` (sim time);
* takes efforts from ``<effort_controller>/commands`` (``std_msgs/Float64MultiArray``, ``joints`` order, like
  ForwardCommandController) — joint efforts, or with ``command_space: motor`` motor torques τ_m mapped to
  Γ = J_qm⁻ᵀ τ_m through the robot's ``transmissions.*`` parameters (001 eq. 7.33); a robot with transmissions
  also gets ``~/motor_states`` (``sensor_msgs/JointState``, names ``<joint>_motor``: q_m, q̇_m and the applied
  τ_m = J_qmᵀ Γ, 001 eqs. 7.31-7.33), and its plant carries the coupled rotor inertias exactly;
* publishes ``~/drive_state`` (``std_msgs/String``, reliable, depth 1, transient local) on every transition:
  ``braked: waiting for the first command``, ``running``, ``braked: command timeout``, ``zero torque: command
  timeout``, ``damped: command timeout``, ``braked: fault: simulation diverged (call ~/reset)``;
* serves ``~/pause`` (``std_srvs/SetBool``: stop stepping and publishing, to test stale states), ``~/reset``
  (``std_srvs/Trigger``: a sim restart, see below) and ``~/statistics`` (``std_srvs/Trigger``: JSON counters of
  commands received, applied, clipped, refused by cause, ignored by reason, drive transitions, and in real time
  the longest run of control periods the arm ran on one command once driven, ``periods_on_one_command``: 1
  when every period brings a fresh command, since start and since the previous call; and each run of
  ``GAP_PERIODS`` or more since the previous call with the sim time it ended, ``long_runs_on_one_command``);
* publishes ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``, every ``diagnostic_period`` s of steady clock,
  :mod:`.diagnostics`): the drive state (running: OK; braked waiting for a command, command timeout, no model:
  WARN; fault: ERROR; paused: STALE), steps, command counters, the achieved real-time factor and state rate.

The drive (both modes)
* **Holding brake until a controller takes over**: from start-up (and after ``~/reset``) the arm is braked (position
  kept exactly, velocity 0, :meth:`~robot_dynamics.sim.simulator.MujocoArm.hold`) until the first valid command.
* **Command validation at the boundary**: a command of the wrong length or with a non-finite value is refused (logged
  with its cause, rate-limited, counted) and does not count as a command (it neither releases the brake nor feeds the
  watchdog); a valid command is clipped to the URDF effort limits, as a drive saturates (counted, logged rate-limited).
* **Watchdog** (real-time mode): if no valid command arrived for ``command_timeout`` s (default 0.05 s = 25 periods
  at 500 Hz; 0 disables it), the drive applies ``timeout_behavior``: ``brake`` (default: holding brake), ``zero``
  (zero torque: the arm falls) or ``damp`` (effort ``-timeout_damping * q̇`` per simulation step, clipped to the
  effort limits).  With system-clock stamps (mock hardware, as a drive) the time is the steady clock, the timeout
  confirmed on two successive periods, so that a command already queued behind the sim's own timer is taken first
  (stop latency at most ``command_timeout`` + 2 periods of the sim's timer); with ``/clock`` it is sim time, the
  control periods the arm ran on one command (a sim starved by its host does not trip it: nothing advanced, and
  its controllers cannot answer a clock it did not publish).  A valid command releases the brake (the controller
  takes over again).
* **Applied effort** in ``joint_states``: the clipped command while running; while braked, the effort the brake
  exerts (gravity at the held position, the motor being off); 0 under ``zero``; the damping effort under ``damp``.
* **Fault**: if MuJoCo flags a diverging state, the pre-step state is restored and braked, latched until ``~/reset``.
* Every transition is logged with its cause and published on ``~/drive_state``.

Time
* ``lockstep: false``: real time (``real_time_factor``) on a wall-clock timer, zero-order hold of the latest command;
  time (``/clock`` and the state stamps) advances and states are published every period, braked or not.
* ``lockstep: true`` (:mod:`robot_dynamics.ros.lockstep`): the arm advances exactly one ``control_period`` per
  command that answers its latest state (label ``state_stamp_ns=<stamp>``) or per unlabelled command; labelled answers
  to other stamps (late, duplicate) and ``hold`` commands are ignored (counted).  Time never advances without an
  answer: the arm is frozen, which is safe, so the watchdog does not apply.  While waiting, the latest state is
  republished unchanged (same stamp, same noise sample) every ``lockstep_timeout`` wall seconds (every 0.1 s before
  the first command, for late joiners), so a controller that lost a message can answer again.  The sequence of states
  is a deterministic function of the commands.
* ``~/reset``: arm back to ``initial_positions`` at rest, sim time 0 (the stamps jump back), measurement noise
  reseeded (a reset run repeats a fresh start), brake engaged until the next command.
"""

from __future__ import annotations

import collections
import threading
import time
from collections import Counter
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from ..dynamics.elastic import ElasticJoints
from ..model.inertia import with_payload
from ..model.robot_model import RobotModel
from ..sim.simulator import MujocoArm, PlantDiverged, perturbed
from . import lockstep as protocol
from .description import RobotDescription
from .diagnostics import DiagnosticsPublisher
from .mujoco_sim_services import BRAKED, DAMPED, FAULT, RUNNING, ZERO, SimServices
from .mujoco_sim_servo import ServoDrive
from .parameter_files import load_schema
from .runtime import PolledSubscription, Refusals, Refused, guarded, run_node

DRIVE_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
BEHAVIORS = ("brake", "zero", "damp")
FIRST_REPUBLISH = 0.1  # s wall: republish period before the first command in lockstep
LOCKSTEP_TICK = 0.02  # s wall: how often lockstep checks whether to republish
COMMAND_POLL_BACKSTOP = 1.0  # s: the command reader's own thread takes what no tick took (the ticks take them all)

# drive modes and what ~/drive_state says in each
WAITING = "waiting for the first command"
TIMEOUT = "command timeout"
DIVERGED = "simulation diverged (call ~/reset)"
_ON_TIMEOUT = {"brake": BRAKED, "zero": ZERO, "damp": DAMPED}


GAP_PERIODS = 5  # a run of this many control periods on one command is kept in the statistics' history
GAP_HISTORY = 1000  # the most recent runs kept between two ~/statistics calls

PARAMETERS = load_schema("mujoco_sim")  # mujoco_sim.yaml in robot_dynamics/ros/schemas (types, defaults, ranges, units)


def _stamp(t: float) -> Time:
    ns = round(t * 1e9)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class _Notices:
    """Rate-limited warnings by key, with counters (for events that are not refusals: clipping)."""

    def __init__(self, node: Node, period: float = 5.0) -> None:
        self.node = node
        self.period = period
        self.counts: Counter[str] = Counter()
        self._last: dict[str, float] = {}

    def notice(self, key: str, text: str) -> None:
        self.counts[key] += 1
        now = time.monotonic()
        if now - self._last.get(key, -np.inf) >= self.period:
            self._last[key] = now
            n = self.counts[key]
            self.node.get_logger().warning(f"{text}{f' ({n} so far)' if n > 1 else ''}")


def pause_due(t0: float, t1: float, at: float) -> bool:
    """Whether a period from sim time ``t0`` to ``t1`` reaches ``pause_at_time`` ``at`` (0: never): the period that
    ends at or past it (1 ns of rounding forgiven at its end), not one that started there."""
    return at > 0.0 and t0 + 1e-9 < at <= t1 + 1e-9


class MujocoSim(ServoDrive, SimServices, Node):
    # rclpy's EventsExecutor (runtime.run_node): the 500 Hz timer and command callbacks without rebuilding a wait set
    # per callback; an idle rx90 arm under a holding controller took 0.61 cores with the single-threaded executor,
    # 0.34 with this one (every callback takes ``self.lock``, so their order is all that matters)
    executor_kind = "events"
    def __init__(self) -> None:
        super().__init__("mujoco_sim")
        self.refusals = Refusals(self)
        self.notices = _Notices(self)
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.params = PARAMETERS.copy()
        v = self.params.declare(self)
        self.period = v["control_period"]
        self.timestep = v["timestep"]
        self.substeps = max(1, round(self.period / self.timestep))
        if abs(self.substeps * self.timestep - self.period) > 1e-12:
            raise ValueError("control_period must be a multiple of timestep")
        self.rtf = v["real_time_factor"]
        self.model_error = v["model_error"]
        self.noise_q = v["noise_q"]
        self.seed = v["seed"]
        self.lockstep = v["lockstep"]
        self.command_timeout = v["command_timeout"]
        self.timeout_damping = v["timeout_damping"]
        self.lockstep_timeout = v["lockstep_timeout"]
        self.stamp_system = v["stamp_time"] == "system"
        if self.stamp_system and self.lockstep:
            raise ValueError("stamp_time system needs lockstep false (lockstep answers are matched to sim-time stamps)")
        self.timeout_behavior = v["timeout_behavior"]

        self.paused = v["start_paused"]
        self.pause_at_time = v["pause_at_time"]
        self.arm: MujocoArm | None = None
        self.model: RobotModel | None = None
        self.command = np.zeros(0)
        self.hold_effort = np.zeros(0)
        self.mode, self.reason = BRAKED, "no robot model yet"
        self.transitions = 0
        self.last_valid_wall = -np.inf
        self.overdue = False
        self.last_publish_wall = -np.inf
        self.latest_stamp_ns = -1
        self.steps = 0
        self.published = 0  # joint_states messages sent (for the state rate of /diagnostics)
        # what the arm got: periods run on one command while driven (1 when every period brings a fresh one),
        # the longest stretch since start and since the last ~/statistics call (with the sim time it ended)
        self.on_one_command = 0
        self.commanded = False
        self.longest = {"since_start": (0, 0.0), "since_last_call": (0, 0.0)}
        self.gaps: collections.deque[tuple[float, int]] = collections.deque(maxlen=GAP_HISTORY)
        # the same runs as seen on the steady clock: [sim time, periods, wall time since the previous command (ms),
        # the longest wall time between two periods of the run (ms)]: a run the sim's own stall made, or the commands'
        self.gap_walls: collections.deque[tuple[float, int, float, float]] = collections.deque(maxlen=GAP_HISTORY)
        self.longest_tick_gap = 0.0
        self.last_tick_wall: float | None = None
        self.msg = JointState()
        self.motor_msg: JointState | None = None  # ~/motor_states when the robot has transmissions
        self.command_space = v["command_space"]
        self.clock_msg = Clock()

        self.drive_pub = self.create_publisher(String, "~/drive_state", DRIVE_QOS)
        # the writer keeps what a slow reliable reader (a recorder, the identifier) has not acknowledged yet: keep-last
        # overwrites the oldest sample for everyone, so a deep history loses nothing to a reader starved for a
        # while (lockstep: every state of a recording, 20 s of sim time at 500 Hz; 10000 states ~ 2 MB)
        self.state_pub = self.create_publisher(JointState, "joint_states", 10_000 if self.lockstep else 100)
        # motor side of the transmissions (001 eqs. 7.31-7.33): q_m, q̇_m and the applied τ_m = J_qmᵀ Γ
        self.motor_pub = self.create_publisher(JointState, "~/motor_states", 10)
        publish_clock = v["publish_clock"] and not self.stamp_system
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if publish_clock else None
        topic = f"{v['effort_controller']}/commands"
        self._setup_servo(v)  # position/velocity drives (command_interfaces)
        self.command_poll = None
        takes_effort = "effort" in self.interfaces  # position / velocity drives only: no effort input at all
        if takes_effort and self.lockstep:  # a command steps the arm at once: dispatched as it arrives
            self.create_subscription(Float64MultiArray, topic, self.on_command, 10)
        elif takes_effort:  # real time: the commands waiting are taken at each tick (the arm holds the latest between two ticks
            # anyway), not dispatched one by one by the executor: 0.15 of a core less beside a 500 Hz controller
            self.command_poll = PolledSubscription(self, Float64MultiArray, topic, QoSProfile(depth=10),
                                                   self.on_command, COMMAND_POLL_BACKSTOP)
        self.create_service(SetBool, "~/pause", self.on_pause)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        self._publish_drive_state()
        self.description = RobotDescription(self, self._on_model)
        if self.lockstep:
            self.timer = self.create_timer(LOCKSTEP_TICK, self.on_lockstep_timer)
        else:
            self.timer = self.create_timer(self.period / self.rtf, self.on_timer)
        self.params.attach(self, self._apply_parameters)
        self._diag_last = (0, 0.0, 0)  # steps, sim time, publications at the previous /diagnostics
        self.diagnostics = DiagnosticsPublisher(self, "drive", self._diagnostics,
                                                lambda: self.model.name if self.model is not None else "")
        self.get_logger().info(
            f"{'lockstep' if self.lockstep else 'real time'}: control period {self.period * 1e3:.1f} ms, "
            f"{self.substeps} x {self.timestep * 1e3:.2f} ms steps; {' + '.join(self.interfaces)} commands ("
            f"{self.resolve_topic_name(topic) if 'effort' in self.interfaces else 'set points'}); "
            f"watchdog {self._watchdog_text()}"
        )

    # ------------------------------------------------------------------ parameters
    def _apply_parameters(self, changes: dict[str, Any]) -> None:
        """Run-time changes accepted by the schema (the watchdog's settings): applied under the sim's lock."""
        with self.lock:
            for name, value in changes.items():
                setattr(self, name, value)
        self.get_logger().info(f"parameters set: {changes}; watchdog {self._watchdog_text()}")

    def _watchdog_text(self) -> str:
        if self.lockstep:
            return "off in lockstep (no answer, no motion)"
        if self.command_timeout <= 0:
            return "disabled (command_timeout 0)"
        return f"{self.command_timeout * 1e3:.0f} ms -> {self.timeout_behavior}"

    # ------------------------------------------------------------------ model
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        try:
            self._load_model(model)
        except Exception as exc:  # noqa: BLE001 - a bad description must not kill the node
            self.get_logger().error(f"cannot simulate this robot: {exc}")

    def _load_model(self, model: RobotModel) -> None:
        joints = list(self.params.values["joints"]) or list(model.joint_names)
        if sorted(joints) != sorted(model.joint_names):
            raise ValueError(f"joints {joints} do not match the model {model.joint_names}")
        plant = perturbed(model, self.model_error, self.seed) if self.model_error > 0 else model
        v = self.params.values
        if v["payload"] > 0:
            plant = with_payload(plant, v["payload"], v["payload_com"] or (0.0, 0.0, 0.0), v["payload_link"] or None)
            self.get_logger().info(f"the simulated arm carries {v['payload']:g} kg on "
                                   f"{v['payload_link'] or model.tip_link} (not in the controllers' model)")
        friction = {k: np.asarray(v[p], float) for k, p in (("Foff", "plant_friction_offset"),
                    ("Fs", "plant_static_friction"), ("vs", "plant_stribeck_velocity")) if len(v[p])}
        for k, x in friction.items():
            if x.shape != (model.dof,):
                raise ValueError(f"{k} of the plant must have {model.dof} values, got {x.tolist()}")
        if friction:  # the plant's extra friction (core MujocoArm), not in the controllers' model
            plant = plant.replace(**friction)
            self.get_logger().info(f"the simulated arm's friction: {({k: x.tolist() for k, x in friction.items()})}")
        elastic = None
        if len(v["plant_joint_stiffness"]):  # the motors of 7.34-7.35 replace the rotor inertias Ia of the joints
            k, ia = (np.asarray(v[p], float) for p in ("plant_joint_stiffness", "plant_motor_inertia"))
            elastic = ElasticJoints(stiffness=k[0] if k.size == 1 else k,
                                    motor_inertia=None if ia.size == 0 else (ia[0] if ia.size == 1 else ia))
            self.get_logger().info(f"the simulated arm has elastic joints: stiffness {k.tolist()}, motor inertia "
                                   f"{ia.tolist() or 'Ia of the model'} (not in the controllers' model)")
        arm = MujocoArm(plant, timestep=self.timestep, noise_q=self.noise_q, rng=self.seed, elastic=elastic)
        q0 = self.params.values["initial_positions"]
        q0 = np.zeros(model.dof) if len(q0) == 0 else np.asarray(q0, float)
        if q0.shape != (model.dof,) or not np.all(np.isfinite(q0)):
            raise ValueError(f"initial_positions must be {model.dof} finite values, got {list(q0)}")
        lim = model.limits
        if np.any(q0 < lim["lower"]) or np.any(q0 > lim["upper"]):
            self.get_logger().warning(f"initial_positions {q0.tolist()} are outside the joint limits")
        with self.lock:
            if self.command_space == "motor" and model.transmission is None:
                raise ValueError("command_space motor needs the robot's transmissions (transmissions.gear_ratio ...)")
            self.arm, self.model, self.joints, self.q0 = arm, model, joints, q0
            self._servo_model()
            self.motor_msg = None if model.transmission is None and arm.elastic is None else JointState(
                name=[f"{j}_motor" for j in model.joint_names])
            self.cmd_to_model = np.array([joints.index(j) for j in model.joint_names])
            self.limit = arm.effort_limit
            self.msg = JointState(name=list(model.joint_names))
            self._restart(f"robot {model.name!r} loaded")

    def _restart(self, why: str) -> None:
        """Arm at rest at ``q0``, time 0, noise reseeded, braked until the next command (lock held)."""
        self.arm.reset(self.q0)
        self.arm.rng = np.random.default_rng(self.seed)
        self.command = np.zeros(self.model.dof)
        self.steps = 0
        self.overdue = False
        self.commanded, self.on_one_command = False, 0  # braked until a controller takes over again
        self.q_cmd = self.qd_cmd = None  # the set points of before do not survive a restart
        self._set_drive(BRAKED, WAITING, f"{WAITING} ({why})", force=True)
        self._measure()
        if not self.paused:
            self._publish()

    # ------------------------------------------------------------------ drive
    def _set_drive(self, mode: str, reason: str, why: str, *, force: bool = False) -> None:
        if (mode, reason) == (self.mode, self.reason) and not force:
            return
        was = self.mode
        self.mode, self.reason = mode, reason
        self.transitions += 1
        if mode in (BRAKED, FAULT):
            self.hold_effort = self.arm.holding_effort()
        log = self.get_logger()
        if mode == RUNNING:
            log.info(f"brake released: {why}" if was in (BRAKED, FAULT) else f"running: {why}")
        elif mode == BRAKED and reason == WAITING:  # start-up, reset: the normal way in
            log.info(f"brake engaged: {why}")
        elif mode in (BRAKED, FAULT):
            log.warning(f"brake engaged: {why}" if mode == BRAKED else f"fault, brake engaged: {why}")
        else:
            log.warning(f"{mode}: {why}")
        self._publish_drive_state()

    def drive_state(self) -> str:
        if self.mode == RUNNING:
            return RUNNING
        if self.mode == FAULT:
            return f"{BRAKED}: fault: {self.reason}"
        return f"{self.mode}: {self.reason}"

    def _publish_drive_state(self) -> None:
        self.drive_pub.publish(String(data=self.drive_state()))

    def _validate(self, msg: Float64MultiArray) -> np.ndarray:
        """The command in model order, clipped to the effort limits; :class:`Refused` if unusable."""
        if self.arm is None:
            raise Refused("no_model", "command before the robot model is known: dropped")
        n = len(msg.data)
        if n != self.model.dof:
            raise Refused("command_length", f"command of length {n}, expected {self.model.dof} {self.joints}: dropped")
        data = np.array(msg.data, dtype=float)
        if not np.all(np.isfinite(data)):
            raise Refused("command_nonfinite", "command with a non-finite value: dropped (the watchdog is not fed)")
        tau = data[self.cmd_to_model]
        if self.command_space == "motor":  # Γ = J_qm^-T τ_m (001 eq. 7.33)
            tau = self.model.transmission.joint_torques(tau)
        clipped = np.clip(tau, -self.limit, self.limit)
        if np.any(clipped != tau):
            self.counts["clipped"] += 1
            over = [f"{j} {t:.4g} -> {c:.4g}" for j, t, c in zip(self.model.joint_names, tau, clipped, strict=True)
                    if t != c]
            self.notices.notice("clipped", f"command clipped to the effort limits: {', '.join(over)}")
        return clipped

    @guarded()
    def on_command(self, msg: Float64MultiArray) -> None:
        with self.lock:
            self.counts["received"] += 1
            tau = self._validate(msg)
            if self.lockstep:
                label = protocol.answered(msg)
                if label == protocol.HOLD:
                    self.counts["ignored_hold"] += 1
                    return
                if label is not None and label != self.latest_stamp_ns:
                    self.counts["ignored_other_stamp"] += 1
                    return
                if self.paused:
                    self.counts["ignored_paused"] += 1
                    return
            self.command = tau
            self._fed()

    def _fed(self) -> None:
        """A valid command taken (lock held): counted, the watchdog fed, the brake released; lockstep: one period."""
        self.counts["applied"] += 1
        now_wall = time.monotonic()
        if self.on_one_command >= GAP_PERIODS and self.arm is not None:
            self.gaps.append((round(self.arm.time, 6), self.on_one_command))
            self.gap_walls.append((round(self.arm.time, 6), self.on_one_command,
                                   round((now_wall - self.last_valid_wall) * 1e3, 1),
                                   round(self.longest_tick_gap * 1e3, 1)))
        self.on_one_command = 0
        self.longest_tick_gap = 0.0
        self.commanded = True
        self.last_valid_wall = now_wall
        self.overdue = False
        if self.mode not in (RUNNING, FAULT):
            self._set_drive(RUNNING, "", "command received, the controller has taken over"
                            if self.reason == WAITING else "commands are back, the controller takes over")
        if self.lockstep:
            self._advance()
            self._measure()
            self._publish()

    @guarded()
    def on_timer(self) -> None:
        """Real time: the commands that arrived, watchdog, one control period, publish."""
        if self.command_poll is not None:  # each through on_command (validated, counted), before the lock is taken
            self.command_poll.drain()
        with self.lock:
            if self.arm is None or self.paused:
                return
            if self.mode == RUNNING and self.command_timeout > 0:
                if self.clock_pub is not None:
                    # sim time (/clock): the arm's own time is what passes without a command; a sim starved by
                    # its host advances nothing meanwhile, and its controllers cannot answer a clock it did not
                    # publish, so the steady clock would trip on the sim's own stalls
                    silent = self.on_one_command * self.period
                    if silent >= self.command_timeout:
                        self._set_drive(_ON_TIMEOUT[self.timeout_behavior], TIMEOUT,
                                        f"{TIMEOUT}: no valid command for {silent * 1e3:.1f} ms of sim time "
                                        f"(command_timeout {self.command_timeout * 1e3:.1f} ms)")
                else:
                    silent = time.monotonic() - self.last_valid_wall
                    if silent > self.command_timeout:
                        if self.overdue:  # second period in a row: commands queued at the first were taken meanwhile
                            self._set_drive(_ON_TIMEOUT[self.timeout_behavior], TIMEOUT,
                                            f"{TIMEOUT}: no valid command for {silent * 1e3:.1f} ms "
                                            f"(command_timeout {self.command_timeout * 1e3:.1f} ms)")
                        self.overdue = True
                    else:
                        self.overdue = False
            self._advance()
            tick = time.monotonic()
            if self.last_tick_wall is not None:
                self.longest_tick_gap = max(self.longest_tick_gap, tick - self.last_tick_wall)
            self.last_tick_wall = tick
            if self.commanded:  # a controller took over: every period counts until its next command, braked or not
                self.on_one_command += 1
                for k, (n, _) in self.longest.items():
                    if self.on_one_command > n:
                        self.longest[k] = (self.on_one_command, self.arm.time)
            self._measure()
            self._publish()

    @guarded()
    def on_lockstep_timer(self) -> None:
        """Lockstep: republish the latest state (same stamp) while no answer comes."""
        with self.lock:
            if self.arm is None or self.paused:
                return
            period = FIRST_REPUBLISH if self.reason == WAITING else self.lockstep_timeout
            if time.monotonic() - self.last_publish_wall >= period:
                self.counts["republished"] += 1
                self._publish()

    def _advance(self) -> None:
        """One control period in the current drive mode (lock held); paused once the period reaches
        ``pause_at_time`` (its state still measured and published by the caller)."""
        t0 = self.arm.time
        self._step_drive()
        if pause_due(t0, self.arm.time, self.pause_at_time):
            self.paused = True
            self.get_logger().info(f"simulation paused at t = {self.arm.time:.6f} s (pause_at_time "
                                   f"{self.pause_at_time:g}); ~/pause false resumes it")

    def _step_drive(self) -> None:
        arm = self.arm
        self.steps += 1
        if self.mode in (BRAKED, FAULT):
            arm.hold(self.substeps)
            return
        before = arm.state(noisy=False)
        try:
            if self.mode == RUNNING and self.servo:
                self._servo_advance()
            elif self.mode == RUNNING:
                arm.step(self.command, n_steps=self.substeps)
            elif self.mode == ZERO:
                arm.step(np.zeros(arm.dof), n_steps=self.substeps)
            else:  # DAMPED: the damping effort follows the velocity at every simulation step
                for _ in range(self.substeps):
                    arm.step(np.clip(-self.timeout_damping * arm.state(noisy=False).qd, -self.limit, self.limit))
        except PlantDiverged as exc:
            arm.reset(before.q, time=before.t)
            arm.hold(self.substeps)
            self._set_drive(FAULT, DIVERGED, f"{exc}; the state before the step is held until ~/reset")

    def _measure(self) -> None:
        """A new measurement of the arm (the noise is drawn here, once per state) into the state message."""
        t, q, qd, effort = self.arm.state()
        if self.mode in (BRAKED, FAULT):
            effort = self.hold_effort
        stamp = self.get_clock().now().to_msg() if self.stamp_system else _stamp(t)
        m = self.msg
        m.header.stamp = stamp
        m.position, m.velocity, m.effort = q.tolist(), qd.tolist(), effort.tolist()
        mm, tr = self.motor_msg, self.model.transmission
        if mm is not None:  # motor side: q_m = J_qm⁻¹ θ, q̇_m, τ_m = J_qmᵀ Γ (θ = q unless the joints are elastic)
            theta, thetad = (q, qd) if self.arm.elastic is None else self.arm.motor_state()
            mm.header.stamp = stamp
            if tr is None:
                mm.position, mm.velocity, mm.effort = theta.tolist(), thetad.tolist(), effort.tolist()
            else:
                mm.position = tr.motor_positions(theta).tolist()
                mm.velocity = tr.motor_velocities(thetad).tolist()
                mm.effort = tr.motor_torques(effort).tolist()
        self.clock_msg.clock = stamp
        self.latest_stamp_ns = protocol.stamp_ns(stamp)

    def _publish(self) -> None:
        """Publish the latest measurement (again, unchanged, when republishing) and the clock."""
        if self.clock_pub is not None:
            self.clock_pub.publish(self.clock_msg)
        self.state_pub.publish(self.msg)
        if self.motor_msg is not None:
            self.motor_pub.publish(self.motor_msg)
        self.last_publish_wall = time.monotonic()
        self.published += 1

    # ------------------------------------------------------------------ diagnostics

    # ------------------------------------------------------------------ services




def main(args: list[str] | None = None) -> int:
    return run_node(MujocoSim, args)


if __name__ == "__main__":
    raise SystemExit(main())
