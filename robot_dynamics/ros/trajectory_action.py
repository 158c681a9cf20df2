"""``~/follow_joint_trajectory`` of the computed-torque controller: ``control_msgs/action/FollowJointTrajectory``
with the semantics of ros2_controllers' joint_trajectory_controller (JTC), so MoveIt's
``moveit_simple_controller_manager``, rqt_joint_trajectory_controller and every JTC client can drive the arm.

* **Goals** are accepted at once and checked in the action's thread like a trajectory on ``~/joint_trajectory``
  (names, finite values, times, the whole interpolated path within the position and velocity limits, efforts
  within the effort limits, the start near the arm).  A goal that fails is *aborted* with JTC's code and the
  reason in ``error_string``: ``INVALID_JOINTS`` (missing, unknown or duplicate joints), ``OLD_HEADER_TIMESTAMP``
  (a stamped trajectory that ended before it could start), ``INVALID_GOAL`` (anything else).  ROS 2 cannot
  attach a result to a rejection; aborting lets the client read why.
* **Tolerances** per joint from the goal (``path_tolerance``, ``goal_tolerance``; a value > 0 is the tolerance,
  0 takes the controller's parameter, < 0 disables the check) or the parameters ``constraints.<joint>.trajectory``
  (position path tolerance), ``constraints.<joint>.goal`` (position goal tolerance), ``constraints.goal_time`` and
  ``constraints.stopped_velocity_tolerance`` (the velocity goal tolerance when the goal gives none), 0 = not
  checked, as JTC names them.  The control loop checks the path tolerances every cycle while the trajectory
  runs: a violation aborts the goal with ``PATH_TOLERANCE_VIOLATED`` and the arm holds where it is.  After the
  last point the goal succeeds (``SUCCESSFUL``) as soon as the arm is within the goal tolerances, or is aborted
  with ``GOAL_TOLERANCE_VIOLATED`` ``goal_time_tolerance`` after the end (0: waits, as JTC); the arm holds the
  last point either way.  Acceleration tolerances > 0 are refused (``/joint_states`` has no acceleration).
* **Feedback** at ``action_monitor_rate``: desired, actual and error (positions, velocities; the controller's
  joint order), and ``index``, the trajectory point the reference has passed.
* **Cancel**: the arm holds where it is (status CANCELED).  **Preemption**: a new goal (or a trajectory on the
  topic) replaces the running one at a cycle boundary, the reference continuing from the arm; the old goal is
  aborted with ``error_string`` saying so (``error_code`` SUCCESSFUL, as JTC).  Time jumps, stale states, a new
  robot model and shutdown abort the goal with the reason (``INVALID_GOAL``).

The server lives on a hidden side node of the controller's process spun by its own multithreaded executor (rclpy's
EventsExecutor does not run action servers); its name is the controller's ``~/follow_joint_trajectory``.
"""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectoryPoint

from .gil_free_goal import GilFreeGoalTake
from .request_gate import GoalOfTrajectory, Oversize, RequestGate
from .runtime import own_participant

Result = FollowJointTrajectory.Result
SUCCESSFUL = Result.SUCCESSFUL
INVALID_GOAL = Result.INVALID_GOAL
INVALID_JOINTS = Result.INVALID_JOINTS
OLD_HEADER_TIMESTAMP = Result.OLD_HEADER_TIMESTAMP
PATH_TOLERANCE_VIOLATED = Result.PATH_TOLERANCE_VIOLATED
GOAL_TOLERANCE_VIOLATED = Result.GOAL_TOLERANCE_VIOLATED

# causes of validation.Refused that are about the joints
JOINT_CAUSES = frozenset({"wrong_joints", "duplicate_names"})

SUCCEEDED, ABORTED, CANCELED = "succeeded", "aborted", "canceled"


