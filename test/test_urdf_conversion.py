"""URDF -> MDH conversion against Pinocchio (independent URDF kinematics and inertias)."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pinocchio_oracle import PinocchioURDF
from scipy.spatial.transform import Rotation

from robot_dynamics import RobotModel

TOL = 1e-10


def _random_q(model: RobotModel, rng: np.random.Generator, count: int) -> np.ndarray:
    lim = model.limits
    lo = np.where(np.isfinite(lim["lower"]), lim["lower"], -math.pi)
    hi = np.where(np.isfinite(lim["upper"]), lim["upper"], math.pi)
    return rng.uniform(lo - 0.5, hi + 0.5, (count, model.dof))  # beyond limits too: FK is defined there


def fk_error(model: RobotModel, oracle: PinocchioURDF, qs: np.ndarray, links: list[str]) -> float:
    """Max |T_model - T_pinocchio| over configurations and links (batched model FK)."""
    ours = {k: model.forward_kinematics(qs, k) for k in links}
    err = 0.0
    for i, q in enumerate(qs):
        ref = oracle.link_poses(model.joint_names, q, links, model.base_link)
        err = max(err, max(float(np.abs(ours[k][i] - ref[k]).max()) for k in links))
    return err


def inertia_error(model: RobotModel, oracle: PinocchioURDF) -> float:
    """Standard parameters of each moving link vs Pinocchio's (fixed-merged) body inertia moved to R_j."""
    err = 0.0
    for j, jt in enumerate(model.joints, start=1):
        jid = oracle.model.getJointId(jt.name)
        k, t = model.frames[jt.link]
        assert k == j
        pi = pin.SE3(t[:3, :3], t[:3, 3]).act(oracle.model.inertias[jid])
        m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = pi.toDynamicParameters()
        ref = np.array([ixx, ixy, ixz, iyy, iyz, izz, mx, my, mz, m])
        err = max(err, float(np.abs(model.inertial[j - 1] - ref).max()))
    return err


# ------------------------------------------------------------ example-robot-data
@pytest.mark.parametrize(
    ("robot", "tip"),
    [("ur5", None), ("ur5", "tool0"), ("panda", "panda_link8"), ("panda", "panda_hand_tcp")],
)
def test_example_robots_fk_equals_pinocchio(robot: str, tip: str | None) -> None:
    path = example_urdf(robot)
    model = RobotModel.from_urdf(str(path), tip_link=tip)
    oracle = PinocchioURDF(path, locked=model.locked_joints)  # the fingers are locked and lumped on the hand
    assert model.dof == (6 if robot == "ur5" else 7)
    assert sorted(model.locked_joints) == ([] if robot == "ur5" else ["panda_finger_joint1", "panda_finger_joint2"])
    moving = [j.link for j in model.joints]
    links = sorted(set(moving) | {model.tip_link} | set(model.frames))
    qs = _random_q(model, np.random.default_rng(3), 200)
    assert fk_error(model, oracle, qs, links) <= TOL
    assert inertia_error(model, oracle) <= 1e-12


def test_ur5_default_tip_and_names() -> None:
    model = RobotModel.from_urdf(str(example_urdf("ur5")))
    assert model.tip_link == "wrist_3_link"
    # its URDF root is Gazebo's massless ``world``, fixed to base_link by an identity joint: skipped, the base keeps
    # the robot's own name; named explicitly, world is the base (the same model)
    assert model.base_link == "base_link"
    at_world = RobotModel.from_urdf(str(example_urdf("ur5")), base_link="world")
    assert at_world.base_link == "world" and at_world.table() == model.table()
    assert model.joint_names == [
        "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"
    ]
    # UR5 DH data (Universal Robots): a2 = -0.425, a3 = -0.39225, d4 = 0.10915, d5 = 0.09465
    d = [abs(j.d) for j in model.joints]
    assert d[2] == pytest.approx(0.425, abs=1e-12) and d[3] == pytest.approx(0.39225, abs=1e-12)


