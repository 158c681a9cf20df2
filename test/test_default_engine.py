"""The compiled customized programs are the engine behind the default dynamics API (issue 15, items 1, 2, 5).

Oracles: Pinocchio (``rnea``, ``nonLinearEffects``, ``computeGeneralizedGravity``, ``crba``; friction
and rotor terms added by hand, 001 eq. 7.61; direct dynamics as the solution of Pinocchio's
A q̈ = Γ − H), on a Pinocchio model built from the MDH table (``pinocchio_from_mdh``); the NumPy
algorithms of the package (themselves checked against Pinocchio in ``test_inverse_dynamics``,
``test_dynamic_terms``, ``test_forward_dynamics``) for the paths that must give the same numbers
(fallback, wrench, gravity override, error messages).

Every module-level test runs in an empty cache (``ROBOT_DYNAMICS_CACHE`` in a temporary directory).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
from pinocchio_from_mdh import pinocchio_model, random_model, random_states

from robot_dynamics import codegen
from robot_dynamics.dynamics.dynamic_terms import gravity_torques, inertia_matrix, nonlinear_effects
from robot_dynamics.dynamics.forward_dynamics import forward_dynamics
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics, regressor
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.seed_robots import planar_2r, rx90
from robot_dynamics.symbolic.codegen import GeneratedBackend

TOL = 1e-10
FUNCTIONS = ("inverse_dynamics", "nonlinear_effects", "gravity_torques", "inertia_matrix", "regressor",
             "forward_dynamics")


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(autouse=True, scope="module")
def cold_cache(tmp_path_factory: pytest.TempPathFactory):
    """An empty cache and the default engine settings for the whole module."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path_factory.mktemp("engine_cache")))
    mp.delenv("ROBOT_DYNAMICS_ENGINE", raising=False)
    mp.delenv("ROBOT_DYNAMICS_COMPILE_AFTER", raising=False)
    yield
    mp.undo()


def _unique_planar(seed: int) -> RobotModel:
    """A planar 2R with random masses: a description no other test compiles."""
    m = planar_2r()
    p = m.inertial.copy()
    p[:, 9] = np.random.default_rng(seed).uniform(1.0, 3.0, 2)
    return m.replace(inertial=p)


def _wait_compiled(m: RobotModel, function: str, timeout: float = 180.0) -> None:
    t0 = time.monotonic()
    while m.engine[function] != "compiled":
        assert time.monotonic() - t0 < timeout, f"{function} not compiled after {timeout} s: {m.engine}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def tree() -> RobotModel:
    """A 5-joint tree with prismatic joints, flipped axes, rotor inertia and friction; every program compiled."""
    m = random_model(np.random.default_rng(0), n=5, tree=True, friction=True)
    assert m.is_tree and np.any(m.sigma == 1) and np.any(m.sign < 0)
    status = m.compile("all", wait=True)
    assert status == {f: "compiled" for f in FUNCTIONS}, status
    return m


