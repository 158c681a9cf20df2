"""DGM, kinematic Jacobian and numeric IGM against Pinocchio."""

from __future__ import annotations

import numpy as np
import pytest
from example_robots import example_urdf
from pinocchio_oracle import PinocchioURDF

from robot_dynamics import RobotModel
from robot_dynamics.kinematics.geometric_model import jacobian, link_poses, rotation_vector
from robot_dynamics.model.seed_robots import SEED_ROBOTS, urdf_text

URDF_DIR = "urdf"


def _cases() -> list[tuple[str, RobotModel, object]]:
    out = []
    for robot, tip in (("ur5", "tool0"), ("panda", "panda_hand_tcp")):
        path = example_urdf(robot)
        out.append((robot, RobotModel.from_urdf(str(path), tip_link=tip), path))
    for key in ("stanford", "scara", "rx90"):
        out.append((key, SEED_ROBOTS[key](), urdf_text(key)))
    return out


CASES = _cases()


def _inner_q(model: RobotModel, rng: np.random.Generator, count: int) -> np.ndarray:
    lim = model.limits
    lo = np.where(np.isfinite(lim["lower"]), lim["lower"], -np.pi)
    hi = np.where(np.isfinite(lim["upper"]), lim["upper"], np.pi)
    mid, half = 0.5 * (lo + hi), 0.45 * (hi - lo)
    return rng.uniform(mid - half, mid + half, (count, model.dof))


@pytest.mark.parametrize(("name", "model", "src"), CASES, ids=[c[0] for c in CASES])
def test_jacobian_of_every_link_equals_pinocchio(name: str, model: RobotModel, src: object) -> None:
    oracle = PinocchioURDF(src)
    qs = np.random.default_rng(4).uniform(-2, 2, (20, model.dof))
    links = [j.link for j in model.joints] + [model.tip_link]
    for link in links:
        batch = jacobian(model, qs, link)
        assert batch.shape == (20, 6, model.dof)
        for i, q in enumerate(qs):
            ref = oracle.jacobian(model.joint_names, q, link)
            assert np.abs(batch[i] - ref).max() <= 1e-10
        assert np.array_equal(model.jacobian(qs[0], link), batch[0])


@pytest.mark.parametrize(("name", "model", "src"), CASES, ids=[c[0] for c in CASES])
def test_dgm_of_all_links_equals_pinocchio(name: str, model: RobotModel, src: object) -> None:
    oracle = PinocchioURDF(src)
    qs = np.random.default_rng(5).uniform(-2, 2, (10, model.dof))
    poses = link_poses(model, qs)
    for i, q in enumerate(qs):
        ref = oracle.link_poses(model.joint_names, q, list(poses), model.base_link)
        for k, t in poses.items():
            assert np.abs(t[i] - ref[k]).max() <= 1e-10


@pytest.mark.parametrize(("name", "model", "src"), CASES, ids=[c[0] for c in CASES])
def test_inverse_kinematics_reaches_pinocchio_pose_within_limits(name: str, model: RobotModel, src: object) -> None:
    oracle = PinocchioURDF(src)
    rng = np.random.default_rng(6)
    lim = model.limits
    for q in _inner_q(model, rng, 5):
        target = oracle.link_poses(model.joint_names, q, [model.tip_link], model.base_link)[model.tip_link]
        q0 = np.clip(q + rng.uniform(-0.15, 0.15, model.dof), lim["lower"], lim["upper"])
        sol = model.inverse_kinematics(target, q0=q0)
        assert np.all(sol >= lim["lower"]) and np.all(sol <= lim["upper"])
        reached = oracle.link_poses(model.joint_names, sol, [model.tip_link], model.base_link)[model.tip_link]
        assert np.abs(reached - target).max() <= 1e-9


def test_inverse_kinematics_position_only_and_failures() -> None:
    model = SEED_ROBOTS["planar2r"]()
    oracle = PinocchioURDF(urdf_text("planar2r"))
    q = np.array([0.4, 0.9])
    p = oracle.link_poses(model.joint_names, q, ["tool"], "base_link")["tool"][:3, 3]
    sol = model.inverse_kinematics(p, position_only=True)
    reached = oracle.link_poses(model.joint_names, sol, ["tool"], "base_link")["tool"][:3, 3]
    assert np.abs(reached - p).max() <= 1e-9
    with pytest.raises(ValueError, match="did not converge"):
        model.inverse_kinematics(np.array([5.0, 0.0, 0.0]), position_only=True, restarts=1)
    with pytest.raises(ValueError, match="shape"):
        model.inverse_kinematics(np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        model.inverse_kinematics(np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="unknown link"):
        model.inverse_kinematics(np.eye(4), link="nope")


def test_jacobian_bad_input() -> None:
    model = SEED_ROBOTS["rx90"]()
    with pytest.raises(ValueError, match="shape"):
        model.jacobian(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        model.jacobian(np.full(6, np.inf))
    with pytest.raises(ValueError, match="unknown link"):
        model.jacobian(np.zeros(6), link="nope")


def test_rotation_vector_hand_values() -> None:
    """Rotation about z by 0.3 and about x by pi: u*theta (hand-derived)."""
    c, s = np.cos(0.3), np.sin(0.3)
    assert rotation_vector(np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])) == pytest.approx([0, 0, 0.3], abs=1e-15)
    assert np.abs(rotation_vector(np.diag([1.0, -1.0, -1.0]))) == pytest.approx([np.pi, 0, 0], abs=1e-12)
