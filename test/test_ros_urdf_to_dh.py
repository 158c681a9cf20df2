"""Integration: the urdf_to_dh node in its own process, called over DDS."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
from example_robots import example_urdf
from ros_harness import call_service, node_process, wait_for_service

from robot_dynamics.model.robots import resolve_urdf
from robot_dynamics_interfaces.msg import MDHModel
from robot_dynamics_interfaces.srv import ConvertUrdf

pytestmark = pytest.mark.ros

RX90 = resolve_urdf("rx90")


@pytest.fixture(scope="module")
def client_node():
    rclpy.init()
    node = rclpy.create_node("test_urdf_to_dh_client")
    yield node
    node.destroy_node()
    rclpy.shutdown()


@pytest.fixture(scope="module")
def converter(tmp_path_factory, client_node):
    log_dir = tmp_path_factory.mktemp("urdf_to_dh")
    with node_process("urdf_to_dh", log_dir, params={"urdf_path": str(RX90)}) as proc:
        client = client_node.create_client(ConvertUrdf, "/urdf_to_dh/convert")
        wait_for_service(client)
        yield proc, client
        client_node.destroy_client(client)


def _mdh_rows(msg_model) -> np.ndarray:
    return np.array([[j.sigma, j.alpha, j.d, j.theta, j.r, j.sign, j.antecedent] for j in msg_model.joints])


def _core_rows(model) -> np.ndarray:
    return np.array([[j.sigma, j.alpha, j.d, j.theta, j.r, j.sign, j.antecedent] for j in model.joints])


def test_convert_default_description_matches_core(converter, client_node):
    from robot_dynamics import RobotModel

    proc, client = converter
    resp = call_service(client_node, client, ConvertUrdf.Request())
    assert resp.success, resp.message
    core = RobotModel.from_urdf(str(RX90))
    assert [j.name for j in resp.model.joints] == core.joint_names
    np.testing.assert_array_equal(_mdh_rows(resp.model), _core_rows(core))
    # the YAML crosses the process boundary losslessly
    back = RobotModel.from_yaml(resp.yaml)
    np.testing.assert_array_equal(back.inertial, core.inertial)
    assert proc.poll() is None


def test_convert_request_urdf_ur5(converter, client_node):
    from robot_dynamics import RobotModel

    _, client = converter
    text = Path(example_urdf("ur5")).read_text()
    resp = call_service(client_node, client, ConvertUrdf.Request(urdf=text, tip_link="wrist_3_link"))
    assert resp.success, resp.message
    core = RobotModel.from_urdf(text, tip_link="wrist_3_link")
    np.testing.assert_array_equal(_mdh_rows(resp.model), _core_rows(core))
    # UR5 geometry (hand-checked against the URDF origins): a2 = 0.425, a3 = 0.39225 along x
    assert resp.model.joints[2].d == pytest.approx(0.425, abs=1e-12)
    assert resp.model.joints[3].d == pytest.approx(0.39225, abs=1e-12)


@pytest.mark.parametrize(
    "urdf, tip, needle",
    [
        ("<robot", "", "XML"),
        ('<robot name="x"><link name="a"/></robot>', "", "joint"),
        (None, "no_such_link", "no_such_link"),
    ],
)
def test_malformed_requests_answered_and_node_survives(converter, client_node, urdf, tip, needle):
    proc, client = converter
    text = RX90.read_text() if urdf is None else urdf
    resp = call_service(client_node, client, ConvertUrdf.Request(urdf=text, tip_link=tip))
    assert not resp.success
    assert needle.lower() in resp.message.lower(), resp.message
    # still serving
    ok = call_service(client_node, client, ConvertUrdf.Request())
    assert ok.success and proc.poll() is None


def test_model_topic_is_latched(converter, client_node):
    from rclpy.qos import DurabilityPolicy, QoSProfile

    got: list[MDHModel] = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    sub = client_node.create_subscription(MDHModel, "/urdf_to_dh/model", got.append, qos)
    deadline = time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(client_node, timeout_sec=0.2)
    client_node.destroy_subscription(sub)
    assert got, "no latched model on /urdf_to_dh/model"
    assert len(got[0].joints) == 6
