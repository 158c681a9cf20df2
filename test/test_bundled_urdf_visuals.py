"""Bundled URDFs for RViz: visual/collision geometry on every link, a ``world`` link, TF = model FK, and
neither changes the model nor the MuJoCo plant.

Oracles: the URDF text itself (ElementTree), Pinocchio's URDF kinematics (robot_state_publisher-style TF from
the joint origins and axes), and the visual-free URDF the exporter writes without ``geometry``/``world_link``
(the bundled files before issue 17).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from robot_dynamics import RobotModel
from robot_dynamics.kinematics.geometric_model import frame_poses, link_poses
from robot_dynamics.model.robots import load_model
from robot_dynamics.model.seed_robots import SEED_ROBOTS
from robot_dynamics.model.urdf_export import MUJOCO_URDF_OPTIONS, model_to_urdf
from robot_dynamics.sim.simulator import MujocoArm, model_to_mjcf

URDF_DIR = Path(__file__).resolve().parent.parent / "urdf"
KEYS = list(SEED_ROBOTS)


def _root(key: str) -> ET.Element:
    return ET.parse(URDF_DIR / f"{key}.urdf").getroot()


def _visual_free(key: str, directory: Path) -> Path:
    """The URDF of seed robot ``key`` without geometry and world link, as ``<directory>/<key>.urdf`` (same stem:
    ``load_model`` applies the same ``config/<key>.yaml``)."""
    path = directory / f"{key}.urdf"
    path.write_text(model_to_urdf(SEED_ROBOTS[key]()))
    return path


@pytest.mark.parametrize("key", KEYS)
def test_every_link_but_world_has_visual_and_collision(key: str) -> None:
    root = _root(key)
    colours = {m.get("name"): m.find("color") for m in root.findall("material")}
    links = root.findall("link")
    assert "world" in {lk.get("name") for lk in links}
    for link in links:
        if link.get("name") == "world":
            assert link.find("visual") is None and link.find("collision") is None
            continue
        visuals, collisions = link.findall("visual"), link.findall("collision")
        assert visuals and collisions, link.get("name")
        for el in visuals + collisions:
            (geo,) = list(el.find("geometry"))
            if geo.tag == "cylinder":
                assert float(geo.get("radius")) > 0 and float(geo.get("length")) >= 1e-3
            elif geo.tag == "box":
                assert min(float(v) for v in geo.get("size").split()) >= 1e-3
            else:
                assert geo.tag == "sphere" and float(geo.get("radius")) > 0
        for v in visuals:
            rgba = [float(x) for x in colours[v.find("material").get("name")].get("rgba").split()]
            assert len(rgba) == 4 and all(0 <= x <= 1 for x in rgba) and rgba[3] > 0


@pytest.mark.parametrize("key", KEYS)
def test_world_is_the_root_fixed_to_base_link_and_the_model_base_is_unchanged(key: str) -> None:
    """Gazebo's convention: ``world`` the URDF root, its only joint a fixed identity to ``base_link`` (which has a
    physical inertial); the model's base is still ``base_link``."""
    root = _root(key)
    (joint,) = [j for j in root.findall("joint") if j.get("name") == "world_joint"]
    assert joint.get("type") == "fixed"
    assert (joint.find("parent").get("link"), joint.find("child").get("link")) == ("world", "base_link")
    origin = joint.find("origin")
    assert [float(x) for x in origin.get("xyz").split() + origin.get("rpy").split()] == [0.0] * 6
    children = {j.find("child").get("link") for j in root.findall("joint")}
    assert [lk.get("name") for lk in root.findall("link") if lk.get("name") not in children] == ["world"]
    base = next(lk for lk in root.findall("link") if lk.get("name") == "base_link")
    m = float(base.find("inertial/mass").get("value"))
    i = base.find("inertial/inertia")
    ixx, iyy, izz = (float(i.get(k)) for k in ("ixx", "iyy", "izz"))
    assert m >= 1.0 and min(ixx, iyy, izz) > 0 and ixx + iyy >= izz and iyy + izz >= ixx  # physical
    model = RobotModel.from_urdf(str(URDF_DIR / f"{key}.urdf"))
    assert model.base_link == "base_link" and model.base_transform[3, 3] == 1.0


@pytest.mark.parametrize("key", KEYS)
def test_tf_from_urdf_equals_model_forward_kinematics(key: str) -> None:
    """Pinocchio (joint origins and axes of the URDF, as robot_state_publisher) vs the MDH model's FK."""
    pm = pin.buildModelFromUrdf(str(URDF_DIR / f"{key}.urdf"))
    pd = pm.createData()
    rng = np.random.default_rng(17)
    for model in (load_model(key), SEED_ROBOTS[key]()):
        lo, up = model.limits["lower"], model.limits["upper"]
        assert np.all(np.isfinite(lo)) and np.all(np.isfinite(up))
        qs = rng.uniform(lo, up, (8, model.dof))
        batch = link_poses(model, qs)
        mdh = frame_poses(model, qs)
        mdh_link = {jt.link: j for j, jt in enumerate(model.joints, start=1)}
        for i, q in enumerate(qs):
            qp = pin.neutral(pm)
            for name, v in zip(model.joint_names, q, strict=True):
                jm = pm.joints[pm.getJointId(name)]
                assert jm.nq == 1
                qp[jm.idx_q] = v
            pin.forwardKinematics(pm, pd, qp)
            pin.updateFramePlacements(pm, pd)
            # URDF root = base_link = Pinocchio's universe: oMf is the pose in base_link
            base = pd.oMf[pm.getFrameId("base_link", pin.BODY)].homogeneous
            np.testing.assert_array_equal(base, np.eye(4))
            urdf_links = {f.name for f in pm.frames if f.type == pin.BODY}
            assert urdf_links == set(model.frames) | {"world"}
            for link in urdf_links:
                ref = pd.oMf[pm.getFrameId(link, pin.BODY)].homogeneous
                if link == "world":
                    np.testing.assert_allclose(ref, np.eye(4), rtol=0, atol=1e-15)
                    continue
                np.testing.assert_allclose(model.forward_kinematics(q, link), ref, rtol=0, atol=1e-12, err_msg=link)
                np.testing.assert_allclose(batch[link][i], ref, rtol=0, atol=1e-12, err_msg=link)
                if link in mdh_link:  # link j carries the MDH frame R_j
                    np.testing.assert_allclose(mdh[i, mdh_link[link]], ref, rtol=0, atol=1e-12, err_msg=link)


