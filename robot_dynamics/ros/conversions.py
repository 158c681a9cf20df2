"""Message <-> core conversions shared by the nodes (no node logic here)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np
from geometry_msgs.msg import Pose, Transform

from robot_dynamics_interfaces.msg import MDHJoint as MDHJointMsg
from robot_dynamics_interfaces.msg import MDHModel

from ..model.robot_model import RobotModel
from .runtime import Refused


def transform_to_msg(t: np.ndarray) -> Transform:
    """4x4 homogeneous transform -> geometry_msgs/Transform (quaternion x, y, z, w)."""
    from scipy.spatial.transform import Rotation

    msg = Transform()
    msg.translation.x, msg.translation.y, msg.translation.z = (float(v) for v in t[:3, 3])
    x, y, z, w = Rotation.from_matrix(t[:3, :3]).as_quat()
    msg.rotation.x, msg.rotation.y, msg.rotation.z, msg.rotation.w = float(x), float(y), float(z), float(w)
    return msg


def pose_to_msg(t: np.ndarray) -> Pose:
    """4x4 homogeneous transform -> geometry_msgs/Pose (quaternion x, y, z, w)."""
    tf = transform_to_msg(t)
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = tf.translation.x, tf.translation.y, tf.translation.z
    msg.orientation = tf.rotation
    return msg


def pose_from_msg(pose: Pose, what: str = "pose", orientation: bool = True, unit_tolerance: float = 1e-6) -> np.ndarray:
    """geometry_msgs/Pose -> 4x4 transform (or the (3,) position without ``orientation``).

    Refuses (:class:`~robot_dynamics.ros.runtime.Refused`) NaN/inf (``non_finite``) and a quaternion that is
    zero or whose norm is not 1 within ``unit_tolerance`` (``quaternion``); an accepted one is normalized."""
    p = np.array([pose.position.x, pose.position.y, pose.position.z], dtype=float)
    if not np.all(np.isfinite(p)):
        raise Refused("non_finite", f"{what}.position contains NaN or inf")
    if not orientation:
        return p
    o = pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w], dtype=float)
    if not np.all(np.isfinite(quat)):
        raise Refused("non_finite", f"{what}.orientation contains NaN or inf")
    norm = float(np.linalg.norm(quat))
    if norm == 0.0:
        raise Refused("quaternion", f"{what}.orientation is the zero quaternion (no rotation; identity is w = 1)")
    if abs(norm - 1.0) > unit_tolerance:
        raise Refused("quaternion", f"{what}.orientation has norm {norm:.9g}; a unit quaternion is required "
                      f"(within {unit_tolerance:g})")
    from scipy.spatial.transform import Rotation

    t = np.eye(4)
    t[:3, :3] = Rotation.from_quat(quat / norm).as_matrix()
    t[:3, 3] = p
    return t


def model_to_msg(model: RobotModel) -> MDHModel:
    """RobotModel -> robot_dynamics_interfaces/MDHModel."""
    msg = MDHModel()
    msg.name = model.name
    msg.base_link = model.base_link
    msg.tip_link = model.tip_link
    msg.base_transform = transform_to_msg(model.base_transform)
    if model.tip_link:
        msg.tool_transform = transform_to_msg(model.frames[model.tip_link][1])
    msg.gravity.x, msg.gravity.y, msg.gravity.z = (float(v) for v in model.gravity)
    for i, jt in enumerate(model.joints):
        row = MDHJointMsg()
        row.name, row.link = jt.name, jt.link
        row.antecedent, row.sigma = int(jt.antecedent), int(jt.sigma)
        row.gamma, row.b = float(jt.gamma), float(jt.b)
        row.alpha, row.d, row.theta, row.r = float(jt.alpha), float(jt.d), float(jt.theta), float(jt.r)
        row.sign, row.offset = float(jt.sign), float(jt.offset)
        row.lower, row.upper, row.velocity, row.effort = (float(v) for v in (jt.lower, jt.upper, jt.velocity, jt.effort))
        (row.xx, row.xy, row.xz, row.yy, row.yz, row.zz, row.mx, row.my, row.mz, row.m) = (
            float(v) for v in model.inertial[i]
        )
        row.ia, row.fc, row.fv = float(model.Ia[i]), float(model.Fc[i]), float(model.Fv[i])
        msg.joints.append(row)
    return msg


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a user-supplied value cut to ``limit`` characters: a message never echoes megabytes."""
    text = repr(value[: limit + 1] if isinstance(value, (str, list, tuple)) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class JointOrder:
    """Map between a request's joint order and the model's order, by name.

    Refuses (:class:`~robot_dynamics.ros.runtime.Refused`, cause ``joint_names``) unknown,
    duplicate and missing names; the count is checked before any per-name work."""

    def __init__(self, model_names: Sequence[str], names: Sequence[str]) -> None:
        model_names = list(model_names)
        if len(names) > 2 * len(model_names) + 8:  # cheap first: never a per-name pass over a huge list
            raise Refused("joint_names", f"joint_names has {len(names)} names; the model has {len(model_names)} joints {model_names}")
        names = list(names) or model_names
        known = set(model_names)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise Refused("joint_names", f"unknown joint name(s) {short(unknown, 200)}; the model has {model_names}")
        given = set(names)
        if len(given) != len(names):
            raise Refused("joint_names", f"duplicate joint names in {names}")
        missing = [n for n in model_names if n not in given]
        if missing:
            raise Refused("joint_names", f"joint name(s) {missing} missing from the request")
        self.names = names
        # model[i] = request[to_model[i]]
        self.to_model = np.array([names.index(n) for n in model_names], dtype=int)
        self.to_request = np.argsort(self.to_model)

    def model_vector(self, values: Sequence[float], what: str, n: int) -> np.ndarray:
        """A request-ordered vector -> model order; refuses a wrong length (before converting) or NaN/inf."""
        if len(values) != n:
            raise Refused("ragged", f"{what} has {len(values)} value(s), expected {n}")
        a = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(a)):
            raise Refused("non_finite", f"{what} contains NaN or inf")
        return a[self.to_model]

    def points_field(self, points: Sequence[Any], attr: str, n: int, optional: bool) -> np.ndarray:
        """(m, n) array, model order, of one ``JointTrajectoryPoint`` field over ``points``.

        One array conversion for the whole field (no per-point NumPy work).  Every row must have
        ``n`` values; with ``optional`` a row may also be empty (zeros).  Refuses ragged rows
        (cause ``ragged``) and NaN/inf (cause ``non_finite``), naming the first bad point."""
        m = len(points)
        rows = list(map(attrgetter(attr), points))
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=m)
        full = lengths == n
        if not full.all():
            bad = ~full & (lengths != 0) if optional else ~full
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                expected = f"{n} (or none)" if optional else str(n)
                raise Refused("ragged", f"points[{k}].{attr} has {int(lengths[k])} value(s), expected {expected}")
        try:
            flat = np.frombuffer(b"".join(rows), dtype=np.float64)
        except (TypeError, ValueError):  # not array.array('d') (built in Python): the slow, general path
            flat = np.asarray([v for r in rows for v in r], dtype=float)
        if full.all():
            a = flat.reshape(m, n)
        else:
            a = np.zeros((m, n))
            a[full] = flat.reshape(-1, n)
        finite = np.isfinite(a).all(axis=1)
        if not finite.all():
            k = int(np.flatnonzero(~finite)[0])
            raise Refused("non_finite", f"points[{k}].{attr} contains NaN or inf")
        return a[:, self.to_model]


def float_rows(values: np.ndarray) -> list[array]:
    """(m, n) float array -> m ``array('d')`` rows: what a message's float64[] field takes without
    per-value checks (the generated setters accept ``array('d')`` as is)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    m, n = values.shape
    buf = values.tobytes()
    w = 8 * n
    return [array("d", buf[k * w : (k + 1) * w]) for k in range(m)]


def finite_or_zero(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0
