"""Optional friction terms: offset ``Foff`` and the Stribeck term of 001 eq. 7.26 (``Fs``, ``vs``) through the
model, every dynamics engine, the YAML files and the MuJoCo plant; zero terms change nothing."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from pinocchio_from_mdh import pinocchio_model, random_model, random_states

from robot_dynamics.dynamics.dynamic_terms import nonlinear_effects
from robot_dynamics.dynamics.forward_dynamics import forward_dynamics
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics, regressor
from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.robots import load_model
from robot_dynamics.sim.simulator import MujocoArm


def stribeck_offset(qd: np.ndarray, fc, fv, fs, vs, foff) -> np.ndarray:
    """Γ_f of 001 eq. 7.26 with B = 1/vs, plus a constant offset, written independently of the package."""
    out = np.zeros(np.shape(qd))
    for idx in np.ndindex(*np.shape(qd)):
        j = idx[-1]
        v = float(qd[idx])
        s = 0.0 if v == 0.0 else (1.0 if v > 0.0 else -1.0)
        strib = (fs[j] - fc[j]) * s * np.exp(-abs(v) / vs[j]) if vs[j] > 0 else 0.0
        out[idx] = fc[j] * s + fv[j] * v + strib + foff[j]
    return out


def with_terms(model: RobotModel, rng: np.random.Generator) -> RobotModel:
    n = model.dof
    fc = model.Fc if np.any(model.Fc) else rng.uniform(0.5, 2.0, n)
    return model.replace(Fc=fc, Foff=rng.uniform(-1.0, 1.0, n), Fs=fc * rng.uniform(1.2, 2.0, n),
                         vs=rng.uniform(0.05, 0.5, n))


def reference(m: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Pinocchio RNEA + Ia q̈ + the friction formula."""
    pm = pinocchio_model(m)
    pm.gravity.linear = m.gravity
    pd = pm.createData()
    rigid = np.array([pin.rnea(pm, pd, a, b, c).copy() for a, b, c in zip(q, qd, qdd, strict=True)])
    return rigid + m.Ia * qdd + stribeck_offset(qd, m.Fc, m.Fv, m.Fs, m.vs, m.Foff)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1.0))


@pytest.mark.parametrize("engine", ["numpy", "c", "python"])
def test_inverse_dynamics_with_offset_and_stribeck_vs_pinocchio(engine: str) -> None:
    rng = np.random.default_rng(5)
    m = with_terms(random_model(rng, 3, friction=True), rng)
    q, qd, qdd = random_states(rng, m.dof, 9, scale=1.0)
    qd[0, 1] = 0.0  # sign(0) = 0: no Coulomb nor Stribeck term, the offset stays
    qd[1] *= 0.05  # low velocities: the Stribeck term is large
    ref = reference(m, q, qd, qdd)
    if engine != "numpy":
        m.set_backend("generated", lang=engine)
    try:
        assert _rel(m.inverse_dynamics(q, qd, qdd), ref) < 1e-10
        for k in range(3):
            assert _rel(m.inverse_dynamics(q[k], qd[k], qdd[k]), ref[k]) < 1e-10
        # H = Γ(q̈ = 0) and the forward dynamics inverts the inverse dynamics (same total friction)
        z = np.zeros_like(qdd)
        assert _rel(m.nonlinear_effects(q, qd), reference(m, q, qd, z)) < 1e-10
        assert _rel(m.forward_dynamics(q, qd, ref), qdd) < 1e-8
        assert _rel(m.forward_dynamics(q[2], qd[2], ref[2]), qdd[2]) < 1e-8
        assert _rel(m.forward_dynamics(q, qd, ref, method="recursive"), qdd) < 1e-8
        # the model's friction alone
        assert _rel(m.friction_torques(qd), stribeck_offset(qd, m.Fc, m.Fv, m.Fs, m.vs, m.Foff)) < 1e-14
        # the regressor is the standard (13 per joint) one: W θ + extra friction = Γ
        w = m.regressor(q, qd, qdd)
        assert w.shape == (9, 3, 39)
        assert _rel(np.einsum("bij,j->bi", w, m.standard_parameter_values) + m.extra_friction(qd), ref) < 1e-10
    finally:
        m.set_backend("numpy")