class PinocchioOracle:
    """Pinocchio on the MDH table: ID, H, Q, A (+ rotor inertias), friction by hand, q̈ from A q̈ = Γ − H."""

    def __init__(self, m: RobotModel) -> None:
        self.m, self.pm = m, pinocchio_model(m)
        self.pd = self.pm.createData()

    def friction(self, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        return self.m.Fc * np.sign(qd) + self.m.Fv * qd + self.m.Ia * qdd

    def id(self, q, qd, qdd):
        return np.array([pin.rnea(self.pm, self.pd, *s).copy() for s in zip(q, qd, qdd, strict=True)]) + self.friction(qd, qdd)

    def nle(self, q, qd):
        return np.array([pin.nonLinearEffects(self.pm, self.pd, a, b).copy() for a, b in zip(q, qd, strict=True)]) \
            + self.friction(qd, np.zeros_like(qd))

    def gravity(self, q):
        return np.array([pin.computeGeneralizedGravity(self.pm, self.pd, a).copy() for a in q])

    def inertia(self, q):
        out = []
        for a in q:
            mm = pin.crba(self.pm, self.pd, a).copy()
            out.append(np.triu(mm) + np.triu(mm, 1).T + np.diag(self.m.Ia))
        return np.array(out)

    def fd(self, q, qd, tau):
        return np.array([np.linalg.solve(a, t - h) for a, t, h in zip(self.inertia(q), tau, self.nle(q, qd), strict=True)])


# ------------------------------------------------------------------ the compiled engine vs Pinocchio
def test_every_default_function_is_compiled_and_equals_pinocchio(tree: RobotModel) -> None:
    """All six functions through the default API, 11 states (two SIMD groups of 4 + a tail) and single states."""
    m, o = tree, PinocchioOracle(tree)
    rng = np.random.default_rng(1)
    q, qd, qdd = random_states(rng, m.dof, 11)
    q[:2] *= 20.0  # angles far outside [-π, π]: the SIMD argument reduction
    tau = rng.uniform(-5.0, 5.0, (11, m.dof))
    assert m.engine == {f: "compiled" for f in FUNCTIONS}
    checks = [
        (m.inverse_dynamics(q, qd, qdd), o.id(q, qd, qdd), lambda k: m.inverse_dynamics(q[k], qd[k], qdd[k])),
        (m.nonlinear_effects(q, qd), o.nle(q, qd), lambda k: m.nonlinear_effects(q[k], qd[k])),
        (m.gravity_torques(q), o.gravity(q), lambda k: m.gravity_torques(q[k])),
        (m.inertia_matrix(q), o.inertia(q), lambda k: m.inertia_matrix(q[k])),
        (m.forward_dynamics(q, qd, tau), o.fd(q, qd, tau), lambda k: m.forward_dynamics(q[k], qd[k], tau[k])),
    ]
    for got, ref, one in checks:
        assert got.shape == ref.shape and got.dtype == np.float64
        assert _rel(got, ref) < TOL
        for k in (0, 10):
            single = one(k)
            assert single.shape == ref.shape[1:] and _rel(single, ref[k]) < TOL
    w = m.regressor(q, qd, qdd)
    assert w.shape == (11, m.dof, 13 * m.dof)
    assert _rel(w @ m.standard_parameter_values, o.id(q, qd, qdd)) < TOL
    assert _rel(w, regressor(m, q, qd, qdd)) < TOL  # column by column, not only the product
    assert _rel(m.regressor(q[3], qd[3], qdd[3]), w[3]) < TOL


def test_options_take_the_exact_path(tree: RobotModel) -> None:
    """A wrench on the last link goes to the compiled programs; on an inner link, another gravity, or an
    explicit ``method`` to the NumPy algorithms; every answer equals the NumPy model's."""
    m = tree
    rng = np.random.default_rng(2)
    q, qd, qdd = random_states(rng, m.dof, 6)
    last, inner = m.joints[-1].link, m.joints[1].link
    for frame in ("base", "local"):
        for f_ext in ({last: rng.normal(size=6)}, {last: rng.normal(size=(6, 6))}, {inner: rng.normal(size=6)},
                      rng.normal(size=6)):
            ref = inverse_dynamics(m, q, qd, qdd, f_ext=f_ext, f_ext_frame=frame)
            assert _rel(m.inverse_dynamics(q, qd, qdd, f_ext=f_ext, f_ext_frame=frame), ref) < TOL
            ref_fd = forward_dynamics(m, q, qd, qdd, f_ext=f_ext, f_ext_frame=frame)
            assert _rel(m.forward_dynamics(q, qd, qdd, f_ext=f_ext, f_ext_frame=frame), ref_fd) < TOL
        one = {last: rng.normal(size=6)}
        assert _rel(m.inverse_dynamics(q[0], qd[0], qdd[0], f_ext=one, f_ext_frame=frame),
                    inverse_dynamics(m, q[0], qd[0], qdd[0], f_ext=one, f_ext_frame=frame)) < TOL
    g = np.array([1.0, -2.0, -7.0])
    assert _rel(m.inverse_dynamics(q, qd, qdd, gravity=g), inverse_dynamics(m, q, qd, qdd, gravity=g)) < TOL
    assert _rel(m.gravity_torques(q, gravity=g), gravity_torques(m, q, gravity=g)) < TOL
    assert _rel(m.nonlinear_effects(q, qd, gravity=g), nonlinear_effects(m, q, qd, gravity=g)) < TOL
    assert _rel(m.regressor(q, qd, qdd, gravity=g), regressor(m, q, qd, qdd, gravity=g)) < TOL
    assert _rel(m.forward_dynamics(q, qd, qdd, gravity=g), forward_dynamics(m, q, qd, qdd, gravity=g)) < TOL
    assert _rel(m.gravity_torques(q, gravity=m.gravity), gravity_torques(m, q)) < TOL  # the model's own: compiled
    for method in ("cholesky", "recursive"):
        assert _rel(m.forward_dynamics(q, qd, qdd, method=method), forward_dynamics(m, q, qd, qdd, method=method)) < TOL
    with pytest.raises(ValueError, match="method"):
        m.forward_dynamics(q, qd, qdd, method="newton")


def test_invalid_states_are_refused_like_the_numpy_model(tree: RobotModel) -> None:
    """Shapes and finiteness are checked by the compiled entries, with the NumPy model's messages."""
    m, n = tree, tree.dof
    z, z2 = np.zeros(n), np.zeros((3, n))
    cases = [
        (m.inverse_dynamics, inverse_dynamics, (np.zeros(n - 1), z, z)),
        (m.inverse_dynamics, inverse_dynamics, (z, np.full(n, np.nan), z)),
        (m.inverse_dynamics, inverse_dynamics, (z2, z, z2)),
        (m.inverse_dynamics, inverse_dynamics, (np.zeros((2, 3, n)), z, z)),
        (m.regressor, regressor, (z2, z2, np.full((3, n), np.inf))),
        (m.inertia_matrix, inertia_matrix, (np.zeros((2, n + 1)),)),
        (m.gravity_torques, gravity_torques, ([np.nan] * n,)),
        (m.nonlinear_effects, nonlinear_effects, (z, np.zeros(2 * n))),
        (m.forward_dynamics, forward_dynamics, (z2, z2, np.zeros((4, n)))),
    ]
    for ours, numpy_f, args in cases:
        with pytest.raises(ValueError) as ref:
            numpy_f(m, *args)
        with pytest.raises(ValueError) as got:
            ours(*args)
        assert str(got.value) == str(ref.value), (ours.__name__, args)
    # other input types are converted like np.asarray(x, float) does
    assert _rel(m.inverse_dynamics(list(z), [1] * n, (0.5,) * n), inverse_dynamics(m, z, np.ones(n), np.full(n, 0.5))) < TOL
    assert _rel(m.gravity_torques(np.arange(n, dtype=np.float32)), gravity_torques(m, np.arange(n))) < 1e-6
    qs = np.asfortranarray(np.random.default_rng(3).normal(size=(5, n)))
    assert _rel(m.inertia_matrix(qs[:, :]), inertia_matrix(m, qs)) < TOL  # non-contiguous input
    a, b = m.inverse_dynamics(z, z, z), m.inverse_dynamics(z, z, z)
    assert a is not b and a.flags.writeable and a.flags.owndata  # fresh arrays, never shared buffers


@pytest.mark.parametrize(("chunk", "simd", "stack"), [(300, True, 1 << 17), (300, False, 0)])
def test_programs_split_into_parts_and_units(tree: RobotModel, monkeypatch, chunk: int, simd: bool, stack: int) -> None:
    """Large programs are cut into functions (values crossing them in a work array, on the stack or the
    heap) over several translation units, without the 4-lane version, at -O1: same numbers."""
    monkeypatch.setattr(codegen, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(codegen, "SIMD_MAX_CHARS", 1 << 30 if simd else 0)
    monkeypatch.setattr(codegen, "O1_MIN_CHARS", 1 << 30 if simd else 0)
    monkeypatch.setattr(codegen, "_STACK_BYTES", stack)
    units = codegen.module_sources("fd", {"fd": codegen.generate_program(tree, "fd")}, "x", units=3)
    assert len(units) == 4 and sum(u.count("RD_PART void") for u in units) > 10
    assert all(("rd-flags: -O1" in u) != simd and ("_4(" in u) == simd for u in units[1:])
    assert ("malloc(" in units[1]) == (stack == 0)
    o = PinocchioOracle(tree)
    rng = np.random.default_rng(11)
    q, qd, tau = random_states(rng, tree.dof, 9)
    be = GeneratedBackend(tree)
    assert _rel(be.forward_dynamics(q, qd, tau), o.fd(q, qd, tau)) < TOL
    assert _rel(be.forward_dynamics(q[4], qd[4], tau[4]), o.fd(q, qd, tau)[4]) < TOL
    assert _rel(be.inertia_matrix(q), o.inertia(q)) < TOL
    assert _rel(be.regressor(q, qd, tau), regressor(tree, q, qd, tau)) < TOL


def test_non_finite_accelerations_are_refused(tree: RobotModel) -> None:
    """The compiled direct dynamics never returns inf/NaN: overflowing states raise ValueError."""
    q = np.zeros(tree.dof)
    with pytest.raises(ValueError, match="non-finite"):
        tree.forward_dynamics(q, np.full(tree.dof, 1e200), q)
    with pytest.raises(ValueError, match="non-finite"):
        tree.forward_dynamics(np.zeros((5, tree.dof)), np.full((5, tree.dof), 1e200), np.zeros((5, tree.dof)))


# ------------------------------------------------------------------ the automatic engine
def test_default_engine_builds_in_the_background_and_never_blocks(monkeypatch, caplog, capfd) -> None:
    """Auto mode: below the threshold nothing is built; then a build runs in a background process while
    calls keep returning the NumPy model's answers at once; then the compiled program takes over.
    Progress goes to logging, nothing to stdout."""
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "3")
    gate, entered, timed_out = threading.Event(), threading.Event(), []
    real = codegen._build_in_worker

    def gated(*args, **kwargs):
        entered.set()
        timed_out.append(not gate.wait(60.0))
        return real(*args, **kwargs)

    monkeypatch.setattr(codegen, "_build_in_worker", gated)
    caplog.set_level(logging.DEBUG, logger="robot_dynamics.symbolic.codegen")
    m = _unique_planar(1)
    assert m.backend == "auto"
    q, qd, qdd = np.array([0.4, -0.3]), np.array([1.0, 0.5]), np.array([-0.2, 0.7])
    ref = inverse_dynamics(m, q, qd, qdd)
    for _ in range(2):
        assert _rel(m.inverse_dynamics(q, qd, qdd), ref) < 1e-12
    time.sleep(0.2)
    assert not entered.is_set() and not m._engine._state and m.engine["inverse_dynamics"] == "numpy"
    m.inverse_dynamics(q, qd, qdd)  # third call: the build starts
    assert entered.wait(30.0)
    for _ in range(5):  # the build is held at the gate: calls answer with the NumPy model
        assert _rel(m.inverse_dynamics(q, qd, qdd), ref) < 1e-12
    assert m.engine["inverse_dynamics"] == "building" and m.engine["regressor"] == "numpy"
    gate.set()
    _wait_compiled(m, "inverse_dynamics")
    assert timed_out == [False]  # no call waited for the gate
    assert m._engine.id is not m._engine._numpy["id"] and type(m._engine.id).__name__ == "builtin_function_or_method"
    assert _rel(m.inverse_dynamics(q, qd, qdd), ref) < 1e-12
    assert _rel(m.nonlinear_effects(q, qd), nonlinear_effects(m, q, qd)) < 1e-12  # same module
    assert m.engine["nonlinear_effects"] == "compiled" and m.engine["inertia_matrix"] == "numpy"
    messages = [r.getMessage() for r in caplog.records if r.name == "robot_dynamics.symbolic.codegen"]
    assert any("compiling" in s for s in messages) and any("ready" in s for s in messages)
    assert any("statements" in s for s in messages)  # progress of the build process, relayed
    assert capfd.readouterr().out == ""


def test_cache_hit_is_loaded_without_building(monkeypatch) -> None:
    """A model with a description compiled before (another object, same content) loads the entry."""
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "1")
    m = _unique_planar(2)
    assert m.compile("gravity_torques")["gravity_torques"] == "compiled"

    def no_build(*args, **kwargs):
        raise AssertionError("built although cached")

    monkeypatch.setattr(codegen, "_build_in_worker", no_build)
    monkeypatch.setattr(codegen, "generate_program", no_build)
    twin = RobotModel.from_dict(m.to_dict())
    assert twin is not m and twin.engine["gravity_torques"] == "numpy"
    q = np.array([0.1, 0.2])
    assert _rel(twin.gravity_torques(q), gravity_torques(m, q)) < 1e-12  # first call: NumPy; the lookup starts
    _wait_compiled(twin, "gravity_torques", timeout=30.0)
    assert _rel(twin.gravity_torques(q), gravity_torques(m, q)) < 1e-12


