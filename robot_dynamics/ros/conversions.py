"""Message <-> core conversions shared by the nodes (no node logic here)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from geometry_msgs.msg import Transform

from robot_dynamics_interfaces.msg import MDHJoint as MDHJointMsg
from robot_dynamics_interfaces.msg import MDHModel

from ..robot_model import RobotModel


def transform_to_msg(t: np.ndarray) -> Transform:
    """4x4 homogeneous transform -> geometry_msgs/Transform (quaternion x, y, z, w)."""
    from scipy.spatial.transform import Rotation

    msg = Transform()
    msg.translation.x, msg.translation.y, msg.translation.z = (float(v) for v in t[:3, 3])
    x, y, z, w = Rotation.from_matrix(t[:3, :3]).as_quat()
    msg.rotation.x, msg.rotation.y, msg.rotation.z, msg.rotation.w = float(x), float(y), float(z), float(w)
    return msg


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
        row.alpha, row.d, row.theta, row.r = float(jt.alpha), float(jt.d), float(jt.theta), float(jt.r)
        row.sign, row.offset = float(jt.sign), float(jt.offset)
        row.lower, row.upper, row.velocity, row.effort = (float(v) for v in (jt.lower, jt.upper, jt.velocity, jt.effort))
        (row.xx, row.xy, row.xz, row.yy, row.yz, row.zz, row.mx, row.my, row.mz, row.m) = (
            float(v) for v in model.inertial[i]
        )
        row.ia, row.fc, row.fv = float(model.Ia[i]), float(model.Fc[i]), float(model.Fv[i])
        msg.joints.append(row)
    return msg


class JointOrder:
    """Map between a request's joint order and the model's order, by name."""

    def __init__(self, model_names: Sequence[str], names: Sequence[str]) -> None:
        names = list(names) or list(model_names)
        unknown = [n for n in names if n not in model_names]
        if unknown:
            raise ValueError(f"unknown joint name(s) {unknown}; the model has {list(model_names)}")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate joint names in {names}")
        missing = [n for n in model_names if n not in names]
        if missing:
            raise ValueError(f"joint name(s) {missing} missing from the request")
        self.names = names
        # model[i] = request[perm[i]]
        self.to_model = np.array([names.index(n) for n in model_names], dtype=int)
        self.to_request = np.argsort(self.to_model)

    def model_vector(self, values: Sequence[float], what: str, n: int) -> np.ndarray:
        """A request-ordered vector -> model order, with a clear error on length or NaN."""
        a = np.asarray(values, dtype=float)
        if a.shape != (n,):
            raise ValueError(f"{what} has {a.size} value(s), expected {n}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what} contains NaN or inf")
        return a[self.to_model]


def finite_or_zero(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0
