"""MDH -> URDF export (DH -> URDF).

Each moving joint j becomes a URDF joint whose child link frame is the MDH frame
R_j and whose parent is the link of frame R_{a(j)} (a tree stays a tree):
origin = ^{a(j)}T_j at q = 0 (002 eq. 3.2 with the constant theta_j / r_j, preceded by
Rot(z, gamma_j) Trans(z, b_j) for a tree row),
axis = (0, 0, sign_j), so URDF joint values are the model's URDF coordinates.
``base_transform`` is folded into the origins of the joints carried by R0.
Links of ``frames`` that are not an MDH frame hang on fixed joints.

Inertials: the standard parameters of link j (001 eq. [7.3], about O_j in R_j)
are written as mass M_j, COM c = MS_j / M_j (rpy = 0, i.e. axes of R_j) and the
inertia about the COM I_c = J_Oj - M_j (|c|^2 1 - c c^T).  ``Fc`` / ``Fv`` go to
``<dynamics friction/damping>``; ``Ia`` and acceleration limits have no URDF
tag and are not exported.  Floats are written with ``repr`` (lossless).

``geometry=True`` adds simple ``<visual>`` and ``<collision>`` shapes drawn from the MDH table, for
RViz (none of them is read back by ``RobotModel.from_urdf``, which keeps only kinematics and inertials):
a cylinder along z_j at O_j for a revolute joint j (a box for a prismatic one), in link j; in the
antecedent link a(j) the segments O_a(j) -> (0, 0, b_j) along z_a(j) and -> + d_j x' along
x' = Rot(z, gamma_j) x_a(j); in link j the segment (0, 0, -r_j) -> O_j along z_j (a box for a prismatic
joint); base_link -> O_0, a base plate, and carrier origin -> frame origin for the other frames (tool).
Radii scale with the robot size (sum of its offsets); segments under ``MIN_SEGMENT`` are skipped.
The shapes must not change a MuJoCo model compiled from this URDF (MuJoCo's importer would give an
inertia-free link the mass of its shapes and collide the shapes): a ``<mujoco>`` element
(``MUJOCO_URDF_OPTIONS``, ignored by urdfdom) sets ``inertiafromgeom="false"`` and disables contacts.
(The package's own plant, :mod:`robot_dynamics.sim.simulator`, is built from the MDH model, not from
the URDF, and has no geoms at all.)
``world_link=True`` adds a ``world`` link, the URDF root, fixed to ``base_link`` by the identity joint
``world_joint`` (Gazebo's convention: libsdformat fixes the model to the world through it; a ``world`` hung
below ``base_link`` is dropped and the arm falls), and gives ``base_link`` a physical ``<inertial>`` (a solid
cylinder under the first joint, the mass of the moving links): libsdformat drops a massless root and the whole tree
with it.  ``RobotModel.from_urdf`` skips such a ``world`` root (``urdf_tree.default_base``), so its base is still
``base_link``, its frame naming and R0 unchanged; the base's inertia never enters a fixed-base model.  RViz can use
Fixed Frame ``world``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple
from xml.sax.saxutils import quoteattr

import numpy as np

from .mdh import PRISMATIC, mdh_transform
from .urdf_conversion import matrix_to_rpy

if TYPE_CHECKING:
    from .data import RobotData

_IDENTITY_TOL = 1e-12
MIN_SEGMENT = 1e-3  # m: shorter link segments get no geometry
WORLD_LINK = "world"
# read by MuJoCo's own URDF import only (urdfdom, hence robot_state_publisher / RViz / Pinocchio, and
# RobotModel.from_urdf ignore it): no mass from the shapes of inertia-free links (tool), no contacts
MUJOCO_URDF_OPTIONS = (
    "  <mujoco>\n"
    '    <compiler inertiafromgeom="false" discardvisual="true"/>\n'
    '    <option><flag contact="disable"/></option>\n'
    "  </mujoco>\n"
)
MATERIALS = {  # name -> rgba
    "rd_base": (0.25, 0.25, 0.28, 1.0),
    "rd_link": (0.85, 0.45, 0.1, 1.0),
    "rd_link_alt": (0.95, 0.95, 0.95, 1.0),
    "rd_joint": (0.15, 0.35, 0.75, 1.0),
    "rd_tool": (0.8, 0.1, 0.1, 1.0),
}


def _num(v: float, short: bool = False) -> str:
    """Lossless ``repr``; ``short`` drops the round-off noise (<= 1e-15 relative) of the COM/inertia
    re-expression so that e.g. 0.1 is not written 0.10000000000000002."""
    v = float(v)
    if v == 0.0:
        return "0"
    if short:
        text = f"{v:.15g}"
        if abs(float(text) - v) <= 1e-15 * abs(v):
            return text
    return repr(v)


def _vec(v: Any) -> str:
    return " ".join(_num(x) for x in v)


def _origin(t: np.ndarray, indent: str) -> str:
    xyz = np.where(np.abs(t[:3, 3]) < 1e-15, 0.0, t[:3, 3])  # cos(pi/2) round-off
    return f'{indent}<origin xyz="{_vec(xyz)}" rpy="{_vec(matrix_to_rpy(t[:3, :3]))}"/>\n'


def _inertial_xml(p: np.ndarray, indent: str, what: str) -> str:
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = (float(v) for v in p)
    j_o = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if m > 0:
        c = np.array([mx, my, mz]) / m
        i_c = j_o - m * ((c @ c) * np.eye(3) - np.outer(c, c))
    elif m == 0 and max(abs(mx), abs(my), abs(mz)) == 0:
        c, i_c = np.zeros(3), j_o
    else:
        raise ValueError(f"{what}: mass {m} and first moments ({mx}, {my}, {mz}) cannot be written as a URDF inertial")
    i2 = indent + "  "
    return (
        f"{indent}<inertial>\n"
        f'{i2}<origin xyz="{" ".join(_num(x, True) for x in c)}" rpy="0 0 0"/>\n'
        f'{i2}<mass value="{_num(m)}"/>\n'
        f'{i2}<inertia ixx="{_num(i_c[0, 0], True)}" ixy="{_num(i_c[0, 1], True)}" ixz="{_num(i_c[0, 2], True)}" '
        f'iyy="{_num(i_c[1, 1], True)}" iyz="{_num(i_c[1, 2], True)}" izz="{_num(i_c[2, 2], True)}"/>\n'
        f"{indent}</inertial>\n"
    )


def _base_inertial_xml(model: RobotData, indent: str) -> str:
    """A physical inertial for the fixed base: a solid cylinder (radius and height a tenth of the robot's size)
    standing on the base frame, with the mass of the moving links (at least 1 kg); written as the links' are, from
    its standard parameters about the frame (XX..ZZ, MX..MZ, M)."""
    size = max(robot_size(model), 0.1)
    r = h = 0.1 * size
    m = max(float(np.sum(model.inertial[:, 9])), 1.0)
    ixx, izz = m * (3 * r * r + h * h) / 12.0, m * r * r / 2.0  # about the centre of mass (0, 0, h/2)
    c = h / 2.0
    p = np.array([ixx + m * c * c, 0.0, 0.0, ixx + m * c * c, 0.0, izz, 0.0, 0.0, m * c, m])  # parallel axes
    return _inertial_xml(p, indent, "the base")


class _Shape(NamedTuple):
    """One ``<visual>``/``<collision>`` shape: pose in its link, URDF geometry element, material name."""

    pose: np.ndarray
    geometry: str
    material: str


def _segment_pose(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Pose whose z axis runs from ``p`` to ``q``, origin at the midpoint (minimal rotation from z)."""
    u = (q - p) / np.linalg.norm(q - p)
    t = np.eye(4)
    t[:3, 3] = (p + q) / 2
    w = np.cross([0.0, 0.0, 1.0], u)
    s, c = float(np.linalg.norm(w)), float(u[2])
    if s < 1e-12:
        t[:3, :3] = np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    else:
        k = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]]) / s
        t[:3, :3] = np.eye(3) + s * k + (1 - c) * (k @ k)
    return t


