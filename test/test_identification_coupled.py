"""Issue 30: coupled transmissions in the regressor and the base parameters — a coupled wrist identified from
motor-side efforts without a residual model error (:mod:`robot_dynamics.dynamics.coupled_rotor`).

The arm: the bundled RX-90 with the coupled wrist of ``test/data/rx90_coupled_wrist.yaml`` (motor 5 also turns
joint 6: q6 = q_m6/N6 + c q_m5/N5, c = 0.4, N5 = 50, N6 = 40, J_m6 = 2.5e-5 kg m²), so motor 6 turns with joints 5
and 6 (q_m6 = N6 (q6 − c q5)) and the joint-side rotor inertia has I_a,56 = −c N6² J_m6 = −0.016 kg m²
(test_transmissions.py derives it by hand).  The coupled rotor parameter is Iam6 = N6² J_m6 = 0.04 kg m², with the
column Γ5 += −c Iam6 q̈6, Γ6 += −c Iam6 q̈5.

Truth path: the true model's ``inverse_dynamics`` (with its ``rotor_coupling``) on an analytic multi-sine
trajectory, mapped to the motor side by the transmission (q_m = J_qm⁻¹ q, τ_m = J_qmᵀ Γ, 001 eqs. 7.31, 7.33);
one sample of it is checked against Pinocchio's RNEA plus the hand rotor matrix and the hand motor-torque formulas.
The nominal parameter file given to ``identify --parameters`` has the gear ratios and the coupling but J_m6 = 1e-5
(nominal Iam6 = 0.016): the estimate must come from the data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robot_dynamics.cli import main
from robot_dynamics.dynamics.coupled_rotor import (
    CoupledBaseParameters,
    coupled_base_parameters,
    coupled_rotor_names,
    coupled_rotor_regressor,
)
from robot_dynamics.identification.data import IdentificationData, save_npz
from robot_dynamics.identification.estimation import base_parameters_of, estimate, identify
from robot_dynamics.identification.update import model_with_base_parameters, updated_model
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pinocchio_from_mdh import pinocchio_model  # noqa: E402
from test_identify_cli_parity import trajectory as sines  # noqa: E402

WRIST_FILE = Path(__file__).resolve().parent / "data" / "rx90_coupled_wrist.yaml"
N = np.array([120.0, 100.0, 80.0, 60.0, 50.0, 40.0])
JM = np.array([7.0e-5, 1.0e-4, 8.0e-5, 3.0e-5, 4.0e-5, 2.5e-5])  # the file's motor inertias (truth)
C = 0.4
IAM6 = N[5] ** 2 * JM[5]  # 0.04 kg m²
JM_NOMINAL = np.array([7.0e-5, 1.0e-4, 8.0e-5, 3.0e-5, 4.0e-5, 1.0e-5])  # the nominal file: J_m6 wrong
FC = np.array([3.0, 2.5, 2.0, 0.6, 0.5, 0.25])  # N m, joint side
FV = np.array([2.0, 1.8, 1.5, 0.35, 0.3, 0.12])  # N m s/rad
NOISE_FREE = ["--cutoff", "0", "--band", "0", "--decimate", "1"]
MOTORS = [f"joint{j}_motor" for j in range(1, 7)]


# ------------------------------------------------------------------ truth
def truth_model() -> RobotModel:
    return load_model("rx90", parameters=WRIST_FILE).replace(Fc=FC, Fv=FV)


def trajectory(model: RobotModel, seed: int, duration: float = 10.0, fs: float = 1000.0):
    """t, q, q̇, q̈ (analytic): four sines per joint inside 70 % of the joint range."""
    lim = model.limits
    return sines(np.asarray(lim["lower"]), np.asarray(lim["upper"]), seed, duration, fs, sines=4, fill=0.7,
                 band=(0.15, 1.0))


def motor_side(model: RobotModel, seed: int) -> tuple[IdentificationData, tuple[np.ndarray, ...]]:
    """Motor-side recording (``<joint>_motor``: q_m, τ_m) of the true model, and the joint-side truth."""
    t, q, qd, qdd = trajectory(model, seed)
    tau = model.inverse_dynamics(q, qd, qdd)
    tr = model.transmission
    data = IdentificationData(t, tr.motor_positions(q), tr.motor_torques(tau), joint_names=MOTORS)
    return data, (q, qd, qdd, tau)


def hand_rotor_matrix() -> np.ndarray:
    """Joint-side rotor inertia of the coupled wrist by hand (test_transmissions.py's derivation)."""
    out = np.diag(N**2 * JM)
    out[4, 4] = JM[4] * N[4] ** 2 + C**2 * JM[5] * N[5] ** 2
    out[4, 5] = out[5, 4] = -C * JM[5] * N[5] ** 2
    return out


def params_file(path: Path, **transmissions: Any) -> Path:
    trans = {"gear_ratio": N.tolist(), "coupling": wrist_coupling().ravel().tolist(),
             "motor_inertia": JM_NOMINAL.tolist(), **transmissions}
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"transmissions": trans}}}))
    return path


