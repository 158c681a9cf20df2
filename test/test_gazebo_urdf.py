"""Gazebo can spawn every bundled robot, fixed to the world: libsdformat (Debian's, what ``ros_gz_sim create``
uses to read a URDF) builds each bundled URDF, and the URDF the launch file generates for ``sim:=gazebo``, into a
model with every link and a fixed joint to ``world``, without error.  Before: "A model must have at least one link"
and no link at all (a massless root drops the tree; a ``world`` below ``base_link`` is dropped).  The oracle is
libsdformat itself (``tools/sdf_check.cc``, compiled here); skipped, saying so, where its headers are missing
(``apt-get install libsdformat-dev``)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.model.ros2_control import PLUGINS, add_ros2_control
from robot_dynamics.model.seed_robots import SEED_ROBOTS

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tools" / "sdf_check.cc"
FIXED = 3  # sdf::JointType::FIXED


def _flags() -> list[str] | None:
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        return None
    out = subprocess.run(["pkg-config", "--cflags", "--libs", "sdformat12"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else None


@pytest.fixture(scope="module")
def sdf_check() -> Path:
    flags = _flags()
    if flags is None:
        pytest.skip("libsdformat 12 not found (apt-get install libsdformat-dev): Gazebo's URDF reading not checked")
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join(flags).encode()).hexdigest()[:12]
    exe = ROOT / "build" / "sdf_check" / key / "sdf_check"
    if not exe.exists():
        exe.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["g++", "-O1", str(SOURCE), "-o", str(exe), *flags], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    return exe


def _built(exe: Path, path: Path) -> dict:
    out = subprocess.run([str(exe), str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _expected_links(urdf: str) -> set[str]:
    """The links Gazebo keeps: those with an inertial (a massless link on a fixed joint is merged into its parent)."""
    return {lk.get("name") for lk in ET.fromstring(urdf).findall("link") if lk.find("inertial") is not None}


@pytest.mark.parametrize("key", list(SEED_ROBOTS))
def test_libsdformat_builds_every_bundled_robot_fixed_to_the_world(sdf_check, key, tmp_path):
    model = load_model(key)
    bundled = resolve_urdf(key)
    gazebo = tmp_path / f"{key}_gazebo.urdf"  # as the launch file writes it for sim:=gazebo
    gazebo.write_text(add_ros2_control(bundled.read_text(), model.joint_names, PLUGINS["gazebo"],
                                       model.limits["effort"], gazebo_parameters="/tmp/c.yaml", namespace="/arm1"))
    for path in (bundled, gazebo):
        built = _built(sdf_check, path)
        print(f"\n{path.name}: {len(built['links'])} links, joints {[j[0] for j in built['joints']]}")
        assert built["errors"] == [], built["errors"]
        assert set(built["links"]) == _expected_links(path.read_text()) and len(built["links"]) == model.dof + 1
        world = [j for j in built["joints"] if j[1] == "world"]
        assert world == [["world_joint", "world", "base_link", FIXED]], built["joints"]
        moving = {j[0] for j in built["joints"] if j[3] != FIXED}
        assert moving == set(model.joint_names)


def test_the_check_sees_the_old_layout_fail(sdf_check, tmp_path):
    """The oracle's own control: the bundled layout before (``world`` a child of a massless ``base_link``) gives
    libsdformat's errors and no link."""
    text = resolve_urdf("planar2r").read_text()
    root = ET.fromstring(text)
    base = next(lk for lk in root.findall("link") if lk.get("name") == "base_link")
    base.remove(base.find("inertial"))
    joint = next(j for j in root.findall("joint") if j.get("name") == "world_joint")
    joint.find("parent").set("link", "base_link")
    joint.find("child").set("link", "world")
    old = tmp_path / "old.urdf"
    old.write_text(ET.tostring(root, encoding="unicode"))
    built = _built(sdf_check, old)
    assert built["errors"] and not built["links"]
