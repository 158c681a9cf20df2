"""Kinematic trees (issue 14, item 1) through every consumer of the MDH rows besides the NumPy core.

Trees in Khalil & Kleinfinger's notation: row j has its antecedent a(j) and the parameters γ_j, b_j,
^{a(j)}T_j = Rot(z, γ_j) Trans(z, b_j) Rot(x, α_j) Trans(x, d_j) Rot(z, θ_j) Trans(z, r_j).

Robots: the Panda's and Baxter's whole trees (example-robot-data URDFs, 9 and 19 joints) and a
synthetic 10-joint tree with general and special γ_j, nonzero b_j, prismatic joints and flipped axes,
numbered depth-first and also breadth-first (a(j) < j, but not pre-order: MuJoCo numbers differently).

Consumers: the generated backend (customized symbolic NE compiled to C, and its NumPy variant) for
the inverse dynamics, regressor, inertia matrix and gravity, built once in an empty cache; the
control laws' NE (the model's engine, on the generated scalar Python program); the MuJoCo plant of ``simulator.py``; the URDF
export (re-read with ``RobotModel.from_urdf``); the ROS message conversion; Lin's identification
(which must refuse trees).

Oracles: Pinocchio on the original URDF (``pin.buildModelFromXML``, whole model, joints mapped by
name) and on a Pinocchio model of the synthetic tree built here from the row definition above with
Pinocchio's own SE3 algebra; friction and rotor terms added by hand (001 eq. 7.61).  The NumPy
model (itself checked against Pinocchio here) is the reference of the breadth-first tree.
"""

from __future__ import annotations

import math
from dataclasses import replace

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_robot_data_dir
from pinocchio_from_mdh import random_inertial, random_rotation
from pinocchio_oracle import PinocchioURDF

from robot_dynamics import MDHJoint, RobotModel
from robot_dynamics.control import ComputedTorqueController
from robot_dynamics.dynamics.inverse_dynamics import regressor
from robot_dynamics.identification.lin import inertia_constants, lin_identify, varying_parts
from robot_dynamics.model.urdf_export import model_to_urdf
from robot_dynamics.sim.simulator import MujocoArm, model_to_mjcf
from robot_dynamics.symbolic import codegen
from robot_dynamics.symbolic.codegen import GeneratedBackend
from robot_dynamics.symbolic.customized_model import customized_inverse_dynamics

TOL = 1e-10
URDFS = {"panda": "panda_description/urdf/panda.urdf", "baxter": "baxter_description/urdf/baxter.urdf"}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


# ------------------------------------------------------------------ models
# depth-first tree: 1-2-3, 2-4-5, 1-6-7, 0-8-9, 8-10; (γ, b) general, special (±π/2, π) and zero
_ANT = [0, 1, 2, 2, 4, 1, 6, 0, 8, 8]
_GAMMA = [0.0, 0.0, 0.0, 0.7, 0.0, math.pi / 2, 0.0, -2.1, math.pi, -0.4]
_B = [0.0, 0.0, 0.0, 0.15, -0.2, 0.0, 0.25, 0.3, 0.0, -0.12]
_SIGMA = [0, 0, 1, 0, 0, 0, 1, 0, 0, 1]
_BFS = [1, 8, 2, 6, 9, 10, 3, 4, 7, 5]  # breadth-first numbering of the same joints


def synthetic_tree(seed: int = 3) -> RobotModel:
    rng = np.random.default_rng(seed)
    n = len(_ANT)
    joints = [
        MDHJoint(
            f"j{j}", _ANT[j - 1], _SIGMA[j - 1],
            alpha=float(rng.choice([0.0, math.pi / 2, -math.pi / 2, rng.uniform(-3.0, 3.0)])),
            d=float(rng.uniform(-0.4, 0.4)), theta=float(rng.uniform(-3.0, 3.0)), r=float(rng.uniform(-0.4, 0.4)),
            sign=-1.0 if j in (2, 7, 9) else 1.0, link=f"l{j}", gamma=_GAMMA[j - 1], b=_B[j - 1],
        )
        for j in range(1, n + 1)
    ]  # fmt: skip
    base = np.eye(4)
    base[:3, :3], base[:3, 3] = random_rotation(rng), rng.uniform(-0.3, 0.3, 3)
    frames = {"base": (0, np.eye(4)), **{f"l{j}": (j, np.eye(4)) for j in range(1, n + 1)}}
    return RobotModel(
        joints=joints, base_link="base", tip_link=f"l{n}", name="tree", base_transform=base, frames=frames,
        inertial=np.array([random_inertial(rng) for _ in range(n)]), gravity=rng.normal(size=3) * 5.0,
        Ia=rng.uniform(0.0, 0.3, n), Fc=rng.uniform(0.0, 1.0, n), Fv=rng.uniform(0.0, 0.5, n),
    )  # fmt: skip


