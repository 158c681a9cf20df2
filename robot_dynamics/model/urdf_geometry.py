"""Joint axes to MDH frames and rows (seed 002 §3.2), and the rotations and transforms of URDF poses.

* :func:`place_mdh_frames` — the frames R_1..R_n of a chain at q = 0 from its joint axis lines, with the
  conventions of 002 §3.2 listed in :mod:`robot_dynamics.model.urdf_conversion` (z_j on axis j, flipped
  when antiparallel to z_{j-1}; x_j along the common normal; the free choices follow the URDF child-link
  frames); nearly parallel axes whose common normal lies far away keep O_j near the joint.
* :func:`mdh_parameters` — (alpha, d, theta, r) between two frames (002 eq. 3.2); :func:`mdh_row` — that
  serial row, or the Khalil–Kleinfinger row (gamma, b, alpha, d, theta, r) of a tree.
* :func:`rpy_to_matrix`, :func:`matrix_to_rpy`, :func:`make_transform`, :func:`inverse_transform`.

Lengths within ``ROUND_OFF_TOL`` of 0 and angles within it of a multiple of π/2 are snapped to them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .mdh import ROUND_OFF_TOL

# Frame *placement* decisions (not values): two axes with |z_j x z_{j+1}| < _PAR_TOL are placed as parallel
# (x_j along their offset), points closer than _LEN_TOL as coincident.  These only choose where frames go;
# the table is then computed exactly from the chosen frames.  The one exception is a pair of axes that are
# parallel only to within _PAR_TOL: MDH cannot describe it exactly with bounded parameters (the common normal
# runs off to |offset| / angle), so the placement as parallel leaves an error below _PAR_TOL x the link
# length.  Measured on example-robot-data: the nearly parallel pairs are parallel to 2.1e-13 (Centauro's
# knees and ankles, Kinova joint 3, TALOS fingertips: angles written with few digits), giving errors against
# Pinocchio below 3e-13 relative; the next pair (Romeo's fingers, 4.4e-8) is above _PAR_TOL and placed by
# its (distant) common normal.
_PAR_TOL = 1e-9
_LEN_TOL = 1e-9
# Nearly (not exactly) parallel axes put their common normal far away (|offset| / angle: 75 km for Romeo's
# fingers, float32 cos(pi/2) = -4.4e-8).  When it lies farther than _FAR_FOOT from the joint, O_j stays near
# the joint and x_j takes the exact normal direction; the next row then carries b (a Khalil–Kleinfinger
# row, see mdh_row), so no frame of the model sits kilometres away and levers nothing later.
_FAR_FOOT = 10.0  # m
_NEAR_PAR = 1e-4  # rad: only such nearly parallel pairs are placed that way (their feet are >= 1e4 offsets away)
# ROUND_OFF_TOL (robot_dynamics.model.mdh): the one round-off tolerance of the package, see there


# ------------------------------------------------------------------ rotations
def rpy_to_matrix(rpy: Any) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(rot: np.ndarray) -> tuple[float, float, float]:
    """Inverse of :func:`rpy_to_matrix` (pitch in [-pi/2, pi/2]; yaw = 0 at the gimbal lock)."""
    cp = math.hypot(rot[0, 0], rot[1, 0])
    pitch = math.atan2(-rot[2, 0], cp)
    if cp < 1e-12:
        return math.atan2(-rot[1, 2], rot[1, 1]), pitch, 0.0
    return math.atan2(rot[2, 1], rot[2, 2]), pitch, math.atan2(rot[1, 0], rot[0, 0])


def make_transform(rot: np.ndarray, pos: Any) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = pos
    return t


def inverse_transform(t: np.ndarray) -> np.ndarray:
    """Inverse of a homogeneous transform (R^T, -R^T p)."""
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


# ------------------------------------------------------------- geometry
def _closest_points(p1: np.ndarray, z1: np.ndarray, p2: np.ndarray, z2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of two non-parallel lines (p1 + s z1, p2 + t z2); |z1 x z2|^2 as denominator
    (better conditioned than 1 - (z1.z2)^2 for nearly parallel axes)."""
    nv = np.cross(z1, z2)
    den = nv @ nv
    w = p2 - p1
    s = np.cross(w, z2) @ nv / den
    t = np.cross(w, z1) @ nv / den
    return p1 + s * z1, p2 + t * z2


