"""Direct dynamics (001 §7.6) vs Pinocchio ABA; the two methods agree; energy conservation; friction model."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_model, random_states
from scipy.integrate import solve_ivp
from test_inverse_dynamics import _embed, _pin_urdf_cases, _rel, urdf_pair

from robot_dynamics.dynamics.friction import friction_torque

RTOL = 1e-9


@pytest.mark.parametrize("tree", [False, True])
def test_random_mdh_robots_match_pinocchio_aba(tree: bool) -> None:
    rng = np.random.default_rng(40 + tree)
    total = 0
    for _ in range(12):
        m = random_model(rng, tree=tree)
        pm = pinocchio_model(m)
        pd = pm.createData()
        q, qd, tau = random_states(rng, m.dof, 50, scale=5.0)
        expect = np.array([pin.aba(pm, pd, a, b, c).copy() for a, b, c in zip(q, qd, tau, strict=True)])
        for method in ("cholesky", "recursive"):
            assert _rel(m.forward_dynamics(q, qd, tau, method=method), expect) < RTOL
            assert _rel(m.forward_dynamics(q[0], qd[0], tau[0], method=method), expect[0]) < RTOL
        total += len(q)
    assert total >= 500


@pytest.mark.parametrize("case", _pin_urdf_cases(), ids=lambda c: c[0].split("/")[-1] + ("" if c[1] is None else f"-{c[1]}"))
def test_urdf_robots_match_pinocchio_aba(case) -> None:
    m, pm, idx = urdf_pair(*case)
    pd = pm.createData()
    rng = np.random.default_rng(41)
    q, qd, tau = random_states(rng, m.dof, 500, scale=5.0)
    # friction and rotor inertia of the model are handed to Pinocchio's ABA by hand
    tau_pin = tau - m.Fc * np.sign(qd) - m.Fv * qd
    assert np.all(m.Ia == 0.0)
    qp, vp, tp = _embed(pm, idx, q), _embed(pm, idx, qd), _embed(pm, idx, tau_pin)
    if pm.nv > m.dof:  # Panda: hold the finger joints at rest (their bodies were zeroed)
        expect = []
        for a, b, t in zip(qp, vp, tp, strict=True):
            mm = pin.crba(pm, pd, a).copy()
            mm = np.triu(mm) + np.triu(mm, 1).T
            h = pin.nonLinearEffects(pm, pd, a, b)
            expect.append(np.linalg.solve(mm[np.ix_(idx, idx)], (t - h)[idx]))
        expect = np.array(expect)
    else:
        expect = np.array([pin.aba(pm, pd, a, b, t).copy() for a, b, t in zip(qp, vp, tp, strict=True)])
    for method in ("cholesky", "recursive"):
        assert _rel(m.forward_dynamics(q, qd, tau, method=method), expect) < RTOL


def test_methods_agree_with_friction_rotor_and_wrench() -> None:
    """The O(n) recursive algorithm and A⁻¹(Γ − H) agree to 1e-10 with Ia, friction and f_ext."""
    rng = np.random.default_rng(42)
    for k in range(15):
        m = random_model(rng, tree=k % 2 == 1, friction=True)
        q, qd, tau = random_states(rng, m.dof, 30, scale=5.0)
        w = rng.normal(size=(30, 6))
        a1 = m.forward_dynamics(q, qd, tau, f_ext=w)
        a2 = m.forward_dynamics(q, qd, tau, f_ext=w, method="recursive")
        assert _rel(a2, a1) < 1e-10
        # the inverse model (checked against Pinocchio elsewhere) returns tau
        assert _rel(m.inverse_dynamics(q, qd, a2, f_ext=w), tau) < RTOL


def _energy_drift(m, q0, qd0, t_end: float = 2.0) -> float:
    def rhs(_t, x):
        n = m.dof
        return np.concatenate([x[n:], m.forward_dynamics(x[:n], x[n:], np.zeros(n), method="recursive")])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-12, atol=1e-12)
    assert sol.success
    n = m.dof
    e = m.kinetic_energy(sol.y[:n].T, sol.y[n:].T) + m.potential_energy(sol.y[:n].T)
    scale = max(abs(e[0]), float(m.kinetic_energy(q0, qd0)), 1e-9)
    return float(np.abs(e - e[0]).max() / scale)


def test_energy_conserved_without_friction() -> None:
    """Total energy E + U constant (<= 1e-6 relative over 2 s) for friction-free robots (A includes Ia)."""
    rng = np.random.default_rng(43)
    for k in range(3):
        m = random_model(rng, n=4, tree=k == 2)
        m = m.replace(Ia=rng.uniform(0.0, 0.3, m.dof))
        q0, qd0, _ = random_states(rng, m.dof, 1, scale=1.0)
        assert _energy_drift(m, q0[0], qd0[0]) < 1e-6


def test_bad_input_raises() -> None:
    m = random_model(np.random.default_rng(2), n=3)
    z = np.zeros(3)
    with pytest.raises(ValueError):
        m.forward_dynamics(z, z, z, method="euler")
    with pytest.raises(ValueError):
        m.forward_dynamics(z, z, np.zeros(4))
    with pytest.raises(ValueError):
        m.forward_dynamics(np.zeros((2, 3)), np.zeros((3, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError):
        m.forward_dynamics(z, z, np.array([0.0, np.inf, 0.0]), method="recursive")


# ------------------------------------------------------------------ friction (001 eq. 7.26)
@settings(max_examples=40, deadline=None)
@given(
    v=st.floats(-20, 20, allow_nan=False),
    fc=st.floats(0, 10),
    fv=st.floats(0, 5),
    fs=st.floats(0, 10),
    b=st.floats(0, 50),
)
def test_stribeck_friction_hand_derived(v, fc, fv, fs, b) -> None:
    got = friction_torque(np.array([v]), fc, fv, Fs=fs, B=b)[0]
    s = np.sign(v)
    assert got == pytest.approx(fc * s + fv * v + (fs - fc) * s * np.exp(-abs(v) * b), rel=1e-12, abs=1e-12)
    if v != 0.0:  # static value at vanishing speed, Coulomb + viscous at high speed (Figure 7.2b)
        assert friction_torque(np.array([1e-300 * s]), fc, fv, Fs=fs, B=b)[0] == pytest.approx(fs * s)
    assert friction_torque(np.array([v]), fc, fv)[0] == pytest.approx(fc * s + fv * v)  # 7.27


def test_friction_bad_input() -> None:
    with pytest.raises(ValueError):
        friction_torque(np.array([np.nan]), 1.0, 1.0)
    with pytest.raises(ValueError):
        friction_torque(np.zeros(3), np.ones(2), 1.0)
    with pytest.raises(ValueError):
        friction_torque(np.zeros(3), 1.0, 1.0, B=-1.0)
