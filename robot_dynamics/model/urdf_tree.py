"""The kinematic tree of a parsed URDF and its traversal.

:class:`URDFTree` (links with their :class:`URDFInertial`, :class:`URDFJoint` joints, parent joint and
children of each link, the root); :func:`chain_joints` — the joints from a base link down to a tip link;
the joints under a link in pre-order, the position a **locked** joint is held at and its transform
(:func:`joint_motion`), and the tip of a whole-tree model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .urdf_geometry import make_transform

MOVING_TYPES = ("revolute", "continuous", "prismatic")
KNOWN_TYPES = MOVING_TYPES + ("fixed", "floating", "planar")


@dataclass
class URDFInertial:
    mass: float
    pose: np.ndarray  # COM frame in the link frame
    inertia: np.ndarray  # about the COM, in the COM frame
    problems: list[str] = field(default_factory=list)  # violated consistency conditions (inertia_problems)


@dataclass
class URDFJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    friction: float = 0.0
    damping: float = 0.0
    mimic: bool = False


@dataclass
class URDFTree:
    name: str
    links: dict[str, URDFInertial | None] = field(default_factory=dict)
    joints: dict[str, URDFJoint] = field(default_factory=dict)
    parent_joint: dict[str, str] = field(default_factory=dict)  # child link -> joint name
    children: dict[str, list[str]] = field(default_factory=dict)  # link -> joint names
    root: str = ""


WORLD = "world"  # Gazebo's convention: the root link a robot is fixed to


def default_base(tree: URDFTree) -> str:
    """The base a model takes when none is named: the URDF root; but a massless ``world`` root fixed to a single
    link by an identity joint (how a Gazebo URDF fixes the robot) is skipped, so that the model's base frame keeps
    the robot's own name (``base_link``) and everything in that frame is unchanged.  A ``world`` fixed with an
    offset stays the base (the offset is part of the model)."""
    root = tree.root
    below = tree.children.get(root, [])
    if root == WORLD and tree.links.get(root) is None and len(below) == 1:
        jt = tree.joints[below[0]]
        if jt.type == "fixed" and np.allclose(jt.origin, np.eye(4), rtol=0.0, atol=1e-12):
            return jt.child
    return root


# ------------------------------------------------------------------ chain
def chain_joints(tree: URDFTree, base: str, tip: str) -> list[URDFJoint]:
    """URDF joints from ``base`` down to ``tip`` (fixed ones included), base first."""
    out = []
    link = tip
    while link != base:
        jn = tree.parent_joint.get(link)
        if jn is None:
            raise ValueError(f"tip link {tip!r} is not below base link {base!r}")
        out.append(tree.joints[jn])
        link = out[-1].parent
    return out[::-1]


def joint_motion(jt: URDFJoint, value: float) -> np.ndarray:
    """Transform of a revolute/continuous (rotation about the axis) or prismatic joint at ``value``."""
    axis = np.asarray(jt.axis, float)
    axis = axis / np.linalg.norm(axis)
    if jt.type == "prismatic":
        return make_transform(np.eye(3), value * axis)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    rot = np.eye(3) + math.sin(value) * k + (1.0 - math.cos(value)) * (k @ k)  # Rodrigues
    return make_transform(rot, np.zeros(3))


def _preorder(tree: URDFTree, base: str) -> list[URDFJoint]:
    """Joints under ``base`` in depth-first pre-order, children in URDF order: a parent joint first."""
    out: list[URDFJoint] = []
    stack = list(reversed(tree.children[base]))
    while stack:
        jt = tree.joints[stack.pop()]
        out.append(jt)
        stack.extend(reversed(tree.children[jt.child]))
    return out


def _lock_value(jt: URDFJoint, given: float | None) -> float:
    """The position a locked joint is held at: ``given`` (checked against the limits) or 0 clipped into them."""
    lo, up = jt.lower, jt.upper
    if jt.type == "continuous":
        lo, up = -math.inf, math.inf
    if given is None:
        return float(min(max(0.0, lo), up))
    v = float(given)
    if not math.isfinite(v):
        raise ValueError(f"locked_positions[{jt.name!r}] is not finite: {given!r}")
    tol = 1e-12 * max(1.0, abs(lo) if math.isfinite(lo) else 0.0, abs(up) if math.isfinite(up) else 0.0)
    if v < lo - tol or v > up + tol:
        raise ValueError(f"locked_positions[{jt.name!r}] = {v:g} is outside the joint limits [{lo:g}, {up:g}]")
    return v


def _default_tip_eff(eff: list[URDFJoint], base: str, tree: URDFTree) -> str:
    """Tip of a whole-tree model: the unique leaf reached through moving joints (or the common last
    moving link) when the moving joints form one chain, else "" (a tree has no single tip)."""
    kids: dict[str, list[URDFJoint]] = {}
    for jt in eff:
        kids.setdefault(jt.parent, []).append(jt)
    leaves: list[tuple[str, str]] = []
    stack: list[tuple[str, str | None]] = [(base, None)]
    while stack:
        link, last = stack.pop()
        ks = kids.get(link, [])
        if not ks and last is not None:
            leaves.append((link, last))
        for jt in ks:
            stack.append((jt.child, jt.child if jt.type in MOVING_TYPES else last))
    if len(leaves) == 1:
        return leaves[0][0]
    ends = {last for _, last in leaves}
    return ends.pop() if len(ends) == 1 else ""
