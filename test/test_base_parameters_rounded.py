"""Right angles written with a few digits (issue 30, first bullet): count = identifiability rank.

URDFs write π/2 as ``1.5708`` (3.7e-6 off) or ``1.57079632679`` (4.9e-12 off).  The closed form
treats those angles as general ones (exact for any value), so Ia_j and ZZR_j stay separate although
their columns can differ by ~1e-12 relative: not identifiable by any data.  The identifiability rank
(:data:`~robot_dynamics.dynamics.base_rank.IDENTIFIABLE_RTOL` = 1e-9 of σ_max, length-scaled
columns) groups them, Ia_j keeping an exact integer coefficient.

Oracle, independent of base_parameters.py / base_rank.py: Pinocchio's joint-torque regressor
(``pin.computeJointTorqueRegressor``) of fresh random states, plus the Ia (q̈_j), Fc (sign q̇_j) and
Fv (q̇_j) columns, columns scaled by the robot's length L (m × 1, mc × L, I, Ia, Fc, Fv × L²), rank =
singular values above 1e-9 σ_max.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pinocchio as pin
import pytest
import sympy as sp
from example_robots import example_robot_data_dir
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_inertial

from robot_dynamics.dynamics.base_parameters import BaseParameters, base_parameters
from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.robots import load_model

RTOL = 1e-9
BAND = 3.0  # singular values within this factor of the threshold are ambiguous (depend on the samples)


# ----------------------------------------------------------------- oracle
def fresh_states(model: RobotModel, seed: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = model.dof
    q = rng.uniform(-math.pi, math.pi, (count, n))
    q[:, model.sigma == 1] /= math.pi
    return q, rng.uniform(-2.0, 2.0, (count, n)), rng.uniform(-2.0, 2.0, (count, n))


def pinocchio_singular_values(model: RobotModel, seed: int = 4242, count: int = 40) -> tuple[np.ndarray, float]:
    """Singular values of the length-scaled Pinocchio regressor + Ia/Fc/Fv columns, and 1e-9 σ_max."""
    pm = pinocchio_model(model)
    data = pm.createData()
    n = model.dof
    ell = float(np.abs(model.d).sum() + np.abs(model.r).sum()) or 1.0
    scale = np.r_[np.tile([1.0, ell, ell, ell] + [ell**2] * 6, n), [ell**2] * (3 * n)]
    rows = []
    for q, qd, qdd in zip(*fresh_states(model, seed, count), strict=True):
        y = pin.computeJointTorqueRegressor(pm, data, q, qd, qdd)
        rows.append(np.hstack([y, np.diag(qdd), np.diag(np.sign(qd)), np.diag(qd)]))
    sv = np.linalg.svd(np.vstack(rows) * scale, compute_uv=False)
    return sv, RTOL * float(sv[0])


def check_count_equals_rank(model: RobotModel, bp: BaseParameters) -> int:
    """count == rank when no singular value is near the threshold; else count within the ambiguous band."""
    sv, thr = pinocchio_singular_values(model)
    rank = int(np.sum(sv > thr))
    if np.any((sv > thr / BAND) & (sv < thr * BAND)):
        assert int(np.sum(sv > thr * BAND)) <= bp.count <= int(np.sum(sv > thr / BAND)), (bp.count, rank, bp.notes)
    else:
        assert bp.count == rank, (bp.count, rank, bp.notes)
    return rank


def check_tau(model: RobotModel, bp: BaseParameters, rtol: float = 1e-9) -> None:
    q, qd, qdd = fresh_states(model, 99, 20)
    tau = model.inverse_dynamics(q, qd, qdd)
    err = float(np.abs(bp.regressor(q, qd, qdd) @ bp.values - tau).max()) / max(1.0, float(np.abs(tau).max()))
    assert err <= rtol, err


def check_rotor_and_friction(model: RobotModel, bp: BaseParameters) -> None:
    """Each Ia_j in exactly one relation, coefficient exactly 1 (a sympy Integer, never fitted); every
    coefficient grouped onto a relation holding an Ia is an integer; Fc_j, Fv_j alone."""
    names = model.standard_parameter_names
    rels = bp.relations
    for j in range(model.dof):
        ia = 13 * j + 10
        rows = np.flatnonzero(bp.matrix[:, ia])
        assert len(rows) == 1 and bp.matrix[rows[0], ia] == 1.0, (names[ia], rows)
        coeff = rels[rows[0]].coeff(sp.Symbol(names[ia], real=True))
        assert coeff == 1 and isinstance(coeff, sp.Integer), (names[ia], rels[rows[0]])
        for c in (13 * j + 11, 13 * j + 12):
            rows = np.flatnonzero(bp.matrix[:, c])
            assert len(rows) == 1 and list(np.flatnonzero(bp.matrix[rows[0]])) == [c], names[c]
    for name, rel in zip(bp.names, rels, strict=True):
        if name in bp.rank_grouped and name.startswith("Ia"):
            assert not any(isinstance(a, sp.Float) for a in sp.preorder_traversal(rel)), (name, rel)


def with_right_angles(model: RobotModel, value: float) -> RobotModel:
    """``model`` with every α = ±π/2 written as ±``value``."""
    joints = [dataclasses.replace(j, alpha=math.copysign(value, j.alpha)) if abs(abs(j.alpha) - math.pi / 2) < 1e-12
              else j for j in model.joints]
    return model.replace(joints=joints)


# ----------------------------------------------------------------- RX-90
def test_rx90_exact_geometry_unchanged() -> None:
    """Exact right angles: 52 (the seed-table count), closed form only, nothing regrouped."""
    model = load_model("rx90")
    bp = base_parameters(model)
    assert bp.count == 52 == check_count_equals_rank(model, bp)
    assert bp.method == "closed-form" and not bp.rank_grouped and not bp.numerical
    assert {"ZZR2", "ZZR1"} <= set(bp.names) and "Ia2" not in bp.names


def test_rx90_with_1_5708_keeps_identifiable_ia2() -> None:
    """1.5708 (3.7e-6 off): Ia2 and ZZR2 differ at first order (σ ≈ 2e-7 σ_max), identifiable: 53."""
    model = with_right_angles(load_model("rx90"), 1.5708)
    bp = base_parameters(model)
    assert bp.count == 53 == check_count_equals_rank(model, bp)
    assert "Ia2" in bp.names and not bp.rank_grouped
    check_tau(model, bp)
    check_rotor_and_friction(model, bp)


def test_rx90_with_1_57079632679_groups_ia2_with_zzr2() -> None:
    """1.57079632679 (4.9e-12 off): was 53 for a rank of 52 (identification: cond 7.5e12);
    now IaR2 = Ia2 + ZZ2 + d3² (M3 + … + M6), the relation of the exact geometry, from the rank decision."""
    model = with_right_angles(load_model("rx90"), 1.57079632679)
    assert model.joints[1].alpha != math.pi / 2
    bp = base_parameters(model)
    assert bp.count == 52 == check_count_equals_rank(model, bp)
    assert bp.rank_grouped == ["IaR2"] and bp.method == "closed-form + identifiability rank"
    assert not {"Ia2", "ZZR2"} & set(bp.names)
    s = {k: sp.Symbol(k, real=True) for k in ("Ia2", "ZZ2", "M3", "M6", "d3")}
    rel = sp.expand(bp.relations_dict["IaR2"])
    assert rel.coeff(s["Ia2"]) == 1 and rel.coeff(s["ZZ2"]) == 1 and rel.coeff(s["M6"]) == s["d3"] ** 2
    assert any("identifiability rank" in note for note in bp.notes)
    assert bp.to_dict()["parameters"][bp.names.index("IaR2")]["rank_grouped"] is True
    check_tau(model, bp)
    check_rotor_and_friction(model, bp)


# ----------------------------------------------------------------- property: any perturbation size
def small_arm(deltas: tuple[float, float, float]) -> RobotModel:
    """Vertical joint 1, α2 = π/2 + δ1, α3 = 0, α4 = -π/2 + δ2, α5 = π/2 + δ3; gravity along -z."""
    rng = np.random.default_rng(17)
    joints = [MDHJoint("j1", 0, 0, 0.0, 0.0, 0.0, 0.3),
              MDHJoint("j2", 1, 0, math.pi / 2 + deltas[0], 0.05, 0.2, 0.0),
              MDHJoint("j3", 2, 0, 0.0, 0.4, -0.4, 0.0),
              MDHJoint("j4", 3, 0, -math.pi / 2 + deltas[1], 0.03, 0.0, 0.35),
              MDHJoint("j5", 4, 0, math.pi / 2 + deltas[2], 0.0, 0.0, 0.0)]
    n = len(joints)
    return RobotModel(joints=joints, inertial=np.array([random_inertial(rng) for _ in range(n)]),
                      Ia=rng.uniform(0.1, 1, n), Fc=rng.uniform(0.1, 1, n), Fv=rng.uniform(0.1, 1, n),
                      gravity=np.array([0.0, 0.0, -9.81]))


@settings(max_examples=25, deadline=None)
@given(st.floats(-12.0, -2.0), st.tuples(*[st.sampled_from([-1.0, 0.0, 1.0])] * 3))
def test_perturbed_right_angles_count_equals_rank(u: float, signs: tuple[float, float, float]) -> None:
    """α off kπ/2 by ±10^u (u in [-12, -2]): count = Pinocchio rank, Ia coefficients exact integers,
    τ reproduced to the threshold's order."""
    model = small_arm(tuple(s * 10.0**u for s in signs))
    bp = base_parameters(model)
    check_count_equals_rank(model, bp)
    check_rotor_and_friction(model, bp)
    check_tau(model, bp, rtol=1e-7)