def test_isolated_compile_builds_in_a_child_process_and_keeps_the_gil_free(monkeypatch) -> None:
    """``compile(..., isolated=True)`` (what the controller uses when a model is swapped in while the arm moves):
    the program is generated and compiled in a child process (the in-process generator is made to fail, so only
    the child can have built it), this call waits, and a thread of this process ticking every millisecond keeps
    running meanwhile (its largest gap printed, not asserted: the machine is shared).  The result equals
    Pinocchio's RNEA."""
    def in_process(*args, **kwargs):
        raise AssertionError("generated in the calling process")

    monkeypatch.setattr(codegen, "generate_program", in_process)
    monkeypatch.setattr(codegen, "_build_kind", in_process)
    m = random_model(np.random.default_rng(77), n=4, tree=False, friction=True)  # a description no other test has
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    th = threading.Thread(target=tick)
    th.start()
    try:
        assert m.compile("inverse_dynamics", isolated=True) == {"inverse_dynamics": "compiled"}
    finally:
        stop.set()
        th.join()
    print(f"\nisolated build: {ticks[-1] - ticks[0]:.2f} s, largest gap of a 1 ms ticker {np.diff(ticks).max() * 1e3:.1f} ms")
    assert m.engine["inverse_dynamics"] == "compiled" and m.engine["inertia_matrix"] == "numpy"
    q, qd, qdd = random_states(np.random.default_rng(4), m.dof, 5)
    assert _rel(np.array([m.inverse_dynamics(*s) for s in zip(q, qd, qdd, strict=True)]),
                PinocchioOracle(m).id(q, qd, qdd)) < TOL


