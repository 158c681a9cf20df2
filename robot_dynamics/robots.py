"""The URDFs bundled in ``urdf/`` and how to find them by name."""

from __future__ import annotations

import os
import sys
from pathlib import Path


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
