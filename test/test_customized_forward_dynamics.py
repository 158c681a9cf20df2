"""Customized direct dynamic model (001 §7.6.2, eqs. 7.67–7.79): generated program vs Pinocchio's ABA.

Oracles: ``pin.aba`` on Pinocchio's own model of the same URDF (joints matched by name; rotor inertia as
Pinocchio's ``armature``, friction subtracted from τ by hand, 001 eq. 7.82), the NumPy direct dynamics
(itself checked against ``pin.aba`` in ``test_forward_dynamics.py``) for the end-effector wrench, and the
operation counts the seed prints for the Stäubli RX-90 (001 §7.6.2 notes: 889 ×/653 + with base parameters
[Khalil 97], 637 ×/423 + with the simplified parameters of Table 7.4).

Every program is evaluated through both emitters of :mod:`robot_dynamics.symbolic.codegen` (NumPy source and the
compiled C extension, built in a cache directory of this module's own, cold on every run).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import sympy as sp
from example_robots import example_urdf
from pinocchio_from_mdh import random_model
from test_customized_model import _table_7_4_rx90
from test_tree_model import random_tree_urdf
from tree_oracle import TreePair

from robot_dynamics import codegen
from robot_dynamics.dynamics.inverse_dynamics import external_wrenches
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.symbolic.customized_model import (
    Reciprocal,
    count_operations,
    customized_forward_dynamics,
    customized_inertia_matrix,
    customized_inverse_dynamics,
    customized_regressor,
)

RTOL = 1e-10
STATES = 40


def _rel(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |Δ| relative to max(1, max |ref|) of each state."""
    return float((np.abs(ours - ref).max(axis=1) / np.maximum(1.0, np.abs(ref).max(axis=1))).max())


def _tree_text() -> str:
    """A random 10-joint tree whose rows use γ_j, b_j (general and exact angles) and prismatic joints."""
    return random_tree_urdf(10, 1)


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[RobotModel, TreePair]]:
    """name -> (our model, Pinocchio pair); the RX-90 keeps its rotor inertias (Pinocchio's armature)."""
    out = {}
    rx = load_model("rx90")
    assert np.all(rx.Ia > 0) and np.all(rx.Fc > 0) and np.all(rx.Fv > 0)
    prx = pin.buildModelFromUrdf(str(resolve_urdf("rx90")))
    pair = TreePair(rx, prx)
    prx.armature[pair.iv] = rx.Ia
    out["rx90"] = (rx, pair)
    for name in ("ur5", "panda"):
        path = str(example_urdf(name))
        m = RobotModel.from_urdf(path)
        out[name] = (m, TreePair(m, pin.buildModelFromUrdf(path)))
    text = _tree_text()
    m = RobotModel.from_urdf(text)
    out["tree"] = (m, TreePair(m, pin.buildModelFromXML(text)))
    assert out["panda"][0].dof == 9 and out["panda"][0].is_tree
    return out


@pytest.fixture(scope="module")
def programs(cases: dict[str, tuple[RobotModel, TreePair]]) -> dict[str, object]:
    return {name: customized_forward_dynamics(m) for name, (m, _) in cases.items()}


@pytest.fixture(scope="module")
def cold_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        d = tmp_path_factory.mktemp("codegen_cache")
        mp.setenv("ROBOT_DYNAMICS_CACHE", str(d))
        mp.setenv("XDG_CACHE_HOME", str(d))
        yield d


