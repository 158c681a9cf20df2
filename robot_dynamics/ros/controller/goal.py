"""A FollowJointTrajectory goal as the control loop sees it, with the semantics of ros2_controllers'
joint_trajectory_controller: the result codes, the per-joint tolerances from the goal and the controller's
``constraints.*`` parameters (JTC's names, 0 = the parameter, < 0 = not checked), the path check of every cycle and
the goal check after the last point.  Pure: no rclpy (the action server lives in
:mod:`robot_dynamics.ros.trajectory_action`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from control_msgs.action import FollowJointTrajectory

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

# JTC's result of a goal preempted by a new one: status CANCELED, code INVALID_GOAL, these words (MoveIt reports a
# preemption, not a failure); ours add what took over after them
PREEMPTED = "Current goal cancelled due to new incoming action."


def preempted(by: str) -> str:
    """The result text of a goal preempted ``by`` (JTC's words first)."""
    return f"{PREEMPTED} (preempted by {by})"


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
    notes: tuple[str, ...] = ()  # what the goal asked for and is not checked (said in the log and the result)

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
    unmeasured: list[str] = []
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
            if tol.acceleration > 0:  # as JTC without an acceleration state interface: accepted, never violated
                unmeasured.append(tol.name)
            elif tol.acceleration < 0:
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
    notes = (f"acceleration tolerances of {', '.join(dict.fromkeys(unmeasured))} not checked: /joint_states "
             "carries no acceleration (as JTC without an acceleration state interface)",) if unmeasured else ()
    return Tolerances(path_p, path_v, goal_p, goal_v, goal_time, notes)


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


class FeedbackPacer:
    """When a goal's feedback is due, on the controller's clock (JTC sets its feedback in ``update()`` with the
    controller's time): every ``period`` seconds of control time, whatever the wall clock does.  The action thread
    polls faster than ``period`` of wall time and publishes when ``due(stamp)`` says so; a paused clock (a stopped
    simulation) publishes nothing new, a clock running faster than the wall is sampled at the poll rate.  The due
    times are a grid (``first + k period``), so the mean rate is exact; after a gap or a backward jump the grid
    restarts from the new stamp instead of catching up in a burst."""

    def __init__(self, period: float) -> None:
        if not period > 0:
            raise ValueError(f"feedback period must be > 0, got {period!r}")
        self.period = round(period * 1e9)  # integer nanoseconds, as the stamps: an exact grid
        self.next: int | None = None

    def due(self, stamp: float) -> bool:
        """True when feedback stamped ``stamp`` (control time, s) is to be published; advances the grid then."""
        t, nxt, period = round(stamp * 1e9), self.next, self.period
        if nxt is not None and nxt - period <= t < nxt:
            return False
        # first feedback, at or past the due time, or before the last one (the clock went back)
        in_grid = nxt is not None and nxt <= t < nxt + period
        self.next = nxt + period if in_grid else t + period
        return True
