"""Control laws of 001 chapter 9 against independent oracles.

Oracles: MuJoCo's M(q), bias forces and ``mj_inverse`` (plant built from the same
model), the characteristic polynomials [9.9] / [9.25] and hand-derived values.
The laws' Newton–Euler is the model's engine (``model.inverse_dynamics``): the NumPy model
in this test suite, and the generated scalar Python program (the engine of a machine
without a C compiler), both checked against MuJoCo here.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics import RobotModel, seed_robots
from robot_dynamics.control import (
    CONTROLLERS,
    ComputedTorqueController,
    PDGravityController,
    PIDController,
    PredictiveController,
    computed_torque_gains,
    make_controller,
    max_diagonal_inertia,
    pd_gains,
    pid_gains,
)
from robot_dynamics.control.base import DEFAULT_COULOMB_BAND
from robot_dynamics.dynamics.friction import coulomb
from robot_dynamics.sim.simulator import MujocoArm
from robot_dynamics.symbolic import codegen

RX90 = seed_robots.rx90()
A_RX90 = np.array([8.7929, 8.5054, 1.6064, 0.1174, 0.1074, 0.0505])  # max A_jj, computed once (checked below)


@pytest.fixture(scope="module")
def rx90_plant() -> MujocoArm:
    return MujocoArm(RX90)


def _rand_state(rng, n, scale=2.0):
    return rng.uniform(-scale, scale, (5, n))


def _coulomb_on_desired(model: RobotModel, qd: np.ndarray, qd_ref: np.ndarray) -> np.ndarray:
    """Default Coulomb compensation of the model-based laws: the model's Fc sign(q̇) replaced by
    Fc sat(q̇^d / band) (control/base.py, 001 eq. 7.26)."""
    return coulomb(model.Fc, qd_ref, DEFAULT_COULOMB_BAND) - model.Fc * np.sign(qd)


# ------------------------------------------------- the laws' Newton–Euler
def _on_scalar_python(model: RobotModel) -> RobotModel:
    """``model`` with its engine on the generated scalar Python program (as on a machine without a C compiler)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(codegen, "compiler", lambda: None)
        assert model.compile("inverse_dynamics") == {"inverse_dynamics": "python"}
    return model


@pytest.fixture(scope="module")
def rx90_python() -> RobotModel:
    return _on_scalar_python(seed_robots.rx90())


@pytest.mark.parametrize("factory", [seed_robots.rx90, seed_robots.stanford_arm, seed_robots.scara,
                                     seed_robots.planar_2r])
def test_law_dynamics_is_the_model_engine_and_matches_mujoco(factory):
    """The default NE of the laws is ``model.inverse_dynamics`` (friction and rotor inertia included, URDF
    coordinates): on the NumPy engine and on the generated scalar Python one, state by state, vs mj_inverse."""
    arm = MujocoArm(factory())
    rng = np.random.default_rng(0)
    for engine in ("numpy", "python"):
        model = factory()
        if engine == "python":
            _on_scalar_python(model)
        assert model.engine["inverse_dynamics"] == engine
        ctrl = ComputedTorqueController(model, 1.0, 1.0)
        assert ctrl.inverse_dynamics == model.inverse_dynamics
        q, qd, qdd = rng.uniform(-2, 2, (3, 12, model.dof))
        for k in range(12):
            out = ctrl.inverse_dynamics(q[k], qd[k], qdd[k])
            assert out.shape == (model.dof,)
            np.testing.assert_allclose(out, arm.inverse_dynamics(q[k], qd[k], qdd[k]), rtol=1e-9, atol=1e-9)


