"""Robots with elastic joints (001 §7.3.8, eqs. 7.34–7.35): model, MuJoCo plant, control, CLI.

Oracles: the closed-form frequencies of a one-joint spring–mass system (locked motor sqrt(k/I), free motor
sqrt(k (1/I + 1/I_a))), MuJoCo's own dynamics of the generated elastic plant (a tendon spring, not the
package's code), Pinocchio's CRBA for the link-side inertia matrix, numerical differentiation in time, an
open-loop MuJoCo run under the flat-output feed-forward, and the rigid plant as the k → ∞ limit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from robot_dynamics import MDHJoint, RobotModel
from robot_dynamics.control import ComputedTorqueController
from robot_dynamics.control.elastic import ElasticJointController
from robot_dynamics.dynamics.elastic import (
    ElasticJoints,
    elastic_equilibrium,
    elastic_forward_dynamics,
    elastic_inverse_dynamics,
    link_inertia_matrix,
)
from robot_dynamics.model.robots import load_model
from robot_dynamics.sim.closed_loop import reference_limits, run_closed_loop, simulate_cli
from robot_dynamics.sim.simulator import MujocoArm, model_to_mjcf
from robot_dynamics.trajectory import point_to_point

PLANAR = load_model("planar2r")  # a vertical plane: gravity acts, Ia = Fc = Fv = 0
RX90 = load_model("rx90")  # Ia, Fc, Fv all nonzero
# stiffness of a 5 Hz joint resonance against the link inertia A_jj(0) = [0.9217, 0.08]: k = A_jj (2π 5)²
K_5HZ = np.array([910.0, 79.0])
JM = np.array([0.2, 0.02])  # motor inertia, joint side


# ------------------------------------------------------------------ parameters
def test_elastic_joints_validation():
    e = ElasticJoints(100.0, [0.1, 0.2], motor_damping=0.5).resolve(PLANAR)
    assert e.stiffness.tolist() == [100.0, 100.0] and e.motor_inertia.tolist() == [0.1, 0.2]
    assert e.motor_damping.tolist() == [0.5, 0.5] and e.motor_coulomb.tolist() == [0.0, 0.0]
    assert np.allclose(e.natural_frequencies, np.sqrt([1000.0, 500.0]))
    assert ElasticJoints(1e3).resolve(RX90).motor_inertia.tolist() == RX90.Ia.tolist()  # default: the rotor inertia
    bad = [
        (dict(stiffness=0.0), "stiffness"),
        (dict(stiffness=[100.0, -1.0]), "stiffness"),
        (dict(stiffness=np.nan), "stiffness"),
        (dict(stiffness=[[1.0]]), "stiffness"),
        (dict(stiffness="stiff"), "stiffness"),
        (dict(stiffness=1.0, motor_inertia=0.0), "motor_inertia"),
        (dict(stiffness=1.0, motor_damping=-0.1), "motor_damping"),
        (dict(stiffness=1.0, motor_coulomb=np.inf), "motor_coulomb"),
    ]
    for kwargs, what in bad:
        with pytest.raises(ValueError, match=what):
            ElasticJoints(**kwargs)
    with pytest.raises(ValueError, match="3 values; the model has 2"):
        ElasticJoints([1.0, 2.0, 3.0], 1.0).resolve(PLANAR)
    with pytest.raises(ValueError, match="motor_inertia must be > 0"):  # planar2r has Ia = 0
        ElasticJoints(100.0).resolve(PLANAR)
    with pytest.raises(ValueError, match="theta"):
        elastic_forward_dynamics(PLANAR, ElasticJoints(1.0, 1.0), [0, 0], [0, 0], [0, 0, 0], [0, 0], [0, 0])


# ------------------------------------------------------------------ one joint
def one_joint(inertia: float) -> RobotModel:
    """A single revolute joint about z, link inertia ``inertia`` about the axis, no gravity, no friction."""
    return RobotModel([MDHJoint("j1", 0, 0, 0.0, 0.0, 0.0, 0.0, link="l1")], tip_link="l1",
                      frames={"base_link": (0, np.eye(4)), "l1": (1, np.eye(4))},
                      inertial=[[inertia, 0, 0, inertia, 0, inertia, 0, 0, 0, 1.0]], gravity=[0, 0, 0])


def oscillation_frequency(t: np.ndarray, x: np.ndarray) -> float:
    """ω from the zero crossings of x(t) (linear interpolation): half a period between crossings."""
    i = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    tc = t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])
    assert tc.size >= 10
    return float(np.pi * (tc.size - 1) / (tc[-1] - tc[0]))


@pytest.mark.parametrize("ratio", [1e6, 0.5], ids=["motor-locked", "motor-free"])
def test_one_joint_frequency(ratio):
    """Free oscillation of the spring deflection: sqrt(k/I) against a (practically) locked motor, the two-mass
    frequency sqrt(k (1/I + 1/I_a)) with a free motor.  MuJoCo plant: zero crossings of a 2 s free run; core
    model: the eigenvalues ±iω of its state Jacobian (the system is linear: central differences are exact)."""
    inertia = 0.05
    k = inertia * (2 * np.pi * 5.0) ** 2  # 5 Hz against a locked motor
    jm = ratio * inertia
    model, e = one_joint(inertia), ElasticJoints(k, jm)
    expected = np.sqrt(k * (1.0 / inertia + 1.0 / jm))
    arm = MujocoArm(model, elastic=e)
    arm.reset([0.02], theta=[0.0])
    t, deflection = [], []
    for _ in range(2000):
        arm.step([0.0])
        t.append(arm.time)
        deflection.append(arm.state(noisy=False).q[0] - arm.motor_state(noisy=False).theta[0])
    w_mujoco = oscillation_frequency(np.array(t), np.array(deflection))

    def f(x):  # x = (q, q̇, θ, θ̇)
        a = elastic_forward_dynamics(model, e, x[:1], x[1:2], x[2:3], x[3:], [0.0])
        return np.array([x[1], a.qdd[0], x[3], a.thetadd[0]])

    h = 1e-3
    jac = np.column_stack([(f(h * u) - f(-h * u)) / (2 * h) for u in np.eye(4)])
    w_core = float(np.abs(np.linalg.eigvals(jac).imag).max())
    print(f"\n[one joint, I_a/I = {ratio:g}] expected ω = {expected:.6f} rad/s (sqrt(k/I) = {np.sqrt(k / inertia):.6f}); "
          f"MuJoCo {w_mujoco:.6f} (rel. error {w_mujoco / expected - 1:.1e}), core {w_core:.6f} "
          f"(rel. error {w_core / expected - 1:.1e})")
    assert w_mujoco == pytest.approx(expected, rel=1e-3)
    assert w_core == pytest.approx(expected, rel=1e-9)
    if ratio > 1.0:
        assert w_mujoco == pytest.approx(np.sqrt(k / inertia), rel=1e-3)  # the brief's < 1 %, with margin


# ------------------------------------------------------------------ direct model
@pytest.mark.parametrize("model", [PLANAR, RX90], ids=["planar2r", "rx90"])
def test_forward_dynamics_matches_mujoco(model):
    """7.35 by the package (link-side NE + Cholesky) vs MuJoCo's accelerations of the elastic plant at random
    states, with link friction (RX-90: Fc, Fv) and motor viscous and Coulomb friction."""
    n = model.dof
    e = ElasticJoints(np.linspace(300.0, 2000.0, n), np.linspace(0.05, 0.5, n), motor_damping=0.3,
                      motor_coulomb=0.7)
    arm = MujocoArm(model, elastic=e)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(10):
        q, qd, thetad = rng.uniform(-2.0, 2.0, (3, n))
        tau = rng.uniform(-0.5, 0.5, n) * model.limits["effort"]
        theta = q + rng.uniform(-0.05, 0.05, n)
        qdd_mj, thetadd_mj = arm.accelerations(q, qd, tau, theta, thetad)
        acc = elastic_forward_dynamics(model, e, q, qd, theta, thetad, tau)
        scale = max(np.abs(qdd_mj).max(), 1.0)
        assert np.allclose(acc.qdd, qdd_mj, rtol=0, atol=1e-9 * scale), (acc.qdd, qdd_mj)
        assert np.allclose(acc.thetadd, thetadd_mj, rtol=0, atol=1e-9 * max(np.abs(thetadd_mj).max(), 1.0))
        worst = max(worst, np.abs(acc.qdd - qdd_mj).max() / scale)
    # the batch form gives the same rows
    qs = rng.uniform(-1.0, 1.0, (4, n))
    batch = elastic_forward_dynamics(model, e, qs, qs, qs + 0.01, qs, qs)
    assert np.allclose(batch.qdd[2], elastic_forward_dynamics(model, e, qs[2], qs[2], qs[2] + 0.01, qs[2], qs[2]).qdd)
    print(f"\n[{model.name}] max |q̈_core − q̈_MuJoCo| / max |q̈| = {worst:.1e}")


def test_link_inertia_excludes_the_rotor():
    """A of 7.35a = Pinocchio's CRBA of the links alone (the model's Ia is the motor's, not counted twice); the
    elastic plant's link block of M has no armature; the rigid plant's has Ia."""
    import pinocchio as pin
    from pinocchio_from_mdh import pinocchio_model

    pm = pinocchio_model(RX90)
    data = pm.createData()
    rng = np.random.default_rng(2)
    for q in rng.uniform(-2.0, 2.0, (5, 6)):
        a_pin = pin.crba(pm, data, q)
        a_pin = np.triu(a_pin) + np.triu(a_pin, 1).T
        assert np.allclose(link_inertia_matrix(RX90, q), a_pin, atol=1e-10)
        assert np.allclose(MujocoArm(RX90, elastic=ElasticJoints(1e3)).mass_matrix(q), a_pin, atol=1e-10)
        assert np.allclose(MujocoArm(RX90).mass_matrix(q), a_pin + np.diag(RX90.Ia), atol=1e-10)


def test_stiff_limit_is_the_rigid_plant():
    """k → ∞: the elastic plant (link inertia A, motor inertia I_a) tends to the rigid plant with Ia = I_a, the
    link motion differing by O(1/k) under the same open-loop efforts."""
    jm, dt, steps = JM, 2e-4, 2500
    q0 = np.array([-np.pi / 2 + 0.4, 0.3])

    def run(arm):
        arm.reset(q0)
        out = np.empty((steps, 2))
        for i in range(steps):
            t = i * dt
            arm.step([2.0 * np.sin(7.0 * t), 0.5 * np.cos(5.0 * t)])
            out[i] = arm.state(noisy=False).q
        return out

    rigid = run(MujocoArm(PLANAR.replace(Ia=jm), timestep=dt))
    gaps = {k: np.abs(run(MujocoArm(PLANAR, timestep=dt, elastic=ElasticJoints(k, jm))) - rigid).max()
            for k in (1e4, 1e5)}
    print(f"\n[k → ∞] max |q_elastic − q_rigid| over 0.5 s (motion {np.abs(rigid - q0).max():.2f} rad): "
          + ", ".join(f"k = {k:g}: {g:.2e} rad" for k, g in gaps.items()))
    assert gaps[1e5] < 2e-4
    assert 5.0 < gaps[1e4] / gaps[1e5] < 20.0  # O(1/k)


def test_rigid_mjcf_unchanged_and_motor_state_guarded():
    assert model_to_mjcf(RX90, elastic=None) == model_to_mjcf(RX90)
    text = model_to_mjcf(PLANAR, elastic=ElasticJoints(K_5HZ, JM))
    assert 'joint="joint1_motor"' in text and 'stiffness="910.0"' in text and "armature" not in text
    with pytest.raises(ValueError, match="too high for the time step"):  # sqrt(1e6 / 0.01) * 1 ms = 10
        MujocoArm(PLANAR, elastic=ElasticJoints(1e6, 0.01))
    arm = MujocoArm(PLANAR)
    with pytest.raises(ValueError, match="rigid"):
        arm.motor_state()
    with pytest.raises(ValueError, match="elastic plant"):
        arm.reset([0.0, 0.0], theta=[0.0, 0.0])
    elastic = MujocoArm(PLANAR, elastic=ElasticJoints(K_5HZ, JM))
    q = np.array([0.3, -0.2])
    elastic.reset(q)  # default motor state: holding the links against gravity
    theta = elastic.motor_state(noisy=False).theta
    assert np.allclose(theta, elastic_equilibrium(PLANAR, ElasticJoints(K_5HZ, JM), q), atol=1e-12)
    assert np.allclose(theta - q, PLANAR.gravity_torques(q) / K_5HZ, atol=1e-12)
    qdd, thetadd = elastic.accelerations(q, [0.0, 0.0], K_5HZ * (theta - q), theta, [0.0, 0.0])
    assert np.abs(qdd).max() < 1e-9 and np.abs(thetadd).max() < 1e-9  # at rest: an equilibrium


# ------------------------------------------------------------------ inverse model
def sinusoid(q0, a, w, t):
    """q = q0 + a (1 − cos ωt) and its derivatives up to the 4th order."""
    t = np.asarray(t, float)[..., None]
    s, c = np.sin(w * t), np.cos(w * t)
    return q0 + a * (1 - c), a * w * s, a * w**2 * c, -a * w**3 * s, -a * w**4 * c


def test_inverse_dynamics_derivatives_by_numerical_differentiation():
    """θ̇, θ̈ of the flat-output inverse = time derivatives (5-point stencils over t) of θ(t); the motor effort
    satisfies 7.35b and the direct model gives back q̈ and θ̈.  RX-90 with link friction, monotonic motion
    (q = q0 + v t + a sin ωt, no velocity reversal, so the Coulomb terms are constant)."""
    e = ElasticJoints(np.full(6, 5e3), RX90.Ia, motor_damping=0.2, motor_coulomb=0.4)
    q0 = np.array([0.1, -0.4, 0.3, 0.2, -0.3, 0.1])
    v, a, w = np.full(6, 1.0), np.full(6, 0.1), np.linspace(3.0, 8.0, 6)

    def traj(t):
        t = np.asarray(t, float)[..., None]
        s, c = np.sin(w * t), np.cos(w * t)
        return (q0 + v * t + a * s, v + a * w * c, -a * w**2 * s, -a * w**3 * c, a * w**4 * s)

    ts = np.array([0.13, 0.41, 0.77])
    d = 1e-3
    stencil = [elastic_inverse_dynamics(RX90, e, *traj(ts + j * d)) for j in (-2, -1, 0, 1, 2)]
    th = [r.theta for r in stencil]
    num_d = (th[0] - 8 * th[1] + 8 * th[3] - th[4]) / (12 * d)
    num_dd = (-th[0] + 16 * th[1] - 30 * th[2] + 16 * th[3] - th[4]) / (12 * d * d)
    r = stencil[2]
    print(f"\n[inverse] |θ̇ − dθ/dt| max {np.abs(r.thetad - num_d).max():.1e} rad/s (|θ̇| ≤ {np.abs(r.thetad).max():.2f}), "
          f"|θ̈ − d²θ/dt²| max {np.abs(r.thetadd - num_dd).max():.1e} rad/s² (|θ̈| ≤ {np.abs(r.thetadd).max():.1f})")
    assert np.allclose(r.thetad, num_d, rtol=0, atol=1e-6 * np.abs(r.thetad).max())
    assert np.allclose(r.thetadd, num_dd, rtol=0, atol=1e-5 * np.abs(r.thetadd).max())
    q, qd, qdd, _, _ = traj(ts)
    assert np.all(r.thetad > 0)  # the motors do not reverse either (their Coulomb term is constant)
    # 7.35a: the spring torque is the rigid link-side effort; 7.35b by hand
    assert np.allclose(r.joint_torque, RX90.inverse_dynamics(q, qd, qdd) - RX90.Ia * qdd, atol=1e-10)
    assert np.allclose(r.theta, q + r.joint_torque / 5e3)
    assert np.allclose(r.tau, RX90.Ia * r.thetadd + 0.2 * r.thetad + 0.4 + r.joint_torque, atol=1e-10)
    acc = elastic_forward_dynamics(RX90, e, q, qd, r.theta, r.thetad, r.tau)
    assert np.allclose(acc.qdd, qdd, atol=1e-8) and np.allclose(acc.thetadd, r.thetadd, atol=1e-8)


def test_feedforward_drives_the_mujoco_plant_open_loop():
    """The flat-output efforts, applied open loop (held at mid-step) to the MuJoCo elastic plant started on the
    motor trajectory, make the links follow q(t); the rigid model's efforts do not (vertical plane, gravity)."""
    e = ElasticJoints(K_5HZ, JM, motor_damping=[0.5, 0.1])
    q0, a, w = np.array([-np.pi / 2 - 0.3, -0.3]), np.array([0.4, 0.6]), np.array([4.0, 6.0])
    dt, steps = 1e-3, 1000
    rigid = PLANAR.replace(Ia=JM)

    def run(efforts):
        arm = MujocoArm(PLANAR, elastic=e, timestep=dt)
        start = elastic_inverse_dynamics(PLANAR, e, *sinusoid(q0, a, w, 0.0))
        arm.reset(q0, np.zeros(2), theta=start.theta, thetad=start.thetad)
        tau = efforts((np.arange(steps) + 0.5) * dt)
        err = 0.0
        for i in range(steps):
            arm.step(tau[i])
            err = max(err, np.abs(arm.state(noisy=False).q - sinusoid(q0, a, w, (i + 1) * dt)[0]).max())
        return err

    err_elastic = run(lambda t: elastic_inverse_dynamics(PLANAR, e, *sinusoid(q0, a, w, t)).tau)
    err_rigid = run(lambda t: rigid.inverse_dynamics(*sinusoid(q0, a, w, t)[:3]) + e.motor_damping
                    * sinusoid(q0, a, w, t)[1])
    print(f"\n[open loop, 1 s, 5 Hz joints] max link error: flat-output feed-forward {err_elastic:.1e} rad, "
          f"rigid inverse dynamics {err_rigid:.1e} rad")
    assert err_elastic < 1e-5
    assert err_rigid > 100 * err_elastic