class GoalError(Exception):
    """A goal that cannot run: its result code and the reason."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code


@dataclass(frozen=True)
class Tolerances:
    """Per joint in model order (inf: not checked); ``goal_time`` 0: no limit after the end (s)."""

    path_position: np.ndarray
    path_velocity: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    goal_time: float

    @property
    def checks_path(self) -> bool:
        return bool(np.isfinite(self.path_position).any() or np.isfinite(self.path_velocity).any())


ERASE = -1.0  # control_msgs/JointTolerance: -1 "erases" a tolerance (not checked)
ERASE_TOLERANCE = float(np.finfo(np.float32).eps)  # JTC compares with -1 to float epsilon


def _tolerance(value: float, default: float, what: str = "tolerance") -> float:
    """control_msgs/JointTolerance as JTC reads it: > 0 the value, 0 the default (whose 0 means not checked), -1
    not checked; any other negative value is illegal (``GoalError``, INVALID_GOAL: JTC logs it and falls back to
    its defaults, this controller says so to the client)."""
    if value > 0:
        return value
    if abs(value - ERASE) < ERASE_TOLERANCE:
        return np.inf
    if value < 0:
        raise GoalError(INVALID_GOAL, f"{what} is {value:g}: a tolerance is > 0, 0 (the controller's default) or -1 "
                                      "(not checked), as control_msgs/JointTolerance defines")
    return default if default > 0 else np.inf


def tolerances(goal: Any, joints: Sequence[str], defaults: dict[str, Any]) -> Tolerances:
    """The goal's tolerances over the parameters' (``defaults``: ``trajectory``/``goal`` position tolerances per joint
    in model order, ``stopped_velocity_tolerance``, ``goal_time``); ``GoalError`` for what cannot be honoured."""
    n = len(joints)
    index = {j: i for i, j in enumerate(joints)}
    path_p = np.array([_tolerance(0.0, x) for x in defaults["trajectory"]], float)
    path_v = np.full(n, np.inf)
    goal_p = np.array([_tolerance(0.0, x) for x in defaults["goal"]], float)
    goal_v = np.full(n, _tolerance(0.0, defaults["stopped_velocity_tolerance"]))
    for what, entries, pos, vel in (("path_tolerance", goal.path_tolerance, path_p, path_v),
                                    ("goal_tolerance", goal.goal_tolerance, goal_p, goal_v)):
        for k, tol in enumerate(entries):
            j = index.get(tol.name)
            if j is None:
                raise GoalError(INVALID_JOINTS, f"{what}[{k}] names joint {tol.name!r}, not one of {list(joints)}")
            values = (tol.position, tol.velocity, tol.acceleration)
            if not all(np.isfinite(values)):
                raise GoalError(INVALID_GOAL, f"{what}[{k}] ({tol.name}) is not finite")
            if tol.acceleration > 0:
                raise GoalError(INVALID_GOAL, f"{what}[{k}] ({tol.name}) sets an acceleration tolerance: the arm's "
                                              "acceleration is not measured (/joint_states has none); use 0 or -1")
            if tol.acceleration < 0:
                _tolerance(tol.acceleration, 0.0, f"{what}[{k}] ({tol.name}) acceleration")
            pos[j] = _tolerance(tol.position, pos[j] if np.isfinite(pos[j]) else 0.0, f"{what}[{k}] ({tol.name}) position")
            vel[j] = _tolerance(tol.velocity, vel[j] if np.isfinite(vel[j]) else 0.0, f"{what}[{k}] ({tol.name}) velocity")
    if goal.component_path_tolerance or goal.component_goal_tolerance:
        raise GoalError(INVALID_GOAL, "component tolerances (multi-DOF joints) are not supported")
    if goal.multi_dof_trajectory.points or goal.multi_dof_trajectory.joint_names:
        raise GoalError(INVALID_GOAL, "multi-DOF trajectories are not supported")
    gt = goal.goal_time_tolerance
    if gt.nanosec >= 1_000_000_000:
        raise GoalError(INVALID_GOAL, "goal_time_tolerance is not a valid duration (nanosec >= 1e9)")
    goal_time = gt.sec + 1e-9 * gt.nanosec
    # as JTC: > 0 the value, 0 the parameter's (0: no limit), -1 no limit, other negative values illegal
    goal_time = _tolerance(goal_time, float(defaults["goal_time"]), "goal_time_tolerance")
    if not np.isfinite(goal_time):
        goal_time = 0.0  # 0: no limit after the end
    return Tolerances(path_p, path_v, goal_p, goal_v, goal_time)


@dataclass(eq=False)
class GoalRun:
    """One accepted goal between the action's thread and the control loop; ``finish`` is called once by either
    side (the first outcome wins) and wakes the action's thread."""

    handle: Any
    tol: Tolerances
    points: int = 0
    trajectory: Any = None    # the checked SampledTrajectory
    stamp: float | None = None  # its start (control time; None: when adopted)
    checks_path: bool = False
    end_time: float = np.inf  # control time of the last point, once reached
    status: str | None = None
    code: int = SUCCESSFUL
    text: str = ""
    seq: int | None = None  # the order in which the server accepted the goal (None: not from the action server)
    done: threading.Event = field(default_factory=threading.Event)
    _err: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def finish(self, status: str, code: int, text: str) -> bool:
        if self.status is not None:
            return False
        self.status, self.code, self.text = status, code, text
        self.done.set()
        return True

    def older_than(self, *others: GoalRun | None) -> bool:
        """True when another goal was accepted after this one (JTC: the goal received last wins, whichever of
        them finished its checks first — they run in parallel threads)."""
        return self.seq is not None and any(o is not None and o.seq is not None and o.seq > self.seq for o in others)

    def path_violation(self, names: Sequence[str], q_ref: np.ndarray, qd_ref: np.ndarray, q: np.ndarray,
                       qd: np.ndarray) -> str | None:
        """The first joint outside the path tolerances, as text; None when within (control loop, a few µs)."""
        tol = self.tol
        e = self._err
        if e.shape != q.shape:
            e = self._err = np.empty_like(q)
        for ref, x, bound, what in ((q_ref, q, tol.path_position, "position"),
                                    (qd_ref, qd, tol.path_velocity, "velocity")):
            np.subtract(ref, x, out=e)
            np.abs(e, out=e)
            if (e > bound).any():
                j = int(np.argmax(e - bound))
                return f"path tolerance violated: {names[j]} {what} error {e[j]:.4g} > {bound[j]:.4g}"
        return None

    def goal_state(self, names: Sequence[str], q_goal: np.ndarray, q: np.ndarray, qd: np.ndarray,
                   now: float) -> tuple[str, int, str] | None:
        """After the last point: success within the goal tolerances, abort past ``goal_time``; None: wait."""
        tol = self.tol
        ep = np.abs(q_goal - q)
        ev = np.abs(qd)
        if not ((ep > tol.goal_position).any() or (ev > tol.goal_velocity).any()):
            return SUCCEEDED, SUCCESSFUL, f"goal reached {max(now - self.end_time, 0.0):.3f} s after the last point"
        late = now - self.end_time
        if tol.goal_time > 0 and late > tol.goal_time:
            over = np.maximum(ep - tol.goal_position, ev - tol.goal_velocity)
            j = int(np.argmax(over))
            return ABORTED, GOAL_TOLERANCE_VIOLATED, (
                f"goal tolerance violated {late:.3f} s after the last point (goal_time_tolerance {tol.goal_time:g} "
                f"s): {names[j]} position error {ep[j]:.4g} (tolerance {tol.goal_position[j]:.4g}), velocity "
                f"{ev[j]:.4g} (tolerance {tol.goal_velocity[j]:.4g})")
        return None


