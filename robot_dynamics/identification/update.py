"""A running model's dynamic parameters replaced by name (identification results pushed into live nodes).

:func:`updated_model` takes either the base parameters of 000 (names as :func:`~.estimation.base_parameters_of`
gives them: the model gets the minimum-norm standard parameters with exactly these base values, so its dynamic
model is the identified one whatever the grouping, :func:`model_with_base_parameters`) or standard parameters
(``XX1`` … ``M<n>``, ``Ia<n>``, ``Fc<n>``, ``Fv<n>``: those named replace the model's, the others are kept), in
both cases with the extended friction terms of an identification (``Foff<j>``, ``Fs<j>``, ``vs<j>``,
:mod:`.friction`).  The geometry, joints and limits never change.  A result that describes no physical arm is
refused (:func:`check_inertia`: A(q) must be positive definite over the joint box, 001 §7.3) — a controller given
such a model pushes the arm away instead of holding it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..control.gains import sampling_box
from ..model.robot_model import EXTRA_FRICTION_NAMES, RobotModel

__all__ = ["check_inertia", "model_with_base_parameters", "updated_model"]

INERTIA_SAMPLES = 64  # configurations of the joint box (and the model's zero) where A(q) must be positive definite
MIN_EIGEN_RATIO = 1e-9  # smallest eigenvalue of A(q) over its largest: below, A(q) counts as singular


def updated_model(model: RobotModel, names: Sequence[str], values: Any, check: bool = True) -> RobotModel:
    """``model`` with the named dynamic parameters (all base parameters, or any standard ones); ``ValueError``
    names what does not fit (unknown or duplicate names, a count mismatch, non-finite values) and, with ``check``,
    a result with no physical meaning (:func:`check_inertia`)."""
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
    if all(nm in standard for nm, _ in rest):
        x = model.standard_parameter_values.copy()
        for nm, v in rest:
            x[standard.index(nm)] = v
        out = model.with_standard_parameters(x) if rest else model
    else:
        out = model_with_base_parameters(model, [nm for nm, _ in rest], [v for _, v in rest])
    out = out.replace(**changes) if changes else out
    if check:
        check_inertia(out)
    return out


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
    """A copy of ``model`` whose base parameters are ``values`` (by name, any order)."""
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