def renumbered(model: RobotModel, order: list[int]) -> RobotModel:
    """The same robot with joint order[k] numbered k + 1 (a(j) < j must still hold)."""
    new = {old: k + 1 for k, old in enumerate(order)}
    new[0] = 0
    joints = []
    for old in order:
        jt = model.joints[old - 1]
        joints.append(replace(jt, antecedent=new[jt.antecedent]))
    idx = [o - 1 for o in order]
    frames = {k: (new[j], t) for k, (j, t) in model.frames.items()}
    return RobotModel(
        joints=joints, base_link=model.base_link, tip_link=model.tip_link, name=model.name + "_bfs",
        base_transform=model.base_transform, frames=frames, inertial=model.inertial[idx], gravity=model.gravity,
        Ia=model.Ia[idx], Fc=model.Fc[idx], Fv=model.Fv[idx],
    )  # fmt: skip


def pre_order(antecedent: np.ndarray) -> bool:
    """Depth-first pre-order: the antecedent of joint j + 1 is joint j or one of its ancestors (0 = base)."""
    ant = [0, *map(int, antecedent)]
    for j in range(1, len(ant) - 1):
        line = [j]
        while line[-1]:
            line.append(ant[line[-1]])
        if ant[j + 1] not in line:
            return False
    return True


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def pinocchio_tree(model: RobotModel) -> pin.Model:
    """Pinocchio model of a depth-first MDH tree, each placement composed by Pinocchio's SE3 product."""
    pm = pin.Model()
    for j, jt in enumerate(model.joints, start=1):
        placement = (
            pin.SE3(_rot("z", jt.gamma), np.array([0.0, 0.0, jt.b]))
            * pin.SE3(_rot("x", jt.alpha), np.array([jt.d, 0.0, 0.0]))
            * pin.SE3(_rot("z", jt.theta), np.array([0.0, 0.0, jt.r]))
        )
        if jt.antecedent == 0:
            placement = pin.SE3(model.base_transform[:3, :3].copy(), model.base_transform[:3, 3].copy()) * placement
        axis = np.array([0.0, 0.0, jt.sign])
        jm = pin.JointModelPrismaticUnaligned(axis) if jt.sigma == 1 else pin.JointModelRevoluteUnaligned(axis)
        jid = pm.addJoint(jt.antecedent, jm, placement, jt.name)
        xx, xy, xz, yy, yz, zz, mx, my, mz, m = model.inertial[j - 1]
        c = np.array([mx, my, mz]) / m
        j_o = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        pm.appendBodyToJoint(jid, pin.Inertia(m, c, j_o - m * (c @ c * np.eye(3) - np.outer(c, c))), pin.SE3.Identity())
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    return pm


