"""The URDFs bundled in ``urdf/`` and how to find them by name."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .robot_model import RobotModel
    from .transmission import Transmission


_LOAD_OPTIONS: ContextVar[dict[str, Any]] = ContextVar("robot_dynamics_load_options", default={})  # noqa: B039


@contextmanager
def load_options(**options: Any) -> Iterator[None]:
    """Defaults of :func:`load_model`'s ``xacro_args`` and ``allow_inconsistent_inertia`` inside the block
    (the command line sets them once for whatever its command loads); explicit arguments win."""
    unknown = set(options) - {"xacro_args", "allow_inconsistent_inertia"}
    if unknown:
        raise TypeError(f"unknown load options {sorted(unknown)}")
    token = _LOAD_OPTIONS.set({**_LOAD_OPTIONS.get(), **options})
    try:
        yield
    finally:
        _LOAD_OPTIONS.reset(token)


PACKAGE = "robot_dynamics"


def _share_dirs(sub: str) -> list[Path]:
    """``<sub>/`` of the source tree, then of each installed share directory (``sys.prefix``, ``AMENT_PREFIX_PATH``)."""
    dirs = [Path(__file__).resolve().parents[2] / sub]
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        if prefix:
            dirs.append(Path(prefix) / "share" / PACKAGE / sub)
    return [d for d in dirs if d.is_dir()]


def urdf_dirs() -> list[Path]:
    """Folders searched for bundled URDFs: the source tree, then installed share dirs."""
    return _share_dirs("urdf")


def config_dir() -> Path:
    """``config/`` of the source tree, else of the installed share directory (robot parameter files, RViz)."""
    dirs = _share_dirs("config")
    if not dirs:
        raise FileNotFoundError("robot_dynamics config directory not found")
    return dirs[0]


def bundled_robots() -> list[str]:
    """Names of the bundled robots (URDF file stems)."""
    return sorted({p.stem for d in urdf_dirs() for p in d.glob("*.urdf")})


def resolve_urdf(name_or_path: str) -> Path:
    """A bundled robot name (``rx90``) or a path -> an existing URDF path."""
    p = Path(name_or_path).expanduser()
    if p.is_file():
        return p
    for d in urdf_dirs():
        cand = d / f"{name_or_path}.urdf"
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"no URDF file {name_or_path!r} and no bundled robot of that name (known: {bundled_robots()})")


def robot_stem(urdf: str | Path) -> str:
    """The robot's file name without ``.xacro`` / ``.urdf`` (``arm.urdf.xacro`` -> ``arm``)."""
    name = Path(urdf).name
    for suffix in (".xacro", ".urdf"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


def robot_parameters(urdf: str | Path, parameters: str | Path | None = None) -> dict[str, Any]:
    """Robot-specific parameters from ``config/<robot stem>.yaml`` (its ``/**`` section), if that file exists,
    or from the ROS parameter file ``parameters`` when given (which must exist).

    Keys: ``rotor_inertia`` and ``acceleration_limits``, lists in URDF chain order, and ``transmissions`` (a
    mapping, :func:`transmission_config`).
    """
    import yaml

    if parameters is not None:
        path = Path(parameters).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"no parameter file {str(path)!r}")
    else:
        try:
            path = config_dir() / f"{robot_stem(urdf)}.yaml"
        except FileNotFoundError:
            return {}
        if not path.is_file():
            return {}
    data = yaml.safe_load(path.read_text()) or {}
    return dict((data.get("/**") or {}).get("ros__parameters") or {})


def transmission_config(params: dict[str, Any]) -> dict[str, Any] | None:
    """The ``transmissions`` section of robot parameters: the nested mapping ``transmissions: {gear_ratio: ...}``
    or the flat ROS names ``transmissions.gear_ratio`` (both may be used); None when there is none."""
    nested = params.get("transmissions")
    if nested is not None and not isinstance(nested, dict):
        raise ValueError(f"transmissions must be a mapping of parameters, got {nested!r}")
    out = dict(nested or {})
    prefix = "transmissions."
    for k, v in params.items():
        if k.startswith(prefix):
            out[k[len(prefix):]] = v
    return out or None


