"""Khalil–Kleinfinger modified Denavit–Hartenberg (MDH) geometry.

Frame R_j is attached to link j, z_j along joint axis j, x_j along the common
normal of z_j and z_{j+1} (seed 002 §3.2).  The transform from the antecedent
frame R_{a(j)} to R_j is (002 eq. 3.2)::

    ^{i}T_j = Rot(x, alpha_j) Trans(x, d_j) Rot(z, theta_j) Trans(z, r_j)

In a tree (Khalil & Kleinfinger 1986, the notation of the SYMORO line), when the
antecedent i = a(j) has several successors, x_i can be the common normal with only
one of them; frame j is then placed with two more parameters (gamma_j, b_j)::

    ^{i}T_j = Rot(z, gamma_j) Trans(z, b_j) Rot(x, alpha_j) Trans(x, d_j) Rot(z, theta_j) Trans(z, r_j)

(u_j, the common normal of z_i and z_j, is x_i turned by gamma_j about z_i and moved by
b_j along it).  gamma_j = b_j = 0 gives the serial row of 002 eq. 3.2.

The joint variable is q_j = sigma_bar_j theta_j + sigma_j r_j (002 eq. 3.1,
errata 38), sigma_j = 0 for a revolute joint, 1 for a prismatic joint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

REVOLUTE = 0
PRISMATIC = 1

# The one round-off tolerance of the package (URDF conversion, base parameters, customized models): an MDH angle within
# ROUND_OFF_TOL rad of k*pi/2, or a length within ROUND_OFF_TOL m of 0, *is* that value up to the
# rounding of the frame arithmetic (measured on example-robot-data: <= 4e-17).  Snapping therefore
# never changes the model by more than round-off; a value off by more (e.g. xarm7 rpy="1.5708", UR
# rpy="1.570796325") is kept as written and handled as general geometry, which is exact.
ROUND_OFF_TOL = 1e-15


def mdh_transform(alpha: float, d: float, theta: float, r: float, gamma: float = 0.0, b: float = 0.0) -> np.ndarray:
    """Homogeneous transform ^{a(j)}T_j of one MDH row (002 eq. 3.2; with gamma, b the tree form above)."""
    ca, sa = np.cos(alpha), np.sin(alpha)
    ct, st = np.cos(theta), np.sin(theta)
    t = np.array(
        [
            [ct, -st, 0.0, d],
            [ca * st, ca * ct, -sa, -r * sa],
            [sa * st, sa * ct, ca, r * ca],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
    if gamma != 0.0 or b != 0.0:
        t = gamma_b_transform(gamma, b) @ t
    return t


def gamma_b_transform(gamma: float, b: float) -> np.ndarray:
    """Rot(z, gamma) Trans(z, b): the part of a tree row before the serial MDH row."""
    cg, sg = np.cos(gamma), np.sin(gamma)
    return np.array([[cg, -sg, 0.0, 0.0], [sg, cg, 0.0, 0.0], [0.0, 0.0, 1.0, b], [0.0, 0.0, 0.0, 1.0]])


def mdh_transform_batch(
    alpha: float, d: float, theta: np.ndarray, r: np.ndarray, gamma: float = 0.0, b: float = 0.0
) -> np.ndarray:
    """Vectorized :func:`mdh_transform` over arrays ``theta`` and ``r`` (same shape S).

    Returns an array of shape ``S + (4, 4)``.
    """
    theta = np.asarray(theta, dtype=float)
    r = np.broadcast_to(np.asarray(r, dtype=float), theta.shape)
    ca, sa = np.cos(alpha), np.sin(alpha)
    ct, st = np.cos(theta), np.sin(theta)
    out = np.zeros(theta.shape + (4, 4))
    out[..., 0, 0] = ct
    out[..., 0, 1] = -st
    out[..., 0, 3] = d
    out[..., 1, 0] = ca * st
    out[..., 1, 1] = ca * ct
    out[..., 1, 2] = -sa
    out[..., 1, 3] = -r * sa
    out[..., 2, 0] = sa * st
    out[..., 2, 1] = sa * ct
    out[..., 2, 2] = ca
    out[..., 2, 3] = r * ca
    out[..., 3, 3] = 1.0
    if gamma != 0.0 or b != 0.0:
        out = gamma_b_transform(gamma, b) @ out
    return out


@dataclass(frozen=True)
class MDHJoint:
    """One row of Khalil's table (j, a(j), sigma, gamma, b, alpha, d, theta, r) and its URDF joint.

    ``gamma``, ``b`` are 0 for a serial row; in a tree they place frame j when its antecedent has
    several successors (see :mod:`robot_dynamics.model.mdh`).  Frozen: ``dataclasses.replace(row, ...)``
    makes a modified copy."""

    name: str
    antecedent: int
    sigma: int
    alpha: float
    d: float
    theta: float
    r: float
    sign: float = 1.0
    link: str = ""
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    acceleration: float = math.inf
    gamma: float = 0.0
    b: float = 0.0

    @property
    def offset(self) -> float:
        """Constant part of the MDH joint variable (theta_j or r_j)."""
        return self.r if self.sigma == PRISMATIC else self.theta

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                v = None if math.isnan(v) else (".inf" if v > 0 else "-.inf")
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MDHJoint:
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            v = data[f.name]
            if v == ".inf":
                v = math.inf
            elif v == "-.inf":
                v = -math.inf
            elif v is None:
                v = math.nan
            kw[f.name] = v
        kw["antecedent"] = int(kw["antecedent"])
        kw["sigma"] = int(kw["sigma"])
        if kw["sigma"] not in (REVOLUTE, PRISMATIC):
            raise ValueError(f"joint {kw.get('name')!r}: sigma must be 0 or 1, got {kw['sigma']}")
        for k in ("alpha", "d", "theta", "r", "gamma", "b", "sign", "lower", "upper", "velocity", "effort", "acceleration"):
            if k in kw:
                kw[k] = float(kw[k])
        return cls(**kw)