class Oracle:
    """Pinocchio's ID, A(q) (+ rotor inertias), Q(q) in the model's joint order (friction added by hand)."""

    def __init__(self, model: RobotModel, urdf: str | None) -> None:
        self.model = model
        if urdf is None:
            self.pm = pinocchio_tree(model)
            self.q_of = lambda q: q
            self.idx = list(range(model.dof))
        else:
            o = PinocchioURDF(example_robot_data_dir() / urdf)
            self.pm = o.model
            self.q_of = lambda q: o.q_vector(model.joint_names, q)
            self.idx = [o.v_index(nm) for nm in model.joint_names]
        assert self.pm.nv == model.dof
        self.pd = self.pm.createData()

    def _v(self, x: np.ndarray) -> np.ndarray:
        v = np.zeros(self.pm.nv)
        v[self.idx] = x
        return v

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        m = self.model
        out = [pin.rnea(self.pm, self.pd, self.q_of(a), self._v(b), self._v(c))[self.idx] for a, b, c in zip(q, qd, qdd, strict=True)]
        return np.array(out) + m.Fc * np.sign(qd) + m.Fv * qd + m.Ia * qdd

    def inertia_matrix(self, q: np.ndarray) -> np.ndarray:
        out = []
        for x in q:
            a = pin.crba(self.pm, self.pd, self.q_of(x)).copy()
            a = np.triu(a) + np.triu(a, 1).T
            out.append(a[np.ix_(self.idx, self.idx)] + np.diag(self.model.Ia))
        return np.array(out)

    def gravity(self, q: np.ndarray) -> np.ndarray:
        return np.array([pin.computeGeneralizedGravity(self.pm, self.pd, self.q_of(x))[self.idx] for x in q])


