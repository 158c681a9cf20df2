"""Khalil–Kleinfinger modified Denavit–Hartenberg (MDH) geometry.

Frame R_j is attached to link j, z_j along joint axis j, x_j along the common
normal of z_j and z_{j+1} (seed 002 §3.2).  The transform from the antecedent
frame R_{a(j)} to R_j is (002 eq. 3.2)::

    ^{i}T_j = Rot(x, alpha_j) Trans(x, d_j) Rot(z, theta_j) Trans(z, r_j)

The joint variable is q_j = sigma_bar_j theta_j + sigma_j r_j (002 eq. 3.1,
errata 38), sigma_j = 0 for a revolute joint, 1 for a prismatic joint.
"""

from __future__ import annotations

import numpy as np

REVOLUTE = 0
PRISMATIC = 1


def mdh_transform(alpha: float, d: float, theta: float, r: float) -> np.ndarray:
    """Homogeneous transform ^{j-1}T_j of one MDH row (002 eq. 3.2)."""
    ca, sa = np.cos(alpha), np.sin(alpha)
    ct, st = np.cos(theta), np.sin(theta)
    return np.array(
        [
            [ct, -st, 0.0, d],
            [ca * st, ca * ct, -sa, -r * sa],
            [sa * st, sa * ct, ca, r * ca],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def mdh_transform_batch(alpha: float, d: float, theta: np.ndarray, r: np.ndarray) -> np.ndarray:
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
    return out
