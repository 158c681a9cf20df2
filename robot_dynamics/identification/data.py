"""Identification data: loading (NPZ, CSV, ROS 2 bag), filtering, differentiation, decimation.

Sources (all in URDF joint coordinates and names):

* NPZ with arrays ``t`` (N,), ``q`` (N, n), ``effort`` (N, n), optional ``qd``, ``qdd``,
  ``joint_names`` (n,);
* CSV with a header: ``t``, then ``q_<joint>``, ``effort_<joint>`` (optional ``qd_<joint>``,
  ``qdd_<joint>``) columns;
* a ROS 2 bag (directory with ``metadata.yaml``, one of its ``.db3`` / ``.mcap`` files, or a bare
  ``.mcap`` / ``.db3`` file), read with the ``rosbags`` library (no ROS installation):
  ``sensor_msgs/msg/JointState`` messages of ``/joint_states`` (or another topic; header stamp, or the
  bag's receive time when it is zero), position, velocity, effort by joint name, the messages of
  several publishers (arm, gripper) merged by name (:func:`load_bag`).

Preprocessing (:func:`preprocess`, the usual practice of Gautier's identification method): the
positions are low-pass filtered forward and backward (zero-phase Butterworth, no delay), the
velocities and accelerations are central differences of the filtered positions; then the
positions, velocities, accelerations and efforts are low-pass filtered with the same zero-phase
filter at the decimated Nyquist band and decimated together (parallel decimation), and the samples
at both ends within the filter transients (:func:`filter_transient_samples`) are dropped.
"""

from __future__ import annotations

import array
import csv
import math
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .progress import report

__all__ = [
    "MOTOR_SUFFIX",
    "IdentificationData",
    "joint_side_data",
    "load_data",
    "load_bag",
    "load_csv",
    "load_npz",
    "filter_transient_samples",
    "preprocess",
    "save_csv",
    "uniform_samples",
    "save_npz",
    "write_bag",
]

JOINT_STATES = "/joint_states"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
# limits of what a data file may hold, checked before the data is read into memory
MAX_SAMPLES = 1_000_000  # samples (rows, messages) of one file
MAX_JOINTS = 256  # joints of one sample
MAX_VALUES = 50_000_000  # numbers in one file, all arrays or columns together (400 MB as float64)
MAX_CSV_BYTES = 256 * 2**20  # size of a CSV file


@dataclass
class IdentificationData:
    """Samples of one experiment: t (N,), q, effort (N, n), optional qd, qdd (N, n)."""

    t: np.ndarray
    q: np.ndarray
    effort: np.ndarray
    qd: np.ndarray | None = None
    qdd: np.ndarray | None = None
    joint_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.t = np.asarray(self.t, float).reshape(-1)
        self.q = np.asarray(self.q, float)
        self.effort = np.asarray(self.effort, float)
        if self.q.ndim != 2 or self.effort.shape != self.q.shape or self.q.shape[0] != self.t.shape[0]:
            raise ValueError(f"t (N,), q and effort (N, n) expected, got {self.t.shape}, {self.q.shape}, "
                             f"{self.effort.shape}")
        for k in ("qd", "qdd"):
            v = getattr(self, k)
            if v is not None:
                v = np.asarray(v, float)
                if v.shape != self.q.shape:
                    raise ValueError(f"{k} must have shape {self.q.shape}, got {v.shape}")
                setattr(self, k, v)
        for k in ("t", "q", "effort", "qd", "qdd"):
            v = getattr(self, k)
            if v is not None and not np.all(np.isfinite(v)):
                raise ValueError(f"{k} contains NaN or inf")
        if self.t.size < 2 or np.any(np.diff(self.t) <= 0):
            raise ValueError("t must hold at least 2 strictly increasing times")
        self.joint_names = [str(x) for x in self.joint_names]
        if self.joint_names and len(self.joint_names) != self.q.shape[1]:
            raise ValueError(f"{len(self.joint_names)} joint names for {self.q.shape[1]} joints")

    @property
    def samples(self) -> int:
        return int(self.t.shape[0])

    @property
    def dof(self) -> int:
        return int(self.q.shape[1])

    def reorder(self, names: list[str]) -> IdentificationData:
        """The same data with the joints in the order ``names`` (e.g. the model's chain)."""
        if not self.joint_names:
            if len(names) != self.dof:
                raise ValueError(f"data has {self.dof} joints, the model {len(names)}")
            return replace(self, joint_names=list(names))
        missing = [x for x in names if x not in self.joint_names]
        if missing:
            raise ValueError(f"joints {missing} are not in the data (it has {self.joint_names})")
        idx = [self.joint_names.index(x) for x in names]
        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return (None if a is None else a[:, idx])
        return IdentificationData(self.t, self.q[:, idx], self.effort[:, idx], pick(self.qd), pick(self.qdd),
                                  list(names))