# ------------------------------------------------------------------ control
def test_elastic_controller_interface():
    e = ElasticJoints(K_5HZ, JM)
    ctrl = ElasticJointController.tuned(PLANAR, e, 20.0)
    q = np.array([0.2, -0.1])
    with pytest.raises(ValueError, match="motor state"):
        ctrl.compute(0.0, q, np.zeros(2), q)
    with pytest.raises(ValueError, match="both"):
        ctrl.compute(0.0, q, np.zeros(2), q, theta=q)
    # at rest on the reference with the motors at the gravity equilibrium: Γ = Q(q) (7.35b at rest)
    theta = elastic_equilibrium(PLANAR, e, q)
    tau = ctrl.compute(0.0, q, np.zeros(2), q, theta=theta, thetad=np.zeros(2))
    assert np.allclose(tau, PLANAR.gravity_torques(q), atol=1e-10)
    # the motor PD: a motor position error δ adds −K_θ δ, a motor velocity −D_θ θ̇
    d = np.array([1e-3, -2e-3])
    tau2 = ctrl.compute(0.0, q, np.zeros(2), q, theta=theta + d, thetad=d)
    assert np.allclose(tau2 - tau, -ctrl.k_motor * d - ctrl.d_motor * d, atol=1e-10)
    # gains of tuned(): ω_θ = 5 ω = 100 rad/s, K_θ = I_a ω_θ² − k, D_θ = 2 ξ_θ ω_θ I_a
    assert np.allclose(ctrl.k_motor, np.maximum(JM * 100.0**2 - K_5HZ, 0.0))
    assert np.allclose(ctrl.d_motor, 2 * 0.7 * 100.0 * JM)
    with pytest.raises(ValueError, match="elastic plant"):
        run_closed_loop(PLANAR, MujocoArm(PLANAR), ctrl, point_to_point(q, q + 0.1, [1, 1], [1, 1]))


