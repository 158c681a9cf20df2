"""Identification output: base-parameter YAML, a model carrying the estimates, a URDF.

* :func:`result_to_yaml` / :func:`load_result_yaml`: the estimates (names, values, std, relative std,
  method, robot and joint names) as YAML;
* :func:`model_with_base_parameters`: a :class:`RobotModel` whose base parameters equal the estimates
  — the standard parameters are the nominal ones corrected by the minimum-norm change
  ``x = x_nom + K⁺ (β̂ − K x_nom)`` (K: base-parameter matrix of 000, ``β = K x``), so its dynamics is
  the identified one (same inverse dynamics for every state) whatever the grouping.  Such a model is
  in general not a set of realizable rigid bodies (it is for the dynamic model, controller and
  dynamics server); use :func:`~.estimation.physically_consistent_estimate` for a URDF;
* :func:`write_model_urdf`: URDF of a model after checking it is physically consistent
  (M > 0, I_c positive definite, triangle inequality).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..robot_model import RobotModel
from .estimation import IdentificationResult, base_parameters_of

__all__ = [
    "is_physically_consistent",
    "load_result_yaml",
    "model_with_base_parameters",
    "result_to_yaml",
    "write_model_urdf",
]


def result_to_yaml(result: IdentificationResult) -> str:
    import yaml

    return yaml.safe_dump(result.to_dict(), sort_keys=False)


def load_result_yaml(text_or_path: str | Path) -> dict[str, Any]:
    """The mapping written by :func:`result_to_yaml` (from text or a file path)."""
    import yaml

    p = Path(str(text_or_path))
    text = p.read_text() if "\n" not in str(text_or_path) and p.is_file() else str(text_or_path)
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or "names" not in data or "values" not in data:
        raise ValueError("identification YAML must be a mapping with 'names' and 'values'")
    if len(data["names"]) != len(data["values"]):
        raise ValueError("identification YAML: 'names' and 'values' differ in length")
    return data


def model_with_base_parameters(model: RobotModel, names: list[str], values: Any) -> RobotModel:
    """A copy of ``model`` whose base parameters are ``values`` (by name, any order)."""
    base = base_parameters_of(model)
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


def is_physically_consistent(model: RobotModel, tol: float = 0.0) -> bool:
    """Every link: M > 0 (or a massless link), I_c ⪰ 0 with the triangle inequality; Ia, Fc, Fv ≥ 0."""
    from ..simulator import central_inertia

    for j in range(model.dof):
        m, _, ic = central_inertia(model.inertial[j])
        if model.inertial[j, 9] < -tol:
            return False
        if m > 0:
            lam = np.linalg.eigvalsh(0.5 * (ic + ic.T))
            if lam[0] < -tol or lam[2] > lam[0] + lam[1] + tol:
                return False
    return bool(np.all(model.Ia >= -tol) and np.all(model.Fc >= -tol) and np.all(model.Fv >= -tol))


def write_model_urdf(model: RobotModel, path: str | Path, **options: Any) -> None:
    """Write ``model.to_urdf()`` to ``path``; refuses a physically inconsistent model."""
    if not is_physically_consistent(model, tol=1e-9):
        raise ValueError("the model is not physically consistent (negative mass or inertia): "
                         "use physically_consistent_estimate() before exporting a URDF")
    Path(path).write_text(model.to_urdf(**options))
