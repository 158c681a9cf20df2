"""Parsing of URDF text or files into a checked kinematic tree (:func:`parse_urdf`).

Parsing: the robot structure (links, joints, inertials) is read by
``urdf_parser_py`` (``URDF.from_xml`` on the element tree of the text).  Its
warnings (one per unknown attribute or tag: Panda's ``mu_coulomb``,
``<gazebo>``, ``<ros2_control>`` ...), written to stderr through
``urdf_parser_py.xml_reflection.on_error``, go to the conversion's logger
(``robot_dynamics.model.urdf_conversion``) at DEBUG level during the call (hook
restored afterwards; not thread-safe).  A thin
:mod:`xml.etree` pass runs first:

* precise errors where the library's are poor: not-well-formed XML, root tag
  (not checked by the library), missing/empty link and joint names, unknown
  joint type (an assertion there, and it accepts type ``unknown``), missing
  ``<parent>``/``<child>`` link, origin/axis vectors with the wrong count,
  non-numbers, NaN/inf (the library says "Invalid vector length" and accepts
  NaN), bad ``<mass value>`` (reported without its location);
* the lenient defaults of this converter where the library is stricter: robot
  ``name`` ("robot"), ``<inertial>`` without ``<mass>`` (m = 0), missing
  ``<inertia>`` attributes (0), ``<axis>`` without ``xyz`` (1 0 0),
  ``<limit>`` without ``effort``/``velocity`` (+inf), and ``effort``/``velocity``
  of 0 also mean no limit (``urdf_export`` writes 0 for an unlimited one, since
  the URDF spec requires both attributes in ``<limit>``).

What urdf_parser_py does not represent or check is handled on its objects:
duplicate link/joint names (its ``link_map``/``joint_map`` silently keep the
last one: the lists are used), absent vs explicit ``lower``/``upper`` (parsed
with ``skip_default`` so that absent stays None: both absent = unbounded, one
absent = 0 as in the URDF spec), NaN in scalar attributes (``float('nan')`` is
accepted), undefined links, loops, several roots.  Other library errors
(non-number scalars, a ``version`` other than 1.0) become a ``ValueError`` with
the library's XPath.

Lenient parsing (issue 14): only what the dynamics uses reaches urdf_parser_py.
Every child of ``<robot>`` other than ``<link>``/``<joint>`` (``<material>``,
``<transmission>`` of any vintage, ``<gazebo>``, ``<ros2_control>``, sensors,
unknown tags), every child of ``<link>`` other than ``<inertial>`` (visual,
collision, ...), and every child of ``<joint>`` other than ``origin``,
``parent``, ``child``, ``axis``, ``limit``, ``dynamics``, ``mimic`` is removed
first, so it can never make a file fail.  A file is rejected only for what makes
the model wrong or undefined, with the cause named.

Physically inconsistent inertials are recorded (``URDFInertial.problems``), not refused here:
:func:`~robot_dynamics.model.urdf_inertia.check_inertias` checks those the model uses.
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import urdf_parser_py.xml_reflection as xml_reflection
import urdf_parser_py.xml_reflection.core as xml_core
from urdf_parser_py.urdf import URDF

from .urdf_geometry import make_transform, rpy_to_matrix
from .urdf_inertia import inertia_problems
from .urdf_tree import KNOWN_TYPES, MOVING_TYPES, URDFInertial, URDFJoint, URDFTree
from .urdf_xacro import XACRO_TEXT_MESSAGE, _read_source

_LOG = logging.getLogger("robot_dynamics.model.urdf_conversion")  # one logger for the whole conversion


# what the dynamics reads; everything else is removed before urdf_parser_py sees the file
_ROBOT_KEEP = ("link", "joint")
_LINK_KEEP = ("inertial",)
_INERTIAL_KEEP = ("origin", "mass", "inertia")
_JOINT_KEEP = ("origin", "parent", "child", "axis", "limit", "dynamics", "mimic")


def _floats(text: str | None, n: int, what: str) -> None:
    """Check an n-vector attribute (urdf_parser_py reports these only as 'Invalid vector length')."""
    if text is None:
        return
    parts = text.split()
    if len(parts) != n:
        raise ValueError(f"{what}: expected {n} numbers, got {text!r}")
    try:
        v = [float(p) for p in parts]
    except ValueError as exc:
        raise ValueError(f"{what}: not a number in {text!r}") from exc
    if not all(math.isfinite(x) for x in v):
        raise ValueError(f"{what}: NaN or inf in {text!r}")


def _check_origin(elem: ET.Element, what: str) -> None:
    o = elem.find("origin")
    if o is not None:
        _floats(o.get("xyz"), 3, f"{what} origin xyz")
        _floats(o.get("rpy"), 3, f"{what} origin rpy")


def _xacro_content(root: ET.Element) -> str | None:
    """A description of the first xacro construct in a parsed document (xacro-namespace element, or
    ``${...}`` / ``$(...)`` in an attribute of an element the dynamics reads), else None."""
    for e in root.iter():
        if isinstance(e.tag, str) and e.tag.startswith("{") and "xacro" in e.tag.split("}")[0]:
            return f"element <xacro:{e.tag.split('}')[1]}>"
    for e in _kept_elements(root):
        for k, v in e.attrib.items():
            if "${" in v or "$(" in v:
                return f"{k}={v[:80]!r} in <{e.tag}>"
    return None


def _kept_elements(root: ET.Element) -> Iterator[ET.Element]:
    for top in root:
        if top.tag == "link":
            yield top
            for ie in top.findall("inertial"):
                yield ie
                yield from (c for c in ie if c.tag in _INERTIAL_KEEP)
        elif top.tag == "joint":
            yield top
            yield from (c for c in top if c.tag in _JOINT_KEEP)


def _keep_only(parent: ET.Element, tags: tuple[str, ...]) -> None:
    for c in list(parent):
        if c.tag not in tags:
            parent.remove(c)


def _strip_unused(root: ET.Element) -> None:
    """Remove every element the dynamics never reads (module docstring, lenient parsing)."""
    _keep_only(root, _ROBOT_KEEP)
    for le in root.findall("link"):
        _keep_only(le, _LINK_KEEP)
        for ie in le.findall("inertial"):
            _keep_only(ie, _INERTIAL_KEEP)
    for je in root.findall("joint"):
        _keep_only(je, _JOINT_KEEP)


def _prevalidated_xml(text: str) -> ET.Element:
    """Thin xml.etree pass before urdf_parser_py: precise errors where the library's are poor, and the
    lenient defaults of this converter where the library is stricter (see the module docstring)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        if "unbound prefix" in str(exc) and "xacro:" in text:
            raise ValueError(XACRO_TEXT_MESSAGE.format(what=f"undeclared xacro: prefix, {exc}")) from exc
        raise ValueError(f"URDF is not well-formed XML: {exc}") from exc
    if root.tag != "robot":
        raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
    xacro_found = _xacro_content(root)
    if xacro_found is not None:
        raise ValueError(XACRO_TEXT_MESSAGE.format(what=xacro_found))
    _strip_unused(root)
    root.attrib.setdefault("name", "robot")
    for le in root.findall("link"):
        name = le.get("name")
        if not name:
            raise ValueError("URDF <link> without a name")
        ie = le.find("inertial")
        if ie is not None:
            what = f"link {name!r} inertial"
            _check_origin(ie, what)
            me = ie.find("mass")
            if me is None:
                ET.SubElement(ie, "mass", value="0")
            elif me.get("value") is None:
                raise ValueError(f"{what} mass: missing attribute 'value'")
            else:  # urdf_parser_py reports a bad <mass value> without its location
                _floats(me.get("value"), 1, f"{what} mass")
            ine = ie.find("inertia")
            if ine is not None:
                for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                    ine.attrib.setdefault(key, "0")
    for je in root.findall("joint"):
        name = je.get("name")
        if not name:
            raise ValueError("URDF <joint> without a name")
        what = f"joint {name!r}"
        if je.get("type") not in KNOWN_TYPES:
            raise ValueError(f"{what}: unknown joint type {je.get('type')!r}")
        for role in ("parent", "child"):
            e = je.find(role)
            if e is None or e.get("link") is None:
                raise ValueError(f"{what}: missing <{role} link=...>")
        _check_origin(je, what)
        ae = je.find("axis")
        if ae is not None:
            ae.attrib.setdefault("xyz", "1 0 0")
            _floats(ae.get("xyz"), 3, f"{what} axis")
        lim = je.find("limit")
        if lim is not None:
            lim.attrib.setdefault("effort", "inf")
            lim.attrib.setdefault("velocity", "inf")
    return root


