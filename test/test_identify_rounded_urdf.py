"""Issue 30: a 6-joint arm whose URDF writes its right angles as ``1.5708`` (3.7e-6 rad off), identified from the
command line with the default options (``robot-dynamics identify URDF DATA``).

Before the identifiability rank, such a file stopped with "rank deficient ... the trajectory does not excite every
base parameter".  Oracle of the efforts: Pinocchio's RNEA on the rounded file plus rotor inertia, Coulomb and viscous
friction written out here (001 eqs. 7.27, 7.29); the true base parameters are the base parameters of the true
standard parameters (000's grouping of the model read from the same file).  Noise-free: every base parameter within
1 % of the truth; with effort noise, fitted on the first 70 % and predicting the last 30 %: the held-out RMS at the
noise floor.

At 3.7e-6 rad off π/2 the angle error acts at first order (ZZ2's column holds cos(α2) q̈1): Ia2 and ZZR2 are
separable, but only just (σ ≈ 1.8e-7 σ_max), so the q̈ of the differentiated positions must be accurate: at 1 kHz
every base parameter is within 0.9 % (Ia2 0.46 %); at 500 Hz the central differences' h² error puts Ia2 465 % off,
and the fit says so (its relative standard deviation 91 %, ZZR2's 1030 %).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_identify_cli_parity import pin_efforts, run, trajectory

from robot_dynamics.identification.data import IdentificationData, save_npz
from robot_dynamics.identification.estimation import base_parameters_of
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import resolve_urdf

IA = np.array([0.8, 0.9, 0.4, 0.08, 0.07, 0.04])  # kg m^2
FC = np.array([3.0, 2.5, 1.8, 0.5, 0.4, 0.2])  # N m
FV = np.array([2.0, 1.8, 1.2, 0.3, 0.25, 0.1])  # N m s/rad
NOISE = 0.05  # N m, effort sensor noise (standard deviation)


@pytest.fixture(scope="module")
def rounded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RobotModel, tuple]:
    """The RX-90 URDF with π/2 written 1.5708, its true model, and 10 s of exciting motion at 1 kHz."""
    text = resolve_urdf("rx90").read_text()
    assert "1.5707963267948966" in text
    path = tmp_path_factory.mktemp("rounded") / "rx90_rounded.urdf"
    path.write_text(text.replace("1.5707963267948966", "1.5708"))
    model = RobotModel.from_urdf(path.read_text())
    assert any(abs(abs(a) - 1.5708) < 1e-12 for a in model.alpha)  # the rounding reached the model
    truth = model.replace(Ia=IA, Fc=FC, Fv=FV)
    lim = model.limits
    t, q, qd, qdd = trajectory(np.asarray(lim["lower"]), np.asarray(lim["upper"]), seed=7, duration=10.0, fs=1000.0)
    tau = pin_efforts(path, list(model.joint_names), q, qd, qdd, {}, IA, FC, FV)
    return path, truth, (t, q, qd, qdd, tau)


def _identify(path: Path, npz: Path, capsys) -> dict:
    code, out, err = run(["identify", path, npz, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_noise_free_every_base_parameter_within_one_percent(rounded, tmp_path: Path, capsys) -> None:
    path, truth, (t, q, qd, qdd, tau) = rounded
    npz = tmp_path / "clean.npz"
    save_npz(npz, IdentificationData(t, q, tau, joint_names=list(truth.joint_names)))
    res = _identify(path, npz, capsys)
    bp = base_parameters_of(truth)
    true = dict(zip(bp.names, np.asarray(bp.values, float), strict=True))
    assert res["names"] == list(bp.names)  # the same structure (53 here: Ia2 identifiable at 3.7e-6 off π/2)
    assert "Ia2" in res["names"] and len(res["names"]) == 53
    est = dict(zip(res["names"], res["values"], strict=True))
    scale = max(abs(v) for v in true.values())
    worst = {n: abs(est[n] - v) / max(abs(v), 1e-3 * scale) for n, v in true.items()}
    name = max(worst, key=worst.get)
    print(f"\n1.5708 RX-90, noise-free, default options: {len(worst)} base parameters, worst {name} "
          f"{100 * worst[name]:.3g} % (true {true[name]:.6g}, estimated {est[name]:.6g})")
    assert worst[name] < 0.01, (name, true[name], est[name])


def test_noisy_held_out_rms_at_the_noise_floor(rounded, tmp_path: Path, capsys) -> None:
    path, truth, (t, q, qd, qdd, tau) = rounded
    noisy = tau + np.random.default_rng(3).normal(0.0, NOISE, tau.shape)
    cut = int(0.7 * t.size)
    npz = tmp_path / "fit.npz"
    save_npz(npz, IdentificationData(t[:cut], q[:cut], noisy[:cut], joint_names=list(truth.joint_names)))
    res = _identify(path, npz, capsys)
    bp = base_parameters_of(truth)
    assert res["names"] == list(bp.names)
    sl = slice(cut + 50, None)  # held out (past the filters' reach of the fitted part)
    predicted = bp.regressor(q[sl], qd[sl], qdd[sl]) @ np.asarray(res["values"])
    rms = np.sqrt(np.mean((predicted - noisy[sl]) ** 2, axis=0))
    print(f"\n1.5708 RX-90, effort noise {NOISE} N m: held-out RMS per joint {np.round(rms, 4).tolist()} N m")
    assert np.all(rms < 1.1 * NOISE), rms
    assert np.all(rms > 0.9 * NOISE), rms  # the noise is there: the prediction did not see the held-out data