def test_numpy_mode_never_compiles(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ROBOT_DYNAMICS_ENGINE", "numpy")
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "0")
    monkeypatch.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path))
    m = _unique_planar(3)
    assert m.backend == "numpy"
    q = np.array([0.3, 0.1])
    for _ in range(30):
        assert _rel(m.inverse_dynamics(q, q, q), inverse_dynamics(m, q, q, q)) < 1e-12
        m.inertia_matrix(q)
    time.sleep(0.3)
    assert set(m.engine.values()) == {"numpy"} and not m._engine._state and not list(tmp_path.iterdir())
    assert m.compile("inverse_dynamics") == {"inverse_dynamics": "compiled"}  # an explicit request still compiles
    assert m.engine["inertia_matrix"] == "numpy"


def test_compiled_mode_is_synchronous(monkeypatch) -> None:
    """ROBOT_DYNAMICS_ENGINE=compiled: the first call already runs (and returns) the compiled program."""
    monkeypatch.setenv("ROBOT_DYNAMICS_ENGINE", "compiled")
    m = _unique_planar(5)
    assert m.backend == "compiled" and m.engine["inertia_matrix"] == "numpy"
    q = np.array([[0.3, -1.0], [2.0, 0.5]])
    a = m.inertia_matrix(q)
    assert m.engine["inertia_matrix"] == "compiled" and m.engine["inverse_dynamics"] == "numpy"
    assert _rel(a, inertia_matrix(m, q)) < 1e-12