def test_panda_without_tip_is_the_whole_tree() -> None:
    m = RobotModel.from_urdf(str(example_urdf("panda")))
    assert m.joint_names == [f"panda_joint{k}" for k in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"]
    assert m.is_tree and m.tip_link == "" and m.locked_joints == {}
    assert list(m.antecedent) == [0, 1, 2, 3, 4, 5, 6, 7, 7]  # both fingers hang from the hand (link 7)
    assert m.joints[7].gamma == 0.0 and m.joints[7].b == 0.0  # the main successor of 7: x_7 is its common normal
    assert "gamma" in m.table() and "panda_finger_joint2" in m.table()


def test_panda_limits_and_dynamics_carried_over() -> None:
    from xml.etree import ElementTree as ET

    text = example_urdf("panda").read_text()
    model = RobotModel.from_urdf(text, tip_link="panda_link8")
    root = ET.fromstring(text)
    for jt in model.joints:
        e = root.find(f"joint[@name='{jt.name}']")
        lim = e.find("limit")
        assert (jt.lower, jt.upper) == (float(lim.get("lower")), float(lim.get("upper")))
        assert (jt.velocity, jt.effort) == (float(lim.get("velocity")), float(lim.get("effort")))
        assert math.isinf(jt.acceleration)


def test_config_rotor_inertia_and_acceleration_limits() -> None:
    path = str(example_urdf("ur5"))
    model = RobotModel.from_urdf(path, rotor_inertia={"elbow_joint": 0.7}, acceleration_limits={"wrist_1_joint": 9.0})
    assert model.Ia.tolist() == [0, 0, 0.7, 0, 0, 0]
    assert model.limits["acceleration"][3] == 9.0
    via_model = RobotModel.from_urdf(path, rotor_inertia={"elbow_joint": 0.7}, acceleration_limits={"wrist_1_joint": 9.0})
    assert via_model.to_dict() == model.to_dict()
    with pytest.raises(ValueError, match="unknown joint names.*nope"):
        RobotModel.from_urdf(path, rotor_inertia={"nope": 1.0})


# ---------------------------------------------------------------- random URDFs
def _fmt(v) -> str:
    return " ".join(repr(float(x)) for x in v)


RELATIONS = ("random", "parallel", "antiparallel", "intersecting", "collinear", "local_unit")


@st.composite
def serial_urdfs(draw) -> str:
    """A random serial URDF (world-frame construction so that axis relations are exact up to round-off)."""
    n = draw(st.integers(1, 6))
    unit = st.floats(-1.0, 1.0, allow_nan=False)
    links = ['<link name="l0"/>']
    joints = []
    parent_pose = np.eye(4)
    prev_axis = prev_point = None
    count = 0
    for _k in range(n):
        kinds = [draw(st.sampled_from(["revolute", "revolute", "prismatic", "continuous"]))]
        if draw(st.booleans()):
            kinds.insert(draw(st.integers(0, 1)), "fixed")
        for kind in kinds:
            count += 1
            rot = Rotation.from_euler("xyz", [draw(st.floats(-math.pi, math.pi)) for _ in range(3)]).as_matrix()
            point = np.array([draw(unit) for _ in range(3)])
            axis = np.array([draw(unit) for _ in range(3)])
            if np.linalg.norm(axis) < 0.1:
                axis = np.array([0.0, 0.0, 1.0])
            axis /= np.linalg.norm(axis)
            rel = draw(st.sampled_from(RELATIONS)) if prev_axis is not None else "random"
            if kind != "fixed":
                if rel == "parallel":
                    axis = prev_axis.copy()
                elif rel == "antiparallel":
                    axis = -prev_axis
                elif rel == "collinear":
                    axis = prev_axis * draw(st.sampled_from([1.0, -1.0]))
                    point = prev_point + draw(unit) * prev_axis
                elif rel == "intersecting":
                    point = prev_point + draw(unit) * prev_axis
                elif rel == "local_unit":
                    axis = rot[:, draw(st.integers(0, 2))] * draw(st.sampled_from([1.0, -1.0]))
                if prev_axis is not None:
                    # nearly (not exactly) parallel axes put the common normal ~offset/angle away, and the
                    # MDH round-off grows like that lever arm (Hayati's classic objection): keep it below 1e3
                    sin = float(np.linalg.norm(np.cross(axis, prev_axis)))
                    assume(sin < 1e-12 or sin > 1e-3)
            pose = np.eye(4)
            pose[:3, :3], pose[:3, 3] = rot, point
            rel_pose = np.linalg.inv(parent_pose) @ pose
            rpy = Rotation.from_matrix(rel_pose[:3, :3]).as_euler("xyz")
            local_axis = rot.T @ axis
            name = f"l{count}"
            mass = draw(st.floats(0.1, 5.0))
            # principal moments from second moments s_i = int x_i^2 dm > 0: every triangle inequality holds
            sx, sy, sz = (draw(st.floats(0.005, 0.5)) for _ in range(3))
            diag = [sy + sz, sx + sz, sx + sy]
            crot = Rotation.from_euler("xyz", [draw(st.floats(-3.0, 3.0)) for _ in range(3)]).as_matrix()
            ic = crot @ np.diag(diag) @ crot.T
            com = [draw(unit) for _ in range(3)]
            links.append(
                f'<link name="{name}"><inertial><origin xyz="{_fmt(com)}" rpy="0.1 -0.2 0.3"/>'
                f'<mass value="{mass!r}"/><inertia ixx="{float(ic[0, 0])!r}" ixy="{float(ic[0, 1])!r}" ixz="{float(ic[0, 2])!r}" '
                f'iyy="{float(ic[1, 1])!r}" iyz="{float(ic[1, 2])!r}" izz="{float(ic[2, 2])!r}"/></inertial></link>'
            )
            lim = '<limit lower="-2" upper="2" effort="10" velocity="3"/>' if kind in ("revolute", "prismatic") else ""
            joints.append(
                f'<joint name="j{count}" type="{kind}"><parent link="l{count - 1}"/><child link="{name}"/>'
                f'<origin xyz="{_fmt(rel_pose[:3, 3])}" rpy="{_fmt(rpy)}"/><axis xyz="{_fmt(local_axis)}"/>{lim}'
                '<dynamics damping="0.5" friction="0.25"/></joint>'
            )
            parent_pose = pose
            if kind != "fixed":
                prev_axis, prev_point = axis, point
    return f'<robot name="random">{"".join(links)}{"".join(joints)}</robot>'


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serial_urdfs(), st.integers(0, 2**31))
def test_random_serial_urdf_fk_inertia_yaml(urdf: str, seed: int) -> None:
    model = RobotModel.from_urdf(urdf)
    oracle = PinocchioURDF(urdf)
    qs = np.random.default_rng(seed).uniform(-3, 3, (8, model.dof))
    assert fk_error(model, oracle, qs, sorted(model.frames)) <= TOL
    assert inertia_error(model, oracle) <= 1e-10
    assert np.all(model.Fc == 0.25) and np.all(model.Fv == 0.5)
    back = RobotModel.from_yaml(model.to_yaml())
    assert back.to_dict() == model.to_dict()
    assert np.array_equal(back.forward_kinematics(qs), model.forward_kinematics(qs))
    # MDH conventions of 002 §3.2: R0 aligned with R1 at q1 = 0, x_n aligned with x_{n-1}
    first, last = model.joints[0], model.joints[-1]
    assert (first.alpha, first.d) == (0.0, 0.0)
    assert first.r == 0.0 if first.sigma == 0 else first.theta == 0.0
    if model.dof > 1:
        assert abs(last.r if last.sigma == 0 else last.theta) < 1e-9


