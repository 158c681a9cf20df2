"""Test oracle: a Pinocchio model built directly from a RobotModel's MDH table.

Independent of the code under test: each joint is a Pinocchio revolute/prismatic
joint about ±z placed at the constant MDH transform Rot(x,α)Trans(x,d)Rot(z,θ)Trans(z,r)
of its row (the joint offset is in θ or r), attached to the antecedent joint; the
base transform is folded into the placement of the joints whose antecedent is 0.
Inertias are converted from Khalil's standard parameters (001 eq. 7.3, XY = -∫xy dm)
to Pinocchio's (mass, COM, inertia about the COM).  Random models for property tests.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from robot_dynamics.model.mdh import PRISMATIC, mdh_transform
from robot_dynamics.model.robot_model import MDHJoint, RobotModel


def pinocchio_inertia(p: np.ndarray) -> pin.Inertia:
    """Pinocchio inertia from XX XY XZ YY YZ ZZ MX MY MZ M (about O_j, in R_j)."""
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = p
    j_o = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    c = np.array([mx, my, mz]) / m
    i_c = j_o - m * (c @ c * np.eye(3) - np.outer(c, c))
    return pin.Inertia(m, c, i_c)


def pinocchio_model(model: RobotModel) -> pin.Model:
    """Pinocchio model equivalent to ``model`` (joint i+1 = MDH joint i+1, in URDF coordinates)."""
    pm = pin.Model()
    for j, jt in enumerate(model.joints, start=1):
        placement = mdh_transform(jt.alpha, jt.d, jt.theta, jt.r)
        if jt.antecedent == 0:
            placement = model.base_transform @ placement
        axis = np.array([0.0, 0.0, jt.sign])
        if jt.sigma == PRISMATIC:
            jm = pin.JointModelPZ() if jt.sign > 0 else pin.JointModelPrismaticUnaligned(axis)
        else:
            jm = pin.JointModelRZ() if jt.sign > 0 else pin.JointModelRevoluteUnaligned(axis)
        se3 = pin.SE3(placement[:3, :3].copy(), placement[:3, 3].copy())
        jid = pm.addJoint(jt.antecedent, jm, se3, jt.name)
        assert jid == j
        pm.appendBodyToJoint(jid, pinocchio_inertia(model.inertial[j - 1]), pin.SE3.Identity())
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    return pm


def random_inertial(rng: np.random.Generator) -> np.ndarray:
    """Physically consistent standard parameters of one link (positive mass, SPD COM inertia)."""
    m = rng.uniform(0.5, 5.0)
    c = rng.uniform(-0.3, 0.3, 3)
    a = rng.normal(size=(3, 3))
    sigma = a @ a.T * 0.02 * m + 1e-3 * np.eye(3)  # second moment of the mass distribution
    i_c = np.trace(sigma) * np.eye(3) - sigma
    j_o = i_c + m * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([j_o[0, 0], j_o[0, 1], j_o[0, 2], j_o[1, 1], j_o[1, 2], j_o[2, 2], *(m * c), m])


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    qq, rr = np.linalg.qr(rng.normal(size=(3, 3)))
    qq = qq * np.sign(np.diag(rr))
    return qq if np.linalg.det(qq) > 0 else -qq


def random_model(
    rng: np.random.Generator,
    n: int | None = None,
    tree: bool = False,
    friction: bool = False,
    prismatic: bool = True,
) -> RobotModel:
    """Random MDH robot: random α, d, θ, r, σ, signs, inertias, base transform, gravity."""
    n = int(rng.integers(1, 8)) if n is None else n
    joints = []
    path = [0]  # joint j-1 and its ancestors: a tree stays in depth-first order (as Pinocchio needs)
    for j in range(1, n + 1):
        sigma = int(rng.random() < 0.3) if prismatic else 0
        ant = int(rng.choice(path)) if tree else j - 1
        path = path[: path.index(ant) + 1] + [j]
        joints.append(
            MDHJoint(
                name=f"j{j}",
                antecedent=ant,
                sigma=sigma,
                alpha=float(rng.choice([0.0, np.pi / 2, -np.pi / 2, rng.uniform(-np.pi, np.pi)])),
                d=float(rng.uniform(-0.5, 0.5)),
                theta=float(rng.uniform(-np.pi, np.pi)),
                r=float(rng.uniform(-0.5, 0.5)),
                sign=float(rng.choice([1.0, -1.0])),
                link=f"link{j}",
            )
        )
    base = np.eye(4)
    base[:3, :3] = random_rotation(rng)
    base[:3, 3] = rng.uniform(-0.5, 0.5, 3)
    tip = np.eye(4)
    tip[:3, :3] = random_rotation(rng)
    tip[:3, 3] = rng.uniform(-0.2, 0.2, 3)
    frames = {"base_link": (0, np.eye(4)), **{f"link{j}": (j, np.eye(4)) for j in range(1, n + 1)}, "tool": (n, tip)}
    kw = {}
    if friction:
        kw = {"Ia": rng.uniform(0, 0.5, n), "Fc": rng.uniform(0, 2, n), "Fv": rng.uniform(0, 1, n)}
    return RobotModel(
        joints=joints,
        base_link="base_link",
        tip_link="tool",
        name="random",
        base_transform=base,
        frames=frames,
        inertial=np.array([random_inertial(rng) for _ in range(n)]),
        gravity=rng.normal(size=3) * 5.0,
        **kw,
    )


def random_states(rng: np.random.Generator, n: int, count: int, scale: float = 2.0) -> tuple[np.ndarray, ...]:
    q = rng.uniform(-np.pi, np.pi, (count, n))
    qd = rng.uniform(-scale, scale, (count, n))
    qdd = rng.uniform(-scale, scale, (count, n))
    return q, qd, qdd
