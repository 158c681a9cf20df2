"""Node ``trajectory_generator``: synchronized joint trajectories of 001 chapter 8 as services.

``~/plan`` (``robot_dynamics_interfaces/srv/PlanTrajectory``) plans through the
waypoints with the requested profile, minimum time under the velocity and
acceleration limits (request values, else the ``max_velocity``/``max_acceleration``
parameters, else the URDF limits), stretched uniformly (001 §8.3) when the model's
efforts would exceed the URDF effort limits, samples it at ``sample_period`` and at every
breakpoint of the profile and returns a ``trajectory_msgs/JointTrajectory`` whose points
carry the feed-forward efforts of the model (Newton-Euler with friction and rotor inertia,
001 eq. 7.61).  The core (:func:`~robot_dynamics.trajectory.planning.plan_samples`) verifies
every plan with the controller's own acceptance test (``check_path_limits`` and its default
tolerances on the path interpolated through the points), so a controller accepts what
``~/plan`` returns.  A linear profile through waypoints (its velocity jumps) is sent as
positions only (the controller's linear interpolation is then the plan).  A requested
``duration`` shorter than the feasible minimum, or a static load (gravity + Coulomb
friction) beyond a limit, is refused.  With ``execute`` the trajectory is sent as a
``control_msgs/action/FollowJointTrajectory`` goal to ``<controller>/follow_joint_trajectory``
and the response reports the result (``error_code``, ``error_string``); no server within
2 s, a rejected goal or no result within the duration plus ``execute_timeout_margin``
(the goal is then canceled) are reported too.  The tip path is published for rviz on
``~/path_markers`` (``visualization_msgs/MarkerArray``: DELETEALL, then a LINE_STRIP
and the waypoints as a SPHERE_LIST, in the ``base_link`` frame).

``~/time_scale`` (``robot_dynamics_interfaces/srv/TimeScale``) re-times a given trajectory
(the path interpolated through its points as a controller plays it) by the optimal uniform
scale of the core (:func:`~robot_dynamics.trajectory.time_scaling.retime_to_limits`,
001 §8.3): the velocity limits on the whole interpolated path, the effort limits on a
dense grid refined near the peak, faster than the input when it allows (``only_stretch``
keeps k >= 1).  A trajectory of more than ``max_points`` points is refused (``too_large``)
before any per-point work; the work itself goes by chunks (bounded memory).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from geometry_msgs.msg import Point
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from robot_dynamics_interfaces.srv import PlanTrajectory, TimeScale

from ..model.robot_model import RobotModel
from ..trajectory import PROFILES
from ..trajectory.planning import at_rest, plan_joint_trajectory, plan_samples, retime_samples, start_segment
from ..trajectory.time_scaling import retime_points
from . import validation
from .conversions import JointOrder, float_rows
from .description import RobotDescription
from .parameter_files import load_schema
from .reference_input import ReferenceInput
from .request_gate import NamesAndPoints, Oversize, RequestGate, TrajectoryFirst, reader_memory_profile, trim_for
from .runtime import PolledSubscription, Refusals, Refused, guarded, poll_sim_time, run_node
from .validation import MAX_JOINT_STATE_NAMES

MAX_SAMPLES = 100_000
STATES_POLL = 0.05  # s between two takes of joint_states (and at each plan from the current position)
# sensor data (best effort) with room for what arrives between two takes: 50 ms of a 500 Hz arm, twice
STATES_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
MAX_WAYPOINTS = 10_000
SERVER_TIMEOUT = 2.0  # s: wait for the controller's action server before refusing to execute
GOAL_TIMEOUT = 5.0    # s: wait for the goal's acceptance
CANCEL_TIMEOUT = 2.0  # s: wait for a cancel's answer after a result timeout
RESULT = FollowJointTrajectory.Result
ERROR_NAMES = {RESULT.SUCCESSFUL: "SUCCESSFUL", RESULT.INVALID_GOAL: "INVALID_GOAL",
               RESULT.INVALID_JOINTS: "INVALID_JOINTS", RESULT.OLD_HEADER_TIMESTAMP: "OLD_HEADER_TIMESTAMP",
               RESULT.PATH_TOLERANCE_VIOLATED: "PATH_TOLERANCE_VIOLATED",
               RESULT.GOAL_TOLERANCE_VIOLATED: "GOAL_TOLERANCE_VIOLATED"}


__all__ = ["TrajectoryGenerator", "check_point_count", "main", "plan_joint_trajectory"]


def check_point_count(count: int, max_points: int, what: str = "trajectory") -> None:
    """Refuse (``too_large``) a request of more than ``max_points`` points: checked first, before any per-point
    work (the conversion of the message, the interpolation, the efforts)."""
    if count > max_points:
        raise Refused("too_large", f"{what} with {count} points exceeds max_points={max_points}")


def _duration_msg(t: float) -> Duration:
    ns = round(t * 1e9)
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _wait(future: Any, timeout: float) -> bool:
    """Wait (without spinning: the executor's other threads complete it) until ``future`` is done."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return done.wait(timeout) or future.done()


PARAMETERS = load_schema("trajectory_generator")  # trajectory_generator.yaml in robot_dynamics/ros/schemas (types, defaults, ranges, units)


class TrajectoryGenerator(Node):
    """``~/plan`` and ``~/time_scale`` run in a reentrant callback group of a multithreaded executor
    (runtime.run_node): a request that waits for the controller (``execute``: its action server up to 2 s, then the
    result) never delays another request, the ``joint_states`` input or the parameter services.  The action
    client's responses arrive in a group of their own, on another executor thread, while ``~/plan`` waits."""

    multithreaded = True
    executor_threads = 6

    def __init__(self) -> None:
        super().__init__("trajectory_generator")
        self.params = PARAMETERS.copy()
        self.params.declare(self)
        self.params.attach(self, self._check_parameters)
        self.model: RobotModel | None = None
        self.model_joints: frozenset[str] = frozenset()
        self.current: dict[str, float] = {}
        self.refusals = Refusals(self)
        self.sim_time_thread = poll_sim_time(self)  # use_sim_time: /clock polled, not a callback per message
        controller = self.params.values["controller"]
        self.action_name = f"{controller}/follow_joint_trajectory"  # relative: a namespace moves it
        self.follow = ActionClient(self, FollowJointTrajectory, self.action_name,
                                   callback_group=MutuallyExclusiveCallbackGroup())
        self.marker_pub = self.create_publisher(MarkerArray, "~/path_markers", 10)
        # the arm's position, needed when a plan starts from it: taken in batches by a thread (and at each such
        # request), not dispatched by the executor message by message
        self.states = PolledSubscription(self, JointState, "joint_states", STATES_QOS, self.on_joint_states,
                                         STATES_POLL)
        # the controller's running reference, for a plan that starts from it (start_from_reference)
        self.reference = ReferenceInput(self, f"{controller}/controller_state", STATES_QOS, STATES_POLL)
        services = ReentrantCallbackGroup()
        plan = self.create_service(PlanTrajectory, "~/plan", self.plan, callback_group=services)
        scale = self.create_service(TimeScale, "~/time_scale", self.time_scale, callback_group=services)
        # the points of a request counted in rclpy's C structure, before any Python object is made (a 10^6-point
        # request: refused in the C take's ~0.4 s, not after 6-10 s and ~1 GB of conversion holding the GIL)
        point = JointTrajectoryPoint(positions=[1.0])
        self.gates = (
            RequestGate.install(plan, NamesAndPoints, ("points",), lambda: MAX_WAYPOINTS,
                                PlanTrajectory.Request(joint_names=["a"], waypoints=[point, point]), 2),
            RequestGate.install(scale, TrajectoryFirst, ("trajectory", "points"),
                                lambda: int(self.params.values["max_points"]),
                                TimeScale.Request(trajectory=JointTrajectory(joint_names=["a"], points=[point, point])),
                                2))
        if None in self.gates:
            self.get_logger().warning("this rclpy does not allow counting the points of a request before converting "
                                      "it: ~/plan and ~/time_scale check their size after the conversion")
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

    def _bound(self, values: Any, what: str, robot: np.ndarray, order: JointOrder, n: int) -> np.ndarray:
        """A request's per-joint bound (request order) -> model order: finite, positive, never above the robot's."""
        v = order.model_vector(values, what, n)
        if np.any(v <= 0):
            bad = [self.model.joint_names[i] for i in np.flatnonzero(v <= 0)]
            raise ValueError(f"{what} must be positive; bad for {bad}")
        return self._not_above(v, what, robot)

    def _not_above(self, v: np.ndarray, what: str, robot: np.ndarray) -> np.ndarray:
        """``v`` if no joint's bound is above the robot's own limit, else ``ValueError`` naming the first."""
        above = np.flatnonzero(v > robot * (1 + 1e-12))
        if above.size:
            j = int(above[0])
            raise ValueError(f"{what} of {self.model.joint_names[j]} is {v[j]:.6g}, above the robot's limit "
                             f"{robot[j]:.6g}")
        return v

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
        return self._not_above(v, parameter, robot)

    @staticmethod
    def _answer(work: Any, request: Any, response: Any, limit: str = "") -> Any:
        """Run ``work``: every bad request is answered (success false, the cause); the node keeps serving.
        ``limit``: what an oversize request exceeds (said in the refusal)."""
        try:
            if isinstance(request, Oversize):  # counted by the RequestGate: no Python object was made
                trim_for()  # the C take's buffers, freed by the DDS layer shortly after, back to the system
                raise Refused("too_large", f"request with {request.points} points exceeds {limit}: refused before "
                                           "its conversion to Python objects")
            if isinstance(request, BaseException):
                raise Refused("invalid", f"the request could not be converted: {type(request).__name__}: {request}")
            if work(request, response) is not False:
                response.success = True
        except Exception as exc:
            response.success = False
            cause = exc.cause if isinstance(exc, Refused) else type(exc).__name__
            response.message = f"{cause}: {exc}"
        return response

    def plan(self, request: PlanTrajectory.Request, response: PlanTrajectory.Response) -> PlanTrajectory.Response:
        return self._answer(self._plan, request, response, f"{MAX_WAYPOINTS} waypoints")

    def time_scale(self, request: TimeScale.Request, response: TimeScale.Response) -> TimeScale.Response:
        return self._answer(self._time_scale, request, response, f"max_points={self.params.values['max_points']}")

    def _plan(self, request: PlanTrajectory.Request, response: PlanTrajectory.Response) -> bool:
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
        moving = None
        if request.start_from_reference:
            if request.start_from_current:
                raise ValueError("start_from_current and start_from_reference exclude each other")
            if not rows:
                raise ValueError("start_from_reference needs at least one waypoint")
            moving = self.reference.moving_start(model.joint_names)
        elif request.start_from_current or len(rows) == 1:
            self.states.drain()  # what arrived since the last take
            current = dict(self.current)  # one snapshot (the input callback runs in another thread)
            missing = [j for j in model.joint_names if j not in current]
            if missing:
                raise ValueError(f"no current position on /joint_states for {missing}")
            # the current position may be outside the limits (an arm brought back): the path moves inward
            rows.insert(0, np.array([current[j] for j in model.joint_names]))
        if len(rows) < 2 and moving is None:
            raise ValueError("need at least one waypoint (the start is then the current /joint_states)")
        waypoints = np.array(rows)
        v_max = self._limits(request.max_velocity, "max_velocity", lim["velocity"], order, n)
        a_max = self._limits(request.max_acceleration, "max_acceleration", lim["acceleration"], order, n)
        if not math.isfinite(request.duration) or request.duration < 0:
            raise ValueError("duration must be finite and >= 0")
        period = request.sample_period or self.params.values["sample_period"]
        if not (math.isfinite(period) and period > 0):
            raise ValueError("sample_period must be finite and positive")
        # minimum time under the velocity and acceleration limits, stretched to the URDF effort limits (001 §8.3),
        # sampled at the period and the breakpoints, verified with the controller's check_path_limits
        timing = request.timing or "uniform"
        offset = 0.0
        if moving is not None:  # the controller's start segment first: its duration is the first point's time
            offset = float(start_segment(*moving, waypoints[0], lim["lower"], lim["upper"], v_max, a_max, model,
                                         names=model.joint_names).times[-1])
        if len(waypoints) == 1:  # the start segment alone: one point, at rest there
            fit = at_rest(waypoints[0], model)
        else:
            fit = plan_samples(waypoints, v_max, a_max, profile, period, model, lower=lim["lower"],
                               upper=lim["upper"], duration=request.duration, names=model.joint_names,
                               max_samples=MAX_SAMPLES, timing=timing)
        perm = order.to_request
        msg = JointTrajectory(joint_names=order.names)
        positions, efforts = float_rows(fit.q[:, perm]), float_rows(fit.effort[:, perm])
        full = fit.fields == 3  # else positions only: the linear profile's velocity jumps at the waypoints
        velocities = float_rows(fit.qd[:, perm]) if full else None
        accelerations = float_rows(fit.qdd[:, perm]) if full else None
        points = []
        for k, t in enumerate(fit.times):
            p = JointTrajectoryPoint(positions=positions[k], effort=efforts[k],
                                     time_from_start=_duration_msg(float(t) + offset))
            if full:
                p.velocities, p.accelerations = velocities[k], accelerations[k]
            points.append(p)
        msg.points = points
        response.trajectory = msg
        response.duration = float(fit.duration) + offset
        response.effort_scale = float(fit.effort_scale)
        response.peak_effort_ratio = float(fit.peak_effort_ratio)
        response.message = (f"{profile}{', time-optimal' if timing == 'time_optimal' else ''}: {fit.duration:.4f} s, "
                            f"{len(fit.times)} points")
        if fit.effort_scale > 1.0:
            response.message += (f", stretched x{fit.effort_scale:.6g} for the effort limits (the velocity and "
                                 f"acceleration limits alone: {fit.base.duration:.4f} s)")
        if fit.velocity_stretch > 1.0:
            response.message += f", x{fit.velocity_stretch:.9g} for the interpolated velocity"
        if not full:
            response.message += ", positions only (the velocity jumps at the waypoints)"
        response.message += f", peak effort {fit.peak_effort_ratio:.1%} of the limits"
        if moving is not None:
            response.message += (f"; from the controller's reference (moving at up to "
                                 f"{float(np.max(np.abs(moving[1]))):.3g} rad/s): its start segment of {offset:.4f} s "
                                 "first")
        self._publish_path(fit.q, waypoints)
        if request.execute:
            return self._execute(msg, fit.duration + offset, response)
        return True

    def _execute(self, msg: JointTrajectory, duration: float, response: PlanTrajectory.Response) -> bool:
        """Send ``msg`` as a FollowJointTrajectory goal and wait for its result (never spinning: the action client's
        group runs on another executor thread); the outcome goes into ``response``.  False when not successful."""
        client = self.follow
        name = f"{self.get_namespace().rstrip('/')}/{self.action_name}"
        deadline = time.monotonic() + SERVER_TIMEOUT
        while not client.server_is_ready() and time.monotonic() < deadline:
            time.sleep(0.01)

        def fail(code: int, text: str) -> bool:
            response.error_code, response.error_string = code, text
            response.message += f"; {text}"
            return False

        if not client.server_is_ready():
            return fail(PlanTrajectory.Response.NOT_EXECUTED,
                        f"no FollowJointTrajectory action server {name} within {SERVER_TIMEOUT:g} s: not executed")
        sent = client.send_goal_async(FollowJointTrajectory.Goal(trajectory=msg))
        if not _wait(sent, GOAL_TIMEOUT):
            # accepted later? then cancel it: the caller was told it was not executed
            sent.add_done_callback(lambda f: f.result().cancel_goal_async() if f.result() and f.result().accepted else None)
            return fail(PlanTrajectory.Response.NOT_EXECUTED,
                        f"{name} did not answer the goal within {GOAL_TIMEOUT:g} s: not executed")
        handle = sent.result()
        if handle is None or not handle.accepted:
            return fail(PlanTrajectory.Response.GOAL_REJECTED, f"{name} rejected the goal: not executed")
        result = handle.get_result_async()
        wait = duration + float(self.params.values["execute_timeout_margin"])
        if not _wait(result, wait):
            cancel = handle.cancel_goal_async()
            canceled = _wait(cancel, CANCEL_TIMEOUT)
            return fail(PlanTrajectory.Response.RESULT_TIMEOUT,
                        f"no result from {name} within {wait:.3g} s (duration + execute_timeout_margin): goal "
                        f"{'canceled' if canceled else 'cancel requested, unanswered'}")
        outcome = result.result()
        code, text = int(outcome.result.error_code), str(outcome.result.error_string)
        response.error_code, response.error_string = code, text
        label = ERROR_NAMES.get(code, "unknown error code")
        status = {GoalStatus.STATUS_SUCCEEDED: "succeeded", GoalStatus.STATUS_ABORTED: "aborted",
                  GoalStatus.STATUS_CANCELED: "canceled"}.get(outcome.status, f"status {outcome.status}")
        ok = code == RESULT.SUCCESSFUL and outcome.status == GoalStatus.STATUS_SUCCEEDED
        response.message += (f"; executed by {name}: {status}, {label} ({code})" + (f": {text}" if text else ""))
        return ok

    def _time_scale(self, request: TimeScale.Request, response: TimeScale.Response) -> None:
        model = self.model
        if model is None:
            raise ValueError("no robot model yet (robot_description not received)")
        n = model.dof
        msg = request.trajectory
        limit = int(self.params.values["max_points"])
        check_point_count(len(msg.points), limit, "~/time_scale trajectory")
        data = validation.trajectory(msg, model.joint_names, limit)
        order = JointOrder(model.joint_names, list(msg.joint_names))
        lim = model.limits
        vel = self._bound(request.max_velocity, "max_velocity", lim["velocity"], order, n) \
            if len(request.max_velocity) else np.asarray(lim["velocity"], float)
        eff = self._bound(request.max_effort, "max_effort", lim["effort"], order, n) \
            if len(request.max_effort) else np.asarray(lim["effort"], float)
        acc = self._bound(request.max_acceleration, "max_acceleration", lim["acceleration"], order, n) \
            if len(request.max_acceleration) else None
        timing = request.timing or "uniform"
        if timing == "time_optimal":
            return self._time_optimal(request, response, data, order, eff, vel, acc)
        if timing != "uniform":
            raise ValueError(f"timing must be uniform or time_optimal, got {timing!r}")
        # the path as given within the position limits (scaling never moves it), the optimal uniform scale (001
        # §8.3), the efforts at the returned points: the core's retime_points, in bounded memory
        res, tau = retime_points(data["times"], data["positions"], data["velocities"], data["accelerations"], model,
                                 eff, vel, acceleration_limits=acc, lower=lim["lower"], upper=lim["upper"],
                                 only_stretch=request.only_stretch, names=model.joint_names)
        out = res.trajectory
        perm = order.to_request
        positions, efforts = float_rows(out.positions[:, perm]), float_rows(tau[:, perm])
        velocities = float_rows(out.velocities[:, perm]) if out.velocities is not None else None
        accelerations = float_rows(out.accelerations[:, perm]) if out.accelerations is not None else None
        points = []
        for k, t in enumerate(out.times):
            p = JointTrajectoryPoint(positions=positions[k], effort=efforts[k], time_from_start=_duration_msg(float(t)))
            if velocities is not None:
                p.velocities = velocities[k]
            if accelerations is not None:
                p.accelerations = accelerations[k]
            points.append(p)
        response.trajectory = JointTrajectory(header=msg.header, joint_names=list(msg.joint_names), points=points)
        response.scale, response.duration, response.binding = float(res.scale), float(out.duration), res.binding
        response.effort_scale, response.velocity_scale = float(res.effort_scale), float(res.velocity_scale)
        response.peak_effort_ratio, response.peak_velocity_ratio = float(res.peak_ratio), float(res.peak_velocity_ratio)
        response.peak_effort_ratio_before = float(res.peak_ratio_before)
        response.message = (f"scale {res.scale:.6g} ({res.binding} limits bind): {out.duration:.4f} s for "
                            f"{data['times'][-1]:.4f} s, {len(points)} points, peak effort {res.peak_ratio:.1%} and peak "
                            f"velocity {res.peak_velocity_ratio:.1%} of the limits")

    def _time_optimal(self, request: TimeScale.Request, response: TimeScale.Response, data: dict[str, Any],
                      order: JointOrder, eff: np.ndarray, vel: np.ndarray, acc: np.ndarray | None) -> None:
        """``~/time_scale`` with ``timing: time_optimal`` (the core's :func:`retime_samples`)."""
        if request.only_stretch:
            raise ValueError("only_stretch applies to the uniform timing, not to time_optimal")
        period = request.sample_period or self.params.values["sample_period"]
        if not (math.isfinite(period) and period > 0):
            raise ValueError("sample_period must be finite and positive")
        model, lim = self.model, self.model.limits
        fit, res, peak_v = retime_samples(data["times"], data["positions"], data["velocities"], data["accelerations"], model,
                                          period, eff, vel, acceleration_limits=acc, lower=lim["lower"],
                                          upper=lim["upper"], names=model.joint_names, max_samples=MAX_SAMPLES)
        perm = order.to_request
        rows = [float_rows(v[:, perm]) for v in (fit.q, fit.qd, fit.qdd, fit.effort)]
        response.trajectory = JointTrajectory(header=request.trajectory.header, joint_names=list(order.names), points=[
            JointTrajectoryPoint(positions=rows[0][k], velocities=rows[1][k], accelerations=rows[2][k],
                                 effort=rows[3][k], time_from_start=_duration_msg(float(t)))
            for k, t in enumerate(fit.times)])
        response.scale, response.duration, response.binding = float(res.scale), float(fit.duration), res.binding
        response.effort_scale = response.velocity_scale = 0.0
        response.peak_effort_ratio = max(float(res.peak_ratio), float(fit.peak_effort_ratio))
        response.peak_velocity_ratio, response.peak_effort_ratio_before = peak_v, float(res.peak_ratio_before)
        response.message = (f"time-optimal ({res.binding} limits bind): {fit.duration:.4f} s for "
                            f"{data['times'][-1]:.4f} s, {len(fit.times)} points every {period:g} s, peak effort "
                            f"{response.peak_effort_ratio:.1%} and peak velocity {peak_v:.1%} of the limits")

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
    reader_memory_profile()  # before rclpy creates the participant: sample buffers freed once taken
    return run_node(TrajectoryGenerator, args)


if __name__ == "__main__":
    raise SystemExit(main())
