"""Printed base-parameter relations (issue 30): the geometry's values substituted (k·π/2 and 0 exact within
ROUND_OFF_TOL), simplified by sympy, round-off terms dropped, integer coefficients kept as integers.

Oracles, independent of :mod:`robot_dynamics.dynamics.relations`:

* the seed's RX-90 grouped parameters (000 §9 SCEMI with errata 2 and 7, as in ``test_base_parameters.py``;
  001 appendix: ZZR1 = ZZ1 + Ia1 + YY2 + YY3 + D3²(M3 + … + M6) …) with D3 = RL4 = 0.45 m (002 Table 3.1);
* the numerical grouping matrix ``bp.matrix`` (the float cascade, not sympy): every printed relation parsed
  back with sympy has its coefficients to 1e-12 — printing does not change what a relation means.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from example_robots import example_robot_data_dir

from robot_dynamics.cli import main
from robot_dynamics.dynamics.base_parameters import BaseParameters, base_parameters
from robot_dynamics.dynamics.relations import _clean, printed_relations, relation_text
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import load_model, resolve_urdf

D3 = RL4 = 0.45  # m, RX-90 (002 Table 3.1)


def parse(text: str, names: list[str]) -> sp.Expr:
    return sp.parse_expr(text, local_dict={s: sp.Symbol(s, real=True) for s in names})


def check_against_matrix(bp: BaseParameters, printed: list[str]) -> None:
    """Each printed relation, parsed back, has the coefficients of ``bp.matrix`` to 1e-12 (the dropped terms
    included), no trigonometry or geometric symbol left, and an Integer wherever the matrix entry is an integer."""
    names = list(bp.model.standard_parameter_names)
    syms = [sp.Symbol(s, real=True) for s in names]
    assert len(printed) == bp.count
    for b, text in enumerate(printed):
        expr = parse(text, names)
        assert expr.free_symbols <= set(syms), (bp.names[b], text)
        coefs = dict(expr.as_coefficients_dict())
        assert set(coefs) <= set(syms), (bp.names[b], text)
        got = np.array([float(coefs.get(s, 0)) for s in syms])
        want = bp.matrix[b]
        err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
        assert err.max() <= 1e-12, (bp.names[b], text, names[int(np.argmax(err))], float(err.max()))
        for k in np.flatnonzero(want):
            if float(want[k]).is_integer():
                assert isinstance(coefs[syms[k]], sp.Integer), (bp.names[b], names[k], text)


def rx90_urdf(tmp_path, value: str):
    """The bundled RX-90 URDF with every right angle written ``value``."""
    text = resolve_urdf("rx90").read_text()
    assert text.count('rpy="1.5707963267948966 0 0"') == 2 and text.count('rpy="-1.5707963267948966 0 0"') == 2
    path = tmp_path / f"rx90_{value}.urdf"
    path.write_text(text.replace("1.5707963267948966", value))
    return path


# ----------------------------------------------------------------- RX-90, exact geometry
def test_rx90_printed_relations_are_the_seed_groupings() -> None:
    """The bundled RX-90: the relations of 000 §9 (errata 2, 7) with D3 = RL4 = 0.45, as printed."""
    model = load_model("rx90")
    bp = base_parameters(model)
    printed = dict(zip(bp.names, printed_relations(bp), strict=True))
    assert printed["ZZR1"] == "ZZ1 + Ia1 + YY2 + YY3 + 0.2025*(M3 + M4 + M5 + M6)"
    assert printed["XXR2"] == "XX2 - YY2 - 0.2025*(M3 + M4 + M5 + M6)"
    assert printed["XXR3"] == "XX3 - YY3 + YY4 + 0.9*MZ4 + 0.2025*(M4 + M5 + M6)"
    assert printed["MYR4"] == "MY4 - MZ5" and printed["Fc1"] == "Fc1"
    s = {name: sp.Symbol(name, real=True) for name in model.standard_parameter_names}
    m36, m46 = s["M3"] + s["M4"] + s["M5"] + s["M6"], s["M4"] + s["M5"] + s["M6"]
    seed = {
        "ZZR1": s["ZZ1"] + s["YY2"] + s["YY3"] + D3**2 * m36 + s["Ia1"],
        "XXR2": s["XX2"] - s["YY2"] - D3**2 * m36,
        "ZZR2": s["ZZ2"] + D3**2 * m36 + s["Ia2"],
        "XZR2": s["XZ2"] - D3 * s["MZ3"],
        "MXR2": s["MX2"] + D3 * m36,
        "XXR3": s["XX3"] + s["YY4"] + 2 * RL4 * s["MZ4"] + RL4**2 * m46 - s["YY3"],
        "ZZR3": s["ZZ3"] + s["YY4"] + 2 * RL4 * s["MZ4"] + RL4**2 * m46,
        "MYR3": s["MY3"] + s["MZ4"] + RL4 * m46,
        "XXR4": s["XX4"] + s["YY5"] - s["YY4"], "ZZR4": s["ZZ4"] + s["YY5"], "MYR4": s["MY4"] - s["MZ5"],
        "XXR5": s["XX5"] + s["YY6"] - s["YY5"], "ZZR5": s["ZZ5"] + s["YY6"], "MYR5": s["MY5"] + s["MZ6"],
        "XXR6": s["XX6"] - s["YY6"],
    }
    for name, expr in seed.items():
        diff = sp.expand(parse(printed[name], list(s)) - expr)
        assert all(abs(float(c)) <= 1e-12 for c in diff.as_coefficients_dict().values()), (name, printed[name])
    check_against_matrix(bp, list(printed.values()))
    assert not any("e-" in text for text in printed.values())  # no round-off printed


# ----------------------------------------------------------------- RX-90 URDF with rounded right angles
@pytest.mark.parametrize("value", ["1.5708", "1.57079632679"])
def test_rx90_urdf_with_rounded_right_angles(tmp_path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    """``base-params FILE --json`` on the RX-90 URDF with π/2 written ``value``: the symbolic relations hold
    sin(alpha2)**2 (the geometry is general), the printed ones numbers only, equal to the grouping matrix."""
    path = rx90_urdf(tmp_path, value)
    assert main(["base-params", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    bp = base_parameters(load_model(str(path)))
    assert [p["name"] for p in data["parameters"]] == bp.names
    assert data["parameters"][0]["name"] == "ZZR1" and "sin(alpha2)**2" in data["parameters"][0]["relation_symbolic"]
    printed = [p["relation"] for p in data["parameters"]]
    assert not any(w in text for text in printed for w in ("sin", "cos", "alpha", "pi"))
    check_against_matrix(bp, printed)
    rel = dict(zip(bp.names, printed, strict=True))
    names = list(bp.model.standard_parameter_names)
    zzr1 = parse(rel["ZZR1"], names).as_coefficients_dict()
    yy2 = zzr1[sp.Symbol("YY2", real=True)]
    if value == "1.5708":  # sin²(1.5708) = 1 - 1.35e-11: a real coefficient, not round-off, not snapped to 1
        assert isinstance(yy2, sp.Float) and float(yy2) == pytest.approx(1.0 - 1.349e-11, abs=1e-13)
        assert "Ia2" in bp.names
    else:  # sin²(1.57079632679) = 1 - 2.4e-23: 1 in float64, printed as the integer; Ia2 grouped exactly
        assert yy2 == 1 and isinstance(yy2, sp.Integer)
        assert rel["IaR2"] == "ZZ2 + Ia2 + 0.2025*(M3 + M4 + M5 + M6)"
        assert rel["XXR4"] == "XX4 - YY4 + YY5"  # cos²(α5) = 2.4e-23 of YY6: dropped as round-off


# ----------------------------------------------------------------- a tree of example-robot-data
def test_tiago_tree_printed_relations() -> None:
    """TIAGo (no hand), tree rows with γ, b and right angles written 1.57079632679: printed = matrix."""
    model = RobotModel.from_urdf(str(example_robot_data_dir() / "tiago_description/robots/tiago_no_hand.urdf"))
    bp = base_parameters(model)
    assert {sp.Symbol(n, real=True) for n in ("gamma1", "b1", "alpha5")} <= set(bp.geometry)
    printed = printed_relations(bp)
    assert not any(w in text for text in printed for w in ("sin", "cos", "alpha", "gamma", "pi"))
    check_against_matrix(bp, printed)
    rel = dict(zip(bp.names, printed, strict=True))
    assert rel["ZZR10"] == "ZZ10 + YY11" and rel["ZZR1"] == "ZZ1 + Ia1"


# ----------------------------------------------------------------- the rules on their own
def test_relation_text_groups_signs_and_integers() -> None:
    names = ["A", "B", "C", "D", "E"]
    assert relation_text({0: 1, 1: -1, 2: 0.25, 3: 0.25, 4: 2}, names) == "A - B + 0.25*(C + D) + 2*E"
    assert relation_text({1: -0.5, 3: -0.5, 0: -1}, names) == "-A - 0.5*(B + D)"
    assert relation_text({2: -3}, names) == "-3*C"


def test_round_off_drop_and_snap_boundaries() -> None:
    """A term at the tolerance of the scale is dropped, twice it is kept; near-integers snap, others not."""
    w = np.ones(3)
    tol = 1e-14
    assert _clean({0: 1, 1: 1e-14, 2: 2e-14}, w, 0, tol) == {0: 1, 2: 2e-14}
    out = _clean({0: 1.0 + 5e-15, 1: 2.0 - 3e-14}, w, 0, tol)
    assert out[0] == 1 and isinstance(out[0], int) and out[1] == 2.0 - 3e-14 and isinstance(out[1], float)
    # weights: a mass coefficient in m² (w = 1) of a relation in kg m² (w = L² = 100): 1e-13 kg m² is 1e-15 L²
    assert _clean({0: 1, 1: 1e-13}, np.array([100.0, 1.0]), 0, tol) == {0: 1}
