"""The control loop's CDR reader and writer against rclpy's own (de)serializer, the reference: every message it
reads gives rclpy's values, every byte string it cannot read exactly is refused (then rclpy decides), and the
cached-layout fast path is really taken and never reuses a layout that does not fit."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics.ros.cdr import CDRError, Float64MultiArrayWriter, JointStateReader, read_clock, read_joint_state

names = st.lists(st.text(alphabet="abcxyz_0123456789é", min_size=0, max_size=9), max_size=6)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def joint_states(draw):
    m = JointState(name=draw(names))
    m.header.frame_id = draw(st.text(alphabet="abcdef/", max_size=11))
    m.header.stamp.sec = draw(st.integers(-2**31, 2**31 - 1))
    m.header.stamp.nanosec = draw(st.integers(0, 2**32 - 1))
    for field in ("position", "velocity", "effort"):
        setattr(m, field, draw(st.lists(floats, max_size=7)))
    return m


def _same(view, msg: JointState) -> None:
    assert view.sec == msg.header.stamp.sec
    assert view.nanosec == msg.header.stamp.nanosec
    assert view.decode_names() == list(msg.name)
    assert view.name_count == len(msg.name)
    np.testing.assert_array_equal(view.position, np.asarray(msg.position, float))
    np.testing.assert_array_equal(view.velocity, np.asarray(msg.velocity, float))
    assert view.effort_count == len(msg.effort)


@settings(max_examples=300, deadline=None)
@given(joint_states())
def test_reads_what_rclpy_writes(msg):
    raw = serialize_message(msg)
    view, order = read_joint_state(raw, 100)
    assert order == "<"
    _same(view, msg)


@settings(max_examples=200, deadline=None)
@given(st.lists(joint_states(), min_size=2, max_size=6), st.data())
def test_cached_layout_gives_the_full_parse(msgs, data):
    """A stream where messages repeat their layout (same names, counts, frame_id length) with new values, and
    others change it: the reader answers each exactly as a full parse does."""
    reader = JointStateReader(100)
    stream = []
    for m in msgs:
        stream.append(m)
        for _ in range(data.draw(st.integers(0, 3))):  # same layout, new stamp and values
            again = JointState(name=list(m.name), effort=[0.5] * len(m.effort))
            again.header.frame_id = "z" * len(m.header.frame_id)
            again.header.stamp.sec = data.draw(st.integers(-10, 10))
            again.position = [data.draw(floats) for _ in m.position]
            again.velocity = [data.draw(floats) for _ in m.velocity]
            stream.append(again)
    for m in stream:
        _same(reader.read(serialize_message(m)), m)


def test_fast_path_is_taken():
    reader = JointStateReader(100)
    msg = JointState(name=[f"joint{i}" for i in range(1, 7)], position=[0.1] * 6, velocity=[0.2] * 6, effort=[0.0] * 6)
    for k in range(5):
        msg.position = [0.1 * k] * 6
        msg.header.stamp.nanosec = k
        _same(reader.read(serialize_message(msg)), msg)
    assert reader.hits == 4
    msg.name[2] = "jointX"  # same length, other name: a full parse
    _same(reader.read(serialize_message(msg)), msg)
    assert reader.hits == 4


@settings(max_examples=400, deadline=None)
@given(joint_states(), st.data())
def test_mutated_bytes_never_read_as_something_else(msg, data):
    """Truncated or corrupted bytes: the reader either refuses them (CDRError) or reads exactly what rclpy's
    deserializer reads from them; it never raises anything else."""
    raw = bytearray(serialize_message(msg))
    kind = data.draw(st.sampled_from(["truncate", "flip", "length"]))
    if kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif kind == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
    else:  # a huge or off-by-some count or length somewhere
        i = data.draw(st.integers(4, max(4, len(raw) - 4)))
        struct.pack_into("<I", raw, i - i % 4, data.draw(st.sampled_from([0, 1, 7, 2**31, 2**32 - 1])))
    raw = bytes(raw)
    for read in (lambda r: read_joint_state(r, 100)[0], JointStateReader(100).read):
        try:
            view = read(raw)
        except CDRError:
            continue
        ref = deserialize_message(raw, JointState)  # what rclpy reads from the same bytes
        try:
            names = view.decode_names()
        except UnicodeDecodeError:
            continue  # the node refuses such names (malformed)
        assert names == list(ref.name)
        assert (view.sec, view.nanosec) == (ref.header.stamp.sec, ref.header.stamp.nanosec)
        np.testing.assert_array_equal(view.position, np.asarray(ref.position, float))
        np.testing.assert_array_equal(view.velocity, np.asarray(ref.velocity, float))


def test_limits_and_foreign_encodings_are_refused():
    msg = JointState(name=["a"] * 11, position=[0.0] * 11, velocity=[0.0] * 11)
    with pytest.raises(CDRError, match="11 names"):
        read_joint_state(serialize_message(msg), 10)
    raw = serialize_message(JointState(name=["a"], position=[1.0], velocity=[2.0]))
    for header in (b"\x00\x07\x00\x00", b"\x00\x03\x00\x00"):  # XCDR2 / parameter list: not plain CDR
        with pytest.raises(CDRError, match="encapsulation"):
            read_joint_state(header + raw[4:], 10)
    with pytest.raises(CDRError):
        read_joint_state(b"\x00\x01", 10)


def test_big_endian_message():
    """A big-endian plain-CDR JointState (written by hand: rclpy writes little endian): same values."""
    body = struct.pack(">iI", 12, 345) + struct.pack(">I", 2) + b"w\x00" + b"\x00\x00"  # frame_id "w", pad to 4
    body += struct.pack(">I", 2) + struct.pack(">I", 3) + b"j1\x00" + b"\x00" + struct.pack(">I", 3) + b"j2\x00"
    body += b"\x00" + struct.pack(">I", 2)  # pad to 4; position count (body offset 36); doubles aligned to 8: 40
    body += struct.pack(">dd", 1.5, -2.5)
    body += struct.pack(">I", 2) + b"\x00" * 4 + struct.pack(">dd", 0.25, 4.0) + struct.pack(">I", 0)
    view, order = read_joint_state(b"\x00\x00\x00\x00" + body, 10)
    assert order == ">" and view.decode_names() == ["j1", "j2"] and (view.sec, view.nanosec) == (12, 345)
    np.testing.assert_array_equal(view.position, [1.5, -2.5])
    np.testing.assert_array_equal(view.velocity, [0.25, 4.0])
    assert view.effort_count == 0


def test_clock():
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = 1234, 567_890
    assert read_clock(serialize_message(msg)) == 1234 * 1_000_000_000 + 567_890
    with pytest.raises(CDRError):
        read_clock(serialize_message(msg)[:8])
    bad = bytearray(serialize_message(msg))
    struct.pack_into("<I", bad, 8, 1_000_000_000)
    with pytest.raises(CDRError, match="nanosec"):
        read_clock(bytes(bad))


@pytest.mark.parametrize("n", [0, 1, 6, 7])
def test_float64_multi_array_writer(n):
    writer = Float64MultiArrayWriter(n)
    values = np.linspace(-3.0, 5.0, n) ** 3
    writer.data[:] = values
    msg = deserialize_message(writer.bytes(), Float64MultiArray)
    np.testing.assert_array_equal(msg.data, values)
    assert list(msg.layout.dim) == [] and msg.layout.data_offset == 0
    # the same bytes as rclpy's serializer, padding aside (rclpy leaves its padding bytes uninitialized)
    ref = serialize_message(Float64MultiArray(data=values.tolist()))
    assert len(ref) == len(writer.bytes())
    assert ref[:16] == writer.bytes()[:16] and ref[20:] == writer.bytes()[20:]