@pytest.mark.parametrize("key", KEYS)
def test_geometry_and_world_link_do_not_change_the_model(key: str, tmp_path: Path) -> None:
    old = load_model(str(_visual_free(key, tmp_path)))
    new = load_model(key)
    assert new.base_link == old.base_link == "base_link" and new.tip_link == old.tip_link == "tool"
    assert new.joint_names == old.joint_names and new.table() == old.table()
    for k in ("sigma", "alpha", "d", "theta", "r", "gamma", "b", "antecedent", "inertial", "Ia", "Fc", "Fv",
              "gravity", "base_transform"):
        np.testing.assert_array_equal(getattr(new, k), getattr(old, k), err_msg=k)
    for k, v in old.limits.items():
        np.testing.assert_array_equal(new.limits[k], v, err_msg=k)
    assert set(new.frames) == set(old.frames)  # world is the URDF root above the base: not a frame of the model
    for k, (j, t) in old.frames.items():
        assert new.frames[k][0] == j
        np.testing.assert_array_equal(new.frames[k][1], t)
    rng = np.random.default_rng(5)
    q, qd, qdd = (rng.uniform(-1, 1, (10, new.dof)) for _ in range(3))
    np.testing.assert_array_equal(new.inverse_dynamics(q, qd, qdd), old.inverse_dynamics(q, qd, qdd))
    assert model_to_mjcf(new) == model_to_mjcf(old)


def test_rx90_simulation_unchanged_by_geometry(tmp_path: Path) -> None:
    """One second of MuJoCo under the same open-loop torques: visual-free vs bundled URDF, same trajectory.
    The plant's MJCF is generated from the MDH model and has no geom at all, so the URDF's collision shapes
    cannot create contacts (contacts are disabled too)."""
    arms = [MujocoArm(load_model(str(_visual_free("rx90", tmp_path)))), MujocoArm(load_model("rx90"))]
    for arm in arms:
        assert arm.mj_model.ngeom == 0 and arm.mj_model.nbody == 1 + 1 + 6  # world, R0, six links
        arm.reset(np.array([0.1, -0.3, 0.4, 0.0, 0.5, 0.0]))
    hold = arms[0].holding_effort()
    traj: list[list[np.ndarray]] = [[], []]
    for k in range(1000):
        tau = hold + 5.0 * np.sin(2 * np.pi * (k * 1e-3) + np.arange(6))
        for arm, out in zip(arms, traj, strict=True):
            arm.step(tau)
            s = arm.state(noisy=False)
            out.append(np.concatenate([s.q, s.qd]))
    a, b = np.array(traj[0]), np.array(traj[1])
    assert np.abs(a[-1, :6] - a[0, :6]).max() > 1e-3  # the arm did move
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)


def test_visual_free_export_is_what_was_bundled_before() -> None:
    """Without the options the exporter writes no geometry and no world link (other users of ``to_urdf``)."""
    text = model_to_urdf(SEED_ROBOTS["rx90"]())
    assert "<visual>" not in text and "<collision>" not in text and "world" not in text
    assert RobotModel.from_urdf(text).table() == load_model("rx90").table()


def _mujoco_urdf_run(text: str) -> tuple[np.ndarray, int]:
    """One second of MuJoCo's own URDF import of ``text`` under fixed open-loop torques: (q, qd) per step and
    the largest number of contacts seen."""
    m = mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    d.qpos[:] = [0.1, -0.3, 0.4, 0.0, 0.5, 0.0]
    out, ncon = [], 0
    for k in range(1000):
        d.qfrc_applied[:] = 20.0 * np.sin(2 * np.pi * (k * 1e-3) + np.arange(m.nv))
        mujoco.mj_step(m, d)
        ncon = max(ncon, int(d.ncon))
        out.append(np.concatenate([d.qpos, d.qvel]))
    return np.array(out), ncon


def test_rx90_mujoco_urdf_import_unchanged_by_geometry(tmp_path: Path) -> None:
    """MuJoCo compiling the URDF itself (as test_simulator's oracle does): the bundled rx90 gives the same
    trajectory as the visual-free one and no contact; without the ``<mujoco>`` options the shapes would collide."""
    new_text = (URDF_DIR / "rx90.urdf").read_text()
    old, old_con = _mujoco_urdf_run(_visual_free("rx90", tmp_path).read_text())
    new, new_con = _mujoco_urdf_run(new_text)
    assert old_con == new_con == 0 and np.abs(old[-1, :6] - old[0, :6]).max() > 1e-3
    np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
    _, bare_con = _mujoco_urdf_run(new_text.replace(MUJOCO_URDF_OPTIONS, ""))
    assert bare_con > 0