# ------------------------------------------------------------------ NPZ / CSV
def _npz_header(z: Any, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the array ``key`` of an open NPZ, from its header (nothing allocated)."""
    fmt = np.lib.format
    with z.zip.open(f"{key}.npy") as f:
        version = fmt.read_magic(f)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = read(f)
    return tuple(int(x) for x in shape), np.dtype(dtype)


def _npz_arrays(z: Any, path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an identification NPZ, read after their headers were checked (dtype, shape, size)."""
    keys = [k for k in ("t", "q", "effort", "qd", "qdd", "joint_names") if k in z]
    heads = {k: _npz_header(z, k) for k in keys}
    for k, (shape, dtype) in heads.items():
        if dtype.kind not in ("US" if k == "joint_names" else "biuf"):
            raise ValueError(f"{path}: NPZ array {k!r} has dtype {dtype}, "
                             f"{'strings' if k == 'joint_names' else 'numbers'} expected")
        if len(shape) > (1 if k in ("t", "joint_names") else 2):
            raise ValueError(f"{path}: NPZ array {k!r} has shape {shape}, "
                             f"{'(N,)' if k in ('t', 'joint_names') else '(N, n)'} expected")
    samples = heads["t"][0][0] if heads["t"][0] else 1
    joints = math.prod(heads["joint_names"][0]) if "joint_names" in heads else max(
        [s[1] for k, (s, _) in heads.items() if len(s) == 2] or [0])
    total = sum(math.prod(s) for k, (s, _) in heads.items() if k != "joint_names")
    if samples > MAX_SAMPLES or joints > MAX_JOINTS or total > MAX_VALUES:
        raise ValueError(f"{path}: {samples} samples of {joints} joints, {total} values in all; the maximum is "
                         f"{MAX_SAMPLES} samples, {MAX_JOINTS} joints, {MAX_VALUES} values")
    return {k: z[k] for k in keys}


def load_npz(path: str | Path) -> IdentificationData:
    """NPZ with arrays t, q, effort (optional qd, qdd, joint_names); sizes are checked before reading."""
    with open(path, "rb") as f:
        magic = f.read(6)
    if not magic:
        raise ValueError(f"{path}: the file is empty")
    if magic.startswith(b"\x93NUMPY"):
        raise ValueError(f"{path}: a single .npy array, not an NPZ archive (needs arrays t, q, effort)")
    if not magic.startswith(b"PK"):
        raise ValueError(f"{path}: not an NPZ (zip) archive")
    try:
        with np.load(path, allow_pickle=False) as z:
            for k in ("t", "q", "effort"):
                if k not in z:
                    raise ValueError(f"{path}: NPZ file has no array {k!r} (needs t, q, effort)")
            arrays = _npz_arrays(z, path)
            names = [str(x) for x in arrays.pop("joint_names", [])]
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: not a readable NPZ file ({exc})") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError) as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise
        reason = str(exc) or type(exc).__name__
        raise ValueError(f"{path}: not a readable NPZ file (truncated or corrupt: {reason})") from exc
    try:
        return IdentificationData(arrays["t"], arrays["q"], arrays["effort"], arrays.get("qd"), arrays.get("qdd"),
                                  names)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def save_npz(path: str | Path, data: IdentificationData) -> None:
    arrays = {"t": data.t, "q": data.q, "effort": data.effort}
    arrays.update({k: v for k in ("qd", "qdd") if (v := getattr(data, k)) is not None})
    if data.joint_names:
        arrays["joint_names"] = np.array(data.joint_names)
    np.savez(path, **arrays)


def load_csv(path: str | Path) -> IdentificationData:
    """CSV with a header ``t, q_<joint>..., effort_<joint>...`` (optional ``qd_``, ``qdd_``), one sample a row."""
    size = Path(path).stat().st_size
    if size == 0:
        raise ValueError(f"{path}: the file is empty")
    if size > MAX_CSV_BYTES:
        raise ValueError(f"{path}: CSV file of {size} bytes; the maximum is {MAX_CSV_BYTES} bytes")
    values = array.array("d")
    rows = 0
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            head = [h.strip() for h in next(reader, [])]
            if "t" not in head:
                raise ValueError(f"{path}: CSV header has no 't' column (header: {head[:8]})")
            if len(head) > 1 + 4 * MAX_JOINTS:
                raise ValueError(f"{path}: CSV header has {len(head)} columns; the maximum is {1 + 4 * MAX_JOINTS}")
            dup = sorted(h for h, c in Counter(head).items() if c > 1)
            if dup:
                raise ValueError(f"{path}: CSV header has duplicate columns {dup}")
            for r in reader:
                if not r:
                    continue
                if len(r) != len(head):
                    raise ValueError(f"{path}: line {reader.line_num} has {len(r)} columns, the header {len(head)}")
                for h, x in zip(head, r, strict=True):
                    try:
                        values.append(float(x))
                    except ValueError:
                        raise ValueError(f"{path}: line {reader.line_num}, column {h!r}: {x[:40]!r} is not a number"
                                         ) from None
                rows += 1
                if rows > MAX_SAMPLES or len(values) > MAX_VALUES:
                    raise ValueError(f"{path}: more than {min(rows, MAX_SAMPLES)} rows of {len(head)} columns; the "
                                     f"maximum is {MAX_SAMPLES} rows, {MAX_VALUES} values")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text CSV file ({exc.reason})") from exc
    except csv.Error as exc:
        raise ValueError(f"{path}: malformed CSV ({exc})") from exc
    if rows < 2:
        raise ValueError(f"{path}: CSV needs a header and at least 2 rows")
    table = np.frombuffer(values, dtype=float).reshape(rows, len(head))
    names = [h[2:] for h in head if h.startswith("q_")]
    if not names:
        raise ValueError(f"{path}: CSV header has no q_<joint> columns")

    def cols(prefix: str, required: bool) -> np.ndarray | None:
        keys = [f"{prefix}_{x}" for x in names]
        if not all(k in head for k in keys):
            if required:
                raise ValueError(f"{path}: CSV lacks columns {[k for k in keys if k not in head]}")
            return None
        return table[:, [head.index(k) for k in keys]]

    try:
        return IdentificationData(table[:, head.index("t")], cols("q", True), cols("effort", True),
                                  cols("qd", False), cols("qdd", False), names)
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: {exc}") from exc


def save_csv(path: str | Path, data: IdentificationData) -> None:
    names = data.joint_names or [f"j{k + 1}" for k in range(data.dof)]
    blocks = [("q", data.q), ("qd", data.qd), ("qdd", data.qdd), ("effort", data.effort)]
    head, cols = ["t"], [data.t[:, None]]
    for prefix, arr in blocks:
        if arr is not None:
            head += [f"{prefix}_{x}" for x in names]
            cols.append(arr)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(np.hstack(cols).tolist())


# ------------------------------------------------------------------ ROS 2 bags
def _typestore() -> Any:
    try:
        from rosbags.typesys import Stores, get_typestore
    except ImportError as exc:  # pragma: no cover - rosbags is pinned in requirements.txt
        raise ValueError("reading ROS 2 bags needs the 'rosbags' package (pip install rosbags)") from exc
    return get_typestore(Stores.ROS2_KILTED if hasattr(Stores, "ROS2_KILTED") else Stores.LATEST)


def write_bag(path: str | Path, data: IdentificationData, *, topic: str = JOINT_STATES,
              storage: str = "sqlite3") -> None:
    """Write ``data`` as ``sensor_msgs/msg/JointState`` messages (rosbag2, sqlite3 or mcap storage)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = _typestore()
    js, header, stamp = (ts.types[k] for k in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                               "builtin_interfaces/msg/Time"))
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}.get(storage)
    if plugin is None:
        raise ValueError(f"storage must be 'sqlite3' or 'mcap', got {storage!r}")
    names = data.joint_names or [f"j{k + 1}" for k in range(data.dof)]
    qd = data.qd if data.qd is not None else np.empty((data.samples, 0))
    report(f"writing {data.samples} JointState messages to {path}")
    with Writer(Path(path), version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, js.__msgtype__, typestore=ts)
        for k in range(data.samples):
            ns = int(round(data.t[k] * 1e9))
            msg = js(header=header(stamp=stamp(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id=""),
                     name=list(names), position=data.q[k].copy(), velocity=qd[k].copy(),
                     effort=data.effort[k].copy())
            writer.write(conn, ns, ts.serialize_cdr(msg, js.__msgtype__))


def _bag_reader_path(path: str | Path) -> Path:
    """What rosbags' Reader opens: the bag directory (``metadata.yaml``), or a bare ``.mcap``/``.db3`` file."""
    p = Path(path)
    if p.is_file() and p.suffix in (".db3", ".mcap"):
        # a storage file of a bag directory: the whole bag (every split file); alone: the file itself
        return p.parent if (p.parent / "metadata.yaml").is_file() else p
    if not (p / "metadata.yaml").is_file():
        raise ValueError(f"{path}: not a ROS 2 bag (no metadata.yaml in {str(p)!r}, and not a .mcap or .db3 file)")
    return p


def _read_joint_states(path: str | Path, topic: str) -> list[tuple[float, list[str], Any]]:
    """Every JointState of ``topic``: (time, names, message) in bag order; the time is the header stamp,
    or the bag's receive time when the header stamp is zero (a publisher that does not stamp)."""
    import sqlite3
    import struct

    import yaml
    from rosbags.rosbag2 import Reader, ReaderError

    ts = _typestore()
    p = _bag_reader_path(path)
    out: list[tuple[float, list[str], Any]] = []
    report(f"reading {topic} from {path}")
    try:
        with Reader(p) as reader:
            conns = [c for c in reader.connections if c.topic == topic]
            if not conns:
                raise ValueError(f"{path}: no {topic} topic in the bag (topics: {sorted(reader.topics)}; "
                                 "choose one with --topic)")
            bad = sorted({c.msgtype for c in conns if c.msgtype != JOINT_STATE_TYPE})
            if bad:
                raise ValueError(f"{path}: {topic} has type {bad[0]}, {JOINT_STATE_TYPE} expected")
            count = sum(int(c.msgcount) for c in conns)
            if count > MAX_SAMPLES:
                raise ValueError(f"{path}: {topic} has {count} messages; the maximum is {MAX_SAMPLES}")
            for conn, stamp_ns, raw in reader.messages(connections=conns):
                if len(out) >= MAX_SAMPLES:
                    raise ValueError(f"{path}: {topic} has more than {MAX_SAMPLES} messages (the maximum)")
                msg = ts.deserialize_cdr(raw, conn.msgtype)
                if len(out) % 100_000 == 99_999:
                    report(f"{len(out) + 1} of {count or '?'} messages read")
                names = list(msg.name)
                if len(names) > MAX_JOINTS or len(set(names)) != len(names):
                    raise ValueError(f"{path}: a JointState message has {len(names)} joint names, "
                                     f"{len(set(names))} distinct (at most {MAX_JOINTS})")
                stamp = msg.header.stamp
                t = stamp.sec + 1e-9 * stamp.nanosec if (stamp.sec or stamp.nanosec) else stamp_ns * 1e-9
                out.append((t, names, msg))
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: cannot read the ROS 2 bag ({exc})") from exc
    except Exception as exc:  # a corrupt bag fails in many ways inside rosbags (serde, storage, metadata)
        known = (ReaderError, yaml.YAMLError, sqlite3.Error, struct.error, KeyError, IndexError, TypeError,
                 AttributeError, EOFError, OSError)
        if not (isinstance(exc, known) or type(exc).__module__.startswith("rosbags")):
            raise
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{path}: cannot read the ROS 2 bag ({reason})") from exc
    if not out:
        raise ValueError(f"{path}: {topic} has no messages")
    return out


def _at(times: np.ndarray, t: np.ndarray, x: np.ndarray, exact: np.ndarray, i: np.ndarray) -> np.ndarray:
    """``x`` (stamped ``t``, increasing) at ``times`` (within [t[0], t[-1]]): its own value where a stamp
    matches (bit for bit), linear interpolation between the two neighbours otherwise."""
    lo = np.clip(i - 1, 0, t.size - 1)
    hi = np.clip(i, 0, t.size - 1)
    span = np.where(t[hi] > t[lo], t[hi] - t[lo], 1.0)
    w = ((times - t[lo]) / span)[:, None]
    return np.where(exact[:, None], x[hi], (1.0 - w) * x[lo] + w * x[hi])


def load_bag(path: str | Path, *, topic: str = JOINT_STATES, joints: list[str] | None = None) -> IdentificationData:
    """``sensor_msgs/msg/JointState`` messages of ``topic``: positions, velocities (if every message has
    them), efforts, of ``joints`` (default: every joint named on the topic, in order of appearance).

    ``path``: a bag directory (``metadata.yaml``), one of its ``.mcap`` / ``.db3`` files (the whole bag is
    read), or a bare ``.mcap`` / ``.db3`` file without ``metadata.yaml``.  Stamps: the header stamp, or the
    bag's receive time when the header stamp is zero.

    Several publishers on the topic (e.g. an arm and a gripper broadcaster, or an arm split over two)
    are merged by joint name: messages naming none of ``joints`` are skipped; the samples are the
    stamps of the messages carrying ``joints[0]`` (duplicate stamps: the first kept); every other
    joint takes the value of its own message of the same stamp, or, when its publisher stamps
    differently, the linear interpolation of its two nearest messages in time; samples outside a
    joint's time span are dropped.  An unreadable bag (unknown version, corrupt database or
    messages, bad metadata) raises a ValueError naming the bag; so does a bag of more than
    :data:`MAX_SAMPLES` messages on ``topic``.
    """
    msgs = _read_joint_states(path, topic)
    if joints is None:
        names = list(dict.fromkeys(nm for _, nms, _ in msgs for nm in nms))
        if len(names) > MAX_JOINTS:
            raise ValueError(f"{path}: {topic} names {len(names)} joints (at most {MAX_JOINTS})")
    else:
        names = [str(x) for x in joints]
    wanted = set(names)
    # one series per joint: time, position, velocity (or NaN), effort
    series: dict[str, list[tuple[float, float, float, float]]] = {nm: [] for nm in names}
    for t, nms, msg in msgs:
        if wanted.isdisjoint(nms):
            continue  # another publisher's joints only (a gripper)
        n = len(nms)
        if len(msg.position) != n or len(msg.effort) != n:
            raise ValueError(f"{path}: a JointState message of {nms} lacks positions or efforts")
        vel = msg.velocity if len(msg.velocity) == n else None
        for k, nm in enumerate(nms):
            if nm in wanted:
                series[nm].append((t, float(msg.position[k]), float(vel[k]) if vel is not None else math.nan,
                                   float(msg.effort[k])))
    missing = [nm for nm in names if not series[nm]]
    if missing:
        raise ValueError(f"{path}: {topic} has no messages of the joints {missing} "
                         f"(it names {list(dict.fromkeys(nm for _, nms, _ in msgs for nm in nms))[:12]})")
    arrays = {}
    for nm in names:
        a = np.array(series[nm])
        a = a[np.argsort(a[:, 0], kind="stable")]
        arrays[nm] = a[np.concatenate([[True], np.diff(a[:, 0]) > 0])]  # duplicate stamps: the first
    times = arrays[names[0]][:, 0]
    inside = np.ones(times.size, bool)
    for nm in names[1:]:
        inside &= (times >= arrays[nm][0, 0]) & (times <= arrays[nm][-1, 0])
    times = times[inside]
    if times.size == 0:
        raise ValueError(f"{path}: the joints {names} of {topic} are never published over a common time span")
    cols = []
    for nm in names:
        a = arrays[nm]
        i = np.searchsorted(a[:, 0], times)
        exact = (i < a.shape[0]) & (a[np.minimum(i, a.shape[0] - 1), 0] == times)
        cols.append(_at(times, a[:, 0], a[:, 1:], exact, i))  # exact: a[i] is the match; else a[i-1], a[i]
    vals = np.stack(cols, axis=1)  # (N, n, 3): position, velocity, effort
    vel = None if np.isnan(vals[:, :, 1]).any() else vals[:, :, 1]
    try:
        return IdentificationData(times, vals[:, :, 0], vals[:, :, 2], vel, None, names)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def load_data(path: str | Path, *, topic: str = JOINT_STATES, joints: list[str] | None = None) -> IdentificationData:
    """NPZ, CSV or ROS 2 bag (directory, .db3 or .mcap), by extension; ``topic`` and ``joints``: see
    :func:`load_bag` (bags only)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no data file or bag {str(path)!r}")
    if not (p.is_dir() or p.is_file()):
        raise ValueError(f"{path}: not a regular file or a bag directory")
    if p.is_dir() or p.suffix in (".db3", ".mcap"):
        return load_bag(p, topic=topic, joints=joints)
    if p.suffix == ".npz":
        report(f"reading {path}")
        return load_npz(p)
    if p.suffix == ".csv":
        report(f"reading {path}")
        return load_csv(p)
    raise ValueError(f"{path}: unknown data format (use .npz, .csv or a ROS 2 bag)")


# ------------------------------------------------------------------ preprocessing
def _lowpass(x: np.ndarray, cutoff: float, fs: float, order: int = 4) -> np.ndarray:
    import scipy.signal

    wn = cutoff / (0.5 * fs)
    if wn >= 1.0:
        return x
    sos = scipy.signal.butter(order, wn, output="sos")
    return scipy.signal.sosfiltfilt(sos, x, axis=0)


def _extended(x: np.ndarray, pad: int, fit: int, degree: int = 3) -> np.ndarray:
    """``x`` (N, ...) with ``pad`` samples more at each end: the cubic fitted (least squares) to its first
    and last ``fit`` samples, extrapolated.

    The positions are extended so before the zero-phase filter and the differences: the default odd
    extension of :func:`scipy.signal.sosfiltfilt` keeps q and q̇ at an end but flips q̈, a step that the
    filter spreads over about 3/cutoff s and the differences amplify ((2π cutoff)² in q̈); a smooth
    extension leaves the filter's start-up in the extension, which is cut off again.
    """
    from numpy.polynomial import polynomial as P

    n = x.shape[0]
    fit = int(min(max(fit, degree + 2), n))
    deg = min(degree, fit - 1)
    flat = x.reshape(n, -1)
    k = np.arange(fit, dtype=float)
    head = P.polyval(-np.arange(pad, 0, -1, dtype=float), P.polyfit(k, flat[:fit], deg)).T
    tail = P.polyval(fit - 1 + np.arange(1, pad + 1, dtype=float), P.polyfit(k, flat[n - fit:], deg)).T
    return np.concatenate([head, flat, tail]).reshape((n + 2 * pad,) + x.shape[1:])


def filter_transient_samples(fs: float, cutoff: float | None, band: float | None) -> int:
    """Samples at each end (and around a gap) whose q̇, q̈ or filtered values are wrong at rate ``fs`` (Hz).

    The zero-phase Butterworth filters (order 4) of the positions (``cutoff`` Hz) and of the parallel
    filtering or decimation (``band`` Hz) start up over about 3/f s each (their slowest pole decays as
    exp(−2.4 f t): 7e-4 after 3/f s), and the central differences are one-sided on the first and
    last two samples.  A filter at or above the Nyquist frequency (or None) is off.
    """
    seconds = sum(3.0 / f for f in (cutoff, band) if f is not None and f < 0.5 * fs)
    return 2 + int(math.ceil(seconds * fs))


def uniform_samples(data: IdentificationData, dt: float | None = None) -> IdentificationData:
    """``data`` on a uniform grid of period ``dt`` (default: the median period of the stamps) from its first
    stamp, when its stamps jitter (by more than 1e-3 ``dt``); otherwise ``data`` itself.  Positions and measured
    velocities: cubic spline through the samples (jitter and a few lost messages cost O(dt^4) in q, not the
    O(dt^2) of a straight line, which double differentiation turns into O(1) errors of q̈); efforts (held
    commands) and measured accelerations: linear interpolation.  The first step of :func:`preprocess`."""
    t = data.t
    if dt is None:
        dt = float(np.median(np.diff(t)))
    if not np.max(np.abs(np.diff(t) - dt)) > 1e-3 * dt:
        return data
    from scipy.interpolate import CubicSpline

    grid = t[0] + dt * np.arange(int(math.floor((t[-1] - t[0]) / dt)) + 1)

    def interp(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else np.column_stack([np.interp(grid, t, a[:, k]) for k in range(a.shape[1])])

    def smooth(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else CubicSpline(t, a, axis=0)(grid)

    return IdentificationData(grid, smooth(data.q), interp(data.effort), smooth(data.qd), interp(data.qdd),
                              list(data.joint_names))


def preprocess(
    data: IdentificationData,
    *,
    cutoff: float | None = 20.0,
    decimate: int = 1,
    trim: float | None = None,
    use_measured_derivatives: bool = False,
    dt: float | None = None,
) -> IdentificationData:
    """Filtered q and q̇, q̈ by zero-phase differentiation, parallel decimation by ``decimate``.

    ``cutoff`` (Hz) of the zero-phase Butterworth filter on q (None: no filter); ``trim``: seconds
    dropped at both ends (None: 0.05 s and at least the filter transients,
    :func:`filter_transient_samples`; 0 keeps every sample).  Samples are resampled on a uniform
    grid first if the stamps jitter (:func:`uniform_samples`).  Measured qd/qdd are kept only with
    ``use_measured_derivatives``.  ``dt``: the sample period (default: the median period of the stamps; a
    piece of a longer recording is given the whole recording's, :mod:`.streaming`).
    """
    if int(decimate) < 1:
        raise ValueError("decimate must be >= 1")
    if cutoff is not None and not (math.isfinite(cutoff) and cutoff > 0):
        raise ValueError("cutoff must be > 0 Hz")
    if dt is None:
        dt = float(np.median(np.diff(data.t)))
    data = uniform_samples(data, dt)
    t, q, eff, qd_m, qdd_m = data.t, data.q, data.effort, data.qd, data.qdd
    fs = 1.0 / dt
    # q smoothly extended at both ends (see _extended), filtered, differentiated, the extension cut off
    on = cutoff is not None and cutoff < 0.5 * fs
    pad = min(filter_transient_samples(fs, cutoff, None), 4 * t.shape[0]) if on else 2
    ext = _extended(q, pad, int(round(fs / cutoff)) if on else 4)
    qf_ext = _lowpass(ext, cutoff, fs) if on else ext
    qf = qf_ext[pad:pad + t.shape[0]]
    if use_measured_derivatives and qd_m is not None:
        qd = qd_m
        qdd = qdd_m if qdd_m is not None else np.gradient(qd, dt, axis=0)
    else:
        qd_ext = np.gradient(qf_ext, dt, axis=0)
        qd = qd_ext[pad:pad + t.shape[0]]
        qdd = np.gradient(qd_ext, dt, axis=0)[pad:pad + t.shape[0]]
    k = int(decimate)
    band = 0.8 * 0.5 * fs / k if k > 1 else None
    if band is not None:
        qf, qd, qdd, eff = (_lowpass(a, band, fs) for a in (qf, qd, qdd, eff))
    if trim is None:
        m = max(int(round(0.05 * fs)), filter_transient_samples(fs, cutoff, band))
    else:
        m = int(round(trim * fs))
    sl = slice(m, t.shape[0] - m if m > 0 else None, k)
    if t[sl].shape[0] < 2:
        raise ValueError("too few samples left after trimming and decimation")
    return IdentificationData(t[sl], qf[sl], eff[sl], qd[sl], qdd[sl], list(data.joint_names))


MOTOR_SUFFIX = "_motor"  # motor-side joint names, as mujoco_sim's ~/motor_states publishes them


def joint_side_data(model: Any, data: Any, source: str = "the data") -> Any:
    """``data`` with the model's joints in chain order, joint side (URDF joints: rad or m, N m or N).

    Data naming the model's joints is joint side (``/joint_states``); data naming ``<joint>_motor`` for every
    joint of the model (``~/motor_states``: motor positions q_m, velocities, torques τ_m) is motor side and needs the
    model's transmission (``--parameters`` / the robot's config file): q = J_qm q_m, Γ = J_qm⁻ᵀ τ_m (001 eqs. 7.31,
    7.33).  Data without joint names must have the model's joint count.  ``ValueError`` naming the missing joints."""
    names = list(model.joint_names)
    have = list(data.joint_names)
    motor = [n + MOTOR_SUFFIX for n in names]
    if have and not set(names) <= set(have) and set(motor) <= set(have):
        tr = model.transmission
        if tr is None:
            raise ValueError(f"{source} holds motor-side joints ({', '.join(motor[:3])}...) but the model has no "
                             "transmission: give its gear ratios with --parameters FILE (transmissions: gear_ratio)")
        d = data.reorder(motor)
        return replace(d, q=tr.joint_positions(d.q), effort=tr.joint_torques(d.effort), joint_names=names,
                       qd=None if d.qd is None else tr.joint_velocities(d.qd),
                       qdd=None if d.qdd is None else tr.joint_velocities(d.qdd))  # q̈ = J_qm q̈_m (J_qm constant)
    if not have:
        if data.dof != len(names):
            raise ValueError(f"{source} has {data.dof} unnamed joints; the model has {len(names)} ({', '.join(names)})")
        return data.reorder(names)
    missing = [n for n in names if n not in have]
    if missing:
        chain = f" of the chain {model.base_link} -> {model.tip_link}" if model.tip_link else ""
        raise ValueError(f"{source} lacks the joints {missing}{chain} (it has {have[:20]}"
                         f"{'...' if len(have) > 20 else ''})")
    return data.reorder(names)