def _states(model: RobotModel, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions inside finite limits (else in [-π, π]), velocities and accelerations in [-2, 2]."""
    lo, hi = model.limits["lower"], model.limits["upper"]
    lo = np.where(np.isfinite(lo), lo, -math.pi)
    hi = np.where(np.isfinite(hi), hi, math.pi)
    q = lo + (hi - lo) * rng.random((count, model.dof))
    return q, rng.uniform(-2.0, 2.0, (count, model.dof)), rng.uniform(-2.0, 2.0, (count, model.dof))


@pytest.fixture(scope="module")
def cold_cache(tmp_path_factory: pytest.TempPathFactory):
    """An empty codegen cache for the module: code that only works warm would pass unnoticed otherwise."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("codegen_cache")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def robots() -> dict[str, tuple[RobotModel, str | None]]:
    out: dict[str, tuple[RobotModel, str | None]] = {
        k: (RobotModel.from_urdf(str(example_robot_data_dir() / f)), f) for k, f in URDFS.items()
    }
    out["synthetic"] = (synthetic_tree(), None)
    return out


def test_robots_are_trees_of_the_expected_size(robots) -> None:
    """The whole trees: Panda 7 + 2 fingers, Baxter 19 joints (head, 2 × 7 arm joints, 4 fingers)."""
    assert robots["panda"][0].dof == 9 and robots["baxter"][0].dof == 19 and robots["synthetic"][0].dof == 10
    for name, (m, _) in robots.items():
        assert m.is_tree and np.any(m.antecedent != np.arange(m.dof)), name
    assert np.any(robots["baxter"][0].gamma != 0.0)  # Baxter's arms hang off the torso at ±45°
    syn = robots["synthetic"][0]
    assert np.count_nonzero(syn.gamma) == 5 and np.count_nonzero(syn.b) == 5


def test_numpy_model_equals_pinocchio(robots) -> None:
    """The reference of the other tests, checked first (the core already handles trees)."""
    rng = np.random.default_rng(1)
    for name, (m, urdf) in robots.items():
        o = Oracle(m, urdf)
        q, qd, qdd = _states(m, rng, 20)
        assert _rel(m.inverse_dynamics(q, qd, qdd), o.inverse_dynamics(q, qd, qdd)) < TOL, name
        assert _rel(m.inertia_matrix(q), o.inertia_matrix(q)) < TOL, name


# ------------------------------------------------------------------ generated code
def test_gamma_b_terms_only_where_nonzero() -> None:
    """CGj/SGj only for a general γ_j (±π/2, π give exact 0/±1); Bj exactly for the b_j ≠ 0 that change
    the torques (a b_j along an axis parallel to all the axes before it has no effect and is eliminated,
    as a NumPy finite difference confirms); rows with γ = b = 0 contribute none of them."""
    m = synthetic_tree()
    cm = customized_inverse_dynamics(m, parameters="standard", simplified=False)
    names = set(cm.values) | {s.name for s in cm.statements}
    general = {j for j in range(1, m.dof + 1) if m.gamma[j - 1] != 0.0 and abs(math.sin(2.0 * m.gamma[j - 1])) > 1e-9}
    assert general == {4, 8, 10}
    assert {j for j in range(1, m.dof + 1) if f"CG{j}" in names} == general
    assert {j for j in range(1, m.dof + 1) if f"SG{j}" in names} == general
    rng = np.random.default_rng(4)
    q, qd, qdd = _states(m, rng, 5)
    tau = m.inverse_dynamics(q, qd, qdd)
    matters = set()
    for j in range(1, m.dof + 1):
        moved = RobotModel(
            joints=[replace(jt, b=jt.b + 1e-3) if k == j else jt for k, jt in enumerate(m.joints, start=1)],
            base_link=m.base_link, tip_link=m.tip_link, frames=m.frames, inertial=m.inertial, gravity=m.gravity,
            base_transform=m.base_transform, Ia=m.Ia, Fc=m.Fc, Fv=m.Fv,
        )  # fmt: skip
        if _rel(moved.inverse_dynamics(q, qd, qdd), tau) > 1e-9:
            matters.add(j)
    assert matters == {5, 7}  # b_4, b_8, b_10 sit on axes parallel to every axis before them
    assert {j for j in range(1, m.dof + 1) if f"B{j}" in cm.values} == matters
    # the same robot with γ = b = 0 everywhere: no tree-row symbol at all
    flat = RobotModel(
        joints=[replace(jt, gamma=0.0, b=0.0) for jt in m.joints],
        base_link=m.base_link, tip_link=m.tip_link, frames=m.frames, inertial=m.inertial, gravity=m.gravity,
    )  # fmt: skip
    flat_cm = customized_inverse_dynamics(flat, parameters="standard", simplified=False)
    assert not [k for k in flat_cm.values if k[:2] in ("CG", "SG") or (k[0] == "B" and k[1:].isdigit())]


@pytest.mark.parametrize("name", ["synthetic", "panda", "baxter"])
def test_generated_backend_equals_numpy_and_pinocchio(robots, cold_cache, name: str) -> None:
    """C backend (built in an empty cache): ID (batch with a SIMD tail, single state), regressor
    (elementwise vs NumPy, and W p vs Pinocchio), A(q), Q(q), all ≤ 1e-10 relative."""
    m, urdf = robots[name]
    o = Oracle(m, urdf)
    rng = np.random.default_rng(7)
    q, qd, qdd = _states(m, rng, 11)  # 2 SIMD groups of 4 + a tail of 3
    tau_ref = o.inverse_dynamics(q, qd, qdd)
    a_ref, g_ref = o.inertia_matrix(q), o.gravity(q)
    w_ref = regressor(m, q, qd, qdd)  # the NumPy regressor, whatever engine the model runs
    m.set_backend("generated")
    try:
        tau = m.inverse_dynamics(q, qd, qdd)
        assert _rel(tau, tau_ref) < TOL
        assert _rel(m.inverse_dynamics(q[0], qd[0], qdd[0]), tau_ref[0]) < TOL
        w = m.regressor(q, qd, qdd)
        assert w.shape == (11, m.dof, 13 * m.dof)
        assert _rel(w, w_ref) < TOL
        assert _rel(np.einsum("bjk,k->bj", w, m.standard_parameter_values), tau_ref) < TOL
        assert _rel(m.inertia_matrix(q), a_ref) < TOL
        assert _rel(m.inertia_matrix(q[3]), a_ref[3]) < TOL
        assert _rel(m.gravity_torques(q), g_ref) < TOL
    finally:
        m.set_backend("numpy")


def test_generated_variants_on_a_tree_numbered_breadth_first(robots, cold_cache) -> None:
    """Standard/base parameters, C and NumPy code, wrench on link n, and a tree that is not numbered in
    pre-order, against the NumPy model and (by joint name) the depth-first numbering."""
    m = robots["synthetic"][0]
    bfs = renumbered(m, _BFS)
    bfs.set_backend("numpy")  # the reference of the generated variants below: the NumPy model
    assert np.all(bfs.antecedent < np.arange(1, bfs.dof + 1)) and not pre_order(bfs.antecedent)
    assert pre_order(m.antecedent)
    perm = [bfs.joint_names.index(nm) for nm in m.joint_names]  # bfs column of each depth-first joint
    rng = np.random.default_rng(8)
    q, qd, qdd = _states(m, rng, 9)
    tau_df = m.inverse_dynamics(q, qd, qdd)
    qb, qdb, qddb = (np.empty_like(x) for x in (q, qd, qdd))
    qb[:, perm], qdb[:, perm], qddb[:, perm] = q, qd, qdd
    tau_bfs = bfs.inverse_dynamics(qb, qdb, qddb)
    assert _rel(tau_bfs[:, perm], tau_df) < 1e-12
    wrench = rng.normal(size=6)
    tip = {bfs.joints[-1].link: wrench}
    tau_w = bfs.inverse_dynamics(qb, qdb, qddb, f_ext=tip)
    assert _rel(tau_w, tau_bfs) > 1e-3  # the wrench matters
    for lang in ("c", "python"):
        for parameters, simplified in (("base", True), ("standard", False)):
            be = GeneratedBackend(bfs, lang=lang, parameters=parameters, simplified=simplified)
            assert _rel(be.inverse_dynamics(qb, qdb, qddb), tau_bfs) < TOL, (lang, parameters)
            assert _rel(be.inverse_dynamics(qb, qdb, qddb, f_ext=tip), tau_w) < TOL, (lang, parameters)
            assert _rel(be.gravity_torques(qb), bfs.gravity_torques(qb)) < TOL, (lang, parameters)
            assert _rel(be.inertia_matrix(qb), bfs.inertia_matrix(qb)) < TOL, (lang, parameters)
        assert _rel(be.regressor(qb, qdb, qddb), bfs.regressor(qb, qdb, qddb)) < TOL, lang


# ------------------------------------------------------------------ control loop NE
@pytest.mark.parametrize("name", ["synthetic", "panda", "baxter"])
def test_control_law_dynamics_equal_pinocchio(robots, monkeypatch, name: str) -> None:
    """The laws' Newton–Euler (the model's engine, here without a C compiler: the generated scalar Python
    program) state by state vs Pinocchio; the synthetic tree also numbered breadth-first."""
    m, urdf = robots[name]
    ref_model = Oracle(m, urdf)
    rng = np.random.default_rng(9)
    q, qd, qdd = _states(m, rng, 10)
    ref = ref_model.inverse_dynamics(q, qd, qdd)
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    variants = [(m.replace(), list(range(m.dof)))]
    if name == "synthetic":
        bfs = renumbered(m, _BFS)
        variants.append((bfs, [bfs.joint_names.index(nm) for nm in m.joint_names]))
    for model, perm in variants:
        assert model.compile("inverse_dynamics") == {"inverse_dynamics": "python"}
        ctrl = ComputedTorqueController(model, 1.0, 1.0)
        for k in range(len(q)):
            qb, qdb, qddb = (np.empty(m.dof) for _ in range(3))
            qb[perm], qdb[perm], qddb[perm] = q[k], qd[k], qdd[k]
            assert _rel(ctrl.inverse_dynamics(qb, qdb, qddb)[perm], ref[k]) < TOL, (model.name, k)


# ------------------------------------------------------------------ MuJoCo plant
@pytest.mark.parametrize("name", ["synthetic", "panda", "baxter"])
def test_mujoco_plant_equals_pinocchio(robots, name: str) -> None:
    """mj_inverse (+ Fc sign q̇), M(q) by mj_fullM and qfrc_bias + M q̈ vs Pinocchio, bodies nested by a(j)."""
    m, urdf = robots[name]
    o = Oracle(m, urdf)
    arm = MujocoArm(m)
    # body j sits in body a(j): MuJoCo's parent of each joint's body is the body of the antecedent's joint
    body_of = {m.joint_names[k]: int(arm.mj_model.jnt_bodyid[k]) for k in range(m.dof)}
    for jt in m.joints:
        parent = int(arm.mj_model.body_parentid[body_of[jt.name]])
        assert parent == (body_of[m.joints[jt.antecedent - 1].name] if jt.antecedent else 1), jt.name
    rng = np.random.default_rng(10)
    q, qd, qdd = _states(m, rng, 10)
    tau_ref = o.inverse_dynamics(q, qd, qdd)
    a_ref = o.inertia_matrix(q)
    for k in range(len(q)):
        assert _rel(arm.inverse_dynamics(q[k], qd[k], qdd[k]), tau_ref[k]) < TOL
        a = arm.mass_matrix(q[k])
        assert _rel(a, a_ref[k]) < TOL
        bias = arm.bias_forces(q[k], qd[k]) + m.Fv * qd[k] + m.Fc * np.sign(qd[k])
        assert _rel(bias + a @ qdd[k], tau_ref[k]) < TOL


def test_mujoco_plant_of_a_tree_not_numbered_in_pre_order() -> None:
    """MuJoCo numbers joints depth-first; the plant's vectors stay in the model's order (by name)."""
    bfs = renumbered(synthetic_tree(), _BFS)
    arm = MujocoArm(bfs)
    mj_names = [arm.mj_model.joint(k).name for k in range(bfs.dof)]
    assert mj_names != bfs.joint_names and sorted(mj_names) == sorted(bfs.joint_names)
    rng = np.random.default_rng(11)
    q, qd, qdd = _states(bfs, rng, 6)
    tau = bfs.inverse_dynamics(q, qd, qdd)
    for k in range(len(q)):
        assert _rel(arm.inverse_dynamics(q[k], qd[k], qdd[k]), tau[k]) < TOL
        assert _rel(arm.mass_matrix(q[k]), bfs.inertia_matrix(q[k])) < TOL
        assert _rel(arm.bias_forces(q[k], qd[k]), bfs.inverse_dynamics(q[k], qd[k], 0 * qd[k])
                    - bfs.Fv * qd[k] - bfs.Fc * np.sign(qd[k])) < TOL  # fmt: skip
    arm.reset(q[0], qd[0])
    st = arm.state(noisy=False)
    assert np.array_equal(st.q, q[0]) and np.array_equal(st.qd, qd[0])
    # held by its own gravity torques (actuators in model order): it stays where it is
    arm.reset(q[1])
    tau_hold = arm.holding_effort()
    assert _rel(tau_hold, bfs.gravity_torques(q[1])) < TOL
    arm.step(tau_hold, n_steps=50)
    st = arm.state(noisy=False)
    assert np.abs(st.q - q[1]).max() < 1e-9 and np.abs(st.qd).max() < 1e-8
    assert _rel(st.effort, tau_hold) < 1e-12


def test_mjcf_places_gamma_b_rows() -> None:
    """The body placement of a γ/b row is Rot(z, γ) Trans(z, b) Rot(x, α) Trans(x, d) at θ, r."""
    m = synthetic_tree()
    arm = MujocoArm(m)
    j = 8  # γ = -2.1, b = 0.3, antecedent 0
    jt = m.joints[j - 1]
    body = int(arm.mj_model.jnt_bodyid[m.joint_names.index(jt.name)])
    expect = (pin.SE3(_rot("z", jt.gamma), np.array([0.0, 0.0, jt.b]))
              * pin.SE3(_rot("x", jt.alpha), np.array([jt.d, 0.0, 0.0]))
              * pin.SE3(_rot("z", jt.theta), np.array([0.0, 0.0, jt.r])))  # fmt: skip
    assert np.allclose(arm.mj_model.body_pos[body], expect.translation, atol=1e-15, rtol=0)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, arm.mj_model.body_quat[body])
    assert np.allclose(rot.reshape(3, 3), expect.rotation, atol=1e-15, rtol=0)
    assert 'name="j8"' in model_to_mjcf(m)