def test_small_arm_exact_vs_rounded() -> None:
    """Exact: the closed form alone; 1e-11 off: same count (regrouped by the rank); 1e-3 off: more."""
    exact, tiny, large = (base_parameters(small_arm((d, -d, d))) for d in (0.0, 1e-11, 1e-3))
    assert exact.method == "closed-form" and not exact.rank_grouped
    assert tiny.count == exact.count < large.count
    assert tiny.rank_grouped and "identifiability rank" in tiny.method


# ----------------------------------------------------------------- example-robot-data
@pytest.mark.parametrize(("rel", "before", "after"), [
    ("so_arm_description/urdf/so101.urdf", 55, 54),
    ("kinova_description/robots/kinova.urdf", 55, 52),
])
def test_example_robots_count_equals_rank(rel: str, before: int, after: int) -> None:
    """so101, kinova: the closed form gave ``before`` for a 1e-9 rank of ``after``."""
    model = RobotModel.from_urdf(str(example_robot_data_dir() / rel))
    bp = base_parameters(model)
    assert bp.count == after == check_count_equals_rank(model, bp)
    assert bp.count + len([n for n in bp.notes if "depends on" in n or "no effect" in n]) == before
    assert bp.rank_grouped
    check_tau(model, bp)
    check_rotor_and_friction(model, bp)