def test_zero_terms_change_nothing() -> None:
    """Models untouched vs the same models with the new terms given as explicit zeros: identical results."""
    rng = np.random.default_rng(11)
    for base in (load_model("rx90"), random_model(rng, 4, friction=True)):
        zero = base.replace(Foff=np.zeros(base.dof), Fs=np.zeros(base.dof), vs=np.zeros(base.dof))
        fs_only = base.replace(Fs=base.Fc * 2.0)  # vs = 0: no Stribeck term whatever Fs
        assert not zero.has_extra_friction and not fs_only.has_extra_friction
        q, qd, qdd = random_states(rng, base.dof, 5)
        for m in (zero, fs_only):
            assert np.array_equal(m.inverse_dynamics(q, qd, qdd), base.inverse_dynamics(q, qd, qdd))
            assert np.array_equal(m.inverse_dynamics(q, qd, qdd), inverse_dynamics(base, q, qd, qdd))
            assert np.array_equal(m.nonlinear_effects(q, qd), nonlinear_effects(base, q, qd))
            assert np.array_equal(m.forward_dynamics(q, qd, qdd), forward_dynamics(base, q, qd, qdd))
            assert np.array_equal(m.regressor(q, qd, qdd), regressor(base, q, qd, qdd))
            assert np.array_equal(m.friction_torques(qd), base.Fc * np.sign(qd) + base.Fv * qd)
        assert zero.to_yaml() == base.to_yaml()  # no new keys in the files
        bp, bz = base.base_parameters(), zero.base_parameters()
        assert bp.names == bz.names and np.array_equal(bp.values, bz.values)
        assert "Foff" not in base.to_yaml() and "vs" not in base.to_yaml()


def test_yaml_round_trip() -> None:
    rng = np.random.default_rng(2)
    m = with_terms(load_model("rx90"), rng)
    text = m.to_yaml()
    assert "Foff" in text and "Fs" in text and "vs" in text
    back = RobotModel.from_yaml(text)
    for k in ("Foff", "Fs", "vs", "Fc", "Fv", "Ia"):
        assert np.array_equal(getattr(back, k), getattr(m, k)), k
    assert back.to_yaml() == text
    # one term only: only its key is written
    only = load_model("rx90").replace(Foff=np.arange(6.0))
    assert "Foff" in only.to_yaml() and "vs:" not in only.to_yaml()
    with pytest.raises(ValueError, match="vs"):
        load_model("rx90").replace(vs=-np.ones(6))


# ------------------------------------------------------------------ simulator
def _one_joint(**friction: float) -> RobotModel:
    """A rotor about a vertical axis (no gravity torque), ZZ + Ia = 0.6 kg m²."""
    return RobotModel([MDHJoint("j1", 0, 0, 0.0, 0.0, 0.0, 0.0)], inertial=[[0.3, 0, 0, 0.3, 0, 0.5, 0, 0, 0, 2.0]],
                      Ia=[0.1], **{k: [v] for k, v in friction.items()})


F1 = {"Fc": 1.0, "Fv": 0.5, "Fs": 2.0, "vs": 0.1, "Foff": 0.3}


@pytest.mark.parametrize("coulomb", ["sign", "frictionloss"])
def test_simulator_sticks_below_static_friction(coulomb: str) -> None:
    arm = MujocoArm(_one_joint(**F1), coulomb=coulomb)
    creep = 1e-12 if coulomb == "sign" else 1e-2  # MuJoCo's frictionloss is a soft constraint: slow creep
    for tau in (1.5, -1.5, 2.2, -1.6):  # |tau − Foff| < Fs
        arm.reset([0.0])
        arm.step([tau], 1000)
        assert abs(arm.state().q[0]) < creep and abs(arm.state().qd[0]) < creep, tau
    for tau in (2.5, -2.0):  # |tau − Foff| > Fs: breaks away
        arm.reset([0.0])
        arm.step([tau], 1000)
        assert np.sign(arm.state().qd[0]) == np.sign(tau) and abs(arm.state().q[0]) > 0.1


def test_simulator_sticks_on_a_six_joint_arm() -> None:
    """The RX-90 with static friction on every joint (several joints stuck at once: the stuck block of M^-1), under
    gravity compensation plus an effort beyond the offset but below Fs on every joint: the arm does not move; with
    2 Fs on joint 1 alone, joint 1 breaks away and the others stay stuck."""
    m = load_model("rx90")
    m = m.replace(Fs=1.6 * m.Fc + 0.5, vs=np.full(6, 0.1), Foff=np.array([0.5, -0.5, 0.3, 0.1, -0.1, 0.05]))
    q0 = np.array([0.2, -0.3, 0.4, 0.1, 0.5, -0.2])
    arm = MujocoArm(m)
    arm.reset(q0)
    push = m.Foff + 0.6 * m.Fs * np.array([1, -1, 1, -1, 1, -1])
    for _ in range(250):
        arm.step(m.gravity_torques(arm.state(noisy=False).q) + push, 2)
    s = arm.state(noisy=False)
    assert np.abs(s.q - q0).max() < 1e-9 and np.abs(s.qd).max() < 1e-9, (s.q - q0, s.qd)
    arm.reset(q0)
    kick = m.Foff.copy()
    kick[0] += 2.0 * m.Fs[0]
    for _ in range(250):
        arm.step(m.gravity_torques(arm.state(noisy=False).q) + kick, 2)
    s = arm.state(noisy=False)
    assert s.q[0] - q0[0] > 0.05 and np.abs(s.qd[1:]).max() < 0.05, (s.q - q0, s.qd)


