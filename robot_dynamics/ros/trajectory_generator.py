"""Node ``trajectory_generator``: synchronized joint trajectories of 001 chapter 8 as a service.

``~/plan`` (``robot_dynamics_interfaces/srv/PlanTrajectory``) plans through the
waypoints with the requested profile, minimum time under the velocity and
acceleration limits (request values, else the ``max_velocity``/``max_acceleration``
parameters, else the URDF limits), samples it at ``sample_period`` and returns a
``trajectory_msgs/JointTrajectory``.  With ``execute`` the trajectory goes to
``/<controller>/joint_trajectory``.  The tip path is published for rviz on
``~/path_markers`` (``visualization_msgs/MarkerArray``: DELETEALL, then a LINE_STRIP
and the waypoints as a SPHERE_LIST, in the ``base_link`` frame).
"""

from __future__ import annotations

import math
import time

import numpy as np
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Point
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from robot_dynamics_interfaces.srv import PlanTrajectory

from ..model.robot_model import RobotModel
from ..trajectory import PROFILES, TimeScaledTrajectory, Trajectory, through_waypoints
from .conversions import JointOrder
from .description import RobotDescription
from .parameters import Param, Schema
from .runtime import Refusals, Refused, guarded, run_node
from .validation import MAX_JOINT_STATE_NAMES

MAX_SAMPLES = 100_000
MAX_WAYPOINTS = 10_000


def plan_joint_trajectory(
    waypoints: np.ndarray, v_max: np.ndarray, a_max: np.ndarray, profile: str, duration: float
) -> Trajectory:
    """Minimum-time synchronized trajectory through ``waypoints`` (m, n), optionally stretched to ``duration``."""
    traj = through_waypoints(waypoints, v_max, a_max, profile=profile)
    if duration > 0:
        if traj.duration <= 0:
            return traj
        if duration < traj.duration * (1 - 1e-12):
            raise ValueError(f"duration {duration} s is shorter than the minimum {traj.duration:.6g} s for these limits")
        traj = TimeScaledTrajectory(traj, duration / traj.duration)
    return traj


def _duration_msg(t: float) -> Duration:
    ns = round(t * 1e9)
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


PARAMETERS = Schema(
    Param("controller", "computed_torque_controller", "name of the controller node: trajectories go to "
          "/<controller>/joint_trajectory"),
    Param("sample_period", 0.01, "sampling period of planned trajectories (a request's sample_period wins)",
          lo=1e-4, hi=10.0, live=True, unit="s"),
    Param("max_velocity", [], "velocity bound per joint (model order) when a request gives none; never above the "
          "robot's; empty: the robot's limits", kind="double_array", lo=0.0, open_lo=True, live=True, unit="rad/s, m/s"),
    Param("max_acceleration", [], "acceleration bound per joint when a request gives none; never above the robot's; "
          "empty: the robot's (config acceleration_limits)", kind="double_array", lo=0.0, open_lo=True, live=True,
          unit="rad/s^2, m/s^2"),
)


