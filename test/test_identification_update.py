"""``updated_model``: identified parameters pushed into a model by name (what ~/set_dynamic_parameters applies).
Oracles: the base parameters recomputed from the result (000's closed form), and the inverse dynamics predicted from
the regressor and the target values (W_b beta, 000) plus the friction formula written here."""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics.identification.estimation import base_parameters_of, observation_matrix
from robot_dynamics.identification.update import updated_model
from robot_dynamics.model.robots import load_model

MODEL = load_model("rx90")
RNG = np.random.default_rng(7)


def test_base_parameters_and_extended_friction():
    b = base_parameters_of(MODEL)
    target = b.values * (1.0 + 0.3 * RNG.uniform(-1.0, 1.0, b.values.size))
    names = [*b.names, "Foff2", "Fs3", "vs3"]
    new = updated_model(MODEL, list(reversed(names)), list(reversed([*target, 0.7, 3.5, 0.08])))  # any order
    np.testing.assert_allclose(base_parameters_of(new).values, target, rtol=1e-9, atol=1e-12)
    assert new.Foff.tolist() == [0.0, 0.7, 0.0, 0.0, 0.0, 0.0] and new.Fs[2] == 3.5 and new.vs[2] == 0.08
    q, qd, qdd = (RNG.uniform(-1.0, 1.0, (20, 6)) for _ in range(3))
    w = observation_matrix(b, q, qd, qdd)  # (N, n, b): the rigid body + Ia, Fc, Fv part, linear in beta
    stribeck = np.zeros((20, 6))
    fc3 = target[list(b.names).index("Fc3")]  # Fc3 is a base parameter: the identified one
    stribeck[:, 2] = (3.5 - fc3) * np.sign(qd[:, 2]) * np.exp(-np.abs(qd[:, 2]) / 0.08)
    stribeck[:, 1] = 0.7
    np.testing.assert_allclose(new.inverse_dynamics(q, qd, qdd), w @ target + stribeck, rtol=1e-9, atol=1e-9)
    assert MODEL.Foff.tolist() == [0.0] * 6  # the model itself is immutable


def test_standard_parameters_and_refusals():
    new = updated_model(MODEL, ["Fc1", "M3", "Foff6"], [9.0, 8.5, -0.2])  # (M3 = 1.5 moves link 3's centre of
    assert new.Fc[0] == 9.0 and new.Fc[1:].tolist() == MODEL.Fc[1:].tolist() and new.Foff[5] == -0.2  # mass
    assert new.inertial[2, 9] == 8.5  # out of its body: refused, test_physical_parameters.py)
    for names, values, why in ((["Fc1"], [np.nan], "non-finite"), (["Fc1", "Fc1"], [1.0, 2.0], "duplicate"),
                               (["Fc1"], [1.0, 2.0], "values"), ([], [], "no parameters")):
        with pytest.raises(ValueError, match=why):
            updated_model(MODEL, names, values)


def test_parameters_of_no_physical_arm_are_refused():
    """A(q) must be positive definite (001 §7.3): base values whose A(q) is not (here ZZR4, which holds A_44 with
    Ia4, made very negative) are refused with the configuration and the eigenvalues; ``check=False`` builds the
    model anyway (the identifier evaluates it before refusing a swap).  At the reported configuration the refused
    model's A(q) (the inertia matrix checked against Pinocchio in test_dynamic_terms) has an eigenvalue <= 0 and the
    nominal one none; the nominal values are accepted."""
    b = base_parameters_of(MODEL)
    bad = b.values.copy()
    k = next(i for i, nm in enumerate(b.names) if nm == "ZZR4")
    bad[k] = -5.0
    with pytest.raises(ValueError, match="not positive definite") as exc:
        updated_model(MODEL, list(b.names), bad)
    text = str(exc.value)
    q = np.array([float(x) for x in text.split("at q = [")[1].split("]")[0].split(",")])
    new = updated_model(MODEL, list(b.names), bad, check=False)
    assert np.linalg.eigvalsh(new.inertia_matrix(q))[0] <= 0.0
    assert np.all(np.linalg.eigvalsh(MODEL.inertia_matrix(q)) > 0.0)
    updated_model(MODEL, list(b.names), b.values)  # the nominal values pass
    with pytest.raises(ValueError, match="link 1's inertia about its centre of mass .* not positive semi-definite"):
        updated_model(MODEL, ["ZZ1"], [-50.0])  # standard parameters: the body rules first (test_physical_parameters)
    with pytest.raises(ValueError, match="not positive definite"):  # check_inertia still applies to them
        updated_model(MODEL.replace(Ia=np.zeros(6)), ["XX6", "YY6", "ZZ6", "XY6", "XZ6", "YZ6", "MX6", "MY6", "MZ6",
                                                      "M6"], [0.0] * 10)
