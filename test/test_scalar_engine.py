"""The generated scalar Python program: the single-state engine without a C compiler (issue 15, item 4).

:func:`~robot_dynamics.symbolic.codegen.python_scalar_source` prints the customized inverse dynamics
(001 §7.5) for one state in plain floats; the engine runs it for single states when no C compiler is
available or the build failed.

Oracles: the NumPy model (``dynamics/inverse_dynamics.py``, itself checked against Pinocchio in
``test_inverse_dynamics``, ``test_tree_pinocchio``, ``test_tree_consumers``) and Pinocchio on the whole
tree of the Panda's example-robot-data URDF (``rnea``, friction and rotor terms added by hand, 001 eq. 7.61).
No C compiler runs in this module.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from pinocchio_from_mdh import random_model, random_states
from pinocchio_oracle import PinocchioURDF

from robot_dynamics import codegen
from robot_dynamics.dynamics.dynamic_terms import inertia_matrix, nonlinear_effects
from robot_dynamics.dynamics.inverse_dynamics import external_wrenches, inverse_dynamics
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.seed_robots import rx90
from robot_dynamics.symbolic.customized_model import customized_inverse_dynamics

TOL = 1e-12


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


def _with_friction(m: RobotModel, seed: int) -> RobotModel:
    rng = np.random.default_rng(seed)
    return m.replace(Fc=rng.uniform(0.5, 2.0, m.dof), Fv=rng.uniform(0.1, 1.0, m.dof), Ia=rng.uniform(0.1, 0.5, m.dof))


def _panda() -> RobotModel:
    """The Panda's whole tree (7 arm joints and 2 finger joints) read from example-robot-data."""
    return _with_friction(RobotModel.from_urdf(str(example_urdf("panda"))), 3)


ROBOTS = {
    "rx90": lambda: _with_friction(rx90(), 1),  # a bundled chain
    "tree": lambda: random_model(np.random.default_rng(2), n=7, tree=True, friction=True),  # prismatic, flipped axes
    "panda": _panda,  # a whole tree from a URDF
}


@pytest.fixture(autouse=True)
def auto_engine(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The default engine (the test suite runs the NumPy one), an empty cache, and no C compiler."""
    monkeypatch.setenv("ROBOT_DYNAMICS_ENGINE", "auto")
    monkeypatch.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path))
    monkeypatch.delenv("ROBOT_DYNAMICS_COMPILE_AFTER", raising=False)
    monkeypatch.setattr(codegen, "compiler", lambda: None)


def _states(m: RobotModel, seed: int, count: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, qd, qdd = random_states(np.random.default_rng(seed), m.dof, count)
    qd[0, 0] = 0.0  # sign(0) = 0 in the Coulomb term
    return q, qd, qdd


@pytest.mark.parametrize("name", list(ROBOTS))
def test_scalar_program_equals_the_numpy_model(name: str) -> None:
    """ID with friction and rotor inertia, H (q̈ = 0) and a wrench on the last link, state by state, from
    the program source alone (plain lists in, a list of floats out)."""
    m = ROBOTS[name]()
    assert np.all(m.Fc > 0) and np.all(m.Ia > 0) and m.is_tree == (name != "rx90")
    cm = customized_inverse_dynamics(m, parameters="base", simplified=True, wrench=True)
    src = codegen.python_scalar_source(cm, "ne")
    assert "numpy" not in src and "np." not in src
    f = codegen.load_python(src, "ne")
    q, qd, qdd = _states(m, 4)
    ref = inverse_dynamics(m, q, qd, qdd)
    assert _rel(ref, inverse_dynamics(m.replace(Fc=0 * m.Fc, Fv=0 * m.Fv, Ia=0 * m.Ia), q, qd, qdd)) > 1e-3
    last = m.joints[-1].link
    wrench = np.random.default_rng(5).normal(size=(len(q), 6)) * 10.0
    fe = external_wrenches(m, q, {last: wrench}, "local", True)[:, -1]
    ref_w = inverse_dynamics(m, q, qd, qdd, f_ext={last: wrench}, f_ext_frame="local")
    ref_h = nonlinear_effects(m, q, qd)
    for k in range(len(q)):
        out = f(q[k].tolist(), qd[k].tolist(), qdd[k].tolist())
        assert type(out) is list and all(type(x) is float for x in out)
        assert _rel(out, ref[k]) < TOL, k
        assert _rel(f(q[k].tolist(), qd[k].tolist(), [0.0] * m.dof), ref_h[k]) < TOL, k
        assert _rel(f(q[k].tolist(), qd[k].tolist(), qdd[k].tolist(), fe[k].tolist()), ref_w[k]) < TOL, k


def test_scalar_program_equals_pinocchio_on_the_panda_tree() -> None:
    m = _panda()
    o = PinocchioURDF(example_urdf("panda"))
    idx = [o.v_index(nm) for nm in m.joint_names]
    assert o.model.nv == m.dof
    pd = o.model.createData()
    f = codegen.load_python(codegen.python_scalar_source(customized_inverse_dynamics(m, simplified=True)))
    q, qd, qdd = _states(m, 6)
    for a, b, c in zip(q, qd, qdd, strict=True):
        v, w = np.zeros(m.dof), np.zeros(m.dof)
        v[idx], w[idx] = b, c
        ref = pin.rnea(o.model, pd, o.q_vector(m.joint_names, a), v, w)[idx] + m.Fc * np.sign(b) + m.Fv * b + m.Ia * c
        assert _rel(f(a.tolist(), b.tolist(), c.tolist()), ref) < 1e-10


def _wait_python(m: RobotModel, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while m.engine["inverse_dynamics"] != "python":
        assert time.monotonic() - t0 < timeout, m.engine
        time.sleep(0.02)


@pytest.mark.parametrize("name", ["rx90", "tree"])
def test_without_a_compiler_the_engine_runs_the_scalar_program(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Auto mode, no compiler: the NumPy model answers, the scalar program is generated off the caller's
    thread after ``ROBOT_DYNAMICS_COMPILE_AFTER`` calls, then single states run it (not NumPy) and batches
    stay on NumPy; both equal the NumPy model."""
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "2")
    m = ROBOTS[name]()
    q, qd, qdd = _states(m, 7)
    ref, ref_h = inverse_dynamics(m, q, qd, qdd), nonlinear_effects(m, q, qd)
    assert _rel(m.inverse_dynamics(q[0], qd[0], qdd[0]), ref[0]) < TOL
    time.sleep(0.1)
    assert m.engine["inverse_dynamics"] == "numpy"  # one call: nothing started
    m.inverse_dynamics(q[0], qd[0], qdd[0])
    _wait_python(m)
    assert m.engine["nonlinear_effects"] == "python" and m.engine["gravity_torques"] == "numpy"
    numpy_id = m._engine._numpy["id"]

    def no_numpy(*args, **kwargs):
        raise AssertionError("the NumPy model ran a single state")

    monkeypatch.setitem(m._engine._numpy, "id", no_numpy)
    monkeypatch.setitem(m._engine._numpy, "nle", no_numpy)
    for k in range(len(q)):
        tau = m.inverse_dynamics(q[k], qd[k], qdd[k])
        assert tau.shape == (m.dof,) and tau.dtype == np.float64
        assert _rel(tau, ref[k]) < TOL
        assert _rel(m.inverse_dynamics(list(q[k]), list(qd[k]), list(qdd[k])), ref[k]) < TOL  # sequences too
        assert _rel(m.nonlinear_effects(q[k], qd[k]), ref_h[k]) < TOL
    monkeypatch.setitem(m._engine._numpy, "id", numpy_id)
    assert np.array_equal(m.inverse_dynamics(q, qd, qdd), ref)  # a batch: the NumPy model, bit for bit
    bad = q[0].copy()
    bad[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):  # invalid states get the NumPy model's errors
        m.inverse_dynamics(bad, qd[0], qdd[0])
    with pytest.raises(ValueError):
        m.inverse_dynamics(q[0][:-1], qd[0], qdd[0])
    # options still take the NumPy model
    g = np.array([0.0, 3.0, -9.0])
    assert _rel(m.inverse_dynamics(q[1], qd[1], qdd[1], gravity=g), inverse_dynamics(m, q[1], qd[1], qdd[1], gravity=g)) < TOL


