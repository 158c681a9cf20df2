"""Identification of the base dynamic parameters (issue 10): exciting trajectories, data,
least-squares estimation, Lin's sequential method, YAML/model/URDF output."""

from .data import IdentificationData, load_bag, load_csv, load_data, load_npz, preprocess, save_csv, save_npz, write_bag
from .estimation import (
    IdentificationResult,
    base_parameters_of,
    estimate,
    identify,
    physically_consistent_estimate,
)
from .excitation import ExcitationResult, FourierTrajectory, condition_number, optimize_excitation
from .io import is_physically_consistent, load_result_yaml, model_with_base_parameters, result_to_yaml, write_model_urdf
from .lin import TABLE_II, LinResult, inertia_constants, lin_identify, lin_stanford_example

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