def wrist_coupling(c: float = C) -> np.ndarray:
    k = np.eye(6)
    k[5, 4] = c
    return k


def run(argv: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IdentificationData, tuple[np.ndarray, ...]]:
    data, joint = motor_side(truth_model(), seed=11)
    path = tmp_path_factory.mktemp("wrist") / "motor.npz"
    save_npz(path, data)
    return path, data, joint


# ------------------------------------------------------------------ the truth path and the model
def test_truth_path_equals_the_hand_formulas_for_one_sample(recording) -> None:
    """Sample 1234 of the recording: Pinocchio's RNEA + hand rotor matrix q̈ + friction, then the hand motor maps
    (q_m5 = N5 q5, q_m6 = N6 (q6 − c q5); τ_m5 = (Γ5 + c Γ6)/N5, τ_m6 = Γ6/N6, τ_mj = Γj/Nj otherwise)."""
    _, data, (q, qd, qdd, _) = recording
    model = truth_model()
    k = 1234
    pm = pinocchio_model(model)
    gamma = (pin.rnea(pm, pm.createData(), q[k], qd[k], qdd[k]) + hand_rotor_matrix() @ qdd[k]
             + FC * np.sign(qd[k]) + FV * qd[k])
    tm = gamma / N
    tm[4] = (gamma[4] + C * gamma[5]) / N[4]
    qm = N * q[k]
    qm[5] = N[5] * (q[k, 5] - C * q[k, 4])
    assert np.max(np.abs(data.effort[k] - tm)) < 1e-10 * np.max(np.abs(tm))
    assert np.max(np.abs(data.q[k] - qm)) < 1e-12 * np.max(np.abs(qm))
    # the coupled term is not negligible in this sample's motor torques (what the model without it would miss)
    assert abs(hand_rotor_matrix()[4, 5] * qdd[k, 5]) > 1e-3


def test_regressor_reproduces_the_true_efforts_with_the_coupled_column(recording) -> None:
    """W β_true = Γ to 1e-9 (base regressor with the Iam6 column, true base values), and [W | c] x_true = Γ over the
    extended standard parameters; without the Iam6 column the error is the coupled term (> 1e-2 N m)."""
    _, _, (q, qd, qdd, tau) = recording
    model = truth_model()
    base = base_parameters_of(model)
    assert isinstance(base, CoupledBaseParameters)
    assert base.names[-1] == "Iam6" and base.names[:-1] == model.base_parameters().names
    beta = dict(zip(base.names, base.values, strict=True))
    assert beta["Iam6"] == pytest.approx(IAM6, rel=1e-14)
    w = base.regressor(q, qd, qdd)
    scale = float(np.max(np.abs(tau)))
    err = float(np.max(np.abs(w @ base.values - tau)))
    err_std = float(np.max(np.abs(base.standard_regressor(q, qd, qdd) @ base.standard_values - tau)))
    missing = float(np.max(np.abs(w[..., :-1] @ base.values[:-1] - tau)))
    print(f"max |W beta - tau| = {err:.2e} (standard {err_std:.2e}), max |tau| = {scale:.3g}; "
          f"without Iam6: {missing:.3g} N m")
    assert err < 1e-9 * scale and err_std < 1e-9 * scale
    assert missing > 1e-2
    # the column itself: Γ5 += −c Iam6 q̈6, Γ6 += −c Iam6 q̈5, nothing elsewhere
    col = coupled_rotor_regressor(model, qdd[:50])[..., 0]
    expect = np.zeros((50, 6))
    expect[:, 4], expect[:, 5] = -C * qdd[:50, 5], -C * qdd[:50, 4]
    assert np.max(np.abs(col - expect)) < 1e-15