def test_law_dynamics_on_a_tree_and_with_another_gravity():
    """A tree (second branch on link a, flipped axis), both engines, vs MuJoCo; gravity is the model's:
    another gravity is another model (with its own plant)."""
    from robot_dynamics import MDHJoint

    joints = [
        MDHJoint("a", 0, 0, 0.0, 0.0, 0.3, 0.2, link="la"),
        MDHJoint("b", 1, 0, math.pi / 2, 0.4, 0.0, 0.1, sign=-1.0, link="lb"),
        MDHJoint("c", 1, 1, -math.pi / 2, 0.2, 0.5, 0.3, link="lc"),  # second branch on link a
    ]
    rng = np.random.default_rng(1)
    inertial = []
    for _ in range(3):
        m, c = rng.uniform(1, 3), rng.uniform(-0.2, 0.2, 3)
        ic = np.diag(rng.uniform(0.05, 0.1, 3))
        jo = ic + m * (c @ c * np.eye(3) - np.outer(c, c))
        inertial.append([jo[0, 0], jo[0, 1], jo[0, 2], jo[1, 1], jo[1, 2], jo[2, 2], *(m * c), m])
    model = RobotModel(joints, tip_link="lb", frames={"la": (1, np.eye(4)), "lb": (2, np.eye(4)), "lc": (3, np.eye(4))},
                       inertial=inertial, Ia=[0.1, 0.2, 0.3], Fv=[0.5, 0.1, 0.2], Fc=[1.0, 0.5, 0.2])
    arm = MujocoArm(model)
    g = np.array([1.0, -2.0, -3.0])
    arm_g = MujocoArm(model.replace(gravity=g))
    for engine in ("numpy", "python"):
        m = model.replace() if engine == "numpy" else _on_scalar_python(model.replace())
        ctrl = ComputedTorqueController(m, 1.0, 1.0)
        for _ in range(5):
            q, qd, qdd = rng.uniform(-2, 2, (3, 3))
            np.testing.assert_allclose(ctrl.inverse_dynamics(q, qd, qdd), arm.inverse_dynamics(q, qd, qdd), atol=1e-10)
        m_g = m.replace(gravity=g)
        m_g = m_g if engine == "numpy" else _on_scalar_python(m_g)
        pd_g = PDGravityController(m_g, 1.0, 1.0)
        q = rng.uniform(-1, 1, 3)
        expected = arm_g.inverse_dynamics(q, np.zeros(3), np.zeros(3))
        np.testing.assert_allclose(pd_g._gravity(q), expected, atol=1e-12)
        assert np.abs(expected - arm.inverse_dynamics(q, np.zeros(3), np.zeros(3))).max() > 0.1
        with pytest.raises(ValueError):
            ctrl.inverse_dynamics(np.zeros(2), np.zeros(3), np.zeros(3))


# ------------------------------------------------------------------- gains
@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 50.0), st.floats(0.5, 100.0), st.floats(0.0, 1.0))
def test_pid_gains_place_a_triple_real_pole(a, omega, fv_frac):
    """[9.8] with the gains of [9.10] (errata 33) equals a (s + ω)^3 [9.9]."""
    fv = fv_frac * 3 * a * omega
    kp, kd, ki = pid_gains([a], omega, fv)
    poly = np.array([a, kd[0] + fv, kp[0], ki[0]])
    expected = a * np.poly([-omega] * 3)
    np.testing.assert_allclose(poly, expected, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.5, 100.0), st.floats(0.2, 0.99))
def test_computed_torque_gains_give_the_error_dynamics_of_9_25(omega, xi):
    kp, kd = computed_torque_gains(omega, xi, 2)
    # s^2 + K_d s + K_p: complex poles of modulus ω and real part −ξω [9.25]/[9.26]
    roots = np.roots([1.0, kd[0], kp[0]])
    np.testing.assert_allclose(np.abs(roots), [omega, omega], rtol=1e-9)
    np.testing.assert_allclose(roots.real, [-xi * omega] * 2, rtol=1e-9)
    kpa, kda = pd_gains([2.0, 3.0], omega, xi)
    np.testing.assert_allclose(kpa, np.array([2.0, 3.0]) * omega**2)
    np.testing.assert_allclose(kda, np.array([2.0, 3.0]) * 2 * xi * omega)


