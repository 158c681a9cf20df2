"""The computed-torque controller's control cycle without ROS (robot_dynamics/ros/controller/core.py): scripted
sequences of states, references and times give the expected commands and mode transitions — stale states,
out-of-order stamps, time jumps, the limits (hold targets, the guard), a goal's path and goal tolerances,
preemption, cancel — each at its boundary.  No rclpy, no process."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from robot_dynamics import load_model
from robot_dynamics.ros.controller import core as cc
from robot_dynamics.ros.controller.context import build_context
from robot_dynamics.ros.controller.goal import (
    ABORTED,
    CANCELED,
    INVALID_GOAL,
    PATH_TOLERANCE_VIOLATED,
    PREEMPTED,
    SUCCEEDED,
    GoalRun,
    Tolerances,
)
from robot_dynamics.ros.controller.parameters import PARAMETERS
from robot_dynamics.safety import limit_guard as lg
from robot_dynamics.safety.refusal import Refused
from robot_dynamics.trajectory.sampled import SampledTrajectory

TIMEOUT = 0.5
DT = 0.002


class Recorder:
    """The node's side, recorded."""

    def __init__(self) -> None:
        self.transitions: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []
        self.logs: list[tuple[str, str]] = []
        self.allocated = 0
        self.published = 0
        self.contexts: list[tuple[object, object, str | None]] = []

    def transition(self, mode, reason, changed):
        self.transitions.append((mode, reason))

    def publish_mode(self):
        self.published += 1

    def context_in_use(self, ctx, old, changed):
        self.contexts.append((ctx, old, changed))

    def allocate(self, ctx):
        self.allocated += 1

    def log(self, level, text):
        self.logs.append((level, text))

    def refuse(self, cause, text):
        self.refused.append((cause, text))

    def latest_refusal(self):
        return self.refused[-1] if self.refused else None


@pytest.fixture(scope="module")
def model():
    return load_model("rx90")


@pytest.fixture(scope="module")
def ctx(model):
    values = {**{k: p.default for k, p in PARAMETERS.params.items()}, "backend": "numpy"}
    return build_context(model, values, lg.sampled_extremes(model))


def make_core(ctx, trigger: str = "timer") -> tuple[cc.ControlCore, Recorder]:
    out = Recorder()
    core = cc.ControlCore(out, trigger=trigger, timeout=TIMEOUT, stale_behavior="gravity_hold", pose_margin=0.05)
    core.queue_context(ctx, None)
    return core, out


Q0 = np.array([0.1, -0.2, 0.3, 0.0, 0.4, 0.1])


def running(ctx, q=Q0, t: float = 10.0) -> tuple[cc.ControlCore, Recorder]:
    """A core with a model and one state at control time ``t`` (steady time ``t`` too), holding."""
    core, out = make_core(ctx)
    assert core.update(t, t) is None and core.mode == cc.NO_STATE  # model adopted, no state yet
    core.state_arrived(q, np.zeros(6), t, t, t)
    cycle = core.update(t, t)
    assert cycle is not None and core.mode == cc.HOLDING
    return core, out


def goal(seq: int, path: float = np.inf, goal_tol: float = np.inf) -> GoalRun:
    tol = Tolerances(np.full(6, path), np.full(6, np.inf), np.full(6, goal_tol), np.full(6, np.inf), 0.0)
    run = GoalRun(handle=None, tol=tol, seq=seq)
    run.checks_path = tol.checks_path
    return run


def ramp(q0: np.ndarray, dq: float, duration: float = 1.0) -> SampledTrajectory:
    """q0 -> q0 + dq (every joint) in ``duration`` s, quintic samples, rest to rest."""
    t = np.linspace(0.0, duration, 51)
    u = t / duration
    s = 10 * u**3 - 15 * u**4 + 6 * u**5
    sd = (30 * u**2 - 60 * u**3 + 30 * u**4) / duration
    sdd = (60 * u - 180 * u**2 + 120 * u**3) / duration**2
    d = np.full(6, dq)
    return SampledTrajectory(t, q0 + s[:, None] * d, sd[:, None] * d, sdd[:, None] * d)


