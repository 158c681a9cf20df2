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
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import quoteattr

import numpy as np

from .mdh import PRISMATIC, mdh_transform
from .urdf_conversion import matrix_to_rpy

if TYPE_CHECKING:
    from .robot_model import RobotModel

_IDENTITY_TOL = 1e-12


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


def model_to_urdf(model: RobotModel, *, name: str | None = None, include_inertial: bool = True) -> str:
    """URDF text of ``model`` (kinematics, inertials, limits, friction)."""
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
    for link in links:
        body = ""
        if include_inertial and link in inertial_of and np.any(inertial_of[link] != 0):
            body = _inertial_xml(inertial_of[link], "    ", f"link {link!r}")
        out.append(f"  <link name={quoteattr(link)}>\n{body}  </link>\n" if body else f"  <link name={quoteattr(link)}/>\n")

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
    out.append("</robot>\n")
    return "".join(out)


__all__ = ["model_to_urdf"]
