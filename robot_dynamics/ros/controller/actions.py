"""The controller node's FollowJointTrajectory goals (checked like a trajectory, with JTC's tolerances; queued,
canceled, their feedback) and the ``~/set_dynamic_parameters`` swap of identified parameters.  A mixin of
:class:`~robot_dynamics.ros.computed_torque_controller.ComputedTorqueControllerNode` (the action server:
:mod:`robot_dynamics.ros.trajectory_action`)."""

from __future__ import annotations

import time

import numpy as np
from control_msgs.action import FollowJointTrajectory
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics_interfaces.srv import SetDynamicParameters

from ...identification.update import updated_model
from ..runtime import Refused
from ..trajectory_action import (
    INVALID_GOAL,
    INVALID_JOINTS,
    JOINT_CAUSES,
    OLD_HEADER_TIMESTAMP,
    GoalError,
    GoalRun,
    tolerances,
)
from .inputs import MODEL_BUILD_WAIT

STATE_WAIT = 2.0  # s a goal waits for the first valid joint state (action thread)


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


class Actions:
    """The node's FollowJointTrajectory goals and parameter swaps (mixin of the controller node: its attributes)."""

    def on_set_dynamic_parameters(self, request: SetDynamicParameters.Request,
                                  response: SetDynamicParameters.Response) -> SetDynamicParameters.Response:
        """Side thread: identified parameters swapped into the running controller without a restart.  The new model
        and control context are built here (the loop keeps commanding with the old ones), adopted at a cycle boundary
        keeping the running trajectory (law state reset), and the answer comes once the loop uses them."""
        source = request.source or "a client"
        key = (tuple(request.names), np.asarray(request.values, dtype=float).tobytes())
        last = self._last_swap
        if last is not None and last[0] == key and last[1] is self.core.ctx:
            # the values of the last swap, still in use (a client that re-sent its request): nothing to build
            response.success = True
            response.message = f"{len(request.names)} dynamic parameters from {source} in use (already: the last swap)"
            return response
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
        self.core.queue_context(ctx, f"dynamic parameters from {source}")
        self._last_swap = (key, ctx)
        end = time.monotonic() + 2.0
        while self.core.ctx is not ctx and time.monotonic() < end:
            time.sleep(0.005)
        response.success = True
        response.message = (f"{len(request.names)} dynamic parameters from {source} " +
                            ("in use" if self.core.ctx is ctx else "adopted at the next cycle (the loop is not running)"))
        return response

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
            t = self.core.clock.tau  # the trajectory's time (speed scaling)
            times = self.core.trajectory.times if self.core.trajectory is not None else None
        fb.index = int(np.searchsorted(times, t, side="right")) - 1 if times is not None else run.points - 1
        return fb