# ------------------------------------------------------------------ the CLI on motor-side data
def test_coupled_wrist_identified_from_motor_side_efforts(recording, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``identify rx90 motor.npz --parameters FILE`` (noise-free): Iam6 within 1 % (achieved ~1e-5), every base
    parameter close to the truth, no residual model error, no warning; the model written carries the identified
    coupled rotor inertia (its motor inertia J_m6) and predicts held-out efforts."""
    path, _, (q, qd, qdd, tau) = recording
    nominal = params_file(tmp_path / "params.yaml")
    model_out, est_out = tmp_path / "model.yaml", tmp_path / "est.yaml"
    code, stdout, err = run(["identify", "rx90", path, "--parameters", nominal, *NOISE_FREE, "--json",
                             "--model-output", model_out, "-o", est_out], capsys)
    assert code == 0, err
    assert err == ""  # no warning: no I_c left in the data, a plausible fit
    res = json.loads(stdout)
    truth = base_parameters_of(truth_model())
    assert res["names"] == truth.names
    got = dict(zip(res["names"], res["values"], strict=True))
    nominal_values = dict(zip(res["names"], res["nominal_values"], strict=True))
    rel_iam = abs(got["Iam6"] - IAM6) / IAM6
    assert rel_iam < 0.01
    assert nominal_values["Iam6"] == pytest.approx(N[5] ** 2 * JM_NOMINAL[5], rel=1e-12)  # 0.016: not the truth
    values = np.array(res["values"])
    scale = float(np.max(np.abs(truth.values)))
    # within 0.1 % of the truth, or 1e-5 of the largest base parameter for those that are zero (XY2, MY2 …)
    ratio = np.abs(values - truth.values) / (1e-3 * np.abs(truth.values) + 1e-5 * scale)
    worst = res["names"][int(np.argmax(ratio))]
    print(f"Iam6 = {got['Iam6']:.8g} (truth {IAM6:.8g}, relative error {rel_iam:.2e}); worst base parameter "
          f"{worst}: {ratio.max():.2f} of its tolerance; largest relative error of a non-zero one "
          f"{np.max(np.abs(values - truth.values)[np.abs(truth.values) > 1e-9] / np.abs(truth.values)[np.abs(truth.values) > 1e-9]):.2e}; "
          f"residual RMS {np.round(res['residual_rms'], 9).tolist()}")
    assert ratio.max() < 1.0, worst
    tau_rms = float(np.sqrt(np.mean(tau**2)))
    assert max(res["residual_rms"]) < 1e-5 * tau_rms
    assert res["physically_plausible"] is True
    assert "Iam6" in yaml.safe_load(est_out.read_text())["names"]
    # the model written: J_m6 = Iam6 / N6² in its transmission, I_a,56 = −c Iam6, Ia as identified
    identified = RobotModel.from_yaml(model_out.read_text())
    assert identified.transmission is not None
    assert identified.transmission.motor_inertia[5] == pytest.approx(JM[5], rel=0.01)
    assert identified.rotor_coupling[4, 5] == pytest.approx(-C * IAM6, rel=0.01)
    ident_base = dict(zip(*[base_parameters_of(identified).names, base_parameters_of(identified).values],
                          strict=True))
    assert max(abs(ident_base[nm] - got[nm]) for nm in res["names"]) < 1e-9 * scale
    _, (q2, qd2, qdd2, tau2) = motor_side(truth_model(), seed=12)  # held out
    err_rms = np.sqrt(np.mean((identified.inverse_dynamics(q2, qd2, qdd2) - tau2) ** 2, axis=0))
    assert np.all(err_rms < 1e-4 * np.sqrt(np.mean(tau2**2))), err_rms


def test_without_the_coupled_column_the_fit_has_a_model_error(recording) -> None:
    """The same data fitted with the base parameters of 000 alone (the identification before this change): the
    coupled term stays in the residual (joints 5 and 6), the default fit (with Iam6) has none."""
    _, data, _ = recording
    model = load_model("rx90", parameters=WRIST_FILE)
    options = {"cutoff": None, "band": None, "decimate": 1}
    from robot_dynamics.identification.data import joint_side_data

    joint = joint_side_data(model, data)
    old = identify(model, joint, base=model.base_parameters(), **options)
    new = identify(model, joint, **options)
    print(f"residual RMS without Iam6 {np.round(old.residual_rms, 6).tolist()}, with {new.residual_rms.max():.2e}")
    assert "Iam6" not in old.names and new.names[-1] == "Iam6"
    assert np.all(old.residual_rms[4:] > 1e3 * new.residual_rms[4:])  # the wrist: 0.19, 0.12 N m vs ~5e-6


def test_streaming_identification_gives_the_same_coupled_estimate(recording) -> None:
    """The streamed fit (pieces, QR reduction) uses the same base parameters: Iam6 equal to the in-memory one."""
    from robot_dynamics.identification.data import joint_side_data
    from robot_dynamics.identification.streaming import identify_streaming

    path, data, _ = recording
    model = load_model("rx90", parameters=WRIST_FILE)
    options = {"cutoff": None, "band": None, "decimate": 1}
    ref = identify(model, joint_side_data(model, data), **options)
    res = identify_streaming(model, [path], chunk=2000, **options)
    assert res.names == ref.names and res.names[-1] == "Iam6"
    np.testing.assert_allclose(res.values, ref.values, rtol=1e-7, atol=1e-9 * np.max(np.abs(ref.values)))


# ------------------------------------------------------------------ boundaries
def test_a_model_without_coupling_has_no_extra_columns() -> None:
    """No transmission, or an uncoupled one (gear ratios, motor inertias): the base parameters of 000 themselves
    (same object type, names, values, regressor); a coupled transmission without motor inertia still has the Iam6
    column (nominal 0: the data decides)."""
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-2, 2, (20, 6)), rng.uniform(-2, 2, (20, 6)), rng.uniform(-2, 2, (20, 6))
    plain = load_model("rx90")
    geared = load_model("rx90", rotor_inertia=[], transmission={"gear_ratio": N.tolist(), "motor_inertia": JM.tolist()})
    for model in (plain, geared):
        assert coupled_rotor_names(model) == []
        ref = model.base_parameters()
        base = base_parameters_of(model)
        assert type(base) is type(ref) and not isinstance(base, CoupledBaseParameters)
        assert base.names == ref.names and not any(nm.startswith("Iam") for nm in base.names)
        np.testing.assert_array_equal(base.values, ref.values)
        np.testing.assert_array_equal(base.regressor(q, qd, qdd), ref.regressor(q, qd, qdd))
        assert coupled_base_parameters(model, ref) is ref
    bare = load_model("rx90", transmission={"gear_ratio": N.tolist(), "coupling": wrist_coupling().ravel().tolist()})
    assert not bare.has_rotor_coupling
    base = base_parameters_of(bare)
    assert base.names[-1] == "Iam6" and base.values[-1] == 0.0


def _differential() -> np.ndarray:
    k = np.eye(6)
    k[4:, 4:] = [[1.0, 1.0], [1.0, -1.0]]  # q5 = (o5 + o6), q6 = (o5 − o6): both motors turn both joints
    return k


@pytest.mark.parametrize(("coupling", "keywords"), [
    pytest.param(_differential().ravel().tolist(), ["differential", "Iam5", "Iam6", "joint5", "joint6"],
                 id="differential"),
    pytest.param(wrist_coupling().ravel().tolist()[:35], ["coupling", "6x6"], id="coupling-not-6x6"),
])
def test_unknown_transmission_shape_is_one_error_line(coupling: list[float], keywords: list[str], recording,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A transmission whose coupled rotor inertias no data can separate (a differential: both motors turn joints 5
    and 6 in fixed ratios), or a coupling matrix of the wrong shape: one error line, exit 2, nothing written."""
    path = recording[0]
    params = params_file(tmp_path / "params.yaml", coupling=coupling)
    out = tmp_path / "est.yaml"
    code, stdout, err = run(["identify", "rx90", path, "--parameters", params, *NOISE_FREE, "-o", out], capsys)
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("robot-dynamics identify: error:"), err
    for word in keywords:
        assert word.lower() in lines[0].lower(), (word, lines[0])
    assert not out.exists()
    if keywords[0] == "differential":  # the API says the same
        model = load_model("rx90", transmission={"gear_ratio": N.tolist(), "coupling": coupling})
        with pytest.raises(ValueError, match="differential"):
            base_parameters_of(model)


def _belt_arm(c: float) -> RobotModel:
    """planar2r whose motor 2 sits on the base and drives link 2 through a belt: q̇_m2 = N2 (c q̇1 + q̇2)."""
    return load_model("planar2r", rotor_inertia=[], transmission={
        "gear_ratio": [50.0, 30.0], "coupling": [1.0, 0.0, -c, 1.0], "motor_inertia": [2e-5, 1e-5]})


@pytest.mark.parametrize("c", [1.0, 0.4])
def test_parallel_axes_group_the_coupled_rotor_with_exact_coefficients(c: float) -> None:
    """Parallel axes (planar 2R): c_2 = c (W_ZZ2 − W_ZZR1 − W_Ia2) exactly, so Iam2 is grouped (no parameter of its
    own) with coefficients ±c, the exact coupling product, never fitted; the base model reproduces the efforts
    with the coupled term to 1e-9, and a base-parameter vector written back is the new model's."""
    model = _belt_arm(c)
    assert model.has_rotor_coupling and coupled_rotor_names(model) == ["Iam2"]
    base = base_parameters_of(model)
    assert isinstance(base, CoupledBaseParameters)
    assert "Iam2" not in base.names and len(base.names) == len(model.base_parameters().names)
    assert base.grouped["Iam2"] == {"ZZR1": -c, "ZZ2": c, "Ia2": -c}
    assert "ZZR2" in base.names and "IaR2" in base.names
    coef = base.matrix[:, -1]
    assert set(np.unique(coef).tolist()) == {-c, 0.0, c}
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-3, 3, (200, 2)), rng.uniform(-2, 2, (200, 2)), rng.uniform(-5, 5, (200, 2))
    tau = model.inverse_dynamics(q, qd, qdd)
    assert np.max(np.abs(base.regressor(q, qd, qdd) @ base.values - tau)) < 1e-9 * np.max(np.abs(tau))
    target = base.values * (1.0 + 0.1 * rng.uniform(-1, 1, base.values.size)) + 1e-3
    target[[i for i, nm in enumerate(base.names) if nm.startswith(("Fc", "Fv", "IaR"))]] += 0.05  # stay >= 0
    new = model_with_base_parameters(model, base.names, target)
    np.testing.assert_allclose(base_parameters_of(new).values, target, rtol=0, atol=1e-9)
    np.testing.assert_allclose(new.inverse_dynamics(q, qd, qdd), base.regressor(q, qd, qdd) @ target,
                               rtol=0, atol=1e-9 * np.max(np.abs(tau)))
    # identified from its own efforts, no model error
    res = estimate(model, q, qd, qdd, tau, method="ols")
    np.testing.assert_allclose(res.values, base.values, rtol=1e-9, atol=1e-12)