# ------------------------------------------------------------------ URDF export
@pytest.mark.parametrize("name", ["synthetic", "panda", "baxter"])
def test_urdf_export_round_trip(robots, name: str) -> None:
    """model -> URDF -> RobotModel.from_urdf: the same tree (joints matched by name) and dynamics to 1e-12.
    The URDF has no gravity or rotor inertia: those two are carried over by hand."""
    m = robots[name][0]
    back = RobotModel.from_urdf(model_to_urdf(m))
    assert back.dof == m.dof and sorted(back.joint_names) == sorted(m.joint_names) and back.is_tree
    perm = [back.joint_names.index(nm) for nm in m.joint_names]
    parent = {jt.name: (m.joints[jt.antecedent - 1].name if jt.antecedent else None) for jt in m.joints}
    parent_back = {jt.name: (back.joints[jt.antecedent - 1].name if jt.antecedent else None) for jt in back.joints}
    assert parent_back == parent
    assert np.array_equal(back.sigma[perm], m.sigma)
    assert np.allclose(back.Fc[perm], m.Fc, rtol=1e-15, atol=0) and np.allclose(back.Fv[perm], m.Fv, rtol=1e-15, atol=0)
    ia = back.Ia.copy()
    ia[perm] = m.Ia
    back = back.replace(gravity=m.gravity, Ia=ia)
    rng = np.random.default_rng(12)
    q, qd, qdd = _states(m, rng, 20)
    qb, qdb, qddb = (np.empty_like(x) for x in (q, qd, qdd))
    qb[:, perm], qdb[:, perm], qddb[:, perm] = q, qd, qdd
    assert _rel(back.inverse_dynamics(qb, qdb, qddb)[:, perm], m.inverse_dynamics(q, qd, qdd)) < 1e-12
    a = back.inertia_matrix(qb)[:, perm][:, :, perm]
    assert _rel(a, m.inertia_matrix(q)) < 1e-12


