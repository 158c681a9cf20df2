"""The control cycle of the computed-torque controller, without ROS: ``update(now, wall) -> Cycle`` over the
state machine, the reference (trajectory, pose reference, hold), the goal's tolerances, the law and the limit guard
— what a ros2_control controller's ``update(time, period)`` is.  The node
(:mod:`robot_dynamics.ros.computed_torque_controller`) takes the inputs off the wire and hands them here, publishes
what a cycle returns, and implements :class:`Outputs` (logging, mode messages, message buffers).

State machine (``ControllerState.mode``): ``no_model`` -> ``no_state`` -> ``holding`` / ``tracking``; ``stale``
when the last accepted state is older than ``timeout`` (steady clock, ``wall``): the arm is braked to rest, then
held against gravity, for at most ``stale_hold`` s (:data:`STALE_HOLD`); after that nothing is commanded and the
drive's own command timeout applies (its brake), until a state is trusted again.  A running trajectory is paused
meanwhile (its clock stopped, its goal kept): states back within ``stale_goal_timeout`` (:data:`STALE_GOAL`), it
resumes from the point of its path nearest the arm; later, the goal aborts with the cause.  After a time jump (the
control time going back or leaping more than ``max_time_step``), the running trajectory is dropped and the arm holds
where it is (never outside its limits: the safety envelope's hold target).  A new
trajectory, goal or pose reference is adopted at a cycle boundary (:meth:`ControlCore.take_pending`); a goal
accepted after another one preempts it (JTC's order), whichever finished its checks first.

Thread safety: every method runs under :attr:`ControlCore.lock` (the loop thread, the executor's callbacks, the
action's threads); the methods that take it themselves say so.  Pure Python: no rclpy.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...control import JointController
from ...safety import StateMonitor
from ...trajectory.sampled import SampledTrajectory
from .context import Context
from .effort_scaling import EffortScaling
from .goal import (
    ABORTED,
    INVALID_GOAL,
    PATH_TOLERANCE_VIOLATED,
    GoalRun,
)
from .intake import Intake, PendingTrajectory
from .modes import HOLDING, NO_MODEL, NO_STATE, STALE, TRACKING
from .pose import PoseHold, pose_guard
from .scaling import TrajectoryClock, rejoin

BLIND_FRACTION = 0.5
"""A state older than this fraction of ``timeout`` (steady clock) no longer drives the law: run on a frozen state, the
law's feedback accelerates the arm without seeing it (a conflicting publisher refused for 0.2 s made the simulated
RX-90 coast 1.3-2.7 rad under the gravity hold that followed, 0.14 rad past joint5's limit once).  The arm is braked
to rest from the last accepted state instead (open loop, :meth:`ControlCore.blind_command`) until a fresh state comes
back, or the state goes stale (the same command while the braking lasts, then the gravity hold)."""

STALE_GOAL = 5.0
"""s: the default ``stale_goal_timeout``.  A drive's states late for 100 ms on a busy host aborted 36 of 60 goals of a
soak at a 0.1 s ``state_timeout``: a paused trajectory that resumes when they are back gets the work done, safely (the
arm is braked and held meanwhile, as before)."""

STALE_HOLD = 1.0
"""s: the default ``stale_hold_timeout``.  The stale output is open loop on the last trusted state: unbounded, it held
gravity at a position the arm had left (a busy host made the controller refuse the real stream for ~65 s after a fault;
the simulated RX-90 drifted 3 rad past joint3's limit under that hold, the simulator's watchdog never tripping because
commands kept coming)."""



class Outputs(Protocol):
    """What the core tells its node (called under the lock)."""

    def transition(self, mode: str, reason: str, changed: bool) -> None:
        """The mode or its reason changed (log it; publish the mode when ``changed`` or tracking)."""

    def publish_mode(self) -> None:
        """Publish the mode now (a mode message without a cycle's figures)."""

    def context_in_use(self, ctx: Context, old: Context | None, changed: str | None) -> None:
        """``ctx`` replaced ``old`` (``changed``: the parameters that made it, or None: a new model)."""

    def allocate(self, ctx: Context) -> None:
        """Make the per-cycle message buffers of ``ctx``'s joints."""

    def log(self, level: str, text: str) -> None:
        """``level`` "info" or "warning"."""

    def refuse(self, cause: str, text: str) -> None:
        """Count and log an input or output refused."""

    def latest_refusal(self) -> tuple[str, str] | None:
        """(cause, text) of the last refusal, if any (said when the states go stale)."""


@dataclass
class Cycle:
    """What one control cycle commands: ``tau`` (model order, the law's saturated command through the limit guard;
    the node clips it to the effort limits in use when it publishes) for the reference ``q_ref, qd_ref, qdd_ref``;
    ``sampling_ns``/``law_ns``: thread CPU time of the reference sampling and of the law."""

    tau: np.ndarray
    q_ref: np.ndarray
    qd_ref: np.ndarray
    qdd_ref: np.ndarray
    sampling_ns: int = 0
    law_ns: int = 0


class ControlCore(Intake):
    """The controller's state and its control cycle (module docstring).  ``trigger``: "timer" (the control time is
    the clock) or "state" (lockstep: the control time is the state's stamp); ``timeout``: state_timeout (s);
    ``stale_behavior``: "gravity_hold" or "none"; ``pose_margin``: pose_limit_margin (rad, m); ``stale_hold``:
    stale_hold_timeout (s, how long the stale output lasts); ``stale_goal_timeout`` (s, how long a paused trajectory
    waits for the states); ``resume_tolerance``: start_tolerance (rad, m: how far from its path it resumes)."""

    def __init__(self, out: Outputs, *, trigger: str, timeout: float, stale_behavior: str, pose_margin: float,
                 motor_topic: str = "", stale_hold: float = STALE_HOLD, stale_goal_timeout: float = STALE_GOAL,
                 resume_tolerance: float = 0.1) -> None:
        self.out = out
        self.trigger = trigger
        self.timeout = timeout
        self.max_time_step = max(1.0, 2.0 * timeout)  # a larger leap of the control time is a time jump
        self.stale_behavior = stale_behavior
        self.stale_hold = stale_hold
        self.released = False  # stale beyond stale_hold: nothing commanded (said once)
        self.pose_margin = pose_margin
        self.motor_topic = motor_topic
        self.lock = threading.RLock()
        self.monitor: StateMonitor | None = None  # which joint state to trust (safety envelope; with the first model)
        self.ctx: Context | None = None
        self.pending_ctx: Context | None = None
        self.pending_params: str | None = None  # the parameters that made pending_ctx (None: a new model)
        self.pending_traj: PendingTrajectory | None = None
        self.pending_pose: PoseHold | None = None
        self.trajectory: SampledTrajectory | None = None
        self.goal: GoalRun | None = None  # the action goal the running trajectory belongs to
        self.trajectory_t0 = 0.0
        self.clock = TrajectoryClock()  # the trajectory's time, advanced at the speed scaling factor
        self.effort_scaling = EffortScaling()  # speed_scaling.dynamics_aware: the factor the efforts ahead allow
        self.feed_forward_only = False  # command_interfaces position / velocity: no law, the model's effort only
        self._capped: SampledTrajectory | None = None  # the trajectory effort_scaling last started on
        self.paused: tuple[float, float] | None = None  # stale: (the trajectory's time, steady time of the last state)
        self.stale_goal_timeout = stale_goal_timeout
        self.resume_tolerance = resume_tolerance
        self.trajectories_accepted = 0
        self.pose: PoseHold | None = None  # the pose reference held (task-space laws), when no trajectory runs
        self.poses_accepted = 0
        self.safe_hold = False  # a dropped pose: held by the context's hold_controller until the next reference
        self.hold: np.ndarray | None = None
        self.q: np.ndarray | None = None
        self.qd: np.ndarray | None = None
        self.state_stamp: float | None = None  # stamp of the last accepted state (s)
        self.state_wall: float | None = None   # steady time of its arrival
        self.last_now: float | None = None     # control time of the last cycle
        self.mode = NO_MODEL
        self.mode_reason = "waiting for the robot description"
        self.guarded_cycles = 0  # cycles whose command the limit guard changed
        self.blind_cycles = 0  # cycles commanded without a fresh state (blind_command)
        self.motor_state: tuple[float, np.ndarray, np.ndarray] | None = None  # law elastic: (stamp, θ, θ̇)
        self.zero = np.zeros(0)

    # ------------------------------------------------------------ settings
    @property
    def blind_age(self) -> float:
        """Age of the last accepted state beyond which the law no longer runs on it (:data:`BLIND_FRACTION`)."""
        return BLIND_FRACTION * self.timeout

    def set_timeout(self, timeout: float) -> None:
        self.timeout = timeout
        self.max_time_step = max(1.0, 2.0 * timeout)
        if self.monitor is not None:
            self.monitor.timeout = timeout

    # ------------------------------------------------------------ state machine
    def transition(self, mode: str, reason: str) -> None:
        """Enter ``mode`` (told once per change)."""
        if mode == self.mode and reason == self.mode_reason:
            return
        changed = mode != self.mode
        self.mode, self.mode_reason = mode, reason
        self.out.transition(mode, reason, changed)

    def end_goal(self, status: str, code: int, text: str) -> None:
        """The running goal's outcome; the action's thread sends the result."""
        goal, self.goal = self.goal, None
        if goal is not None:
            goal.finish(status, code, text)

    def hold_here(self, reason: str) -> None:
        """Drop the running trajectory (or pose reference) and hold the measured position (law state reset).  A
        trajectory checked but not yet adopted stays queued: its start is judged on the new time base."""
        self.trajectory = None
        self.paused = None
        self.pose = None
        self.safe_hold = False
        self.end_goal(ABORTED, INVALID_GOAL, f"trajectory dropped: {reason}")
        if self.q is not None:
            self.hold = self.ctx.envelope.hold_target(self.q) if self.ctx is not None else self.q.copy()
        if self.ctx is not None:
            self.ctx.controller.reset()
        self.transition(HOLDING, reason)

    def is_stale(self, wall: float) -> bool:
        """True when the last state is older than ``timeout`` at steady time ``wall``; the transitions into and out
        of ``stale``: a running trajectory is paused going in (its goal kept for ``stale_goal_timeout`` s, 0: aborted
        at once), resumed where the arm is when states come back in time (:meth:`resume_paused`), else dropped
        (timer trigger)."""
        stale = self.state_wall is None or wall - self.state_wall > self.timeout
        if stale and self.mode != STALE and self.state_wall is not None:
            why = self._last_refused()
            self.released = False
            pause = self.trajectory is not None and self.stale_goal_timeout > 0.0
            if pause:
                self.paused = (self.clock.tau, self.state_wall)
            else:
                self.end_goal(ABORTED, INVALID_GOAL, f"no valid joint state for more than {self.timeout} s{why}")
            self.transition(STALE, f"no valid joint state for more than {self.timeout} s: " + (
                f"holding gravity for at most {self.stale_hold:g} s" if self.stale_behavior == "gravity_hold"
                else "publishing nothing") + (f"; trajectory paused at t = {self.clock.tau:.3f} s for at most "
                                              f"{self.stale_goal_timeout:g} s" if pause else "") + why)
        elif stale and self.mode == STALE:
            if self.paused is not None and wall - self.state_wall > self.timeout + self.stale_goal_timeout:
                self.paused, self.trajectory = None, None
                why = self._last_refused()
                self.end_goal(ABORTED, INVALID_GOAL, f"no valid joint state for more than "
                                                     f"{self.timeout + self.stale_goal_timeout:g} s (stale_goal_timeout "
                                                     f"{self.stale_goal_timeout:g} s){why}")
                self.transition(STALE, f"no valid joint state for more than {self.timeout + self.stale_goal_timeout:g}"
                                       f" s: the paused trajectory dropped{why}")
            if not self.released and self.hold_ended(wall):
                self.released = True
                why = self._last_refused()
                self.transition(STALE, f"no valid joint state for more than {self.timeout + self.stale_hold:g} s: "
                                       f"stale output ended (stale_hold_timeout {self.stale_hold:g} s), publishing "
                                       "nothing: the drive's command timeout applies" + why)
        elif not stale and self.mode == STALE:
            if self.paused is not None and self.trajectory is not None:
                self.resume_paused()
            elif self.trigger == "timer":  # time went on without us: never resume a trajectory mid-way
                self.hold_here("joint state back: trajectory dropped, holding the current position")
                self.last_now = None
            else:  # the control time is the state stamp: stamp jumps are judged in accept_state
                self.transition(TRACKING if self.trajectory is not None else HOLDING, "joint state back")
            self.paused = None
        return stale

    def resume_paused(self) -> None:
        """States back within ``stale_goal_timeout``: the paused trajectory goes on from the point of its path nearest
        the arm (:func:`~.scaling.rejoin`: a braked arm stopped a little ahead), at the arm's own pace along it,
        ramping to the requested factor; the law's state reset.  Farther than ``resume_tolerance`` from the path:
        dropped, the arm held where it is.  Lockstep: the control time is the states' stamps, the trajectory goes
        on."""
        tau_p, since = self.paused
        outage = self.state_wall - since
        if self.trigger == "state":
            self.transition(TRACKING, f"joint state back after {outage:.3f} s: the trajectory goes on")
            return
        tau, dist, pace = rejoin(self.trajectory, tau_p, self.q, self.qd)
        if dist > self.resume_tolerance:
            self.hold_here(f"no valid joint state for {outage:.3f} s; back, the arm is {dist:.4g} from the paused "
                           f"trajectory (start_tolerance {self.resume_tolerance:g}): holding the current position")
        else:
            self.clock.resume(tau, min(pace, self.clock.requested))
            if self.ctx is not None:
                self.ctx.controller.reset()
            self.transition(TRACKING, f"joint state back after {outage:.3f} s: the trajectory resumed at t = "
                                      f"{tau:.3f} s (paused at {tau_p:.3f} s, {dist:.3g} from the arm)")
        self.last_now = None  # the outage is not a time jump

    def _last_refused(self) -> str:
        """" (last refused: cause: text)" of the latest refusal, said with the stale transitions; "" if none."""
        latest = self.out.latest_refusal()
        return f" (last refused: {latest[0]}: {latest[1][:300]})" if latest is not None else ""

    def hold_ended(self, wall: float) -> bool:
        """True when the last accepted state is older than ``timeout + stale_hold`` at steady time ``wall``: the stale
        output (braking, gravity hold) has ended."""
        return self.state_wall is not None and wall - self.state_wall > self.timeout + self.stale_hold

    def stale_output(self, wall: float) -> np.ndarray | None:
        """The watchdog's command while stale (call after :meth:`is_stale` said so): gravity at the last position
        (``gravity_hold``), unless the loop is still braking the arm to rest (timer trigger: every cycle, see
        :meth:`update`), the behaviour is ``none`` or the hold has ended (``stale_hold``)."""
        if self.stale_behavior != "gravity_hold" or self.hold_ended(wall) or self.ctx is None or self.q is None:
            return None
        if self.trigger == "timer" and self.blind_command(wall - self.state_wall)[1]:
            return None
        return self.holding_torque()

    # ------------------------------------------------------------ states
    def state_arrived(self, q: np.ndarray, qd: np.ndarray, stamp: float, now_clock: float, wall: float) -> None:
        """A valid timer-triggered state judged by the safety envelope's :class:`StateMonitor` (stamps against the
        clock, order, impossible values, jumps, two sources disagreeing), then accepted (or ``Refused``).  Takes
        the lock."""
        with self.lock:
            if self.last_now is not None and now_clock < self.last_now:  # the clock went back: a new stream
                self.monitor.reset()
            stamp = self.monitor.judge(q, qd, stamp, now_clock)
            self.accept_state(q, qd, stamp, wall)

    def lockstep_state(self, q: np.ndarray, qd: np.ndarray, stamp: float, wall: float) -> None:
        """A valid state of a state-triggered (lockstep) loop, its stamp the control time; judged, then accepted
        (or ``Refused``)."""
        if self.state_stamp is not None and not 0.0 <= stamp - self.state_stamp <= self.max_time_step:
            self.monitor.reset()  # a restarted simulation: its first state is trusted (accept_state holds)
        self.monitor.judge(q, qd, stamp, stamp)
        self.accept_state(q, qd, stamp, wall)

    def accept_state(self, q: np.ndarray, qd: np.ndarray, stamp: float, wall: float) -> None:
        self.q, self.qd = q, qd
        if self.trigger == "state" and self.state_stamp is not None:
            jump = stamp - self.state_stamp
            if jump < 0 or jump > self.max_time_step:
                self.hold_here(f"state stamps jumped by {jump:+.3f} s (restart?)")
        self.state_stamp = stamp
        self.state_wall = wall
        if self.hold is None:
            self.hold = self.ctx.envelope.hold_target(q)  # never outside the limits

    # ------------------------------------------------------------ the cycle
    def update(self, now: float, wall: float) -> Cycle | None:
        """One control cycle at control time ``now`` and steady time ``wall`` (call under the lock): adopt what is
        pending, judge staleness and time jumps, take the reference (trajectory with its goal's path tolerances,
        pose, hold), run the law and the limit guard.  None: nothing to command this cycle (no model or state,
        stale, a time jump, a non-finite law output)."""
        clock = time.thread_time_ns
        if self.pending_ctx is not None or self.pending_traj is not None or self.pending_pose is not None:
            self.take_pending(now)
        ctx = self.ctx
        if ctx is None or self.q is None:
            return None
        stale = self.is_stale(wall)
        if self.trigger == "timer" and (stale or wall - self.state_wall > self.blind_age):
            if stale and (self.stale_behavior != "gravity_hold" or self.hold_ended(wall)):
                return None
            tau, braking = self.blind_command(wall - self.state_wall)
            if stale and not braking:
                return None  # at rest: the watchdog's gravity hold
            self.blind_cycles += 1  # no reference meanwhile: the one reported is the hold target, never outside
            return Cycle(tau, ctx.envelope.hold_target(self.q), self.zero, self.zero)
        if stale:
            return None
        if self.last_now is not None and self.trigger == "timer":
            dt = now - self.last_now
            if dt < 0 or dt > self.max_time_step:
                self.hold_here(f"control time jumped by {dt:+.3f} s")
                # the last state may predate the jump (the loop thread can see the new clock before the first state
                # of the new time base): hold where the FIRST state after the jump puts the arm, and accept it
                # whatever its stamp relative to the old time base
                self.q = None
                self.hold = None
                self.state_stamp = None
                self.monitor.reset()
                self.last_now = now
                return None
        dt, self.last_now = (0.0 if self.last_now is None else now - self.last_now), now
        self.cap_speed(ctx)
        self.clock.advance(now)  # the trajectory's time (speed scaling), every cycle
        t1 = clock()
        q_ref, qd_ref, qdd_ref = self.reference(ctx, now)
        t2 = clock()
        if self.feed_forward_only:  # position / velocity drives: the model's effort at the reference, a feed-forward
            tau = np.asarray(ctx.controller.inverse_dynamics(q_ref, qd_ref, qdd_ref), dtype=float)
        else:
            tau = self.law(ctx, now, q_ref, qd_ref, qdd_ref, None if self.trajectory is not None else self.pose)
        if self.effort_scaling.enabled and tau is not None:  # holding too: a heavier payload's weight shows at rest
            model_tau = tau if self.feed_forward_only else ctx.controller.inverse_dynamics(q_ref, qd_ref, qdd_ref)
            self.effort_scaling.measure(tau, model_tau, dt)  # (feed-forward only: the same call, not twice)
        if tau is None:  # the law failed: gravity hold (saturated), if finite
            tau = self.holding_torque()
            if not np.isfinite(tau).all():
                self.out.refuse("non_finite_output", "a non-finite effort was computed: not sent")
                return None
        if ctx.guard is not None and not self.feed_forward_only:  # inside the position and velocity limits
            age = wall - self.state_wall  # (steady clock, as staleness): set, not stale here
            guarded = ctx.guard.apply(tau, self.q, self.qd, ctx.model.forward_dynamics, ctx.model.inverse_dynamics, age,
                                      ctx.effort, ctx.model.inertia_matrix)  # within the effort limits too
            if guarded is not tau:
                self.guarded_cycles += 1
                tau = guarded
        return Cycle(tau, q_ref, qd_ref, qdd_ref, sampling_ns=t2 - t1, law_ns=clock() - t2)

    def cap_speed(self, ctx: Context) -> None:
        """Dynamics-aware speed scaling (``speed_scaling.dynamics_aware``, :mod:`.effort_scaling`): the factor the
        whole trajectory allows when it is taken (at rest on its path the factor takes it at once: no velocity to
        jump), then the window ahead; it bounds the clock's target; said when it starts and stops limiting."""
        es = self.effort_scaling
        traj = self.trajectory
        before = self.clock.cap
        if traj is None or self.paused is not None or not es.enabled:
            es.reset()
            self.clock.cap, self._capped = 1.0, None
        else:
            args = (ctx.effort, ctx.controller.inverse_dynamics, list(ctx.model.joint_names))
            if self._capped is not traj:
                self._capped = traj
                cap = es.start(traj, *args)
            else:
                cap = es.update(traj, self.clock.tau, self.clock.factor, *args)
            self.clock.cap = cap
            if self.clock.factor > cap and not np.any(traj.at(self.clock.tau)[1]):
                self.clock.set_factor(cap)  # at rest on the path (a start): no ramp needed, the velocity is 0
        if (self.clock.cap < 1.0) != (before < 1.0):
            self.out.log("warning" if self.clock.cap < 1.0 else "info",
                         f"dynamics-aware speed scaling: factor at most {self.clock.cap:.3f} ({es.limiting} near its "
                         f"effort limit x {es.margin:g})" if self.clock.cap < 1.0 else
                         "dynamics-aware speed scaling: the efforts fit, the requested factor again")

    def reference(self, ctx: Context, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cycle's reference (model order) and its consequences: a goal's path tolerances (violated: abort, hold
        here), the trajectory's end (hold its last point), a pose near a limit (dropped), the goal's outcome."""
        traj, goal = self.trajectory, self.goal
        if traj is not None:
            tt = self.clock.tau  # advanced by this cycle (update)
            q_ref, qd_ref, qdd_ref = self.clock.scaled(*traj.at(tt))
            text = None
            if goal is not None and goal.checks_path and tt >= 0.0:
                text = goal.path_violation(ctx.model.joint_names, q_ref, qd_ref, self.q, self.qd)
            if text is not None:
                self.end_goal(ABORTED, PATH_TOLERANCE_VIOLATED, text)
                self.hold_here(f"goal aborted ({text}): holding the current position")
                q_ref, qd_ref, qdd_ref = self.hold, self.zero, self.zero
            elif tt > traj.duration:
                self.hold = ctx.envelope.hold_target(q_ref)
                self.trajectory = None
                if goal is not None:
                    goal.end_time = self.clock.end_time(now, traj.duration)
                self.transition(HOLDING, "trajectory finished: holding its last point")
        elif self.pose is not None:
            why = pose_guard(self.q, self.qd, ctx.lower, ctx.upper, ctx.velocity, self.pose_margin,
                             ctx.model.joint_names)
            if why is not None:
                self.out.log("warning", f"pose reference dropped: {why}")
                # held by joint-space computed torque: the task-space law may be the cause (gains beyond what the
                # loop's latency tolerates make task_space_pid vibrate), it must not hold the arm then
                self.hold_here(f"pose reference dropped ({why}): holding the current joint position with "
                               "computed_torque")
                self.safe_hold = ctx.hold_controller is not None
            q_ref, qd_ref, qdd_ref = self.hold, self.zero, self.zero
        else:
            q_ref, qd_ref, qdd_ref = self.hold, self.zero, self.zero
            if self.mode != HOLDING:
                self.transition(HOLDING, "joint state received: holding the current position")
        if goal is not None and self.trajectory is None and self.goal is goal:  # after the last point
            outcome = goal.goal_state(ctx.model.joint_names, self.hold, self.q, self.qd, now)
            if outcome is not None:
                self.end_goal(*outcome)
        return q_ref, qd_ref, qdd_ref

    def law(self, ctx: Context, now: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray,
            pose: PoseHold | None = None) -> np.ndarray | None:
        """The law's torque (:func:`law_command`: the stand-in after a dropped pose, the elastic law's motor state
        checked fresh); None if it failed (refusal counted)."""
        c = ctx.hold_controller if self.safe_hold and ctx.hold_controller is not None else ctx.controller
        try:
            if getattr(c, "needs_motor_state", False):  # law elastic: the motors' state, fresh
                ms = self.motor_state
                if ms is None:
                    raise ValueError(f"no motor state on {self.motor_topic} yet: holding gravity")
                if abs(now - ms[0]) > self.timeout:
                    raise ValueError(f"motor state stamped {now - ms[0]:.3f} s from the control time (state_timeout "
                                     f"{self.timeout} s): holding gravity")
                c.set_motor_state(ms[1], ms[2])
            return law_command(c, now, self.q, self.qd, q_ref, qd_ref, qdd_ref, pose)
        except ValueError as exc:
            self.out.refuse("law_failed", f"control law failed: {exc}")
            return None

    def blind_command(self, age: float) -> tuple[np.ndarray, bool]:
        """The command while the last accepted state is ``age`` s old beyond :attr:`blind_age`
        (:func:`braking_command` from the moment the law stopped)."""
        return braking_command(self.ctx, self.q, self.qd, max(age - self.blind_age, 0.0))

    def holding_torque(self) -> np.ndarray:
        """Gravity at the last measured position (:func:`holding_torque`)."""
        return holding_torque(self.ctx, self.q)


def law_command(c: JointController, now: float, q: np.ndarray, qd: np.ndarray, q_ref: np.ndarray,
                qd_ref: np.ndarray, qdd_ref: np.ndarray, pose: PoseHold | None = None) -> np.ndarray:
    """The torque of law ``c``, saturated (``ValueError`` when it fails).  The state and reference were validated on
    arrival, so a law with the base class's ``compute`` is called past its input checks (the output check and
    saturation stay).  With a ``pose`` reference, the task-space law's ``compute_task`` (zero twist and
    acceleration)."""
    if pose is not None:
        return c.compute_task(now, q, qd, pose.pose)
    if type(c).compute is not JointController.compute:
        return c.compute(now, q, qd, q_ref, qd_ref, qdd_ref)
    return c.compute_validated(now, q, qd, q_ref, qd_ref, qdd_ref)


def braking_command(ctx: Context, q: np.ndarray, qd: np.ndarray | None, braked_for: float) -> tuple[np.ndarray, bool]:
    """Each joint braked from its velocity ``qd`` at the guard's braking acceleration B for ``braked_for`` s so far,
    then held against gravity at ``q``: (the command within the effort limits in use, True while a joint is still
    braked).  Open loop: the model's A, H at ``q`` (001 eq. 7.61 with q̈ = −B sign(q̇), q̇ the velocity left)."""
    if ctx.guard is None or qd is None:  # the elastic law: no braking model of the springs
        return holding_torque(ctx, q), False
    braking = np.asarray(ctx.guard.braking, float)
    speed = np.maximum(np.abs(qd) - braking * braked_for, 0.0)
    if not np.any(speed > 0.0):
        return holding_torque(ctx, q), False
    v = np.sign(qd) * speed
    tau = np.asarray(ctx.controller.inverse_dynamics(q, v, -np.sign(v) * braking), dtype=float)
    return np.clip(tau, -ctx.effort, ctx.effort), True


def holding_torque(ctx: Context, q: np.ndarray) -> np.ndarray:
    """Gravity torques at ``q``, within the effort limits in use (the stale hold, the last command at shutdown),
    through the law's own (already compiled) Newton–Euler: nothing to build at shutdown.  A non-finite one is refused
    when published."""
    zero = np.zeros(ctx.model.dof)
    return np.clip(np.asarray(ctx.controller.inverse_dynamics(q, zero, zero), dtype=float), -ctx.effort, ctx.effort)

__all__ = ["BLIND_FRACTION", "HOLDING", "NO_MODEL", "NO_STATE", "STALE", "STALE_GOAL", "STALE_HOLD", "TRACKING", "ControlCore", "Cycle", "Outputs",
           "PendingTrajectory", "braking_command", "holding_torque", "law_command"]