class _ScaledBase:
    """The base parameters of ``base`` with column ``j`` of the regressor divided by ``f`` (values times ``f``):
    the same model, but a column that carries the coupled rotor only with the coefficient ``f`` — a float."""

    def __init__(self, base: Any, j: int, f: float) -> None:
        self.base, self.j, self.f = base, j, f
        self.names, self.columns, self.method = list(base.names), base.columns, base.method
        self.matrix = np.array(base.matrix, float)
        self.matrix[j] *= f
        self.values = self.matrix @ base.model.standard_parameter_values
        self.eliminated, self.notes, self.relations = base.eliminated, list(base.notes), list(base.relations)

    def regressor(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        w = np.array(self.base.regressor(q, qd, qdd))
        w[..., self.j] /= self.f
        return w


def test_a_dependence_without_integer_coefficients_is_never_grouped_by_floats() -> None:
    """A column dependent on the base columns with a non-integer (float) coefficient is not grouped: Iam2 stays a
    parameter of its own (a note says it cannot be identified) and no relation receives it; a fit then names it."""
    model = _belt_arm(1.0)
    ref = model.base_parameters()
    fake = _ScaledBase(ref, ref.names.index("ZZ2"), 1.0 / 0.37)
    base = coupled_base_parameters(model, fake)
    assert base.names[-1] == "Iam2" and base.kept == [0] and base.grouped == {}
    assert np.all(base.matrix[:-1, -1] == 0.0)
    assert any("Iam2" in note and "numerically dependent" in note for note in base.notes)
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-3, 3, (200, 2)), rng.uniform(-2, 2, (200, 2)), rng.uniform(-5, 5, (200, 2))
    with pytest.raises(ValueError, match="rank deficient.*Iam2"):
        estimate(model, q, qd, qdd, model.inverse_dynamics(q, qd, qdd), base=base)


