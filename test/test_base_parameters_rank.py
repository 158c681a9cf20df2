"""Base-parameter count = numerical rank of a stacked random regressor (issue 14, item 5).

Oracle, independent of base_parameters.py: W from ``model.regressor`` at >= 30 random states
(its own random generator), columns in units of the robot's length L (J, Ia, Fc, Fv × L², MS × L),
rank = number of singular values above IDENTIFIABLE·σ_max (1e-9: issue 30, what no torque measurement can
separate — a right angle written 1.57079632679 leaves Ia_j and ZZR_j ~1e-12 apart).  Also: the base model
reproduces τ,
and Ia/Fc/Fv never enter a relation through a fitted (float) coefficient.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from example_robots import example_robot_data_dir, example_urdf

from robot_dynamics.dynamics.base_parameters import base_parameters
from robot_dynamics.model.robot_model import RobotModel

STATES = 40
IDENTIFIABLE = 1e-9  # relative to σ_max (issue 30's acceptance), written here, not imported from the method


def sample_states(model: RobotModel, seed: int, count: int = STATES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = model.dof
    q = rng.uniform(-math.pi, math.pi, (count, n))
    q[:, model.sigma == 1] /= math.pi
    return q, rng.uniform(-2.0, 2.0, (count, n)), rng.uniform(-2.0, 2.0, (count, n))


def oracle_singular_values(model: RobotModel, seed: int = 1234) -> tuple[np.ndarray, float]:
    """Singular values of the length-scaled stacked regressor and the rank threshold."""
    q, qd, qdd = sample_states(model, seed)
    w = model.regressor(q, qd, qdd).reshape(STATES * model.dof, 13 * model.dof)
    ell = float(np.abs(model.d).sum() + np.abs(model.r).sum()) or 1.0
    w = w * np.tile([ell**2] * 6 + [ell] * 3 + [1.0] + [ell**2] * 3, model.dof)
    sv = np.linalg.svd(w, compute_uv=False)
    return sv, IDENTIFIABLE * sv[0]


def oracle_rank(model: RobotModel) -> int:
    sv, thr = oracle_singular_values(model)
    return int(np.sum(sv > thr))


def check_base_model(model: RobotModel, rtol: float = 1e-9) -> None:
    bp = base_parameters(model)
    rank = oracle_rank(model)
    assert bp.count == rank, (bp.count, rank, bp.notes)
    q, qd, qdd = sample_states(model, 99, 20)
    tau = model.inverse_dynamics(q, qd, qdd)
    err = np.abs(bp.regressor(q, qd, qdd) @ bp.values - tau).max()
    assert err <= rtol * max(1.0, float(np.abs(tau).max())), err
    check_no_fitted_friction_or_rotor(bp, model)


def check_no_fitted_friction_or_rotor(bp, model: RobotModel) -> None:  # noqa: ANN001
    """Fc_j, Fv_j appear alone; Ia_j appears only with exact (non-float) coefficients, never
    together with a float coefficient (a numerically fitted grouping)."""
    names = model.standard_parameter_names
    for row, rel, name in zip(bp.matrix, bp.relations, bp.names, strict=True):
        used = [names[c] for c in np.flatnonzero(row)]
        fric = [u for u in used if u.startswith(("Fc", "Fv"))]
        if fric:
            assert used == fric == [name], (name, used)
        if any(u.startswith("Ia") for u in used) and len(used) > 1:
            assert not any(isinstance(a, sp.Float) for a in sp.preorder_traversal(rel)), (name, rel)
            assert name not in bp.numerical


# ----------------------------------------------------------------- example-robot-data chains
def test_xarm7_has_63_base_parameters() -> None:
    """xarm7 (rpy="1.5708": cos α2 = -3.7e-6) was 62 with Ia2 folded into ZZR1, XXR2, FcR1, FvR1."""
    model = RobotModel.from_urdf(str(example_robot_data_dir() / "xarm_description/urdf/xarm7.urdf"))
    assert abs(math.cos(model.joints[1].alpha)) > 1e-6  # kept as written, not snapped
    bp = base_parameters(model)
    assert bp.count == 63 == oracle_rank(model)
    assert bp.method == "closed-form" and not bp.numerical
    assert "Ia2" in bp.names
    assert model.base_parameters().count == 63  # through the RobotModel API too
    check_base_model(model)


@pytest.mark.parametrize(("name", "tip"), [("ur5", None), ("panda", "panda_hand_tcp"), ("panda", "panda_link8")])
def test_example_chains_count_equals_rank(name: str, tip: str | None) -> None:
    check_base_model(RobotModel.from_urdf(str(example_urdf(name)), tip_link=tip))


def test_converter_snaps_only_round_off() -> None:
    """UR5's rpy="1.570796325" leaves θ2 = -4.9e-12: a real value, kept (the model is the file's);
    exact zeros and right angles stay exact."""
    model = RobotModel.from_urdf(str(example_urdf("ur5")))
    assert model.joints[1].theta != 0.0 and abs(model.joints[1].theta) < 1e-11
    assert model.joints[1].alpha == -math.pi / 2 and model.joints[0].d == 0.0


# ----------------------------------------------------------------- the rank does not depend on the samples
@pytest.mark.parametrize("rel", ["icub_description/robots/icub.urdf", "centauro_description/urdf/centauro.urdf"])
def test_rank_does_not_depend_on_the_number_of_samples(rel: str) -> None:
    """Whole trees whose angles are ~1e-11 from kπ/2 (iCub, Centauro): their rotor-inertia columns
    differ from ZZR_j by ~1e-11, a few times the round-off threshold.  With numpy's ``max(N, p)·eps`` the
    threshold grows with the N stacked rows while σ_i/σ_max converge, so the rank fell from 304 to
    302 (iCub) and 351 to 349 (Centauro) between 32 and 96 samples; ``p·eps`` gives one round-off rank
    whatever the samples, and the count is the identifiable rank (1e-9 σ_max: those directions grouped),
    also the same for every number of samples."""
    from robot_dynamics.dynamics.base_parameters import (
        column_weights,
        gravity_reference,
        numerical_rank,
        stacked_regressor,
    )

    model = RobotModel.from_urdf(str(example_robot_data_dir() / rel))
    count = base_parameters(model).count
    ranks = {numerical_rank(stacked_regressor(model, samples=s, seed=seed), weights=column_weights(model),
                            reference=gravity_reference(model, s * model.dof))
             for s in (32, 48, 96) for seed in (7, 8)}
    assert len(ranks) == 1 and ranks.pop() > count, (ranks, count)  # one round-off rank, above the count
    ident = set()
    for s in (32, 48, 96):
        for seed in (7, 8):
            sv = np.linalg.svd(stacked_regressor(model, samples=s, seed=seed) * column_weights(model), compute_uv=False)
            ident.add(int(np.sum(sv > IDENTIFIABLE * sv[0])))
    assert ident == {count}, (ident, count)
    old_rule = {numerical_rank(w, tol=max(w.shape) * np.finfo(float).eps, weights=column_weights(model))
                for w in (stacked_regressor(model, samples=s, seed=7) for s in (32, 96))}
    assert len(old_rule) == 2  # the premise: max(N, p)·eps gives two ranks on the same robot
