"""The few serialized (CDR) messages of the control loop, read and written without rclpy's conversion.

rclpy turns every received message into Python objects (a ``JointState`` with its name strings and
``array.array`` fields: ~50 µs) and every sent one back into C structures.  The control loop of
:mod:`.computed_torque_controller` takes ``/joint_states`` and ``/clock`` as serialized bytes
(``take_message(..., raw=True)``) and publishes its commands as bytes, so a cycle costs a few
``struct``/NumPy calls instead.

The encoding is plain CDR (OMG DDS-XTypes XCDR version 1, what ``rmw_fastrtps_cpp`` and
``rmw_cyclonedds_cpp`` write for ROS 2 messages): a 4-byte encapsulation header (``00 01``: little
endian, ``00 00``: big endian; two option bytes), then the fields, each primitive aligned to its size
relative to the first byte after the header; a ``string`` is a uint32 length (NUL included) and the
bytes; a sequence a uint32 count and its elements (doubles aligned to 8 only when there is one).

Reading is bounds-checked: bytes that do not parse *exactly* as the message (a length past the end,
a string without its NUL, an unknown encapsulation) raise :class:`CDRError`; the caller then falls
back to rclpy's own deserializer, the reference (``test/test_cdr.py`` checks both agree on random
and mutated messages).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

LITTLE = b"\x00\x01"
BIG = b"\x00\x00"
HEADER = 4  # encapsulation header bytes


class CDRError(ValueError):
    """Bytes that are not a plain-CDR message of the expected type."""


def _encoding(raw: bytes) -> str:
    if len(raw) < HEADER:
        raise CDRError(f"{len(raw)} bytes: no encapsulation header")
    kind = raw[:2]
    if raw[2] != 0 or raw[3] & ~3:
        raise CDRError(f"encapsulation options {raw[2:4].hex()}")
    if kind == LITTLE:
        return "<"
    if kind == BIG:
        return ">"
    raise CDRError(f"encapsulation {raw[:2].hex()} is not plain CDR")


@dataclass
class JointStateView:
    """The fields of a serialized ``sensor_msgs/JointState`` that the control loop reads.

    ``names`` is the raw name sequence (count and strings, as bytes: compared to the last one to reuse the
    joint index without decoding); ``position``/``velocity``/``effort`` are float64 arrays (copies)."""

    sec: int
    nanosec: int
    names: bytes
    position: np.ndarray
    velocity: np.ndarray
    effort_count: int
    byte_order: str = "<"

    @property
    def name_count(self) -> int:
        return struct.unpack_from(self.byte_order + "I", self.names, 0)[0]

    def decode_names(self) -> list[str]:
        """The joint names (UTF-8); ``names`` was checked when it was read."""
        bo = self.byte_order
        out, pos = [], 4
        for _ in range(self.name_count):
            pos += -pos % 4
            n = struct.unpack_from(bo + "I", self.names, pos)[0]
            out.append(self.names[pos + 4:pos + 3 + n].decode("utf-8"))
            pos += 4 + n
        return out


class _Reader:
    """Bounds-checked cursor over a CDR body (offsets relative to the end of the encapsulation header)."""

    __slots__ = ("raw", "end", "pos", "bo")

    def __init__(self, raw: bytes, byte_order: str) -> None:
        # the low two bits of the last option byte count the padding bytes at the end (XCDR1)
        self.raw, self.end, self.pos, self.bo = raw, len(raw) - (raw[3] & 3), HEADER, byte_order

    def align(self, n: int) -> None:
        self.pos += -(self.pos - HEADER) % n

    def uint32(self) -> int:
        self.align(4)
        p = self.pos
        if p + 4 > self.end:
            raise CDRError(f"truncated at byte {p}")
        self.pos = p + 4
        return struct.unpack_from(self.bo + "I", self.raw, p)[0]

    def string(self, max_len: int) -> None:
        """Skip a string, checking its length and terminating NUL."""
        n = self.uint32()
        p = self.pos
        if n == 0 or n > max_len or p + n > self.end or self.raw[p + n - 1] != 0 or self.raw.find(0, p, p + n - 1) >= 0:
            raise CDRError(f"bad string of length {n} at byte {p}")  # (an embedded NUL: C readers cut there)
        self.pos = p + n

    def doubles(self, max_count: int) -> np.ndarray:
        n = self.uint32()
        if n > max_count:
            raise CDRError(f"sequence of {n} doubles")
        if n == 0:
            return np.empty(0)
        self.align(8)
        p = self.pos
        if p + 8 * n > self.end:
            raise CDRError(f"truncated sequence of {n} doubles at byte {p}")
        self.pos = p + 8 * n
        return np.frombuffer(self.raw, dtype=self.bo + "f8", count=n, offset=p).astype(np.float64)


def read_joint_state(raw: bytes, max_names: int, max_string: int = 4096) -> tuple[JointStateView, str]:
    """Parse a serialized ``sensor_msgs/JointState``; returns the view and the byte order (``<`` or ``>``).

    Raises :class:`CDRError` for anything that does not parse exactly (the caller falls back to rclpy's
    deserializer) and for more than ``max_names`` names or values."""
    bo = _encoding(raw)
    r = _Reader(raw, bo)
    if r.end < HEADER + 8:
        raise CDRError("truncated header")
    sec, nanosec = struct.unpack_from(bo + "iI", raw, HEADER)
    r.pos = HEADER + 8
    r.string(max_string)  # header.frame_id
    count = r.uint32()
    if count > max_names:
        raise CDRError(f"{count} names")
    start = r.pos - 4  # the count is aligned to 4 and the sequence starts there
    for _ in range(count):
        r.string(max_string)
    names = bytes(raw[start:r.pos])
    position = r.doubles(max_names)
    velocity = r.doubles(max_names)
    effort = r.doubles(max_names)
    return JointStateView(sec, nanosec, names, position, velocity, effort.size, bo), bo


class JointStateReader:
    """:func:`read_joint_state` with the layout of the last message cached: a message of the same length,
    frame_id length, names and sequence counts is read with one ``struct`` call and two array copies
    (~4 µs instead of ~25), every other one parsed in full.  The cached layout is only reused when these
    checks prove the offsets are the same, so the result is always that of the full parse."""

    def __init__(self, max_names: int, max_string: int = 4096) -> None:
        self.max_names, self.max_string = max_names, max_string
        self._key: tuple | None = None
        self.hits = 0  # messages read with the cached layout

    def read(self, raw: bytes) -> JointStateView:
        key = self._key
        if key is not None and len(raw) == key[0] and raw[:4] == key[11]:
            _, frame_len, lo, hi, names, counts_struct, counts, nul, p_off, v_off, view, _ = key
            if (_U32.unpack_from(raw, HEADER + 8)[0] == frame_len and raw[nul] == 0 and raw[lo:hi] == names
                    and counts_struct.unpack_from(raw) == counts):
                sec, nanosec = _STAMP.unpack_from(raw, HEADER)
                npos, nvel = counts[0], counts[1]
                self.hits += 1
                return JointStateView(sec, nanosec, view.names,
                                      np.frombuffer(raw, "<f8", npos, p_off).astype(np.float64),
                                      np.frombuffer(raw, "<f8", nvel, v_off).astype(np.float64), counts[2])
        view, bo = read_joint_state(raw, self.max_names, self.max_string)
        self._key = self._layout(raw, view) if bo == "<" else None
        return view

    @staticmethod
    def _layout(raw: bytes, view: JointStateView) -> tuple:
        frame_len = _U32.unpack_from(raw, HEADER + 8)[0]
        lo = HEADER + 12 + frame_len
        lo += -(lo - HEADER) % 4
        hi = lo + len(view.names)
        npos, nvel = view.position.size, view.velocity.size
        c_pos = hi + (-(hi - HEADER) % 4)
        p_off = c_pos + 4 + (-(c_pos + 4 - HEADER) % 8 if npos else 0)
        c_vel = p_off + 8 * npos
        c_vel += -(c_vel - HEADER) % 4
        v_off = c_vel + 4 + (-(c_vel + 4 - HEADER) % 8 if nvel else 0)
        c_eff = v_off + 8 * nvel
        c_eff += -(c_eff - HEADER) % 4
        counts_struct = struct.Struct(f"<{c_pos}xI{c_vel - c_pos - 4}xI{c_eff - c_vel - 4}xI")
        counts = (npos, nvel, view.effort_count)
        return (len(raw), frame_len, lo, hi, view.names, counts_struct, counts, HEADER + 11 + frame_len,
                p_off, v_off, view, raw[:HEADER])


_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")


def read_clock(raw: bytes) -> int:
    """A serialized ``rosgraph_msgs/Clock`` -> nanoseconds (``CDRError`` if it is not one)."""
    bo = _encoding(raw)
    if len(raw) - (raw[3] & 3) < HEADER + 8:
        raise CDRError("truncated clock")
    sec, nanosec = struct.unpack_from(bo + "iI", raw, HEADER)
    if nanosec >= 1_000_000_000:
        raise CDRError(f"clock nanosec {nanosec}")
    return sec * 1_000_000_000 + nanosec


class Float64MultiArrayWriter:
    """A serialized ``std_msgs/Float64MultiArray`` of ``n`` values (empty layout), little endian, filled in
    place: write the values into :attr:`data` (a float64 view on the buffer), then send :meth:`bytes`."""

    def __init__(self, n: int) -> None:
        # header | dim count 0 | data_offset 0 | data count n | pad to 8 | n doubles
        self._buf = bytearray(HEADER + 16 + 8 * n)
        self._buf[:HEADER] = LITTLE + b"\x00\x00"
        struct.pack_into("<III", self._buf, HEADER, 0, 0, n)
        self.data = np.frombuffer(self._buf, dtype="<f8", count=n, offset=HEADER + 16)

    def bytes(self) -> bytes:
        return bytes(self._buf)


__all__ = ["CDRError", "Float64MultiArrayWriter", "JointStateReader", "JointStateView", "read_clock", "read_joint_state"]