def _common_normal(z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """Unit x = z1 x z2 / |z1 x z2|, built as z1 x w with w the unit component of z2 normal to z1,
    so that x is orthogonal to z1 and z2 to round-off even for nearly parallel axes."""
    w = z2 - (z1 @ z2) * z1
    w /= np.linalg.norm(w)
    x = np.cross(z1, w)
    return x / np.linalg.norm(x)


def _project(point: np.ndarray, p: np.ndarray, z: np.ndarray) -> np.ndarray:
    return p + ((point - p) @ z) * z


def _perp_unit(v: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    w = v - (v @ z) * z
    n = np.linalg.norm(w)
    return None if n < 1e-6 else w / n


def _any_perp(z: np.ndarray) -> np.ndarray:
    e = np.eye(3)[int(np.argmin(np.abs(z)))]
    w = e - (e @ z) * z
    return w / np.linalg.norm(w)


def _snap_length(v: float) -> float:
    """0 when ``|v| <= ROUND_OFF_TOL`` (round-off of an exact zero), else ``v`` unchanged."""
    return 0.0 if abs(v) <= ROUND_OFF_TOL else v


def _snap_angle(v: float) -> float:
    """The float nearest k*pi/2 when ``v`` is within ``ROUND_OFF_TOL`` of it, else ``v`` unchanged."""
    k = round(v / (math.pi / 2))
    if abs(v - k * math.pi / 2) <= ROUND_OFF_TOL:
        k %= 4
        return (0.0, math.pi / 2, math.pi, -math.pi / 2)[k]
    return v


def place_mdh_frames(
    points: list[np.ndarray], axes: list[np.ndarray], prismatic: list[bool], hints: list[np.ndarray]
) -> tuple[list[np.ndarray], list[float]]:
    """MDH frames R_1..R_n (4x4 poses at q = 0) from joint axis lines, 002 §3.2.

    ``points``/``axes``: a point and the unit direction of each joint axis (base_link frame,
    q = 0); ``hints``: the URDF child-link poses, used only to resolve the free choices.
    Returns the frame poses and the sign (+1/-1) of each z_j relative to the URDF axis.
    """
    n = len(axes)
    z = [np.asarray(a, float) for a in axes]
    p = [np.asarray(x, float).copy() for x in points]
    sign = [1.0] * n
    for k in range(1, n):
        c = np.cross(z[k - 1], z[k])
        if np.linalg.norm(c) < _PAR_TOL and z[k - 1] @ z[k] < 0:
            z[k], sign[k] = -z[k], -1.0
        z[k] = z[k] / np.linalg.norm(z[k])
        if prismatic[k]:  # move the axis line so that it meets z_{k-1}: d_k = 0
            if np.linalg.norm(c) < _PAR_TOL:
                p[k] = _project(p[k], p[k - 1], z[k - 1])
            else:
                a, b = _closest_points(p[k - 1], z[k - 1], p[k], z[k])
                p[k] = p[k] + (a - b)

    def parallel(k: int) -> bool:
        return bool(np.linalg.norm(np.cross(z[k], z[k + 1])) < _PAR_TOL)

    def foot(k: int) -> np.ndarray | None:
        """Foot on z_k of the common normal with z_{k+1} (non-parallel axes), else None."""
        if k + 1 < n and not parallel(k):
            return _closest_points(p[k], z[k], p[k + 1], z[k + 1])[0]
        return None

    def far_normal(k: int) -> bool:
        """Nearly parallel axes (|z_k x z_k+1| < _NEAR_PAR) whose common normal lies farther than _FAR_FOOT
        from joint k; a skew pair at an ordinary angle keeps 002's placement even when its normal is far."""
        f = foot(k)
        return (f is not None and float(np.linalg.norm(np.cross(z[k], z[k + 1]))) < _NEAR_PAR
                and bool(np.linalg.norm(f - p[k]) > _FAR_FOOT))

    def fixed_origin(k: int) -> np.ndarray | None:
        """O_k when it is determined by the common normal with z_{k+1} (non-parallel axes, normal nearby)."""
        return None if far_normal(k) else foot(k)

    xs: list[np.ndarray] = []
    os_: list[np.ndarray] = []
    for k in range(n):
        hint_x, hint_o = hints[k][:3, 0], hints[k][:3, 3]
        if k == n - 1 and n > 1:  # x_n aligned with x_{n-1}, O_n on the x_{n-1} line
            x = xs[-1]
            o = _project(os_[-1] + ((p[k] - os_[-1]) @ x) * x, p[k], z[k])
            xs.append(x)
            os_.append(o)
            continue
        o_fixed = fixed_origin(k)
        if o_fixed is not None:
            x = _common_normal(z[k], z[k + 1])
            if x @ hint_x < -1e-9:
                x = -x
            o = o_fixed
        else:
            if k + 1 < n:
                w = p[k + 1] - p[k]
                w = w - (w @ z[k]) * z[k]
                nw = np.linalg.norm(w)
            else:
                nw = 0.0
            if k + 1 < n and far_normal(k):  # x along the exact normal direction, O_k kept near the joint
                x = _common_normal(z[k], z[k + 1])
                if x @ hint_x < -1e-9:
                    x = -x
            elif nw > _LEN_TOL:  # parallel axes: x along the common normal
                x = w / nw
                if x @ hint_x < -1e-9:
                    x = -x
            else:  # collinear axes (or a single joint): x free, follow the hint
                x = _perp_unit(hint_x, z[k])
                if x is None and xs:
                    x = _perp_unit(xs[-1], z[k])
                if x is None:
                    x = _any_perp(z[k])
            # free origin along z_k: r_k = 0 (candidate A) or r_{k+1} = 0 (candidate B)
            if k == 0:
                cand_a = _project(hint_o, p[k], z[k])
            else:
                cand_a = _project(os_[-1] + ((p[k] - os_[-1]) @ xs[-1]) * xs[-1], p[k], z[k])
            o = cand_a
            nxt = fixed_origin(k + 1) if k + 1 < n else None
            if nxt is not None:
                cand_b = _project(nxt, p[k], z[k])
                if np.linalg.norm(cand_b - hint_o) < np.linalg.norm(cand_a - hint_o) - 1e-12:
                    o = cand_b
        x = x - (x @ z[k]) * z[k]
        xs.append(x / np.linalg.norm(x))
        os_.append(o)
    frames = [make_transform(np.column_stack([x, np.cross(zz, x), zz]), o) for x, zz, o in zip(xs, z, os_, strict=True)]
    return frames, sign


def mdh_row(prev: np.ndarray, cur: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """(gamma, b, alpha, d, theta, r) with cur = prev @ mdh_transform(alpha, d, theta, r, gamma, b).

    The serial row (gamma = b = 0, :func:`mdh_parameters`) when it reproduces ``cur`` to round-off; else the
    Khalil–Kleinfinger row: u = the common normal of z_prev and z_cur (aligned with x_prev), gamma the angle
    x_prev -> u about z_prev, and (b, d, r) from O_cur - O_prev = b z_prev + d u + r z_cur."""
    alpha, d, theta, r = mdh_parameters(prev, cur)
    xp, zp, op = prev[:3, 0], prev[:3, 2], prev[:3, 3]
    xc, zc, oc = cur[:3, 0], cur[:3, 2], cur[:3, 3]
    delta = oc - op
    scale = max(1.0, float(np.linalg.norm(delta)))
    if abs(float(xp @ zc)) <= 4 * ROUND_OFF_TOL and np.linalg.norm(delta - d * xp - r * zc) <= 4 * ROUND_OFF_TOL * scale:
        return 0.0, 0.0, alpha, d, theta, r
    c = np.cross(zp, zc)
    if np.linalg.norm(c) >= _PAR_TOL:
        u = _common_normal(zp, zc)
        if u @ xp < 0:
            u = -u
        b, d, r = (float(v) for v in np.linalg.solve(np.column_stack([zp, u, zc]), delta))
    else:  # parallel: u along the offset of the axes (or x_cur when they are collinear), b = 0
        w = delta - (delta @ zp) * zp
        u = w / np.linalg.norm(w) if np.linalg.norm(w) > _LEN_TOL else xc - (xc @ zp) * zp
        u = u / np.linalg.norm(u)
        b, d, r = 0.0, float(delta @ u), float(delta @ zc)
    gamma = math.atan2(float(np.cross(xp, u) @ zp), float(xp @ u))
    alpha = math.atan2(float(np.cross(zp, zc) @ u), float(zp @ zc))
    theta = math.atan2(float(np.cross(u, xc) @ zc), float(u @ xc))
    return (_snap_angle(gamma), _snap_length(b), _snap_angle(alpha), _snap_length(d), _snap_angle(theta),
            _snap_length(r))


def mdh_parameters(prev: np.ndarray, cur: np.ndarray) -> tuple[float, float, float, float]:
    """(alpha, d, theta, r) such that cur = prev @ mdh_transform(alpha, d, theta, r) (002 eq. 3.2)."""
    xp, zp, op = prev[:3, 0], prev[:3, 2], prev[:3, 3]
    xc, zc, oc = cur[:3, 0], cur[:3, 2], cur[:3, 3]
    alpha = math.atan2(float(np.cross(zp, zc) @ xp), float(zp @ zc))
    theta = math.atan2(float(np.cross(xp, xc) @ zc), float(xp @ xc))
    d = float((oc - op) @ xp)
    r = float((oc - op) @ zc)
    return _snap_angle(alpha), _snap_length(d), _snap_angle(theta), _snap_length(r)
