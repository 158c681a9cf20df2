"""A(q), Q(q), C(q, q̇), H, energies vs Pinocchio; properties of 001 §7.3.3.3."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_model, random_states
from test_inverse_dynamics import _embed, _pin_urdf_cases, _rel, urdf_pair

RTOL = 1e-9


def _crba(pm: pin.Model, pd: pin.Data, q: np.ndarray) -> np.ndarray:
    a = pin.crba(pm, pd, q).copy()
    return np.triu(a) + np.triu(a, 1).T


@pytest.mark.parametrize("tree", [False, True])
def test_inertia_gravity_energies_match_pinocchio(tree: bool) -> None:
    rng = np.random.default_rng(20 + tree)
    for _ in range(10):
        m = random_model(rng, tree=tree, friction=True)
        pm = pinocchio_model(m)
        pd = pm.createData()
        q, qd, _ = random_states(rng, m.dof, 50)
        a_pin = np.array([_crba(pm, pd, x) for x in q]) + np.diag(m.Ia)  # rotor inertia added by hand
        assert _rel(m.inertia_matrix(q), a_pin) < RTOL
        assert _rel(m.inertia_matrix(q[0]), a_pin[0]) < RTOL
        g_pin = np.array([pin.computeGeneralizedGravity(pm, pd, x).copy() for x in q])
        assert _rel(m.gravity_torques(q), g_pin) < RTOL
        h_pin = np.array([pin.nonLinearEffects(pm, pd, x, v).copy() for x, v in zip(q, qd, strict=True)])
        h_pin += m.Fc * np.sign(qd) + m.Fv * qd
        assert _rel(m.nonlinear_effects(q, qd), h_pin) < RTOL
        ek = np.array([pin.computeKineticEnergy(pm, pd, x, v) for x, v in zip(q, qd, strict=True)])
        ek += 0.5 * np.sum(m.Ia * qd**2, axis=1)
        assert _rel(m.kinetic_energy(q, qd), ek) < RTOL
        ep = np.array([pin.computePotentialEnergy(pm, pd, x) for x in q])
        assert _rel(m.potential_energy(q), ep) < RTOL


@pytest.mark.parametrize("case", _pin_urdf_cases(), ids=lambda c: c[0].split("/")[-1] + ("" if c[1] is None else f"-{c[1]}"))
def test_urdf_inertia_and_gravity_match_pinocchio(case) -> None:
    m, pm, idx = urdf_pair(*case)
    pd = pm.createData()
    rng = np.random.default_rng(21)
    q, _, _ = random_states(rng, m.dof, 500)
    qp = _embed(pm, idx, q)
    a_pin = np.array([_crba(pm, pd, x)[np.ix_(idx, idx)] for x in qp]) + np.diag(m.Ia)
    assert _rel(m.inertia_matrix(q), a_pin) < RTOL
    g_pin = np.array([pin.computeGeneralizedGravity(pm, pd, x)[idx] for x in qp])
    assert _rel(m.gravity_torques(q), g_pin) < RTOL


def _christoffel_fd(pm: pin.Model, pd: pin.Data, q: np.ndarray, qd: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """C from central differences of Pinocchio's CRBA (001 eq. 7.7)."""
    n = len(q)
    da = np.array([(_crba(pm, pd, q + h * e) - _crba(pm, pd, q - h * e)) / (2 * h) for e in np.eye(n)])  # [k, i, j]
    return 0.5 * (np.einsum("kij,k->ij", da, qd) + np.einsum("jik,k->ij", da, qd) - np.einsum("ijk,k->ij", da, qd))


@pytest.mark.parametrize("tree", [False, True])
def test_coriolis_matrix_christoffel(tree: bool) -> None:
    rng = np.random.default_rng(30 + tree)
    for _ in range(8):
        m = random_model(rng, tree=tree)
        pm = pinocchio_model(m)
        pd = pm.createData()
        q, qd, _ = random_states(rng, m.dof, 5)
        c = m.coriolis_matrix(q, qd)
        c_fd = np.array([_christoffel_fd(pm, pd, x, v) for x, v in zip(q, qd, strict=True)])
        assert _rel(c, c_fd) < 1e-7
        # C q̇ + Q = H (Pinocchio RNEA at q̈ = 0)
        h_pin = np.array([pin.nonLinearEffects(pm, pd, x, v).copy() for x, v in zip(q, qd, strict=True)])
        assert _rel(np.einsum("bij,bj->bi", c, qd) + m.gravity_torques(q), h_pin) < RTOL
        # Ȧ − 2C skew-symmetric (001 §7.3.3.3 e), Ȧ by central differences along q̇
        h = 1e-6
        adot = (m.inertia_matrix(q + h * qd) - m.inertia_matrix(q - h * qd)) / (2 * h)
        n_mat = adot - 2 * c
        assert np.abs(n_mat + np.swapaxes(n_mat, 1, 2)).max() < 1e-6 * max(1.0, np.abs(adot).max())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_inertia_matrix_symmetric_positive_definite(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = random_model(rng, tree=bool(seed % 2), friction=True)
    q, _, _ = random_states(rng, m.dof, 20)
    a = m.inertia_matrix(q)
    np.testing.assert_allclose(a, np.swapaxes(a, 1, 2), rtol=0, atol=1e-12 * np.abs(a).max())
    assert np.all(np.linalg.eigvalsh(a) > 0)


def test_bad_input_raises() -> None:
    m = random_model(np.random.default_rng(1), n=3)
    for bad in (np.zeros(2), np.zeros((2, 2)), np.array([0.0, np.nan, 0.0]), np.zeros((1, 1, 3))):
        for fn in (m.inertia_matrix, m.gravity_torques, m.potential_energy):
            with pytest.raises(ValueError):
                fn(bad)
        for fn in (m.coriolis_matrix, m.nonlinear_effects, m.kinetic_energy):
            with pytest.raises(ValueError):
                fn(np.zeros(3), bad)
    with pytest.raises(ValueError):
        m.coriolis_matrix(np.zeros((2, 3)), np.zeros((3, 3)))