def test_max_diagonal_inertia_planar_2r_hand_derived():
    """A_11 is largest with the arm stretched (q2 = 0); A_22 is constant."""
    model = seed_robots.planar_2r()
    l1, l2, m1, m2 = 0.5, 0.4, 2.0, 1.5
    i1, i2 = m1 * l1**2 / 12, m2 * l2**2 / 12
    a1 = i1 + i2 + m1 * (l1 / 2) ** 2 + m2 * (l1 + l2 / 2) ** 2
    a2 = i2 + m2 * (l2 / 2) ** 2
    np.testing.assert_allclose(max_diagonal_inertia(model, n_samples=200), [a1, a2], rtol=1e-6)


def test_max_diagonal_inertia_rx90_is_an_upper_bound_of_mujoco_mass_matrix(rx90_plant):
    a = max_diagonal_inertia(RX90, n_samples=500)
    np.testing.assert_allclose(a, A_RX90, rtol=1e-3)
    rng = np.random.default_rng(3)
    lo, hi = RX90.limits["lower"], RX90.limits["upper"]
    for q in rng.uniform(lo, hi, (30, 6)):
        assert np.all(np.diag(rx90_plant.mass_matrix(q)) <= a * (1 + 1e-6))


def test_bad_gains_raise():
    with pytest.raises(ValueError):
        pid_gains([1.0], -1.0)
    with pytest.raises(ValueError):
        computed_torque_gains([1.0, np.nan], 1.0, 2)
    with pytest.raises(ValueError):
        ComputedTorqueController(RX90, kp=[1.0] * 5, kd=1.0)
    with pytest.raises(ValueError):
        ComputedTorqueController(RX90, kp=1.0, kd=1.0, scheme="bogus")
    with pytest.raises(ValueError):
        PDGravityController(RX90, 1.0, 1.0, gravity_at="nowhere")
    with pytest.raises(ValueError):
        PIDController(RX90, 1.0, 1.0, 1.0, integral_band=(1.0, 0.5))
    with pytest.raises(ValueError):
        make_controller("lqr", RX90)


# ----------------------------------------------------- control laws vs MuJoCo
@pytest.mark.parametrize("engine", ["numpy", "python"])
def test_computed_torque_tracking_is_a_w_plus_h(rx90_plant, rx90_python, engine):
    """[9.22]/[9.24]: Γ = A(q) w + H(q, q̇), A and H from MuJoCo (M, bias, damping, Coulomb); the Coulomb term of H
    on q̇^d by default, on q̇ (the plain model) with ``coulomb_velocity="measured"`` and no band."""
    model = RX90 if engine == "numpy" else rx90_python
    assert model.engine["inverse_dynamics"] == engine
    ctrl = ComputedTorqueController.tuned(model, 15.0, 0.8, effort_limit=np.inf)
    old = ComputedTorqueController.tuned(model, 15.0, 0.8, effort_limit=np.inf, coulomb_velocity="measured",
                                         coulomb_velocity_band=0.0)
    kp, kd = 15.0**2, 2 * 0.8 * 15.0
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, qd, qr, qdr, qddr = _rand_state(rng, 6)
        w = qddr + kd * (qdr - qd) + kp * (qr - q)
        expected = rx90_plant.mass_matrix(q) @ w + rx90_plant.inverse_dynamics(q, qd, np.zeros(6))
        np.testing.assert_allclose(old.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-8)
        expected += _coulomb_on_desired(model, qd, qdr)
        np.testing.assert_allclose(ctrl.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-8)


def test_computed_torque_position_scheme_9_29(rx90_plant):
    ctrl = ComputedTorqueController(RX90, kp=100.0, kd=20.0, scheme="position", effort_limit=np.inf)
    rng = np.random.default_rng(5)
    q, qd, qr, qdr, qddr = _rand_state(rng, 6)
    w = 100.0 * (qr - q) - 20.0 * qd  # q̇^d and q̈^d are ignored by [9.29] (Coulomb term on q̇ by default)
    expected = rx90_plant.mass_matrix(q) @ w + rx90_plant.inverse_dynamics(q, qd, np.zeros(6))
    assert ctrl.coulomb_velocity == "measured" and not ctrl.coulomb_velocity_band.any()
    np.testing.assert_allclose(ctrl.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-8)