def test_elastic_controller_beats_rigid_computed_torque():
    """Trapezoid on planar2r with 5 Hz joints: the composite law tracks; the rigid computed torque (the rigid
    equivalent model, Ia = I_a, same ω = 20 rad/s) on the same elastic plant oscillates."""
    e = ElasticJoints(K_5HZ, JM)
    start, goal = np.array([-1.2, 0.8]), np.array([0.2, -0.6])
    traj = point_to_point(start, goal, *reference_limits(PLANAR, 0.5), profile="trapezoid")
    rigid = PLANAR.replace(Ia=JM)
    composite = ElasticJointController.tuned(PLANAR, e, 20.0)
    spong = ElasticJointController.tuned(PLANAR, e, 20.0)
    spong.k_motor[:] = 0.0  # Spong's composite control u_s + K_v (q̇ − θ̇)
    runs = {
        "elastic (K_θ, D_θ)": (composite, MujocoArm(PLANAR, elastic=e)),
        "Spong composite (K_θ = 0)": (spong, MujocoArm(PLANAR, elastic=e)),
        "rigid computed torque": (ComputedTorqueController.tuned(rigid, 20.0), MujocoArm(PLANAR, elastic=e)),
        "rigid CT on the rigid plant": (ComputedTorqueController.tuned(rigid, 20.0), MujocoArm(rigid)),
    }
    m = {}
    print(f"\n[trapezoid {traj.duration:.2f} s + 0.5 s, planar2r, k = {K_5HZ.tolist()}, I_a = {JM.tolist()}]")
    for name, (ctrl, plant) in runs.items():
        res = run_closed_loop(PLANAR, plant, ctrl, traj, settle_time=0.5)
        m[name] = res.metrics
        print(f"  {name:28s} stable {res.metrics['stable']!s:5s} max {res.metrics['max_tracking_error']:.2e} rad, RMS {res.metrics['rms_tracking_error']:.2e}"
              f" rad, final {res.metrics['final_error']:.1e} rad, max deflection {res.metrics.get('max_deflection', 0):.3f}"
              f" rad, saturated {res.metrics['saturation_time']:.3f} s")
    ours, spong_m, ct = m["elastic (K_θ, D_θ)"], m["Spong composite (K_θ = 0)"], m["rigid computed torque"]
    assert ours["stable"] and ours["saturation_time"] == 0.0
    assert ours["max_tracking_error"] < 5e-3 and ours["final_error"] < 1e-4
    assert spong_m["max_tracking_error"] < 1e-2 and spong_m["final_error"] < 1e-3
    factor = 20.0
    print(f"  rigid CT / elastic: max {ct['max_tracking_error'] / ours['max_tracking_error']:.0f}x, "
          f"RMS {ct['rms_tracking_error'] / ours['rms_tracking_error']:.0f}x (asserted > {factor:g}x)")
    assert ct["max_tracking_error"] > factor * ours["max_tracking_error"]
    assert ct["rms_tracking_error"] > factor * ours["rms_tracking_error"]