def test_without_a_compiler_the_numpy_model_answers(monkeypatch) -> None:
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    monkeypatch.setenv("ROBOT_DYNAMICS_COMPILE_AFTER", "0")
    m = _unique_planar(6)
    q = np.array([0.3, 0.1])
    for _ in range(5):
        assert _rel(m.gravity_torques(q), gravity_torques(m, q)) < 1e-12
    assert m.compile("gravity_torques") == {"gravity_torques": "numpy"}
    assert m._engine._state["gravity"] == "unavailable"


def test_explicit_backends_still_work(tree: RobotModel) -> None:
    """set_backend("generated") (what the controller node calls), in C and in Python, "numpy", "auto"."""
    rng = np.random.default_rng(7)
    q, qd, qdd = random_states(rng, tree.dof, 5)
    m = tree.replace()  # same description: the generated backend finds the programs in the cache
    for lang in ("c", "python"):
        m.set_backend("generated", lang=lang)
        assert m.backend == "generated" and set(m.engine.values()) == {"generated"}
        assert _rel(m.inverse_dynamics(q, qd, qdd), inverse_dynamics(m, q, qd, qdd)) < TOL
        assert _rel(m.nonlinear_effects(q[0], qd[0]), nonlinear_effects(m, q[0], qd[0])) < TOL
        assert _rel(m.forward_dynamics(q, qd, qdd), forward_dynamics(m, q, qd, qdd)) < TOL
        assert _rel(m.gravity_torques(q), gravity_torques(m, q)) < TOL
    m.set_backend("numpy")
    assert m.backend == "numpy" and set(m.engine.values()) == {"numpy"}
    m.set_backend("auto")
    assert m.backend == "auto"
    with pytest.raises(ValueError, match="backend"):
        m.set_backend("fortran")