# ------------------------------------------------------------------ ROS message, Lin
def test_model_to_msg_carries_tree_rows() -> None:
    pytest.importorskip("robot_dynamics_interfaces.msg")
    from robot_dynamics.ros.conversions import model_to_msg

    m = synthetic_tree()
    msg = model_to_msg(m)
    assert len(msg.joints) == m.dof
    for jt, row in zip(m.joints, msg.joints, strict=True):
        assert (row.name, row.antecedent, row.sigma) == (jt.name, jt.antecedent, jt.sigma)
        assert (row.gamma, row.b, row.alpha, row.d, row.theta, row.r) == (jt.gamma, jt.b, jt.alpha, jt.d, jt.theta, jt.r)
    assert [row.gamma for row in msg.joints] == _GAMMA and [row.b for row in msg.joints] == _B


def test_lin_refuses_trees_and_tree_rows(robots) -> None:
    """Lin's composite bodies are links i..n of a serial chain: a tree, or a chain whose rows have γ or b,
    is refused with the reason and the joints named."""
    panda = robots["panda"][0]
    with pytest.raises(ValueError, match=r"serial chain.*panda_finger_joint2 \(a\(9\) = 7\)"):
        inertia_constants(panda)
    with pytest.raises(ValueError, match="kinematic tree"):
        lin_identify(panda, np.zeros(panda.dof))
    chain = RobotModel.from_urdf(str(example_robot_data_dir() / URDFS["panda"]), tip_link="panda_link8")
    inertia_constants(chain)  # a chain is accepted
    rows = [replace(jt, gamma=0.3 if j == 3 else 0.0, b=0.05 if j == 5 else 0.0)
            for j, jt in enumerate(chain.joints, start=1)]  # fmt: skip
    placed = RobotModel(joints=rows, base_link=chain.base_link, tip_link=chain.tip_link, frames=chain.frames,
                        inertial=chain.inertial)  # fmt: skip
    assert np.array_equal(placed.antecedent, np.arange(placed.dof))
    with pytest.raises(ValueError, match=r"has tree rows: tree-row parameters gamma/b nonzero: panda_joint3 \(gamma = 0\.3, "
                                          r"b = 0\), panda_joint5 \(gamma = 0, b = 0\.05\)\. Convert the chain"):
        inertia_constants(placed)
    with pytest.raises(ValueError, match="gamma/b nonzero"):
        varying_parts(placed, inertia_constants(chain), np.zeros(placed.dof), 2)
