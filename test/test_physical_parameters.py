"""Issue 29: ``updated_model`` (what ``~/set_dynamic_parameters`` of the dynamics server and the controller, and the
identifier's swap apply) refuses dynamic parameters of no physical body, each rule at its boundary.

A link is built here from a body — mass M, centre of mass c, principal moments I1..I3 about c, principal axes R — as
the model's standard parameters about O_j in R_j (001 eq. 7.3): J_O = R diag(I) Rᵀ + M(|c|² 1 − c cᵀ), MS = M c.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from robot_dynamics.identification.estimation import base_parameters_of
from robot_dynamics.identification.update import INERTIA_RTOL, body_violation, updated_model
from robot_dynamics.model.robots import load_model

MODEL = load_model("rx90")
BASE = base_parameters_of(MODEL)
LINK = 3
NAMES = [f"{k}{LINK}" for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M")]


def body_row(mass: float, com, moments, rotation: np.ndarray | None = None) -> np.ndarray:
    """Standard parameters XX..ZZ, MX..MZ, M about O_j of the body (mass, centre of mass, principal moments)."""
    rotation = np.eye(3) if rotation is None else rotation
    c = np.asarray(com, float)
    jo = rotation @ np.diag(moments) @ rotation.T + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([jo[0, 0], jo[0, 1], jo[0, 2], jo[1, 1], jo[1, 2], jo[2, 2], *(mass * c), mass])


def tolerance(row: np.ndarray) -> float:
    """The check's tolerance for this row: INERTIA_RTOL of max(|J_O|, M|c|²)."""
    m, ms = row[9], row[6:9]
    shift = float(ms @ ms / m) if m > 0 else 0.0
    return INERTIA_RTOL * max(float(np.abs(row[:6]).max()), shift)


def apply(row: np.ndarray):
    return updated_model(MODEL, NAMES, row)


ROT = Rotation.from_euler("xyz", [0.3, -0.7, 1.1]).as_matrix()
COM = np.array([0.05, 0.4, -0.1])  # far from O_3 compared with the body's size: M|c|^2 >> I_c


def test_triangle_inequality_boundary():
    a, b = 0.02, 0.03
    edge = body_row(8.0, COM, [a, b, a + b], ROT)  # a flat plate: I1 + I2 = I3 exactly, physical
    tol = tolerance(edge)
    assert tol > 1e-12  # the scale is M|c|^2 here, not I_c
    apply(edge)
    apply(body_row(8.0, COM, [a, b, a + b + 0.5 * tol], ROT))  # round-off above the plate: accepted
    with pytest.raises(ValueError, match=r"link 3's inertia about its centre of mass .* triangle inequality"):
        apply(body_row(8.0, COM, [a, b, a + b + 2.0 * tol], ROT))


def test_positive_semi_definite_boundary():
    b = 0.05
    rod = body_row(4.0, COM, [0.0, b, b], ROT)  # a thin rod along its axis: I1 = 0, physical
    tol = tolerance(rod)
    apply(rod)
    apply(body_row(4.0, COM, [-0.5 * tol, b, b], ROT))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        apply(body_row(4.0, COM, [-2.0 * tol, b, b], ROT))


def test_inertia_is_checked_about_the_centre_of_mass():
    """The same J_O that is a body with M3 = 8 is none with M3 = 1.5: the centre of mass MS/M moves out of reach
    of the inertia (the parallel-axis theorem), though the diagonal of J_O still obeys XX + YY >= ZZ."""
    row = MODEL.inertial[LINK - 1].copy()
    apply(row)
    row[9] = 1.5
    xx, yy, zz = row[0], row[3], row[5]
    assert xx + yy >= zz and yy + zz >= xx and xx + zz >= yy
    with pytest.raises(ValueError, match=r"XX3\.\.ZZ3, MX3\.\.MZ3, M3 by the parallel-axis theorem"):
        apply(row)


