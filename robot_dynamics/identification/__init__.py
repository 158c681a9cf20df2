"""Identification of the base dynamic parameters (issue 10): exciting trajectories, data,
least-squares estimation, Lin's sequential method, YAML/model/URDF output."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, imported on first use (a node that only swaps models never loads scipy.optimize)
    from .data import (
        IdentificationData,
        load_bag,
        load_csv,
        load_data,
        load_npz,
        preprocess,
        save_csv,
        save_npz,
        write_bag,
    )
    from .estimation import (
        IdentificationResult,
        base_parameters_of,
        estimate,
        identify,
        physically_consistent_estimate,
    )
    from .excitation import ExcitationResult, FourierTrajectory, condition_number, optimize_excitation
    from .io import (
        is_physically_consistent,
        load_result_yaml,
        model_with_base_parameters,
        result_to_yaml,
        write_model_urdf,
    )
    from .lin import TABLE_II, LinResult, inertia_constants, lin_identify, lin_stanford_example

_WHERE = {
    **dict.fromkeys(("IdentificationData", "load_bag", "load_csv", "load_data", "load_npz", "preprocess", "save_csv",
                     "save_npz", "write_bag"), "data"),
    **dict.fromkeys(("IdentificationResult", "base_parameters_of", "estimate", "identify",
                     "physically_consistent_estimate"), "estimation"),
    **dict.fromkeys(("ExcitationResult", "FourierTrajectory", "condition_number", "optimize_excitation"), "excitation"),
    **dict.fromkeys(("is_physically_consistent", "load_result_yaml", "model_with_base_parameters", "result_to_yaml",
                     "write_model_urdf"), "io"),
    **dict.fromkeys(("TABLE_II", "LinResult", "inertia_constants", "lin_identify", "lin_stanford_example"), "lin"),
}


def __getattr__(name: str) -> Any:
    """``robot_dynamics.identification.<name>``: imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:  # a submodule (``identification.streaming``), as an eager package would have it
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "TABLE_II",
    "LinResult",
    "identify",
    "inertia_constants",
    "is_physically_consistent",
    "lin_identify",
    "lin_stanford_example",
    "load_result_yaml",
    "model_with_base_parameters",
    "result_to_yaml",
    "write_model_urdf",
    "ExcitationResult",
    "FourierTrajectory",
    "IdentificationData",
    "IdentificationResult",
    "base_parameters_of",
    "condition_number",
    "estimate",
    "load_bag",
    "load_csv",
    "load_data",
    "load_npz",
    "optimize_excitation",
    "physically_consistent_estimate",
    "preprocess",
    "save_csv",
    "save_npz",
    "write_bag",
]
