"""Identification data from ROS 2 bags (rosbags): round trip through sensor_msgs/msg/JointState, then identify.

Oracles: the bag is written (or read) message by message with the ``rosbags`` library itself, and the
identified base parameters are compared with those of the MuJoCo plant's true (perturbed) model.
"""

from __future__ import annotations

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