def test_updated_model_writes_iam_into_the_motor_inertia_and_refuses_a_negative_one() -> None:
    model = load_model("rx90", parameters=WRIST_FILE)
    new = updated_model(model, ["Iam6"], [0.05])
    assert new.transmission.motor_inertia[5] == pytest.approx(0.05 / N[5] ** 2, rel=1e-14)
    np.testing.assert_array_equal(new.Ia, model.Ia)  # the diagonal stays the standard Ia
    assert new.rotor_coupling[4, 5] == pytest.approx(-C * 0.05, rel=1e-12)
    with pytest.raises(ValueError, match=r"Iam6 = -0\.01 < 0: coupled rotor inertia is never negative"):
        updated_model(model, ["Iam6"], [-0.01])
    with pytest.raises(ValueError, match="Iam3"):
        updated_model(model, ["Iam3"], [0.01])  # motor 3 turns joint 3 only: no such parameter


def test_physically_consistent_fit_takes_the_coupled_term_off_the_efforts(recording) -> None:
    """The physically consistent fit (``--urdf-output``) fits the standard regressor, which has no I_c q̈: started
    at the true model on its own efforts it stays there (the coupled term taken off first), the result keeping the
    transmission's I_c."""
    from robot_dynamics.identification.estimation import physically_consistent_estimate

    _, _, (q, qd, qdd, tau) = recording
    model = truth_model()
    sl = slice(0, None, 40)
    fit = physically_consistent_estimate(model, q[sl], qd[sl], qdd[sl], tau[sl], max_nfev=20)
    err = float(np.max(np.abs(fit.inverse_dynamics(q[sl], qd[sl], qdd[sl]) - tau[sl])))
    print(f"physically consistent fit from the truth: max effort error {err:.2e} N m")
    assert np.array_equal(fit.rotor_coupling, model.rotor_coupling)
    assert err < 1e-6 * float(np.max(np.abs(tau)))
