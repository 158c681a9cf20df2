"""Node ``computed_torque_controller``: a joint-space dynamic controller next to ros2_control.

Python cannot be a ros2_control plugin, so this node talks to the topics of a
``forward_command_controller/ForwardCommandController`` (``interface_name: effort``):

* subscribes ``/joint_states`` (sensor-data QoS, joints mapped by name, only the latest sample kept);
* subscribes ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``, JTC semantics: a new
  trajectory replaces the current one; interpolation degree follows the filled fields);
* publishes ``/<effort_controller>/commands`` (``std_msgs/Float64MultiArray``, configured joint order)
  and ``~/controller_state`` (``robot_dynamics_interfaces/ControllerState``);
* serves ``~/statistics`` (``std_srvs/Trigger``): loop rate and period jitter as JSON.

Laws (parameter ``law``): ``computed_torque`` (001 eq. 9.22/9.24), ``position`` (9.29),
``predictive`` (9.31), ``pd_gravity`` (9.12), ``pid`` (9.5/9.10).  Safe behaviour: with no
state, or a state older than ``state_timeout``, nothing is published (``stale_behavior: none``)
or the gravity torques at the last measured position (``gravity_hold``), and the node says so;
on shutdown it sends a last holding command (gravity at the last position).
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics_interfaces.msg import ControllerState

from ..control import CONTROLLERS, JointController, make_controller
from ..robot_model import RobotModel
from ..trajectory.sampled import SampledTrajectory
from .description import RobotDescription
from .runtime import run_node


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
        dp("stale_behavior", "none")
        dp("effort_controller", "effort_controller")
        dp("trigger", "timer")
        dp("state_publish_divider", 1)
        dp("backend", "generated")  # generated (customized NE compiled to C, ~1 µs) | numpy
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
        self.period = 1.0 / self.rate
        self.timeout = float(self.get_parameter("state_timeout").value)
        self.divider = max(1, int(self.get_parameter("state_publish_divider").value))

        self.model: RobotModel | None = None
        self.controller: JointController | None = None
        self.trajectory: SampledTrajectory | None = None
        self.trajectory_t0 = 0.0
        self.hold: np.ndarray | None = None
        self.q = self.qd = None
        self.state_time: float | None = None
        self.state_wall: float | None = None
        self.stale = True
        self.stats = LoopStatistics()
        self.cycle = 0
        self._name_cache: tuple[tuple[str, ...], np.ndarray] | None = None

        topic = f"/{self.get_parameter('effort_controller').value}/commands"
        self.cmd_pub = self.create_publisher(Float64MultiArray, topic, 10)
        self.state_pub = self.create_publisher(ControllerState, "~/controller_state", 100)
        # sensor-data QoS keeps only the latest sample; state-triggered (lockstep) control must see every state
        state_qos = qos_profile_sensor_data if self.trigger == "timer" else 10
        self.create_subscription(JointState, "/joint_states", self.on_joint_states, state_qos)
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10)
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        self.description = RobotDescription(self, self._on_model)
        if self.trigger == "timer":
            self.timer = self.create_timer(self.period, self.step)
        # the watchdog runs on the steady clock: a paused simulation also stops /clock
        self.watchdog_timer = self.create_timer(self.timeout / 2, self.watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(f"law {self.law}, {self.rate:.0f} Hz ({self.trigger}), commands on {topic}")

    # -------------------------------------------------------------- setup
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        joints = [j for j in self.get_parameter("joints").value if j]
        if joints and sorted(joints) != sorted(model.joint_names):
            self.get_logger().error(f"parameter joints {joints} does not match the model joints {model.joint_names}")
            return
        self.joints = joints or model.joint_names
        limits = [v for v in self.get_parameter("effort_limits").value if v > 0]
        effort = np.array(limits, float) if limits else None
        omega = self.get_parameter("omega").value
        xi = self.get_parameter("xi").value
        # controller internals in model order; commands reordered to self.joints
        self.to_cmd = np.array([model.joint_names.index(j) for j in self.joints])
        backend = self.get_parameter("backend").value
        if backend == "generated":
            try:
                model.set_backend("generated")  # compiled once, then cached by model hash
            except Exception as exc:  # no compiler: the NumPy scalar path of the control laws
                self.get_logger().warn(f"generated backend unavailable ({exc}); using the NumPy model")
        elif backend != "numpy":
            self.get_logger().error(f"backend must be 'generated' or 'numpy', got {backend!r}")
            return
        laws = {"inverse_dynamics": model.inverse_dynamics} if model.backend == "generated" else {}
        kp = [v for v in self.get_parameter("kp").value if v > 0]
        kd = [v for v in self.get_parameter("kd").value if v > 0]
        if kp or kd:
            if len(kp) != model.dof or len(kd) != model.dof or self.law == "pid":
                self.get_logger().error(f"kp and kd need {model.dof} positive values each (not for law pid)")
                return
            self.controller = _with_gains(self.law, model, np.array(kp), np.array(kd), effort, **laws)
        else:
            self.controller = make_controller(self.law, model, omega=omega, xi=xi, effort_limit=effort, **laws)
        self.get_logger().info(f"dynamic model backend: {model.backend}")
        self.model = model
        n = model.dof
        self.q = np.zeros(n)
        self.qd = np.zeros(n)
        self.state_msg = ControllerState(joint_names=list(self.joints), law=self.law)

    # ------------------------------------------------------------ inputs
    def on_joint_states(self, msg: JointState) -> None:
        if self.model is None:
            return
        key = tuple(msg.name)
        if self._name_cache is None or self._name_cache[0] != key:
            try:
                idx = np.array([msg.name.index(j) for j in self.model.joint_names])
            except ValueError:
                self.get_logger().warn(
                    f"/joint_states lacks some of {self.model.joint_names}; ignored", throttle_duration_sec=5.0
                )
                return
            self._name_cache = (key, idx)
        idx = self._name_cache[1]
        pos = np.asarray(msg.position, float)
        vel = np.asarray(msg.velocity, float)
        if pos.size != len(msg.name) or vel.size != len(msg.name):
            self.get_logger().warn("/joint_states without positions or velocities; ignored", throttle_duration_sec=5.0)
            return
        q, qd = pos[idx], vel[idx]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            self.get_logger().warn("/joint_states with NaN; ignored", throttle_duration_sec=5.0)
            return
        self.q, self.qd = q, qd
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        # the sample time of the state: exact in state-triggered (lockstep) mode, where /clock may lag
        self.state_time = stamp if (stamp > 0 and self.trigger == "state") else self.now()
        self.state_wall = time.monotonic()
        if self.hold is None:
            self.hold = q.copy()
        if self.trigger == "state":
            self.step()

    def on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            self.trajectory = self._trajectory_from_msg(msg)
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            self.trajectory_t0 = stamp if stamp > 0 else self.now()
            if stamp <= 0 and self.trigger == "state" and self.state_time is not None:
                self.trajectory_t0 = self.state_time  # "now" = the latest state's sample time
            self.get_logger().info(
                f"new trajectory: {len(msg.points)} points, {self.trajectory.duration:.3f} s (degree {self.trajectory.degree})"
            )
        except ValueError as exc:
            self.get_logger().error(f"trajectory rejected: {exc}")

    def _trajectory_from_msg(self, msg: JointTrajectory) -> SampledTrajectory:
        if self.model is None:
            raise ValueError("no robot model yet")
        if not msg.points:
            raise ValueError("no points")
        names = list(msg.joint_names)
        model_names = self.model.joint_names
        if sorted(names) != sorted(model_names):
            raise ValueError(f"joint_names {names} do not match the controlled joints {model_names}")
        perm = np.array([names.index(j) for j in model_names])
        n = len(names)
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])

        def field(attr: str) -> np.ndarray | None:
            rows = [getattr(p, attr) for p in msg.points]
            if all(len(r) == 0 for r in rows):
                return None
            if any(len(r) != n for r in rows):
                raise ValueError(f"every point needs {n} {attr} (or none)")
            return np.array(rows, float)[:, perm]

        pos = field("positions")
        if pos is None:
            raise ValueError("points without positions")
        vel = field("velocities")
        acc = field("accelerations") if vel is not None else None
        limits = self.model.limits
        lo, hi = limits["lower"], limits["upper"]
        if np.any(pos < lo - 1e-9) or np.any(pos > hi + 1e-9):
            raise ValueError("positions outside the joint limits")
        start = self.q.copy() if self.state_time is not None else None
        return SampledTrajectory(times, pos, vel, acc, start=start)

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = True
        response.message = json.dumps(self.stats.summary(self.period))
        return response

    # ------------------------------------------------------------- control
    def control_time(self) -> float:
        """Time of the control law: the state's stamp when triggered by states, else the node clock."""
        if self.trigger == "state" and self.state_time is not None:
            return self.state_time
        return self.now()

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def step(self) -> None:
        start = time.perf_counter()
        if self.controller is None:
            return
        now = self.control_time()
        if self._check_stale():
            return
        if self.trajectory is not None:
            q_ref, qd_ref, qdd_ref = self.trajectory.evaluate(now - self.trajectory_t0)
        else:
            q_ref, qd_ref, qdd_ref = self.hold, None, None
        try:
            tau = self.controller.compute(now, self.q, self.qd, q_ref, qd_ref, qdd_ref)
        except ValueError as exc:
            self.get_logger().error(f"control law failed: {exc}", throttle_duration_sec=2.0)
            return
        self._publish(tau)
        self.stats.tick(start, time.perf_counter() - start)
        self.cycle += 1
        if self.cycle % self.divider == 0:
            self._publish_state(now, q_ref, qd_ref, qdd_ref, tau)

    def _check_stale(self) -> bool:
        """True when the last state is older than ``state_timeout`` (steady clock); logs transitions."""
        stale = self.state_wall is None or time.monotonic() - self.state_wall > self.timeout
        if stale != self.stale:
            if stale:
                self.get_logger().warn(
                    f"joint state missing or older than {self.timeout} s: "
                    + ("holding gravity" if self.stale_behavior == "gravity_hold" else "publishing nothing")
                )
            else:
                self.get_logger().info("joint state back: control resumed")
                self.controller.reset()
            self.stale = stale
        return stale

    def watchdog(self) -> None:
        """Steady-clock watchdog: with a stale state stream, hold gravity or publish nothing."""
        if self.controller is None or not self._check_stale():
            return
        if self.stale_behavior == "gravity_hold" and self.state_wall is not None:
            self._publish(self._holding_torque())

    def _holding_torque(self) -> np.ndarray:
        lim = self.controller.effort_limit
        return np.clip(self.model.gravity_torques(self.q), -lim, lim)

    def _publish(self, tau: np.ndarray) -> None:
        self.cmd_pub.publish(Float64MultiArray(data=tau[self.to_cmd].tolist()))

    def _publish_state(self, now, q_ref, qd_ref, qdd_ref, tau) -> None:
        n = self.model.dof
        qd_ref = np.zeros(n) if qd_ref is None else qd_ref
        qdd_ref = np.zeros(n) if qdd_ref is None else qdd_ref
        o = self.to_cmd
        m = self.state_msg
        m.header.stamp = Time(nanoseconds=round(now * 1e9)).to_msg()  # the control time of this cycle
        m.reference = JointTrajectoryPoint(positions=q_ref[o].tolist(), velocities=qd_ref[o].tolist(), accelerations=qdd_ref[o].tolist())
        m.feedback = JointTrajectoryPoint(positions=self.q[o].tolist(), velocities=self.qd[o].tolist())
        m.error = JointTrajectoryPoint(positions=(q_ref - self.q)[o].tolist(), velocities=(qd_ref - self.qd)[o].tolist())
        m.output = JointTrajectoryPoint(effort=tau[o].tolist())
        m.saturated = bool(np.any(self.controller.saturated))
        m.stale_state = self.stale
        self.state_pub.publish(m)

    def on_shutdown(self) -> None:
        """Last holding command: gravity torques at the last measured position."""
        if self.controller is not None and self.state_wall is not None:
            self._publish(self._holding_torque())
            self.get_logger().info("sent the holding command")


def main(args: list[str] | None = None) -> int:
    return run_node(ComputedTorqueControllerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