class TrajectoryGenerator(Node):
    """``~/plan`` runs in a reentrant callback group of a multithreaded executor (runtime.run_node): a request
    that waits for the controller's subscription (``execute``, up to 2 s) never delays another request, the
    ``joint_states`` input or the parameter services."""

    multithreaded = True
    executor_threads = 4

    def __init__(self) -> None:
        super().__init__("trajectory_generator")
        self.params = PARAMETERS.copy()
        self.params.declare(self)
        self.params.attach(self, self._check_parameters)
        self.model: RobotModel | None = None
        self.model_joints: frozenset[str] = frozenset()
        self.current: dict[str, float] = {}
        self.refusals = Refusals(self)
        controller = self.params.values["controller"]
        self.traj_pub = self.create_publisher(JointTrajectory, f"{controller}/joint_trajectory", 10)
        self.marker_pub = self.create_publisher(MarkerArray, "~/path_markers", 10)
        self.create_subscription(JointState, "joint_states", self.on_joint_states, qos_profile_sensor_data,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.create_service(PlanTrajectory, "~/plan", self.plan, callback_group=ReentrantCallbackGroup())
        self.description = RobotDescription(self, self._on_model, MutuallyExclusiveCallbackGroup())

    def _check_parameters(self, changes: dict) -> None:
        """A per-joint bound must have one value per model joint (checked now when the model is known)."""
        n = self.model.dof if self.model is not None else None
        for name in ("max_velocity", "max_acceleration"):
            v = changes.get(name)
            if v and n is not None and len(v) != n:
                raise ValueError(f"{name} needs {n} values (one per joint of the model), got {len(v)}")
        self.get_logger().info(f"parameters set: {changes}")

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model_joints = frozenset(model.joint_names)
        self.current = {}
        self.model = model

    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        """Keep the latest finite position of each model joint (other publishers' joints are ignored)."""
        if self.model is None:
            return
        if len(msg.position) != len(msg.name):
            raise Refused("no_positions", f"joint_states has {len(msg.position)} positions for {len(msg.name)} names")
        if len(msg.name) > MAX_JOINT_STATE_NAMES:
            raise Refused("too_large", f"joint_states with {len(msg.name)} names")
        joints = self.model_joints
        if not self.current:
            self.get_logger().info(f"first /joint_states received ({len(msg.name)} joints)")
        for name, p in zip(msg.name, msg.position, strict=True):
            if name in joints and math.isfinite(p):
                self.current[name] = p

    def _limits(self, request_values, parameter: str, robot: np.ndarray, order: JointOrder, n: int) -> np.ndarray:
        """Velocity or acceleration bounds: the request's, else the parameter's, else the robot's; never
        above the robot's own limits (URDF velocity, config acceleration)."""
        if len(request_values):
            v = order.model_vector(request_values, parameter, n)
        else:
            param = self.params.values[parameter]
            v = np.array(param, float) if param else robot
            if v.shape != (n,):
                raise ValueError(f"parameter {parameter} must have {n} values")
        if np.any(v <= 0) or not np.all(np.isfinite(v)):
            bad = [self.model.joint_names[i] for i in np.flatnonzero(~(np.isfinite(v) & (v > 0)))]
            raise ValueError(f"{parameter} must be finite and positive; missing or bad for {bad}")
        above = np.flatnonzero(v > robot * (1 + 1e-12))
        if above.size:
            j = int(above[0])
            raise ValueError(f"{parameter} of {self.model.joint_names[j]} is {v[j]:.6g}, above the robot's limit "
                             f"{robot[j]:.6g}")
        return v

    def plan(self, request: PlanTrajectory.Request, response: PlanTrajectory.Response) -> PlanTrajectory.Response:
        try:
            self._plan(request, response)
            response.success = True
        except Exception as exc:  # every bad request is answered; the node keeps serving
            response.success = False
            cause = exc.cause if isinstance(exc, Refused) else type(exc).__name__
            response.message = f"{cause}: {exc}"
        return response

    def _plan(self, request: PlanTrajectory.Request, response: PlanTrajectory.Response) -> None:
        model = self.model
        if model is None:
            raise ValueError("no robot model yet (robot_description not received)")
        n = model.dof
        order = JointOrder(model.joint_names, list(request.joint_names))
        profile = request.profile or "trapezoid"
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {list(PROFILES)}")
        if len(request.waypoints) > MAX_WAYPOINTS:
            raise ValueError(f"{len(request.waypoints)} waypoints exceed {MAX_WAYPOINTS}")
        rows = [order.model_vector(p.positions, f"waypoints[{k}].positions", n) for k, p in enumerate(request.waypoints)]
        lim = model.limits
        # every waypoint the user gives must be inside the limits (waypoints[k] as numbered in the request)
        for k, row in enumerate(rows):
            outside = np.flatnonzero((row < lim["lower"] - 1e-9) | (row > lim["upper"] + 1e-9))
            if outside.size:
                j = int(outside[0])
                raise ValueError(f"waypoints[{k}] is outside the limits of joint {model.joint_names[j]!r}: "
                                 f"{row[j]:.6g} not in [{lim['lower'][j]:.6g}, {lim['upper'][j]:.6g}]")
        if request.start_from_current or len(rows) == 1:
            current = dict(self.current)  # one snapshot (the input callback runs in another thread)
            missing = [j for j in model.joint_names if j not in current]
            if missing:
                raise ValueError(f"no current position on /joint_states for {missing}")
            # the current position may be outside the limits (an arm brought back): the path moves inward
            rows.insert(0, np.array([current[j] for j in model.joint_names]))
        if len(rows) < 2:
            raise ValueError("need at least one waypoint (the start is then the current /joint_states)")
        waypoints = np.array(rows)
        v_max = self._limits(request.max_velocity, "max_velocity", lim["velocity"], order, n)
        a_max = self._limits(request.max_acceleration, "max_acceleration", lim["acceleration"], order, n)
        if not math.isfinite(request.duration) or request.duration < 0:
            raise ValueError("duration must be finite and >= 0")
        period = request.sample_period or self.params.values["sample_period"]
        if not (math.isfinite(period) and period > 0):
            raise ValueError("sample_period must be finite and positive")
        traj = plan_joint_trajectory(waypoints, v_max, a_max, profile, request.duration)
        if traj.duration / period > MAX_SAMPLES:
            raise ValueError(f"{traj.duration / period:.0f} samples exceed {MAX_SAMPLES}; use a longer sample_period")
        times, q, qd, qdd = traj.sample(period)
        perm = order.to_request
        msg = JointTrajectory(joint_names=order.names)
        msg.points = [
            JointTrajectoryPoint(
                positions=q[k, perm].tolist(),
                velocities=qd[k, perm].tolist(),
                accelerations=qdd[k, perm].tolist(),
                time_from_start=_duration_msg(float(t)),
            )
            for k, t in enumerate(times)
        ]
        response.trajectory = msg
        response.duration = float(traj.duration)
        response.message = f"{profile}: {traj.duration:.4f} s, {len(times)} points"
        if request.execute:
            # a volatile topic: publishing before discovery has matched the controller loses the message
            deadline = time.monotonic() + 2.0
            while self.traj_pub.get_subscription_count() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.traj_pub.get_subscription_count() == 0:
                raise ValueError(f"no controller subscribed to {self.traj_pub.topic_name}: not executed")
            self.traj_pub.publish(msg)
            response.message += ", sent to the controller"
        self._publish_path(q, waypoints)

    def _publish_path(self, q: np.ndarray, waypoints: np.ndarray) -> None:
        model = self.model
        frame = model.base_link
        tips = model.forward_kinematics(q)[:, :3, 3]
        marks = model.forward_kinematics(waypoints)[:, :3, 3]
        clear = Marker(action=Marker.DELETEALL)
        path = Marker(type=Marker.LINE_STRIP, action=Marker.ADD, ns="tip_path", id=0)
        path.header.frame_id = frame
        path.header.stamp = self.get_clock().now().to_msg()
        path.pose.orientation.w = 1.0
        path.scale.x = 0.005
        path.color = ColorRGBA(r=0.1, g=0.6, b=1.0, a=1.0)
        path.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in tips]
        dots = Marker(type=Marker.SPHERE_LIST, action=Marker.ADD, ns="waypoints", id=1)
        dots.header = path.header
        dots.pose.orientation.w = 1.0
        dots.scale.x = dots.scale.y = dots.scale.z = 0.03
        dots.color = ColorRGBA(r=1.0, g=0.5, b=0.0, a=1.0)
        dots.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in marks]
        self.marker_pub.publish(MarkerArray(markers=[clear, path, dots]))


def main(args: list[str] | None = None) -> int:
    return run_node(TrajectoryGenerator, args)


if __name__ == "__main__":
    raise SystemExit(main())
