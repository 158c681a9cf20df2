"""A running model's dynamic parameters replaced by name (identification results pushed into live nodes).

:func:`updated_model` takes either the base parameters of 000 (names as :func:`~.estimation.base_parameters_of`
gives them: the model gets the minimum-norm standard parameters with exactly these base values, so its dynamic
model is the identified one whatever the grouping, :func:`~.io.model_with_base_parameters`) or standard parameters
(``XX1`` … ``M<n>``, ``Ia<n>``, ``Fc<n>``, ``Fv<n>``: those named replace the model's, the others are kept).  The
geometry, joints and limits never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model.robot_model import RobotModel

__all__ = ["updated_model"]


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
    if set(names) <= set(standard):
        x = model.standard_parameter_values.copy()
        x[[standard.index(nm) for nm in names]] = vals
        return model.with_standard_parameters(x)
    from .io import model_with_base_parameters

    return model_with_base_parameters(model, names, vals)
