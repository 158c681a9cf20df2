"""Integration (issue 10, ROS path): the simulated arm executes an exciting trajectory over ROS 2,
``/joint_states`` is recorded into a rosbag2, and the base parameters are identified from the bag.

Oracles: the base parameters (issue-5 module) of ``perturbed(model, 0.3, seed)``, exactly the plant
that ``mujoco_sim`` simulates with ``model_error: 0.3``; the bag is read back with ``rosbags`` itself.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from ros_harness import node_process
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from robot_dynamics.cli import main
from robot_dynamics.dynamics.base_parameters import base_parameters
from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.recorder import APPROACH, DEPTH, JointStateRecorder
from robot_dynamics.sim.simulator import perturbed

pytestmark = pytest.mark.ros


def test_identify_record_planar2r_recovers_the_simulated_plant(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RD_IDENTIFY_DOMAIN_ID", os.environ["ROS_DOMAIN_ID"])  # this test run's domain
    out = tmp_path / "rec"
    code = main(["identify-record", "--robot", "planar2r", "--output", str(out), "--duration", "4",
                 "--harmonics", "4", "--maxiter", "10", "--model-error", "0.3", "--seed", "2", "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code == 0  # every node exited cleanly
    model = load_model("planar2r")
    true = base_parameters(perturbed(model, 0.3, 2))
    assert obj["names"] == list(true.names)
    est = np.array(obj["values"])
    big = np.abs(true.values) > 1e-6
    assert big.sum() >= 4
    rel = np.abs(est - true.values)[big] / np.abs(true.values[big])
    info = {"lost messages": obj["lost"], "samples": obj["samples"]}
    assert obj["lost"] == 0, info  # every state of the lockstep run recorded
    assert rel.max() < 0.01, (dict(zip(np.array(true.names)[big], rel, strict=True)), info)
    # zero parameters (planar: MY, friction, Ia2): within 0.3 % of the largest base parameter
    assert np.abs(est - true.values)[~big].max() < 3e-3 * np.abs(true.values).max(), (est - true.values, info)
    # the nominal model is off by far more than the estimates: the data came from the perturbed plant
    nominal = base_parameters(model).values
    assert (np.abs(nominal - true.values)[big] / np.abs(true.values[big])).max() > 0.1
    # the bag: one JointState per control period (2 ms) of the 4 s trajectory and its lead, read with rosbags
    with Reader(out / "bag") as r:
        conns = [c for c in r.connections if c.topic == "/joint_states"]
        assert [c.msgtype for c in conns] == ["sensor_msgs/msg/JointState"]
        # 0.2 s lead before the start stamp, then APPROACH s from the arm to the excitation's start
        count = sum(c.msgcount for c in conns)
        assert abs(count - (0.2 + APPROACH + 4.05) / 0.002) <= 3, (count, info)
    assert (out / "estimates.yaml").is_file() and (out / "logs" / "mujoco_sim.log").is_file()


def test_recorder_queue_depth():
    """The reader queue holds ``depth`` states while the recorder's process waits for a core (default ``DEPTH``,
    20 s at 500 Hz); 1 is the smallest queue, 0 is refused before any subscription exists."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for depth, expected in ((None, DEPTH), (1, 1), (50_000, 50_000)):
            rec = JointStateRecorder(context=context, **({} if depth is None else {"depth": depth}))
            assert [s.qos_profile.depth for s in rec.subscriptions] == [expected]
            assert rec.get_parameter("depth").value == expected
            rec.destroy_node()
        with pytest.raises(ValueError, match="depth must be >= 1, got 0"):
            JointStateRecorder(context=context, depth=0)
    finally:
        rclpy.try_shutdown(context=context)


def test_standalone_recorder_writes_every_state_on_sigint(tmp_path):
    """``python -m robot_dynamics.ros.recorder -p output:=DIR`` next to a real-time ``mujoco_sim``: on SIGINT
    the bag holds the JointStates of every control period between its first and last stamp (no gap)."""
    bag = tmp_path / "rec_bag"
    with node_process("mujoco_sim", tmp_path, {"urdf_path": "planar2r", "control_period": 0.002,
                                               "timestep": 0.001, "use_sim_time": False}):
        with node_process("recorder", tmp_path, {"output": str(bag)}) as rec:
            log = tmp_path / "recorder.log"
            deadline = time.monotonic() + 60  # a loaded host takes seconds to start a Python node
            while "recording /joint_states" not in (log.read_text() if log.exists() else ""):
                assert rec.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
                time.sleep(0.1)
            time.sleep(4.0)
        assert rec.returncode == 0
    with Reader(bag) as r:
        conns = [c for c in r.connections if c.topic == "/joint_states"]
        ts = get_typestore(Stores.LATEST)
        msgs = [ts.deserialize_cdr(raw, c.msgtype) for c, _, raw in r.messages(connections=conns)]
    assert len(msgs) > 50
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])
    assert np.all(np.diff(stamps) > 0)
    assert round((stamps[-1] - stamps[0]) / 0.002) + 1 == len(msgs)
    assert all(list(m.name) == load_model("planar2r").joint_names for m in msgs)
