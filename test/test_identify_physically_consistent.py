"""``robot-dynamics identify --physically-consistent`` (issue 30): the fit constrained to a physical arm, reported
next to the ordinary one — which base parameters it changed and by how much, or that it equals it.

Oracles: the efforts are Pinocchio's RNEA of the planar 2R URDF plus Ia q̈ + Fc sign(q̇) + Fv q̇ written out
(``test_identify_cli_parity.planar_data``), never this package's dynamics; the constrained estimate of a fit whose
only violation is Ia2 < 0 is the least-squares solution with Ia2 fixed at 0 (the constraint active, every other
parameter free: a linear solve on the same equations, independent of the nonlinear parametrization).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_dynamics.identification.consistent import consistent_estimate
from robot_dynamics.identification.data import IdentificationData, save_npz
from robot_dynamics.identification.estimation import base_parameters_of, identify
from robot_dynamics.identification.io import is_physically_consistent
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_identify_cli_parity import planar_data, run  # noqa: E402

FC, FV = [0.3, 0.2], [0.4, 0.5]
NOISE = 0.05  # N m, effort noise


def noisy_npz(path: Path, seed: int, ia2: float, noise: tuple[float, float] = (NOISE, NOISE)) -> IdentificationData:
    """Planar 2R efforts (Pinocchio) with a rotor inertia ``ia2`` on joint 2, plus Gaussian effort noise (per joint)."""
    d = planar_data(4, fc=FC, fv=FV, ia=[0.0, ia2])
    data = IdentificationData(d.t, d.q, d.effort + np.random.default_rng(seed).normal(0.0, noise, d.effort.shape),
                              joint_names=d.joint_names)
    save_npz(path, data)
    return data


# ------------------------------------------------------------------ an inconsistent fit
@pytest.mark.parametrize("method", ["ols", "wls"])
def test_negative_rotor_inertia_is_constrained_and_the_change_reported(tmp_path: Path, method: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """True Ia2 = 1e-4 kg m², noise 0.02 and 0.1 N m: OLS and WLS give Ia2 < 0.  The constrained estimate has
    Ia2 = 0 and the others of the (weighted) least-squares fit with Ia2 = 0; the report names Ia2 first (relative
    change 1), the residual grows a little; -o, --model-output carry the constrained estimate, a realizable model."""
    data = noisy_npz(tmp_path / "d.npz", seed=1, ia2=1e-4, noise=(0.02, 0.1))
    opts = ["--method", method, "--min-velocity", "0"]
    argv = ["identify", "planar2r", tmp_path / "d.npz", *opts, "--physically-consistent"]
    code, out, err = run([*argv, "--json", "-o", tmp_path / "est.yaml", "--model-output", tmp_path / "m.yaml"], capsys)
    assert code == 0, err
    res = json.loads(out)
    names = res["names"]
    i = names.index("Ia2")
    assert res["values"][i] < 0 and "Ia2" in err  # the ordinary fit: negative, warned
    pc = res["physically_consistent"]
    assert pc["unchanged"] is False and pc["names"] == names
    con = np.array(pc["values"])
    assert 0.0 <= con[i] <= 1e-9
    # oracle: least squares on the same equations with Ia2 fixed at 0; WLS (Gautier): rows of joint j divided by
    # the standard deviation of joint j's OLS residual
    model = load_model("planar2r")
    eq: dict = {}
    identify(model, data, method=method, min_velocity=0.0, equations=eq)
    w, y = eq["w3"].reshape(-1, len(names)), eq["tau"].reshape(-1)
    if method == "wls":
        e = (y - w @ np.linalg.lstsq(w, y, rcond=None)[0]).reshape(eq["tau"].shape)
        wt = np.tile(1.0 / np.sqrt(np.sum(e**2, axis=0) / (e.shape[0] - 1)), e.shape[0])
        w, y = w * wt[:, None], y * wt
    free = [k for k in range(len(names)) if k != i]
    beta = np.zeros(len(names))
    beta[free] = np.linalg.lstsq(w[:, free], y, rcond=None)[0]
    scale = np.maximum(np.abs(beta), 1e-3 * np.abs(beta).max())
    assert np.max(np.abs(con - beta) / scale) < 1e-5, dict(zip(names, con - beta, strict=True))
    # the changes: Ia2 first, relative change 1, each entry consistent with the two estimates
    changes = pc["changes"]
    assert changes[0]["name"] == "Ia2" and changes[0]["relative_change"] == pytest.approx(1.0, abs=1e-6)
    assert changes[0]["change_std"] == pytest.approx(abs(res["values"][i]) / (res["relative_std"][i] / 100
                                                                             * abs(res["values"][i])), rel=1e-6)
    for c in changes:
        k = names.index(c["name"])
        assert c["unconstrained"] == res["values"][k] and c["constrained"] == pc["values"][k]
        assert c["change"] == pytest.approx(c["constrained"] - c["unconstrained"], rel=1e-12)
    moved = [n for n, a, b in zip(names, res["values"], pc["values"], strict=True) if a != b]
    assert {c["name"] for c in changes} <= set(moved)
    # residual (all samples kept): the constrained fit costs a little more than the (weighted) least-squares one
    before, after = np.array(pc["unconstrained_residual_rms"]), np.array(pc["residual_rms"])
    assert before.tolist() == res["residual_rms"]
    sig = before if method == "wls" else np.ones(2)  # the WLS weights are the OLS residual's, close to these
    assert np.sum((before / sig) ** 2) < np.sum((after / sig) ** 2) < 1.01 * np.sum((before / sig) ** 2)
    # outputs: the constrained estimate, a realizable model with exactly these base parameters
    est = yaml.safe_load((tmp_path / "est.yaml").read_text())
    assert est["method"] == f"{method}+consistent" and est["values"] == pc["values"]
    written = RobotModel.from_yaml((tmp_path / "m.yaml").read_text())
    assert is_physically_consistent(written)
    assert np.allclose(base_parameters_of(written).values, con, rtol=1e-9, atol=1e-12)
    # text output: says what changed, and both residual figures
    code, out, err = run(argv, capsys)
    assert code == 0, err
    text = out[out.index("physically consistent fit"):]
    assert f"changed {len(changes)} base parameter(s)" in text and "unchanged" not in text
    assert text.splitlines()[3].split()[0] == "Ia2"
    assert "residual RMS per joint: unconstrained" in text


# ------------------------------------------------------------------ consistent fits
@pytest.mark.parametrize(("friction", "seed"), [("coulomb_viscous", 0), ("coulomb_viscous_offset", 2)])
def test_consistent_fit_is_reported_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str], friction: str,
                                              seed: int) -> None:
    """Noisy data whose WLS estimate is plausible (Ia2 > 0): the constrained estimate is the WLS one, bit for bit,
    and the report says so."""
    noisy_npz(tmp_path / "d.npz", seed=seed, ia2=1e-3, noise=(0.01, 0.1))
    argv = ["identify", "planar2r", tmp_path / "d.npz", "--friction", friction, "--physically-consistent"]
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["physically_plausible"] is True and res["method"] == "wls"
    assert res["values"][res["names"].index("Ia2")] > 0
    pc = res["physically_consistent"]
    assert pc["unchanged"] is True and pc["changes"] == [] and pc["values"] == res["values"]
    assert pc["distance"] <= 1e-6 and pc["residual_rms"] == res["residual_rms"]
    if friction == "coulomb_viscous_offset":
        assert res["names"][-2:] == ["Foff1", "Foff2"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "unchanged: the unconstrained estimate is already physically consistent; the constrained estimate " \
           "equals it" in out


def _triangle(model, seed: int, samples: int) -> tuple:
    """The base parameters of ``model`` and the R factor of its base regressor at random states."""
    base = base_parameters_of(model)
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-2, 2, (samples, model.dof)) for _ in range(3))
    return base, np.linalg.qr(base.regressor(q, qd, qdd).reshape(-1, len(base.names)), mode="r")


def test_boundary_zero_is_consistent_below_is_not() -> None:
    """The nominal planar 2R has Fc = Fv = Ia = 0 exactly: consistent (unchanged).  Ia2 = -1e-9: changed, to 0."""
    model = load_model("planar2r")
    base, r = _triangle(model, 3, 100)
    beta = np.array(base.values, float)
    zero = [n for n, v in zip(base.names, beta, strict=True) if v == 0.0 and n[:2] in ("Ia", "Fc", "Fv")]
    assert set(zero) == {"Fc1", "Fv1", "Ia2", "Fc2", "Fv2"}
    fit = consistent_estimate(model, base, r, beta)
    assert fit.unchanged and fit.changes == [] and np.array_equal(fit.values, beta)
    beta[base.names.index("Ia2")] = -1e-9
    fit = consistent_estimate(model, base, r, beta)
    assert not fit.unchanged
    assert [c["name"] for c in fit.changes][:1] == ["Ia2"] and 0.0 <= fit.values[base.names.index("Ia2")] <= 1e-15


def test_rx90_nominal_is_consistent() -> None:
    """A six-joint arm's nominal base parameters (grouped, 52): realizable, reported unchanged."""
    model = load_model("rx90")
    base, r = _triangle(model, 4, 60)
    fit = consistent_estimate(model, base, r, base.values)
    assert fit.unchanged and fit.distance <= 1e-6
    assert is_physically_consistent(fit.model)


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize(("extra", "keyword"), [(["--friction", "stribeck"], "linear fit"),
                                                (["SECOND"], "in memory")])
def test_refusals_are_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                    keyword: str) -> None:
    noisy_npz(tmp_path / "d.npz", seed=0, ia2=1e-4)
    extra = [str(tmp_path / "d.npz") if x == "SECOND" else x for x in extra]
    code, out, err = run(["identify", "planar2r", tmp_path / "d.npz", *extra, "--physically-consistent"], capsys)
    assert code == 2 and keyword in err and len(err.strip().splitlines()) == 1, err