@contextmanager
def _quiet_urdf_parser_py() -> Iterator[None]:
    """Route urdf_parser_py's warnings (``xml_reflection.on_error``, which writes every unknown attribute
    or tag to stderr) to the conversion's logger at DEBUG level, and make the library leave absent optional
    attributes at None (``skip_default``) so that absent and explicit values differ; restored afterwards
    (not thread-safe)."""
    messages: list[str] = []
    saved = (xml_core.on_error, xml_reflection.on_error, xml_core.skip_default)
    xml_core.on_error = xml_reflection.on_error = messages.append
    xml_core.skip_default = True
    try:
        yield
    finally:
        xml_core.on_error, xml_reflection.on_error, xml_core.skip_default = saved
        for message in messages:
            _LOG.debug("urdf_parser_py: %s", message)


def _number(value: float | None, what: str, key: str, default: float) -> float:
    if value is None:
        return default
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{what}: {key} is NaN")
    return v


def _pose(origin: Any) -> np.ndarray:
    """4x4 transform of a urdf_parser_py Pose (None, or None fields: identity parts)."""
    if origin is None:
        return np.eye(4)
    xyz = (0.0, 0.0, 0.0) if origin.xyz is None else origin.xyz
    rpy = (0.0, 0.0, 0.0) if origin.rpy is None else origin.rpy
    return make_transform(rpy_to_matrix(rpy), xyz)


