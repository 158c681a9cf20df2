"""Validation of incoming messages at the node boundary: one place, one clear cause per refusal.

Every function turns a message into NumPy arrays in the model's joint order or raises
:class:`~robot_dynamics.ros.runtime.Refused` with a short ``cause`` key and a sentence.
Sizes are checked before any per-element work, and the per-field conversion is one
array operation (not a Python loop over points).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..safety.refusal import Refused

MAX_JOINT_STATE_NAMES = 10_000


def stamp_seconds(stamp: Any) -> float:
    """``builtin_interfaces/Time`` -> seconds (float)."""
    return stamp.sec + 1e-9 * stamp.nanosec


class NameIndex:
    """Index of the model's joints in a message's ``name`` list, cached for the last list seen (and, for
    serialized messages, for the last raw name sequence: :meth:`raw`)."""

    def __init__(self, joints: Sequence[str]) -> None:
        self.joints = list(joints)
        self._key: tuple[str, ...] | None = None
        self._idx: np.ndarray | None = None
        self._raw_key: bytes | None = None
        self._raw_idx: np.ndarray | None = None

    def raw(self, names: bytes, decode: Callable[[], list[str]], what: str) -> np.ndarray:
        """The index for a serialized name sequence ``names``; ``decode`` gives the names when it is new."""
        if names == self._raw_key:
            return self._raw_idx
        idx = self(decode(), what)
        self._raw_key, self._raw_idx = names, idx
        return idx

    def __call__(self, names: Sequence[str], what: str) -> np.ndarray:
        key = tuple(names)
        if key == self._key:
            return self._idx
        if len(set(key)) != len(key):
            raise Refused("duplicate_names", f"{what}: duplicate joint names")
        pos = {name: i for i, name in enumerate(key)}
        missing = [j for j in self.joints if j not in pos]
        if missing:
            raise Refused("missing_joints", f"{what} lacks joint(s) {missing} (has {list(key)[:20]})")
        idx = np.array([pos[j] for j in self.joints], dtype=int)
        self._key, self._idx = key, idx
        return idx


def joint_state(msg: Any, index: NameIndex) -> tuple[np.ndarray, np.ndarray, float]:
    """``sensor_msgs/JointState`` -> (q, qd, stamp in s; 0 = unstamped), model order."""
    m = len(msg.name)
    if m > MAX_JOINT_STATE_NAMES:
        raise Refused("too_large", f"joint_states with {m} names")
    if len(msg.position) != m:
        raise Refused("no_positions", f"joint_states has {len(msg.position)} positions for {m} names")
    if len(msg.velocity) != m:
        raise Refused("no_velocities", f"joint_states has {len(msg.velocity)} velocities for {m} names")
    idx = index(msg.name, "joint_states")
    q = np.asarray(msg.position, dtype=float)[idx]
    qd = np.asarray(msg.velocity, dtype=float)[idx]
    if not (np.isfinite(q).all() and np.isfinite(qd).all()):
        raise Refused("non_finite_state", "joint_states with NaN or inf in a controlled joint")
    stamp = msg.header.stamp
    if stamp.nanosec >= 1_000_000_000:
        raise Refused("bad_stamp", f"joint_states stamp nanosec {stamp.nanosec} >= 1e9")
    return q, qd, stamp_seconds(stamp)


def joint_state_view(view: Any, index: NameIndex) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`joint_state` for a serialized message read by :class:`~robot_dynamics.ros.cdr.JointStateReader`
    (the same checks and causes, the names decoded only when they change)."""
    m = view.name_count
    if len(view.position) != m:
        raise Refused("no_positions", f"joint_states has {len(view.position)} positions for {m} names")
    if len(view.velocity) != m:
        raise Refused("no_velocities", f"joint_states has {len(view.velocity)} velocities for {m} names")
    idx = index.raw(view.names, view.decode_names, "joint_states")
    q = view.position[idx]
    qd = view.velocity[idx]
    if not (np.isfinite(q).all() and np.isfinite(qd).all()):
        raise Refused("non_finite_state", "joint_states with NaN or inf in a controlled joint")
    if view.nanosec >= 1_000_000_000:
        raise Refused("bad_stamp", f"joint_states stamp nanosec {view.nanosec} >= 1e9")
    return q, qd, view.sec + 1e-9 * view.nanosec


def _field(points: Sequence[Any], attr: str, n: int, perm: np.ndarray) -> np.ndarray | None:
    """(m, n) array of one JointTrajectoryPoint field in model order; None when every point leaves it empty."""
    lengths = np.fromiter((len(getattr(p, attr)) for p in points), dtype=np.int64, count=len(points))
    if not lengths.any():
        return None
    if np.any(lengths != n):
        k = int(np.flatnonzero(lengths != n)[0])
        raise Refused("ragged_points", f"points[{k}].{attr} has {int(lengths[k])} values, expected {n} (or none in every point)")
    flat = np.frombuffer(b"".join(memoryview(getattr(p, attr)).cast("B") for p in points), dtype=np.float64)
    a = flat.reshape(len(points), n)[:, perm]
    if not np.isfinite(a).all():
        k = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
        raise Refused("non_finite_point", f"points[{k}].{attr} contains NaN or inf")
    return a