def test_predictive_control_uses_the_desired_state(rx90_plant):
    """[9.31]: Γ = A(q^d) w + H(q^d, q̇^d) (Coulomb term of H: Fc sat(q̇^d / band))."""
    ctrl = PredictiveController(RX90, kp=225.0, kd=30.0, effort_limit=np.inf)
    rng = np.random.default_rng(6)
    q, qd, qr, qdr, qddr = _rand_state(rng, 6)
    w = qddr + 30.0 * (qdr - qd) + 225.0 * (qr - q)
    expected = rx90_plant.mass_matrix(qr) @ w + rx90_plant.inverse_dynamics(qr, qdr, np.zeros(6))
    expected += _coulomb_on_desired(RX90, qdr, qdr)
    np.testing.assert_allclose(ctrl.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-8)


@pytest.mark.parametrize("gravity_at", ["measured", "desired"])
def test_pd_gravity_9_12(rx90_plant, gravity_at):
    ctrl = PDGravityController(RX90, kp=[50.0] * 6, kd=[5.0] * 6, gravity_at=gravity_at, effort_limit=np.inf)
    rng = np.random.default_rng(7)
    q, qd, qr, qdr, _ = _rand_state(rng, 6)
    qg = q if gravity_at == "measured" else qr
    gravity = rx90_plant.bias_forces(qg, np.zeros(6))
    expected = 50.0 * (qr - q) + 5.0 * (qdr - qd) + gravity
    np.testing.assert_allclose(ctrl.compute(0.0, q, qd, qr, qdr), expected, rtol=1e-9, atol=1e-9)
    # regulation form of [9.12]: q̇^d = 0
    np.testing.assert_allclose(ctrl.compute(0.0, q, qd, qr), 50.0 * (qr - q) - 5.0 * qd + gravity, atol=1e-9)


def test_pid_integrates_with_switching_and_anti_windup():
    """[9.5] by hand: rectangle rule on e between calls, integral active for lo <= |e| <= hi."""
    model = seed_robots.planar_2r()
    ctrl = PIDController(model, kp=[10.0, 10.0], kd=[1.0, 1.0], ki=[100.0, 100.0], integral_band=(0.01, 0.5),
                         effort_limit=[20.0, 10.0])
    z = np.zeros(2)
    ref = np.array([0.2, 0.8])  # joint 2: error above the band, never integrated
    out0 = ctrl.compute(0.0, z, z, ref)
    np.testing.assert_allclose(out0, [2.0, 8.0])
    ctrl.compute(0.1, z, z, ref)
    out = ctrl.compute(0.2, z, [0.5, 0.0], ref)
    np.testing.assert_allclose(ctrl.integral, [0.04, 0.0])
    np.testing.assert_allclose(out, [10 * 0.2 - 0.5 + 100 * 0.04, 8.0])
    small = np.array([0.005, 0.0])  # below the band: frozen
    ctrl.compute(0.3, ref - small, z, ref)
    np.testing.assert_allclose(ctrl.integral, [0.04, 0.0])
    for k in range(100):  # windup bounded: K_I |∫e| <= effort limit
        ctrl.compute(0.4 + k, z, z, ref)
    assert 100.0 * abs(ctrl.integral[0]) <= 20.0 + 1e-12
    ctrl.reset()
    np.testing.assert_allclose(ctrl.integral, 0.0)


def test_tuned_pid_uses_9_10():
    ctrl = PIDController.tuned(RX90, 20.0, a=A_RX90)
    np.testing.assert_allclose(ctrl.kp, 3 * A_RX90 * 400.0)
    np.testing.assert_allclose(ctrl.kd, np.maximum(3 * A_RX90 * 20.0 - RX90.Fv, 0.0))
    np.testing.assert_allclose(ctrl.ki, A_RX90 * 8000.0)