def test_the_core_imports_no_rclpy():
    import subprocess

    code = ("import sys; import robot_dynamics.ros.controller.core, robot_dynamics.ros.controller.context; "
            "print(sorted(m for m in sys.modules if m.startswith('rclpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


def test_modes_match_the_interface():
    from robot_dynamics_interfaces.msg import ControllerState as S

    assert (cc.NO_MODEL, cc.NO_STATE, cc.STALE, cc.HOLDING, cc.TRACKING) == (
        S.MODE_NO_MODEL, S.MODE_NO_STATE, S.MODE_STALE, S.MODE_HOLDING, S.MODE_TRACKING)


def test_no_model_then_no_state_then_holding_with_gravity(ctx, model):
    core, out = make_core(ctx)
    assert core.mode == cc.NO_MODEL
    assert core.update(1.0, 1.0) is None
    assert core.mode == cc.NO_STATE and out.allocated == 1 and out.contexts[0][1] is None
    core.state_arrived(Q0, np.zeros(6), 1.0, 1.0, 1.0)
    cycle = core.update(1.0, 1.0)
    assert core.mode == cc.HOLDING and out.transitions[-1][1].startswith("joint state received")
    np.testing.assert_array_equal(cycle.q_ref, Q0)
    # holding at rest on the reference: the law's command is the gravity torque (001 eq. 9.22, e = 0)
    np.testing.assert_allclose(cycle.tau, model.inverse_dynamics(Q0, np.zeros(6), np.zeros(6)), atol=1e-6)


def test_stale_at_the_timeout_boundary_aborts_the_goal_and_resumes_holding(ctx):
    """``stale_goal_timeout`` 0: the goal aborts as the states go stale (test_speed_scaling.py: the pause)."""
    core, out = running(ctx)
    core.stale_goal_timeout = 0.0
    run = goal(seq=1)
    core.queue_trajectory((ramp(Q0, 0.1, 5.0), None, 51, run))
    assert core.update(10.0 + DT, 10.0 + DT) is not None and core.mode == cc.TRACKING
    assert core.update(10.0 + 2 * DT, 10.0 + TIMEOUT) is not None  # exactly state_timeout old: not stale
    assert core.update(10.0 + 3 * DT, 10.0 + TIMEOUT + 1e-6) is None  # just beyond: stale
    assert core.mode == cc.STALE and run.status == ABORTED and run.code == INVALID_GOAL
    assert "no valid joint state" in run.text
    # the state comes back: the trajectory is not resumed mid-way, the arm holds where it is
    core.state_arrived(Q0 + 0.01, np.zeros(6), 10.6, 10.6, 10.6)
    cycle = core.update(10.6, 10.6)
    assert core.mode == cc.HOLDING and core.trajectory is None and "joint state back" in core.mode_reason
    np.testing.assert_allclose(cycle.q_ref, Q0 + 0.01)


def test_the_stale_output_ends_at_stale_hold_timeout_and_comes_back_with_a_state(ctx, model):
    """The gravity hold at the last trusted position lasts ``stale_hold`` s beyond ``state_timeout``, to the boundary;
    just beyond it nothing is commanded (the drive's watchdog brakes) and the mode says so; a trusted state brings the
    hold back, and the next loss of states gets the whole hold again."""
    core, out = running(ctx)
    gravity = model.inverse_dynamics(Q0, np.zeros(6), np.zeros(6))
    assert core.stale_hold == cc.STALE_HOLD == 1.0
    end = 10.0 + TIMEOUT + cc.STALE_HOLD
    assert core.stale_output(10.0) is not None and not core.is_stale(10.0)  # (only called when stale)
    for wall in (10.0 + TIMEOUT + 1e-6, end):  # stale at rest: the watchdog's gravity hold, to the boundary
        assert core.is_stale(wall) and core.update(10.0, wall) is None
        np.testing.assert_allclose(core.stale_output(wall), gravity, atol=1e-6)
        assert core.mode == cc.STALE and "holding gravity for at most 1 s" in core.mode_reason
    assert core.is_stale(end + 1e-6) and core.stale_output(end + 1e-6) is None and core.update(10.0, end + 1e-6) is None
    assert core.released and "stale output ended (stale_hold_timeout 1 s), publishing nothing" in core.mode_reason
    assert [m for m, r in out.transitions].count(cc.STALE) == 2  # entering stale, then the end of its output
    core.is_stale(end + 5.0)
    assert [m for m, r in out.transitions].count(cc.STALE) == 2  # said once
    # a trusted state: holding again (the brake released by the command)
    core.state_arrived(Q0, np.zeros(6), end + 5.0, end + 5.0, end + 5.0)
    cycle = core.update(end + 5.0, end + 5.0)
    assert cycle is not None and core.mode == cc.HOLDING
    t = end + 5.0 + TIMEOUT + 1e-6
    assert core.is_stale(t) and not core.released
    np.testing.assert_allclose(core.stale_output(t), gravity, atol=1e-6)
    # behaviour none: nothing at all; a hold of 0 s: nothing once stale
    core.stale_behavior = "none"
    assert core.stale_output(t) is None
    core.stale_behavior, core.stale_hold = "gravity_hold", 0.0
    assert core.stale_output(t) is None


def test_braking_without_states_also_ends_at_stale_hold_timeout(ctx):
    """A moving arm braked open loop after its states stopped: the braking command is the stale output too, and
    stops at the same bound (the drive's brake takes over), even with the joint still braked."""
    qd = np.zeros(6)
    qd[1] = 0.95 * ctx.envelope.velocity[1]  # joint2 at 3.3 rad/s, braked at 10.6 rad/s^2: 0.31 s
    core, _ = make_core(ctx)
    core.stale_hold = 0.04
    core.update(10.0, 10.0)
    core.state_arrived(Q0, qd, 10.0, 10.0, 10.0)
    assert core.update(10.0, 10.0) is not None
    end = 10.0 + TIMEOUT + 0.04  # braked from blind_age (0.25 s) on: still braking at 0.54 s
    assert core.blind_command(end + 1e-6 - 10.0)[1]  # still braking then
    for wall in (10.0 + TIMEOUT + 1e-6, end):
        braking = core.update(10.0, wall)
        assert braking is not None and core.mode == cc.STALE and not core.released
    assert core.stale_output(end) is None  # (the loop brakes: the watchdog publishes nothing meanwhile)
    assert core.update(10.0, end + 1e-6) is None and core.released


def test_a_time_jump_drops_the_trajectory_and_holds_where_the_next_state_says(ctx):
    core, _ = running(ctx)
    core.queue_trajectory((ramp(Q0, 0.1, 5.0), None, 51, None))
    core.update(10.0, 10.0)
    step = core.max_time_step
    assert core.update(10.0 + step, 10.0) is not None and core.mode == cc.TRACKING  # a leap of max_time_step: no jump
    assert core.update(10.0 + 2 * step + 1e-6, 10.0) is None  # just over it: a jump
    assert core.mode == cc.HOLDING and "jumped" in core.mode_reason and core.trajectory is None
    assert core.q is None and core.hold is None  # the next state, whatever its stamp, sets the hold
    # a simulation restarted while tracking: the control time goes back
    core, _ = running(ctx)
    core.queue_trajectory((ramp(Q0, 0.1, 5.0), None, 51, None))
    core.update(10.0, 10.0)
    assert core.update(1.0, 10.0) is None and "jumped by -9.000" in core.mode_reason and core.q is None
    core.state_arrived(Q0 + 0.02, np.zeros(6), 1.001, 1.001, 10.0)
    cycle = core.update(1.002, 10.0)
    np.testing.assert_allclose(cycle.q_ref, Q0 + 0.02)
    assert core.mode == cc.HOLDING and core.trajectory is None


def test_out_of_order_and_impossible_states_are_refused_and_change_nothing(ctx, model):
    core, _ = running(ctx)
    core.state_arrived(Q0, np.zeros(6), 10.01, 10.01, 10.01)
    with pytest.raises(Refused) as exc:
        core.state_arrived(Q0 + 0.001, np.zeros(6), 10.005, 10.02, 10.02)  # stamped before the last one
    assert exc.value.cause == "out_of_order"
    far = Q0.copy()
    far[0] = 10.0  # a finite but impossible state
    with pytest.raises(Refused):
        core.state_arrived(far, np.zeros(6), 10.03, 10.03, 10.03)
    np.testing.assert_array_equal(core.q, Q0)


def test_a_hold_target_is_never_outside_the_limits(ctx, model):
    upper = np.asarray(model.limits["upper"], float)
    core, _ = make_core(ctx)
    core.update(1.0, 1.0)
    q = np.minimum(Q0, upper)
    q[4] = upper[4] + 0.01  # measured just outside (within the envelope's margin: accepted)
    core.state_arrived(q, np.zeros(6), 1.0, 1.0, 1.0)
    cycle = core.update(1.0, 1.0)
    assert cycle.q_ref[4] == upper[4] and core.hold[4] == upper[4]


def test_a_blind_cycle_reports_a_reference_inside_the_limits(ctx, model):
    """Braking on a frozen state of an arm measured just outside a limit: the cycle's reference (reported on
    ~/controller_state) is the hold target, never the measured position outside (found under load, where the
    blind branch runs)."""
    upper = np.asarray(model.limits["upper"], float)
    core, _ = make_core(ctx)
    core.update(1.0, 1.0)
    q = np.minimum(Q0, upper)
    q[4] = upper[4] + 0.01
    core.state_arrived(q, np.zeros(6), 1.0, 1.0, 1.0)
    assert core.update(1.0, 1.0) is not None
    blind = core.update(1.0 + DT, 1.0 + core.blind_age + 1e-6)
    assert core.blind_cycles == 1 and blind is not None
    assert blind.q_ref[4] == upper[4] and np.all(blind.q_ref <= upper)


def test_the_guard_bounds_a_law_that_drives_at_a_limit(ctx, model):
    """Held 1 mrad inside joint 5's upper limit while moving toward it at its velocity limit: the guard changes
    the law's command (counted) to one whose acceleration brakes (the forward dynamics of the command)."""
    upper = np.asarray(model.limits["upper"], float)
    vmax = np.asarray(model.limits["velocity"], float)
    core, _ = make_core(ctx)
    core.update(1.0, 1.0)
    q = Q0.copy()
    q[4] = upper[4] - 1e-3
    qd = np.zeros(6)
    qd[4] = vmax[4]
    core.monitor.judge = lambda q, qd, stamp, now: stamp  # the state as given (the monitor is tested apart)
    core.state_arrived(q, qd, 1.0, 1.0, 1.0)
    core.hold = q + np.r_[0, 0, 0, 0, 0.5, 0]  # a reference far beyond the limit (what a bad law would chase)
    cycle = core.update(1.0, 1.0)
    assert core.guarded_cycles == 1
    acc = model.forward_dynamics(q, qd, cycle.tau)
    assert acc[4] < 0


def test_path_tolerance_boundary_aborts_the_goal_and_holds(ctx):
    traj = ramp(Q0, 0.2, 1.0)
    for offset, violated in ((0.0499, False), (0.0501, True)):
        core, _ = running(ctx)
        run = goal(seq=1, path=0.05)
        core.queue_trajectory((traj, None, 51, run))
        core.update(10.0, 10.0)
        q_ref = traj.at(0.5)[0]
        core.state_arrived(q_ref - offset, np.zeros(6), 10.5, 10.5, 10.5)
        core.update(10.5, 10.5)
        if violated:
            assert run.status == ABORTED and run.code == PATH_TOLERANCE_VIOLATED and core.mode == cc.HOLDING
            assert core.trajectory is None
        else:
            assert run.status is None and core.mode == cc.TRACKING


def test_goal_succeeds_after_the_last_point_within_the_goal_tolerance(ctx):
    traj = ramp(Q0, 0.2, 0.5)
    end = Q0 + 0.2
    for offset, done in ((0.0099, True), (0.0101, False)):
        core, _ = running(ctx)
        run = goal(seq=1, goal_tol=0.01)
        core.queue_trajectory((traj, None, 51, run))
        core.update(10.0, 10.0)
        core.state_arrived(end - offset, np.zeros(6), 10.6, 10.6, 10.6)
        core.update(10.6, 10.6)
        assert core.mode == cc.HOLDING and "trajectory finished" in core.mode_reason
        assert (run.status == SUCCEEDED) is done, run.text


def test_preemption_follows_the_order_goals_were_accepted_in(ctx):
    core, _ = running(ctx)
    first, second = goal(seq=1), goal(seq=2)
    core.queue_trajectory((ramp(Q0, 0.1), None, 51, second))
    core.queue_trajectory((ramp(Q0, 0.1), None, 51, first))  # accepted earlier, checked later: never runs
    # JTC's preemption: CANCELED, INVALID_GOAL, its words (MoveIt reports a preemption, not a failure)
    assert first.status == CANCELED and first.code == INVALID_GOAL and first.text.startswith(PREEMPTED)
    assert "newer goal" in first.text
    core.update(10.0, 10.0)
    assert core.goal is second and core.mode == cc.TRACKING
    third = goal(seq=3)
    core.queue_trajectory((ramp(Q0, 0.1), None, 51, third))
    core.update(10.01, 10.01)
    assert second.status == CANCELED and second.code == INVALID_GOAL and core.goal is third
    assert second.text == PREEMPTED + " (preempted by a new goal)"
    # a trajectory on the topic (no goal) preempts a goal the same way
    core.queue_trajectory((ramp(Q0, 0.1), None, 51, None))
    core.update(10.02, 10.02)
    assert third.status == CANCELED and "trajectory on ~/joint_trajectory" in third.text and core.goal is None


def test_cancel_holds_a_running_goal_and_drops_a_queued_one(ctx):
    core, _ = running(ctx)
    run = goal(seq=1)
    core.queue_trajectory((ramp(Q0, 0.1, 2.0), None, 51, run))
    core.update(10.0, 10.0)
    core.cancel(run)
    assert run.status == CANCELED and core.mode == cc.HOLDING and core.trajectory is None
    queued = goal(seq=2)
    core.queue_trajectory((ramp(Q0, 0.1), None, 51, queued))
    core.cancel(queued)
    assert queued.status == CANCELED and "before it started" in queued.text and core.pending_traj is None


def test_a_trajectory_that_ended_before_it_was_taken_is_refused(ctx):
    core, out = running(ctx)
    run = goal(seq=1)
    core.queue_trajectory((ramp(Q0, 0.1, 1.0), 8.0, 51, run))  # stamped to start at 8 s: ended at 9 s
    core.update(10.0, 10.0)
    assert run.status == ABORTED and out.refused[-1][0] == "old_stamp" and core.mode == cc.HOLDING


def test_a_new_model_of_the_same_arm_keeps_the_trajectory_only_for_parameter_changes(ctx, model):
    core, out = running(ctx)
    core.queue_trajectory((ramp(Q0, 0.1, 5.0), None, 51, None))
    core.update(10.0, 10.0)
    core.queue_context(ctx, "omega")  # new parameters: the trajectory goes on
    core.update(10.01, 10.01)
    assert core.mode == cc.TRACKING and core.trajectory is not None and out.contexts[-1][2] == "omega"
    core.queue_context(ctx, None)  # a new model: dropped, holding where the arm is
    core.update(10.02, 10.02)
    assert core.mode == cc.HOLDING and core.trajectory is None and "new robot model" in core.mode_reason


def test_lockstep_stamps_jumping_back_hold_the_arm(ctx):
    core, _ = make_core(ctx, trigger="state")
    core.update(0.0, 0.0)
    core.lockstep_state(Q0, np.zeros(6), 0.002, 1.0)
    assert core.update(0.002, 1.0) is not None
    core.queue_trajectory((ramp(Q0, 0.1, 5.0), None, 51, None))
    core.update(0.002, 1.0)
    assert core.mode == cc.TRACKING
    core.lockstep_state(Q0, np.zeros(6), 0.001, 1.0)  # a restarted simulation
    assert core.mode == cc.HOLDING and "jumped by -0.001" in core.mode_reason


def test_a_frozen_state_stops_driving_the_law_at_its_blind_age(ctx, model):
    """Up to ``blind_age`` the law runs on the last state; just beyond it the arm is held (at rest: gravity at the last
    position), however far the reference has moved on: the law's feedback on a frozen state would accelerate an arm it
    cannot see."""
    core, _ = running(ctx)
    core.queue_trajectory((ramp(Q0, 0.5, 1.0), None, 51, None))
    core.update(10.0, 10.0)
    blind = core.blind_age
    assert blind == pytest.approx(cc.BLIND_FRACTION * TIMEOUT)
    law = core.update(10.2, 10.0 + blind)  # the reference 0.2 s on: the law pushes toward it
    assert core.blind_cycles == 0 and np.abs(law.q_ref - Q0).max() > 0.02
    held = core.update(10.2 + DT, 10.0 + blind + 1e-6)
    assert core.blind_cycles == 1 and core.mode == cc.TRACKING
    np.testing.assert_array_equal(held.q_ref, Q0)
    np.testing.assert_allclose(held.tau, model.inverse_dynamics(Q0, np.zeros(6), np.zeros(6)), atol=1e-6)
    assert np.abs(law.tau - held.tau).max() > 1.0  # the law's command was another one
    # a fresh state: the law again
    core.state_arrived(Q0, np.zeros(6), 10.21, 10.21, 10.21)
    assert core.update(10.21, 10.21) is not None and core.blind_cycles == 1


def test_a_moving_arm_without_fresh_states_is_braked_to_rest_then_held(ctx, model):
    qd = np.array([0.0, 1.0, 0.0, 0.0, -2.0, 0.0])
    core, _ = make_core(ctx)
    core.update(10.0, 10.0)
    core.state_arrived(Q0, qd, 10.0, 10.0, 10.0)
    assert core.update(10.0, 10.0) is not None
    b = ctx.guard.braking
    age = core.blind_age + 1e-3
    cycle = core.update(10.0 + DT, 10.0 + age)
    v = np.sign(qd) * (np.abs(qd) - b * 1e-3)
    acc = model.forward_dynamics(Q0, v, cycle.tau)
    assert acc[1] < 0 and acc[4] > 0  # each moving joint decelerated (toward rest)
    tau, braking = core.blind_command(core.blind_age + np.max(np.abs(qd) / b) + 1e-6)  # stopped by then
    assert not braking
    np.testing.assert_allclose(tau, model.inverse_dynamics(Q0, np.zeros(6), np.zeros(6)), atol=1e-6)
    # stale while still braking: the loop keeps braking; stale at rest: nothing (the watchdog's gravity hold)
    slow = np.abs(qd) / b
    still = core.update(10.0 + 2 * DT, 10.0 + TIMEOUT + 1e-6)
    assert core.mode == cc.STALE
    assert (still is not None) == bool(np.any(slow > TIMEOUT + 1e-6 - core.blind_age))
