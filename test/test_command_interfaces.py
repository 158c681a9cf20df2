"""Output modes' pure pieces (issue 33): the command interfaces allowed (JTC's names and combinations), a cycle's
commands per interface, what a servo-driven arm is told to hold, the settings they refuse; the simulated drives'
servo (robot_dynamics/sim/servo.py) at its boundaries and holding the MuJoCo arm against gravity (oracle: the arm
at rest where it was told, its second-order step response)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from robot_dynamics import load_model
from robot_dynamics.ros.command_interfaces import (
    INTERFACE_SETS,
    check_mode,
    hold_commands,
    interface_set,
    joint_commands,
)
from robot_dynamics.sim.servo import servo_gains, servo_torque
from robot_dynamics.sim.simulator import MujocoArm


def test_the_sets_allowed_in_any_order_and_nothing_else():
    assert interface_set(["effort"]) == ("effort",)
    assert interface_set(["velocity", "position"]) == ("position", "velocity")
    assert interface_set(["effort", "velocity", "position"]) == ("position", "velocity", "effort")
    for bad in ([], ["acceleration"], ["position", "effort"], ["velocity", "effort"], ["position", "position"],
                ["Position"], ["position", "velocity", "effort", "acceleration"]):
        with pytest.raises(ValueError, match="is not one of"):
            interface_set(bad)


@given(st.lists(st.sampled_from(["position", "velocity", "effort", "acceleration"]), max_size=4))
def test_a_set_is_taken_exactly_when_it_is_one_of_the_combinations(names):
    ok = len(set(names)) == len(names) and tuple(n for n in ("position", "velocity", "effort") if n in names) in \
        INTERFACE_SETS and "acceleration" not in names
    try:
        got = interface_set(names)
    except ValueError:
        assert not ok
    else:
        assert ok and sorted(got) == sorted(names)


def test_servo_modes_refuse_lockstep_and_motor_torques():
    check_mode(("effort",), lockstep=True, command_space="motor")  # efforts: anything goes
    check_mode(("position",), lockstep=False, command_space="joint")
    for kw in ({"lockstep": True, "command_space": "joint"}, {"lockstep": False, "command_space": "motor"}):
        with pytest.raises(ValueError, match="needs real time"):
            check_mode(("position", "velocity"), **kw)


def test_the_commands_of_a_cycle_per_interface():
    q, q_ref, qd_ref = np.array([0.0, 1.0]), np.array([0.1, 0.9]), np.array([0.5, -0.2])
    tau, vmax = np.array([3.0, -4.0]), np.array([1.0, 1.0])
    out = joint_commands(("position",), q, q_ref, qd_ref, tau, 10.0, vmax)
    assert list(out) == ["position"] and np.array_equal(out["position"], q_ref)
    out = joint_commands(("velocity",), q, q_ref, qd_ref, tau, 10.0, vmax)  # P term: 0.5 + 1.0, -0.2 - 1.0: clipped
    assert np.array_equal(out["velocity"], [1.0, -1.0])
    out = joint_commands(("velocity",), q, q_ref, qd_ref, tau, 2.0, vmax)  # 0.5 + 0.2 = 0.7, -0.2 - 0.2 = -0.4
    np.testing.assert_allclose(out["velocity"], [0.7, -0.4], rtol=0, atol=1e-15)
    out = joint_commands(("position", "velocity", "effort"), q, q_ref, qd_ref, tau, 10.0, vmax)
    assert np.array_equal(out["velocity"], qd_ref) and np.array_equal(out["effort"], tau)  # no P beside a position
    just = np.nextafter(1.0, 0.0)  # a velocity just inside its limit passes, just outside is clipped
    v = joint_commands(("position", "velocity"), q, q_ref, np.array([just, np.nextafter(1.0, 2.0)]), tau, 0.0, vmax)
    assert v["velocity"][0] == just and v["velocity"][1] == 1.0
    held = hold_commands(("position", "velocity", "effort"), q_ref)
    assert set(held) == {"position", "velocity"} and np.array_equal(held["position"], q_ref)
    assert not np.any(held["velocity"])


def test_servo_gains_and_torque_at_their_boundaries():
    assert servo_gains(100.0, 1.0, position=True) == (1e4, 200.0)
    assert servo_gains(100.0, 0.5, position=False) == (0.0, 100.0)
    for bad in ((0.0, 1.0), (100.0, 0.0), (np.inf, 1.0), (100.0, np.nan)):
        with pytest.raises(ValueError):
            servo_gains(*bad, position=True)
    inertia = np.array([[2.0, 0.5], [0.5, 1.0]])
    tau = servo_torque(np.zeros(2), np.zeros(2), np.array([0.01, 0.0]), np.zeros(2), inertia, np.array([1.0, 2.0]),
                       np.zeros(2), 100.0, 20.0, np.array([10.0, 10.0]))
    np.testing.assert_allclose(tau, inertia @ [1.0, 0.0] + [1.0, 2.0])  # A (Kp e) + h
    lim = np.array([2.9999999, 10.0])
    assert servo_torque(np.zeros(2), np.zeros(2), np.array([0.01, 0.0]), np.zeros(2), inertia, np.array([1.0, 2.0]),
                        np.zeros(2), 100.0, 20.0, lim)[0] == lim[0]  # just outside its limit: clipped


@pytest.fixture(scope="module")
def arm():
    return MujocoArm(load_model("rx90"), timestep=0.0005)


def test_the_servo_holds_the_arm_where_told_and_answers_as_a_second_order_loop(arm):
    """At rest, a set point 5 mrad away on every joint (small enough that no effort saturates): the error decays as
    a critically damped loop of bandwidth w, e(t) / e0 = (1 + w t) e^{-w t} (0.736 left at t = 1/w: the oracle in
    closed form), and the arm settles on it (friction aside: within 1e-3 rad)."""
    q0 = np.array([0.2, -0.3, 0.5, 0.1, 0.4, -0.2])
    arm.reset(q0)
    w = 100.0
    kp, kd = servo_gains(w, 1.0, position=True)
    target = q0 + 0.005
    steps = round((1.0 / w) / arm.timestep)  # t = 1/w
    arm.servo_step(target, np.zeros(6), np.zeros(6), kp, kd, steps)
    left = (target - arm.state(noisy=False)[1]) / 0.005
    expected = (1 + 1.0) * np.exp(-1.0)  # e(t)/e0 = (1 + w t) e^{-w t}
    print(f"\nerror left at t = 1/w: {left.round(3)} (closed form {expected:.3f})")
    np.testing.assert_allclose(left, expected, atol=0.03)  # friction and the step-late bias
    arm.servo_step(target, np.zeros(6), np.zeros(6), kp, kd, round(0.5 / arm.timestep))
    assert np.abs(arm.state(noisy=False)[1] - target).max() < 1e-3


def test_the_servo_never_speeds_toward_a_far_set_point_beyond_the_velocity_limit():
    """v = qd_c + (Kp / Kd) e within +-vmax: inside, the PD law exactly; beyond, the velocity loop on vmax."""
    inertia, zero = np.eye(1), np.zeros(1)
    kp, kd, vmax = 1e4, 200.0, np.array([3.0])
    big = np.array([1e9])

    def tau(e: float) -> float:
        return float(servo_torque(zero, zero, np.array([e]), zero, inertia, 0.0, zero, kp, kd, big, vmax)[0])

    e_edge = 3.0 * kd / kp  # (Kp / Kd) e = vmax
    assert tau(0.5 * e_edge) == pytest.approx(kp * 0.5 * e_edge)  # the PD law
    assert tau(np.nextafter(e_edge, 0.0)) == pytest.approx(kp * e_edge)
    assert tau(10.0) == kd * 3.0 and tau(-10.0) == -kd * 3.0  # far: Kd vmax, whatever the distance
