"""Issue 29: the identifier writes only under its ``output_root``.  The path rule (:func:`sub_directory`,
:func:`output_path`) at its boundaries, then the node: ``~/identify`` with a bad ``output_dir`` and a run-time
change of the ``output_dir`` parameter are refused with the reason, before anything is recorded, moved or written
(the node runs without a model, controller or joint states: a refusal must not need them)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path, PurePosixPath

import pytest
import rclpy
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from ros_harness import call_service, node_process, wait_for_service

from robot_dynamics.ros.identifier import MAX_SUBDIR_CHARS, OUTPUT_FILES, output_path, sub_directory
from robot_dynamics_interfaces.srv import Identify


# ----------------------------------------------------------------- the rule
@pytest.mark.parametrize(("text", "expected"), [
    ("a/b", "a/b"), ("", "."), (".", "."), ("a/./b", "a/b"), ("a//b/", "a/b"), ("./a", "a"), ("..a/b..", "..a/b.."),
    ("a" * MAX_SUBDIR_CHARS, "a" * MAX_SUBDIR_CHARS),
])
def test_sub_directory_accepted(text, expected):
    assert sub_directory(text) == PurePosixPath(expected)


@pytest.mark.parametrize(("text", "why"), [
    ("/tmp/x", "absolute path"), ("/etc", "absolute path"), ("/", "absolute path"), ("../x", "contains '..'"),
    ("a/../../x", "contains '..'"), ("a/..", "contains '..'"), ("..", "contains '..'"), ("x\x00y", "NUL byte"),
    ("a\nb", "control character"), ("a\x7fb", "control character"),
    ("a" * (MAX_SUBDIR_CHARS + 1), f"more than {MAX_SUBDIR_CHARS}"),
])
def test_sub_directory_refused(text, why):
    with pytest.raises(ValueError, match=why) as exc:
        sub_directory(text, "request output_dir")
    assert str(exc.value).startswith("request output_dir")


def test_sub_directory_wants_a_string():
    with pytest.raises(ValueError, match="must be a string"):
        sub_directory(b"a")  # type: ignore[arg-type]


def test_output_path_symbolic_links(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "inside").mkdir(parents=True)
    outside.mkdir()
    (root / "up").symlink_to(outside)  # a link leading out of the root
    (root / "in").symlink_to(root / "inside")  # one that stays inside
    assert output_path(root, PurePosixPath("a/b")) == root / "a" / "b"  # need not exist yet
    assert output_path(root, PurePosixPath(".")) == root
    assert output_path(root, PurePosixPath("in/c")) == root / "in" / "c"
    for sub in ("up", "up/deeper"):
        with pytest.raises(ValueError, match="leads out of output_root"):
            output_path(root, PurePosixPath(sub))
    (root / "inside" / "model.yaml").symlink_to(outside / "model.yaml")  # a file written through a link
    with pytest.raises(ValueError, match="model.yaml there is a symbolic link"):
        output_path(root, PurePosixPath("inside"))
    assert "model.yaml" in OUTPUT_FILES
    assert not any(outside.iterdir())


# ----------------------------------------------------------------- the node
@pytest.fixture(scope="module")
def client():
    rclpy.init()
    node = rclpy.create_node("test_identifier_output_dir")
    yield node
    node.destroy_node()
    rclpy.shutdown()


@pytest.fixture(scope="module")
def identifier(tmp_path_factory, client):
    base = tmp_path_factory.mktemp("identifier")
    root = base / "root"
    root.mkdir()
    escape = base / f"escape-{uuid.uuid4().hex}"
    escape.mkdir()
    (root / "link").symlink_to(escape)
    with node_process("identifier", base, params={"output_root": str(root), "controller": "no_controller",
                                                  "joint_states_topic": "no_joint_states"},
                      remaps={"/robot_description": "/test_identifier_output_dir/robot_description"}) as proc:
        identify = client.create_client(Identify, "/identifier/identify")
        params = client.create_client(SetParameters, "/identifier/set_parameters")
        wait_for_service(identify)
        wait_for_service(params)
        yield proc, identify, params, root, escape
        client.destroy_client(identify)
        client.destroy_client(params)


def _tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def test_identify_refuses_directories_out_of_the_root(identifier, client):
    proc, identify, _, root, escape = identifier
    absolute = f"/tmp/rd-identify-{uuid.uuid4().hex}"
    before = _tree(root)
    cases = {absolute: "absolute path", "/etc": "absolute path", "../x": "contains '..'",
             "a/../../x": "contains '..'", "link/sub": "leads out of output_root"}
    for text, why in cases.items():
        resp = call_service(client, identify, Identify.Request(duration=1.0, output_dir=text))
        assert not resp.success, text
        assert "request output_dir" in resp.message and why in resp.message, resp.message
        assert resp.files == [] and resp.samples == 0
    assert not os.path.exists(absolute) and not (root.parent / "x").exists()
    assert not any(os.path.exists(f"/etc/{name}") for name in ("estimates.yaml", "recording.npz", "validation.json"))
    assert not any(escape.iterdir()) and _tree(root) == before
    # a good one passes the directory rule and stops at the next cause (no model): nothing written either
    resp = call_service(client, identify, Identify.Request(duration=1.0, output_dir="runs/a"))
    assert not resp.success and "no robot model" in resp.message, resp.message
    assert _tree(root) == before
    assert proc.poll() is None


def _set(client, params, value: str):
    p = Parameter(name="output_dir", value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value))
    return call_service(client, params, SetParameters.Request(parameters=[p])).results[0]


def test_output_dir_parameter_follows_the_rule(identifier, client):
    proc, _, params, root, escape = identifier
    for value, why in (("/tmp/x", "absolute path"), ("../x", "contains '..'"), ("/etc", "absolute path"),
                       ("link", "leads out of output_root")):
        res = _set(client, params, value)
        assert not res.successful and why in res.reason, (value, res.reason)
    for value in ("runs/b", "", "a/./b"):
        res = _set(client, params, value)
        assert res.successful, (value, res.reason)
    root_ = Path(os.path.realpath(root))
    assert not any(escape.iterdir()) and root_.is_dir()
    assert proc.poll() is None
