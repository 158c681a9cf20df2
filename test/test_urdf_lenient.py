"""Lenient parsing and physical consistency (issue 14): what the dynamics never reads cannot make a file
fail; what makes the model wrong is refused with its cause (or a warning with allow_inconsistent_inertia)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from example_robots import example_robot_data_dir

from robot_dynamics import RobotModel
from robot_dynamics.model.robots import bundled_robots, load_model
from robot_dynamics.model.seed_robots import SEED_ROBOTS, urdf_text
from robot_dynamics.model.urdf_conversion import MOVING_TYPES, parse_urdf

ERD = example_robot_data_dir()
ALL_URDFS = sorted(str(p.relative_to(ERD)) for p in ERD.rglob("*.urdf"))

# files with a physically impossible link inertia: they load with allow_inconsistent_inertia=True (a warning
# naming the link); without it the error names the same link.  Checked by hand: e.g. PR2's sensor_mount_link
# has ixx = iyy = 0.001 < izz = 0.01 / 2, TIAGo's antennas a tensor with a negative principal moment.
INCONSISTENT = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "LeftPsyonicAbilityBaseLink",
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "link_11.0",
    "allegro_hand_description/urdf/allegro_right_hand.urdf": "link_3.0",
    "bolt_description/robots/bolt.urdf": "FL_FOOT",
    "hyq_description/robots/hyq_no_sensors.urdf": "lf_foot",
    "pr2_description/urdf/pr2.urdf": "sensor_mount_link",
    "romeo_description/urdf/romeo_laas_small.urdf": "LShoulderYaw_link",
    "romeo_description/urdf/romeo_small.urdf": "RShoulderYawLink",
}
# an impossible inertia on a link fixed to the base is never used, so it cannot make the file fail
UNUSED_INCONSISTENT = {
    "anymal_b_simple_description/robots/anymal.urdf": "base",
    "tiago_description/robots/tiago.urdf": "base_antenna_left_link",
}
# the documented refusals of the chain model (not parse errors): no moving joint at all, or no link at all
NOT_A_CHAIN = {
    "hector_description/robots/quadrotor_base.urdf": "no moving joint under base link",
    "iris_description/robots/iris_simple.urdf": "no moving joint under base link",  # rotors are fixed joints
    "ur_description/urdf/ur3.urdf": "URDF has no <link>",  # an empty <robot/> (a xacro expanded without a macro call)
}


def _chain_tip(tree) -> str | None:
    """The deepest leaf whose path from the root has a moving joint and no mimic / floating / planar joint."""
    best: tuple[int, str] | None = None
    for leaf in (k for k in tree.links if not tree.children[k]):
        link, depth, moving, ok = leaf, 0, False, True
        while link in tree.parent_joint:
            jt = tree.joints[tree.parent_joint[link]]
            moving |= jt.type in MOVING_TYPES
            ok &= jt.type in ("fixed", *MOVING_TYPES) and not (jt.mimic and jt.type in MOVING_TYPES)
            link, depth = jt.parent, depth + 1
        if moving and ok and (best is None or (-depth, leaf) < (-best[0], best[1])):
            best = (depth, leaf)
    return None if best is None else best[1]


@pytest.mark.parametrize("rel", ALL_URDFS)
def test_every_example_robot_data_urdf_parses(rel) -> None:
    path = str(ERD / rel)
    if rel in NOT_A_CHAIN:
        with pytest.raises(ValueError, match=NOT_A_CHAIN[rel]):
            RobotModel.from_urdf(path)
        return
    allow = rel in INCONSISTENT
    tree = parse_urdf(path)  # parsing never fails on an inertia: only the model checks what it uses
    if allow:
        with pytest.raises(ValueError, match=f"link '{INCONSISTENT[rel]}' inertial is physically inconsistent"):
            RobotModel.from_urdf(path)
    if rel in UNUSED_INCONSISTENT:
        assert tree.links[UNUSED_INCONSISTENT[rel]].problems  # bad, but fixed to the base: not used
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        whole = RobotModel.from_urdf(path, allow_inconsistent_inertia=allow)
        tip = _chain_tip(tree)
        model = RobotModel.from_urdf(path, tip_link=tip, allow_inconsistent_inertia=allow)
    n_moving = sum(jt.type in MOVING_TYPES for jt in tree.joints.values())
    assert whole.dof == n_moving and not whole.locked_joints  # the whole tree: every moving joint
    assert model.dof >= 1 and model.tip_link == tip
    assert model.dof + len(model.locked_joints) == n_moving  # the chain: every other moving joint is locked
    assert np.all(np.isfinite(model.inertial)) and np.all(np.isfinite(whole.inertial))
    texts = [str(w.message) for w in caught]
    if allow:
        assert any(f"link '{INCONSISTENT[rel]}' inertial is physically inconsistent" in t for t in texts), texts
    else:
        assert texts == []


def test_pr2_and_icub_original_files() -> None:
    """Both were rejected before (PR2: old-style <transmission type=...>; iCub: <texture/> without filename)."""
    icub = RobotModel.from_urdf(str(ERD / "icub_description/robots/icub.urdf"), tip_link="r_hand")
    assert icub.dof == 10  # torso (3) + right arm (7)
    with pytest.warns(UserWarning, match="'sensor_mount_link' inertial is physically inconsistent: triangle "
                                         r"inequality ixx \+ iyy >= izz violated \(ixx = 0.001, iyy = 0.001, izz = 0.01\)"):
        pr2 = RobotModel.from_urdf(str(ERD / "pr2_description/urdf/pr2.urdf"), tip_link="r_gripper_palm_link",
                                   allow_inconsistent_inertia=True)
    assert pr2.joint_names[0] == "torso_lift_joint" and pr2.dof == 8
    assert len(pr2.locked_joints) == 22  # the other arm, head, grippers, laser tilt (lumped)


DECORATED = """<robot name="deco" xmlns:foo="urn:foo">
  <material name="plain"/>
  <material name="tex"><texture/></material>
  <link name="a" foo:bar="1" unknown="x">
    <visual><geometry><mesh/></geometry><material name="m"><texture/></material></visual>
    <collision><origin xyz="1 2"/><geometry><box/></geometry></collision>
    <sensor name="s" type="camera"><camera/></sensor>
  </link>
  <link name="b">
    <inertial><origin xyz="0.1 0 0"/><mass value="2"/><inertia ixx="0.01" iyy="0.02" izz="0.02"/><extra/></inertial>
    <visual><origin rpy="not numbers"/></visual>
  </link>
  <joint name="j" type="revolute" foo:baz="2">
    <parent link="a"/><child link="b"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/>
    <calibration rising="x"/><safety_controller k_velocity="oops"/>
  </joint>
  <transmission name="t1" type="pr2_mechanism_model/SimpleTransmission">
    <actuator name="m"/><joint name="j"/><mechanicalReduction>x</mechanicalReduction>
  </transmission>
  <transmission name="t2"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface></joint>
  </transmission>
  <gazebo reference="b"><material>Gazebo/Red</material></gazebo>
  <ros2_control name="r" type="system"><hardware><plugin>x</plugin></hardware></ros2_control>
  <sensor name="imu" update_rate="x"/>
  <anything_else><nested/></anything_else>