@pytest.mark.parametrize("coulomb", ["sign", "frictionloss"])
@pytest.mark.parametrize("v0", [0.02, 0.1, -0.3, 1.0])
def test_simulator_accelerates_as_the_formula_says(coulomb: str, v0: float) -> None:
    m = _one_joint(**F1)
    arm = MujocoArm(m, coulomb=coulomb)
    tau = 3.0 * np.sign(v0)
    arm.reset([0.0], [v0])
    arm.step([tau], 1)
    v1 = arm.state().qd[0]
    vm = 0.5 * (v0 + v1)
    # the applied dry friction is held over the step (evaluated at v0), MuJoCo integrates the damping
    dry = stribeck_offset(np.array([v0]), [1.0], [0.0], [2.0], [0.1], [0.3])[0]
    expected = (tau - dry - 0.5 * vm) / 0.6
    assert (v1 - v0) / arm.timestep == pytest.approx(expected, rel=2e-3)
    # the simulator's oracle carries the same law
    tau_id = arm.inverse_dynamics([0.0], [v0], [1.0])[0]
    assert tau_id == pytest.approx(0.6 + stribeck_offset(np.array([v0]), [1.0], [0.5], [2.0], [0.1], [0.3])[0])


def test_simulator_without_new_terms_is_unchanged() -> None:
    """A plant with zero new terms steps exactly like before (same MJCF, same per-step law)."""
    base = _one_joint(Fc=1.0, Fv=0.5)
    zero = _one_joint(Fc=1.0, Fv=0.5, Foff=0.0, Fs=0.0, vs=0.0)
    for coulomb in ("sign", "frictionloss"):
        a, b = MujocoArm(base, coulomb=coulomb), MujocoArm(zero, coulomb=coulomb)
        assert a.mjcf == b.mjcf and not b._extra
        for arm in (a, b):
            arm.reset([0.1], [0.2])
            arm.step([1.7], 300)
        assert np.array_equal(a.state().q, b.state().q) and np.array_equal(a.state().qd, b.state().qd)


# ------------------------------------------------------------------ identification
@pytest.fixture(scope="module")
def experiment() -> tuple[RobotModel, RobotModel, tuple[np.ndarray, ...], np.ndarray]:
    """RX-90 plant with offsets and Stribeck friction; a 5-harmonic trajectory (every joint reverses, so low
    velocities are visited); efforts from Pinocchio RNEA + Ia q̈ + the friction formula (noise-free)."""
    nominal = load_model("rx90")
    truth = nominal.replace(Foff=np.array([0.5, -0.8, 0.3, 0.2, -0.1, 0.05]), Fs=nominal.Fc * 1.8 + 0.1,
                            vs=np.array([0.08, 0.1, 0.12, 0.05, 0.1, 0.15]))
    rng = np.random.default_rng(0)
    t = np.arange(0.0, 20.0, 0.01)
    k = np.arange(1, 6)[:, None, None]
    a, b = (rng.normal(0.0, 0.3, (5, 1, 6)) / k for _ in range(2))
    arg = k * (2 * np.pi / 10) * t[None, :, None]
    w = k * (2 * np.pi / 10)
    q = (a * np.sin(arg) + b * np.cos(arg)).sum(0)
    qd = (w * (a * np.cos(arg) - b * np.sin(arg))).sum(0)
    qdd = (-(w**2) * (a * np.sin(arg) + b * np.cos(arg))).sum(0)
    tau = reference(truth, q, qd, qdd)
    return nominal, truth, (q, qd, qdd), tau


