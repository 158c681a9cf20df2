"""Executed moves stay within the velocity limits: ``~/plan``'s plans (``plan_samples``, every profile, through two
or three waypoints) executed by the controller's control cycle (``ControlCore``: law, limit guard; the effort clip)
on the simulated RX-90 (MuJoCo, 1 ms steps, commands held for the 2 ms period): the arm's own velocity never exceeds
a joint's limit by more than the shared tolerance (``PATH_RATE_TOLERANCE``).  Minimum-time plans sit at the limit;
the guard keeps ``GUARD_VELOCITY_MARGIN`` (without it, the same plans run over the tolerance: the check can fail).
No ROS, no timing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_dynamics import load_model
from robot_dynamics.ros.controller import core as cc
from robot_dynamics.ros.controller.context import build_context
from robot_dynamics.ros.controller.parameters import PARAMETERS
from robot_dynamics.safety import limit_guard as lg
from robot_dynamics.sim.simulator import MujocoArm
from robot_dynamics.trajectory.planning import plan_samples
from robot_dynamics.trajectory.sampled import PATH_RATE_TOLERANCE, SampledTrajectory

PLANS = 10  # per profile
SAMPLE_PERIOD = 0.01  # ~/plan's default
PROFILES = ("trapezoid", "smooth_trapezoid", "bang_bang", "cubic", "quintic", "waypoints")


class Quiet:
    """The node's side of the core, silent (refusals kept)."""

    def __init__(self) -> None:
        self.refused: list[tuple[str, str]] = []

    def transition(self, *_):
        pass

    def publish_mode(self):
        pass

    def context_in_use(self, *_):
        pass

    def allocate(self, *_):
        pass

    def log(self, *_):
        pass

    def refuse(self, cause, text):
        self.refused.append((cause, text))

    def latest_refusal(self):
        return None


@pytest.fixture(scope="module")
def rx90():
    model = load_model("rx90")
    values = {k: p.default for k, p in PARAMETERS.params.items()}  # the controller's defaults (500 Hz, generated)
    return model, build_context(model, values, lg.sampled_extremes(model)), values["rate"]


def plans(profile: str, seed: int = 0):
    model = load_model("rx90")
    lim = model.limits
    lo, hi = np.asarray(lim["lower"]), np.asarray(lim["upper"])
    rng = np.random.default_rng(seed)
    for _ in range(PLANS):
        m = 3 if profile == "waypoints" else 2
        w = rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo), (m, 6))
        prof = "trapezoid" if profile == "waypoints" else profile
        yield plan_samples(w, lim["velocity"], lim["acceleration"], prof, SAMPLE_PERIOD, model)


def execute(model, ctx, rate: float, plan) -> tuple[float, int]:
    """Largest |q̇_j| / q̇_max,j of the simulated arm over the plan and 0.3 s after; the cycles the guard changed."""
    period = 1.0 / rate
    traj = SampledTrajectory(plan.times, plan.q, plan.qd, plan.qdd)
    plant = MujocoArm(model, timestep=0.001)
    plant.reset(plan.q[0])
    sub = round(period / plant.timestep)
    out = Quiet()
    core = cc.ControlCore(out, trigger="timer", timeout=0.5, stale_behavior="gravity_hold", pose_margin=0.05)
    core.queue_context(ctx, None)
    core.update(0.0, 0.0)
    s = plant.state(noisy=False)
    core.state_arrived(s.q, s.qd, 0.0, 0.0, 0.0)
    core.queue_trajectory((traj, None, len(plan.times), None))
    vmax = np.asarray(model.limits["velocity"], float)
    worst = 0.0
    for k in range(int((traj.duration + 0.3) / period)):
        t = k * period
        s = plant.state(noisy=False)
        core.state_arrived(s.q, s.qd, t, t, t)
        cycle = core.update(t, t)
        assert cycle is not None, out.refused
        tau = ctx.envelope.clip_effort(cycle.tau, ctx.effort)
        for _ in range(sub):
            plant.step(tau)
            worst = max(worst, float(np.max(np.abs(plant.state(noisy=False).qd) / vmax)))
    assert core.mode == cc.HOLDING and not out.refused, (core.mode_reason, out.refused)
    return worst, core.guarded_cycles


@pytest.mark.parametrize("profile", PROFILES)
def test_executed_velocity_within_the_limits(rx90, profile):
    model, ctx, rate = rx90
    results = [execute(model, ctx, rate, p) for p in plans(profile)]
    worst = max(r[0] for r in results)
    print(f"\n{profile}: {PLANS} plans executed, largest |qd| / qd_max = 1 {worst - 1:+.2e}, guard active in "
          f"{sum(r[1] > 0 for r in results)} of them")
    assert worst <= 1.0 + PATH_RATE_TOLERANCE


def test_without_the_guards_margin_minimum_time_plans_run_over(rx90):
    """The boundary of the margin: the same trapezoids with a guard bounding the velocity at the limit itself
    exceed it by more than the tolerance (model and plant differ by friction and integration)."""
    model, ctx, rate = rx90
    bare = dataclasses.replace(ctx, guard=dataclasses.replace(ctx.guard, velocity_margin=0.0))
    worst = max(execute(model, bare, rate, p)[0] for p in plans("trapezoid"))
    print(f"\ntrapezoids, guard without its margin: largest |qd| / qd_max = 1 {worst - 1:+.2e}")
    assert worst > 1.0 + PATH_RATE_TOLERANCE
