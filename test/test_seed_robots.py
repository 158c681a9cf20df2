"""Seed robots: bundled URDFs up to date, import gives back the seed tables, FK/inertias vs oracles."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pinocchio_oracle import PinocchioURDF
from test_urdf_conversion import fk_error, inertia_error

from robot_dynamics import RobotModel
from robot_dynamics.model.seed_robots import SEED_ROBOTS, rx90, stanford_arm, urdf_text

URDF_DIR = Path(__file__).resolve().parent.parent / "urdf"
P2 = math.pi / 2
D3 = RL4 = 0.45
# (sigma, alpha, d, theta, r) as printed in the seeds (constant part of the joint variable)
SEED_TABLES = {
    "rx90": [(0, 0, 0, 0, 0), (0, P2, 0, 0, 0), (0, 0, D3, 0, 0), (0, -P2, 0, 0, RL4), (0, P2, 0, 0, 0), (0, -P2, 0, 0, 0)],
    "scara": [(0, 0, 0, 0, 0), (0, 0, 0.425, 0, 0), (0, 0, 0.375, 0, 0), (1, 0, 0, 0, 0)],  # 002 Table 3.2
    # 003 Figure 2: beta -> alpha, b -> d, theta' -> theta, d' -> r
    "stanford": [(0, 0, 0, 0, 0), (0, P2, 0, P2, 0.1529), (1, P2, 0, 0, 0.6447), (0, 0, 0, 0, 0), (0, P2, 0, -P2, 0),
                 (0, P2, 0, 0, 0)],
    "planar2r": [(0, 0, 0, 0, 0), (0, 0, 0.5, 0, 0)],
}


@pytest.mark.parametrize("key", list(SEED_ROBOTS))
def test_committed_urdf_is_up_to_date(key: str) -> None:
    assert (URDF_DIR / f"{key}.urdf").read_text() == urdf_text(key), "run: python -m robot_dynamics.model.seed_robots"


@pytest.mark.parametrize("key", list(SEED_ROBOTS))
def test_import_of_bundled_urdf_gives_back_seed_table(key: str) -> None:
    model = RobotModel.from_urdf(str(URDF_DIR / f"{key}.urdf"))
    got = np.array([(j.sigma, j.alpha, j.d, j.theta, j.r) for j in model.joints], float)
    np.testing.assert_allclose(got, np.array(SEED_TABLES[key], float), rtol=0, atol=1e-12)
    assert all(j.sign == 1.0 for j in model.joints)
    assert model.tip_link == "tool"


@pytest.mark.parametrize("key", list(SEED_ROBOTS))
def test_seed_model_fk_and_inertia_equal_pinocchio_on_bundled_urdf(key: str) -> None:
    seed = SEED_ROBOTS[key]()
    oracle = PinocchioURDF(URDF_DIR / f"{key}.urdf")
    qs = np.random.default_rng(11).uniform(-2.5, 2.5, (200, seed.dof))
    assert fk_error(seed, oracle, qs, sorted(seed.frames)) <= 1e-10
    assert inertia_error(seed, oracle) <= 1e-12
    imported = RobotModel.from_urdf(str(URDF_DIR / f"{key}.urdf"))
    assert fk_error(imported, oracle, qs[:50], sorted(imported.frames)) <= 1e-10
    assert inertia_error(imported, oracle) <= 1e-12
    np.testing.assert_array_equal(imported.Fc, seed.Fc)
    np.testing.assert_array_equal(imported.Fv, seed.Fv)
    for k in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(imported.limits[k], seed.limits[k])


@pytest.mark.parametrize("key", list(SEED_ROBOTS))
def test_bundled_inertias_are_physically_consistent(key: str) -> None:
    oracle = PinocchioURDF(URDF_DIR / f"{key}.urdf")
    for inertia in list(oracle.model.inertias)[1:]:
        assert inertia.mass > 0
        ev = np.linalg.eigvalsh(inertia.inertia)  # about the COM
        assert ev.min() > 0
        assert ev[0] + ev[1] >= ev[2] * (1 - 1e-12)


def test_seed_robot_limits_are_finite_and_ordered() -> None:
    for f in SEED_ROBOTS.values():
        lim = f().limits
        assert np.all(lim["lower"] < lim["upper"])
        for k in ("velocity", "effort", "acceleration"):
            assert np.all(np.isfinite(lim[k])) and np.all(lim[k] > 0)


def test_rx90_dgm_equals_example_3_3() -> None:
    """0T6 of the RX-90 against the closed form of 002 Example 3.3 (s, n, a, P)."""
    model = rx90()
    q = np.random.default_rng(2).uniform(-3, 3, (50, 6))
    t = model.link_frames(q)[:, 6]
    c = np.cos(q).T
    s = np.sin(q).T
    c1, c2, c4, c5, c6 = c[0], c[1], c[3], c[4], c[5]
    s1, s2, s4, s5, s6 = s[0], s[1], s[3], s[4], s[5]
    c23, s23 = np.cos(q[:, 1] + q[:, 2]), np.sin(q[:, 1] + q[:, 2])
    sx = c1 * (c23 * (c4 * c5 * c6 - s4 * s6) - s23 * s5 * c6) - s1 * (s4 * c5 * c6 + c4 * s6)
    sz = s23 * (c4 * c5 * c6 - s4 * s6) + c23 * s5 * c6
    nz = -s23 * (c4 * c5 * s6 + s4 * c6) - c23 * s5 * s6
    ax = -c1 * (c23 * c4 * s5 + s23 * c5) + s1 * s4 * s5
    ay = -s1 * (c23 * c4 * s5 + s23 * c5) - c1 * s4 * s5
    az = -s23 * c4 * s5 + c23 * c5
    px = -c1 * (s23 * RL4 - c2 * D3)
    py = -s1 * (s23 * RL4 - c2 * D3)
    pz = c23 * RL4 + s2 * D3
    ref = np.column_stack([sx, sz, nz, ax, ay, az, px, py, pz])
    got = np.column_stack([t[:, 0, 0], t[:, 2, 0], t[:, 2, 1], t[:, 0, 2], t[:, 1, 2], t[:, 2, 2], t[:, 0, 3],
                           t[:, 1, 3], t[:, 2, 3]])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def test_stanford_frames_match_lin_table_1() -> None:
    """u1 (joint 1 axis) seen from frames 2..6, seed 003 Table I (errata 54: row 3 z of u1^(6) is -0.8624)."""
    model = stanford_arm()
    base = np.array([0.7, 0.7, 0.0, 0.7, 0.7, 0.7])
    table = {
        1: [[0.7648, -0.6442, 0.0], [0.7648, 0.0, 0.6442], [0.5850, -0.4927, 0.6442], [-0.1159, 0.8624, 0.4927],
            [0.2288, 0.4515, -0.8624]],
        2: [[0.7648, 0.6442, 0.0], [0.7648, 0.0, -0.6442], [0.5850, 0.4927, 0.6442], [-0.8696, 0.0324, 0.4927],
            [-0.4060, 0.3022, -0.8624]],
        3: [[0.8253, 0.5646, 0.0], None, [0.6313, 0.4319, 0.6442], [-0.8620, 0.1190, 0.4927],
            [-0.3738, 0.3412, -0.8624]],
    }
    for row, values in table.items():
        for col, expected in enumerate(values, start=2):
            if expected is None:
                continue
            q = base.copy()
            if row > 1:  # column j varies q_j (column 3 varies q2), row 2: -0.7, row 3: -0.6
                q[(2 if col == 3 else col) - 1] = -0.7 if row == 2 else -0.6
            f = model.link_frames(q)
            u = f[col, :3, :3].T @ f[1, :3, 2]
            np.testing.assert_allclose(u, expected, rtol=0, atol=1.5e-4)


def test_stanford_inertial_data_match_lin() -> None:
    """Lin Figure 2 / Table II: m3+m4+m5+m6 = 6.47, MZ3 = -2.74, XY4 = -m4 cx cy (= (U4)12 ~ -0.00005)."""
    p = stanford_arm().inertial
    assert p[2:, 9].sum() == pytest.approx(6.47, abs=1e-12)
    assert p[2, 8] == pytest.approx(-2.74, abs=1e-3)
    assert p[3, 1] == pytest.approx(-0.00005, abs=1e-5)
    assert p[3, 1] == pytest.approx(-1.08 * 0.0092 * 0.0054, abs=1e-15)