# ------------------------------------------------------------------ immutability: no stale program
def test_a_parameter_change_never_returns_stale_torques() -> None:
    """The model is immutable, so the program compiled from it can never disagree with it: every way of
    changing a parameter in place is refused, and a changed copy runs its own program."""
    base = rx90()
    rng = np.random.default_rng(9)
    q, qd, qdd = random_states(rng, 6, 4)
    passed = base.inertial.copy()
    m = RobotModel(joints=list(base.joints), base_link=base.base_link, tip_link=base.tip_link, name="rx90_immutable",
                   base_transform=base.base_transform, frames=dict(base.frames), inertial=passed, Ia=base.Ia,
                   Fc=base.Fc, Fv=base.Fv)  # fmt: skip
    assert m.compile("inverse_dynamics")["inverse_dynamics"] == "compiled"
    tau = m.inverse_dynamics(q, qd, qdd)
    assert _rel(tau, inverse_dynamics(base, q, qd, qdd)) < 1e-12
    passed[2, 9] += 10.0  # the caller's array is not the model's
    with pytest.raises(ValueError):
        m.inertial[2, 9] = 99.0
    with pytest.raises(ValueError):
        m.inertial.setflags(write=True)
    for name in ("Ia", "Fc", "Fv", "gravity", "base_transform", "sign", "alpha", "theta"):
        with pytest.raises(ValueError):
            getattr(m, name)[0] = 1.0
    with pytest.raises(ValueError):
        m.frames[m.tip_link][1][0, 3] = 1.0
    with pytest.raises(AttributeError, match="immutable.*with_standard_parameters"):
        m.inertial = passed
    with pytest.raises(AttributeError, match="immutable"):
        m.gravity = np.zeros(3)
    with pytest.raises(AttributeError, match="immutable"):
        del m.Fc
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.joints[2].d = 1.0
    with pytest.raises((TypeError, AttributeError)):
        m.joints[0] = m.joints[1]
    with pytest.raises(TypeError, match="read-only"):
        m.frames["extra"] = (1, np.eye(4))
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m)), copy.copy(m)):
        with pytest.raises(ValueError):
            other.inertial[2, 9] = 99.0
        with pytest.raises(AttributeError):
            other.Fv = np.zeros(6)
        assert _rel(other.inverse_dynamics(q, qd, qdd), tau) < 1e-12
    assert _rel(m.inverse_dynamics(q, qd, qdd), tau) == 0.0  # unchanged, bit for bit
    # a change is a new model with its own program
    p = m.standard_parameter_values.copy()
    p[13 * 2 + 9] += 10.0  # M3
    p[13 * 4 + 11] = 7.0  # Fc5
    changed = m.with_standard_parameters(p)
    assert changed.compile("inverse_dynamics")["inverse_dynamics"] == "compiled"
    ref = inverse_dynamics(changed, q, qd, qdd)
    assert _rel(changed.inverse_dynamics(q, qd, qdd), ref) < 1e-12 and _rel(ref, tau) > 1e-3
    g = m.replace(gravity=np.array([0.0, 3.0, -9.0]))
    assert g.compile("gravity_torques")["gravity_torques"] == "compiled"
    assert _rel(g.gravity_torques(q), gravity_torques(g, q)) < 1e-12 and _rel(g.gravity_torques(q), m.gravity_torques(q)) > 1e-3
    assert _rel(m.inverse_dynamics(q, qd, qdd), tau) == 0.0
    # the generated backend of a model does not follow its copies either
    m.set_backend("generated")
    moved = m.replace(joints=[dataclasses.replace(j, d=j.d + 0.1) if k == 2 else j for k, j in enumerate(m.joints)])
    assert moved.backend != "generated"
    assert _rel(moved.inverse_dynamics(q, qd, qdd), inverse_dynamics(moved, q, qd, qdd)) < 1e-12
    assert _rel(m.inverse_dynamics(q, qd, qdd), tau) < 1e-12