def test_cli_simulate_elastic(capsys):
    code = simulate_cli(["planar2r", "--goal", "0.2", "-0.6", "--start", "-1.2", "0.8", "--elastic", "910", "79",
                         "--motor-inertia", "0.2", "0.02", "--speed-scale", "0.5", "--settle", "0.3", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    metrics = json.loads(out)
    assert metrics["controller"] == "elastic" and metrics["stable"]
    assert metrics["stiffness"] == [910.0, 79.0] and metrics["motor_inertia"] == [0.2, 0.02]
    assert metrics["max_tracking_error"] < 5e-3 and 0.0 < metrics["max_deflection"] < 0.2
    print(f"\n[CLI simulate --elastic 910 79] max error {metrics['max_tracking_error']:.2e} rad, "
          f"max deflection {metrics['max_deflection']:.3f} rad")
    # one stiffness for every joint and the default motor inertia (0.1 A_jj: planar2r has Ia = 0), text report
    assert simulate_cli(["planar2r", "--goal", "0.3", "0.3", "--elastic", "400", "--settle", "0.1"]) == 0
    text = capsys.readouterr().out
    assert "controller: elastic" in text and "max_deflection:" in text and "stiffness: [400.0, 400.0]" in text
    assert simulate_cli(["planar2r", "--goal", "0.3", "0.3", "--controller", "elastic"]) == 2  # no --elastic
    assert "needs elastic joints" in capsys.readouterr().err
    assert simulate_cli(["planar2r", "--goal", "0.3", "0.3", "--elastic", "1", "2", "3"]) == 2
    assert "3 values" in capsys.readouterr().err


def test_main_cli_simulate_elastic(capsys):
    from robot_dynamics.cli import main

    assert main(["simulate", "planar2r", "--goal", "0.3", "0.3", "--elastic", "400", "--motor-inertia", "0.05",
                 "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["controller"] == "elastic" and metrics["motor_inertia"] == [0.05, 0.05]
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "planar2r", "--goal", "0.3", "0.3", "--elastic", "-4"])
    assert exc.value.code == 2 and "--elastic" in capsys.readouterr().err