def _by_name(res, kind: str, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    d, s = dict(zip(res.names, res.values, strict=True)), dict(zip(res.names, res.std, strict=True))
    return np.array([d[f"{kind}{j}"] for j in range(1, n + 1)]), np.array([s[f"{kind}{j}"] for j in range(1, n + 1)])


def test_identification_offset_is_linear(experiment) -> None:
    from robot_dynamics.identification import estimate

    nominal, truth, (q, qd, qdd), _ = experiment
    plant = truth.replace(Fs=np.zeros(6), vs=np.zeros(6))  # offsets only
    tau = reference(plant, q, qd, qdd)
    res = estimate(nominal, q, qd, qdd, tau, method="ols", friction="coulomb_viscous_offset")
    base = nominal.base_parameters()
    assert res.names == list(base.names) + [f"Foff{j}" for j in range(1, 7)]
    for kind in ("Fc", "Fv", "Foff"):
        np.testing.assert_allclose(_by_name(res, kind)[0], getattr(plant, kind), rtol=1e-6, atol=1e-9)
    # the default layout is unchanged
    default = estimate(nominal, q, qd, qdd, tau - plant.Foff, method="ols")
    assert default.names == list(base.names)


@pytest.mark.parametrize("refine", ["all", "friction"])
def test_identification_recovers_stribeck_noise_free(experiment, refine: str) -> None:
    from robot_dynamics.identification import estimate
    from robot_dynamics.identification.friction import model_with_friction

    nominal, truth, (q, qd, qdd), tau = experiment
    res = estimate(nominal, q, qd, qdd, tau, method="wls", friction="stribeck", refine=refine)
    if refine == "friction":  # the inertial parameters stay at the linear (grid) solution: approximate
        lin = estimate(nominal, q, qd, qdd, tau, method="wls", friction="coulomb_viscous_offset")
        assert np.all(res.residual_rms < 0.5 * lin.residual_rms)
        for kind in ("Fc", "Fs", "vs"):
            est = _by_name(res, kind)[0]
            assert np.all(np.abs(est / getattr(truth, kind) - 1) < 0.25), (kind, est, getattr(truth, kind))
        return
    tol = 1e-6
    for kind in ("Fc", "Fv", "Foff", "Fs", "vs"):
        est = _by_name(res, kind)[0]
        assert np.all(np.abs(est / getattr(truth, kind) - 1) < tol), (kind, est, getattr(truth, kind))
    if refine == "all":
        ident = model_with_friction(nominal, res.names, res.values)
        assert _rel(ident.inverse_dynamics(q, qd, qdd), tau) < 1e-8


def test_identification_stribeck_reports_sigma_on_noisy_data(experiment) -> None:
    from robot_dynamics.identification import estimate

    nominal, truth, (q, qd, qdd), tau = experiment
    rng = np.random.default_rng(7)
    noisy = tau + rng.normal(0.0, 0.02 * np.std(tau, axis=0), tau.shape)
    res = estimate(nominal, q, qd, qdd, noisy, method="wls", friction="stribeck")
    assert res.method == "wls+stribeck"
    for kind in ("Fc", "Fv", "Foff", "Fs", "vs"):
        est, std = _by_name(res, kind)
        assert np.all(std > 0) and np.all(np.isfinite(std)), kind
        z = np.abs(est - getattr(truth, kind)) / std
        assert np.all(z < 5.0), (kind, est, getattr(truth, kind), std)
    rel = dict(zip(res.names, res.relative_std, strict=True))
    assert all(np.isfinite(rel[f"vs{j}"]) for j in range(1, 7))


def test_identify_pipeline_with_stribeck(experiment) -> None:
    """The whole pipeline (position filter, differentiation, parallel filter on the Stribeck columns too)."""
    from robot_dynamics.identification import identify
    from robot_dynamics.identification.data import IdentificationData

    nominal, truth, (q, qd, qdd), tau = experiment
    t = np.arange(q.shape[0]) * 0.01
    data = IdentificationData(t=t, q=q, effort=tau, joint_names=nominal.joint_names)
    res = identify(nominal, data, friction="stribeck", cutoff=None, band=None, decimate=1, min_velocity=0.0)
    for kind in ("Fc", "Fv", "Foff", "Fs", "vs"):
        est = _by_name(res, kind)[0]
        assert np.all(np.abs(est / getattr(truth, kind) - 1) < 0.05), (kind, est, getattr(truth, kind))


def test_identify_cli_friction_option(experiment, tmp_path) -> None:
    """``robot-dynamics identify ROBOT DATA --friction stribeck --model-output M``: the Stribeck and offset terms
    identified from a file (within 5 % of the plant's, defaults off), and written into the model file, which
    loads with them; a friction model the CLI does not know is one clear error (exit 2)."""
    import json
    import subprocess
    import sys

    nominal, truth, (q, qd, qdd), tau = experiment
    data = tmp_path / "data.npz"
    np.savez(data, t=np.arange(q.shape[0]) * 0.01, q=q, effort=tau, joint_names=np.array(nominal.joint_names))
    out = tmp_path / "model.yaml"
    cmd = [sys.executable, "-m", "robot_dynamics", "identify", "rx90", str(data), "--friction", "stribeck",
           "--cutoff", "0", "--band", "0", "--decimate", "1", "--min-velocity", "0", "--model-output", str(out),
           "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    got = dict(zip(res["names"], res["values"], strict=True))
    identified = RobotModel.from_yaml(out.read_text())
    for kind in ("Foff", "Fs", "vs"):
        est = np.array([got[f"{kind}{j}"] for j in range(1, 7)])
        assert np.all(np.abs(est / getattr(truth, kind) - 1) < 0.05), (kind, est, getattr(truth, kind))
        np.testing.assert_allclose(getattr(identified, kind), est, rtol=1e-12)
    bad = subprocess.run(cmd[:6] + ["--friction", "lugre"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "lugre" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
