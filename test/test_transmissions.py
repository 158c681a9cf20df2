"""Actuator transmissions (001 eqs. 7.29, 7.31–7.33): a coupled RX-90 wrist derived by hand, the model's
dynamics with the coupled rotor inertia against Pinocchio (``rnea``, ``crba``, kinetic energy) plus the
hand-derived rotor inertia matrix, the MuJoCo plant, the config format and its refusals.

Hand derivation of the coupled wrist (joints 5, 6; motors 5, 6; the other joints simple, q_j = q_mj / N_j)::

    q5 = q_m5 / N5,   q6 = q_m6 / N6 + c q_m5 / N5                          (7.31: q = J_qm q_m)
    =>  q_m5 = N5 q5,   q_m6 = N6 (q6 − c q5)

Virtual work (7.32) Γ5 dq5 + Γ6 dq6 = τ_m5 dq_m5 + τ_m6 dq_m6 with dq5 = dq_m5/N5, dq6 = dq_m6/N6 + c dq_m5/N5:
the coefficients of dq_m5 and dq_m6 give (7.33)::

    τ_m5 = (Γ5 + c Γ6) / N5,   τ_m6 = Γ6 / N6     and back   Γ6 = N6 τ_m6,   Γ5 = N5 τ_m5 − c N6 τ_m6

Rotor kinetic energy ½ J_m5 q̇_m5² + ½ J_m6 q̇_m6² = ½ J_m5 N5² q̇5² + ½ J_m6 N6² (q̇6 − c q̇5)², so the
joint-side rotor inertia (7.29 generalised) of the wrist block is::

    [[J_m5 N5² + c² J_m6 N6²,  −c J_m6 N6²],
     [−c J_m6 N6²,              J_m6 N6²  ]]

and I_aj = N_j² J_mj (7.29) for j = 1..4.  With the numbers of ``test/data/rx90_coupled_wrist.yaml``
(N5 = 50, N6 = 40, c = 0.4, J_m5 = 4e-5, J_m6 = 2.5e-5): [[0.1064, −0.016], [−0.016, 0.04]].
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml
from pinocchio_from_mdh import pinocchio_model

from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model
from robot_dynamics.model.transmission import Transmission

DATA = Path(__file__).resolve().parent / "data"
WRIST_FILE = DATA / "rx90_coupled_wrist.yaml"
NAMES = [f"joint{j}" for j in range(1, 7)]
N = np.array([120.0, 100.0, 80.0, 60.0, 50.0, 40.0])
JM = np.array([7.0e-5, 1.0e-4, 8.0e-5, 3.0e-5, 4.0e-5, 2.5e-5])
C = 0.4
RX90_IA = np.array([1.0, 1.0, 0.5, 0.1, 0.1, 0.05])  # rotor_inertia of config/rx90.yaml


def wrist_coupling(c: float = C) -> np.ndarray:
    k = np.eye(6)
    k[5, 4] = c
    return k


def hand_rotor_matrix(n: np.ndarray = N, jm: np.ndarray = JM, c: float = C) -> np.ndarray:
    """The joint-side rotor inertia of the module docstring, formula by formula."""
    out = np.diag(n**2 * jm)
    out[4, 4] = jm[4] * n[4] ** 2 + c**2 * jm[5] * n[5] ** 2
    out[4, 5] = out[5, 4] = -c * jm[5] * n[5] ** 2
    return out


def hand_motor_positions(q: np.ndarray) -> np.ndarray:
    qm = N * q
    qm[..., 5] = N[5] * (q[..., 5] - C * q[..., 4])
    return qm


def hand_motor_torques(tau: np.ndarray) -> np.ndarray:
    tm = tau / N
    tm[..., 4] = (tau[..., 4] + C * tau[..., 5]) / N[4]
    return tm


def hand_joint_torques(tm: np.ndarray) -> np.ndarray:
    tau = N * tm
    tau[..., 4] = N[4] * tm[..., 4] - C * N[5] * tm[..., 5]
    return tau


def wrist() -> Transmission:
    return Transmission(tuple(NAMES), N, wrist_coupling(), JM)


def states(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (rng.uniform(-np.pi, np.pi, (count, 6)), rng.uniform(-2.0, 2.0, (count, 6)),
            rng.uniform(-5.0, 5.0, (count, 6)))


def pin_terms(model: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, ...]:
    """Pinocchio (no rotor, no friction): rnea, symmetric crba, rnea at q̈ = 0, kinetic energy, per state."""
    pm = pinocchio_model(model)
    pd = pm.createData()
    tau, mass, h, ke = [], [], [], []
    for a, b, c in zip(q, qd, qdd, strict=True):
        tau.append(pin.rnea(pm, pd, a, b, c).copy())
        m = pin.crba(pm, pd, a).copy()
        mass.append(np.triu(m) + np.triu(m, 1).T)
        h.append(pin.rnea(pm, pd, a, b, np.zeros(6)).copy())
        ke.append(pin.computeKineticEnergy(pm, pd, a, b))
    return np.array(tau), np.array(mass), np.array(h), np.array(ke)


# ------------------------------------------------------------------ the maps
def test_coupled_wrist_maps_equal_the_hand_derivation() -> None:
    t = wrist()
    rng = np.random.default_rng(1)
    q = rng.uniform(-3.0, 3.0, (200, 6))
    tau = rng.uniform(-50.0, 50.0, (200, 6))
    assert np.max(np.abs(t.motor_positions(q) - hand_motor_positions(q))) < 1e-12
    assert np.max(np.abs(t.motor_velocities(q[0]) - hand_motor_positions(q[0]))) < 1e-12
    assert np.max(np.abs(t.joint_positions(hand_motor_positions(q)) - q)) < 1e-12
    assert np.max(np.abs(t.joint_velocities(hand_motor_positions(q[3])) - q[3])) < 1e-12
    assert np.max(np.abs(t.motor_torques(tau) - hand_motor_torques(tau))) < 1e-13
    tm = rng.uniform(-1.0, 1.0, (200, 6))
    assert np.max(np.abs(t.joint_torques(tm) - hand_joint_torques(tm))) < 1e-12
    # J_qm itself: column 5 of joint 6 is c / N5
    expect_j = np.diag(1.0 / N)
    expect_j[5, 4] = C / N[4]
    assert np.array_equal(t.jacobian, expect_j)
    assert np.max(np.abs(t.inverse_jacobian @ expect_j - np.eye(6))) < 1e-14
    assert t.is_coupled and not Transmission(tuple(NAMES), N).is_coupled


def test_round_trips_and_power_on_random_transmissions() -> None:
    rng = np.random.default_rng(2)
    worst_power = worst_trip = 0.0
    for _ in range(50):
        k = np.eye(6) + rng.uniform(-0.5, 0.5, (6, 6))
        n = rng.uniform(5.0, 150.0, 6) * rng.choice([-1.0, 1.0], 6)
        t = Transmission(tuple(NAMES), n, k, rng.uniform(0.0, 1e-4, 6))
        qd = rng.normal(size=(20, 6))
        tau = rng.normal(size=(20, 6)) * 30.0
        # τ_mᵀ q̇_m = Γᵀ q̇ (7.32): the transmission neither makes nor loses power
        p_joint = np.einsum("bi,bi->b", tau, qd)
        p_motor = np.einsum("bi,bi->b", t.motor_torques(tau), t.motor_velocities(qd))
        worst_power = max(worst_power, float(np.max(np.abs(p_motor - p_joint) / (1.0 + np.abs(p_joint)))))
        worst_trip = max(worst_trip, float(np.max(np.abs(t.joint_torques(t.motor_torques(tau)) - tau))) / 30.0,
                         float(np.max(np.abs(t.joint_velocities(t.motor_velocities(qd)) - qd))),
                         float(np.max(np.abs(t.motor_positions(t.joint_positions(qd)) - qd))))
        # the rotor inertia matrix is the kinetic energy ½ q̇_mᵀ diag(J_m) q̇_m written in q̇
        qdm = t.motor_velocities(qd)
        e_motor = 0.5 * np.einsum("bi,i,bi->b", qdm, t.motor_inertia, qdm)
        e_joint = 0.5 * np.einsum("bi,ij,bj->b", qd, t.rotor_inertia_matrix(), qd)
        assert np.max(np.abs(e_motor - e_joint)) < 1e-12 * max(1.0, float(np.max(e_motor)))
    print(f"power mismatch {worst_power:.2e}, round trip {worst_trip:.2e}")
    assert worst_power < 1e-12 and worst_trip < 1e-12


def test_rotor_inertia_matrix_of_the_coupled_wrist_equals_the_hand_matrix() -> None:
    got = wrist().rotor_inertia_matrix()
    expect = hand_rotor_matrix()
    assert np.max(np.abs(got - expect)) < 1e-15
    # the numbers of the module docstring
    assert np.allclose(got[4:, 4:], [[0.1064, -0.016], [-0.016, 0.04]], rtol=0, atol=1e-15)
    assert np.allclose(np.diag(got)[:4], [1.008, 1.0, 0.512, 0.108], rtol=0, atol=1e-15)
    # 7.29 for a simple transmission: I_aj = N_j² J_mj, diagonal
    simple = Transmission(tuple(NAMES), N, None, JM).rotor_inertia_matrix()
    assert np.array_equal(simple, np.diag(simple).copy() * np.eye(6)) and np.allclose(np.diag(simple), N**2 * JM,
                                                                                      rtol=1e-15, atol=0)


def test_motor_friction_maps_to_the_joint_side() -> None:
    fv, fc = np.array([1e-3, 2e-3, 1e-3, 5e-4, 4e-4, 3e-4]), np.array([0.02, 0.03, 0.02, 0.01, 0.01, 0.005])
    t = Transmission(tuple(NAMES), N, wrist_coupling(), JM, fv, fc)
    qd = np.array([0.3, -0.2, 0.1, 0.5, 0.4, 0.1])
    qdm = hand_motor_positions(qd)  # q̇_m6 = N6 (0.1 − 0.4·0.4) < 0
    assert qdm[5] < 0
    tm = fv * qdm + fc * np.sign(qdm)
    assert np.max(np.abs(t.motor_friction_torques(qdm) - tm)) < 1e-15
    assert np.max(np.abs(t.friction_torques(qd) - hand_joint_torques(tm))) < 1e-12


def test_identity_transmission() -> None:
    t = Transmission.identity(3)
    assert t.joint_names == ("joint1", "joint2", "joint3") and not t.has_motor_inertia
    x = np.array([[0.1, -2.0, 3.0]])
    for f in (t.motor_positions, t.joint_positions, t.motor_velocities, t.joint_velocities, t.motor_torques,
              t.joint_torques):
        assert np.array_equal(f(x), x)
    assert np.array_equal(t.rotor_inertia_matrix(), np.zeros((3, 3)))
    assert Transmission.identity(["a", "b"]).joint_names == ("a", "b")


# ------------------------------------------------------------------ the model's dynamics
def test_coupled_model_gives_the_joint_torques_of_the_uncoupled_model_after_mapping() -> None:
    """A transmission without motor inertia changes no joint effort: the coupled model's joint torques are the
    uncoupled model's (config/rx90.yaml, Pinocchio + friction + Ia q̈ by hand), and its motor torques, mapped back by
    the hand formulas, are those joint torques."""
    plain = load_model("rx90")
    coupled = load_model("rx90", transmission={"gear_ratio": N.tolist(), "coupling": wrist_coupling().ravel().tolist()})
    assert coupled.transmission is not None and not coupled.has_rotor_coupling
    assert np.array_equal(coupled.Ia, RX90_IA)
    rng = np.random.default_rng(3)
    q, qd, qdd = states(rng, 40)
    tau_pin, _, _, _ = pin_terms(plain, q, qd, qdd)
    expect = tau_pin + plain.Fc * np.sign(qd) + plain.Fv * qd + RX90_IA * qdd
    tau = coupled.inverse_dynamics(q, qd, qdd)
    assert np.max(np.abs(tau - plain.inverse_dynamics(q, qd, qdd))) == 0.0
    assert np.max(np.abs(tau - expect)) < 1e-10 * (1.0 + np.max(np.abs(expect)))
    tm = coupled.transmission.motor_torques(tau)
    assert np.max(np.abs(tm - hand_motor_torques(expect))) < 1e-11
    assert np.max(np.abs(hand_joint_torques(tm) - expect)) < 1e-10 * (1.0 + np.max(np.abs(expect)))


def test_rx90_dynamics_with_the_coupled_rotor_inertia_equal_pinocchio_plus_the_hand_matrix() -> None:
    model = load_model("rx90", parameters=WRIST_FILE)
    ia = hand_rotor_matrix()
    assert model.has_rotor_coupling
    assert np.max(np.abs(model.rotor_inertia_matrix - ia)) < 1e-15
    assert np.max(np.abs(model.Ia - np.diag(ia))) < 1e-15
    rng = np.random.default_rng(4)
    q, qd, qdd = states(rng, 60)
    tau_pin, mass, h, ke = pin_terms(model, q, qd, qdd)
    friction = model.Fc * np.sign(qd) + model.Fv * qd
    expect = tau_pin + qdd @ ia + friction  # ia symmetric
    scale = 1.0 + np.max(np.abs(expect))
    got = model.inverse_dynamics(q, qd, qdd)
    err = {"inverse_dynamics": np.max(np.abs(got - expect)) / scale,
           "single state": np.max(np.abs(model.inverse_dynamics(q[7], qd[7], qdd[7]) - expect[7])) / scale,
           "inertia_matrix": np.max(np.abs(model.inertia_matrix(q) - (mass + ia))),
           "inertia_matrix single": np.max(np.abs(model.inertia_matrix(q[2]) - (mass[2] + ia))),
           "kinetic_energy": np.max(np.abs(model.kinetic_energy(q, qd) - (ke + 0.5 * np.einsum("bi,ij,bj->b", qd, ia, qd)))),
           "nonlinear_effects": np.max(np.abs(model.nonlinear_effects(q, qd) - (h + friction))) / scale}
    # direct dynamics: (A + I_a) q̈ = Γ − H, whatever the method
    tau = expect
    expect_qdd = np.linalg.solve(mass + ia, (tau - h - friction)[..., None])[..., 0]
    for method in (None, "cholesky", "recursive"):
        got_qdd = model.forward_dynamics(q, qd, tau, method=method)
        err[f"forward_dynamics {method}"] = np.max(np.abs(got_qdd - expect_qdd)) / (1.0 + np.max(np.abs(expect_qdd)))
    err["forward_dynamics single"] = np.max(np.abs(model.forward_dynamics(q[5], qd[5], tau[5]) - expect_qdd[5]))
    # another gravity: Pinocchio's own
    g = np.array([1.0, -2.0, -9.0])
    pm = pinocchio_model(model.replace(gravity=g))
    pd = pm.createData()
    h_g = np.array([pin.rnea(pm, pd, a, b, np.zeros(6)).copy() for a, b in zip(q, qd, strict=True)])
    qdd_g = np.linalg.solve(mass + ia, (tau - h_g - friction)[..., None])[..., 0]
    err["forward_dynamics gravity"] = np.max(np.abs(model.forward_dynamics(q, qd, tau, gravity=g) - qdd_g))
    print({k: f"{v:.1e}" for k, v in err.items()})
    assert max(err.values()) < 1e-11
    # the coupled terms matter: the diagonal model alone misses I_c q̈ (up to 0.07 N m here)
    ic = ia - np.diag(np.diag(ia))
    missing = expect - load_model("rx90", rotor_inertia=np.diag(ia).tolist()).inverse_dynamics(q, qd, qdd)
    assert np.max(np.abs(qdd @ ic)) > 0.05 and np.max(np.abs(missing - qdd @ ic)) < 1e-11 * scale


def test_generated_customized_programs_with_the_coupled_rotor_inertia(tmp_path: Path, monkeypatch) -> None:
    """The coupled term is added by the model's methods whatever the engine: here the customized programs
    (001 §7.5, generated as Python), against Pinocchio plus the hand matrix."""
    monkeypatch.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path))
    model = load_model("rx90", parameters=WRIST_FILE)
    model.set_backend("generated", lang="python")
    ia = hand_rotor_matrix()
    rng = np.random.default_rng(7)
    q, qd, qdd = states(rng, 3)
    tau_pin, mass, h, _ = pin_terms(model, q, qd, qdd)
    friction = model.Fc * np.sign(qd) + model.Fv * qd
    expect = tau_pin + qdd @ ia + friction
    expect_qdd = np.linalg.solve(mass + ia, (expect - h - friction)[..., None])[..., 0]
    err = {"inverse_dynamics": np.max(np.abs(model.inverse_dynamics(q, qd, qdd) - expect)),
           "inertia_matrix": np.max(np.abs(model.inertia_matrix(q) - (mass + ia))),
           "forward_dynamics": np.max(np.abs(model.forward_dynamics(q, qd, expect) - expect_qdd))}
    print(model.engine, {k: f"{v:.1e}" for k, v in err.items()})
    assert set(model.engine.values()) == {"generated"}
    assert max(err.values()) < 1e-10


def test_uncoupled_transmission_gives_the_rotor_inertia_of_7_29() -> None:
    """Gear ratios and motor inertias with N_j² J_mj = the Ia of config/rx90.yaml reproduce its model."""
    jm = RX90_IA / N**2
    model = load_model("rx90", rotor_inertia=[], transmission={"gear_ratio": N.tolist(), "motor_inertia": jm.tolist()})
    assert not model.has_rotor_coupling and np.allclose(model.Ia, RX90_IA, rtol=1e-15, atol=0)
    rng = np.random.default_rng(5)
    q, qd, qdd = states(rng, 20)
    ref = load_model("rx90")
    assert np.max(np.abs(model.inverse_dynamics(q, qd, qdd) - ref.inverse_dynamics(q, qd, qdd))) < 1e-12


def test_mujoco_plant_carries_the_coupled_rotor_inertia() -> None:
    import mujoco

    from robot_dynamics.sim.simulator import MujocoArm

    model = load_model("rx90", parameters=WRIST_FILE)
    arm = MujocoArm(model)
    assert "<tendon>" in arm.mjcf
    ia = hand_rotor_matrix()
    rng = np.random.default_rng(6)
    q, qd, qdd = states(rng, 10)
    _, mass, _, _ = pin_terms(model, q, qd, qdd)
    err_m = max(np.max(np.abs(arm.mass_matrix(a) - (m + ia))) for a, m in zip(q, mass, strict=True))
    err_id = max(np.max(np.abs(arm.inverse_dynamics(a, b, c) - model.inverse_dynamics(a, b, c)))
                 for a, b, c in zip(q, qd, qdd, strict=True))
    # the acceleration under given efforts (friction off in plant and model): MuJoCo's is the model's
    frictionless = model.replace(Fc=np.zeros(6), Fv=np.zeros(6))
    bare = MujocoArm(frictionless, friction=False)
    tau = frictionless.inverse_dynamics(q[0], qd[0], np.zeros(6)) + np.array([0.0, 0.0, 0.0, 0.0, 2.0, -1.0])
    bare.reset(q[0], qd[0])
    bare.mj_data.qfrc_applied[:] = tau
    mujoco.mj_forward(bare.mj_model, bare.mj_data)
    err_fd = np.max(np.abs(bare.mj_data.qacc - frictionless.forward_dynamics(q[0], qd[0], tau)))
    print(f"MuJoCo vs model: mass matrix {err_m:.1e}, inverse dynamics {err_id:.1e}, acceleration {err_fd:.1e}")
    assert err_m < 1e-12 and err_id < 1e-9 and err_fd < 1e-9
    # the tendons carry exactly the coupled part: without the transmission the plant's matrix lacks I_c
    diagonal = MujocoArm(model.replace(transmission=None))
    assert "<tendon>" not in diagonal.mjcf
    ic = ia - np.diag(np.diag(ia))
    assert np.max(np.abs(arm.mass_matrix(q[1]) - diagonal.mass_matrix(q[1]) - ic)) < 1e-12


# ------------------------------------------------------------------ config
def test_config_round_trips() -> None:
    t = Transmission(tuple(NAMES), N, wrist_coupling(), JM, np.full(6, 1e-3), np.full(6, 0.01))
    cfg = t.to_config()
    assert yaml.safe_load(yaml.safe_dump(cfg)) == cfg
    assert Transmission.from_config(cfg) == t
    assert Transmission.from_config({**cfg, "coupling": wrist_coupling().tolist()}) == t  # a list of rows
    assert pickle.loads(pickle.dumps(t)) == t
    assert Transmission.from_config({"gear_ratio": N.tolist()}, NAMES) == Transmission(tuple(NAMES), N)
    # the test parameter file is the hand transmission (nested section)
    model = load_model("rx90", parameters=WRIST_FILE)
    assert model.transmission == wrist()
    assert model.limits["acceleration"].tolist() == [10.0, 10.0, 12.0, 20.0, 20.0, 30.0]
    # the model keeps its transmission through YAML, pickle and replace
    for again in (RobotModel.from_yaml(model.to_yaml()), pickle.loads(pickle.dumps(model)),
                  model.replace(gravity=np.array([0.0, 0.0, -9.0])).replace(gravity=model.gravity)):
        assert again.transmission == model.transmission
        assert np.array_equal(again.rotor_inertia_matrix, model.rotor_inertia_matrix)
    assert load_model("rx90").to_dict().get("transmission") is None  # no transmission: the description as before


def test_ros_parameter_file_flat_and_nested_names(tmp_path: Path) -> None:
    cfg = {k: v for k, v in wrist().to_config().items() if k != "joint_names"}
    flat = tmp_path / "flat.yaml"
    flat.write_text(yaml.safe_dump({"/**": {"ros__parameters": {f"transmissions.{k}": v for k, v in cfg.items()}}}))
    nested = tmp_path / "nested.yaml"
    nested.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"transmissions": cfg}}}))
    a, b = load_model("rx90", parameters=flat), load_model("rx90", parameters=nested)
    assert a.transmission == b.transmission == wrist()
    assert np.array_equal(a.Ia, b.Ia)
    with pytest.raises(FileNotFoundError, match="no parameter file"):
        load_model("rx90", parameters=tmp_path / "absent.yaml")


BAD = [
    ({"gear_ratio": N.tolist(), "coupling": [1.0, 0.0] * 18}, "coupling matrix is singular"),
    ({"gear_ratio": N.tolist(), "coupling": np.ones((6, 6)).ravel().tolist()}, "coupling matrix is singular"),
    ({"gear_ratio": N.tolist()[:5]}, r"gear_ratio must have 6 values"),
    ({"gear_ratio": N.tolist(), "coupling": [1.0] * 35}, r"coupling must be 6x6"),
    ({"gear_ratio": N.tolist(), "motor_inertia": [1e-4] * 5}, r"motor_inertia must have 6 values"),
    ({"gear_ratio": N.tolist(), "motor_inertia": [1e-4, -1e-4, 1e-4, 1e-4, 1e-4, 1e-4]}, r"motor_inertia must be >= 0"),
    ({"gear_ratio": N.tolist(), "motor_coulomb": [-1.0] * 6}, r"motor_coulomb must be >= 0"),
    ({"gear_ratio": [100.0, 0.0, 1.0, 1.0, 1.0, 1.0]}, "gear_ratio must be non-zero"),
    ({"gear_ratio": [100.0, float("nan"), 1.0, 1.0, 1.0, 1.0]}, "gear_ratio contains NaN"),
    ({"motor_inertia": JM.tolist()}, "gear_ratio is required"),
    ({"gear_ratio": N.tolist(), "gear_ratios": N.tolist()}, r"unknown keys \['gear_ratios'\]"),
    ({"gear_ratio": N.tolist(), "joint_names": ["a", "b", "c", "d", "e", "f"]}, "differ from the model's chain"),
    ({"gear_ratio": N.tolist(), "coupling": ["x"] * 36}, "coupling must be 6x6 numbers"),
]


@pytest.mark.parametrize(("config", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_configs_are_refused_with_one_clear_message(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        load_model("rx90", rotor_inertia=[], transmission=config)
    assert "\n" not in str(err.value)
    # the same refusal from the class itself
    with pytest.raises(ValueError, match=message):
        Transmission.from_config(config, NAMES)


def test_rotor_inertia_given_twice_is_refused(tmp_path: Path) -> None:
    # config/rx90.yaml has rotor_inertia; a transmission with motor inertias on top of it is refused
    with pytest.raises(ValueError, match="rotor inertia given twice"):
        load_model("rx90", transmission={"gear_ratio": N.tolist(), "motor_inertia": JM.tolist()})
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump({"/**": {"ros__parameters": {
        "rotor_inertia": RX90_IA.tolist(), "transmissions": {"gear_ratio": N.tolist(), "motor_inertia": JM.tolist()}}}}))
    with pytest.raises(ValueError, match="rotor inertia given twice"):
        load_model("rx90", parameters=both)
    # a transmission of another robot's joints
    with pytest.raises(ValueError, match="differ from the model's chain"):
        load_model("rx90").with_transmission(Transmission.identity(list("abcdef")))
    with pytest.raises(ValueError, match="differ from the model's chain"):
        RobotModel.from_dict({**load_model("rx90").to_dict(),
                              "transmission": Transmission.identity(list("abcdef")).to_config()})