# ------------------------------------------------------------------- seed rules
def _urdf(joints: str, links: str = "", names: str = "abcd") -> str:
    return "<robot name='t'>" + "".join(f"<link name='{k}'/>" for k in names) + links + joints + "</robot>"


def _joint(name, parent, child, xyz="0 0 0", rpy="0 0 0", axis="0 0 1", kind="revolute") -> str:
    return (
        f"<joint name='{name}' type='{kind}'><parent link='{parent}'/><child link='{child}'/>"
        f"<origin xyz='{xyz}' rpy='{rpy}'/><axis xyz='{axis}'/></joint>"
    )


def test_hand_derived_parallel_antiparallel_table() -> None:
    """Three parallel z axes 0.3 and 0.2 m apart along x, the middle one flipped (hand-derived MDH)."""
    text = _urdf(
        _joint("j1", "a", "b", xyz="0 0 0.1")
        + _joint("j2", "b", "c", xyz="0.3 0 0.5", axis="0 0 -1")
        + _joint("j3", "c", "d", xyz="0.2 0 0", rpy="0 0 1.0")
    )
    m = RobotModel.from_urdf(text)
    table = [(j.sigma, j.alpha, j.d, j.theta, j.r, j.sign) for j in m.joints]
    expected_table = [(0, 0, 0, 0, 0, 1), (0, 0, 0.3, 0, 0, -1), (0, 0, 0.2, 0, 0, 1)]
    np.testing.assert_allclose(np.array(table, float), np.array(expected_table, float), rtol=0, atol=1e-12)
    # base_link -> R0 is the pose of joint 1's frame; j2 at q=0.4 URDF turns R2 by -0.4 about z
    tip = m.forward_kinematics([0.0, 0.4, 0.0], "d")
    expected = np.array([0.3 + 0.2 * math.cos(-0.4), 0.2 * math.sin(-0.4), 0.6])
    assert tip[:3, 3] == pytest.approx(expected, abs=1e-12)


