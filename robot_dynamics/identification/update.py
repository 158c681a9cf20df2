"""A running model's dynamic parameters replaced by name (identification results pushed into live nodes).

:func:`updated_model` takes either the base parameters of 000 (names as :func:`~.estimation.base_parameters_of`
gives them: the model gets the minimum-norm standard parameters with exactly these base values, so its dynamic
model is the identified one whatever the grouping, :func:`model_with_base_parameters`) or standard parameters
(``XX1`` … ``M<n>``, ``Ia<n>``, ``Fc<n>``, ``Fv<n>``: those named replace the model's, the others are kept), in
both cases with the extended friction terms of an identification (``Foff<j>``, ``Fs<j>``, ``vs<j>``,
:mod:`.friction`).  The geometry, joints and limits never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model.robot_model import EXTRA_FRICTION_NAMES, RobotModel

__all__ = ["model_with_base_parameters", "updated_model"]


def updated_model(model: RobotModel, names: Sequence[str], values: Any) -> RobotModel:
    """``model`` with the named dynamic parameters (all base parameters, or any standard ones); ``ValueError``
    names what does not fit (unknown or duplicate names, a count mismatch, non-finite values)."""
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
    return out.replace(**changes) if changes else out


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
