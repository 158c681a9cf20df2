"""Inertial algebra of the standard parameters (001 eq. 7.3), with no simulator behind it.

A link's standard parameters, in frame R_j about O_j, are ``XX XY XZ YY YZ ZZ MX MY MZ M``
(:data:`INERTIAL_NAMES`, products of inertia XY = -∫xy dm), then ``Ia Fc Fv`` in the rows of
13 that :attr:`RobotModel.standard_parameter_values` lists.  This module turns them into the
mass, centre of mass and central inertia (c = MS / M, I_c = J_O - M(|c|² 1 - c cᵀ)) and back,
repairs a central inertia to a physically realizable one, and builds the model variants a study
needs (a payload, a perturbed "true" plant).  NumPy only: the identification, the MuJoCo plant
(:mod:`robot_dynamics.sim.simulator`) and the model all use it, so none of them needs MuJoCo for it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from .data import INERTIAL_NAMES, RobotData

Model = TypeVar("Model", bound=RobotData)  # a variant is of the class of the model it is made from
MIN_INERTIA = 1e-12  # kg m^2: smallest principal moment physically_consistent leaves (MuJoCo refuses zeros)


def skew(v: Any) -> np.ndarray:
    """Skew-symmetric matrices (..., 3, 3) of vectors (..., 3): skew(a) b = a × b (002 eq. 2.41's â)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def inertia_tensor(row: np.ndarray) -> np.ndarray:
    """J_O (3, 3) from ``XX XY XZ YY YZ ZZ`` (001 eq. 7.3, XY = -∫xy dm)."""
    xx, xy, xz, yy, yz, zz = row[:6]
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def central_inertia(row: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(M, c, I_c) of one link from its standard parameters: c = MS/M, I_c = J_O - M(|c|²I - cc^T)."""
    m = float(row[9])
    jo = inertia_tensor(row)
    if m <= 0.0:
        return 0.0, np.zeros(3), jo
    c = np.asarray(row[6:9], float) / m
    return m, c, jo - m * (c @ c * np.eye(3) - np.outer(c, c))


def standard_row(m: float, c: np.ndarray, ic: np.ndarray) -> np.ndarray:
    """Inverse of :func:`central_inertia`: (M, c, I_c) -> XX XY XZ YY YZ ZZ MX MY MZ M."""
    jo = ic + m * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([jo[0, 0], jo[0, 1], jo[0, 2], jo[1, 1], jo[1, 2], jo[2, 2], *(m * c), m])


def physically_consistent(
    ic: np.ndarray, floor: float = MIN_INERTIA, margin: float = 1e-9
) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments (3,) and axes (3, 3, columns) of I_c, repaired to a realizable tensor.

    Eigenvalues are clamped to ``floor`` and each one to at most ``(1 - margin)`` times
    the sum of the two others (triangle inequality of a rigid body's principal moments,
    with a margin so that MuJoCo's own check passes after rounding).
    """
    sym = 0.5 * (ic + ic.T)
    lam, vec = np.linalg.eigh(sym)
    # ascending order: only the largest moment can break the triangle inequality once the
    # smallest is at least 2*margin*largest (then lam1 <= lam0 + lam2 still holds strictly)
    lam = np.maximum(lam, max(floor, 2.0 * margin * float(lam[-1])))
    lam[2] = min(lam[2], (1.0 - margin) * (lam[0] + lam[1]))
    if np.linalg.det(vec) < 0:
        vec[:, 2] = -vec[:, 2]
    return lam, vec


# ------------------------------------------------------------------ model variants
def with_payload(model: Model, mass: float, com: Any = (0.0, 0.0, 0.0), link: str | None = None) -> Model:
    """A copy of ``model`` carrying a point mass ``mass`` at ``com`` (expressed in URDF ``link``, default tip)."""
    if not np.isfinite(mass) or mass < 0.0:
        raise ValueError(f"payload mass must be finite and >= 0, got {mass}")
    com = np.asarray(com, float)
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise ValueError("payload com must be a finite 3-vector")
    link = link or model.tip_link
    if link not in model.frames:
        raise ValueError(f"unknown payload link {link!r}")
    j, t = model.frames[link]
    if j == 0:
        raise ValueError(f"link {link!r} is fixed to the base; a payload there has no effect")
    p = t[:3, :3] @ com + t[:3, 3]  # point in R_j
    values = model.standard_parameter_values.reshape(model.dof, 13).copy()
    row = values[j - 1]
    jo_add = mass * (p @ p * np.eye(3) - np.outer(p, p))
    row[:6] += [jo_add[0, 0], jo_add[0, 1], jo_add[0, 2], jo_add[1, 1], jo_add[1, 2], jo_add[2, 2]]
    row[6:9] += mass * p
    row[9] += mass
    return model.with_standard_parameters(values.ravel())


def perturbed(
    model: Model,
    rel_error: float,
    rng: np.random.Generator | int | None = None,
    *,
    signs_only: bool = True,
    friction: bool = False,
) -> Model:
    """A copy of ``model`` with every inertial parameter XX..M (and Ia) off by ``rel_error``.

    Each nonzero standard parameter p becomes ``p (1 + rel_error u)`` with u = ±1
    (random sign; uniform in [-1, 1] if ``signs_only`` is False), friction too if
    ``friction``.  The result is then made physically realizable link by link
    (M > 0, I_c positive definite with the triangle inequality, see
    :func:`physically_consistent`), so that it can be simulated; the returned model
    holds exactly the parameters MuJoCo will use.
    """
    if not np.isfinite(rel_error) or not 0.0 <= rel_error < 1.0:
        raise ValueError(f"rel_error must be in [0, 1), got {rel_error}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    values = model.standard_parameter_values.reshape(model.dof, 13).copy()
    ncol = 13 if friction else 11
    u = rng.choice([-1.0, 1.0], size=(model.dof, ncol)) if signs_only else rng.uniform(-1.0, 1.0, (model.dof, ncol))
    values[:, :ncol] *= 1.0 + rel_error * u
    for j in range(model.dof):
        m, c, ic = central_inertia(values[j, :10])
        if m <= 0.0:
            continue
        floor = max(MIN_INERTIA, 1e-6 * float(np.abs(ic).max(initial=0.0)))
        lam, vec = physically_consistent(ic, floor=floor, margin=1e-6)
        values[j, :10] = standard_row(m, c, vec @ np.diag(lam) @ vec.T)
    return model.with_standard_parameters(values.ravel())


__all__ = [
    "skew",
    "INERTIAL_NAMES",
    "MIN_INERTIA",
    "central_inertia",
    "inertia_tensor",
    "perturbed",
    "physically_consistent",
    "standard_row",
    "with_payload",
]
