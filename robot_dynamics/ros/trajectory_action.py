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
  last point either way.  Acceleration tolerances > 0 are accepted and never violated, as JTC's without an
  acceleration state interface (``/joint_states`` has no acceleration); the log and the result say so.
* **Feedback** at ``action_monitor_rate`` on the controller's clock (as JTC, whose ``update()`` sets it with the
  controller's time): stamped with the control cycle it shows, every 1/rate s of control time (sim time with a
  simulator: none while the simulation is paused); desired, actual and error (positions, velocities; the
  controller's joint order), and ``index``, the trajectory point the reference has passed.
* **Cancel**: the arm holds where it is (status CANCELED).  **Preemption**: a new goal (or a trajectory on the
  topic) replaces the running one at a cycle boundary, the reference continuing from the arm; the old goal ends
  as JTC's: CANCELED, ``INVALID_GOAL``, "Current goal cancelled due to new incoming action." (and what took over).  Time jumps, stale states, a new
  robot model and shutdown abort the goal with the reason (``INVALID_GOAL``).

The server lives on a hidden side node of the controller's process spun by its own multithreaded executor (rclpy's
EventsExecutor does not run action servers); its name is the controller's ``~/follow_joint_trajectory``.
"""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Callable
from typing import Any

from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectoryPoint

from .controller.goal import (  # noqa: F401 - re-exported: the names the controller and tests read here
    ABORTED,
    CANCELED,
    ERASE,
    ERASE_TOLERANCE,
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    INVALID_JOINTS,
    JOINT_CAUSES,
    OLD_HEADER_TIMESTAMP,
    PATH_TOLERANCE_VIOLATED,
    SUCCEEDED,
    SUCCESSFUL,
    FeedbackPacer,
    GoalError,
    GoalRun,
    Result,
    Tolerances,
    _tolerance,
    tolerances,
)
from .gil_free_goal import GilFreeGoalTake
from .request_gate import GoalOfTrajectory, Oversize, RequestGate
from .runtime import own_participant

# the action thread looks at the controller's clock this many times per feedback period of wall time: feedback is
# published at most 1/4 period after it is due on the controller's clock
POLLS_PER_FEEDBACK = 4
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
            if self._on_oversize is not None:  # counted before the client hears of it (it may ask at once)
                self._on_oversize(why)
            response = self._action_type.Impl.SendGoalService.Response()
            response.accepted = False
            with self._lock:
                self._handle.send_goal_response(request_header, response)
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
        for note in run.tol.notes:
            ctl.get_logger().warning(f"goal accepted; {note}")
        with self._lock:
            self.runs.add(run)
        try:
            ctl.submit_goal(run)
            cancel_sent = False
            pacer = FeedbackPacer(self.period)
            while not run.done.wait(self.period / POLLS_PER_FEEDBACK):
                if handle.is_cancel_requested and not cancel_sent:
                    cancel_sent = True
                    ctl.cancel_goal(run)
                    continue
                feedback = ctl.goal_feedback(run)
                if feedback is not None and handle.is_active and pacer.due(
                        feedback.header.stamp.sec + 1e-9 * feedback.header.stamp.nanosec):
                    handle.publish_feedback(feedback)
        finally:
            with self._lock:
                self.runs.discard(run)
        if run.status == SUCCEEDED:
            handle.succeed()
        elif run.status == CANCELED:
            if not handle.is_cancel_requested:  # preempted (JTC: CANCELED): rcl_action cancels from CANCELING only
                handle._update_state(_rclpy.GoalEvent.CANCEL_GOAL)
            handle.canceled()
        else:
            handle.abort()
        result_text = "; ".join((run.text, *run.tol.notes)) if run.tol.notes else run.text
        text = f"goal {run.status} ({run.code}): {result_text}"
        if run.status == SUCCEEDED:  # one call site per severity (rclpy refuses a call site whose severity changes)
            ctl.get_logger().info(text)
        else:
            ctl.get_logger().warning(text)
        return Result(error_code=run.code, error_string=result_text)

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
