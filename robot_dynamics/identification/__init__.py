"""Identification of the base dynamic parameters (issue 10): exciting trajectories, data,
least-squares estimation, Lin's sequential method, YAML/model/URDF output."""

from .data import IdentificationData, load_bag, load_csv, load_data, load_npz, preprocess, save_csv, save_npz, write_bag
from .estimation import (
    IdentificationResult,
    base_parameters_of,
    estimate,
    physically_consistent_estimate,
)
from .excitation import ExcitationResult, FourierTrajectory, condition_number, optimize_excitation

__all__ = [
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
