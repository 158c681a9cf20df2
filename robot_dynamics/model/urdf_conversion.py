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

Parsing: the robot structure (links, joints, inertials) is read by
``urdf_parser_py`` (``URDF.from_xml`` on the element tree of the text).  Its
warnings (one per unknown attribute or tag: Panda's ``mu_coulomb``,
``<gazebo>``, ``<ros2_control>`` ...), written to stderr through
``urdf_parser_py.xml_reflection.on_error``, go to this module's logger at DEBUG
level during the call (hook restored afterwards; not thread-safe).  A thin
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

Physical consistency (issue 14): each ``<inertial>`` whose link is carried by a moving joint of
the model (its inertia enters the dynamics) is checked by :func:`inertia_problems` (finite mass >= 0;
zero mass only with a zero tensor; positive semi-definite tensor; triangle inequalities of the
principal moments, tolerance ``INERTIA_RTOL`` relative plus ``INERTIA_ATOL`` = 1e-15 kg m^2); a
violation is a ``ValueError`` naming the link and the condition, or a :func:`warnings.warn` with
``allow_inconsistent_inertia=True``.  Links fixed to the base (a legged robot's trunk, a mobile
base's antennas) never move: their inertia is not used, so it can never make a file fail.  Limits: ``lower <= upper``, ``effort`` and
``velocity`` >= 0 (a negative one is an error, 0 means no limit).

xacro (issue 14): a path ending in ``.xacro`` is expanded with the ``xacro``
package (:func:`expand_xacro`, arguments ``xacro_args`` as ``{name: value}`` or
``["name:=value", ...]``); any xacro error (missing argument, bad expression,
missing include, XML syntax) is one ``ValueError`` naming the cause.  Text is
never expanded: xacro text given as a string (a request, a topic) is refused with
a message naming xacro.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
import threading
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import urdf_parser_py.xml_reflection as xml_reflection
import urdf_parser_py.xml_reflection.core as xml_core
from urdf_parser_py.urdf import URDF

from .mdh import PRISMATIC, REVOLUTE, ROUND_OFF_TOL, MDHJoint, mdh_transform

MOVING_TYPES = ("revolute", "continuous", "prismatic")
KNOWN_TYPES = MOVING_TYPES + ("fixed", "floating", "planar")
# Frame *placement* decisions (not values): two axes with |z_j x z_{j+1}| < _PAR_TOL are placed as parallel
# (x_j along their offset), points closer than _LEN_TOL as coincident.  These only choose where frames go;
# the table is then computed exactly from the chosen frames.  The one exception is a pair of axes that are
# parallel only to within _PAR_TOL: MDH cannot describe it exactly with bounded parameters (the common normal
# runs off to |offset| / angle), so the placement as parallel leaves an error below _PAR_TOL x the link
# length.  Measured on example-robot-data: the nearly parallel pairs are parallel to 2.1e-13 (Centauro's
# knees and ankles, Kinova joint 3, TALOS fingertips: angles written with few digits), giving errors against
# Pinocchio below 3e-13 relative; the next pair (Romeo's fingers, 4.4e-8) is above _PAR_TOL and placed by
# its (distant) common normal.
_PAR_TOL = 1e-9
_LEN_TOL = 1e-9
# Nearly (not exactly) parallel axes put their common normal far away (|offset| / angle: 75 km for Romeo's
# fingers, float32 cos(pi/2) = -4.4e-8).  When it lies farther than _FAR_FOOT from the joint, O_j stays near
# the joint and x_j takes the exact normal direction; the next row then carries b (a Khalil–Kleinfinger
# row, see mdh_row), so no frame of the model sits kilometres away and levers nothing later.
_FAR_FOOT = 10.0  # m
_NEAR_PAR = 1e-4  # rad: only such nearly parallel pairs are placed that way (their feet are >= 1e4 offsets away)
# ROUND_OFF_TOL (robot_dynamics.model.mdh): the one round-off tolerance of the package, see there
INERTIA_RTOL = 1e-9  # relative tolerance of the inertia consistency checks (PSD, triangle inequalities)
INERTIA_ATOL = 1e-15  # kg m^2: round-off floor of those checks (iCub's tensors of ~1e-20 are zeros written with noise)
_LOG = logging.getLogger(__name__)
# what the dynamics reads; everything else is removed before urdf_parser_py sees the file
_ROBOT_KEEP = ("link", "joint")
_LINK_KEEP = ("inertial",)
_INERTIAL_KEEP = ("origin", "mass", "inertia")
_JOINT_KEEP = ("origin", "parent", "child", "axis", "limit", "dynamics", "mimic")
_XACRO_LOCK = threading.Lock()  # the xacro package keeps its state in module globals
_XACRO_ARG = re.compile(r"^([A-Za-z_][\w.-]*):=(.*)$", re.DOTALL)


# ------------------------------------------------------------------ rotations
def rpy_to_matrix(rpy: Any) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(rot: np.ndarray) -> tuple[float, float, float]:
    """Inverse of :func:`rpy_to_matrix` (pitch in [-pi/2, pi/2]; yaw = 0 at the gimbal lock)."""
    cp = math.hypot(rot[0, 0], rot[1, 0])
    pitch = math.atan2(-rot[2, 0], cp)
    if cp < 1e-12:
        return math.atan2(-rot[1, 2], rot[1, 1]), pitch, 0.0
    return math.atan2(rot[2, 1], rot[2, 2]), pitch, math.atan2(rot[1, 0], rot[0, 0])


def make_transform(rot: np.ndarray, pos: Any) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = pos
    return t


def inverse_transform(t: np.ndarray) -> np.ndarray:
    """Inverse of a homogeneous transform (R^T, -R^T p)."""
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


# -------------------------------------------------------------------- parsing
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


TEXT_ONLY_MESSAGE = "the URDF must be XML text starting with '<' (file paths are not accepted here)"
XACRO_TEXT_MESSAGE = (
    "this text is xacro, not URDF ({what}): xacro is expanded only from a .xacro file (CLI --xacro-arg, node "
    "parameters urdf_path + xacro_args); expand it first (xacro FILE > robot.urdf) and send the URDF"
)


def is_xacro_path(source: Any) -> bool:
    """True for a path (str or PathLike, not XML text) whose name ends in ``.xacro`` (``.urdf.xacro`` too)."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    return isinstance(source, str) and not source.lstrip().startswith("<") and source.rstrip().lower().endswith(".xacro")


def xacro_mappings(args: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    """xacro arguments as ``{name: value}`` from a mapping or from ``["name:=value", ...]`` (ValueError if malformed)."""
    if args is None:
        return {}
    if isinstance(args, Mapping):
        out = {}
        for k, v in args.items():
            if not isinstance(k, str) or not _XACRO_ARG.match(f"{k}:="):
                raise ValueError(f"xacro argument name {k!r} is not a valid name")
            out[k] = str(v)
        return out
    if isinstance(args, str):
        args = [args]
    out = {}
    for item in args:
        m = _XACRO_ARG.match(str(item).strip())
        if m is None:
            raise ValueError(f"xacro argument {str(item)[:200]!r} must read name:=value")
        out[m.group(1)] = m.group(2)
    return out


def expand_xacro(path: str | os.PathLike[str], args: Mapping[str, Any] | Sequence[str] | None = None) -> str:
    """URDF text of the xacro file ``path`` with arguments ``args`` (see :func:`xacro_mappings`).

    Uses the ``xacro`` package's Python API (``process_file`` + ``toprettyxml``, what its command line
    prints); its warnings go to this module's logger at DEBUG level.  Every failure is one ValueError
    naming the file and the cause (missing file or include, undefined argument, bad expression, XML syntax).
    """
    mappings = xacro_mappings(args)
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"xacro file {path!r} does not exist")
    from xml.parsers.expat import ExpatError

    try:
        import xacro
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ValueError(f"cannot expand {path!r}: the 'xacro' package is not installed (pip install xacro)") from exc
    stderr = io.StringIO()
    with _XACRO_LOCK, redirect_stderr(stderr):
        try:
            doc = xacro.process_file(path, mappings=dict(mappings), verbosity=0)
            text = doc.toprettyxml(indent="  ")
        except ExpatError as exc:
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}XML syntax error: {exc}") from None
        except xacro.XacroException as exc:
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}{_xacro_cause(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - expressions raise anything (NameError, ZeroDivisionError, ...)
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}{type(exc).__name__}: {exc}") from None
        finally:
            for line in stderr.getvalue().splitlines():
                if line.strip():
                    _LOG.debug("xacro: %s", line)
    return text


def _xacro_cause(exc: Exception) -> str:
    """xacro's message, with the hint a user needs for a missing argument or include."""
    text = " ".join(str(exc).split())
    inner = getattr(exc, "exc", None)
    if type(inner).__name__ == "ArgException":
        return f"missing xacro argument {str(inner)!r} ({text}): pass {inner}:=VALUE"
    if isinstance(inner, OSError):
        return f"cannot open an included file: {inner.strerror}: {inner.filename}"
    if inner is not None and str(inner) and str(inner) not in text:
        text = f"{text}: {inner}"
    return text