def by_joint(model: RobotModel, values: Any, what: str) -> dict[str, float] | None:
    """A per-joint list (chain order) -> {joint name: value}; None for an empty list."""
    vals = [float(v) for v in (values or [])]
    if not vals or (len(vals) == 1 and vals[0] == 0.0):
        return None
    if len(vals) != model.dof:
        raise ValueError(f"{what} has {len(vals)} values; the chain has {model.dof} joints {model.joint_names}")
    return dict(zip(model.joint_names, vals, strict=True))


def read_description(
    name_or_path: str, xacro_args: dict[str, str] | list[str] | None = None
) -> tuple[Path, str]:
    """(path, URDF text) of a bundled robot name, a URDF path, or a ``.xacro`` path expanded with ``xacro_args``."""
    from .urdf_conversion import expand_xacro, is_xacro_path

    path = resolve_urdf(name_or_path)
    if is_xacro_path(str(path)):
        return path, expand_xacro(path, xacro_args)
    if xacro_args:
        raise ValueError(f"xacro arguments given but {str(path)!r} is not a .xacro file")
    return path, path.read_text(encoding="utf-8")


def load_model(
    name_or_path: str, base_link: str | None = None, tip_link: str | None = None, *,
    rotor_inertia: Any = None, acceleration_limits: Any = None,
    xacro_args: dict[str, str] | list[str] | None = None, allow_inconsistent_inertia: bool | None = None,
    locked_positions: dict[str, float] | None = None,
    transmission: Transmission | dict[str, Any] | None = None, parameters: str | Path | None = None,
) -> RobotModel:
    """A bundled robot name, URDF path or ``.xacro`` path (expanded with ``xacro_args``: ``{name: value}``
    or ``["name:=value"]``) -> RobotModel, with the rotor inertias, acceleration limits and actuator
    transmission of its config file (``config/<stem>.yaml``, or the ROS parameter file ``parameters``; each
    overridden by the argument given) applied.  ``xacro_args`` / ``allow_inconsistent_inertia``
    left at None take the values of an enclosing :func:`load_options` block (default: none / False).
    Without ``tip_link`` the whole tree; with it the chain, other moving joints locked at ``locked_positions``.

    ``transmission`` (:class:`~robot_dynamics.model.transmission.Transmission` or its config mapping, the
    ``transmissions`` section of the parameter file otherwise) is attached to the model
    (:meth:`RobotModel.with_transmission`): its motor inertias give the joint-side rotor inertia, the
    diagonal as ``Ia`` (001 eq. 7.29) and a coupled transmission's off-diagonal terms in the dynamics.  The rotor
    inertia is given once: ``rotor_inertia`` together with a transmission that has motor inertias is refused."""
    import warnings

    from .robot_model import RobotModel
    from .transmission import Transmission

    defaults = _LOAD_OPTIONS.get()
    if xacro_args is None:
        xacro_args = defaults.get("xacro_args")
    if allow_inconsistent_inertia is None:
        allow_inconsistent_inertia = bool(defaults.get("allow_inconsistent_inertia", False))
    path, text = read_description(name_or_path, xacro_args)
    kw: dict[str, Any] = {"base_link": base_link, "tip_link": tip_link, "locked_positions": locked_positions,
                          "allow_inconsistent_inertia": allow_inconsistent_inertia}
    model = RobotModel.from_urdf(text, **kw)
    extra = robot_parameters(path, parameters)
    ia = by_joint(model, extra.get("rotor_inertia") if rotor_inertia is None else rotor_inertia, "rotor_inertia")
    acc = by_joint(
        model, extra.get("acceleration_limits") if acceleration_limits is None else acceleration_limits,
        "acceleration_limits",
    )
    tr = transmission_config(extra) if transmission is None else transmission
    if tr is not None and not isinstance(tr, Transmission):
        tr = Transmission.from_config(tr, model.joint_names)
    if tr is not None and ia is not None and tr.has_motor_inertia:
        raise ValueError("rotor inertia given twice: rotor_inertia and the transmission's motor_inertia "
                         "(Ia_j = N_j² J_mj, 001 eq. 7.29); give one of them")
    if ia is not None or acc is not None:
        with warnings.catch_warnings():  # the inertia warnings were given by the first conversion
            warnings.simplefilter("ignore")
            model = RobotModel.from_urdf(text, rotor_inertia=ia, acceleration_limits=acc, **kw)
    return model if tr is None else model.with_transmission(tr)
