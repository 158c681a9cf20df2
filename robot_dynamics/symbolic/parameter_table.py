"""The parameters kept in a customized program (001 §7.5.3).

``"standard"``: the 10 inertial parameters per link, rotor inertia and friction when present.  ``"base"``:
parameters without effect removed, grouped ones replaced by their regrouped value — 000's closed-form
method (:mod:`robot_dynamics.dynamics.base_parameters`), else the numeric choice of
:func:`base_parameter_choice` (000 eq. 20 naming).  ``simplified=True`` additionally treats the inertial
parameters whose value is zero in the model as structural zeros (001 Table 7.5 note: diagonal inertia
tensors and first moments with zero components).  :func:`_parameter_table` is memoized on the model's
content: the base parameters are computed once per model and shared by its programs.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC


# --------------------------------------------------------------- base parameters
@dataclass
class BaseParameterChoice:
    """Numeric base parameters: kept standard columns, their regrouped values and relations."""

    kept: list[str]
    values: np.ndarray
    grouped: dict[str, dict[str, float]]
    eliminated: list[str]


def base_parameter_choice(model: Any, seed: int = 0) -> BaseParameterChoice:
    """Select base parameters among the standard ones (001 §7.5.3, 000 eq. 20).

    Columns of the standard regressor at random states are taken greedily in the
    order XX XY XZ YZ ZZ MX MY (all links), Ia Fc Fv, then YY MZ M, so that the
    parameters eliminated are those the seed regroups (YY_j, MZ_j, M_j of a revolute
    joint).  The relation ``β = p_B + K p_D`` is solved by least squares on the
    sampled regressor (exact up to rounding; coefficients below 1e-9 are zeroed).
    """
    from ..dynamics.inverse_dynamics import regressor

    n = model.dof
    rng = np.random.default_rng(seed)
    ns = max(12, 3 * n)
    q = rng.uniform(-math.pi, math.pi, (ns, n))
    q = np.where(model.sigma == PRISMATIC, rng.uniform(-1.0, 1.0, (ns, n)), q)
    w = regressor(model, q, rng.normal(size=(ns, n)), rng.normal(size=(ns, n)))
    w = w.reshape(ns * n, 13 * n)
    names = model.standard_parameter_names
    idx = {nm: k for k, nm in enumerate(names)}
    first = ("XX", "XY", "XZ", "YZ", "ZZ", "MX", "MY")
    order = [f"{k}{j}" for j in range(1, n + 1) for k in first]
    order += [f"{k}{j}" for j in range(1, n + 1) for k in ("Ia", "Fc", "Fv")]
    order += [f"{k}{j}" for j in range(n, 0, -1) for k in ("M", "MZ", "YY")]
    scale = np.linalg.norm(w, axis=0)
    tol = 1e-9 * max(scale.max(), 1.0)
    basis = np.zeros((w.shape[0], 0))
    kept: list[str] = []
    for nm in order:
        col = w[:, idx[nm]]
        if scale[idx[nm]] <= tol:
            continue
        res = col - basis @ (basis.T @ col)
        res = res - basis @ (basis.T @ res)
        if np.linalg.norm(res) > 1e-7 * scale[idx[nm]]:
            basis = np.column_stack([basis, res / np.linalg.norm(res)])
            kept.append(nm)
    kept.sort(key=lambda x: idx[x])
    dep = [nm for nm in names if nm not in kept]
    wb = w[:, [idx[k] for k in kept]]
    wd = w[:, [idx[k] for k in dep]]
    kmat = np.linalg.lstsq(wb, wd, rcond=None)[0] if dep else np.zeros((len(kept), 0))
    kmat[np.abs(kmat) < 1e-9] = 0.0
    p = model.standard_parameter_values
    values = p[[idx[k] for k in kept]] + kmat @ p[[idx[k] for k in dep]]
    grouped = {
        kb: {dep[c]: float(kmat[r, c]) for c in range(len(dep)) if kmat[r, c] != 0.0}
        for r, kb in enumerate(kept)
    }
    eliminated = list(dep)
    return BaseParameterChoice(kept, values, {k: v for k, v in grouped.items() if v}, eliminated)


def _parameter_symbol_name(std_name: str, grouped: bool) -> str:
    """'XX2' -> 'XXR2' for a regrouped parameter (000 eq. 20 naming)."""
    k = std_name.rstrip("0123456789")
    j = std_name[len(k):]
    return f"{k}R{j}" if grouped else std_name


# --------------------------------------------------------------- generation
def _closed_form_base_parameters(model: Any) -> dict[str, tuple[str, float]] | None:
    """Standard name -> (base name, value) from :mod:`robot_dynamics.dynamics.base_parameters` (000's
    closed-form method: the column carrying each base parameter), or None if unavailable."""
    try:
        from ..dynamics.base_parameters import base_parameters
    except ImportError:
        return None
    try:
        bp = base_parameters(model)
    except (ValueError, NotImplementedError, np.linalg.LinAlgError):
        return None
    names = model.standard_parameter_names
    return {names[int(c)]: (str(nm), float(v)) for c, nm, v in zip(bp.columns, bp.names, bp.values, strict=True)}


_TABLES: dict[tuple[str, str, bool, bool], dict[str, tuple[str, float]]] = {}


def _model_digest(model: Any) -> str:
    """Hash of everything the programs depend on (geometry, parameters, gravity, base transform)."""
    return hashlib.sha256(json.dumps(model.to_dict(), sort_keys=True).encode()).hexdigest()


def _parameter_table(model: Any, parameters: str, simplified: bool, all_symbols: bool) -> dict[str, tuple[str, float]]:
    """Standard name -> (symbol name, value) of the parameters kept in the program.

    Memoized by the model's content: the base parameters are computed once for all the programs of a model."""
    key = (_model_digest(model), parameters, simplified, all_symbols)
    if key not in _TABLES:
        if len(_TABLES) > 64:
            _TABLES.clear()
        _TABLES[key] = _parameter_table_uncached(model, parameters, simplified, all_symbols)
    return dict(_TABLES[key])


def _parameter_table_uncached(
    model: Any, parameters: str, simplified: bool, all_symbols: bool,
) -> dict[str, tuple[str, float]]:
    names = model.standard_parameter_names
    if parameters == "standard":
        vals = dict(zip(names, model.standard_parameter_values, strict=True))
        table = {nm: (nm, float(v)) for nm, v in vals.items()}
        if not all_symbols:
            # rotor inertia and friction enter only if present (001 §7.5.3: friction apart)
            table = {k: t for k, t in table.items() if not (k[:2] in ("Ia", "Fc", "Fv") and t[1] == 0.0)}
    elif parameters == "base":
        table = _closed_form_base_parameters(model)
        if table is None:
            ch = base_parameter_choice(model)
            table = {nm: (_parameter_symbol_name(nm, nm in ch.grouped), float(v)) for nm, v in zip(
                ch.kept, ch.values, strict=True)}
        if not all_symbols:
            table = {k: t for k, t in table.items() if not (k[:2] in ("Fc", "Fv") and t[1] == 0.0)}
    else:
        raise ValueError(f"parameters must be 'standard' or 'base', got {parameters!r}")
    if simplified:
        ref = max([abs(v) for _, v in table.values()] + [1.0])
        table = {k: t for k, t in table.items() if abs(t[1]) > 1e-12 * ref}
    return table