UNKNOWN_GOAL = ("no such goal on this controller (unknown or expired goal ID; the controller may have restarted "
                "since it was sent): its outcome is unknown")


class _ActionServer(ActionServer):
    """rclpy's ActionServer taking requests with the cyclic collector paused: a goal is converted to Python objects
    as a whole; a 100 000-point goal makes ~1 M objects in ~0.9 s (GIL held: the control loop waits), and
    collections meanwhile held the GIL for tens of ms more.  With ``max_points`` (a callable), goals are taken
    through a :class:`~.request_gate.RequestGate`: one with more points is refused (goal rejected, ``on_oversize``
    told) before any Python object is made (the C take of 10^6 points: ~0.3-0.5 s, not 6-10 s), and that C take
    runs with the GIL released (:class:`~.gil_free_goal.GilFreeGoalTake`: the control loop goes on meanwhile).

    The result of a goal this server does not know (a controller restarted since the goal was sent) is status
    UNKNOWN with ``error_code`` INVALID_GOAL and the reason, not rclpy's empty result (``error_code`` 0, which reads
    as SUCCESSFUL)."""

    def __init__(self, *args: Any, max_points: Callable[[], int] | None = None,
                 on_oversize: Callable[[str], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_oversize = on_oversize
        self.gate = None
        if max_points is not None:
            request = self._action_type.Impl.SendGoalService.Request
            probe = request()
            probe.goal.trajectory.joint_names = ["a"]
            probe.goal.trajectory.points = [JointTrajectoryPoint(positions=[1.0]), JointTrajectoryPoint(positions=[2.0])]
            self.gate = RequestGate.make(request, GoalOfTrajectory, ("trajectory", "points"), max_points, probe, 2)
        # the C take of a goal with the GIL released (the control loop runs meanwhile); None: rclpy's take
        self.gil_free = (GilFreeGoalTake.attach(self, self._action_type.Impl.SendGoalService.Request,
                                                self.gate.gated_type) if self.gate is not None else None)

    async def _execute_goal_request(self, request_header_and_message):  # noqa: ANN001, ANN202 - rclpy's
        request_header, request = request_header_and_message
        if isinstance(request, (Oversize, BaseException)):  # counted by the gate: no Python goal was made
            why = (f"goal with {request.points} trajectory points refused before conversion (max_trajectory_points "
                   f"{self.gate.limit() if self.gate else '?'})" if isinstance(request, Oversize)
                   else f"goal could not be converted: {type(request).__name__}: {request}")
            response = self._action_type.Impl.SendGoalService.Response()
            response.accepted = False
            with self._lock:
                self._handle.send_goal_response(request_header, response)
            if self._on_oversize is not None:
                self._on_oversize(why)
            return None
        return await super()._execute_goal_request(request_header_and_message)

    async def _execute_get_result_request(self, request_header_and_message):  # noqa: ANN001, ANN202 - rclpy's
        request_header, request = request_header_and_message
        if bytes(request.goal_id.uuid) in self._goal_handles:
            return await super()._execute_get_result_request(request_header_and_message)
        response = self._action_type.Impl.GetResultService.Response()
        response.status = GoalStatus.STATUS_UNKNOWN
        response.result.error_code = INVALID_GOAL
        response.result.error_string = UNKNOWN_GOAL
        with self._lock:
            self._handle.send_result_response(request_header, response)
        return None

    def take_data(self):  # noqa: ANN201 - rclpy's signature
        enabled = gc.isenabled()
        gc.disable()
        gated = self.gate is not None and self._is_goal_request_ready
        try:
            if gated:  # rclpy takes the goal with the class it finds here: the gated one for this call
                self._is_goal_request_ready = False
                with self._lock:
                    taken = (self.gil_free.take() if self.gil_free is not None
                             else self._handle.take_goal_request(self.gate.gated_type))
                data = super().take_data()
                if taken[0] is not None:
                    data["goal"] = taken
                return data
            return super().take_data()
        finally:
            if enabled:
                gc.enable()


class FollowJointTrajectoryServer:
    """The action server of a controller node (see the module docstring).  The controller provides
    ``prepare_goal(handle) -> GoalRun`` (raises ``GoalError``), ``submit_goal(run)``, ``cancel_goal(run)`` and
    ``goal_feedback(run) -> FollowJointTrajectory.Feedback | None``."""

    def __init__(self, controller: Node, rate: float, threads: int = 4, *, max_points: Callable[[], int] | None = None,
                 on_oversize: Callable[[str], None] | None = None) -> None:
        self.controller = controller
        self.period = 1.0 / rate
        self.runs: set[GoalRun] = set()
        self._lock = threading.Lock()
        self._accepted = itertools.count()  # arrival order of the goals (their checks then run in parallel)
        self._order: dict[bytes, int] = {}
        self._closing = False
        side = Node(f"_{controller.get_name()}_follow_joint_trajectory", namespace=controller.get_namespace(),
                    context=own_participant(), use_global_arguments=False, start_parameter_services=False,
                    enable_rosout=False)
        side.executor_threads = threads  # runtime.run_node spins it with a multithreaded executor
        self.node = side
        self.name = controller.resolve_topic_name("~/follow_joint_trajectory")
        self.server = _ActionServer(side, FollowJointTrajectory, self.name, execute_callback=self._execute,
                                   goal_callback=self._on_goal, cancel_callback=self._on_cancel,
                                   handle_accepted_callback=self._on_accepted,
                                   callback_group=ReentrantCallbackGroup(), max_points=max_points,
                                   on_oversize=on_oversize)

    def _on_goal(self, goal: Any) -> GoalResponse:
        """Accepted at once (checked in the execute callback, so a bad goal gets its reason in the result)."""
        return GoalResponse.REJECT if self._closing else GoalResponse.ACCEPT

    def _on_accepted(self, handle: Any) -> None:
        """Numbered in the order the server accepted them, then executed (rclpy's default)."""
        with self._lock:
            self._order[bytes(handle.goal_id.uuid)] = next(self._accepted)
        handle.execute()

    def _on_cancel(self, handle: Any) -> CancelResponse:
        return CancelResponse.ACCEPT

    def _execute(self, handle: Any) -> Result:
        ctl = self.controller
        with self._lock:
            seq = self._order.pop(bytes(handle.goal_id.uuid), None)
        try:
            run = ctl.prepare_goal(handle)
        except GoalError as exc:
            handle.abort()
            ctl.get_logger().warning(f"goal aborted before it ran ({exc.code}): {exc}")
            return Result(error_code=exc.code, error_string=str(exc))
        except Exception as exc:  # noqa: BLE001 - a goal never takes the node down
            handle.abort()
            return Result(error_code=INVALID_GOAL, error_string=f"{type(exc).__name__}: {exc}")
        run.seq = seq
        with self._lock:
            self.runs.add(run)
        try:
            ctl.submit_goal(run)
            cancel_sent = False
            while not run.done.wait(self.period):
                if handle.is_cancel_requested and not cancel_sent:
                    cancel_sent = True
                    ctl.cancel_goal(run)
                    continue
                feedback = ctl.goal_feedback(run)
                if feedback is not None and handle.is_active:
                    handle.publish_feedback(feedback)
        finally:
            with self._lock:
                self.runs.discard(run)
        if run.status == SUCCEEDED:
            handle.succeed()
        elif run.status == CANCELED and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        text = f"goal {run.status} ({run.code}): {run.text}"
        if run.status == SUCCEEDED:  # one call site per severity (rclpy refuses a call site whose severity changes)
            ctl.get_logger().info(text)
        else:
            ctl.get_logger().warning(text)
        return Result(error_code=run.code, error_string=run.text)

    def close(self, reason: str) -> None:
        """Abort every goal still running (shutdown) and refuse new ones."""
        self._closing = True
        with self._lock:
            runs = list(self.runs)
        for run in runs:
            run.finish(ABORTED, INVALID_GOAL, reason)
        for run in runs:  # let the execute callbacks send their results
            run.done.wait(0.0)


__all__ = ["FollowJointTrajectoryServer", "GoalError", "GoalRun", "Tolerances", "tolerances"]