def _reference(pair: TreePair, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """States within the limits, applied torques Γ (with friction) and Pinocchio's q̈ for Γ net of friction."""
    m, pm, data = pair.ours, pair.model, pair.data
    rng = np.random.default_rng(seed)
    q, qd, _ = pair.random_states(rng, STATES)
    tau = rng.uniform(-5.0, 5.0, q.shape)
    net = tau - m.Fc * np.sign(qd) - m.Fv * qd
    qp, vp, tp = pair.pin_q(q), pair.pin_v(qd), pair.pin_v(net)
    acc = np.array([pin.aba(pm, data, a, b, c).copy() for a, b, c in zip(qp, vp, tp, strict=True)])
    return q, qd, tau, pair.from_pin_v(acc)


@pytest.mark.parametrize("name", ["rx90", "ur5", "panda", "tree"])
def test_python_emitter_equals_pinocchio_aba(cases, programs, name: str) -> None:
    m, pair = cases[name]
    cm = programs[name]
    f = codegen.load_python(codegen.python_source(cm, "fd"), "fd")
    q, qd, tau, ref = _reference(pair, 1)
    assert _rel(f(q, qd, tau), ref) < RTOL
    assert np.abs(ref).max() > 1.0  # the states are not trivial


@pytest.mark.parametrize("name", ["rx90", "ur5", "panda", "tree"])
def test_c_emitter_equals_pinocchio_aba(cases, programs, cold_cache, name: str) -> None:
    m, pair = cases[name]
    cm = programs[name]
    mod = codegen.compile_c(lambda module: codegen.c_source(cm, module))
    q, qd, tau, ref = _reference(pair, 2)
    assert _rel(mod.evaluate(q, qd, tau), ref) < RTOL
    assert _rel(mod.evaluate(q[:1], qd[:1], tau[:1]), ref[:1]) < RTOL  # the scalar path (one state)
    assert _rel(mod.evaluate(q[:7], qd[:7], tau[:7]), ref[:7]) < RTOL  # 4-state SIMD blocks and a remainder


def test_tree_rows_use_gamma_b_and_prismatic_joints(cases) -> None:
    """The tree case exercises what the chain cases cannot: γ_j, b_j, branching and prismatic joints."""
    m = cases["tree"][0]
    assert m.is_tree and any(jt.sigma == 1 for jt in m.joints)
    general = [jt.gamma for jt in m.joints if abs(np.sin(2 * jt.gamma)) > 1e-6]
    assert general and any(jt.b != 0.0 for jt in m.joints)
    assert len(set(int(a) for a in m.antecedent)) < m.dof  # some joint has several successors


def test_rotor_inertia_friction_and_wrench_equal_the_numpy_model() -> None:
    """Random trees with Ia, Fc, Fv and the wrench of the last link (inputs FXn … CZn) vs the NumPy model."""
    rng = np.random.default_rng(11)
    for n in (5, 8):
        m = random_model(rng, n, tree=n == 8, friction=True)
        assert np.all(m.Ia > 0) and np.all(m.Fc > 0)
        cm = customized_forward_dynamics(m, wrench=True)
        f = codegen.load_python(codegen.python_source(cm, "fd"), "fd")
        q, qd, tau = (rng.uniform(-2.0, 2.0, (30, n)) for _ in range(3))
        fe = rng.normal(size=(30, 6)) * 5.0
        w = external_wrenches(m, q, fe, "base", True)
        ref = m.forward_dynamics(q, qd, tau, f_ext=fe)
        assert np.abs(w[:, :-1]).max() == 0.0  # the wrench is all on the last link
        assert _rel(f(q, qd, tau, np.ascontiguousarray(w[:, -1])), ref) < RTOL
        assert _rel(f(q, qd, tau), m.forward_dynamics(q, qd, tau)) < RTOL


def test_rx90_operation_counts_are_within_the_seed() -> None:
    """001 §7.6.2: 889 ×, 653 + with base parameters; 637 ×, 423 + with the simplified ones (Table 7.4).

    The bundled RX-90 carries rotor inertia and friction (12 ×, 12 + and 6 sign more than the seed's model);
    divisions count as multiplications.  Printed beside the seed's figures by ``bench/bench_codegen_time.py``."""
    cm = customized_forward_dynamics(load_model("rx90"), "base")
    c = cm.counts()
    assert c["multiplications"] <= 889 and c["additions"] <= 653, c
    assert c["sin_cos"] == 10 and 1 <= c["divisions"] <= 6
    simp = customized_forward_dynamics(_table_7_4_rx90(np.random.default_rng(74)), "base", simplified=True).counts()
    assert simp["multiplications"] <= 637 and simp["additions"] <= 423, simp
    # the direct model costs more than the inverse one it inverts (sanity of the counter on the same robot)
    assert c["multiplications"] > customized_inverse_dynamics(load_model("rx90"), "base").counts()["multiplications"]


def test_cost_grows_linearly_with_the_joints() -> None:
    """O(n) (001 §7.6.2 notes): the operations per joint of random chains stay bounded as n doubles."""
    rng = np.random.default_rng(5)
    per_joint = []
    for n in (8, 16, 32):
        c = customized_forward_dynamics(random_model(rng, n, friction=True, prismatic=False), "standard").counts()
        per_joint.append(c["multiplications"] / n)
    assert max(per_joint) < 260 and per_joint[-1] < 1.15 * per_joint[0], per_joint


def test_divisions_are_counted_and_printed() -> None:
    """A run-time 1/H_j is one statement ``JDj = (1.0/JHj)``: one multiplication, and the listing shows it."""
    x = sp.Symbol("JH3", real=True)
    r = Reciprocal(x)
    assert count_operations(r) == (1, 0, 0) and r.free_symbols == {x} and str(r) == "(1.0/JH3)"
    cm = customized_forward_dynamics(load_model("rx90"), "base")
    rec = [st for st in cm.body if isinstance(st.expr, Reciprocal)]
    assert len(rec) == cm.counts()["divisions"] and all(st.name.startswith("JD") for st in rec)
    lines = cm.to_text().splitlines()
    assert "JD5=(1.0/JH5)" in lines and "*JD6=1/JH6" in lines  # H_6 = ZZ6 + Ia6 is a constant (hoisted)
    assert any(line.startswith("QDD6=") for line in lines)
    # the inputs: sin/cos of the angles, the velocities and Γ in the third slot of the emitters (QDPj)
    assert {f"QDP{j}" for j in range(1, 7)} <= cm.used_inputs() and cm.kind == "forward_dynamics"


@pytest.mark.parametrize("name", ["rx90", "tree"])
def test_inertia_matrix_and_regressor_programs_equal_pinocchio(cases, name: str) -> None:
    """The same generator's composite-link inertia matrix and transported-axis regressor (Python emitter) vs
    ``pin.crba`` and ``pin.rnea`` (armature = Ia; + friction, 001 eq. 7.61) through W p."""
    m, pair = cases[name]
    pm, data = pair.model, pair.data
    rng = np.random.default_rng(3)
    q, qd, qdd = pair.random_states(rng, 20)
    qp, vp, ap = pair.pin_q(q), pair.pin_v(qd), pair.pin_v(qdd)
    a_ref = np.array([pin.crba(pm, data, x).copy() for x in qp])
    a_ref = np.triu(a_ref) + np.swapaxes(np.triu(a_ref, 1), 1, 2)
    a_ref = a_ref[:, pair.iv][:, :, pair.iv]
    fa = codegen.load_python(codegen.python_source(customized_inertia_matrix(m), "a"), "a")
    a = fa(q, q, q)
    assert np.abs(a - a_ref).max() < RTOL * np.abs(a_ref).max()
    tau = pair.from_pin_v(np.array([pin.rnea(pm, data, x, y, z).copy() for x, y, z in zip(qp, vp, ap, strict=True)]))
    tau = tau + m.Fc * np.sign(qd) + m.Fv * qd  # Pinocchio's rnea has the armature (Ia q̈), not the friction
    fw = codegen.load_python(codegen.python_source(customized_regressor(m), "w"), "w")
    w = fw(q, qd, qdd)
    assert _rel(w @ m.standard_parameter_values, tau) < RTOL
    assert np.count_nonzero(np.abs(w).max(axis=0)) > 8 * m.dof  # most columns are exercised


def test_a_joint_moving_no_inertia_is_refused() -> None:
    """H_j ≡ 0 (a massless last link, no rotor inertia): A(q) is singular, the generator says which joint."""
    m = random_model(np.random.default_rng(3), 4)
    p = m.inertial.copy()
    p[-1] = 0.0
    m = m.replace(inertial=p, Ia=np.zeros(4))
    with pytest.raises(ValueError, match=r"joint 4 \(j4\) moves no inertia"):
        customized_forward_dynamics(m, "standard", simplified=True)