def _segment(p: Any, q: Any, radius: float, material: str, box: bool = False) -> list[_Shape]:
    """A cylinder (or square box) of ``radius`` from ``p`` to ``q``; none if shorter than ``MIN_SEGMENT``."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    length = float(np.linalg.norm(q - p))
    if length < MIN_SEGMENT:
        return []
    geo = (f'<box size="{_num(2 * radius, True)} {_num(2 * radius, True)} {_num(length, True)}"/>' if box
           else f'<cylinder radius="{_num(radius, True)}" length="{_num(length, True)}"/>')
    return [_Shape(_segment_pose(p, q), geo, material)]


def robot_size(model: RobotData) -> float:
    """Sum of the MDH offsets |b| + |d| + |r|, of |O_0| in base_link and of the offsets of the frames carried
    by a moving link (tool) (m)."""
    size = float(np.linalg.norm(model.base_transform[:3, 3]))
    size += sum(abs(jt.b) + abs(jt.d) + abs(jt.r) for jt in model.joints)
    size += sum(float(np.linalg.norm(t[:3, 3])) for j, t in model.frames.values() if j > 0)
    return size


def link_shapes(model: RobotData, frame_link: dict[int, str]) -> dict[str, list[_Shape]]:
    """Visual/collision shapes per link name, drawn from the MDH table (see the module docstring)."""
    radius = max(0.025 * robot_size(model), 0.005)
    shapes: dict[str, list[_Shape]] = {k: [] for k in [*frame_link.values(), *model.frames]}
    bt = model.base_transform
    origin = np.zeros(3)

    def in_link(j: int, t: np.ndarray) -> np.ndarray:  # a pose of R_j (j = 0: R0) in the URDF link of frame j
        return bt @ t if j == 0 else t

    base = frame_link[0]
    plate = f'<cylinder radius="{_num(3 * radius, True)}" length="{_num(radius, True)}"/>'
    shapes[base].append(_Shape(_segment_pose(origin, np.array([0.0, 0.0, radius])), plate, "rd_base"))
    shapes[base] += _segment(origin, bt[:3, 3], 1.2 * radius, "rd_base")
    for j, jt in enumerate(model.joints, start=1):
        a, link = jt.antecedent, frame_link[j]
        color = "rd_link" if j % 2 else "rd_link_alt"
        p1 = np.array([0.0, 0.0, jt.b])
        p2 = p1 + jt.d * np.array([math.cos(jt.gamma), math.sin(jt.gamma), 0.0])
        for p, q in ((origin, p1), (p1, p2)):
            for sh in _segment(p, q, radius, "rd_base" if a == 0 else ("rd_link" if a % 2 else "rd_link_alt")):
                shapes[frame_link[a]].append(sh._replace(pose=in_link(a, sh.pose)))
        prism = jt.sigma == PRISMATIC
        shapes[link] += _segment(np.array([0.0, 0.0, -jt.r]), origin, radius, color, box=prism)
        half = np.array([0.0, 0.0, 2.0 * radius])
        shapes[link] += _segment(-half, half, (1.0 if prism else 1.4) * radius, "rd_joint", box=prism)
    for link, (j, t) in model.frames.items():
        if link in shapes and shapes[link]:
            continue
        tt = in_link(j, t)
        back = np.linalg.inv(tt)[:3, 3]  # the carrier link's origin in this frame
        seg = _segment(back, origin, 0.6 * radius, "rd_tool")
        shapes[link] += seg or [_Shape(np.eye(4), f'<sphere radius="{_num(radius, True)}"/>', "rd_tool")]
    return shapes


def _shapes_xml(shapes: list[_Shape], indent: str) -> str:
    out = []
    i2 = indent + "  "
    for sh in shapes:
        pose = _origin(sh.pose, i2)
        out.append(f"{indent}<visual>\n{pose}{i2}<geometry>{sh.geometry}</geometry>\n"
                   f'{i2}<material name="{sh.material}"/>\n{indent}</visual>\n')
    for sh in shapes:
        out.append(f"{indent}<collision>\n{_origin(sh.pose, i2)}{i2}<geometry>{sh.geometry}</geometry>\n"
                   f"{indent}</collision>\n")
    return "".join(out)


def model_to_urdf(
    model: RobotData,
    *,
    name: str | None = None,
    include_inertial: bool = True,
    geometry: bool = False,
    world_link: bool = False,
) -> str:
    """URDF text of ``model`` (kinematics, inertials, limits, friction); ``geometry``: visual and collision
    shapes drawn from the MDH table; ``world_link``: a ``world`` link fixed to the base (module docstring)."""
    n = model.dof
    frame_link: dict[int, str] = {0: model.base_link}
    used = set(model.frames) | {model.base_link} | {j.link for j in model.joints if j.link}
    for j, jt in enumerate(model.joints, start=1):
        cand = [jt.link] + [k for k, (fj, _) in model.frames.items() if fj == j]
        pick = next(
            (k for k in cand if k in model.frames and model.frames[k][0] == j
             and np.allclose(model.frames[k][1], np.eye(4), rtol=0.0, atol=_IDENTITY_TOL)),
            None,
        )
        if pick is None:
            pick = jt.link if jt.link and jt.link not in model.frames else f"mdh_frame_{j}"
            while pick in used and pick != jt.link:
                pick += "_"
            used.add(pick)
        frame_link[j] = pick
    if n and len(set(frame_link.values())) != n + 1:
        raise ValueError(f"link names of the MDH frames are not unique: {frame_link}")

    out = [f'<?xml version="1.0"?>\n<robot name={quoteattr(name or model.name)}>\n']
    inertial_of = {frame_link[j]: model.inertial[j - 1] for j in range(1, n + 1)}
    links = list(dict.fromkeys([*frame_link.values(), *model.frames]))
    shapes = link_shapes(model, frame_link) if geometry else {}
    if geometry:
        out.append(MUJOCO_URDF_OPTIONS)
        out += [f'  <material name="{k}"><color rgba="{_vec(c)}"/></material>\n' for k, c in MATERIALS.items()]
    add_world = world_link and WORLD_LINK not in links
    for link in links:
        body = ""
        if include_inertial and link in inertial_of and np.any(inertial_of[link] != 0):
            body = _inertial_xml(inertial_of[link], "    ", f"link {link!r}")
        elif add_world and link == frame_link[0]:  # a base Gazebo keeps (module docstring)
            body = _base_inertial_xml(model, "    ")
        body += _shapes_xml(shapes.get(link, []), "    ")
        out.append(f"  <link name={quoteattr(link)}>\n{body}  </link>\n" if body else f"  <link name={quoteattr(link)}/>\n")
    if add_world:
        out.append(f"  <link name={quoteattr(WORLD_LINK)}/>\n")

    for j, jt in enumerate(model.joints, start=1):
        t = mdh_transform(jt.alpha, jt.d, jt.theta, jt.r, jt.gamma, jt.b)
        if jt.antecedent == 0:
            t = model.base_transform @ t
        prism = jt.sigma == PRISMATIC
        bounded = math.isfinite(jt.lower) and math.isfinite(jt.upper)
        jtype = "prismatic" if prism else ("revolute" if bounded else "continuous")
        s = [f"  <joint name={quoteattr(jt.name)} type={quoteattr(jtype)}>\n"]
        s.append(f"    <parent link={quoteattr(frame_link[jt.antecedent])}/>\n")
        s.append(f"    <child link={quoteattr(frame_link[j])}/>\n")
        s.append(_origin(t, "    "))
        s.append(f'    <axis xyz="0 0 {_num(jt.sign)}"/>\n')
        lim = []
        if bounded:
            lim.append(f'lower="{_num(jt.lower)}" upper="{_num(jt.upper)}"')
        if bounded or math.isfinite(jt.effort) or math.isfinite(jt.velocity):
            # the URDF spec requires both; 0 stands for "no limit" (read back as +inf)
            for key in ("effort", "velocity"):
                v = getattr(jt, key)
                lim.append(f'{key}="{_num(v) if math.isfinite(v) else "0"}"')
        if lim:
            s.append(f"    <limit {' '.join(lim)}/>\n")
        fc, fv = float(model.Fc[j - 1]), float(model.Fv[j - 1])
        if fc or fv:
            s.append(f'    <dynamics damping="{_num(fv)}" friction="{_num(fc)}"/>\n')
        s.append("  </joint>\n")
        out.append("".join(s))

    for link, (j, t) in model.frames.items():
        if link == frame_link.get(j) or link == model.base_link:
            continue
        tt = model.base_transform @ t if j == 0 else t
        out.append(
            f"  <joint name={quoteattr(link + '_fixed_joint')} type=\"fixed\">\n"
            f"    <parent link={quoteattr(frame_link[j])}/>\n    <child link={quoteattr(link)}/>\n"
            f"{_origin(tt, '    ')}  </joint>\n"
        )
    if add_world:  # the root, fixed to the base (module docstring)
        out.append(
            f"  <joint name=\"world_joint\" type=\"fixed\">\n    <parent link={quoteattr(WORLD_LINK)}/>\n"
            f"    <child link={quoteattr(frame_link[0])}/>\n{_origin(np.eye(4), '    ')}  </joint>\n"
        )
    out.append("</robot>\n")
    return "".join(out)


__all__ = ["MATERIALS", "MIN_SEGMENT", "MUJOCO_URDF_OPTIONS", "WORLD_LINK", "link_shapes", "model_to_urdf", "robot_size"]
