"""Coulomb friction compensation without chatter (issue 16).

* :func:`robot_dynamics.dynamics.friction.coulomb` (Fc sat(v / band), 001 eq. 7.26 with a smooth sign)
  against hand values, and its limit band → 0 (Fc sign(v));
* every model-based law with its Coulomb term replaced exactly: the law on the model minus its Coulomb
  friction (Fc = 0, nothing to correct) plus the helper at the chosen velocity;
* the arm holding a pose for 2 s in closed loop (MuJoCo plant with the true Coulomb law −Fc sign(q̇) and
  velocity measurement noise): peak-to-peak effort < 1 % of the holding torque with the Coulomb term on
  q̇^d, while the model's Fc sign(q̇) on the measured velocity (the behaviour before) chatters by > 1 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics import seed_robots
from robot_dynamics.control import make_controller
from robot_dynamics.control.base import DEFAULT_COULOMB_BAND
from robot_dynamics.dynamics.friction import coulomb
from robot_dynamics.sim.closed_loop import run_closed_loop
from robot_dynamics.sim.simulator import MujocoArm
from robot_dynamics.trajectory import point_to_point

RX90 = seed_robots.rx90()  # Fc = [3, 3, 2, 0.5, 0.5, 0.2] N·m
NO_COULOMB = RX90.replace(Fc=np.zeros(6))
POSE = np.array([0.3, -0.3, -1.2, 0.4, 0.7, 0.2])  # holding torque Q ≈ [0, 116, 28.8, -0.15, 0.39, 0] N·m
NOISE_QD = 1e-4  # rad/s, std of the velocity measurement noise
OLD = {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.0}  # the model's Fc sign(q̇), as before
MODEL_LAWS = ("computed_torque", "position", "predictive", "task_space")
A = np.array([8.7929, 8.5054, 1.6064, 0.1174, 0.1074, 0.0505])  # max A_jj (test_control.py)


# ------------------------------------------------------------------ the helper
def test_coulomb_hand_values():
    fc = np.array([3.0, 2.0, 1.0, 0.5])
    v = np.array([0.0005, -0.002, 0.0, -1e-4])
    np.testing.assert_allclose(coulomb(fc, v, 1e-3), [1.5, -2.0, 0.0, -0.05], rtol=1e-12)
    np.testing.assert_array_equal(coulomb(fc, v, 0.0), [3.0, -2.0, 0.0, -0.5])  # band 0: Fc sign(v)
    np.testing.assert_allclose(coulomb(fc, v, [0.0, 0.01, 0.01, 0.0]), [3.0, -0.4, 0.0, -0.5], rtol=1e-12)
    np.testing.assert_allclose(coulomb([-2.0, -2.0], [0.5, -3.0], 1.0), [-1.0, 2.0])  # an identified Fc < 0
    batch = coulomb(2.0, [[0.5, -0.25], [-3.0, 0.0]], 1.0)  # (N, n), scalars broadcast
    np.testing.assert_allclose(batch, [[1.0, -0.5], [-2.0, 0.0]], rtol=1e-12)
    for bad in ({"band": -1e-3}, {"v": [np.nan, 0.0, 0.0, 0.0]}, {"band": [1e-3, 1e-3]}):
        args = {"Fc": fc, "v": v, "band": 1e-3} | bad
        with pytest.raises(ValueError):
            coulomb(**args)


def test_coulomb_band_to_zero_is_the_sign():
    rng = np.random.default_rng(1)
    fc = rng.uniform(0.1, 5.0, 6)
    v = rng.uniform(-1, 1, (50, 6)) * np.logspace(-6, 0, 50)[:, None]
    v[0, :3] = 0.0
    sign = fc * np.sign(v)
    errs = [np.abs(coulomb(fc, v, band) - sign).max() for band in (1e-2, 1e-4, 1e-6, 1e-8)]
    assert errs[0] > 1.0 and errs[-1] == 0.0  # the ramp matters for a wide band and is gone in the limit
    assert all(e1 >= e2 for e1, e2 in zip(errs, errs[1:], strict=False))
    np.testing.assert_array_equal(coulomb(fc, v, 1e-300), sign)
    np.testing.assert_array_equal(coulomb(fc, [0.0, 1e-3, -1e-3, 0, 0, 0], 5e-324), fc * [0, 1, -1, 0, 0, 0])


# ------------------------------------------------------------------- the laws
def _law(name, model, **options):
    return make_controller(name, model, 20.0, 1.0, a=A, effort_limit=np.inf, **options)


@pytest.mark.parametrize("name", MODEL_LAWS)
@pytest.mark.parametrize("options", [{"coulomb_velocity": "desired"},
                                     {"coulomb_velocity": "desired", "coulomb_velocity_band": [0, 0.5, 0, 0.5, 2, 0]},
                                     {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.3},
                                     {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.0}])
def test_law_coulomb_term_is_replaced_exactly(name, options):
    """Γ = law on the model without Coulomb friction + Fc sat(v / band), v = q̇^d or q̇ (7.26)."""
    law, ref = _law(name, RX90, **options), _law(name, NO_COULOMB, **options)
    band = options.get("coulomb_velocity_band", DEFAULT_COULOMB_BAND)
    rng = np.random.default_rng(2)
    for _ in range(4):
        q, qd, qr, qdr, qddr = rng.uniform(-1.5, 1.5, (5, 6))
        qdr[0] = 0.0
        qd[1], qdr[2] = 1e-4, -2e-4  # inside the band
        v = qdr if options["coulomb_velocity"] == "desired" else qd
        expected = ref.compute(0.0, q, qd, qr, qdr, qddr) + coulomb(RX90.Fc, v, band)
        np.testing.assert_allclose(law.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-9)


def test_law_with_an_identified_negative_coulomb_coefficient():
    model = RX90.replace(Fc=np.array([3.0, -1.0, 2.0, -0.5, 0.5, 0.0]))
    law, ref = _law("computed_torque", model), _law("computed_torque", NO_COULOMB)
    q, qd, qr, qddr = np.random.default_rng(5).uniform(-1.5, 1.5, (4, 6))
    qdr = np.array([2e-4, -5e-4, 1.0, 3e-4, -2.0, 0.0])
    expected = ref.compute(0.0, q, qd, qr, qdr, qddr) + model.Fc * np.clip(qdr / DEFAULT_COULOMB_BAND, -1, 1)
    np.testing.assert_allclose(law.compute(0.0, q, qd, qr, qdr, qddr), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", MODEL_LAWS)
def test_law_band_limit_is_the_sign_of_the_desired_velocity(name):
    rng = np.random.default_rng(3)
    laws = [_law(name, RX90, coulomb_velocity="desired", coulomb_velocity_band=b) for b in (0.0, 1e-300)]
    ref = _law(name, NO_COULOMB, coulomb_velocity="desired")
    for _ in range(4):
        q, qd, qr, qdr, qddr = rng.uniform(-1.5, 1.5, (5, 6))
        qdr[0] = 0.0
        a, b = (law.compute(0.0, q, qd, qr, qdr, qddr) for law in laws)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, ref.compute(0.0, q, qd, qr, qdr, qddr) + RX90.Fc * np.sign(qdr), atol=1e-9)


@pytest.mark.parametrize("name", ["pd_gravity", "pid"])
def test_laws_without_a_coulomb_term_ignore_the_options(name):
    rng = np.random.default_rng(4)
    q, qd, qr, qdr = rng.uniform(-1.5, 1.5, (4, 6))
    outs = [_law(name, RX90, **o).compute(0.0, q, qd, qr, qdr) for o in
            ({}, OLD, {"coulomb_velocity": "measured", "coulomb_velocity_band": 0.1})]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_default_options():
    assert _law("computed_torque", RX90).coulomb_velocity == "desired"
    np.testing.assert_array_equal(_law("task_space", RX90).coulomb_velocity_band, DEFAULT_COULOMB_BAND)
    pos = _law("position", RX90)  # [9.29] has no velocity reference: the plain model by default
    assert pos.coulomb_velocity == "measured" and not pos.coulomb_velocity_band.any()
    for bad in ({"coulomb_velocity": "reference"}, {"coulomb_velocity_band": -0.1},
                {"coulomb_velocity_band": [0.1, 0.1]}, {"coulomb_velocity_band": np.nan}):
        with pytest.raises(ValueError):
            _law("computed_torque", RX90, **bad)


# ------------------------------------------------------------ standstill chatter
def _hold_effort(name: str, options: dict, duration: float = 2.0) -> np.ndarray:
    """Efforts of ``name`` holding POSE for ``duration`` s at 1 kHz, velocity noise NOISE_QD."""
    plant = MujocoArm(RX90, noise_qd=NOISE_QD, rng=0)
    law = make_controller(name, RX90, 20.0, 1.0, **options)
    res = run_closed_loop(RX90, plant, law, point_to_point(POSE, POSE, 1.0, 1.0), settle_time=duration)
    assert res.metrics["stable"] and res.metrics["final_error"] < 1e-3
    return res.tau


@pytest.mark.parametrize("name", MODEL_LAWS)
def test_effort_at_standstill_does_not_chatter(name):
    """Peak-to-peak effort over a 2 s hold < 1 % of the holding torque (max_j |Q_j|, and |Q_j| for the
    gravity-loaded joints 2 and 3); the Coulomb term on the measured velocity chatters by ≥ 1 %."""
    hold = np.abs(RX90.inverse_dynamics(POSE, np.zeros(6), np.zeros(6)))
    assert hold.max() > 100.0 and hold[2] > 25.0
    new = np.ptp(_hold_effort(name, {"coulomb_velocity": "desired"}), axis=0)
    assert np.all(new < 0.01 * hold.max()), new / hold.max()
    assert np.all(new[1:3] < 0.01 * hold[1:3]), new[1:3] / hold[1:3]
    old = np.ptp(_hold_effort(name, OLD), axis=0)
    assert old.max() >= 0.01 * hold.max(), old / hold.max()  # ~2 Fc: 6 N·m on joints 1-2