def _xacro_where(xacro: Any) -> str:
    """'in file X (included from Y): ' from xacro's file stack when an include is involved."""
    stack = [f for f in (getattr(xacro, "filestack", None) or []) if f]
    if len(stack) < 2:
        return ""
    return f"in {stack[-1]!r} (included from {' <- '.join(repr(f) for f in reversed(stack[:-1]))}): "


def _read_source(
    source: Any, text_only: bool = False, xacro_args: Mapping[str, Any] | Sequence[str] | None = None
) -> str:
    """URDF text of ``source`` (XML text, or a path unless ``text_only``; a ``.xacro`` path is expanded).

    With ``text_only`` anything that is not XML text is refused with one fixed message that never
    depends on the file system (no file-existence oracle for requests and topics).
    """
    if text_only:
        if not isinstance(source, str) or not source.lstrip().startswith("<"):
            raise ValueError(TEXT_ONLY_MESSAGE)
        if xacro_args:
            raise ValueError("xacro arguments apply to .xacro files only, not to URDF text")
        return source
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ValueError(f"URDF source must be a path or an XML string, got {type(source).__name__}")  # noqa: TRY004
    if is_xacro_path(source):
        return expand_xacro(source, xacro_args)
    if xacro_args:
        raise ValueError(f"xacro arguments given but the URDF source is not a .xacro file: {source[:200]!r}")
    if source.lstrip().startswith("<"):
        return source
    if not os.path.isfile(source):
        raise ValueError(f"URDF source is neither XML text nor an existing file: {source[:200]!r}")
    with open(source, encoding="utf-8") as f:
        return f.read()


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
    or tag to stderr) to this module's logger at DEBUG level, and make the library leave absent optional
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


