"""Identification in simulation: MuJoCo plant with parameters off by ±30 % as the oracle (issue 10)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.cli import main
from robot_dynamics.control import make_controller
from robot_dynamics.identification import (
    FourierTrajectory,
    base_parameters_of,
    estimate,
    identify,
    model_with_base_parameters,
    optimize_excitation,
    physically_consistent_estimate,
    preprocess,
    save_npz,
)
from robot_dynamics.identification.experiment import simulate_experiment
from robot_dynamics.identification.io import is_physically_consistent, load_result_yaml, result_to_yaml
from robot_dynamics.model.robots import load_model
from robot_dynamics.sim.closed_loop import reference_limits, run_closed_loop
from robot_dynamics.sim.simulator import MujocoArm, perturbed
from robot_dynamics.trajectory import point_to_point


@pytest.fixture(scope="module")
def setup():
    model = load_model("rx90")
    truth = perturbed(model, 0.3, np.random.default_rng(1), friction=True)
    ex = optimize_excitation(model, harmonics=5, period=10.0, samples=100, maxiter=30, time_budget=math.inf, seed=0)
    traj = FourierTrajectory(ex.trajectory.center, ex.trajectory.a, ex.trajectory.b, ex.trajectory.omega, periods=2)
    clean = simulate_experiment(model, truth, traj)
    noisy = simulate_experiment(model, truth, traj, encoder_bits=16, effort_noise=0.01, seed=3)
    return model, truth, ex, clean, noisy


def test_excitation_within_limits_and_at_rest(setup):
    model, _, ex, _, _ = setup
    t = np.linspace(0.0, ex.trajectory.duration, 4001)
    q, qd, qdd = ex.trajectory.evaluate(t)
    lim = model.limits
    assert np.all(q >= lim["lower"] - 1e-9) and np.all(q <= lim["upper"] + 1e-9)
    assert np.all(np.abs(qd) <= lim["velocity"] * (1 + 1e-6))
    assert np.all(np.abs(qdd) <= lim["acceleration"] * (1 + 1e-6))
    q0, qd0, qdd0 = ex.trajectory.evaluate(0.0)
    q1, qd1, qdd1 = ex.trajectory._evaluate(np.array([ex.trajectory.duration]))
    np.testing.assert_allclose(qd0, 0, atol=1e-9)
    np.testing.assert_allclose(qdd1[0], 0, atol=1e-9)
    np.testing.assert_allclose(qd1[0], 0, atol=1e-9)
    np.testing.assert_allclose(q1[0], q0, atol=1e-9)  # periodic
    assert ex.condition_number <= ex.initial_condition_number * (1 + 1e-9)
    # reported cond is the 2-norm condition number of the stacked base regressor (numpy SVD oracle)
    ts = np.linspace(0.0, ex.trajectory.period, ex.samples, endpoint=False)
    w = base_parameters_of(model).regressor(*ex.trajectory.evaluate(ts)).reshape(-1, 52)
    s = np.linalg.svd(w, compute_uv=False)
    assert ex.condition_number == pytest.approx(s[0] / s[-1], rel=1e-9)


def test_fourier_derivatives_match_finite_differences():
    rng = np.random.default_rng(0)
    tr = FourierTrajectory(rng.normal(size=3), rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 0.9)
    t = np.linspace(0.1, 5.0, 7)
    h = 1e-5
    q, qd, qdd = tr.evaluate(t)
    qp, qdp, _ = tr.evaluate(t + h)
    qm, qdm, _ = tr.evaluate(t - h)
    np.testing.assert_allclose(qd, (qp - qm) / (2 * h), atol=1e-6)
    np.testing.assert_allclose(qdd, (qdp - qdm) / (2 * h), atol=1e-6)


def test_noise_free_recovers_true_base_parameters(setup):
    """Noise-free MuJoCo data: every base parameter of the true (perturbed) model within 1 %
    (parameters whose true value is 0 within 1e-5 absolute)."""
    model, truth, _, clean, _ = setup
    res = identify(model, clean, method="ols", cutoff=None, band=None, decimate=1)
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6
    rel = np.abs(res.values - true) / np.where(big, np.abs(true), 1.0)
    assert rel[big].max() < 0.01, res.names[int(np.argmax(np.where(big, rel, 0)))]
    assert np.abs(res.values - true)[~big].max() < 1e-4


def test_noisy_well_excited_within_5_percent_and_validation(setup):
    model, truth, _, _, noisy = setup
    res = identify(model, noisy, method="wls")
    true = base_parameters_of(truth).values
    well = res.relative_std < 2.0  # well excited: relative standard deviation below 2 %
    assert well.sum() >= 20
    rel = np.abs(res.values - true) / np.maximum(np.abs(true), 1e-12)
    assert rel[well].max() < 0.05, [(n, r) for n, r, w in zip(res.names, rel, well, strict=True) if w and r > 0.05]
    # validation on another trajectory: torque prediction error < 5 % RMS
    val = optimize_excitation(model, harmonics=3, period=5.0, samples=40, maxiter=1, seed=9).trajectory
    data = preprocess(simulate_experiment(model, truth, val, encoder_bits=16, effort_noise=0.01, seed=5), cutoff=20.0)
    pred = base_parameters_of(model).regressor(data.q, data.qd, data.qdd) @ res.values
    err = np.linalg.norm(data.effort - pred) / np.linalg.norm(data.effort)
    nominal = np.linalg.norm(data.effort - model.inverse_dynamics(data.q, data.qd, data.qdd)) / np.linalg.norm(
        data.effort)
    assert err < 0.05 < nominal


def test_computed_torque_with_identified_model_tracks_3x_better(setup):
    model, truth, _, _, noisy = setup
    res = identify(model, noisy, method="wls")
    ident = model_with_base_parameters(model, res.names, res.values)
    v, a = reference_limits(model)
    move = point_to_point(np.zeros(6), [1.0, -0.8, 1.2, 1.5, 1.0, 2.0], v, a, profile="trapezoid")
    errs = {}
    for name, m in (("nominal", model), ("identified", ident)):
        out = run_closed_loop(model, MujocoArm(truth), make_controller("computed_torque", m, 20.0, 1.0), move)
        assert out.metrics["stable"]
        errs[name] = out.metrics["max_tracking_error"]
    assert errs["nominal"] >= 3.0 * errs["identified"], errs


def test_model_with_base_parameters_reproduces_estimate():
    """The corrected model's base parameters (issue-5 module) and inverse dynamics equal W_b β."""
    model = load_model("rx90")
    base = base_parameters_of(model)
    beta = base.values * np.random.default_rng(2).uniform(0.7, 1.3, base.values.size)
    m2 = model_with_base_parameters(model, list(base.names[::-1]), beta[::-1])
    np.testing.assert_allclose(base_parameters_of(m2).values, beta, rtol=1e-9, atol=1e-12)
    q = np.random.default_rng(3).normal(size=(5, 6))
    np.testing.assert_allclose(m2.inverse_dynamics(q, q, q), base.regressor(q, q, q) @ beta, atol=1e-9)
    with pytest.raises(ValueError):
        model_with_base_parameters(model, base.names[:-1], beta[:-1])


