"""Process lifecycle: the bring-up runner stops every child on SIGINT/SIGTERM, and the controller
sends a last holding command (gravity torques of the core model at the last state) on shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from ros_harness import node_process, start_process, stop_process, wait_for_service
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.node_set import config_dir, node_set

pytestmark = pytest.mark.ros


@pytest.fixture
def client():
    rclpy.init()
    node = rclpy.create_node("test_lifecycle_client")
    yield node
    node.destroy_node()
    rclpy.shutdown()


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_bringup_runner_stops_all_children(client, tmp_path, sig):
    proc = start_process([sys.executable, "-m", "robot_dynamics", "bringup", "--robot", "planar2r", "--sim", "mujoco"],
                         tmp_path / "bringup.log")
    try:
        stats = client.create_client(Trigger, "/computed_torque_controller/statistics")
        wait_for_service(stats, 60)
        children = _children(proc.pid)
        expected = len(node_set("planar2r", "mujoco"))  # every node of the bring-up, each its own process
        assert expected == 6 and len(children) == expected, children
        proc.send_signal(sig)  # to the runner only: it must stop its children itself
        assert proc.wait(30) == 0, (tmp_path / "bringup.log").read_text()[-2000:]
        time.sleep(0.5)
        alive = [c for c in children if subprocess.run(["kill", "-0", str(c)], capture_output=True).returncode == 0]
        assert not alive, f"children still alive: {alive}"
        assert "stopped" in (tmp_path / "bringup.log").read_text()
    finally:
        stop_process(proc)


def test_controller_sends_holding_command_on_shutdown(client, tmp_path):
    model = load_model("rx90")
    commands: list[np.ndarray] = []
    client.create_subscription(Float64MultiArray, "/effort_controller/commands", lambda m: commands.append(np.array(m.data)), 100)
    pub = client.create_publisher(JointState, "/joint_states", 10)
    q = np.array([0.3, -0.4, 0.5, 0.1, 0.2, -0.3])
    with node_process("computed_torque_controller", tmp_path, params={"urdf_path": "rx90"},
                      param_files=[config_dir() / "rx90.yaml"]) as ctl:
        stats = client.create_client(Trigger, "/computed_torque_controller/statistics")
        wait_for_service(stats)
        # a steady state stream at the pose q until the controller commands (it loads and compiles its model
        # first: seconds, more on a busy host)
        start = time.monotonic()
        while not commands or time.monotonic() < start + 3.0:  # and 3 s of the stream at least
            if time.monotonic() > start + 120.0:
                raise TimeoutError("precondition: the controller never commanded within 120 s (a starved host?)")
            pub.publish(JointState(name=model.joint_names, position=q.tolist(), velocity=[0.0] * 6, effort=[0.0] * 6))
            rclpy.spin_once(client, timeout_sec=0.01)
        stop_process(ctl)
        assert ctl.returncode == 0
        end = time.monotonic() + 2
        while time.monotonic() < end:  # the commands sent before the exit, this process may read them late
            rclpy.spin_once(client, timeout_sec=0.05)
    # the node said it sent the holding command on its way out, and the last command is gravity at q
    assert "sent the holding command" in (tmp_path / "computed_torque_controller.log").read_text()
    np.testing.assert_allclose(commands[-1], model.gravity_torques(q), atol=1e-9)


def test_a_node_dumps_its_stacks_on_sigusr1_and_goes_on(tmp_path):
    """``kill -USR1`` (``runtime.DUMP_SIGNAL``): every thread's Python stack in the node's log, the node still
    running and stopping cleanly (what a test that got no answer does to every node it started)."""
    from robot_dynamics.ros.runtime import DUMP_SIGNAL

    log = tmp_path / "urdf_to_dh.log"
    with node_process("urdf_to_dh", tmp_path, params={"urdf_path": "rx90"}) as proc:
        deadline = time.monotonic() + 60
        while "robot 'rx90'" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
            time.sleep(0.1)
        # until the main thread is seen spinning its executor (a dump during the start-up shows the start-up)
        while "_spin_until_stopped" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            proc.send_signal(DUMP_SIGNAL)
            time.sleep(1.0)
        assert "thread 0x" in log.read_text().lower() and proc.poll() is None
        assert stop_process(proc) == 0