def test_missing_rpy_defaults_to_zero() -> None:
    text = _urdf(
        "<joint name='j1' type='continuous'><parent link='a'/><child link='b'/><origin xyz='0 0 1'/>"
        "<axis xyz='0 1 0'/></joint>" + _joint("j2", "b", "c", xyz="0.5 0 0", axis="0 1 0", kind="continuous"),
        names="abc",
    )
    m = RobotModel.from_urdf(text)
    qs = np.random.default_rng(0).uniform(-3, 3, (20, 2))
    assert fk_error(m, PinocchioURDF(text), qs, ["a", "b", "c"]) <= TOL
    assert m.joints[1].d == pytest.approx(0.5, abs=1e-15)


def test_fixed_joint_inertia_lumped_into_parent() -> None:
    """A 2 kg point mass on a fixed child 1 m along x of the moving link: MX = 2, YY = ZZ = 2 (hand-derived)."""
    links = "<link name='e'><inertial><mass value='2'/><inertia ixx='0' ixy='0' ixz='0' iyy='0' iyz='0' izz='0'/></inertial></link>"
    text = _urdf(_joint("j1", "a", "b") + _joint("f", "b", "e", xyz="1 0 0", kind="fixed"), links, "ab")
    m = RobotModel.from_urdf(text, tip_link="b")
    assert m.inertial[0].tolist() == pytest.approx([0, 0, 0, 2, 0, 2, 2, 0, 0, 2], abs=1e-15)
    assert "e" in m.frames


