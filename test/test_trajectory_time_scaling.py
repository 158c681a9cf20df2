"""Uniform time scaling against effort limits (001 §8.3, Hollerbach): oracle = bisection on independent torques."""

import math

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf

from robot_dynamics import RobotModel
from robot_dynamics.trajectory import point_to_point, scale_to_effort_limits, through_waypoints

M, L, G, FV, FC = 2.0, 0.5, 9.81, 0.3, 0.2


def pendulum(q, qd, qdd):
    """Hand-derived 1-dof pendulum (angle from the downward vertical): m l^2 qdd + m g l sin q + Fv qd + Fc sign qd."""
    return M * L**2 * qdd + M * G * L * np.sin(q) + FV * qd + FC * np.sign(qd)


def bisect_scale(traj, torque, limit, times, lo=1.0, hi=64.0):
    """Smallest k with max |torque(q(t), qd/k, qdd/k^2)| <= limit on ``times`` (base-time samples), by bisection."""
    q, qd, qdd = traj.evaluate(times)

    def ok(k):
        return np.all(np.abs(torque(q, qd / k, qdd / k**2)) <= limit)

    assert ok(hi)
    if ok(lo):
        return lo
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


@pytest.mark.parametrize("profile", ["trapezoid", "quintic", "smooth_trapezoid", "bang_bang"])
def test_pendulum_smallest_stretch(profile):
    traj = point_to_point([0.0], [math.pi / 2], 8.0, 40.0, profile)
    limit = 12.0  # static peak m g l = 9.81 N m, inertial m l^2 * 40 = 20 N m: infeasible unscaled
    res = scale_to_effort_limits(traj, pendulum, limit)
    times = np.linspace(0.0, traj.duration, 2001)
    k_ref = bisect_scale(traj, pendulum, limit, times)
    assert res.peak_ratio_before > 1.0
    assert res.scale > 1.0 and res.scale == pytest.approx(k_ref, rel=1e-9)
    assert res.duration == pytest.approx(k_ref * traj.duration, rel=1e-9)
    assert res.peak_ratio <= 1.0 + 1e-12 and res.margin == pytest.approx(0.0, abs=1e-6)
    # the stretched trajectory really needs those efforts: q(t/k), qd/k, qdd/k^2 (Hollerbach)
    st = res.trajectory
    q, qd, qdd = st.evaluate(times * res.scale)
    q0, qd0, qdd0 = traj.evaluate(times)
    assert np.allclose(q, q0) and np.allclose(qd, qd0 / res.scale) and np.allclose(qdd, qdd0 / res.scale**2)
    assert np.max(np.abs(pendulum(q, qd, qdd))) <= limit * (1 + 1e-9)
    # any slower playback stays feasible
    for k in np.linspace(res.scale, 4 * res.scale, 7):
        assert np.max(np.abs(pendulum(q0, qd0 / k, qdd0 / k**2))) <= limit * (1 + 1e-9)


def test_feasible_trajectory_is_not_stretched_and_margin_reported():
    traj = point_to_point([0.0], [0.3], 0.5, 1.0, "trapezoid")
    res = scale_to_effort_limits(traj, pendulum, 10.0)
    assert res.scale == 1.0 and res.trajectory is traj
    ref = np.max(np.abs(pendulum(*traj.evaluate(np.linspace(0, traj.duration, 2001))))) / 10.0
    assert res.peak_ratio == pytest.approx(ref, rel=1e-12) and res.margin == pytest.approx(1 - ref)


def test_static_effort_too_large_is_an_error():
    traj = point_to_point([0.0], [math.pi / 2], 1.0, 1.0, "cubic")
    with pytest.raises(ValueError, match="static"):
        scale_to_effort_limits(traj, pendulum, 5.0)  # m g l sin(pi/2) = 9.81 > 5
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, pendulum, None)  # a plain callable needs limits
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, pendulum, [1.0, 2.0])
    with pytest.raises(ValueError):
        scale_to_effort_limits(traj, 3.0, 1.0)


def test_ur5_model_against_pinocchio_bisection():
    path = str(example_urdf("ur5"))
    model = RobotModel.from_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()

    def rnea(q, qd, qdd):  # independent oracle: Pinocchio's RNEA, loop over samples
        return np.array([pin.rnea(pm, data, a, b, c) for a, b, c in zip(q, qd, qdd, strict=True)])

    W = np.array([[0.0, -1.0, 1.2, -0.5, 0.3, 0.0], [1.5, -0.4, 0.2, -1.2, 1.0, 1.0], [0.5, -1.5, 1.8, 0.0, -0.5, 2.0]])
    traj = through_waypoints(W, 3 * model.limits["velocity"], 150.0, profile="quintic", via_velocities="auto")
    res = scale_to_effort_limits(traj, model, period=traj.duration / 400)
    times = traj.sample(traj.duration / 400)[0]
    lim = model.limits["effort"]
    k_ref = bisect_scale(traj, rnea, lim, times)
    assert res.peak_ratio_before > 1.0
    assert res.scale == pytest.approx(k_ref, rel=1e-7)
    assert res.peak_ratio <= 1.0 + 1e-9