</robot>"""
PLAIN = """<robot name="deco">
  <link name="a"/>
  <link name="b"><inertial><origin xyz="0.1 0 0"/><mass value="2"/><inertia ixx="0.01" iyy="0.02" izz="0.02"/></inertial></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
</robot>"""


def test_unused_elements_never_make_a_file_fail(capfd) -> None:
    deco, plain = RobotModel.from_urdf(DECORATED), RobotModel.from_urdf(PLAIN)
    assert deco.to_yaml() == plain.to_yaml()
    assert deco.inertial[0, 9] == 2.0 and deco.limits["effort"].tolist() == [10.0]
    assert capfd.readouterr() == ("", "")


def test_bundled_and_seed_robots_are_consistent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in bundled_robots():
            assert load_model(name).dof >= 2
        for key in SEED_ROBOTS:  # includes the Stanford arm whose link-1 inertia was corrected (I11, I22)
            assert RobotModel.from_urdf(urdf_text(key)).dof >= 2


def _one(link_body: str = "", joint_body: str = "") -> str:
    return (f"<robot name='t'><link name='a'/><link name='b'>{link_body}</link><joint name='j1' type='revolute'>"
            f"<parent link='a'/><child link='b'/><axis xyz='0 0 1'/>{joint_body}</joint></robot>")


def _inertial(mass: str, ixx: str, iyy: str, izz: str, ixy: str = "0") -> str:
    return (f"<inertial><mass value='{mass}'/><inertia ixx='{ixx}' iyy='{iyy}' izz='{izz}' ixy='{ixy}'/></inertial>")


INCONSISTENT_CASES = [
    (_inertial("1", "0.1", "0.1", "0.3"), r"triangle inequality ixx \+ iyy >= izz violated \(ixx = 0.1, iyy = 0.1, izz = 0.3\)"),
    (_inertial("1", "0.3", "0.1", "0.1"), r"triangle inequality iyy \+ izz >= ixx violated"),
    (_inertial("1", "0.1", "0.1", "0.1", ixy="0.2"), r"not positive semi-definite \(principal moments -0.1, 0.1, 0.3\)"),
    (_inertial("1", "-0.1", "0.1", "0.1"), "not positive semi-definite"),
    (_inertial("-1", "0.1", "0.1", "0.1"), "negative mass -1"),
    (_inertial("0", "0.1", "0.1", "0.1"), "zero mass with a non-zero inertia tensor"),
]


@pytest.mark.parametrize(("body", "message"), INCONSISTENT_CASES)
def test_inconsistent_inertia_is_an_error_or_a_warning(body, message) -> None:
    with pytest.raises(ValueError, match=f"link 'b' inertial is physically inconsistent: .*{message}.*"
                                         "allow_inconsistent_inertia=True"):
        RobotModel.from_urdf(_one(body))
    with pytest.warns(UserWarning, match=f"link 'b' inertial is physically inconsistent: .*{message}"):
        model = RobotModel.from_urdf(_one(body), allow_inconsistent_inertia=True)
    assert model.dof == 1


def test_consistent_limits_of_inertia_are_accepted() -> None:
    """Edge cases that are physical: a point mass (zero tensor), a thin rod (ixx = 0, iyy = izz), a flat plate
    (izz = ixx + iyy exactly), a massless link, round-off below the tolerance."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for body in (_inertial("1", "0", "0", "0"), _inertial("1", "0", "0.1", "0.1"),
                     _inertial("1", "0.1", "0.2", "0.3"), _inertial("0", "0", "0", "0"),
                     _inertial("1", "0.1", "0.2", "0.30000000000000004"), _inertial("1", "1e-20", "0", "-1e-20")):
            assert RobotModel.from_urdf(_one(body)).dof == 1


@pytest.mark.parametrize(
    ("joint_body", "message"),
    [
        ("<limit lower='0' upper='1' effort='-5' velocity='1'/>", "joint 'j1': negative effort limit -5"),
        ("<limit lower='0' upper='1' effort='5' velocity='-1'/>", "joint 'j1': negative velocity limit -1"),
        ("<limit lower='1' upper='0.5' effort='5' velocity='1'/>", "joint 'j1': lower limit 1.0 > upper limit 0.5"),
    ],
)
def test_bad_limits_are_errors(joint_body, message) -> None:
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf(_one(joint_body=joint_body))