# ------------------------------------------------------------------ bad input
BAD = [
    ("<robot name='x'><link name='a'></robot>", "not well-formed XML"),
    ("<robt/>", "root element must be <robot>"),
    ("<robot name='x'/>", "no <link>"),
    (_urdf(_joint("j1", "a", "zz")), "child link 'zz' is not defined"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "c", "b")), "two parent joints"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "b", "c") + _joint("j3", "c", "b")), "two parent joints"),
    ("<robot name='t'><link name='a'/><link name='b'/>" + _joint("j1", "a", "b") + _joint("j2", "b", "a") + "</robot>",
     "closed loop"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "b", "c", kind="floating") + _joint("j3", "c", "d")), "'j2'.*floating"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "b", "c", kind="planar") + _joint("j3", "c", "d")), "'j2'.*planar"),
    (_urdf(_joint("j1", "a", "b", xyz="0 nan 0") + _joint("j2", "b", "c") + _joint("j3", "c", "d")), "NaN or inf"),
    (_urdf(_joint("j1", "a", "b", rpy="0 0") + _joint("j2", "b", "c") + _joint("j3", "c", "d")), "expected 3 numbers"),
    (_urdf(_joint("j1", "a", "b", axis="0 0 0") + _joint("j2", "b", "c") + _joint("j3", "c", "d")), "zero axis"),
    (_urdf(_joint("j1", "a", "b", kind="spherical") + _joint("j2", "b", "c") + _joint("j3", "c", "d")), "unknown joint type"),
    (_urdf(_joint("j1", "a", "b", kind="fixed") + _joint("j2", "b", "c", kind="fixed") + _joint("j3", "c", "d", kind="fixed")), "empty chain"),
    (_urdf(_joint("j1", "a", "b") + _joint("j1", "b", "c") + _joint("j3", "c", "d")), "duplicate joint name"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "a", "c") + "<joint name='f' type='floating'><parent link='a'/>"
           "<child link='d'/></joint>"), "'f' is floating"),
    ("<robot name='t'><link name='a'/><link name='a'/></robot>", "duplicate link name"),
    (_urdf(_joint("j1", "a", "b") + _joint("j2", "b", "c")), "several root links"),
    ("/no/such/file.urdf", "neither XML text nor an existing file"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_malformed_urdf_raises_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf(text)


def test_mimic_joint_chain_refused_tree_independent() -> None:
    """A mimic joint on a driven chain is refused; in the whole tree it is an independent joint (as Pinocchio)."""
    text = _urdf(_joint("j1", "a", "b") + "<joint name='j2' type='revolute'><parent link='b'/><child link='c'/>"
                 "<mimic joint='j1'/></joint>" + _joint("j3", "c", "d"))
    with pytest.raises(ValueError, match="'j2'.*mimic"):
        RobotModel.from_urdf(text, tip_link="d")
    assert RobotModel.from_urdf(text).joint_names == ["j1", "j2", "j3"]


def test_unknown_or_unreachable_links() -> None:
    text = _urdf(_joint("j1", "a", "b") + _joint("j2", "b", "c") + _joint("j3", "c", "d"))
    with pytest.raises(ValueError, match="unknown tip link 'zz'"):
        RobotModel.from_urdf(text, tip_link="zz")
    with pytest.raises(ValueError, match="unknown base link 'zz'"):
        RobotModel.from_urdf(text, base_link="zz")
    with pytest.raises(ValueError, match="not below base link 'c'"):
        RobotModel.from_urdf(text, base_link="c", tip_link="b")
    with pytest.raises(ValueError, match="empty chain"):
        RobotModel.from_urdf(text, base_link="c", tip_link="c")
    with pytest.raises(ValueError, match="path or an XML string"):
        RobotModel.from_urdf(3.0)  # type: ignore[arg-type]


def test_sub_chain_base_link() -> None:
    """A chain starting at an inner link: poses are relative to that base_link (Pinocchio oracle)."""
    path = example_urdf("panda")
    model = RobotModel.from_urdf(str(path), base_link="panda_link2", tip_link="panda_link8")
    assert model.joint_names == [f"panda_joint{k}" for k in range(3, 8)]
    qs = np.random.default_rng(5).uniform(-2, 2, (30, 5))
    assert fk_error(model, PinocchioURDF(path), qs, ["panda_link5", "panda_link8"]) <= TOL


# ------------------------------------------------------- parsing with urdf_parser_py
def test_parsing_is_silent_logs_at_debug_and_restores_the_hooks(capfd, caplog) -> None:
    """urdf_parser_py's warnings (unknown attributes/tags) go to the logger at DEBUG, never to stdout/stderr."""
    import logging

    import urdf_parser_py.xml_reflection as xml_reflection
    import urdf_parser_py.xml_reflection.core as xml_core

    hooks = (xml_core.on_error, xml_reflection.on_error, xml_core.skip_default)
    decorated = _urdf(
        _joint("j1", "a", "b", kind="continuous").replace("</joint>", "<dynamics damping='0.1' mu_coulomb='3'/></joint>")
        + _joint("j2", "b", "c", xyz="0.4 0 0", axis="0 1 0", kind="continuous"),
        "<gazebo reference='a'><material>Gazebo/Grey</material></gazebo><ros2_control name='x' type='system'/>",
        "abc",
    )
    with caplog.at_level(logging.DEBUG, logger="robot_dynamics.model.urdf_conversion"):
        RobotModel.from_urdf(str(example_urdf("panda")), tip_link="panda_link8")
        model = RobotModel.from_urdf(decorated)
        with pytest.raises(ValueError, match="unknown joint type"):
            RobotModel.from_urdf(_urdf(_joint("j1", "a", "b", kind="unknown"), names="ab"))
        # a <visual> without <geometry> was an error; the dynamics never reads it (lenient parsing, issue 14)
        assert RobotModel.from_urdf(_one_joint(link_body="<visual/>")).dof == 1
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert (xml_core.on_error, xml_reflection.on_error, xml_core.skip_default) == hooks
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    assert 'Unknown attribute "mu_coulomb"' in logged  # <gazebo>, <ros2_control> are removed before the library
    # unknown content does not change the model: FK of the decorated URDF equals Pinocchio's
    assert model.Fv.tolist() == [0.1, 0.0]
    qs = np.random.default_rng(1).uniform(-3, 3, (10, 2))
    assert fk_error(model, PinocchioURDF(decorated), qs, ["a", "b", "c"]) <= TOL


def _one_joint(joint_body: str = "", link_body: str = "") -> str:
    return (
        f"<robot name='t'><link name='a'/><link name='b'>{link_body}</link>"
        f"<joint name='j1' type='revolute'><parent link='a'/><child link='b'/>{joint_body}</joint></robot>"
    )


def test_lenient_defaults_kept() -> None:
    """Absent optional values (hand-derived): <limit> with effort only -> unbounded; one-sided -> other
    bound 0 (URDF spec); no velocity/effort -> inf; <inertial> without <mass> -> m = 0; missing inertia
    attributes -> 0; <axis> without xyz -> x axis; <robot> without name -> 'robot'."""
    m = RobotModel.from_urdf(_one_joint("<limit effort='3'/>"))
    jt = m.joints[0]
    assert (jt.lower, jt.upper, jt.effort, jt.velocity) == (-math.inf, math.inf, 3.0, math.inf)
    jt = RobotModel.from_urdf(_one_joint("<limit lower='-1' velocity='2'/>")).joints[0]
    assert (jt.lower, jt.upper, jt.effort, jt.velocity) == (-1.0, 0.0, math.inf, 2.0)
    # axis z; COM on the axis: XX = ixx, YY = iyy, ZZ = izz, no mass
    m = RobotModel.from_urdf(_one_joint("<axis xyz='0 0 1'/>", "<inertial><inertia/></inertial>"))
    assert m.inertial[0].tolist() == [0] * 10
    m = RobotModel.from_urdf(
        _one_joint("<axis xyz='0 0 1'/>", "<inertial><mass value='1'/><inertia ixx='1' iyy='2' izz='3'/></inertial>")
    )
    assert m.inertial[0].tolist() == [1, 0, 0, 2, 0, 3, 0, 0, 0, 1]
    # 2 kg at (0.5, 0, 0), products of inertia not given: ZZ = 0.1 + 2 * 0.25, YY = 0.05 + 2 * 0.25, MX = 1
    m = RobotModel.from_urdf(_one_joint(
        "<axis xyz='0 0 1'/>",
        "<inertial><origin xyz='0.5 0 0'/><mass value='2'/><inertia ixx='0.05' iyy='0.05' izz='0.1'/></inertial>",
    ))
    assert m.inertial[0].tolist() == pytest.approx([0.05, 0, 0, 0.55, 0, 0.6, 1, 0, 0, 2], abs=1e-15)
    # default axis x: R1 has z along base x
    m = RobotModel.from_urdf(_one_joint("<axis/>").replace(" name='t'", ""))
    assert m.name == "robot"
    assert m.base_transform[:3, 2] == pytest.approx([1, 0, 0], abs=1e-15)


BAD_PARSE = [
    (_one_joint(link_body="<inertial><mass value='abc'/></inertial>"), "link 'b' inertial mass: not a number"),
    (_one_joint(link_body="<inertial><mass value='nan'/></inertial>"), "link 'b' inertial mass: NaN or inf"),
    (_one_joint(link_body="<inertial><mass/></inertial>"), "mass: missing attribute 'value'"),
    (_one_joint(link_body="<inertial><mass value='-1'/></inertial>"), "'b' inertial is physically inconsistent: negative mass -1"),
    (_one_joint(link_body="<inertial><mass value='1'/><inertia ixx='nan'/></inertial>"), "inertia is not finite"),
    (_one_joint(link_body="<inertial><origin xyz='0 0'/><mass value='1'/></inertial>"), "inertial origin xyz: expected 3"),
    (_one_joint("<limit lower='nan' upper='1' effort='1' velocity='1'/>"), "'j1': lower is NaN"),
    (_one_joint("<limit lower='1' upper='-1' effort='1' velocity='1'/>"), "lower limit 1.0 > upper limit -1.0"),
    (_one_joint("<dynamics damping='x'/>"), r"joint\[@name='j1'\]/dynamics.*could not convert"),
    (_one_joint("<dynamics friction='nan'/>"), "'j1': friction is NaN"),
    (_one_joint("<axis xyz='1 0 x'/>"), "axis: not a number"),
    (_one_joint("<origin rpy='0 inf 0'/>"), "origin rpy: NaN or inf"),
    (_one_joint().replace("<child link='b'/>", ""), "missing <child link=...>"),
    (_one_joint().replace("<parent link='a'/>", "<parent/>"), "missing <parent link=...>"),
    (_one_joint().replace("<joint name='j1'", "<joint"), "<joint> without a name"),
    (_one_joint().replace("<link name='b'>", "<link name=''>"), "<link> without a name"),
    (_one_joint().replace("type='revolute'", ""), "unknown joint type None"),
    (_one_joint("<limit effort='-1' velocity='1'/>"), "'j1': negative effort limit -1"),
    (_one_joint("<limit effort='1' velocity='-2'/>"), "'j1': negative velocity limit -2"),
    (_one_joint().replace("name='t'", "name='t' version='2.0'"), "only 1.0 is supported"),
]


@pytest.mark.parametrize(("text", "message"), BAD_PARSE)
def test_malformed_values_raise_clear_value_error(text: str, message: str, capfd) -> None:
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf(text)
    assert capfd.readouterr() == ("", "")


def test_export_of_unlimited_efforts_and_velocities_loads_in_urdfdom():
    """URDF requires both effort and velocity in <limit>: an unlimited one is written as 0 and read back as +inf.
    Oracle: Pinocchio (urdfdom) parses the file and reports the same finite limits."""
    import math

    import pinocchio as pin

    from robot_dynamics import MDHJoint, RobotModel

    inertial = np.tile([0.1, 0, 0, 0.1, 0, 0.1, 0.05, 0, 0, 1.0], (2, 1))
    m = RobotModel(
        [MDHJoint("j1", 0, 0, 0.0, 0.0, 0.0, 0.0, link="l1", effort=5.0),
         MDHJoint("j2", 1, 0, 0.0, 1.0, 0.0, 0.0, link="l2", lower=-1.0, upper=1.0, velocity=2.0)],
        frames={"tip": (2, np.eye(4))}, tip_link="tip", inertial=inertial,
    )
    text = m.to_urdf()
    pm = pin.buildModelFromXML(text)  # raises on a <limit> without velocity or effort
    assert pm.effortLimit[0] == 5.0 and pm.velocityLimit[-1] == 2.0
    back = RobotModel.from_urdf(text)
    assert back.joints[0].effort == 5.0 and math.isinf(back.joints[0].velocity)
    assert math.isinf(back.joints[1].effort) and back.joints[1].velocity == 2.0


def test_default_base_skips_only_a_massless_world_fixed_by_identity() -> None:
    """default_base: a ``world`` root (no inertial) whose one joint is fixed with an identity origin is skipped; an
    offset of 1e-9 m, a mass on world, a second child, or another root name keep the URDF root as the base."""
    arm = ('<link name="base_link"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
           'izz="1"/></inertial></link><link name="l1"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" '
           'iyy="1" iyz="0" izz="1"/></inertial></link><joint name="j1" type="revolute"><parent link="base_link"/>'
           '<child link="l1"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')

    def base(root: str = "world", xyz: str = "0 0 0", world: str = "", extra: str = "") -> str:
        text = (f'<robot name="r"><link name="{root}">{world}</link>{arm}<joint name="fix" type="fixed">'
                f'<parent link="{root}"/><child link="base_link"/><origin xyz="{xyz}" rpy="0 0 0"/></joint>{extra}'
                '</robot>')
        return RobotModel.from_urdf(text).base_link

    assert base() == "base_link"
    assert base(xyz="0 0 1e-9") == "world"
    assert base(world='<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                      '</inertial>') == "world"
    assert base(extra='<link name="cam"/><joint name="c" type="fixed"><parent link="world"/><child link="cam"/>'
                      '</joint>') == "world"
    assert base(root="ground") == "ground"