def test_ols_on_exact_linear_data_and_statistics():
    """Synthetic exact data W β: OLS returns β; σ from the textbook formula on added noise."""
    model = load_model("planar2r")
    base = base_parameters_of(model)
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=(300, 2)) for _ in range(3))
    w = base.regressor(q, qd, qdd)
    res = estimate(model, q, qd, qdd, w @ base.values, method="ols")
    np.testing.assert_allclose(res.values, base.values, rtol=1e-9, atol=1e-12)
    noise = rng.normal(0, 0.01, (300, 2))
    res = estimate(model, q, qd, qdd, w @ base.values + noise, method="ols")
    wm = w.reshape(-1, w.shape[-1])
    r = (w @ base.values + noise).ravel() - wm @ res.values
    s2 = r @ r / (wm.shape[0] - wm.shape[1])
    np.testing.assert_allclose(res.std, np.sqrt(s2 * np.diag(np.linalg.inv(wm.T @ wm))), rtol=1e-8)


def test_physically_consistent_estimate(setup):
    model, truth, _, clean, _ = setup
    d = preprocess(clean, cutoff=None, decimate=20)
    m2 = physically_consistent_estimate(model, d.q, d.qd, d.qdd, d.effort, max_nfev=30)
    assert is_physically_consistent(m2)
    pred = m2.inverse_dynamics(d.q, d.qd, d.qdd)
    nominal = model.inverse_dynamics(d.q, d.qd, d.qdd)
    assert np.linalg.norm(pred - d.effort) < 0.5 * np.linalg.norm(nominal - d.effort)


def test_cli_json_and_yaml(setup, tmp_path, capsys):
    model, truth, _, clean, _ = setup
    path = tmp_path / "data.npz"
    save_npz(path, clean)
    out = tmp_path / "est.yaml"
    assert main(["identify", "rx90", str(path), "--json", "--cutoff", "0", "--band", "0", "--decimate", "1",
                 "-o", str(out)]) == 0
    obj = json.loads(capsys.readouterr().out)
    true = base_parameters_of(truth)
    assert obj["names"] == list(true.names)
    assert len(obj["values"]) == len(obj["relative_std"]) == len(true.names)
    i = obj["names"].index("ZZR1")
    assert obj["values"][i] == pytest.approx(true.values[i], rel=1e-2)
    loaded = load_result_yaml(out)
    assert loaded["names"] == obj["names"]
    assert main(["identify", "rx90", str(tmp_path / "missing.npz")]) == 2


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["q", "qd", "qdd", "effort"]), st.sampled_from(["shape", "nan"]))
def test_bad_input_raises(which, kind):
    model = load_model("planar2r")
    arrs = {k: np.zeros((10, 2)) for k in ("q", "qd", "qdd", "effort")}
    arrs[which] = np.zeros((10, 3)) if kind == "shape" else np.full((10, 2), math.nan)
    with pytest.raises(ValueError):
        estimate(model, arrs["q"], arrs["qd"], arrs["qdd"], arrs["effort"])


def test_rank_deficient_data_raises():
    model = load_model("planar2r")
    z = np.zeros((50, 2))
    with pytest.raises(ValueError, match="rank deficient"):
        estimate(model, z, z, z, z)


def test_yaml_round_trip(setup):
    model, _, _, clean, _ = setup
    res = identify(model, clean, method="ols", cutoff=None, band=None, decimate=5)
    data = load_result_yaml(result_to_yaml(res))
    np.testing.assert_array_equal(np.array(data["values"]), res.values)
