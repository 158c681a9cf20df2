"""A running model's dynamic parameters replaced by name (identification results pushed into live nodes).

:func:`updated_model` takes either the base parameters of 000 (names as :func:`~.estimation.base_parameters_of`
gives them: the model gets the minimum-norm standard parameters with exactly these base values, so its dynamic
model is the identified one whatever the grouping, :func:`model_with_base_parameters`) or standard parameters
(``XX1`` … ``M<n>``, ``Ia<n>``, ``Fc<n>``, ``Fv<n>``, and the ``Iam<k>`` of a coupled transmission, written back as
its motor inertias, :mod:`~robot_dynamics.dynamics.coupled_rotor`: those named replace the model's, the others are kept), in
both cases with the extended friction terms of an identification (``Foff<j>``, ``Fs<j>``, ``vs<j>``,
:mod:`.friction`).  The geometry, joints and limits never change.  A result that describes no physical arm is
refused — a controller given such a model pushes the arm away instead of holding it, or is driven by friction
that feeds energy in:

* standard parameters (:func:`body_violation`, :func:`sign_violation`): each link the request touches must be a
  body — mass M ≥ 0 (a massless link has no first moments), and its inertia about its centre of mass, from the
  parameters about O_j in frame R_j (001 eq. 7.3) by the parallel-axis theorem I_c = J_O − M(|c|² 1 − c cᵀ),
  c = (MX, MY, MZ)/M, positive semi-definite with principal moments obeying the triangle inequality
  (I1 + I2 ≥ I3: the Ixx + Iyy ≥ Izz of every frame); Fv, Fc, Ia ≥ 0;
* base parameters: A(q) positive definite over the joint box (:func:`check_inertia`, 001 §7.3), and the friction
  and rotor-inertia terms that are base parameters of their own (``Fc<j>``, ``Fv<j>``, ``Ia<j>``) ≥ 0.

Tolerance of the inertia rules, INERTIA_RTOL = 1e-9 of the link's scale (the largest of |J_O| and M|c|²): a body on
the boundary (a thin rod, I1 = 0; a flat plate, I1 + I2 = I3) is physical, and its parameters reach this check
through the URDF's frame change and the parallel-axis theorem, whose round-off is a few float64 epsilons (1e-16) of
that scale — M|c|² can exceed I_c by orders of magnitude for a link far from its joint, so I_c alone is the wrong
scale.  1e-9 leaves six orders of margin over round-off and is far below any violation that changes a torque
(values rounded to fewer digits must be rounded inwards).  Signs (M, Fv, Fc, Ia) are exact: 0 passes, below fails.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..control.gains import sampling_box
from ..dynamics.coupled_rotor import coupled_rotor_names, model_with_coupled_base_parameters, model_with_coupled_rotor
from ..model.inertia import inertia_tensor
from ..model.robot_model import EXTRA_FRICTION_NAMES, RobotModel

__all__ = ["body_violation", "check_inertia", "model_with_base_parameters", "sign_violation", "updated_model"]

INERTIA_SAMPLES = 64  # configurations of the joint box (and the model's zero) where A(q) must be positive definite
MIN_EIGEN_RATIO = 1e-9  # smallest eigenvalue of A(q) over its largest: below, A(q) counts as singular
INERTIA_RTOL = 1e-9  # of the link's scale, max(|J_O|, M|c|^2): see the module docstring
NON_NEGATIVE = {"Fv": "viscous friction", "Fc": "Coulomb friction", "Ia": "rotor inertia", "M": "mass",
                "Iam": "coupled rotor inertia"}
_SIGNED = re.compile(r"(Fv|Fc|Ia|Iam|M)([1-9][0-9]*)")


def updated_model(model: RobotModel, names: Sequence[str], values: Any, check: bool = True) -> RobotModel:
    """``model`` with the named dynamic parameters (all base parameters, or any standard ones); ``ValueError``
    names what does not fit (unknown or duplicate names, a count mismatch, non-finite values) and, with ``check``,
    a result with no physical meaning (the module docstring's rules: :func:`sign_violation`,
    :func:`body_violation` for each link the request touches, :func:`check_inertia`)."""
    names = list(names)
    vals = np.asarray(values, dtype=float)
    if vals.shape != (len(names),):
        raise ValueError(f"{len(names)} names but {vals.size} values")
    if not names:
        raise ValueError("no parameters given")
    if not np.all(np.isfinite(vals)):
        bad = [nm for nm, v in zip(names, vals, strict=True) if not np.isfinite(v)]
        raise ValueError(f"non-finite values for {bad[:10]}")
    if len(set(names)) != len(names):
        raise ValueError("duplicate parameter names")
    standard = list(model.standard_parameter_names)
    extra = {f"{k}{j}": (k, j - 1) for k in EXTRA_FRICTION_NAMES for j in range(1, model.dof + 1)}
    changes: dict[str, np.ndarray] = {}
    rest: list[tuple[str, float]] = []
    for nm, v in zip(names, vals, strict=True):
        if nm in extra:
            k, j = extra[nm]
            changes.setdefault(k, np.array(getattr(model, k), dtype=float))[j] = v
        else:
            rest.append((nm, float(v)))
    if check:
        for nm, v in rest:
            why = sign_violation(nm, v, model.dof)
            if why:
                raise ValueError(why)
    coupled = set(coupled_rotor_names(model))  # Iam<k> of a coupled transmission (dynamics.coupled_rotor)
    if all(nm in standard or nm in coupled for nm, _ in rest):
        x = model.standard_parameter_values.copy()
        for nm, v in rest:
            if nm in standard:
                x[standard.index(nm)] = v
        out = model.with_standard_parameters(x) if rest else model
        out = model_with_coupled_rotor(out, {nm: v for nm, v in rest if nm in coupled})
        if check:  # every link the request touches must be a body
            touched = sorted({standard.index(nm) // 13 for nm, _ in rest if nm in standard})
            for j in touched:
                why = body_violation(out.inertial[j], j + 1)
                if why:
                    raise ValueError(why)
    else:
        out = model_with_base_parameters(model, [nm for nm, _ in rest], [v for _, v in rest])
    out = out.replace(**changes) if changes else out
    if check:
        check_inertia(out)
    return out


def sign_violation(name: str, value: float, dof: int) -> str:
    """Why ``name = value`` is impossible (``""`` when it is not): ``Fv<j>``, ``Fc<j>``, ``Ia<j>``, ``M<j>`` are
    never negative (a standard parameter, or a base parameter that is one of them alone)."""
    m = _SIGNED.fullmatch(name)
    if m is None or not 1 <= int(m.group(2)) <= dof or not value < 0.0:
        return ""
    return (f"{name} = {value:.6g} < 0: {NON_NEGATIVE[m.group(1)]} is never negative (these dynamic parameters "
            "describe no physical arm)")


def body_violation(row: Any, link: int) -> str:
    """Why the standard parameters ``row`` (XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M of link ``link``, about O_j in
    R_j, 001 eq. 7.3) describe no rigid body (``""`` when they do): M < 0; first moments without a mass; the inertia
    about the centre of mass not positive semi-definite, or its principal moments breaking the triangle inequality
    (tolerance INERTIA_RTOL of the link's scale, module docstring)."""
    row = np.asarray(row, dtype=float)
    j, m, ms = link, float(row[9]), row[6:9]
    jo = inertia_tensor(row)
    names = f"XX{j}..ZZ{j}, MX{j}..MZ{j}, M{j}"
    if m < 0.0:
        return f"M{j} = {m:.6g} kg < 0: a mass is never negative"
    if m == 0.0:
        if np.any(ms != 0.0):
            return (f"M{j} = 0 but (MX{j}, MY{j}, MZ{j}) = {np.round(ms, 9).tolist()}: first moments need a mass "
                    f"(MS = M c)")
        ic, scale = jo, float(np.abs(jo).max())
    else:
        c = ms / m
        shift = m * (c @ c * np.eye(3) - np.outer(c, c))
        ic, scale = jo - shift, max(float(np.abs(jo).max()), m * float(c @ c))
    lam = np.linalg.eigvalsh(0.5 * (ic + ic.T))
    tol = INERTIA_RTOL * scale
    where = f"link {j}'s inertia about its centre of mass ({names} by the parallel-axis theorem)"
    if lam[0] < -tol:
        return (f"{where} is not positive semi-definite: principal moments {np.round(lam, 9).tolist()} kg m^2, "
                f"the smallest below 0 (tolerance {tol:.3g})")
    if lam[2] > lam[0] + lam[1] + tol:
        return (f"{where} breaks the triangle inequality: principal moments {np.round(lam, 9).tolist()} kg m^2, "
                f"I1 + I2 = {lam[0] + lam[1]:.9g} < I3 = {lam[2]:.9g} (Ixx + Iyy >= Izz about every axis; "
                f"tolerance {tol:.3g})")
    return ""


def check_inertia(model: RobotModel, samples: int = INERTIA_SAMPLES, seed: int = 0) -> None:
    """``ValueError`` unless the inertia matrix A(q) (001 eq. 7.2, rotor inertias included) is positive definite at
    ``q = 0`` and at ``samples`` random configurations of the joint box (URDF limits, else ±π / ±1 m): the kinetic
    energy ½ q̇ᵀ A q̇ of any motion must be positive.  A batch of A(q) (~1 ms for a 6-joint arm)."""
    lo, hi = sampling_box(model)
    qs = np.vstack([np.clip(np.zeros(model.dof), lo, hi), np.random.default_rng(seed).uniform(lo, hi, (samples, model.dof))])
    with np.errstate(all="ignore"):
        a = model.inertia_matrix(qs)
    ok = np.all(np.isfinite(a), axis=(1, 2))
    eig = np.full((len(qs), model.dof), np.nan)
    eig[ok] = np.linalg.eigvalsh(0.5 * (a[ok] + np.swapaxes(a[ok], 1, 2)))
    bad = ~ok | ~(eig[:, 0] > MIN_EIGEN_RATIO * np.maximum(eig[:, -1], 0.0))
    if np.any(bad):
        k = int(np.argmax(bad))
        raise ValueError(f"these dynamic parameters describe no physical arm: the inertia matrix A(q) is not positive "
                         f"definite at q = {np.round(qs[k], 3).tolist()} (eigenvalues {np.round(eig[k], 6).tolist()}; "
                         f"{int(bad.sum())} of {len(qs)} configurations checked)")


def model_with_base_parameters(model: RobotModel, names: list[str], values: Any) -> RobotModel:
    """A copy of ``model`` whose base parameters are ``values`` (by name, any order); with a coupled transmission,
    those of :func:`~robot_dynamics.dynamics.coupled_rotor.coupled_base_parameters` (Iam written back as motor
    inertias)."""
    if coupled_rotor_names(model):
        return model_with_coupled_base_parameters(model, names, values)
    base = model.base_parameters()  # (000's closed form; what estimation.base_parameters_of gives a RobotModel)
    vals = np.asarray(values, float)
    if vals.shape != (len(names),) or not np.all(np.isfinite(vals)):
        raise ValueError(f"{len(names)} finite values expected, got shape {vals.shape}")
    if sorted(names) != sorted(base.names):
        extra = sorted(set(names) ^ set(base.names))
        raise ValueError(f"base parameter names do not match the model's (differences: {extra})")
    target = vals[[list(names).index(nm) for nm in base.names]]
    k = np.asarray(base.matrix, float)
    x_nom = model.standard_parameter_values
    x = x_nom + np.linalg.pinv(k) @ (target - k @ x_nom)
    return model.with_standard_parameters(x)