END_VELOCITY_ZERO = float(np.finfo(np.float32).eps)  # JTC: |v| of the last point above float epsilon is not zero


def end_velocity(velocities: np.ndarray | None, joints: Sequence[str], allow_nonzero: bool) -> None:
    """JTC's ``allow_nonzero_velocity_at_trajectory_end`` (false by default since Jazzy): a trajectory whose last
    point moves (|v| > float epsilon on a joint) is refused, in JTC's words; ``velocities`` the points' velocities
    (model order; None: not given, i.e. at rest)."""
    if allow_nonzero or velocities is None or len(velocities) == 0:
        return
    last = np.abs(np.asarray(velocities, float)[-1])
    moving = np.flatnonzero(last > END_VELOCITY_ZERO)
    if moving.size:
        j = int(moving[0])
        raise Refused("nonzero_end_velocity", f"Velocity of last trajectory point of joint {joints[j]} is not zero: "
                                              f"{velocities[-1][j]:.15g} (allow_nonzero_velocity_at_trajectory_end "
                                              "is false, as JTC's default)")


def trajectory(msg: Any, joints: Sequence[str], max_points: int) -> dict[str, Any]:
    """``trajectory_msgs/JointTrajectory`` -> times and fields (model order), header stamp (s, 0 = now).

    Refuses: too many points (before any per-point work), unknown/missing/duplicate joints,
    ragged fields, NaN/inf, times not strictly increasing, accelerations without velocities.
    """
    m = len(msg.points)
    if m == 0:
        raise Refused("empty_trajectory", "trajectory without points")
    if m > max_points:
        raise Refused("too_large", f"trajectory with {m} points exceeds max_trajectory_points={max_points}")
    names = list(msg.joint_names)
    if len(set(names)) != len(names):
        raise Refused("duplicate_names", f"trajectory joint_names {names} has duplicates")
    if sorted(names) != sorted(joints):
        raise Refused("wrong_joints", f"trajectory joint_names {names[:20]} do not match the controlled joints {list(joints)}")
    perm = np.array([names.index(j) for j in joints], dtype=int)
    n = len(joints)
    pts = msg.points
    sec = np.fromiter((p.time_from_start.sec for p in pts), dtype=np.int64, count=m)
    nsec = np.fromiter((p.time_from_start.nanosec for p in pts), dtype=np.int64, count=m)
    if np.any(nsec >= 1_000_000_000):
        raise Refused("bad_time", "time_from_start.nanosec >= 1e9")
    times = sec + 1e-9 * nsec
    if times[0] < 0 or np.any(np.diff(times) <= 0):
        raise Refused("bad_time", "time_from_start must be >= 0 and strictly increasing")
    pos = _field(pts, "positions", n, perm)
    if pos is None:
        raise Refused("no_positions", "trajectory points without positions")
    vel = _field(pts, "velocities", n, perm)
    acc = _field(pts, "accelerations", n, perm)
    if acc is not None and vel is None:
        raise Refused("ragged_points", "accelerations without velocities")
    eff = _field(pts, "effort", n, perm)
    stamp = msg.header.stamp
    if stamp.nanosec >= 1_000_000_000:
        raise Refused("bad_stamp", f"trajectory stamp nanosec {stamp.nanosec} >= 1e9")
    return {"times": times, "positions": pos, "velocities": vel, "accelerations": acc, "effort": eff,
            "stamp": stamp_seconds(stamp)}


def quaternion_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """Rotation matrix of the unit quaternion (x, y, z, w) (ROS order: vector part first)."""
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])


def pose_stamped(msg: Any, base_link: str) -> tuple[np.ndarray, float]:
    """``geometry_msgs/PoseStamped`` -> (4x4 pose in ``base_link``, stamp in s; 0 = unstamped).

    Refuses: a ``frame_id`` other than ``base_link`` or empty, NaN/inf, a quaternion of norm < 1e-6 (a non-unit one
    is normalized), a stamp with nanosec >= 1e9."""
    frame = msg.header.frame_id
    if frame not in ("", base_link):
        raise Refused("pose_wrong_frame", f"pose reference in frame {frame[:100]!r}: only {base_link!r} (or an empty "
                                          f"frame_id, meaning it) is accepted")
    p, o = msg.pose.position, msg.pose.orientation
    v = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w], dtype=float)
    if not np.isfinite(v).all():
        raise Refused("pose_non_finite", "pose reference with NaN or inf")
    scale = float(np.abs(v[3:]).max())  # the norm without overflow for huge components
    norm = scale * float(np.linalg.norm(v[3:] / scale)) if scale > 0.0 else 0.0
    if norm < 1e-6:
        raise Refused("pose_bad_quaternion", f"pose reference orientation quaternion of norm {norm:.3g}: not a rotation")
    stamp = msg.header.stamp
    if stamp.nanosec >= 1_000_000_000:
        raise Refused("pose_bad_stamp", f"pose reference stamp nanosec {stamp.nanosec} >= 1e9")
    pose = np.eye(4)
    pose[:3, :3] = quaternion_matrix(*(v[3:] / norm))
    pose[:3, 3] = v[:3]
    return pose, stamp_seconds(stamp)