def test_mass_boundary():
    apply(body_row(0.0, [0.0, 0.0, 0.0], [0.01, 0.01, 0.01]))  # a massless link without first moments
    with pytest.raises(ValueError, match=r"M3 = -4.94066e-324 < 0: mass is never negative"):
        apply(body_row(np.nextafter(0.0, -1.0), [0.0, 0.0, 0.0], [0.01, 0.01, 0.01]))
    row = body_row(0.0, [0.0, 0.0, 0.0], [0.01, 0.01, 0.01])
    row[7] = 1e-300
    with pytest.raises(ValueError, match="M3 = 0 but .* first moments need a mass"):
        apply(row)
    assert body_violation(row, 3) and not body_violation(body_row(1e-300, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), 3)


@pytest.mark.parametrize(("kind", "rule"), [("Fv", "viscous friction"), ("Fc", "Coulomb friction"),
                                            ("Ia", "rotor inertia")])
def test_sign_boundaries_standard(kind, rule):
    assert getattr(updated_model(MODEL, [f"{kind}2"], [0.0]), kind)[1] == 0.0
    with pytest.raises(ValueError, match=f"{kind}2 = -4.94066e-324 < 0: {rule} is never negative"):
        updated_model(MODEL, [f"{kind}2"], [np.nextafter(0.0, -1.0)])
    with pytest.raises(ValueError, match=f"{kind}2 = -2000 < 0"):  # the reviewer's Fv = -2000
        updated_model(MODEL, [f"{kind}2"], [-2000.0])


@pytest.mark.parametrize("name", ["Fv3", "Fc5", "Ia4"])
def test_sign_boundaries_base(name):
    """Base parameters that are a friction or rotor-inertia term alone follow the same rule (and A(q) still
    applies to the others: test_identification_update)."""
    assert name in BASE.names
    k = list(BASE.names).index(name)
    values = BASE.values.copy()
    values[k] = 0.0
    updated_model(MODEL, list(BASE.names), values)
    values[k] = np.nextafter(0.0, -1.0)
    with pytest.raises(ValueError, match=f"{name} = -4.94066e-324 < 0"):
        updated_model(MODEL, list(BASE.names), values)


def test_check_false_builds_anyway():
    """The identifier builds its candidate with ``check=False`` and decides the swap itself (_swap_refusal)."""
    assert updated_model(MODEL, ["Fv1"], [-1.0], check=False).Fv[0] == -1.0


# ----------------------------------------------------------------- properties
rotations = st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1).map(
    lambda v: Rotation.from_quat(v).as_matrix())
bodies = st.tuples(
    st.floats(1e-3, 100.0), st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3),
    st.floats(0.0, 10.0), st.floats(0.0, 10.0), st.floats(0.0, 1.0), rotations)
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _moments(i1: float, i2: float, u: float) -> list[float]:
    """Principal moments with I3 anywhere in [|I1 - I2|, I1 + I2] (the triangle inequality, all three ways)."""
    return [i1, i2, abs(i1 - i2) + u * (i1 + i2 - abs(i1 - i2))]


@PROPERTY
@given(body=bodies)
def test_physical_bodies_always_pass(body):
    m, c, i1, i2, u, rot = body
    new = apply(body_row(m, c, _moments(i1, i2, u), rot))
    assert new.inertial[LINK - 1, 9] == m


@PROPERTY
@given(body=bodies, rule=st.sampled_from(["mass", "psd", "triangle", "Fv", "Fc", "Ia"]),
       size=st.floats(1e-6, 1.0))
def test_violations_always_refused(body, rule, size):
    """A violation of ``size`` times the link's scale (far above the tolerance, INERTIA_RTOL) is always refused,
    with the rule's words."""
    m, c, i1, i2, u, rot = body
    moments = _moments(i1, i2, u)
    scale = max(max(moments), m * float(np.dot(c, c)), 1e-3)
    if rule in ("Fv", "Fc", "Ia"):
        with pytest.raises(ValueError, match=f"{rule}{LINK} = .* < 0"):
            updated_model(MODEL, [*NAMES, f"{rule}{LINK}"], [*body_row(m, c, moments, rot), -size])
        return
    if rule == "mass":
        m, match = -size * 100.0, "mass is never negative"
    elif rule == "psd":
        moments = [-size * scale, moments[2] + size * scale, moments[2] + size * scale]
        match = "not positive semi-definite"
    else:
        moments = [moments[0], moments[1], moments[0] + moments[1] + size * scale]
        match = "triangle inequality"
    with pytest.raises(ValueError, match=match):
        apply(body_row(m, c, moments, rot))
