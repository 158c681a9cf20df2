"""What the control cycle adopts at its boundary (a mixin of :class:`~.core.ControlCore`): a new control context
(new parameters: the trajectory goes on; a new model: dropped), a checked trajectory or FollowJointTrajectory goal
(JTC's preemption order), a checked pose reference.  The inputs are queued from the executor's and the action's
threads (the ``queue_*`` methods take the lock) and taken by :meth:`Intake.take_pending` under it.  Pure Python."""

from __future__ import annotations

import threading

import numpy as np

from ...control.task_space import TaskSpaceLaw
from ...safety import Refused, StateMonitor
from ...trajectory.sampled import SampledTrajectory
from .context import Context
from .goal import ABORTED, CANCELED, INVALID_GOAL, OLD_HEADER_TIMESTAMP, SUCCESSFUL, GoalRun, preempted
from .modes import HOLDING, NO_STATE, TRACKING
from .pose import PoseHold
from .scaling import TrajectoryClock

PendingTrajectory = tuple[SampledTrajectory, "float | None", int, "GoalRun | None"]
"""A checked trajectory waiting for the next cycle: (trajectory, start stamp or None: now, points, goal or None)."""


class Intake:
    """The queues of :class:`~.core.ControlCore` and their adoption at a cycle boundary (the core's attributes and
    its state machine: ``transition``, ``end_goal``, ``hold_here``)."""

    lock: threading.RLock
    out: object
    timeout: float
    monitor: StateMonitor | None
    ctx: Context | None
    pending_ctx: Context | None
    pending_params: str | None
    pending_traj: PendingTrajectory | None
    pending_pose: PoseHold | None
    trajectory: SampledTrajectory | None
    clock: TrajectoryClock
    paused: tuple[float, float] | None
    goal: GoalRun | None
    pose: PoseHold | None
    q: np.ndarray | None

    def queue_context(self, ctx: Context, changed: str | None) -> None:
        """A new control context for the next cycle boundary (``changed``: the parameters that made it, the
        trajectory goes on; None: a new model).  Takes the lock."""
        with self.lock:
            self.pending_ctx, self.pending_params = ctx, changed

    def queue_trajectory(self, entry: PendingTrajectory) -> None:
        """Queue a checked trajectory for the next cycle; a goal still queued is superseded (aborted, as
        preempted), and a goal accepted before the one queued or running never runs.  Takes the lock."""
        with self.lock:
            old = self.pending_traj
            run = entry[3]
            if run is not None and run.older_than(old[3] if old is not None else None, self.goal):
                run.finish(CANCELED, INVALID_GOAL, preempted("a newer goal before it started"))
                return
            self.pending_traj = entry
            self.pending_pose = None  # a pose reference not adopted yet is superseded
            self.trajectories_accepted += 1  # checked and queued: the next cycle adopts it
        if old is not None and old[3] is not None:
            by = "goal" if entry[3] is not None else "trajectory on ~/joint_trajectory"
            old[3].finish(CANCELED, INVALID_GOAL, preempted(f"a newer {by} before it started"))

    def queue_pose(self, pose: PoseHold, trajectories: int) -> bool:
        """A checked pose reference for the next cycle, unless a trajectory was accepted since its check started
        (``trajectories``: the count then); True when queued.  Takes the lock."""
        with self.lock:
            if self.trajectories_accepted != trajectories:
                return False
            self.pending_pose = pose
            self.poses_accepted += 1
            return True

    def cancel(self, run: GoalRun) -> None:
        """A goal's cancel request: a queued goal is dropped, the running one ends and the arm holds where it is.
        Takes the lock."""
        with self.lock:
            pending = self.pending_traj
            if pending is not None and pending[3] is run:
                self.pending_traj = None
                run.finish(CANCELED, SUCCESSFUL, "canceled before it started")
            elif self.goal is run:
                self.end_goal(CANCELED, SUCCESSFUL, "canceled: holding the current position")
                self.hold_here("goal canceled: holding the current position")
            else:
                run.finish(CANCELED, SUCCESSFUL, "canceled")

    def take_pending(self, now: float | None) -> None:
        """At a cycle boundary: adopt a new context, a checked trajectory, then a checked pose reference."""
        ctx = self.pending_ctx
        if ctx is not None:
            self.pending_ctx = None
            changed, self.pending_params = self.pending_params, None
            self._adopt_context(ctx, changed)
        self._take_references(now)

    def _adopt_context(self, ctx: Context, changed: str | None) -> None:
        old = self.ctx
        self.ctx = ctx
        if self.monitor is None or old is None or old.model.joint_names != ctx.model.joint_names:
            self.monitor = StateMonitor(ctx.envelope, self.timeout)
        else:  # the same arm: the stream goes on, judged with the new margins
            self.monitor.envelope = ctx.envelope
        self.zero = np.zeros(ctx.model.dof)
        self.out.context_in_use(ctx, old, changed)
        if old is None or old.law != ctx.law:
            self.safe_hold = False  # another law holds from now on (the user's choice); new gains: the stand-in
        if changed is not None and old is not None and old.model.joint_names == ctx.model.joint_names:
            # new parameters or dynamic parameters (identified), same arm: the trajectory goes on
            ctx.controller.reset()
            self.out.log("info", f"parameters in use: {changed} (law {ctx.law})")
            if old.model is not ctx.model:  # a swapped model: the state machine says so
                self.transition(self.mode, f"{changed} in use; {self.mode_reason}"[:400])
                self.out.publish_mode()
            if ctx.joints != old.joints:
                self.out.allocate(ctx)
            if self.pose is not None and ctx.task_link != self.pose.link:  # a joint law or another link
                self.hold_here(f"law {ctx.law}" + (f", task_link {ctx.task_link}" if ctx.task_link else "") +
                               ": pose reference dropped, holding the current joint position")
            if self.mode == TRACKING:
                self.out.publish_mode()
            return
        self.out.allocate(ctx)
        self.trajectory = None
        self.pose = None
        self.end_goal(ABORTED, INVALID_GOAL, "a new robot model: trajectory dropped")
        if old is None or old.model.joint_names != ctx.model.joint_names:
            self.q = self.qd = self.hold = None
            self.state_wall = self.state_stamp = None
            self.transition(NO_STATE, f"robot model with {ctx.model.dof} joints; waiting for joint_states")
        else:
            self.hold = None if self.q is None else ctx.envelope.hold_target(self.q)
            ctx.controller.reset()
            self.transition(HOLDING, "new robot model: holding the current position")

    def _take_references(self, now: float | None) -> None:
        """A checked trajectory, then a checked pose reference (queued after it: a later trajectory clears it)."""
        self._take_trajectory(now)
        self._take_pose(now)

    def _take_pose(self, now: float | None) -> None:
        """Adopt a checked pose reference: it replaces the running trajectory (a goal is preempted) and is held by
        the task-space law."""
        pose, ctx = self.pending_pose, self.ctx
        if pose is None or ctx is None or now is None or self.q is None:
            return
        self.pending_pose = None
        if ctx.task_link != pose.link:  # the law or its link changed since the check
            self.out.refuse("pose_joint_space_law" if ctx.task_link is None else "pose_link_changed",
                            f"pose reference of {pose.link} dropped: law {ctx.law}" +
                            (f" controls {ctx.task_link}" if ctx.task_link else ""))
            return
        if self.goal is not None:
            self.end_goal(CANCELED, INVALID_GOAL, preempted("a pose reference"))
        self.trajectory = None
        self.pose = pose
        self.safe_hold = False
        self.hold = pose.q_ref
        if isinstance(ctx.controller, TaskSpaceLaw):
            ctx.controller.reset_posture()
        self.transition(HOLDING, f"pose reference: {pose.text}, held by {ctx.law}")

    def _take_trajectory(self, now: float | None) -> None:
        pending = self.pending_traj
        if pending is None or self.ctx is None or now is None or self.q is None:
            return
        self.pending_traj = None
        traj, stamp, points, run = pending
        t0 = now if stamp is None else stamp
        if t0 + traj.duration < now:
            text = f"trajectory ended {now - t0 - traj.duration:.3f} s before it was taken"
            self.out.refuse("old_stamp", text)
            if run is not None:
                run.finish(ABORTED, OLD_HEADER_TIMESTAMP, text)
            return
        moving = stamp is None and traj.started and self.trajectory is not None and self.paused is None
        if moving:  # the motion goes on: the start segment leaves the running reference, not the arm at rest
            try:
                traj = self._from_running_reference(traj)
            except Refused as exc:
                self.out.refuse(exc.cause, str(exc))
                if run is not None:
                    run.finish(ABORTED, INVALID_GOAL, str(exc))
                return
        if self.goal is not None and self.goal is not run:  # JTC: the running goal is preempted
            self.end_goal(CANCELED, INVALID_GOAL, preempted(
                "a new " + ("goal" if run is not None else "trajectory on ~/joint_trajectory")))
        if run is not None and run.status is not None:  # canceled meanwhile
            return
        self.goal = run
        self.trajectory, self.trajectory_t0 = traj, t0
        if moving:
            self.clock.restart()
        else:
            self.clock.start(now, t0)
        self.paused = None
        self.pose = None  # a joint trajectory takes over from a pose reference
        self.safe_hold = False
        start = "from the running reference" if moving else "now" if t0 <= now else f"in {t0 - now:.3f} s"
        self.transition(TRACKING, f"trajectory of {points} points, {traj.duration:.3f} s (degree {traj.degree}), "
                                  f"starts {start}")

    def _from_running_reference(self, traj: SampledTrajectory) -> SampledTrajectory:
        """``traj`` (started: a first point later than t = 0) with its start segment leaving the running
        trajectory's state at the last cycle's time (position, velocity, acceleration in trajectory time: the
        clock's factor and its ramp go on unchanged), that segment checked against the limits (``Refused``:
        the running motion goes on)."""
        q, qd, qdd = self.trajectory.at(self.clock.tau)
        new, segment = traj.from_state(q, qd, qdd)
        try:
            self.ctx.envelope.check_path(segment, start=q, names=self.ctx.model.joint_names)
        except Refused as exc:
            raise Refused(exc.cause, f"from the running reference: {exc}") from None
        return new


__all__ = ["Intake", "PendingTrajectory"]
