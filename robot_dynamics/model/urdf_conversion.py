"""Exact URDF -> Khalil modified-DH conversion (seed 002 §3.2).

Frames are placed with the conventions of 002 §3.2:

* z_j on the axis of joint j (flipped, with ``sign_j = -1``, when it is
  antiparallel to z_{j-1}, so that parallel axes get alpha_j = 0);
* x_j along the common normal of z_j and z_{j+1}; for intersecting axes x_j is
  normal to their plane, through the intersection point; the sign of x_j (and
  the choice of x_j for collinear axes) follows the URDF child-link frame, so a
  URDF exported from an MDH table gives back that table;
* parallel axes: O_j is placed so that r_j = 0, or r_{j+1} = 0 when the URDF
  child frame is closer to that choice (002 §3.2 notes);
* prismatic joints: only the axis direction matters; the axis line is moved to
  meet z_{j-1} so that d_j = 0;
* R0 is aligned with R1 at q1 = 0 and x_n with x_{n-1} at q_n = 0 (so alpha_1 =
  d_1 = 0, r_1 = 0 and theta_n = r_n = 0 for a revolute joint n).

``base_transform`` is the constant pose of R0 in ``base_link``; every URDF link
of the chain (and every link rigidly attached to it through fixed joints) is
stored in ``frames`` with its constant pose ^jT_link in the frame R_j of the
moving link that carries it (j = 0 for links before the first moving joint).

Inertial parameters: the ``<inertial>`` of each link (mass m, COM frame pose
(c, R) in the link frame, inertia I_c about the COM in the COM frame) is
re-expressed in R_j about O_j (Huygens–Steiner)::

    J_Oj = R I_c R^T + m (|c|^2 1 - c c^T),   MS_j = m c

with c and R now expressed in R_j.  The stored products of inertia are the
tensor entries of 001 eq. [7.3]: XY = J[0, 1] = -∫xy dm (same convention as the
URDF ``ixy`` attribute and as SYMORO).  Links merged through fixed joints add
their parameters to the moving link that carries them; what is attached to
R0 (the base) is dropped.  ``Fc`` = ``<dynamics friction>``, ``Fv`` =
``<dynamics damping>``; ``Ia`` and acceleration limits come from keyword
arguments (default 0 and +inf).

Modules: this module holds the conversion (:func:`urdf_model_arguments`, :func:`model_arguments`); the
pieces are in

* :mod:`~robot_dynamics.model.urdf_parsing` — :func:`parse_urdf`: URDF text to a checked tree, lenient
  parsing (issue 14), urdf_parser_py's warnings to the logger ``robot_dynamics.model.urdf_conversion``;
* :mod:`~robot_dynamics.model.urdf_xacro` — the source: text, a file, a xacro file (issue 14);
* :mod:`~robot_dynamics.model.urdf_tree` — the tree (:class:`URDFTree`), chains, locked joints;
* :mod:`~robot_dynamics.model.urdf_geometry` — joint axes to MDH frames and rows (002 §3.2), rotations;
* :mod:`~robot_dynamics.model.urdf_inertia` — physical consistency of the inertials (issue 14) and
  :func:`inertia_about_origin` (Huygens–Steiner).

Every name defined in this module before it was split is importable from it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .mdh import PRISMATIC, REVOLUTE, ROUND_OFF_TOL, MDHJoint, mdh_transform
from .urdf_geometry import _FAR_FOOT as _FAR_FOOT
from .urdf_geometry import _LEN_TOL as _LEN_TOL
from .urdf_geometry import _NEAR_PAR as _NEAR_PAR
from .urdf_geometry import _PAR_TOL as _PAR_TOL
from .urdf_geometry import _any_perp as _any_perp
from .urdf_geometry import _closest_points as _closest_points
from .urdf_geometry import _common_normal as _common_normal
from .urdf_geometry import _perp_unit as _perp_unit
from .urdf_geometry import _project as _project
from .urdf_geometry import _snap_angle as _snap_angle
from .urdf_geometry import _snap_length as _snap_length
from .urdf_geometry import (
    inverse_transform,
    make_transform,
    matrix_to_rpy,
    mdh_parameters,
    mdh_row,
    place_mdh_frames,
    rpy_to_matrix,
)
from .urdf_inertia import INERTIA_ATOL as INERTIA_ATOL
from .urdf_inertia import INERTIA_RTOL as INERTIA_RTOL
from .urdf_inertia import check_inertias, inertia_about_origin, inertia_problems
from .urdf_parsing import _INERTIAL_KEEP as _INERTIAL_KEEP
from .urdf_parsing import _JOINT_KEEP as _JOINT_KEEP
from .urdf_parsing import _LINK_KEEP as _LINK_KEEP
from .urdf_parsing import _ROBOT_KEEP as _ROBOT_KEEP
from .urdf_parsing import _check_origin as _check_origin
from .urdf_parsing import _floats as _floats
from .urdf_parsing import _inertial as _inertial
from .urdf_parsing import _joint as _joint
from .urdf_parsing import _keep_only as _keep_only
from .urdf_parsing import _kept_elements as _kept_elements
from .urdf_parsing import _number as _number
from .urdf_parsing import _pose as _pose
from .urdf_parsing import _prevalidated_xml as _prevalidated_xml
from .urdf_parsing import _quiet_urdf_parser_py as _quiet_urdf_parser_py
from .urdf_parsing import _strip_unused as _strip_unused
from .urdf_parsing import _xacro_content as _xacro_content
from .urdf_parsing import parse_urdf
from .urdf_tree import KNOWN_TYPES as KNOWN_TYPES
from .urdf_tree import MOVING_TYPES as MOVING_TYPES
from .urdf_tree import URDFInertial, URDFJoint, URDFTree, chain_joints, default_base, joint_motion
from .urdf_tree import _default_tip_eff as _default_tip_eff
from .urdf_tree import _lock_value as _lock_value
from .urdf_tree import _preorder as _preorder
from .urdf_xacro import _XACRO_ARG as _XACRO_ARG
from .urdf_xacro import _XACRO_LOCK as _XACRO_LOCK
from .urdf_xacro import TEXT_ONLY_MESSAGE as TEXT_ONLY_MESSAGE
from .urdf_xacro import XACRO_TEXT_MESSAGE as XACRO_TEXT_MESSAGE
from .urdf_xacro import _read_source as _read_source
from .urdf_xacro import _xacro_cause as _xacro_cause
from .urdf_xacro import _xacro_where as _xacro_where
from .urdf_xacro import expand_xacro, is_xacro_path, xacro_mappings

_LOG = logging.getLogger(__name__)


# ------------------------------------------------------------------ main
def urdf_model_arguments(
    source: Any,
    base_link: str | None = None,
    tip_link: str | None = None,
    *,
    locked_positions: Mapping[str, float] | None = None,
    rotor_inertia: dict[str, float] | None = None,
    acceleration_limits: dict[str, float] | None = None,
    text_only: bool = False,
    xacro_args: Mapping[str, Any] | Sequence[str] | None = None,
    allow_inconsistent_inertia: bool = False,
) -> dict[str, Any]:
    """Constructor arguments of the exact MDH :class:`~robot_dynamics.model.robot_model.RobotModel` of the URDF
    under ``base_link`` (``RobotModel.from_urdf`` is the public entry; this module never imports the model).

    Without ``tip_link``: the whole kinematic tree (every moving joint under ``base_link``) in the
    Khalil–Kleinfinger tree notation.  With ``tip_link``: the chain ``base_link`` -> ``tip_link``;
    every moving joint off it is **locked** at ``locked_positions[name]`` (default 0, clipped into its
    limits) and its subtree lumped onto the chain link it hangs from, like a fixed joint; the locked
    joints are in ``model.locked_joints`` (and logged).  ``locked_positions`` may also lock joints of a
    whole tree.

    ``source`` is a path (``.urdf``, or ``.xacro`` expanded with ``xacro_args``: ``{name: value}`` or
    ``["name:=value"]``) or URDF XML text.  ``base_link`` defaults to the URDF root.  ``text_only=True``
    (what a node uses for text from requests and topics) refuses anything but XML text, never opening a
    file.  ``allow_inconsistent_inertia=True`` turns the inertia consistency errors into warnings.
    """
    tree = parse_urdf(source, text_only=text_only, xacro_args=xacro_args)
    return model_arguments(
        tree, base_link, tip_link, locked_positions=locked_positions,
        rotor_inertia=rotor_inertia, acceleration_limits=acceleration_limits,
        allow_inconsistent_inertia=allow_inconsistent_inertia,
    )


def model_arguments(
    tree: URDFTree,
    base_link: str | None = None,
    tip_link: str | None = None,
    *,
    locked_positions: Mapping[str, float] | None = None,
    rotor_inertia: dict[str, float] | None = None,
    acceleration_limits: dict[str, float] | None = None,
    allow_inconsistent_inertia: bool = False,
) -> dict[str, Any]:
    """:func:`urdf_model_arguments` on a parsed :class:`URDFTree`."""
    base = base_link or default_base(tree)
    if base not in tree.links:
        raise ValueError(f"unknown base link {base!r}; links: {sorted(tree.links)}")
    if tip_link is not None and tip_link not in tree.links:
        raise ValueError(f"unknown tip link {tip_link!r}; links: {sorted(tree.links)}")
    if locked_positions is not None and not isinstance(locked_positions, Mapping):
        raise ValueError(f"locked_positions must be a mapping {{joint name: position}}, got {type(locked_positions).__name__}")
    locked_in = dict(locked_positions or {})
    below = _preorder(tree, base)
    by_name = {jt.name: jt for jt in below}
    on_chain: set[str] = set()
    if tip_link is not None:
        chain = chain_joints(tree, base, tip_link)
        on_chain = {jt.name for jt in chain}
        for jt in chain:
            if jt.type in ("floating", "planar"):
                raise ValueError(f"joint {jt.name!r} in the chain is {jt.type}: only revolute/prismatic/fixed supported")
            if jt.mimic and jt.type in MOVING_TYPES:
                raise ValueError(f"joint {jt.name!r} in the chain is a mimic joint: not supported")
    for name in locked_in:
        jt = by_name.get(name)
        if jt is None:
            known = sorted(j.name for j in below if j.type in MOVING_TYPES)
            raise ValueError(f"locked_positions: {name!r} is not a moving joint under {base!r}; moving joints: {known}")
        if jt.type not in MOVING_TYPES:
            raise ValueError(f"locked_positions: joint {name!r} is {jt.type}, only moving joints can be locked")
        if name in on_chain:
            raise ValueError(f"locked_positions: joint {name!r} is on the chain {base!r} -> {tip_link!r}; it cannot be locked")
    # effective joints: locked ones become fixed joints at their locked pose
    locked: dict[str, float] = {}
    eff: list[URDFJoint] = []
    for jt in below:
        lock = jt.type in MOVING_TYPES and (jt.name in locked_in or (tip_link is not None and jt.name not in on_chain))
        if lock:
            value = _lock_value(jt, locked_in.get(jt.name))
            locked[jt.name] = value
            jt = URDFJoint(**{**vars(jt), "type": "fixed", "origin": jt.origin @ joint_motion(jt, value)})
        elif jt.type in ("floating", "planar"):
            if tip_link is None:
                raise ValueError(
                    f"joint {jt.name!r} is {jt.type}: only revolute, continuous, prismatic and fixed joints are "
                    "modelled (pass base_link below it, or tip_link to model one chain and lock the rest)"
                )
            locked[jt.name] = 0.0
            jt = URDFJoint(**{**vars(jt), "type": "fixed"})
        eff.append(jt)
    moving = [jt for jt in eff if jt.type in MOVING_TYPES]
    if not moving:
        what = f"between {base!r} and {tip_link!r}" if tip_link is not None else f"under base link {base!r}"
        raise ValueError(f"empty chain: no moving joint {what}")
    for name, d in (("rotor_inertia", rotor_inertia), ("acceleration_limits", acceleration_limits)):
        unknown = sorted(set(d or {}) - {jt.name for jt in moving})
        if unknown:
            raise ValueError(f"{name}: unknown joint names {unknown}")
    if locked:
        _LOG.info("locked joints (lumped like fixed joints): %s", ", ".join(f"{k}={v:g}" for k, v in locked.items()))
    mimic = [jt.name for jt in moving if jt.mimic]
    if mimic:
        _LOG.info("mimic joints modelled as independent joints: %s", ", ".join(mimic))

    # poses of every link at q = 0 in base_link, and the moving joint (1-based, 0 = base) that carries it
    index = {jt.name: k for k, jt in enumerate(moving, start=1)}
    pose = {base: np.eye(4)}
    carrier = {base: 0}
    for jt in eff:  # pre-order: the parent link is done first
        pose[jt.child] = pose[jt.parent] @ jt.origin
        carrier[jt.child] = index.get(jt.name, carrier[jt.parent])
    check_inertias(tree, [k for k in pose if carrier[k] > 0], allow_inconsistent_inertia)
    n = len(moving)
    ant = [carrier[jt.parent] for jt in moving]
    succ: dict[int, list[int]] = {k: [] for k in range(n + 1)}
    for k, a in enumerate(ant, start=1):
        succ[a].append(k)
    depth = [1] * (n + 1)
    for k in range(n, 0, -1):
        depth[ant[k - 1]] = max(depth[ant[k - 1]], depth[k] + 1)
    main = {i: max(s, key=lambda k: (depth[k], -k)) for i, s in succ.items() if s}  # longest branch, URDF order on ties

    def path_from(k: int) -> list[int]:
        out = [k]
        while out[-1] in main:
            out.append(main[out[-1]])
        return out

    points = {k: pose[jt.child][:3, 3] for k, jt in enumerate(moving, start=1)}
    axes = {k: pose[jt.child][:3, :3] @ jt.axis for k, jt in enumerate(moving, start=1)}
    prism = {k: jt.type == "prismatic" for k, jt in enumerate(moving, start=1)}
    hints = {k: pose[jt.child] for k, jt in enumerate(moving, start=1)}
    frame: dict[int, np.ndarray] = {}
    sign: dict[int, float] = {}
    params: dict[int, tuple[float, ...]] = {}  # k -> (gamma, b, alpha, d, theta, r)
    # R0: aligned with R1 at q1 = 0 (a chain: always), unless another successor of the base is then nearly
    # but not exactly parallel to z_0 while the base link frame has no such defect (Allegro's thumb, HyQ's
    # hips): an axis parallel to z_0 only to within _PAR_TOL cannot be placed exactly (see _PAR_TOL)
    def defect(z0: np.ndarray, ks: list[int]) -> float:
        cs = [float(np.linalg.norm(np.cross(z0, axes[k] / np.linalg.norm(axes[k])))) for k in ks]
        return max([c for c in cs if ROUND_OFF_TOL < c < _PAR_TOL], default=0.0)

    z1 = axes[main[0]] / np.linalg.norm(axes[main[0]])
    base_frame = len(succ[0]) > 1 and defect(np.array([0.0, 0.0, 1.0]), succ[0]) < defect(z1, succ[0])
    if base_frame:
        base_transform = np.eye(4)  # R0 = the base link frame: every successor of 0 is a tree row
        frame[0] = base_transform
        todo = [0]
    else:
        first = path_from(main[0])
        fr, sg = place_mdh_frames([points[k] for k in first], [axes[k] for k in first], [prism[k] for k in first],
                                  [hints[k] for k in first])
        base_transform = fr[0].copy()  # R0 aligned with R1 at q1 = 0
        frame[0] = base_transform
        prev = base_transform
        for k, f, s_ in zip(first, fr, sg, strict=True):
            frame[k], sign[k] = f, s_
            params[k] = mdh_row(prev, f)
            prev = f
        todo = [0, *first]
    while todo:  # branches: a successor other than the main one, placed with (gamma, b) (Khalil–Kleinfinger)
        i = todo.pop(0)
        for s0 in succ[i]:
            if s0 == main[i] and not (i == 0 and base_frame):
                continue
            br = path_from(s0)
            fi = frame[i]
            fr, sg = place_mdh_frames(
                [fi[:3, 3], *(points[k] for k in br)], [fi[:3, 2], *(axes[k] for k in br)],
                [False, *(prism[k] for k in br)], [fi, *(hints[k] for k in br)],
            )
            u = fr[0]  # z = z_i, x = the common normal of z_i and z_s0, origin on z_i
            gamma = math.atan2(float(np.cross(fi[:3, 0], u[:3, 0]) @ fi[:3, 2]), float(fi[:3, 0] @ u[:3, 0]))
            b = float((u[:3, 3] - fi[:3, 3]) @ fi[:3, 2])
            prev = u
            for m, (k, f, s_) in enumerate(zip(br, fr[1:], sg[1:], strict=True)):
                frame[k], sign[k] = f, s_
                g2, b2, *rest = mdh_row(prev, f)
                if m == 0:  # Rot(z, gamma) Trans(z, b) and the row's own (gamma, b) are about the same z
                    g2, b2 = _snap_angle(math.remainder(gamma + g2, 2 * math.pi)), _snap_length(b + b2)
                params[k] = (g2, b2, *rest)
                prev = f
            todo.extend(br)

    rows = []
    for k, jt in enumerate(moving, start=1):
        gamma, b, alpha, d, theta, r = params[k]
        rows.append(
            MDHJoint(
                name=jt.name, antecedent=ant[k - 1], sigma=PRISMATIC if prism[k] else REVOLUTE,
                alpha=alpha, d=d, theta=theta, r=r, gamma=gamma, b=b, sign=sign[k], link=jt.child,
                lower=jt.lower, upper=jt.upper, velocity=jt.velocity, effort=jt.effort,
                acceleration=float((acceleration_limits or {}).get(jt.name, math.inf)),
            )
        )
    # exact MDH frame poses at q = 0 (from the table itself), to attach the URDF links
    mdh_pose = [base_transform]
    for row in rows:
        mdh_pose.append(mdh_pose[row.antecedent] @ mdh_transform(row.alpha, row.d, row.theta, row.r, row.gamma, row.b))
    inv_pose = [inverse_transform(t) for t in mdh_pose]
    frames = {}
    inertial = np.zeros((len(rows), 10))
    for link, tl in pose.items():
        jj = carrier[link]
        t = inv_pose[jj] @ tl
        t[3] = (0.0, 0.0, 0.0, 1.0)
        frames[link] = (jj, t)
        ine = tree.links[link]
        if ine is not None and jj > 0:
            tc = t @ ine.pose
            inertial[jj - 1] += inertia_about_origin(ine.mass, tc[:3, 3], tc[:3, :3], ine.inertia)
    tip = tip_link if tip_link is not None else _default_tip_eff(eff, base, tree)
    ia = np.array([float((rotor_inertia or {}).get(jt.name, 0.0)) for jt in moving])
    return dict(
        joints=rows, base_link=base, tip_link=tip, name=tree.name, base_transform=base_transform,
        frames=frames, inertial=inertial, Ia=ia,
        Fc=np.array([jt.friction for jt in moving]), Fv=np.array([jt.damping for jt in moving]),
        locked_joints=locked,
    )


__all__ = [
    "URDFInertial",
    "URDFJoint",
    "URDFTree",
    "chain_joints",
    "check_inertias",
    "expand_xacro",
    "inertia_problems",
    "is_xacro_path",
    "xacro_mappings",
    "inertia_about_origin",
    "inverse_transform",
    "make_transform",
    "matrix_to_rpy",
    "mdh_parameters",
    "mdh_row",
    "joint_motion",
    "model_arguments",
    "urdf_model_arguments",
    "parse_urdf",
    "place_mdh_frames",
    "rpy_to_matrix",
]