# ------------------------------------------------------------- geometry
def _closest_points(p1: np.ndarray, z1: np.ndarray, p2: np.ndarray, z2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of two non-parallel lines (p1 + s z1, p2 + t z2); |z1 x z2|^2 as denominator
    (better conditioned than 1 - (z1.z2)^2 for nearly parallel axes)."""
    nv = np.cross(z1, z2)
    den = nv @ nv
    w = p2 - p1
    s = np.cross(w, z2) @ nv / den
    t = np.cross(w, z1) @ nv / den
    return p1 + s * z1, p2 + t * z2


def _common_normal(z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """Unit x = z1 x z2 / |z1 x z2|, built as z1 x w with w the unit component of z2 normal to z1,
    so that x is orthogonal to z1 and z2 to round-off even for nearly parallel axes."""
    w = z2 - (z1 @ z2) * z1
    w /= np.linalg.norm(w)
    x = np.cross(z1, w)
    return x / np.linalg.norm(x)


def _project(point: np.ndarray, p: np.ndarray, z: np.ndarray) -> np.ndarray:
    return p + ((point - p) @ z) * z


def _perp_unit(v: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    w = v - (v @ z) * z
    n = np.linalg.norm(w)
    return None if n < 1e-6 else w / n


def _any_perp(z: np.ndarray) -> np.ndarray:
    e = np.eye(3)[int(np.argmin(np.abs(z)))]
    w = e - (e @ z) * z
    return w / np.linalg.norm(w)


def _snap_length(v: float) -> float:
    """0 when ``|v| <= ROUND_OFF_TOL`` (round-off of an exact zero), else ``v`` unchanged."""
    return 0.0 if abs(v) <= ROUND_OFF_TOL else v


def _snap_angle(v: float) -> float:
    """The float nearest k*pi/2 when ``v`` is within ``ROUND_OFF_TOL`` of it, else ``v`` unchanged."""
    k = round(v / (math.pi / 2))
    if abs(v - k * math.pi / 2) <= ROUND_OFF_TOL:
        k %= 4
        return (0.0, math.pi / 2, math.pi, -math.pi / 2)[k]
    return v


def place_mdh_frames(
    points: list[np.ndarray], axes: list[np.ndarray], prismatic: list[bool], hints: list[np.ndarray]
) -> tuple[list[np.ndarray], list[float]]:
    """MDH frames R_1..R_n (4x4 poses at q = 0) from joint axis lines, 002 §3.2.

    ``points``/``axes``: a point and the unit direction of each joint axis (base_link frame,
    q = 0); ``hints``: the URDF child-link poses, used only to resolve the free choices.
    Returns the frame poses and the sign (+1/-1) of each z_j relative to the URDF axis.
    """
    n = len(axes)
    z = [np.asarray(a, float) for a in axes]
    p = [np.asarray(x, float).copy() for x in points]
    sign = [1.0] * n
    for k in range(1, n):
        c = np.cross(z[k - 1], z[k])
        if np.linalg.norm(c) < _PAR_TOL and z[k - 1] @ z[k] < 0:
            z[k], sign[k] = -z[k], -1.0
        z[k] = z[k] / np.linalg.norm(z[k])
        if prismatic[k]:  # move the axis line so that it meets z_{k-1}: d_k = 0
            if np.linalg.norm(c) < _PAR_TOL:
                p[k] = _project(p[k], p[k - 1], z[k - 1])
            else:
                a, b = _closest_points(p[k - 1], z[k - 1], p[k], z[k])
                p[k] = p[k] + (a - b)

    def parallel(k: int) -> bool:
        return bool(np.linalg.norm(np.cross(z[k], z[k + 1])) < _PAR_TOL)

    def foot(k: int) -> np.ndarray | None:
        """Foot on z_k of the common normal with z_{k+1} (non-parallel axes), else None."""
        if k + 1 < n and not parallel(k):
            return _closest_points(p[k], z[k], p[k + 1], z[k + 1])[0]
        return None

    def far_normal(k: int) -> bool:
        """Nearly parallel axes (|z_k x z_k+1| < _NEAR_PAR) whose common normal lies farther than _FAR_FOOT
        from joint k; a skew pair at an ordinary angle keeps 002's placement even when its normal is far."""
        f = foot(k)
        return (f is not None and float(np.linalg.norm(np.cross(z[k], z[k + 1]))) < _NEAR_PAR
                and bool(np.linalg.norm(f - p[k]) > _FAR_FOOT))

    def fixed_origin(k: int) -> np.ndarray | None:
        """O_k when it is determined by the common normal with z_{k+1} (non-parallel axes, normal nearby)."""
        return None if far_normal(k) else foot(k)

    xs: list[np.ndarray] = []
    os_: list[np.ndarray] = []
    for k in range(n):
        hint_x, hint_o = hints[k][:3, 0], hints[k][:3, 3]
        if k == n - 1 and n > 1:  # x_n aligned with x_{n-1}, O_n on the x_{n-1} line
            x = xs[-1]
            o = _project(os_[-1] + ((p[k] - os_[-1]) @ x) * x, p[k], z[k])
            xs.append(x)
            os_.append(o)
            continue
        o_fixed = fixed_origin(k)
        if o_fixed is not None:
            x = _common_normal(z[k], z[k + 1])
            if x @ hint_x < -1e-9:
                x = -x
            o = o_fixed
        else:
            if k + 1 < n:
                w = p[k + 1] - p[k]
                w = w - (w @ z[k]) * z[k]
                nw = np.linalg.norm(w)
            else:
                nw = 0.0
            if k + 1 < n and far_normal(k):  # x along the exact normal direction, O_k kept near the joint
                x = _common_normal(z[k], z[k + 1])
                if x @ hint_x < -1e-9:
                    x = -x
            elif nw > _LEN_TOL:  # parallel axes: x along the common normal
                x = w / nw
                if x @ hint_x < -1e-9:
                    x = -x
            else:  # collinear axes (or a single joint): x free, follow the hint
                x = _perp_unit(hint_x, z[k])
                if x is None and xs:
                    x = _perp_unit(xs[-1], z[k])
                if x is None:
                    x = _any_perp(z[k])
            # free origin along z_k: r_k = 0 (candidate A) or r_{k+1} = 0 (candidate B)
            if k == 0:
                cand_a = _project(hint_o, p[k], z[k])
            else:
                cand_a = _project(os_[-1] + ((p[k] - os_[-1]) @ xs[-1]) * xs[-1], p[k], z[k])
            o = cand_a
            nxt = fixed_origin(k + 1) if k + 1 < n else None
            if nxt is not None:
                cand_b = _project(nxt, p[k], z[k])
                if np.linalg.norm(cand_b - hint_o) < np.linalg.norm(cand_a - hint_o) - 1e-12:
                    o = cand_b
        x = x - (x @ z[k]) * z[k]
        xs.append(x / np.linalg.norm(x))
        os_.append(o)
    frames = [make_transform(np.column_stack([x, np.cross(zz, x), zz]), o) for x, zz, o in zip(xs, z, os_, strict=True)]
    return frames, sign


def mdh_row(prev: np.ndarray, cur: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """(gamma, b, alpha, d, theta, r) with cur = prev @ mdh_transform(alpha, d, theta, r, gamma, b).

    The serial row (gamma = b = 0, :func:`mdh_parameters`) when it reproduces ``cur`` to round-off; else the
    Khalil–Kleinfinger row: u = the common normal of z_prev and z_cur (aligned with x_prev), gamma the angle
    x_prev -> u about z_prev, and (b, d, r) from O_cur - O_prev = b z_prev + d u + r z_cur."""
    alpha, d, theta, r = mdh_parameters(prev, cur)
    xp, zp, op = prev[:3, 0], prev[:3, 2], prev[:3, 3]
    xc, zc, oc = cur[:3, 0], cur[:3, 2], cur[:3, 3]
    delta = oc - op
    scale = max(1.0, float(np.linalg.norm(delta)))
    if abs(float(xp @ zc)) <= 4 * ROUND_OFF_TOL and np.linalg.norm(delta - d * xp - r * zc) <= 4 * ROUND_OFF_TOL * scale:
        return 0.0, 0.0, alpha, d, theta, r
    c = np.cross(zp, zc)
    if np.linalg.norm(c) >= _PAR_TOL:
        u = _common_normal(zp, zc)
        if u @ xp < 0:
            u = -u
        b, d, r = (float(v) for v in np.linalg.solve(np.column_stack([zp, u, zc]), delta))
    else:  # parallel: u along the offset of the axes (or x_cur when they are collinear), b = 0
        w = delta - (delta @ zp) * zp
        u = w / np.linalg.norm(w) if np.linalg.norm(w) > _LEN_TOL else xc - (xc @ zp) * zp
        u = u / np.linalg.norm(u)
        b, d, r = 0.0, float(delta @ u), float(delta @ zc)
    gamma = math.atan2(float(np.cross(xp, u) @ zp), float(xp @ u))
    alpha = math.atan2(float(np.cross(zp, zc) @ u), float(zp @ zc))
    theta = math.atan2(float(np.cross(u, xc) @ zc), float(u @ xc))
    return (_snap_angle(gamma), _snap_length(b), _snap_angle(alpha), _snap_length(d), _snap_angle(theta),
            _snap_length(r))


def mdh_parameters(prev: np.ndarray, cur: np.ndarray) -> tuple[float, float, float, float]:
    """(alpha, d, theta, r) such that cur = prev @ mdh_transform(alpha, d, theta, r) (002 eq. 3.2)."""
    xp, zp, op = prev[:3, 0], prev[:3, 2], prev[:3, 3]
    xc, zc, oc = cur[:3, 0], cur[:3, 2], cur[:3, 3]
    alpha = math.atan2(float(np.cross(zp, zc) @ xp), float(zp @ zc))
    theta = math.atan2(float(np.cross(xp, xc) @ zc), float(xp @ xc))
    d = float((oc - op) @ xp)
    r = float((oc - op) @ zc)
    return _snap_angle(alpha), _snap_length(d), _snap_angle(theta), _snap_length(r)


# ---------------------------------------------------------------- inertia
def inertia_about_origin(mass: float, com: np.ndarray, rot: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """[XX XY XZ YY YZ ZZ MX MY MZ M] of a body: J_O = R I_c R^T + m(|c|^2 1 - c c^T), MS = m c."""
    c = np.asarray(com, float)
    j = rot @ inertia_com @ rot.T + mass * ((c @ c) * np.eye(3) - np.outer(c, c))
    return np.array([j[0, 0], j[0, 1], j[0, 2], j[1, 1], j[1, 2], j[2, 2], *(mass * c), mass])


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
    base = base_link or tree.root
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