# ----------------------------------------------------------------- identification message
def test_identification_names_the_null_direction() -> None:
    """With the round-off rank only (the behaviour before issue 30), the fit is rank deficient: the error
    names ZZR2 and Ia2 as inseparable by any data.  With the identifiability rank, the same data fit."""
    from robot_dynamics.identification.estimation import estimate_from_matrix

    model = with_right_angles(load_model("rx90"), 1.57079632679)
    q, qd, qdd = fresh_states(model, 5, 200)
    tau = model.inverse_dynamics(q, qd, qdd)
    old = base_parameters(model, identifiable_rtol=None)
    assert old.count == 53 and {"ZZR2", "Ia2"} <= set(old.names)
    with pytest.raises(ValueError, match="rank deficient") as err:
        estimate_from_matrix(model, old, old.regressor(q, qd, qdd), tau, method="ols")
    msg = str(err.value)
    assert "ZZR2 and Ia2 cannot be separated by any data" in msg or "Ia2 and ZZR2 cannot be separated by any data" in msg
    assert "trajectory" not in msg
    new = base_parameters(model)
    res = estimate_from_matrix(model, new, new.regressor(q, qd, qdd), tau, method="ols")
    assert np.allclose(res.values, new.values, rtol=1e-6, atol=1e-8)


def test_identification_blames_the_trajectory_when_the_model_is_identifiable() -> None:
    """Joint 6 never moves: the parameters it would excite are named, and the trajectory blamed."""
    from robot_dynamics.identification.estimation import estimate_from_matrix

    model = load_model("rx90")
    bp = base_parameters(model)
    q, qd, qdd = fresh_states(model, 6, 200)
    q[:, 5], qd[:, 5], qdd[:, 5] = 0.3, 0.0, 0.0
    with pytest.raises(ValueError, match="rank deficient") as err:
        estimate_from_matrix(model, bp, bp.regressor(q, qd, qdd), model.inverse_dynamics(q, qd, qdd), method="ols")
    msg = str(err.value)
    assert "the trajectory does not excite them" in msg and "any data" not in msg
    assert "Fc6" in msg or "Fv6" in msg or "Ia6" in msg, msg