# ------------------------------------------- safety: finite, saturated output
def _controllers():
    return [make_controller(name, RX90, 25.0, a=A_RX90) for name in CONTROLLERS]


CTRLS = _controllers()
LIM = RX90.limits["effort"]
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
vec6 = st.lists(finite, min_size=6, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(CTRLS) - 1), vec6, vec6, vec6, vec6, vec6, st.floats(0.0, 100.0))
def test_output_is_finite_and_within_effort_limits(k, q, qd, qr, qdr, qddr, t):
    ctrl = CTRLS[k]
    ctrl.reset()
    try:
        ctrl.compute(0.0, q, qd, qr, qdr, qddr)
        tau = ctrl.compute(t + 0.01, q, qd, qr, qdr, qddr)  # second call: PID integral active
    except ValueError as exc:  # only allowed when the model overflows on absurd states
        assert "non-finite" in str(exc)
        return
    assert tau.shape == (6,)
    assert np.all(np.isfinite(tau))
    assert np.all(np.abs(tau) <= LIM)
    np.testing.assert_array_equal(np.abs(tau[ctrl.saturated]), LIM[ctrl.saturated])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, len(CTRLS) - 1), st.integers(0, 4), st.integers(0, 5),
       st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_input_raises(k, which, j, bad):
    ctrl = CTRLS[k]
    args = [np.zeros(6) for _ in range(5)]
    args[which][j] = bad
    with pytest.raises(ValueError):
        ctrl.compute(0.0, *args)


def test_wrong_shapes_raise():
    ctrl = CTRLS[0]
    with pytest.raises(ValueError):
        ctrl.compute(0.0, np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError):
        ctrl.compute(0.0, np.zeros((2, 6)), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError):
        ctrl.compute(np.nan, np.zeros(6), np.zeros(6), np.zeros(6))


def test_per_cycle_cost_below_100_us(rx90_python):
    """Computed torque on the 6-dof RX-90 on the slowest engine the laws end up on (the generated scalar
    Python program: no C compiler), median over 2000 calls (issue 8: < 100 µs in Python)."""
    ctrl = make_controller("computed_torque", rx90_python, 20.0)
    rng = np.random.default_rng(8)
    states = rng.uniform(-1, 1, (2000, 5, 6))
    times = np.empty(len(states))
    for i, s in enumerate(states):
        t0 = time.perf_counter()
        ctrl.compute(0.0, s[0], s[1], s[2], s[3], s[4])
        times[i] = time.perf_counter() - t0
    assert np.median(times) < 100e-6


def test_task_space_law_reduces_to_inverse_dynamics_on_a_consistent_reference(rx90_plant):
    """With X^d = X, Ẋ^d = Ẋ and Ẍ^d = d/dt(J q̇) along q(t) = q + q̇ t + q̈ t²/2, [9.33] gives NE(q, q̇, q̈)."""
    from robot_dynamics.control import TaskSpaceComputedTorque
    from robot_dynamics.kinematics.geometric_model import jacobian

    ctrl = TaskSpaceComputedTorque.tuned(RX90, 20.0, effort_limit=np.inf)
    rng = np.random.default_rng(9)
    q = np.array([0.3, -0.4, 0.6, 0.5, 0.8, -0.2])
    qd, qdd = rng.uniform(-1, 1, (2, 6))
    h = 1e-5

    def twist(s):
        return jacobian(RX90, q + qd * s + 0.5 * qdd * s**2) @ (qd + qdd * s)

    accel = (twist(h) - twist(-h)) / (2 * h)
    tau = ctrl.compute_task(0.0, q, qd, RX90.forward_kinematics(q), twist(0.0), accel)
    np.testing.assert_allclose(tau, rx90_plant.inverse_dynamics(q, qd, qdd), rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError):
        ctrl.compute_task(0.0, q, qd, np.eye(3))
