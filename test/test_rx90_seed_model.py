"""Seed checks on the Stäubli RX-90: 001 Example 7.1 closed forms and the Appendix customized model."""

from __future__ import annotations

import math

import numpy as np
from rx90_customized_model import RX90_ALPHA, base_parameters, rx90_customized_torques

from robot_dynamics.model.robot_model import MDHJoint, RobotModel


def rx90_model(n: int, d3: float, rl4: float, inertial: np.ndarray, ia: np.ndarray, g3: float) -> RobotModel:
    """First n links of the RX-90, 002 Table 3.1: α = (0, π/2, 0, −π/2, π/2, −π/2), d3 = D3, r4 = RL4."""
    d = [0.0, 0.0, d3, 0.0, 0.0, 0.0]
    r = [0.0, 0.0, 0.0, rl4, 0.0, 0.0]
    joints = [MDHJoint(f"j{j + 1}", j, 0, RX90_ALPHA[j], d[j], 0.0, r[j]) for j in range(n)]
    frames = {"base": (0, np.eye(4)), "tip": (n, np.eye(4))}
    return RobotModel(joints, base_link="base", tip_link="tip", frames=frames, inertial=inertial, Ia=ia,
                      gravity=np.array([0.0, 0.0, g3]))  # fmt: skip


def test_example_7_1_inertia_and_gravity_closed_forms() -> None:
    """001 Example 7.1: A11..A33 and Q1..Q3 of the first three links (general inertial parameters)."""
    rng = np.random.default_rng(71)
    d3, g3 = 0.45, -9.81
    for _ in range(20):
        p = rng.normal(size=(3, 10))
        ia = rng.uniform(0, 1, 3)
        m = rx90_model(3, d3, 0.0, p, ia, g3)
        q = rng.uniform(-np.pi, np.pi, 3)
        (xx2, xy2, xz2, yy2, yz2, zz2, mx2, my2, _mz2, _m2) = p[1]
        (xx3, xy3, xz3, yy3, yz3, zz3, mx3, my3, mz3, m3) = p[2]
        zz1 = p[0, 5]
        s2, c2 = math.sin(q[1]), math.cos(q[1])
        s3, c3 = math.sin(q[2]), math.cos(q[2])
        s23, c23 = math.sin(q[1] + q[2]), math.cos(q[1] + q[2])
        a11 = (ia[0] + zz1 + s2**2 * xx2 + 2 * c2 * s2 * xy2 + c2**2 * yy2 + s23**2 * xx3 + 2 * c23 * s23 * xy3
               + c23**2 * yy3 + 2 * c2 * c23 * d3 * mx3 - 2 * c2 * s23 * d3 * my3 + c2**2 * d3**2 * m3)  # fmt: skip
        a12 = s2 * xz2 + c2 * yz2 + s23 * xz3 + c23 * yz3 - s2 * d3 * mz3
        a13 = s23 * xz3 + c23 * yz3
        a22 = ia[1] + zz2 + zz3 + 2 * c3 * d3 * mx3 - 2 * s3 * d3 * my3 + d3**2 * m3
        a23 = zz3 + c3 * d3 * mx3 - s3 * d3 * my3
        a33 = ia[2] + zz3
        expect_a = np.array([[a11, a12, a13], [a12, a22, a23], [a13, a23, a33]])
        np.testing.assert_allclose(m.inertia_matrix(q), expect_a, rtol=1e-12, atol=1e-12)
        q2 = -g3 * (c2 * mx2 - s2 * my2 + c23 * mx3 - s23 * my3 + d3 * c2 * m3)
        q3 = -g3 * (c23 * mx3 - s23 * my3)
        np.testing.assert_allclose(m.gravity_torques(q), [0.0, q2, q3], rtol=1e-12, atol=1e-12)


def _symmetric_links(rng: np.random.Generator) -> np.ndarray:
    """Standard parameters of the symmetric-link form assumed by the appendix (diagonal J_j, few first moments)."""
    p = np.zeros((6, 10))
    p[:, 0], p[:, 3], p[:, 5] = rng.uniform(0.05, 1.0, (3, 6))
    p[:, 9] = rng.uniform(1.0, 10.0, 6)
    p[0, 6:9] = rng.normal(size=3)  # no effect (joint 1 along gravity)
    p[1, 6:9] = rng.normal(size=3)  # MX2, MY2, MZ2
    p[2, 7] = rng.normal()  # MY3 (MX3 = MZ3 = 0)
    p[3, 8] = rng.normal()  # MZ4
    p[3, 7] = p[4, 8] = rng.normal()  # MYR4 = MY4 - MZ5 = 0
    p[4, 7] = rng.normal()  # MY5
    p[5, 8] = rng.normal()  # MZ6
    return p


def test_appendix_customized_model_equals_inverse_dynamics() -> None:
    """001 Appendix (SYMORO+ RX-90 model with base parameters) == NE with the standard parameters."""
    rng = np.random.default_rng(90)
    d3, rl4, g3 = 0.45, 0.45, -9.81
    for _ in range(100):
        p = _symmetric_links(rng)
        ia = rng.uniform(0.0, 2.0, 6)
        m = rx90_model(6, d3, rl4, p, ia, g3)
        par = base_parameters(p, ia, d3, rl4)
        q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, 6))
        wrench = rng.normal(size=6)  # FX6 FY6 FZ6 CX6 CY6 CZ6 in R6 about O6
        expect = rx90_customized_torques(q, qd, qdd, par, d3, rl4, g3, wrench)
        got = m.inverse_dynamics(q, qd, qdd, f_ext=wrench, f_ext_frame="local")
        np.testing.assert_allclose(got, expect, rtol=1e-10, atol=1e-10 * np.abs(expect).max())


def test_uncorrected_scemi_grouping_does_not_match() -> None:
    """Errata 7: with the printed ZZR1 (without YY3) the appendix model disagrees with NE."""
    rng = np.random.default_rng(7)
    d3, rl4, g3 = 0.45, 0.45, -9.81
    p = _symmetric_links(rng)
    ia = rng.uniform(0.0, 2.0, 6)
    m = rx90_model(6, d3, rl4, p, ia, g3)
    par = base_parameters(p, ia, d3, rl4)
    par["ZZ1R"] -= p[2, 3]  # printed: ZZR1 = ZZ1 + YY2 + D3²(...), YY3 missing
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, 6))
    wrong = rx90_customized_torques(q, qd, qdd, par, d3, rl4, g3)
    assert abs(wrong[0] - m.inverse_dynamics(q, qd, qdd)[0]) > 1e-3
