"""Lin's sequential identification (seed 003) on the Stanford arm: Table II and the NE oracle."""

import numpy as np
import pytest

from robot_dynamics.identification.lin import (
    TABLE_II,
    _motion_kinematics,
    _revolute_row,
    _vary_rev,
    inertia_constants,
    lin_identify,
    lin_stanford_example,
    varying_parts,
)
from robot_dynamics.model.seed_robots import stanford_arm


@pytest.fixture(scope="module")
def result():
    return lin_stanford_example()


def test_table_ii_reproduced(result):
    """003 Table II: every identified constant within 1e-3 (printed with 4 decimals; errata 56)."""
    table = result.table()
    assert sorted(table) == sorted(TABLE_II)
    for body, consts in TABLE_II.items():
        assert sorted(table[body]) == sorted(consts), body
        for name, printed in consts.items():
            assert table[body][name] == pytest.approx(printed, abs=1e-3), (body, name)
    diffs = [abs(table[b][k] - v) for b, c in TABLE_II.items() for k, v in c.items()]
    assert sum(d < 1e-4 for d in diffs) >= len(diffs) - 1  # all but (U2)11-(U2)22 = 4.384865 vs 4.3850


def test_first_configuration_matches_table_i():
    """003 Table I row 1: u_1 in frames 2..6 at configuration (62)."""
    model = stanford_arm()
    q = np.array([0.7, 0.7, 0.0, 0.7, 0.7, 0.7])
    expected = {2: (0.7648, -0.6442, 0.0), 3: (0.7648, 0.0, 0.6442), 4: (0.5850, -0.4927, 0.6442),
                5: (-0.1159, 0.8624, 0.4927), 6: (0.2288, 0.4515, -0.8624)}
    for j, u in expected.items():
        w, _, _, _ = _motion_kinematics(model, q, 1, 1.0, 0.0, j)
        np.testing.assert_allclose(w, u, atol=1e-4)


@pytest.mark.parametrize("j", [2, 4, 5, 6])
def test_constants_predict_newton_euler_torque(j):
    """(56) with the true constants (U_j + V_j, k_j + ℓ_j) gives the Newton–Euler torque of joint j."""
    model = stanford_arm()
    consts = inertia_constants(model)
    rng = np.random.default_rng(j)
    for _ in range(3):
        q = rng.uniform(-1, 1, 6)
        q[2] = rng.uniform(-0.2, 0.2)
        qd1, qdd1 = rng.uniform(-2, 2, 2)
        qd = np.zeros(6)
        qdd = np.zeros(6)
        qd[0], qdd[0] = qd1, qdd1
        tau = model.inverse_dynamics(q, qd, qdd)
        w, wd, a, g = _motion_kinematics(model, q, 1, qd1, qdd1, j)
        ell, v = varying_parts(model, consts, q, j)
        u = consts.U[j - 1]
        x = np.array([u[0, 0] - u[1, 1], u[2, 2], u[0, 1], u[0, 2], u[1, 2], *consts.k[j - 1, :2]])
        assert _revolute_row(w, wd, a, g) @ (x + _vary_rev(ell, v)) == pytest.approx(tau[j - 1], abs=1e-10)


def test_identification_with_biased_measurement_is_detected():
    """A 10 % effort scale error shows up in the estimates (the procedure uses the data)."""
    model = stanford_arm()
    res = lin_identify(model, [0.7, 0.7, 0.0, 0.7, 0.7, 0.7],
                       measure=lambda q, qd, qdd: 1.1 * model.inverse_dynamics(q, qd, qdd))
    assert res.table()[3]["m"] == pytest.approx(1.1 * 6.47, rel=1e-6)


def test_bad_configuration():
    with pytest.raises(ValueError):
        lin_identify(stanford_arm(), [0.7, 0.7, 0.0])
    with pytest.raises(ValueError):
        lin_identify(stanford_arm(), [np.nan] * 6)
