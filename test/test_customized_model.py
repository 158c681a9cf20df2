"""Customized symbolic Newton–Euler model (001 §7.5): operation counts vs the seed, seed listing.

Oracles: the operation counts printed in 001 Tables 7.5/7.6 and the Appendix "MOCOM II"
(errata 22), the RX-90 appendix code transcribed in ``rx90_customized_model.py``
(statement by statement), and 001 §7.5.3's 92n − 127 / 81n − 117 for a general 6R robot.
"""

from __future__ import annotations

import inspect
import math
import re
import time

import numpy as np
import pytest
import rx90_customized_model
import sympy as sp
from test_rx90_seed_model import rx90_model

from robot_dynamics.model.robot_model import MDHJoint, RobotModel
from robot_dynamics.model.seed_robots import stanford_arm
from robot_dynamics.symbolic.customized_model import (
    count_operations,
    customized_inverse_dynamics,
)


def _appendix_lines() -> list[tuple[str, str]]:
    src = inspect.getsource(rx90_customized_model.rx90_customized_torques)
    return re.findall(r"^\s{4}([A-Za-z][A-Za-z0-9]*)=(.+)$", src, flags=re.M)


def _table_7_4_rx90(rng: np.random.Generator, ms_axes: str = "xyyzyz") -> RobotModel:
    """RX-90 with "simplified" inertial parameters (001 Table 7.5 note): diagonal J_j, one first moment per link."""
    p = np.zeros((6, 10))
    p[:, 0], p[:, 3], p[:, 5] = rng.uniform(0.05, 1.0, (3, 6))
    p[:, 9] = rng.uniform(1.0, 10.0, 6)
    for j, axis in enumerate(ms_axes):
        p[j, 6 + "xyz".index(axis)] = rng.uniform(0.1, 1.0)
    p[1, 7] = rng.uniform(0.1, 1.0)  # MY2 as in the appendix
    return rx90_model(6, 0.45, 0.45, p, rng.uniform(0.1, 2.0, 6), -9.81)


def _general_rx90(rng: np.random.Generator) -> RobotModel:
    return rx90_model(6, 0.45, 0.45, rng.normal(size=(6, 10)), rng.uniform(0.1, 2.0, 6), -9.81)


def general_6r(seed: int = 0) -> RobotModel:
    """001 §7.5.3 "general robot": r1 = d1 = α1 = r_n = 0, other parameters arbitrary."""
    rng = np.random.default_rng(seed)
    joints = []
    for j in range(6):
        alpha = 0.0 if j == 0 else rng.uniform(0.3, 1.2)
        d = 0.0 if j == 0 else rng.uniform(0.1, 0.5)
        r = 0.0 if j in (0, 5) else rng.uniform(0.1, 0.5)
        joints.append(MDHJoint(f"j{j + 1}", j, 0, alpha, d, rng.uniform(-1, 1), r))
    frames = {"base": (0, np.eye(4)), "tip": (6, np.eye(4))}
    return RobotModel(joints, base_link="base", tip_link="tip", frames=frames, inertial=rng.normal(size=(6, 10)),
                      Ia=rng.uniform(0.1, 1.0, 6))  # fmt: skip


def test_counter_reproduces_the_appendix_count() -> None:
    """Counting the appendix code gives the printed 160 ×, 113 + (PIS22 constant, errata 22)."""
    constants = {"PIS22", "PIS23", "PIS24", "PIS25", "PIS26"}
    m = a = 0
    for name, rhs in _appendix_lines():
        if name in constants:
            continue
        mm, aa, _ = count_operations(sp.sympify(rhs))
        m, a = m + mm, a + aa
    assert (m, a) == (160, 113)


def test_rx90_counts_table_7_6() -> None:
    """001 Table 7.6 (with the end-effector wrench and rotor inertias as in the appendix)."""
    rng = np.random.default_rng(76)
    gen = _general_rx90(rng)
    simp = _table_7_4_rx90(rng)
    expected = {  # (model, parameters, simplified): seed (mult, add)
        ("gen", "standard", False): (294, 283),
        ("gen", "base", False): (253, 238),
        ("simp", "standard", True): (202, 153),
        ("simp", "base", True): (160, 113),
    }
    for (which, par, simplified), (sm, sa) in expected.items():
        c = customized_inverse_dynamics(gen if which == "gen" else simp, par, simplified).counts()
        assert c["multiplications"] <= sm and c["additions"] <= sa, (which, par, c)
        assert c["sin_cos"] == 10 and c["dof"] == 6  # S1/C1 eliminated (Example 7.4)


