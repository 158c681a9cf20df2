"""The URDFs bundled in ``urdf/`` and how to find them by name."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .robot_model import RobotModel


def urdf_dirs() -> list[Path]:
    """Folders searched for bundled URDFs: the source tree, then installed share dirs."""
    here = Path(__file__).resolve().parent.parent / "urdf"
    dirs = [here]
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        if prefix:
            dirs.append(Path(prefix) / "share" / "robot_dynamics" / "urdf")
    return [d for d in dirs if d.is_dir()]


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


def robot_parameters(urdf: str | Path) -> dict[str, Any]:
    """Robot-specific parameters from ``config/<urdf stem>.yaml`` (its ``/**`` section), if that file exists.

    Keys: ``rotor_inertia`` and ``acceleration_limits``, lists in URDF chain order.
    """
    import yaml

    from .ros.node_set import config_dir

    try:
        path = config_dir() / f"{Path(urdf).stem}.yaml"
    except FileNotFoundError:
        return {}
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return dict((data.get("/**") or {}).get("ros__parameters") or {})


def by_joint(model: RobotModel, values: Any, what: str) -> dict[str, float] | None:
    """A per-joint list (chain order) -> {joint name: value}; None for an empty list."""
    vals = [float(v) for v in (values or [])]
    if not vals or (len(vals) == 1 and vals[0] == 0.0):
        return None
    if len(vals) != model.dof:
        raise ValueError(f"{what} has {len(vals)} values; the chain has {model.dof} joints {model.joint_names}")
    return dict(zip(model.joint_names, vals, strict=True))


def load_model(
    name_or_path: str, base_link: str | None = None, tip_link: str | None = None, *,
    rotor_inertia: Any = None, acceleration_limits: Any = None,
) -> RobotModel:
    """A bundled robot name or URDF path -> RobotModel, with the rotor inertias and acceleration
    limits of its config file (or the ones given) applied."""
    from .robot_model import RobotModel

    path = resolve_urdf(name_or_path)
    model = RobotModel.from_urdf(str(path), base_link=base_link, tip_link=tip_link)
    extra = robot_parameters(path)
    ia = by_joint(model, extra.get("rotor_inertia") if rotor_inertia is None else rotor_inertia, "rotor_inertia")
    acc = by_joint(
        model, extra.get("acceleration_limits") if acceleration_limits is None else acceleration_limits,
        "acceleration_limits",
    )
    if ia is None and acc is None:
        return model
    return RobotModel.from_urdf(str(path), base_link=base_link, tip_link=tip_link, rotor_inertia=ia, acceleration_limits=acc)