def test_compile_waits_for_the_scalar_program() -> None:
    """``model.compile(wait=True)`` without a compiler generates the scalar program in the caller's thread."""
    m = ROBOTS["tree"]()
    status = m.compile("inverse_dynamics", "gravity_torques")
    assert status == {"inverse_dynamics": "python", "gravity_torques": "numpy"}
    assert m.engine["inverse_dynamics"] == "python"
    q, qd, qdd = _states(m, 8, 3)
    assert _rel(m.inverse_dynamics(q[2], qd[2], qdd[2]), inverse_dynamics(m, q[2], qd[2], qdd[2])) < TOL


def test_a_failed_build_falls_back_to_the_scalar_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiler exists but the build fails: the engine ends up on the scalar program."""
    monkeypatch.setattr(codegen, "compiler", lambda: "/nonexistent/cc")
    monkeypatch.setattr(codegen, "_compiler_id", lambda cc: "broken")

    def broken(*args, **kwargs):
        raise RuntimeError("compilation failed (test)")

    monkeypatch.setattr(codegen, "_build_in_worker", broken)
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "0")
    m = ROBOTS["rx90"]()
    q, qd, qdd = _states(m, 9, 2)
    m.inverse_dynamics(q[0], qd[0], qdd[0])
    _wait_python(m)
    assert m._engine._state["id"] == "failed"
    assert _rel(m.inverse_dynamics(q[1], qd[1], qdd[1]), inverse_dynamics(m, q[1], qd[1], qdd[1])) < TOL


def test_python_mode_runs_the_scalar_program_from_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ROBOT_DYNAMICS_ENGINE=python``: the scalar program from the first single-state call on, the NumPy
    model for the rest, and no compiler is ever used although one exists."""
    monkeypatch.setenv("ROBOT_DYNAMICS_ENGINE", "python")
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "0")
    monkeypatch.setattr(codegen, "compiler", lambda: "/usr/bin/cc")

    def no_build(*args, **kwargs):
        raise AssertionError("a build started in python mode")

    monkeypatch.setattr(codegen, "_build_in_worker", no_build)
    monkeypatch.setattr(codegen, "_build_kind", no_build)
    m = ROBOTS["tree"]()
    assert m.backend == "python" and m.engine["inverse_dynamics"] == "numpy"
    q, qd, qdd = _states(m, 10, 3)
    assert _rel(m.inverse_dynamics(q[0], qd[0], qdd[0]), inverse_dynamics(m, q[0], qd[0], qdd[0])) < TOL
    assert m.engine["inverse_dynamics"] == "python"
    for k in range(3):
        assert _rel(m.inverse_dynamics(q[k], qd[k], qdd[k]), inverse_dynamics(m, q[k], qd[k], qdd[k])) < TOL
        assert np.array_equal(m.inertia_matrix(q[k]), inertia_matrix(m, q[k]))
    assert m.engine["inertia_matrix"] == "numpy" and not m._engine._state
