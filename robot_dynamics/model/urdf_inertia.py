"""Inertial parameters of URDF links: their physical consistency and their transform to an MDH frame.

Physical consistency (issue 14): each ``<inertial>`` whose link is carried by a moving joint of
the model (its inertia enters the dynamics) is checked by :func:`inertia_problems` (finite mass >= 0;
zero mass only with a zero tensor; positive semi-definite tensor; triangle inequalities of the
principal moments, tolerance ``INERTIA_RTOL`` relative plus ``INERTIA_ATOL`` = 1e-15 kg m^2); a
violation is a ``ValueError`` naming the link and the condition, or a :func:`warnings.warn` with
``allow_inconsistent_inertia=True`` (:func:`check_inertias`).  Links fixed to the base (a legged robot's
trunk, a mobile base's antennas) never move: their inertia is not used, so it can never make a file fail.

:func:`inertia_about_origin` re-expresses a body (mass m, COM frame pose (c, R), inertia I_c about the COM
in the COM frame) about the origin of the frame c and R are expressed in (Huygens–Steiner)::

    J_O = R I_c R^T + m (|c|^2 1 - c c^T),   MS = m c

as [XX XY XZ YY YZ ZZ MX MY MZ M], the products of inertia being the tensor entries of 001 eq. [7.3]:
XY = J[0, 1] = -∫xy dm (same convention as the URDF ``ixy`` attribute and as SYMORO).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from .urdf_tree import URDFTree

INERTIA_RTOL = 1e-9  # relative tolerance of the inertia consistency checks (PSD, triangle inequalities)
INERTIA_ATOL = 1e-15  # kg m^2: round-off floor of those checks (iCub's tensors of ~1e-20 are zeros written with noise)


def inertia_problems(
    mass: float, inertia: np.ndarray, rtol: float = INERTIA_RTOL, atol: float = INERTIA_ATOL
) -> list[str]:
    """Violated physical-consistency conditions of a rigid body (mass, 3x3 inertia about its COM); [] if none.

    Conditions: mass finite and >= 0; zero mass only with a zero tensor (a massless link); a finite,
    symmetric, positive semi-definite tensor; principal moments I1 + I2 >= I3 (each permutation).
    Tolerance: ``rtol`` times the largest principal moment (or tensor entry), plus ``atol``.
    """
    if not math.isfinite(mass):
        return [f"mass {mass} is not finite"]
    if not np.all(np.isfinite(inertia)):
        return ["inertia is not finite"]
    problems = []
    if mass < 0:
        problems.append(f"negative mass {mass:g} (mass must be > 0, or 0 for a massless link)")
    scale = float(np.abs(inertia).max())
    if mass == 0 and scale > atol:
        problems.append("zero mass with a non-zero inertia tensor (a massless link must have a zero inertia)")
    if scale == 0:
        return problems
    if not np.allclose(inertia, inertia.T, rtol=0, atol=rtol * scale + atol):
        problems.append("inertia tensor is not symmetric")
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    tol = rtol * max(float(np.abs(moments).max()), scale) + atol
    diagonal = not np.any(inertia[~np.eye(3, dtype=bool)])
    names = ("ixx", "iyy", "izz") if diagonal else ("I1", "I2", "I3")
    values = np.diag(inertia) if diagonal else moments
    shown = ", ".join(f"{n} = {v:.6g}" for n, v in zip(names, values, strict=True))
    if moments[0] < -tol:
        problems.append(
            f"inertia tensor is not positive semi-definite (principal moments {', '.join(f'{v:.6g}' for v in moments)})"
        )
    for a, b, c in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        if values[a] + values[b] < values[c] - tol:
            kind = "" if diagonal else "principal moments "
            problems.append(
                f"triangle inequality {names[a]} + {names[b]} >= {names[c]} violated ({kind}{shown})"
            )
    return problems


def check_inertias(tree: URDFTree, links: Sequence[str], allow_inconsistent_inertia: bool = False) -> None:
    """Physical consistency of the ``<inertial>`` of ``links`` (those whose inertia enters the model): a
    ValueError naming the first bad link and its conditions, or one warning per bad link with
    ``allow_inconsistent_inertia=True``.  Links fixed to the base never move and are not checked."""
    for link in links:
        ine = tree.links.get(link)
        if ine is None or not ine.problems:
            continue
        text = f"link {link!r} inertial is physically inconsistent: {'; '.join(ine.problems)}"
        if not allow_inconsistent_inertia:
            raise ValueError(f"{text} (allow_inconsistent_inertia=True / --allow-inconsistent-inertia to accept it)")
        warnings.warn(text, stacklevel=4)


def inertia_about_origin(mass: float, com: np.ndarray, rot: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """[XX XY XZ YY YZ ZZ MX MY MZ M] of a body: J_O = R I_c R^T + m(|c|^2 1 - c c^T), MS = m c."""
    c = np.asarray(com, float)
    j = rot @ inertia_com @ rot.T + mass * ((c @ c) * np.eye(3) - np.outer(c, c))
    return np.array([j[0, 0], j[0, 1], j[0, 2], j[1, 1], j[1, 2], j[2, 2], *(mass * c), mass])
