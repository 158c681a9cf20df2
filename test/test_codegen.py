"""Generated code (NumPy and compiled C) vs Pinocchio and the NumPy Newton–Euler, backend selection, cache, CLI.

Oracles: ``pin.rnea`` on an equivalent Pinocchio model (plus friction/rotor terms by
hand, 001 eq. 7.61), the NumPy Newton–Euler and regressor of issue 4 (themselves tested
against Pinocchio), and the RX-90 appendix model of 001 (``rx90_customized_model.py``).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from example_robots import example_urdf
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_model, random_states
from rx90_customized_model import base_parameters, rx90_customized_torques
from test_inverse_dynamics import _friction, _pin_rnea
from test_rx90_seed_model import _symmetric_links, rx90_model

from robot_dynamics import codegen
from robot_dynamics.cli import main
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics, regressor
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model
from robot_dynamics.model.seed_robots import planar_2r, rx90, scara, stanford_arm
from robot_dynamics.symbolic.codegen import GeneratedBackend, load_python, python_source
from robot_dynamics.symbolic.customized_model import customized_inverse_dynamics

RTOL = 1e-12


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(scope="module")
def robots() -> dict[str, RobotModel]:
    rng = np.random.default_rng(6)
    out = {"rx90": rx90(), "stanford": stanford_arm(), "scara": scara(), "planar2r": planar_2r(),
           "ur5": RobotModel.from_urdf(str(example_urdf("ur5"))),
           "panda": RobotModel.from_urdf(str(example_urdf("panda")), tip_link="panda_link8")}  # fmt: skip
    for k in range(4):
        out[f"random{k}"] = random_model(rng, n=7 if k == 0 else None, tree=k == 3, friction=True)
    return out


@pytest.mark.parametrize("lang", ["c", "python"])
def test_generated_equals_pinocchio_and_numpy(robots: dict[str, RobotModel], lang: str) -> None:
    """Every robot, base/standard, simplified or not: equal to 1e-12 at random states (batch, tail, single)."""
    rng = np.random.default_rng(12)
    for name, m in robots.items():
        q, qd, qdd = random_states(rng, m.dof, 23)  # 23 = 5 SIMD groups + a tail of 3
        q[:4] *= 20.0  # angles far outside [-π, π] exercise the argument reduction
        expect = _pin_rnea(pinocchio_model(m), q, qd, qdd) + _friction(m, qd, qdd)
        ref = inverse_dynamics(m, q, qd, qdd)
        assert _rel(ref, expect) < 1e-10, name
        for par, simplified in (("base", True), ("standard", False)):
            be = GeneratedBackend(m, lang=lang, parameters=par, simplified=simplified)
            got = be.inverse_dynamics(q, qd, qdd)
            assert _rel(got, ref) < RTOL, (name, par)
            assert _rel(be.inverse_dynamics(q[5], qd[5], qdd[5]), ref[5]) < RTOL, (name, par)


def test_end_effector_wrench_and_huge_angles(robots: dict[str, RobotModel]) -> None:
    rng = np.random.default_rng(3)
    for name in ("rx90", "ur5", "random0"):
        m = robots[name]
        be = GeneratedBackend(m, lang="c")
        q, qd, qdd = random_states(rng, m.dof, 9)
        q[0] += 1e6  # beyond the polynomial range: libm path
        for frame in ("base", "local"):
            fe = rng.normal(size=(9, 6))
            ref = inverse_dynamics(m, q, qd, qdd, f_ext=fe, f_ext_frame=frame)
            assert _rel(be.inverse_dynamics(q, qd, qdd, f_ext=fe, f_ext_frame=frame), ref) < RTOL


def test_rx90_generated_equals_the_appendix_model() -> None:
    """Generated C code == the SYMORO+ listing of the 001 appendix (independent oracle)."""
    rng = np.random.default_rng(90)
    p = _symmetric_links(rng)
    ia = rng.uniform(0.0, 2.0, 6)
    m = rx90_model(6, 0.45, 0.45, p, ia, -9.81)
    par = base_parameters(p, ia, 0.45, 0.45)
    be = GeneratedBackend(m, lang="c")
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, 8, 6))
    wrench = rng.normal(size=(8, 6))
    expect = np.array([rx90_customized_torques(*s, par, 0.45, 0.45, -9.81, w) for *s, w in zip(q, qd, qdd, wrench,
                                                                                                 strict=True)])
    assert _rel(be.inverse_dynamics(q, qd, qdd, f_ext=wrench, f_ext_frame="local"), expect) < 1e-11


@pytest.mark.parametrize("lang", ["c", "python"])
def test_generated_regressor(robots: dict[str, RobotModel], lang: str) -> None:
    rng = np.random.default_rng(5)
    for name in ("rx90", "stanford", "random1"):
        m = robots[name]
        q, qd, qdd = random_states(rng, m.dof, 7)
        be = GeneratedBackend(m, lang=lang)
        w = be.regressor(q, qd, qdd)
        ref = regressor(m, q, qd, qdd)
        assert w.shape == ref.shape == (7, m.dof, 13 * m.dof)
        assert np.abs(w - ref).max() < 1e-12 * max(np.abs(ref).max(), 1.0), name
        assert be.regressor(q[0], qd[0], qdd[0]).shape == (m.dof, 13 * m.dof)
        tau = np.einsum("bij,j->bi", w, m.standard_parameter_values)
        assert _rel(tau, _pin_rnea(pinocchio_model(m), q, qd, qdd) + _friction(m, qd, qdd)) < 1e-10


def test_set_backend_dispatch_and_fallbacks(robots: dict[str, RobotModel]) -> None:
    m = rx90()
    rng = np.random.default_rng(8)
    q, qd, qdd = random_states(rng, 6, 4)
    ref = inverse_dynamics(m, q, qd, qdd)
    assert m.backend == codegen.engine_mode()  # the default engine (auto unless $ROBOT_DYNAMICS_ENGINE says)
    m.set_backend("generated")
    assert m.backend == "generated"
    assert _rel(m.inverse_dynamics(q, qd, qdd), ref) < RTOL
    assert _rel(m.regressor(q, qd, qdd), regressor(m, q, qd, qdd)) < RTOL
    # gravity override and wrenches on inner links fall back to the NumPy model
    g = np.array([1.0, -2.0, -9.0])
    assert _rel(m.inverse_dynamics(q, qd, qdd, gravity=g), inverse_dynamics(m, q, qd, qdd, gravity=g)) < RTOL
    fx = {"link3": rng.normal(size=6), "tool": rng.normal(size=6)}
    assert _rel(m.inverse_dynamics(q, qd, qdd, f_ext=fx), inverse_dynamics(m, q, qd, qdd, f_ext=fx)) < RTOL
    with pytest.raises(ValueError):
        m.inverse_dynamics(q[:, :5], qd, qdd)
    with pytest.raises(ValueError):
        m.inverse_dynamics(np.full(6, np.nan), qd[0], qdd[0])
    with pytest.raises(ValueError):
        m.inverse_dynamics(q, qd[:3], qdd)
    with pytest.raises(ValueError, match="backend"):
        m.set_backend("fortran")
    m.set_backend("numpy")
    assert m.backend == "numpy"


def test_raw_function_checks_shapes() -> None:
    be = GeneratedBackend(rx90(), lang="c")
    f = be.evaluate
    z = np.zeros(6)
    assert f(z, z, z).shape == (6,)
    assert f(np.zeros((3, 6)), np.zeros((3, 6)), np.zeros((3, 6))).shape == (3, 6)
    for bad in ((np.zeros(5), z, z), (z, np.zeros((2, 6)), z), (np.zeros((2, 2, 6)), z, z)):
        with pytest.raises(ValueError):
            f(*bad)
    with pytest.raises(ValueError):
        f(z, z, z, np.zeros(5))
    with pytest.raises(TypeError):
        f(z, z)


def test_cache_by_model_hash_and_no_compiler(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("ROBOT_DYNAMICS_CACHE", raising=False)
    m = planar_2r()
    inertial = m.inertial.copy()
    inertial[1, 9] = 1.2345  # a description not compiled before
    m = m.replace(inertial=inertial)
    GeneratedBackend(m, lang="c")
    assert len(list((tmp_path / "robot_dynamics" / "codegen").glob("rdgen_*.so"))) == 1

    def boom(*a, **k):
        raise AssertionError("regenerated although cached")

    monkeypatch.setattr(GeneratedBackend, "_generate", boom)
    be = GeneratedBackend(m, lang="c")  # loads the cached module
    q = np.array([0.3, -0.2])
    assert _rel(be.inverse_dynamics(q, q, q), inverse_dynamics(m, q, q, q)) < RTOL
    monkeypatch.undo()
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    with pytest.warns(RuntimeWarning, match="compiler"):
        be = GeneratedBackend(m, lang="c")
    assert be.lang == "python"
    assert _rel(be.inverse_dynamics(q, q, q), inverse_dynamics(m, q, q, q)) < RTOL


def test_python_source_is_vectorized_numpy() -> None:
    m = scara()
    cm = customized_inverse_dynamics(m, "base", simplified=True)
    src = python_source(cm, "idm")
    assert "for " not in src  # no Python loop over states
    f = load_python(src, "idm")
    rng = np.random.default_rng(1)
    q, qd, qdd = random_states(rng, 4, 1000)
    assert _rel(f(q, qd, qdd), inverse_dynamics(m, q, qd, qdd)) < RTOL


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-50.0, 50.0), min_size=18, max_size=18), st.integers(1, 9))
def test_property_random_states(vals: list[float], nb: int) -> None:
    m = _STANFORD
    x = np.array(vals).reshape(3, 6)
    q, qd, qdd = (np.tile(v, (nb, 1)) + np.arange(nb)[:, None] * 0.1 for v in x)
    assert _rel(_STANFORD_BE.inverse_dynamics(q, qd, qdd), inverse_dynamics(m, q, qd, qdd)) < 1e-11


_STANFORD = stanford_arm()
_STANFORD_BE = GeneratedBackend(_STANFORD, lang="c")


def test_cli_codegen(tmp_path, capsys) -> None:
    out = tmp_path / "rx90_id.py"
    assert main(["codegen", "rx90", "--lang", "python", "--json", "-o", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["dof"] == 6 and info["multiplications"] > 0 and info["additions"] > 0
    m = load_model("rx90")  # the bundled URDF with the rotor inertias of config/rx90.yaml, as the CLI loads it
    f = load_python(out.read_text(), "inverse_dynamics")
    q = np.random.default_rng(2).uniform(-1, 1, (5, 6))
    assert _rel(f(q, q, q), inverse_dynamics(m, q, q, q)) < RTOL
    assert main(["codegen", "rx90", "--lang", "c", "--standard-parameters", "--simplified",
                 "-o", str(tmp_path / "rx90.c")]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "multiplications" in text and (tmp_path / "rx90.c").read_text().startswith("/* customized")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["codegen", "no_such_robot.urdf"]) == 2


@pytest.mark.parametrize("lang", ["c", "python"])
def test_generated_inertia_matrix_and_gravity_vs_pinocchio(robots: dict[str, RobotModel], lang: str) -> None:
    """A(q) (+ rotor inertias) vs pin.crba and Q(q) vs pin.computeGeneralizedGravity."""
    import pinocchio as pin

    rng = np.random.default_rng(64)
    for name in ("rx90", "stanford", "ur5", "random0", "random3"):
        m = robots[name]
        pm = pinocchio_model(m)
        pd = pm.createData()
        q, _, _ = random_states(rng, m.dof, 6)
        a_ref = np.array([pin.crba(pm, pd, x).copy() for x in q])
        a_ref = np.triu(a_ref) + np.swapaxes(np.triu(a_ref, 1), 1, 2) + np.einsum("j,jk->jk", m.Ia, np.eye(m.dof))
        g_ref = np.array([pin.computeGeneralizedGravity(pm, pd, x).copy() for x in q])
        m.set_backend("generated", lang=lang)
        try:
            assert _rel(m.inertia_matrix(q), a_ref) < 1e-11, name
            assert _rel(m.inertia_matrix(q[0]), a_ref[0]) < 1e-11, name
            assert _rel(m.gravity_torques(q), g_ref) < 1e-11, name
        finally:
            m.set_backend("numpy")
