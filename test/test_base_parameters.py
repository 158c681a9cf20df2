"""Base (minimum) parameters: closed form of 000 vs seed counts/relations, the numerical QR method,
inverse dynamics and Pinocchio.

Oracles: the seed texts (000 §9 SCEMI relations with errata 7, theorem 7 with errata 6, 003 Lin's
list for the Stanford arm, 002 Table 3.2 SCARA), the 001 appendix RX-90 code (test helper), a
rank computed by SVD of the stacked regressor, Pinocchio RNEA, and hand-derived 1-dof models.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import pinocchio as pin
import pytest
import sympy as sp
from example_robots import example_urdf
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_inertial, random_model, random_rotation
from rx90_customized_model import base_parameters as rx90_appendix_parameters

from robot_dynamics.dynamics.base_parameters import (
    BaseParameters,
    base_parameters,
    base_params_cli,
    numerical_base_parameters,
    stacked_regressor,
)
from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.robots import bundled_robots, load_model, resolve_urdf
from robot_dynamics.model.seed_robots import planar_2r, rx90, scara, stanford_arm

S = {name: sp.Symbol(name, real=True) for name in
     [f"{k}{j}" for j in range(1, 8) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M", "Ia", "Fc", "Fv")]}
D3, RL4 = sp.Symbol("d3", real=True), sp.Symbol("r4", real=True)


# ----------------------------------------------------------------- helpers
def svd_rank(model: RobotModel, seed: int = 11) -> int:
    """Rank of the stacked regressor by SVD (zero columns dropped), independent of both methods."""
    w = stacked_regressor(model, seed=seed)
    norms = np.linalg.norm(w, axis=0)
    w = w[:, norms > 1e-10 * norms.max()]
    sv = np.linalg.svd(w / np.linalg.norm(w, axis=0), compute_uv=False)
    return int(np.sum(sv > 1e-8 * sv[0]))


def special_model(rng: np.random.Generator, n: int, tree: bool = False) -> RobotModel:
    """Random robot with special geometry: zero d/r, parallel/perpendicular axes, prismatic joints,
    gravity vertical, horizontal, random or zero, identity or random base transform."""
    joints = []
    path = [0]
    for j in range(1, n + 1):
        ant = int(rng.choice(path)) if tree else j - 1
        path = path[: path.index(ant) + 1] + [j]
        joints.append(MDHJoint(
            name=f"j{j}", antecedent=ant, sigma=int(rng.random() < 0.3),
            alpha=float(rng.choice([0.0, math.pi / 2, -math.pi / 2, math.pi, rng.uniform(-math.pi, math.pi)])),
            d=float(rng.choice([0.0, 0.0, rng.uniform(-0.5, 0.5)])),
            theta=float(rng.choice([0.0, math.pi / 2, rng.uniform(-math.pi, math.pi)])),
            r=float(rng.choice([0.0, 0.0, rng.uniform(-0.5, 0.5)])),
            sign=float(rng.choice([1.0, -1.0])), link=f"l{j}"))
    gravity = [np.array([0.0, 0.0, -9.81]), rng.normal(size=3) * 5.0, np.zeros(3), np.array([9.81, 0.0, 0.0])][
        int(rng.integers(4))]
    base = np.eye(4)
    if rng.random() < 0.4:
        base[:3, :3] = random_rotation(rng)
        base[:3, 3] = rng.uniform(-0.5, 0.5, 3)
    return RobotModel(
        joints=joints, base_transform=base, inertial=np.array([random_inertial(rng) for _ in range(n)]),
        Ia=rng.uniform(0.0, 1.0, n), Fc=rng.uniform(0.0, 1.0, n), Fv=rng.uniform(0.0, 1.0, n), gravity=gravity,
    )


def random_states(model: RobotModel, rng: np.random.Generator, count: int) -> tuple[np.ndarray, ...]:
    n = model.dof
    return (rng.uniform(-math.pi, math.pi, (count, n)), rng.uniform(-2, 2, (count, n)), rng.uniform(-2, 2, (count, n)))


def check_consistency(
    model: RobotModel, rng: np.random.Generator, pinocchio: bool = False, svd: bool = True
) -> BaseParameters:
    """Closed form vs numerical QR method (vs SVD rank), and base model vs inverse dynamics (1e-10)."""
    bp = base_parameters(model)
    num = numerical_base_parameters(model, seed=5)
    rank = svd_rank(model) if svd else num.rank
    assert bp.count == num.rank == rank, (bp.count, num.rank, rank, bp.notes)
    # same identifiable combinations: the two row spaces coincide
    assert np.linalg.matrix_rank(np.vstack([bp.matrix, num.matrix]), tol=1e-7) == rank
    q, qd, qdd = random_states(model, rng, 20)
    tau = model.inverse_dynamics(q, qd, qdd)
    scale = max(1.0, float(np.abs(tau).max()))
    assert np.abs(bp.regressor(q, qd, qdd) @ bp.values - tau).max() < 1e-10 * scale
    assert np.abs(num.regressor(q, qd, qdd) @ num.values - tau).max() < 1e-9 * scale
    if pinocchio:
        pm = pinocchio_model(model)
        pd = pm.createData()
        ref = np.array([pin.rnea(pm, pd, a, b, c) for a, b, c in zip(q, qd, qdd, strict=True)])
        ref += model.Fc * np.sign(qd) + model.Fv * qd + model.Ia * qdd
        assert np.abs(bp.regressor(q, qd, qdd) @ bp.values - ref).max() < 1e-9 * scale
    return bp


# ----------------------------------------------------------------- seed counts
def test_rx90_counts_and_no_effect_list_of_scemi() -> None:
    """000 §9-10: 36 minimum inertial parameters; step a list of parameters without effect."""
    bp = rx90().base_parameters()
    assert bp.method == "closed-form"
    assert bp.inertial_count == 36
    seed_list = {"XX1", "XY1", "XZ1", "YY1", "YZ1", "MX1", "MY1", "MZ1", "M1", "MZ2", "M2"}
    assert set(bp.eliminated) == seed_list
    # with Ia, Fc, Fv: Ia1 in ZZR1, Ia2 in ZZR2 (ω1 ⊥ z2), Ia3..Ia6 and 12 friction parameters
    assert bp.count == 36 + 4 + 12 == svd_rank(rx90())
    assert "Ia1" not in bp.names and "Ia2" not in bp.names and "Ia3" in bp.names


def test_general_6r_with_generic_gravity_has_7n_minus_4() -> None:
    """Theorem 7 with errata 6: a general 6R robot with generic gravity has 7n - 4 = 38."""
    rng = np.random.default_rng(4)
    joints = [MDHJoint(name=f"j{j}", antecedent=j - 1, sigma=0, alpha=float(rng.uniform(0.3, 1.2)),
                       d=float(rng.uniform(0.1, 0.5)), theta=float(rng.uniform(-1, 1)), r=float(rng.uniform(0.1, 0.5)))
              for j in range(1, 7)]
    model = RobotModel(joints=joints, inertial=np.array([random_inertial(rng) for _ in range(6)]),
                       gravity=np.array([3.0, -4.0, -8.0]))
    bp = model.base_parameters()
    assert bp.inertial_count == 38 == 7 * 6 - 4
    assert {"MXR1", "MYR1"} <= set(bp.names) or {"MX1", "MY1"} <= set(bp.names)
    assert bp.count == 38 + 5 + 12 == svd_rank(model)  # Ia1 with ZZR1 only


def test_scara_table_3_2_has_8() -> None:
    """002 Table 3.2 SCARA (vertical parallel axes): ZZR1, ZZR2, MXR2, MY2, ZZR3, MXR3, MYR3, M4."""
    bp = scara().base_parameters()
    inertial = [nm for nm, c in zip(bp.names, bp.columns, strict=True) if c % 13 < 10]
    assert inertial == ["ZZR1", "ZZR2", "MXR2", "MY2", "ZZR3", "MXR3", "MYR3", "M4"]
    assert bp.inertial_count == 8
    assert bp.count == 8 + 3 + 8 == svd_rank(scara())  # Ia2, Ia3, Ia4 separate


def test_stanford_arm_lin_count_33() -> None:
    """003 §5: (U1)33, seven constants for links 2, 4, 5, 6, m̂3 and k3 (3): 1 + 28 + 1 + 3 = 33."""
    bp = stanford_arm().base_parameters()
    assert bp.inertial_count == 33
    link3 = [nm for nm, c in zip(bp.names, bp.columns, strict=True) if c // 13 == 2 and c % 13 < 10]
    assert link3 == ["MX3", "MY3", "MZR3", "MR3"]  # k3 (3) and m̂3; J3 grouped into link 2 (eq. 22)
    for j in (2, 4, 5, 6):
        assert sum(c // 13 == j - 1 and c % 13 < 10 for c in bp.columns) == 7
    assert bp.count == 33 + 4 + 12 == svd_rank(stanford_arm())  # Ia1 in ZZR1, Ia2 in ZZR2


# ----------------------------------------------------------------- relations
def test_rx90_relations_reproduce_corrected_scemi() -> None:
    """000 §9 step b, with the corrections of errata 2 and 7, symbolically (D3 = d3, RL4 = r4)."""
    rel = rx90().base_parameters().relations_dict
    m36, m46 = S["M3"] + S["M4"] + S["M5"] + S["M6"], S["M4"] + S["M5"] + S["M6"]
    expected = {
        "XXR6": S["XX6"] - S["YY6"],
        "XXR5": S["XX5"] + S["YY6"] - S["YY5"],
        "ZZR5": S["ZZ5"] + S["YY6"],
        "MYR5": S["MY5"] + S["MZ6"],
        "XXR4": S["XX4"] + S["YY5"] - S["YY4"],
        "ZZR4": S["ZZ4"] + S["YY5"],
        "MYR4": S["MY4"] - S["MZ5"],
        "XXR3": S["XX3"] + S["YY4"] + 2 * RL4 * S["MZ4"] + RL4**2 * m46 - S["YY3"],
        "ZZR3": S["ZZ3"] + S["YY4"] + 2 * RL4 * S["MZ4"] + RL4**2 * m46,
        "MYR3": S["MY3"] + S["MZ4"] + RL4 * m46,
        "XXR2": S["XX2"] - S["YY2"] - D3**2 * m36,  # errata 7: no YY3
        "ZZR2": S["ZZ2"] + D3**2 * m36 + S["Ia2"],  # + Ia2: ω1 ⊥ z2
        "XZR2": S["XZ2"] - D3 * S["MZ3"],
        "MXR2": S["MX2"] + D3 * m36,
        "ZZR1": S["ZZ1"] + S["YY2"] + S["YY3"] + D3**2 * m36 + S["Ia1"],  # errata 7: + YY3
        "MY2": S["MY2"], "ZZ6": S["ZZ6"], "XY2": S["XY2"], "YZ2": S["YZ2"],
    }
    for name, expr in expected.items():
        assert sp.expand(rel[name] - expr) == 0, (name, rel[name])
    # the seven parameters of link 6 of the SCEMI example
    assert [n for n in rel if n.endswith("6") and not n.startswith("F") and not n.startswith("Ia")] == [
        "XXR6", "XY6", "XZ6", "YZ6", "ZZ6", "MX6", "MY6"]


def test_rx90_values_match_the_001_appendix_groupings() -> None:
    """Values vs the grouped parameters of the 001 appendix RX-90 code (independent transcription)."""
    rng = np.random.default_rng(6)
    std = rx90().standard_parameter_values.reshape(6, 13).copy()
    std[:, [1, 2, 4]] = 0.0  # symmetric links (diagonal tensors) and the first moments the appendix keeps
    std[:, 6:9] = 0.0
    for j, k in [(1, 6), (1, 7), (1, 8), (2, 7), (3, 8), (4, 7), (5, 8)]:  # MX2 MY2 MZ2 MY3 MZ4 MY5 MZ6
        std[j, k] = rng.uniform(-1.0, 1.0)
    model = rx90().with_standard_parameters(std.ravel())
    bp = model.base_parameters()
    ref = rx90_appendix_parameters(model.inertial, model.Ia, d3=0.45, rl4=0.45)
    vals = dict(zip(bp.names, bp.values, strict=True))
    mapping = {"ZZ1R": "ZZR1", "XXR2": "XXR2", "ZZR2": "ZZR2", "MXR2": "MXR2", "MY2": "MY2", "XXR3": "XXR3",
               "ZZR3": "ZZR3", "MYR3": "MYR3", "XXR4": "XXR4", "ZZR4": "ZZR4", "XXR5": "XXR5", "ZZR5": "ZZR5",
               "MYR5": "MYR5", "XXR6": "XXR6", "ZZ6": "ZZ6", "IA3": "Ia3", "IA4": "Ia4", "IA5": "Ia5", "IA6": "Ia6"}
    for k_ref, k in mapping.items():
        assert vals[k] == pytest.approx(ref[k_ref], abs=1e-12), k


def test_planar_2r_hand_derived() -> None:
    """Vertical-plane 2R: ZZR1 = ZZ1 + Ia1 + L1² M2, MXR1 = MX1 + L1 M2, MY1, ZZ2, MX2, MY2, Ia2."""
    bp = planar_2r().base_parameters()
    rel = bp.relations_dict
    d2 = sp.Symbol("d2", real=True)
    assert sp.expand(rel["ZZR1"] - (S["ZZ1"] + S["Ia1"] + d2**2 * S["M2"])) == 0
    assert sp.expand(rel["MXR1"] - (S["MX1"] + d2 * S["M2"])) == 0
    inertial = [nm for nm, c in zip(bp.names, bp.columns, strict=True) if c % 13 < 11]
    assert inertial == ["ZZR1", "MXR1", "MY1", "ZZ2", "MX2", "MY2", "Ia2"]


@pytest.mark.parametrize(("sigma", "gravity", "expected"), [
    (0, (0, 0, -9.81), ["ZZR1", "Fc1", "Fv1"]),  # vertical axis: τ = (ZZ1 + Ia1) q̈ + friction
    (0, (9.81, 0, 0), ["ZZR1", "MX1", "MY1", "Fc1", "Fv1"]),  # pendulum
    (1, (9.81, 0, 0), ["IaR1", "Fc1", "Fv1"]),  # horizontal slide: τ = (M1 + Ia1) q̈
    (1, (0, 0, -9.81), ["M1", "Ia1", "Fc1", "Fv1"]),  # vertical slide: τ = M1 (q̈ + g) + Ia1 q̈
])
def test_one_dof_hand_derived(sigma: int, gravity: tuple[float, ...], expected: list[str]) -> None:
    model = RobotModel(joints=[MDHJoint("j1", 0, sigma, 0.0, 0.0, 0.0, 0.0)],
                       inertial=random_inertial(np.random.default_rng(0))[None], Ia=[0.3], Fc=[1.0], Fv=[0.5],
                       gravity=np.array(gravity, float))
    bp = model.base_parameters()
    assert bp.names == expected
    q, qd, qdd = np.array([[0.4]]), np.array([[0.7]]), np.array([[-1.3]])
    p = model.inertial[0]
    g = np.array(gravity)
    if sigma == 0:  # hand-derived pendulum about z: τ = (ZZ+Ia) q̈ + g·(ẑ × R MS) ...
        c, s = math.cos(0.4), math.sin(0.4)
        ms0 = np.array([c * p[6] - s * p[7], s * p[6] + c * p[7], p[8]])
        tau = (p[5] + 0.3) * qdd[0, 0] - np.cross(ms0, g)[2]
    else:
        tau = (p[9] + 0.3) * qdd[0, 0] - p[9] * g[2]
    tau += 1.0 * np.sign(qd[0, 0]) + 0.5 * qd[0, 0]
    assert bp.regressor(q, qd, qdd)[0] @ bp.values == pytest.approx(tau, abs=1e-12)


# ----------------------------------------------------------------- consistency with the numerical method
@pytest.mark.parametrize("name", bundled_robots())
def test_bundled_robots_consistent(name: str) -> None:
    model = RobotModel.from_urdf(str(resolve_urdf(name)))
    assert check_consistency(model, np.random.default_rng(1), pinocchio=True).method == "closed-form"


@pytest.mark.parametrize(("name", "tip", "inertial"), [("ur5", None, 36), ("panda", "panda_hand_tcp", 43)])
def test_ur5_panda_consistent(name: str, tip: str | None, inertial: int) -> None:
    model = RobotModel.from_urdf(str(example_urdf(name)), tip_link=tip)
    bp = check_consistency(model, np.random.default_rng(2), pinocchio=True)
    assert bp.method == "closed-form"
    assert bp.inertial_count == inertial


@pytest.mark.slow
def test_200_random_serial_robots_consistent() -> None:
    """>= 200 random serial robots (revolute/prismatic, special geometry, random gravity): count = rank."""
    rng = np.random.default_rng(2024)
    fallbacks = 0
    for it in range(200):
        n = int(rng.integers(1, 8))
        model = random_model(rng, n=n, friction=True) if it % 2 else special_model(rng, n)
        fallbacks += check_consistency(model, rng, pinocchio=it % 10 == 0, svd=it % 5 == 0).method != "closed-form"
    assert fallbacks == 0


def test_random_tree_robots_consistent() -> None:
    rng = np.random.default_rng(77)
    for it in range(20):
        n = int(rng.integers(2, 7))
        model = random_model(rng, n=n, tree=True, friction=True) if it % 2 else special_model(rng, n, tree=True)
        check_consistency(model, rng)


def test_step_c_fallback_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without theorem 3 (MX1, MY1 of a vertical joint 1), step (c) must find the missing
    eliminations, fall back to numerical grouping and flag it; the model stays exact."""
    import robot_dynamics.dynamics.base_parameters as bpm

    real = bpm._kinematics

    def without_theorem_3(model, g0):  # noqa: ANN001, ANN202
        kin = real(model, g0)
        kin.mxy_free = [False] * model.dof
        return kin

    monkeypatch.setattr(bpm, "_kinematics", without_theorem_3)
    model = rx90()
    bp = model.base_parameters()
    assert bp.method == "closed-form + numerical step (c)"
    assert any("MX1" in note or "MXR1" in note for note in bp.notes)
    assert bp.count == svd_rank(model) and bp.inertial_count == 36
    assert "MX1" in bp.eliminated and "MY1" in bp.eliminated
    q, qd, qdd = random_states(model, np.random.default_rng(0), 10)
    assert np.abs(bp.regressor(q, qd, qdd) @ bp.values - model.inverse_dynamics(q, qd, qdd)).max() < 1e-10


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6))
def test_property_closed_form_equals_rank(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    check_consistency(special_model(rng, n), rng)


# ----------------------------------------------------------------- numerical method, API, CLI, timing
def test_numerical_method_beta() -> None:
    """W_dep = W_base β on fresh states (QR with column pivoting)."""
    model = stanford_arm()
    num = numerical_base_parameters(model)
    w = stacked_regressor(model, seed=99)
    assert np.abs(w - w[:, num.columns] @ num.matrix).max() < 1e-8 * np.abs(w).max()
    assert num.rank == len(num.names) == svd_rank(model)


def test_bad_input() -> None:
    model = rx90()
    with pytest.raises(ValueError):
        base_parameters(model, samples=0)
    with pytest.raises(ValueError):
        base_parameters(model, tol=0.0)
    with pytest.raises(ValueError):
        numerical_base_parameters(model, tol=2.0)
    bp = model.base_parameters()
    with pytest.raises(ValueError):
        bp.regressor(np.zeros(5), np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError):
        bp.regressor(np.full(6, np.nan), np.zeros(6), np.zeros(6))
    inertial = rx90().inertial.copy()
    inertial[0, 0] = np.nan
    bad = rx90().replace(inertial=inertial)
    with pytest.raises(ValueError):
        base_parameters(bad)
    bad = rx90().replace(gravity=np.array([np.inf, 0.0, 0.0]))
    with pytest.raises(ValueError):
        base_parameters(bad)


def test_cli_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert base_params_cli(argparse.Namespace(urdf="rx90", base=None, tip=None, json=False), load_model("rx90")) == 0
    out = capsys.readouterr().out
    assert "ZZR1" in out and "YY2 + YY3" in out and "36 inertial" in out
    assert base_params_cli(argparse.Namespace(urdf="scara", base=None, tip=None, json=True), load_model("scara")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inertial_count"] == 8 and data["count"] == len(data["parameters"]) == 19


def test_seven_dof_timing() -> None:
    """Target < 2 s for a 7-dof robot (Panda)."""
    model = RobotModel.from_urdf(str(example_urdf("panda")), tip_link="panda_hand_tcp")
    t0 = time.perf_counter()
    model.base_parameters()
    assert time.perf_counter() - t0 < 2.0


def test_printed_relations_evaluate_to_the_values() -> None:
    """The sympy relations, evaluated at the geometry and the standard parameters, give the values
    that reproduce inverse dynamics (so the printed relations are exact, not only the matrix)."""
    rng = np.random.default_rng(12)
    models = [rx90(), stanford_arm(), scara()] + [special_model(rng, int(rng.integers(2, 7))) for _ in range(6)]
    models += [random_model(rng, n=5, friction=True) for _ in range(3)]
    for model in models:
        bp = check_consistency(model, rng, svd=False)
        env = {sp.Symbol(nm, real=True): float(v) for nm, v in zip(model.standard_parameter_names,
                                                                  model.standard_parameter_values, strict=True)}
        env.update(bp.geometry)
        got = np.array([float(r.xreplace(env)) for r in bp.relations])
        assert np.allclose(got, bp.values, rtol=1e-9, atol=1e-9)


def test_cli_subcommand() -> None:
    from robot_dynamics.cli import main

    assert main(["base-params", "planar2r"]) == 0
    assert main(["base-params", "no_such_robot"]) == 2
