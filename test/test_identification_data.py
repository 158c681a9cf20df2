"""Identification data from ROS 2 bags (rosbags): round trip through sensor_msgs/msg/JointState, then identify.

Oracles: the bag is written (or read) message by message with the ``rosbags`` library itself, and the
identified base parameters are compared with those of the MuJoCo plant's true (perturbed) model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robot_dynamics.identification import (
    IdentificationData,
    base_parameters_of,
    identify,
    load_bag,
    load_data,
    optimize_excitation,
    write_bag,
)
from robot_dynamics.identification.experiment import simulate_experiment
from robot_dynamics.model.robots import load_model
from robot_dynamics.sim.simulator import perturbed

TYPESTORE = get_typestore(Stores.LATEST)


@pytest.fixture(scope="module")
def experiment():
    model = load_model("planar2r")
    truth = perturbed(model, 0.3, np.random.default_rng(4), friction=True)
    traj = optimize_excitation(model, harmonics=4, period=6.0, samples=60, maxiter=10, time_budget=np.inf,
                               seed=1).trajectory
    return model, truth, simulate_experiment(model, truth, traj)


def _write_with_rosbags(path: Path, data: IdentificationData, order: list[int], storage: StoragePlugin) -> None:
    """JointState messages built by hand (joints in ``order``), stamped t + 100 s in the header only."""
    js = TYPESTORE.types["sensor_msgs/msg/JointState"]
    header = TYPESTORE.types["std_msgs/msg/Header"]
    stamp = TYPESTORE.types["builtin_interfaces/msg/Time"]
    with Writer(path, version=9, storage_plugin=storage) as w:
        conn = w.add_connection("/joint_states", js.__msgtype__, typestore=TYPESTORE)
        other = w.add_connection("/other", "std_msgs/msg/String", typestore=TYPESTORE)
        s = TYPESTORE.types["std_msgs/msg/String"](data="not a joint state")
        w.write(other, 1, TYPESTORE.serialize_cdr(s, s.__msgtype__))
        for k in range(data.samples):
            sec, nsec = divmod(int(round((data.t[k] + 100.0) * 1e9)), 1_000_000_000)
            msg = js(header=header(stamp=stamp(sec=sec, nanosec=nsec), frame_id=""),
                     name=[data.joint_names[i] for i in order], position=data.q[k, order].copy(),
                     velocity=np.zeros(0), effort=data.effort[k, order].copy())
            w.write(conn, 10 + k, TYPESTORE.serialize_cdr(msg, js.__msgtype__))  # bag time != header stamp


@pytest.mark.parametrize("storage", [StoragePlugin.SQLITE3, StoragePlugin.MCAP])
def test_bag_written_by_rosbags_reads_back_and_identifies(experiment, tmp_path, storage):
    model, truth, data = experiment
    bag = tmp_path / "bag"
    _write_with_rosbags(bag, data, [1, 0], storage)  # joints in reverse order in the messages
    back = load_data(bag)
    assert back.joint_names == data.joint_names[::-1]
    ordered = back.reorder(data.joint_names)
    np.testing.assert_allclose(ordered.t, data.t + 100.0, atol=1e-9)
    np.testing.assert_array_equal(ordered.q, data.q)
    np.testing.assert_array_equal(ordered.effort, data.effort)
    assert back.qd is None  # empty velocity arrays
    res = identify(model, back, method="ols", cutoff=None, band=None, decimate=1)
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6
    rel = np.abs(res.values - true) / np.where(big, np.abs(true), 1.0)
    assert rel[big].max() < 0.01, dict(zip(res.names, rel, strict=True))
    assert np.abs(res.values - true)[~big].max() < 1e-4


def test_write_bag_read_by_rosbags(experiment, tmp_path):
    """write_bag -> rosbags Reader: one JointState per sample, header stamps, names, positions, efforts."""
    _, _, data = experiment
    d = IdentificationData(data.t[:50], data.q[:50], data.effort[:50], qd=data.q[:50] * 2.0,
                           joint_names=data.joint_names)
    write_bag(tmp_path / "b", d, storage="mcap")
    with Reader(tmp_path / "b") as r:
        conns = [c for c in r.connections if c.topic == "/joint_states"]
        assert [c.msgtype for c in conns] == ["sensor_msgs/msg/JointState"]
        msgs = [(ts, TYPESTORE.deserialize_cdr(raw, c.msgtype)) for c, ts, raw in r.messages(connections=conns)]
    assert len(msgs) == 50
    for k, (ts, m) in enumerate(msgs):
        assert list(m.name) == d.joint_names
        assert m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec == pytest.approx(d.t[k], abs=1e-9)
        assert ts == int(round(d.t[k] * 1e9))
        np.testing.assert_array_equal(m.position, d.q[k])
        np.testing.assert_array_equal(m.velocity, d.qd[k])
        np.testing.assert_array_equal(m.effort, d.effort[k])
    back = load_bag(tmp_path / "b")
    np.testing.assert_array_equal(back.qd, d.qd)


def test_bag_errors(tmp_path, experiment):
    _, _, data = experiment
    write_bag(tmp_path / "b", data, topic="/arm/joint_states")
    with pytest.raises(ValueError, match="no /joint_states topic"):
        load_bag(tmp_path / "b")
    assert load_bag(tmp_path / "b", topic="/arm/joint_states").samples == data.samples
    with pytest.raises(ValueError, match="storage"):
        write_bag(tmp_path / "c", data, storage="csv")
    with pytest.raises(FileNotFoundError):
        load_data(tmp_path / "missing")


def test_effort_delay_realigns_a_lagging_effort(experiment):
    """Efforts recorded one control period late (ZOH command reported at the end of its period):
    ``effort_delay`` equal to the lag gives back the estimates of the aligned data."""
    model, truth, data = experiment
    h = float(np.median(np.diff(data.t)))
    late = IdentificationData(data.t[1:], data.q[1:], data.effort[:-1], joint_names=data.joint_names)
    kw = dict(method="ols", cutoff=None, band=None, decimate=1)
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6
    err = {d: (np.abs(identify(model, late, effort_delay=d, **kw).values - true)[big] / np.abs(true[big])).max()
           for d in (0.0, h)}
    assert err[h] < 1e-3 and err[h] < 0.1 * err[0.0], err
    with pytest.raises(ValueError):
        identify(model, late, effort_delay=-1.0, **kw)


def test_lost_messages_are_left_out(experiment):
    """Gaps in the stamps (lost /joint_states messages): the samples preprocess interpolates across them
    would carry a wrong q̈ (a kink of the linear interpolation); they are dropped, and the noise-free
    estimate stays at the truth."""
    model, truth, data = experiment
    lost = np.zeros(data.samples, bool)
    for s in (1000, 2500, 2600, 4000):
        lost[s:s + 7] = True
    gapped = IdentificationData(data.t[~lost], data.q[~lost], data.effort[~lost], joint_names=data.joint_names)
    res = identify(model, gapped, method="ols", cutoff=None, band=None, decimate=1)
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6
    assert (np.abs(res.values - true)[big] / np.abs(true[big])).max() < 1e-4


# ------------------------------------------------------------------ several publishers, topics, bare mcap, stamps
GRIPPER = "gripper_finger_joint"


def _write_joint_states(path: Path, msgs: list[tuple[int, int, list[str], np.ndarray, np.ndarray, np.ndarray]], *,
                        topic: str = "/joint_states", storage: StoragePlugin = StoragePlugin.SQLITE3) -> None:
    """JointState messages built with rosbags itself: (receive ns, header stamp ns, names, position, velocity, effort)."""
    js = TYPESTORE.types["sensor_msgs/msg/JointState"]
    header = TYPESTORE.types["std_msgs/msg/Header"]
    stamp = TYPESTORE.types["builtin_interfaces/msg/Time"]
    with Writer(path, version=9, storage_plugin=storage) as w:
        conn = w.add_connection(topic, js.__msgtype__, typestore=TYPESTORE)
        for recv, ns, names, pos, vel, eff in msgs:
            sec, nsec = divmod(ns, 1_000_000_000)
            msg = js(header=header(stamp=stamp(sec=sec, nanosec=nsec), frame_id=""), name=list(names),
                     position=np.asarray(pos, float), velocity=np.asarray(vel, float), effort=np.asarray(eff, float))
            w.write(conn, recv, TYPESTORE.serialize_cdr(msg, js.__msgtype__))


def _split_with_gripper(data: IdentificationData, *, zero_stamps: bool = False) -> list:
    """The arm's samples split over two publishers (one joint each, in turn first), and a gripper publisher
    (positions only, its own rate and stamps) interleaved; the same header stamps as ``write_bag``."""
    msgs = []
    a, b = data.joint_names
    for k in range(data.samples):
        ns = int(round(data.t[k] * 1e9))
        stamp = 0 if zero_stamps else ns
        one = (ns, stamp, [a], data.q[k, [0]], [], data.effort[k, [0]])
        two = (ns + 1000, stamp if not zero_stamps else 0, [b], data.q[k, [1]], [], data.effort[k, [1]])
        msgs += [one, two] if k % 2 else [two, one]
        if k % 3 == 0:
            msgs.append((ns + 300_000, 0 if zero_stamps else ns + 300_000, [GRIPPER], [0.01 * k], [], []))
    if zero_stamps:  # the receive time is then the stamp: the arm's second message arrives at the same instant
        msgs = [(m[0] - 1000 if m[2] == [b] else m[0], *m[1:]) for m in msgs]
    return sorted(msgs, key=lambda m: m[0])


def _cli_values(capsys, *argv: str) -> np.ndarray:
    from robot_dynamics.cli import main

    assert main(["identify", "planar2r", *argv, "--json"]) == 0
    return np.array(json.loads(capsys.readouterr().out)["values"])


def test_two_publishers_namespaced_topic_bare_mcap_and_zero_stamps_give_the_clean_estimates(experiment, tmp_path,
                                                                                            capsys):
    """Acceptance: a bag with the arm split over two /joint_states publishers and a gripper publisher
    interleaved, the same under /arm1/joint_states (``--topic``), a bare .mcap without metadata.yaml, and
    header stamps all zero (the bag's receive time used): the estimates of ``identify`` (defaults) equal
    those of the clean single-publisher bag (to round-off); the clean ones match the MuJoCo plant."""
    model, truth, data = experiment
    # stamped from 100 s (sim time): a header stamp of exactly 0 means "not stamped"
    data = IdentificationData(data.t + 100.0, data.q, data.effort, joint_names=data.joint_names)
    write_bag(tmp_path / "clean", data)
    clean = _cli_values(capsys, str(tmp_path / "clean"))
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6
    assert (np.abs(clean - true)[big] / np.abs(true[big])).max() < 0.02
    split = _split_with_gripper(data)
    _write_joint_states(tmp_path / "split", split)
    _write_joint_states(tmp_path / "ns", split, topic="/arm1/joint_states")
    _write_joint_states(tmp_path / "mcap_dir", split, storage=StoragePlugin.MCAP)
    (tmp_path / "bare").mkdir()
    mcap = next((tmp_path / "mcap_dir").glob("*.mcap"))
    mcap.rename(tmp_path / "bare" / "recording.mcap")
    assert not (tmp_path / "bare" / "metadata.yaml").exists()
    _write_joint_states(tmp_path / "zero", _split_with_gripper(data, zero_stamps=True))
    cases = {
        "two publishers + gripper": [str(tmp_path / "split")],
        "namespaced topic": [str(tmp_path / "ns"), "--topic", "/arm1/joint_states"],
        "bare mcap": [str(tmp_path / "bare" / "recording.mcap")],
        "zero header stamps": [str(tmp_path / "zero")],
    }
    for label, argv in cases.items():
        np.testing.assert_allclose(_cli_values(capsys, *argv), clean, rtol=1e-9, atol=1e-12, err_msg=label)
    # without --topic the namespaced bag is refused, naming the topics it has
    from robot_dynamics.cli import main

    assert main(["identify", "planar2r", str(tmp_path / "ns")]) == 2
    assert "/arm1/joint_states" in capsys.readouterr().err


def test_publishers_with_their_own_stamps_are_interpolated(tmp_path):
    """The second joint's publisher stamps 1 ms after the first: its values at the first joint's stamps are
    the linear interpolation of its own messages (oracle: numpy.interp); samples outside its span dropped."""
    t = np.arange(20) * 0.01 + 5.0
    q2 = np.sin(t) ** 2  # not linear: interpolation matters
    msgs = []
    for k, tk in enumerate(t):
        ns = int(round(tk * 1e9))
        msgs.append((ns, ns, ["a"], [np.cos(tk)], [0.5], [2.0 * tk]))
        msgs.append((ns + 10**6, ns + 10**6, ["b", GRIPPER], [q2[k], 0.0], [1.0, 0.0], [3.0 * q2[k], 0.0]))
    _write_joint_states(tmp_path / "bag", msgs)
    d = load_bag(tmp_path / "bag", joints=["a", "b"])
    assert d.joint_names == ["a", "b"]
    np.testing.assert_allclose(d.t, t[1:], atol=1e-9)  # the first stamp precedes b's first message
    np.testing.assert_allclose(d.q[:, 0], np.cos(t[1:]), rtol=1e-12)
    np.testing.assert_allclose(d.q[:, 1], np.interp(t[1:], t + 1e-3, q2), rtol=1e-9)
    np.testing.assert_allclose(d.effort[:, 1], 3.0 * np.interp(t[1:], t + 1e-3, q2), rtol=1e-9)
    np.testing.assert_allclose(d.qd, np.tile([0.5, 1.0], (t.size - 1, 1)))
    # by default every joint named on the topic, the gripper too
    assert load_bag(tmp_path / "bag").joint_names == ["a", "b", GRIPPER]
    with pytest.raises(ValueError, match="no messages of the joints"):
        load_bag(tmp_path / "bag", joints=["a", "elbow"])
