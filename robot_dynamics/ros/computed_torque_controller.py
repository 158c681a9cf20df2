"""Node ``computed_torque_controller``: a joint-space dynamic controller next to ros2_control.

Python cannot be a ros2_control plugin, so this node talks to the topics of a
``forward_command_controller/ForwardCommandController`` (``interface_name: effort``):

* subscribes ``/joint_states`` (sensor-data QoS, joints mapped by name, only the latest sample kept);
* subscribes ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``, JTC semantics: a new
  trajectory replaces the current one; interpolation degree follows the filled fields);
* publishes ``/<effort_controller>/commands`` (``std_msgs/Float64MultiArray``, configured joint order)
  and ``~/controller_state`` (``robot_dynamics_interfaces/ControllerState``);
* serves ``~/statistics`` (``std_srvs/Trigger``): loop rate, jitter, mode and refusals as JSON.

Laws (parameter ``law``): ``computed_torque`` (001 eq. 9.22/9.24), ``position`` (9.29),
``predictive`` (9.31), ``pd_gravity`` (9.12), ``pid`` (9.5/9.10).

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

import gc
import json
import math
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics_interfaces.msg import ControllerState

from ..control import CONTROLLERS, JointController, make_controller
from ..model.robot_model import RobotModel
from ..trajectory.sampled import SampledTrajectory, check_path_limits
from . import lockstep, validation
from .description import RobotDescription
from .runtime import LatestWorker, Refusals, Refused, guarded, run_node

NO_MODEL, NO_STATE, STALE, HOLDING, TRACKING = (
    ControllerState.MODE_NO_MODEL, ControllerState.MODE_NO_STATE, ControllerState.MODE_STALE,
    ControllerState.MODE_HOLDING, ControllerState.MODE_TRACKING,
)


# serialized size bound of one trajectory point, checked before deserializing (generous: 40 joints x 4 fields)
MAX_BYTES_PER_POINT = 2048
MODEL_BUILD_WAIT = 120.0  # s a trajectory waits for the model being built (code generation on a cold cache)


class LoopStatistics:
    """Periods between control cycles (wall clock) and compute times, in a ring buffer."""

    def __init__(self, size: int = 20000) -> None:
        self.periods = np.full(size, np.nan)
        self.compute = np.full(size, np.nan)
        self.k = 0
        self.last: float | None = None

    def tick(self, start: float, compute_time: float) -> None:
        i = self.k % self.periods.size
        self.periods[i] = math.nan if self.last is None else start - self.last
        self.compute[i] = compute_time
        self.last = start
        self.k += 1

    def summary(self, nominal_period: float) -> dict[str, float]:
        p = self.periods[np.isfinite(self.periods)]
        c = self.compute[np.isfinite(self.compute)]
        if p.size == 0:
            return {"cycles": int(self.k)}
        err = np.abs(p - nominal_period)
        return {
            "cycles": int(self.k),
            "rate_hz": float(1.0 / p.mean()),
            "period_mean_ms": float(p.mean() * 1e3),
            "period_error_p50_ms": float(np.percentile(err, 50) * 1e3),
            "period_error_p99_ms": float(np.percentile(err, 99) * 1e3),
            "period_error_max_ms": float(err.max() * 1e3),
            "compute_mean_us": float(c.mean() * 1e6),
            "compute_p99_us": float(np.percentile(c, 99) * 1e6),
        }


def _with_gains(law: str, model: RobotModel, kp: np.ndarray, kd: np.ndarray, effort: np.ndarray | None,
                **kwargs) -> JointController:
    """A controller of ``law`` with explicit per-joint gains."""
    from ..control import ComputedTorqueController, PDGravityController, PredictiveController

    if law == "pd_gravity":
        return PDGravityController(model, kp, kd, effort_limit=effort, **kwargs)
    if law == "predictive":
        return PredictiveController(model, kp, kd, effort_limit=effort, **kwargs)
    return ComputedTorqueController(model, kp, kd, scheme="position" if law == "position" else "tracking",
                                    effort_limit=effort, **kwargs)


@dataclass(frozen=True)
class Context:
    """Everything the control cycle needs about the robot; replaced as a whole (never mutated)."""

    model: RobotModel
    controller: JointController
    joints: list[str]          # command order (parameter ``joints`` or the model's)
    to_cmd: np.ndarray         # model order -> command order
    index: validation.NameIndex
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class ComputedTorqueControllerNode(Node):

    def __init__(self) -> None:
        super().__init__("computed_torque_controller")
        dp = self.declare_parameter
        dp("joints", [""])
        dp("law", "computed_torque")
        dp("omega", 20.0)
        dp("xi", 1.0)
        dp("kp", [0.0])  # per joint; with kd, overrides omega/xi (computed_torque, position, predictive, pd_gravity)
        dp("kd", [0.0])
        dp("rate", 500.0)
        dp("effort_limits", [0.0])
        dp("state_timeout", 0.1)
        dp("stale_behavior", "gravity_hold")
        dp("effort_controller", "effort_controller")
        dp("trigger", "timer")
        dp("state_publish_divider", 1)
        # generated: the model's compiled customized NE (~1 µs; without a C compiler the generated scalar
        # Python one, ~5 µs), ready before the law's first cycle | numpy: the NumPy model
        dp("backend", "generated")
        dp("max_trajectory_points", 100_000)
        dp("start_tolerance", 0.1)  # a first point at t = 0 farther than this from the arm is refused
        self.law = self.get_parameter("law").value
        if self.law not in CONTROLLERS:
            raise ValueError(f"law must be one of {CONTROLLERS}, got {self.law!r}")
        self.stale_behavior = self.get_parameter("stale_behavior").value
        if self.stale_behavior not in ("none", "gravity_hold"):
            raise ValueError("stale_behavior must be 'none' or 'gravity_hold'")
        self.trigger = self.get_parameter("trigger").value
        if self.trigger not in ("timer", "state"):
            raise ValueError("trigger must be 'timer' or 'state'")
        self.rate = float(self.get_parameter("rate").value)
        self.timeout = float(self.get_parameter("state_timeout").value)
        if not (math.isfinite(self.rate) and 0 < self.rate <= 10_000):
            raise ValueError(f"rate must be in (0, 10000] Hz, got {self.rate}")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"state_timeout must be > 0 s, got {self.timeout}")
        self.period = 1.0 / self.rate
        self.divider = max(1, int(self.get_parameter("state_publish_divider").value))
        self.max_points = int(self.get_parameter("max_trajectory_points").value)
        self.start_tolerance = float(self.get_parameter("start_tolerance").value)
        # a leap of the control time larger than this is a time jump (sim restart, clock change)
        self.max_time_step = max(1.0, 2.0 * self.timeout)
        sys.setswitchinterval(0.0005)  # the control thread waits at most this long for the GIL

        self.refusals = Refusals(self)
        self.ctx: Context | None = None
        self._pending_ctx: Context | None = None
        self._pending_traj: tuple[SampledTrajectory, float | None, int] | None = None
        self.trajectory: SampledTrajectory | None = None
        self.trajectory_t0 = 0.0
        self.trajectories_accepted = 0
        self.hold: np.ndarray | None = None
        self.q: np.ndarray | None = None
        self.qd: np.ndarray | None = None
        self.state_stamp: float | None = None   # stamp of the last accepted state (s)
        self.state_wall: float | None = None    # steady time of its arrival
        self.last_now: float | None = None      # control time of the last cycle
        self.mode = NO_MODEL
        self.mode_reason = "waiting for the robot description"
        self.mode_wall = 0.0
        self._last_answer: tuple[float, Float64MultiArray] | None = None
        self.stats = LoopStatistics()
        self.cycle = 0

        # heavy input work (deserializing and checking a trajectory, building/compiling a model) runs in
        # worker threads: the single-threaded executor only ever runs short callbacks
        self._ctx_ready = threading.Event()
        self.trajectory_worker = LatestWorker(self.check_trajectory, "trajectory_check")
        self.model_worker = LatestWorker(self._build_model, "model_build")
        topic = f"/{self.get_parameter('effort_controller').value}/commands"
        self.cmd_pub = self.create_publisher(Float64MultiArray, topic, 10)
        # lockstep: one state per cycle, deep enough that a recorder never loses one
        self.state_pub = self.create_publisher(ControllerState, "~/controller_state",
                                               1000 if self.trigger == "state" else 100)
        self.state_msg = ControllerState(law=self.law)
        # sensor-data QoS keeps only the latest sample; state-triggered (lockstep) control must see every state
        state_qos = qos_profile_sensor_data if self.trigger == "timer" else 10
        self.create_subscription(JointState, "/joint_states", self.on_joint_states, state_qos)
        # raw: the executor thread only sees bytes; the worker deserializes and checks
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10, raw=True)
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        if self.trigger == "timer":
            self.timer = self.create_timer(self.period, self.step)
        # the watchdog runs on the steady clock: a paused simulation also stops /clock
        self.watchdog_timer = self.create_timer(self.timeout / 5, self.watchdog,
                                                clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.description = RobotDescription(self, self._on_model, lock_from_joint_states=True)
        self.get_logger().info(f"law {self.law}, {self.rate:.0f} Hz ({self.trigger}), commands on {topic}")

    # -------------------------------------------------------------- setup
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model_worker.put(model)

    def _build_model(self, model: RobotModel) -> None:
        """Worker: build the control context (may compile code) and hand it to the control cycle."""
        try:
            self._pending_ctx = self._build_context(model)
            self._ctx_ready.set()
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f"robot model not usable by the controller: {type(exc).__name__}: {exc}")

    def _build_context(self, model: RobotModel) -> Context:
        joints = [j for j in self.get_parameter("joints").value if j]
        if joints and sorted(joints) != sorted(model.joint_names):
            raise ValueError(f"parameter joints {joints} does not match the model joints {model.joint_names}")
        joints = joints or list(model.joint_names)
        limits = [v for v in self.get_parameter("effort_limits").value if v > 0]
        effort = np.array(limits, float) if limits else None
        backend = self.get_parameter("backend").value
        if backend == "generated":
            # the laws call model.inverse_dynamics: its program is built (or loaded from the cache) here, in the
            # model worker, never in a callback, and in use from the first cycle (no engine switch mid-run)
            model.compile("inverse_dynamics")
        elif backend == "numpy":
            model.set_backend("numpy")
        else:
            raise ValueError(f"backend must be 'generated' or 'numpy', got {backend!r}")
        kp = [v for v in self.get_parameter("kp").value if v > 0]
        kd = [v for v in self.get_parameter("kd").value if v > 0]
        if kp or kd:
            if len(kp) != model.dof or len(kd) != model.dof or self.law == "pid":
                raise ValueError(f"kp and kd need {model.dof} positive values each (not for law pid)")
            controller = _with_gains(self.law, model, np.array(kp), np.array(kd), effort)
        else:
            omega = float(self.get_parameter("omega").value)
            xi = float(self.get_parameter("xi").value)
            controller = make_controller(self.law, model, omega=omega, xi=xi, effort_limit=effort)
        lim = model.limits
        self.get_logger().info(f"dynamic model engine: {model.engine['inverse_dynamics']}")
        return Context(
            model=model, controller=controller, joints=joints,
            to_cmd=np.array([model.joint_names.index(j) for j in joints]),
            index=validation.NameIndex(model.joint_names),
            lower=np.asarray(lim["lower"], float), upper=np.asarray(lim["upper"], float),
            velocity=np.asarray(lim["velocity"], float), effort=controller.effort_limit.copy(),
        )

    def _take_pending(self, now: float | None) -> None:
        """At a cycle boundary: adopt a new model or an accepted trajectory (executor thread only)."""
        ctx = self._pending_ctx
        if ctx is not None:
            self._pending_ctx = None
            old = self.ctx
            self.ctx = ctx
            self.state_msg.joint_names = list(ctx.joints)
            self.trajectory = None
            if old is None or old.model.joint_names != ctx.model.joint_names:
                self.q = self.qd = self.hold = None
                self.state_wall = self.state_stamp = None
                self._transition(NO_STATE, f"robot model with {ctx.model.dof} joints; waiting for joint_states")
            else:
                self.hold = self.q
                ctx.controller.reset()
                self._transition(HOLDING, "new robot model: holding the current position")
        pending = self._pending_traj
        if pending is not None and self.ctx is not None and now is not None and self.q is not None:
            self._pending_traj = None
            traj, t0, points = pending
            t0 = now if t0 is None else t0
            if t0 + traj.duration < now:
                self.refusals.refuse("old_stamp", f"trajectory ended {now - t0 - traj.duration:.3f} s before it was taken")
                return
            self.trajectory, self.trajectory_t0 = traj, t0
            start = "now" if t0 <= now else f"in {t0 - now:.3f} s"
            self._transition(TRACKING, f"trajectory of {points} points, {traj.duration:.3f} s (degree {traj.degree}), "
                                       f"starts {start}")

    def _transition(self, mode: str, reason: str) -> None:
        """Enter ``mode`` (logged and published once per change)."""
        if mode == self.mode and reason == self.mode_reason:
            return
        changed = mode != self.mode
        self.mode, self.mode_reason = mode, reason
        # one call site per severity: rclpy refuses a call site whose severity changes
        if mode == STALE:
            self.get_logger().warning(f"mode {mode}: {reason}")
        else:
            self.get_logger().info(f"mode {mode}: {reason}")
        if changed or mode == TRACKING:
            self._publish_state(None)

    # ------------------------------------------------------------ inputs
    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        ctx = self.ctx
        if ctx is None:
            self._take_pending(None)
            ctx = self.ctx
            if ctx is None:
                return
        q, qd, stamp = validation.joint_state(msg, ctx.index)
        now_clock = self.now()
        if self.trigger == "state":
            # lockstep: the stamp is the control time (0 is a valid sim time)
            if self.state_stamp is not None and stamp == self.state_stamp and self._last_answer is not None:
                self.cmd_pub.publish(self._last_answer[1])  # the same answer again, never a second law cycle
                return
            self._accept_state(q, qd, stamp)
            self.step()
            return
        if stamp == 0.0:
            stamp = now_clock  # unstamped: the arrival time
        age = now_clock - stamp
        if age > self.timeout:
            raise Refused("stale_stamp", f"joint_states stamped {age:.3f} s in the past (state_timeout {self.timeout} s)")
        if age < -self.timeout:
            raise Refused("future_stamp", f"joint_states stamped {-age:.3f} s in the future")
        if self.state_stamp is not None and stamp < self.state_stamp and not self._clock_jumped(now_clock):
            raise Refused("out_of_order", "joint_states older than the last accepted one")
        self._accept_state(q, qd, stamp)

    def _accept_state(self, q: np.ndarray, qd: np.ndarray, stamp: float) -> None:
        self.q, self.qd = q, qd
        if self.trigger == "state" and self.state_stamp is not None:
            jump = stamp - self.state_stamp
            if jump < 0 or jump > self.max_time_step:
                self._hold_here(f"state stamps jumped by {jump:+.3f} s (restart?)")
        self.state_stamp = stamp
        self.state_wall = time.monotonic()
        if self.hold is None:
            self.hold = q.copy()

    def _clock_jumped(self, now: float) -> bool:
        return self.last_now is not None and now < self.last_now

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
        ctx = self.ctx or self._pending_ctx
        if ctx is None and self.model_worker.busy():  # the model is being built: wait for it (worker thread)
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.ctx or self._pending_ctx
        if ctx is None:
            raise Refused("no_model", "trajectory before the robot model")
        gc.disable()  # one burst of allocations: no collector pauses for the control thread meanwhile
        try:
            msg = deserialize_message(raw, JointTrajectory)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"trajectory message cannot be deserialized: {exc}") from None
        finally:
            gc.enable()
        data = validation.trajectory(msg, ctx.model.joint_names, self.max_points)
        q = self.q
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
            check_path_limits(traj, ctx.lower, ctx.upper, ctx.velocity, names=ctx.model.joint_names, start=start)
        except ValueError as exc:
            raise Refused("path_limits", str(exc)) from None
        eff = data["effort"]
        if eff is not None and np.any(np.abs(eff) > ctx.effort):
            k, j = np.argwhere(np.abs(eff) > ctx.effort)[0]
            raise Refused("effort_limits", f"points[{k}].effort of {ctx.model.joint_names[j]} is {eff[k, j]:.6g}, "
                                           f"beyond its limit {ctx.effort[j]:.6g}")
        stamp = data["stamp"]
        self._pending_traj = (traj, stamp if stamp > 0 else None, len(msg.points))
        self.trajectories_accepted += 1  # checked and queued: the next cycle adopts it

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        summary = self.stats.summary(self.period)
        summary.update(mode=self.mode, mode_reason=self.mode_reason, refused=dict(self.refusals.counts))
        response.success = True
        response.message = json.dumps(summary)
        return response

    # ------------------------------------------------------------- control
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def control_time(self) -> float:
        """Time of the control law: the state's stamp when triggered by states, else the node clock."""
        if self.trigger == "state" and self.state_stamp is not None:
            return self.state_stamp
        return self.now()

    def _hold_here(self, reason: str) -> None:
        """Drop the running trajectory and hold the measured position (law state reset).  A trajectory
        checked but not yet adopted stays queued: its start is judged on the new time base."""
        self.trajectory = None
        if self.q is not None:
            self.hold = self.q.copy()
        if self.ctx is not None:
            self.ctx.controller.reset()
        self._transition(HOLDING, reason)

    def step(self) -> None:
        start = time.perf_counter()
        now = self.control_time()
        self._take_pending(now)
        ctx = self.ctx
        if ctx is None or self.q is None:
            return
        if self._is_stale():
            return
        if self.last_now is not None and self.trigger == "timer":
            dt = now - self.last_now
            if dt < 0 or dt > self.max_time_step:
                self._hold_here(f"control time jumped by {dt:+.3f} s")
        self.last_now = now
        if self.trajectory is not None:
            q_ref, qd_ref, qdd_ref = self.trajectory.evaluate(now - self.trajectory_t0)
            if now - self.trajectory_t0 > self.trajectory.duration:
                self.hold = q_ref.copy()
                self.trajectory = None
                self._transition(HOLDING, "trajectory finished: holding its last point")
        else:
            q_ref, qd_ref, qdd_ref = self.hold, None, None
            if self.mode != HOLDING:
                self._transition(HOLDING, "joint state received: holding the current position")
        try:
            tau = ctx.controller.compute(now, self.q, self.qd, q_ref, qd_ref, qdd_ref)
        except ValueError as exc:
            self.refusals.refuse("law_failed", f"control law failed: {exc}")
            tau = self._holding_torque()
        answer = self._publish(tau, stamp=self.state_stamp if self.trigger == "state" else None)
        if answer is not None and self.trigger == "state":
            self._last_answer = (self.state_stamp, answer)
        self.stats.tick(start, time.perf_counter() - start)
        self.cycle += 1
        if self.cycle % self.divider == 0:
            self._publish_state(now, q_ref, qd_ref, qdd_ref, tau)

    def _is_stale(self) -> bool:
        """True when the last state is older than ``state_timeout`` (steady clock); logs transitions."""
        stale = self.state_wall is None or time.monotonic() - self.state_wall > self.timeout
        if stale and self.mode != STALE and self.state_wall is not None:
            self._transition(STALE, f"no valid joint state for more than {self.timeout} s: " + (
                "holding gravity" if self.stale_behavior == "gravity_hold" else "publishing nothing"))
        elif not stale and self.mode == STALE:
            if self.trigger == "timer":  # time went on without us: never resume a trajectory mid-way
                self._hold_here("joint state back: trajectory dropped, holding the current position")
                self.last_now = None
            else:  # the control time is the state stamp: stamp jumps are judged in _accept_state
                self._transition(TRACKING if self.trajectory is not None else HOLDING, "joint state back")
        return stale

    def watchdog(self) -> None:
        """Steady-clock watchdog: the safe output on stale states, and the mode published while idle."""
        self._take_pending(None)
        if self.ctx is None or self.q is None:
            if time.monotonic() - self.mode_wall > 1.0:
                self._publish_state(None)
            return
        if not self._is_stale():
            return
        if self.stale_behavior == "gravity_hold":
            self._publish(self._holding_torque(), hold=True)
        self._publish_state(None)

    def _holding_torque(self) -> np.ndarray:
        ctx = self.ctx
        zero = np.zeros(ctx.model.dof)
        # Q(q) through the law's own (already compiled) Newton–Euler: nothing to build at shutdown
        gravity = np.asarray(ctx.controller.inverse_dynamics(self.q, zero, zero), dtype=float)
        return np.clip(gravity, -ctx.effort, ctx.effort)

    def _publish(self, tau: np.ndarray, *, stamp: float | None = None, hold: bool = False) -> Float64MultiArray | None:
        """Publish ``tau`` (model order) if finite, clipped to the effort limits; returns the message."""
        ctx = self.ctx
        if not np.all(np.isfinite(tau)):
            self.refusals.refuse("non_finite_output", "a non-finite effort was computed: not sent")
            return None
        tau = np.clip(tau, -ctx.effort, ctx.effort)
        msg = Float64MultiArray(data=tau[ctx.to_cmd].tolist())
        if hold:
            lockstep.label_hold(msg)
        elif stamp is not None:
            lockstep.label_answer(msg, round(stamp * 1e9))
        self.cmd_pub.publish(msg)
        return msg

    def _publish_state(self, now: float | None, q_ref=None, qd_ref=None, qdd_ref=None, tau=None) -> None:
        m = self.state_msg
        self.mode_wall = time.monotonic()
        m.header.stamp = Time(nanoseconds=round((self.control_time() if now is None else now) * 1e9)).to_msg()
        m.mode, m.mode_reason = self.mode, self.mode_reason
        m.stale_state = self.mode == STALE
        m.trajectories_accepted = self.trajectories_accepted
        m.inputs_refused = min(self.refusals.total(), 2**32 - 1)
        ctx = self.ctx
        if ctx is not None and self.q is not None:
            n = ctx.model.dof
            o = ctx.to_cmd
            q_ref = self.hold if q_ref is None else q_ref
            qd_ref = np.zeros(n) if qd_ref is None else qd_ref
            qdd_ref = np.zeros(n) if qdd_ref is None else qdd_ref
            m.reference = JointTrajectoryPoint(positions=q_ref[o].tolist(), velocities=qd_ref[o].tolist(),
                                               accelerations=qdd_ref[o].tolist())
            m.feedback = JointTrajectoryPoint(positions=self.q[o].tolist(), velocities=self.qd[o].tolist())
            m.error = JointTrajectoryPoint(positions=(q_ref - self.q)[o].tolist(),
                                           velocities=(qd_ref - self.qd)[o].tolist())
            m.output = JointTrajectoryPoint(effort=[] if tau is None else tau[o].tolist())
            m.saturated = bool(np.any(ctx.controller.saturated)) if tau is not None else False
        self.state_pub.publish(m)

    def on_shutdown(self) -> None:
        """Last holding command: gravity torques at the last measured position."""
        self.trajectory_worker.stop()
        self.model_worker.stop()
        if self.ctx is not None and self.q is not None:
            self._publish(self._holding_torque(), hold=True)
            self.get_logger().info("sent the holding command")


def main(args: list[str] | None = None) -> int:
    return run_node(ComputedTorqueControllerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