def test_stanford_counts_table_7_5() -> None:
    """001 Table 7.5, Stanford arm: general 240/227, simplified 142/99 (base parameters)."""
    st = stanford_arm()
    rng = np.random.default_rng(75)
    st = st.replace(inertial=rng.normal(size=(6, 10)))
    c = customized_inverse_dynamics(st, "base", False).counts()
    assert c["multiplications"] <= 240 and c["additions"] <= 227
    p = np.zeros((6, 10))
    p[:, 0], p[:, 3], p[:, 5] = rng.uniform(0.05, 1.0, (3, 6))
    p[:, 9] = rng.uniform(1.0, 5.0, 6)
    p[:, 8] = rng.uniform(0.1, 1.0, 6)  # MZ_j, except link 5: MY5 (Lin's COM directions, seed 003 Fig. 2)
    p[4, 8], p[4, 7] = 0.0, -0.5
    st = st.replace(inertial=p)
    c = customized_inverse_dynamics(st, "base", True).counts()
    assert c["multiplications"] <= 142 and c["additions"] <= 99


def test_general_6r_counts_and_generation_time() -> None:
    """001 §7.5.3: 92n − 127 = 425 ×, 81n − 117 = 369 + for a general 6R robot; generation < 30 s."""
    messages: list[str] = []
    t0 = time.perf_counter()
    cm = customized_inverse_dynamics(general_6r(), "base", progress=messages.append)
    assert time.perf_counter() - t0 < 30.0
    c = cm.counts()
    assert c["multiplications"] <= 92 * 6 - 127 and c["additions"] <= 81 * 6 - 117
    assert any("link 6/6" in s for s in messages) and any("dead" in s for s in messages)
    assert cm.counts()["multiplications"] <= customized_inverse_dynamics(general_6r(), "standard").counts()[
        "multiplications"]


def test_rx90_listing_matches_the_appendix_statement_by_statement() -> None:
    """Every variable the seed prints (WI, WP, DV, U, VSP, VP, F, No, N, E, FDI, GAM) has the seed's expression."""
    rng = np.random.default_rng(22)
    p = np.zeros((6, 10))
    p[:, 0], p[:, 3], p[:, 5] = rng.uniform(0.05, 1.0, (3, 6))
    p[:, 9] = rng.uniform(1.0, 10.0, 6)
    p[1, 6:8] = rng.uniform(0.1, 1.0, 2)
    p[2, 7] = p[4, 7] = 0.3
    m = rx90_model(6, 0.45, 0.45, p, rng.uniform(0.1, 2.0, 6), -9.81)
    cm = customized_inverse_dynamics(m, "base", True)
    ours = {s.name: s.expr for s in cm.statements}
    rename = {"ZZ1R": "ZZR1", "d3": "D3", **{f"IA{j}": f"Ia{j}" for j in range(3, 7)}}
    sub = {sp.Symbol(k): sp.Symbol(v, real=True) for k, v in rename.items()}
    compared = 0
    for name, rhs in _appendix_lines():
        seed = sp.sympify(rhs).subs(sub)
        seed = seed.subs({s: sp.Symbol(str(s), real=True) for s in seed.free_symbols})
        if name.startswith("GAM"):
            ours_expr = cm.outputs[int(name[3:]) - 1]
            ours_expr = ours.get(str(ours_expr), ours_expr)
            seed = ours.get(str(seed), seed) if seed.is_Symbol else seed
        elif name in ours:
            ours_expr = ours[name]
        else:
            continue
        assert sp.expand(ours_expr - seed) == 0, (name, ours_expr, seed)
        compared += 1
    assert compared >= 130  # the others are named differently (e.g. ZZ1R) or grouped differently


def test_options_and_listing() -> None:
    cm = customized_inverse_dynamics(_general_rx90(np.random.default_rng(1)), "standard")
    text = cm.to_text()
    for name in ("WI12", "WP13", "DV", "U112", "VP12", "F13", "No13", "N13", "FDI", "GAM1"):
        assert name in text
    assert any(line.startswith("*PIS") for line in text.splitlines())
    assert len(cm.equations()) == len(cm.statements)
    with pytest.raises(ValueError, match="parameters"):
        customized_inverse_dynamics(general_6r(), "minimal")


def test_base_parameters_drop_joint1_inertia() -> None:
    """Joint 1 along gravity: only ZZR1 of link 1 remains (000 theorem), Ia1 grouped with it."""
    cm = customized_inverse_dynamics(_general_rx90(np.random.default_rng(2)), "base")
    names = set(cm.parameter_names)
    assert "ZZR1" in names and not {"XX1", "XY1", "MX1", "M1", "Ia1", "YY2", "MZ2", "M2"} & names
    assert math.isclose(len([n for n in names if not n.startswith(("Fc", "Fv", "Ia"))]), 36)


def test_numerical_fallback_base_parameters_match_the_closed_form() -> None:
    """The greedy numerical choice (fallback) keeps the columns of 000's closed form, with the same values."""
    from robot_dynamics.dynamics.base_parameters import base_parameters
    from robot_dynamics.symbolic.customized_model import base_parameter_choice

    for m in (_general_rx90(np.random.default_rng(4)), general_6r(3)):
        bp = base_parameters(m)
        ch = base_parameter_choice(m)
        names = m.standard_parameter_names
        assert ch.kept == [names[int(c)] for c in bp.columns]
        np.testing.assert_allclose(ch.values, bp.values, rtol=1e-9, atol=1e-9 * np.abs(bp.values).max())