def test_an_explicit_backend_is_not_overridden_by_a_late_build() -> None:
    """``set_backend("numpy")`` while a background build is in flight: the build finishes (its program is
    kept for later) but the NumPy model stays in use, and ``model.engine`` says so."""
    from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics as numpy_inverse_dynamics

    m = _unique_planar(4242)
    status = m.compile("inverse_dynamics", wait=False)
    assert status["inverse_dynamics"] == "building", status  # an empty cache: it must build
    m.set_backend("numpy")
    engine = m._engine
    assert engine._done["id"].wait(180.0)
    assert "id" in engine._modules  # the build did finish and load
    assert m.engine["inverse_dynamics"] == "numpy" and set(m.engine.values()) == {"numpy"}, m.engine
    assert getattr(engine.id, "__self__", None) is not engine._modules["id"]  # not the compiled entry
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-1, 1, (3, 2))
    assert np.array_equal(m.inverse_dynamics(q, qd, qdd), numpy_inverse_dynamics(m, q, qd, qdd))  # bit for bit
    # the latest explicit request wins: compile() after set_backend("numpy") puts the program in use
    assert m.compile("inverse_dynamics") == {"inverse_dynamics": "compiled"}
    assert getattr(m._engine.id, "__self__", None) is engine._modules["id"]
    np.testing.assert_allclose(m.inverse_dynamics(q, qd, qdd), numpy_inverse_dynamics(m, q, qd, qdd), rtol=1e-12,
                               atol=1e-12)
