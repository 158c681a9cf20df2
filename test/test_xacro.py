"""xacro descriptions (issue 14): the same model through the Python API, the CLI and a node as the
expanded URDF, and one clear error for every way a xacro file can be wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics import RobotModel
from robot_dynamics.model.robots import load_model

DATA = Path(__file__).resolve().parent / "data"
ARM = DATA / "param_arm.urdf.xacro"
XACRO_CLI = Path(sys.executable).parent / "xacro"  # the xacro package's own command line (the oracle)


def expanded(tmp_path: Path, *args: str) -> Path:
    """The arm expanded by the xacro command line, written to a .urdf file."""
    out = tmp_path / "param_arm.urdf"
    text = subprocess.run([str(XACRO_CLI), str(ARM), *args], check=True, capture_output=True, text=True).stdout
    out.write_text(text)
    return out


def assert_same_model(a: RobotModel, b: RobotModel, tol: float = 1e-15) -> None:
    assert a.name == b.name and a.joint_names == b.joint_names and a.tip_link == b.tip_link
    rows = [[j.sigma, j.antecedent, j.alpha, j.d, j.theta, j.r, j.sign] for j in a.joints]
    np.testing.assert_allclose(rows, [[j.sigma, j.antecedent, j.alpha, j.d, j.theta, j.r, j.sign] for j in b.joints],
                               rtol=0, atol=tol)
    np.testing.assert_allclose(a.inertial, b.inertial, rtol=0, atol=tol)
    for key, value in a.limits.items():
        np.testing.assert_allclose(value, b.limits[key], rtol=0, atol=tol)
    np.testing.assert_allclose(a.Fv, b.Fv, rtol=0, atol=tol)
    np.testing.assert_allclose(a.Fc, b.Fc, rtol=0, atol=tol)


def test_python_api_equals_expanded_urdf(tmp_path) -> None:
    ref = RobotModel.from_urdf(str(expanded(tmp_path, "l1:=0.4", "m2:=2.5")))
    assert_same_model(RobotModel.from_urdf(str(ARM), xacro_args=["l1:=0.4", "m2:=2.5"]), ref)
    assert_same_model(RobotModel.from_urdf(ARM, xacro_args={"l1": 0.4, "m2": "2.5"}), ref)
    assert_same_model(load_model(str(ARM), xacro_args=["l1:=0.4", "m2:=2.5"]), ref)
    # the arguments reach the model: l1 is the offset along z_1 of joint 2's axis, l2 the length a_3, m2 a mass
    assert ref.dof == 3 and ref.joints[2].d == pytest.approx(0.35, abs=1e-15)
    assert ref.inertial[1, 9] == 2.5 and ref.limits["velocity"].tolist() == [2.5, 2.5, 3.0]
    other = load_model(str(ARM), xacro_args=["l1:=0.4", "l2:=0.5"])
    assert other.joints[2].d == pytest.approx(0.5, abs=1e-15)
    tip_z = lambda m: (m.base_transform @ m.link_frames(np.zeros(3))[-1])[2, 3]  # noqa: E731
    assert tip_z(load_model(str(ARM), xacro_args=["l1:=0.6"])) - tip_z(other) == pytest.approx(0.2, abs=1e-12)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robot_dynamics", *args], capture_output=True, text=True, timeout=120)


def test_cli_equals_expanded_urdf(tmp_path) -> None:
    ref = expanded(tmp_path, "l1:=0.4")
    got = _cli("dh", str(ARM), "--xacro-arg", "l1:=0.4", "--format", "yaml")
    want = _cli("dh", str(ref), "--format", "yaml")
    assert got.returncode == 0 and want.returncode == 0, got.stderr + want.stderr
    assert got.stdout == want.stdout
    assert_same_model(RobotModel.from_yaml(got.stdout), RobotModel.from_urdf(str(ref)))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["dh", str(ARM)], "missing xacro argument 'l1'"),
        (["dh", "rx90", "--xacro-arg", "l1:=0.4"], "--xacro-arg given but URDF 'rx90' is not a .xacro file"),
        (["dh", str(ARM), "--xacro-arg", "l1=0.4"], "must read name:=value"),
        (["base-params", str(ARM), "--xacro-arg", "l1:=abc"], "not a number"),
    ],
)
def test_cli_xacro_errors_are_one_line(args, needle) -> None:
    r = _cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f'<?xml version="1.0"?>\n<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">\n{body}\n</robot>\n')
    return path


JOINT = "<link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/><child link='b'/>{}</joint>"


BAD_XACRO = [
    ("missing_arg.urdf.xacro", JOINT.format("<origin xyz='$(arg length) 0 0'/>"),
     r"missing xacro argument 'length' .*pass length:=VALUE"),
    ("bad_include.xacro", "<xacro:include filename='no_such_macros.xacro'/>" + JOINT.format(""),
     r"cannot open an included file: No such file or directory: .*no_such_macros.xacro"),
    ("syntax.xacro", "<link name='a'>", r"XML syntax error: mismatched tag"),
    ("bad_expression.xacro", JOINT.format("<origin xyz='${0.3 * undefined_length} 0 0'/>"),
     r"name 'undefined_length' is not defined when evaluating expression '0.3 \* undefined_length'"),
    ("undefined_macro.xacro", "<xacro:no_such_macro/>" + JOINT.format(""), r"unknown macro name: xacro:no_such_macro"),
]


@pytest.mark.parametrize(("name", "body", "message"), BAD_XACRO, ids=[b[0] for b in BAD_XACRO])
def test_malformed_xacro_gives_one_clear_error(tmp_path, capfd, name, body, message) -> None:
    path = _write(tmp_path, name, body)
    with pytest.raises(ValueError, match=message) as info:
        RobotModel.from_urdf(str(path))
    assert str(path) in str(info.value)
    assert capfd.readouterr() == ("", "")  # xacro's own stderr output is routed to the logger


def test_error_in_an_included_file_names_both_files(tmp_path) -> None:
    (tmp_path / "inc.xacro").write_text(
        '<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"><inertial><mass value="${1/0}"/>'
        "</inertial></link></robot>"
    )
    top = _write(tmp_path, "top.urdf.xacro", "<xacro:include filename='inc.xacro'/>")
    with pytest.raises(ValueError, match=r"in '.*inc.xacro' \(included from '.*top.urdf.xacro'\): division by zero"):
        RobotModel.from_urdf(str(top))


def test_xacro_text_is_refused_naming_xacro() -> None:
    text = ARM.read_text()
    for kw in ({"text_only": True}, {}):
        with pytest.raises(ValueError, match=r"this text is xacro, not URDF \(element <xacro:arg>\).*expanded only from a "
                                             r"\.xacro file"):
            RobotModel.from_urdf(text, **kw)
    # the prefix not even declared: still named as xacro, not as an XML error
    with pytest.raises(ValueError, match=r"this text is xacro.*undeclared xacro: prefix"):
        RobotModel.from_urdf("<robot name='r'><xacro:property name='a' value='1'/><link name='a'/></robot>")
    # a ${...} left in an attribute the dynamics reads
    with pytest.raises(ValueError, match=r"this text is xacro.*xyz='\$\{L1\} 0 0' in <origin>"):
        RobotModel.from_urdf(_one := JOINT.format("<origin xyz='${L1} 0 0'/>").join(["<robot name='r'>", "</robot>"]))
    assert _one


def test_xacro_args_only_for_xacro_files(tmp_path) -> None:
    with pytest.raises(ValueError, match="not a .xacro file"):
        load_model("rx90", xacro_args=["l1:=0.4"])
    with pytest.raises(ValueError, match="xacro arguments apply to .xacro files only"):
        RobotModel.from_urdf("<robot name='r'/>", text_only=True, xacro_args=["a:=1"])
    with pytest.raises(ValueError, match="must read name:=value"):
        load_model(str(ARM), xacro_args=["l1"])


@pytest.mark.ros
def test_node_equals_core(tmp_path) -> None:
    """urdf_to_dh with urdf_path = the .xacro and xacro_args: ~/convert (empty request) answers the core's model;
    xacro text sent in a request is refused naming xacro, and the node keeps serving."""
    import rclpy
    from ros_harness import call_service, node_process, wait_for_service

    from robot_dynamics_interfaces.srv import ConvertUrdf

    core = load_model(str(ARM), xacro_args=["l1:=0.4"])
    rclpy.init()
    node = rclpy.create_node("test_xacro_client")
    try:
        with node_process("urdf_to_dh", tmp_path, params={"urdf_path": str(ARM), "xacro_args": ["l1:=0.4"]}) as proc:
            client = node.create_client(ConvertUrdf, "/urdf_to_dh/convert")
            wait_for_service(client)
            resp = call_service(node, client, ConvertUrdf.Request())
            assert resp.success, resp.message
            assert resp.yaml == core.to_yaml()
            assert_same_model(RobotModel.from_yaml(resp.yaml), RobotModel.from_urdf(str(expanded(tmp_path, "l1:=0.4"))))
            bad = call_service(node, client, ConvertUrdf.Request(urdf=ARM.read_text()))
            assert not bad.success and bad.message.startswith("invalid_urdf:") and "xacro" in bad.message
            assert call_service(node, client, ConvertUrdf.Request()).success
            assert proc.poll() is None
    finally:
        node.destroy_node()
        rclpy.shutdown()


@pytest.mark.ros
def test_node_with_missing_xacro_argument_refuses_and_keeps_running(tmp_path) -> None:
    import rclpy
    from ros_harness import call_service, node_process, wait_for_service

    from robot_dynamics_interfaces.srv import ConvertUrdf

    rclpy.init()
    node = rclpy.create_node("test_xacro_client2")
    try:
        with node_process("urdf_to_dh", tmp_path, params={"urdf_path": str(ARM)}) as proc:
            client = node.create_client(ConvertUrdf, "/urdf_to_dh/convert")
            wait_for_service(client)
            resp = call_service(node, client, ConvertUrdf.Request())
            assert not resp.success and resp.message.startswith("no_model:")
            assert proc.poll() is None
        log = (tmp_path / "urdf_to_dh.log").read_text()
        assert "missing xacro argument 'l1'" in log, log[-2000:]
    finally:
        node.destroy_node()
        rclpy.shutdown()