def _inertial(link: Any) -> URDFInertial | None:
    """The ``<inertial>`` of a link; a non-finite value is an error, a physically inconsistent one is recorded
    in ``problems`` (checked by :func:`check_inertias` only if the link's inertia enters the model)."""
    ine = link.inertial
    if ine is None:
        return None
    mass = float(ine.mass)
    inertia = np.zeros((3, 3)) if ine.inertia is None else np.array(ine.inertia.to_matrix(), dtype=float)
    problems = inertia_problems(mass, inertia)
    if not math.isfinite(mass) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"link {link.name!r} inertial: {problems[0]}")
    return URDFInertial(mass, _pose(ine.origin), inertia, problems)


def _joint(j: Any) -> URDFJoint:
    what = f"joint {j.name!r}"
    axis = np.array((1.0, 0.0, 0.0) if j.axis is None else j.axis, dtype=float)
    jt = URDFJoint(j.name, j.type, j.parent, j.child, _pose(j.origin), axis)
    if jt.type in MOVING_TYPES:
        nrm = float(np.linalg.norm(axis))
        if nrm < 1e-12:
            raise ValueError(f"{what}: zero axis vector")
        jt.axis = axis / nrm
    lim = j.limit
    if lim is not None:
        if jt.type != "continuous" and (lim.lower is not None or lim.upper is not None):
            bound = math.inf if jt.type == "fixed" else 0.0  # URDF default 0 for a one-sided <limit>
            jt.lower = _number(lim.lower, what, "lower", -bound)
            jt.upper = _number(lim.upper, what, "upper", bound)
        # 0 = no limit (what urdf_export writes for an unlimited one: URDF requires both attributes)
        for key in ("velocity", "effort"):
            v = _number(getattr(lim, key), what, key, math.inf)
            if v < 0:
                raise ValueError(f"{what}: negative {key} limit {v:g} (must be >= 0; 0 means no limit)")
            setattr(jt, key, v or math.inf)
        if jt.lower > jt.upper:
            raise ValueError(f"{what}: lower limit {jt.lower} > upper limit {jt.upper}")
    if j.dynamics is not None:
        jt.friction = _number(j.dynamics.friction, what, "friction", 0.0)
        jt.damping = _number(j.dynamics.damping, what, "damping", 0.0)
    jt.mimic = j.mimic is not None
    return jt


def parse_urdf(
    source: Any, *, text_only: bool = False, xacro_args: Mapping[str, Any] | Sequence[str] | None = None,
) -> URDFTree:
    """Parse URDF text or file (urdf_parser_py) into a checked kinematic tree (ValueError on malformed input).

    ``text_only=True``: ``source`` must be XML text, a path is refused (see :func:`_read_source`).
    A ``.xacro`` path is expanded with ``xacro_args``.  Physically inconsistent inertials are recorded
    (``URDFInertial.problems``), not refused: :func:`check_inertias` checks those the model uses."""
    root = _prevalidated_xml(_read_source(source, text_only=text_only, xacro_args=xacro_args))
    with _quiet_urdf_parser_py():
        try:
            robot = URDF.from_xml(root, xml_core.Path("robot", tree=ET.ElementTree(root)))
        except xml_core.ParseError as exc:
            raise ValueError(f"invalid URDF at {exc.path}: {exc.e}") from exc
        except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"invalid URDF: {exc}") from exc
    tree = URDFTree(name=robot.name)
    for link in robot.links:  # lists keep duplicates (link_map/joint_map silently overwrite)
        if link.name in tree.links:
            raise ValueError(f"duplicate link name {link.name!r}")
        tree.links[link.name] = _inertial(link)
        tree.children[link.name] = []
    if not tree.links:
        raise ValueError("URDF has no <link>")
    for j in robot.joints:
        jt = _joint(j)
        if jt.name in tree.joints:
            raise ValueError(f"duplicate joint name {jt.name!r}")
        for role, link in (("parent", jt.parent), ("child", jt.child)):
            if link not in tree.links:
                raise ValueError(f"joint {jt.name!r}: {role} link {link!r} is not defined")
        if jt.parent == jt.child:
            raise ValueError(f"joint {jt.name!r}: parent and child are the same link {jt.child!r} (loop)")
        if jt.child in tree.parent_joint:
            raise ValueError(
                f"link {jt.child!r} has two parent joints ({tree.parent_joint[jt.child]!r}, {jt.name!r}): "
                "closed loops are not supported"
            )
        tree.joints[jt.name] = jt
        tree.parent_joint[jt.child] = jt.name
        tree.children[jt.parent].append(jt.name)
    roots = [k for k in tree.links if k not in tree.parent_joint]
    if not roots:
        raise ValueError("URDF has no root link: the joints form a closed loop")
    if len(roots) > 1:
        raise ValueError(f"URDF has several root links (disconnected tree): {roots}")
    tree.root = roots[0]
    # every link must be reachable from the root (otherwise there is a cycle)
    seen, stack = set(), [tree.root]
    while stack:
        link = stack.pop()
        seen.add(link)
        stack.extend(tree.joints[j].child for j in tree.children[link])
    missing = [k for k in tree.links if k not in seen]
    if missing:
        raise ValueError(f"URDF joints form a closed loop through links {missing}")
    return tree
