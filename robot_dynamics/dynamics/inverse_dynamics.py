"""Inverse dynamic model by Newton–Euler, linear in the standard inertial parameters.

Implements the practical form of 001 §7.4.3 (eqs. 7.51–7.61): the wrench of link j
is computed at O_j in frame R_j with the standard parameters (J_j, MS_j, M_j), so
the model is linear in them; :func:`regressor` returns the matrix of that linear
form (001 eq. 9.3).  Gravity enters as the base acceleration ``v̇_0 = -g`` (7.47).

Conventions
-----------
* Public inputs and outputs are in URDF joint coordinates; the recursion runs in
  MDH coordinates (``q_mdh = sign*q + offset``, ``tau = sign*tau_mdh``).
* A single state ``(n,)`` gives ``(n,)``; a batch ``(N, n)`` gives ``(N, n)``.  The
  batch is vectorized (the only Python loops run over joints).
* ``gravity`` is expressed in ``base_link`` (default ``model.gravity``).
* ``f_ext`` is the wrench ``[force; moment]`` **exerted by a link on the
  environment** (001 §7.4.3, added in 7.58/7.60).  Either a ``(6,)``/``(N, 6)``
  array for the tip link, or a dict ``{link_name: wrench}``.  With
  ``f_ext_frame="base"`` (default) the wrench is expressed in the ``base_link``
  axes with the moment taken about the origin of the named URDF link; with
  ``f_ext_frame="local"`` it is expressed in that link's own frame (moment about
  its origin).  A ``(6,)`` wrench with a batch of states applies to every state.
* Friction ``Fc sign(q̇) + Fv q̇`` and rotor inertia ``Ia q̈`` are added as in 7.61
  (the Coulomb coefficient is ``Fc``, errata 15).  ``Ia`` is diagonal (7.29); the off-diagonal rotor
  inertia of a coupled transmission (``model.rotor_coupling``) is added by ``RobotModel.inverse_dynamics``,
  not here (:mod:`robot_dynamics.model.transmission`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..model.data import RobotData
from ..model.mdh import PRISMATIC
from . import recursion

__all__ = ["inverse_dynamics", "regressor", "check_states", "external_wrenches", "forward_recursion"]


# ----------------------------------------------------------------- validation
def check_states(model: RobotData, *arrays: tuple[Any, str]) -> tuple[list[np.ndarray], bool]:
    """Validate joint arrays of one shape, ``(n,)`` or ``(N, n)``; return them as (B, n) and a batch flag."""
    out = [model.check_joint_vector(a, what) for a, what in arrays]
    shape = out[0].shape
    for a, (_, what) in zip(out[1:], arrays[1:], strict=True):
        if a.shape != shape:
            raise ValueError(f"{what} has shape {a.shape}, expected {shape} like {arrays[0][1]}")
    batch = len(shape) == 2
    return [a if batch else a[None, :] for a in out], batch


def _gravity_r0(model: RobotData, gravity: Any) -> np.ndarray:
    """Gravity expressed in R0 from a vector expressed in base_link."""
    g = model.gravity if gravity is None else gravity
    g = np.asarray(g, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be a finite 3-vector, got shape {g.shape}")
    return model.base_transform[:3, :3].T @ g


# ----------------------------------------------------------------- geometry
def mdh_geometry(model: RobotData, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotations ^{a(j)}R_j (B, n, 3, 3) and positions ^{a(j)}P_j (B, n, 3) for q in URDF coordinates (B, n)."""
    qv = model.sign * q
    prism = model.sigma == PRISMATIC
    theta = model.theta + np.where(prism, 0.0, qv)
    r = model.r + np.where(prism, qv, 0.0)
    ca, sa = np.cos(model.alpha), np.sin(model.alpha)
    ct, st = np.cos(theta), np.sin(theta)
    b, n = q.shape
    rot = np.empty((b, n, 3, 3))
    rot[..., 0, 0] = ct
    rot[..., 0, 1] = -st
    rot[..., 0, 2] = 0.0
    rot[..., 1, 0] = ca * st
    rot[..., 1, 1] = ca * ct
    rot[..., 1, 2] = -sa
    rot[..., 2, 0] = sa * st
    rot[..., 2, 1] = sa * ct
    rot[..., 2, 2] = ca
    pos = np.empty((b, n, 3))
    pos[..., 0] = model.d
    pos[..., 1] = -r * sa
    pos[..., 2] = r * ca
    if model.is_tree and (np.any(model.gamma != 0.0) or np.any(model.b != 0.0)):
        # tree rows: ^{a}T_j = Rot(z, gamma) Trans(z, b) (serial row) (Khalil & Kleinfinger 1986)
        cg, sg = np.cos(model.gamma), np.sin(model.gamma)
        rz = np.zeros((n, 3, 3))
        rz[:, 0, 0] = cg
        rz[:, 0, 1] = -sg
        rz[:, 1, 0] = sg
        rz[:, 1, 1] = cg
        rz[:, 2, 2] = 1.0
        rot = rz @ rot
        pos = (rz @ pos[..., None])[..., 0]
        pos[..., 2] += model.b
    return rot, pos


_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])
_I3 = np.array([1, 0, 2])
_ZSGN = np.array([1.0, -1.0, 0.0])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of (..., 3) arrays (cheaper than np.cross on small batches)."""
    return a[..., _I1] * b[..., _I2] - a[..., _I2] * b[..., _I1]


def _cross_z(w: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """w × (q̇ z) for (B, 3) and (B,): q̇ [w_y, -w_x, 0]."""
    return w[:, _I3] * _ZSGN * qd[:, None]


def _rt(rot: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R^T v for (B, 3, 3) and (B, 3)."""
    return (v[:, None, :] @ rot)[:, 0]


def _rv(rot: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R v for (B, 3, 3) and (B, 3)."""
    return (rot @ v[:, :, None])[..., 0]


def inertia_tensors(model: RobotData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """J_j (n, 3, 3) about O_j (001 eq. 7.3 layout), MS_j (n, 3) and M_j (n,) from ``model.inertial``."""
    p = model.inertial
    xx, xy, xz, yy, yz, zz = (p[:, k] for k in range(6))
    jo = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2)
    return jo, p[:, 6:9].copy(), p[:, 9].copy()


# ----------------------------------------------------------------- f_ext
def external_wrenches(model: RobotData, q: np.ndarray, f_ext: Any, frame: str, batch: bool) -> np.ndarray | None:
    """Wrenches f_ej, m_ej exerted by each link on the environment, in R_j about O_j: (B, n, 6) or None."""
    if f_ext is None:
        return None
    if frame not in ("base", "local"):
        raise ValueError(f"f_ext_frame must be 'base' or 'local', got {frame!r}")
    if not isinstance(f_ext, dict):
        if not model.tip_link:
            raise ValueError("model has no tip link; pass f_ext as {link_name: wrench}")
        f_ext = {model.tip_link: f_ext}
    b, n = q.shape
    out = np.zeros((b, n, 6))
    frames_0 = None
    for link, w in f_ext.items():
        if link not in model.frames:
            raise ValueError(f"f_ext: unknown link {link!r}; known links: {sorted(model.frames)}")
        w = np.asarray(w, dtype=float)
        if not (w.shape == (6,) or (batch and w.shape == (b, 6))):
            raise ValueError(f"f_ext[{link!r}] must have shape (6,)" + (f" or ({b}, 6)" if batch else "") + f", got {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError(f"f_ext[{link!r}] contains NaN or inf")
        j, t_jl = model.frames[link]
        if j == 0:
            continue  # a wrench on the fixed base does not load the joints
        w = np.broadcast_to(w, (b, 6))
        if frame == "local":
            rot = np.broadcast_to(t_jl[:3, :3], (b, 3, 3))
        else:
            if frames_0 is None:
                frames_0 = model.link_frames(q)  # (B, n+1, 4, 4): ^0T_j
            r0j = frames_0[:, j, :3, :3]
            rot = np.einsum("bki,kl->bil", r0j, model.base_transform[:3, :3].T)  # ^jR_base
        f = _rv(rot, w[:, :3])
        m = _rv(rot, w[:, 3:]) + _cross(np.broadcast_to(t_jl[:3, 3], (b, 3)), f)
        out[:, j - 1, :3] += f
        out[:, j - 1, 3:] += m
    return out


# ----------------------------------------------------------------- NE core
Vec = tuple[Any, Any, Any]  # components x, y, z: (B,) arrays (or floats for constants)


def _vcross(a: Vec, b: Vec) -> Vec:
    """a × b on components."""
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def _vmat(m: list[list[float]], v: Vec) -> Vec:
    """M v for a constant 3x3 M (exact zeros skipped: diagonal inertia tensors)."""
    out = []
    for r in range(3):
        terms = [m[r][c] * v[c] for c in range(3) if m[r][c] != 0.0]
        out.append(sum(terms[1:], terms[0]) if terms else 0.0)
    return out[0], out[1], out[2]


def _varray(v: Vec, b: int) -> np.ndarray:
    """(B, 3) array of a component vector."""
    out = np.empty((b, 3))
    out[:, 0], out[:, 1], out[:, 2] = v
    return out


class _Joint:
    """What the NumPy arithmetic needs of joint j: cos/sin of θ_j, α_j, γ_j and ^{a(j)}P_j (components), or
    a general rotation (3x3 of (B,) arrays) when the geometry is given as matrices."""

    __slots__ = ("c", "s", "ca", "sa", "cg", "sg", "alpha", "gamma", "p", "matrix")

    def __init__(self) -> None:
        self.matrix: list[list[Any]] | None = None


class NumpyArithmetic:
    """The primitives of :class:`robot_dynamics.dynamics.recursion.Arithmetic` in NumPy over a batch of B states.

    Vectors are 3-tuples of (B,) arrays (component-wise arithmetic: no small matrix products or fancy
    indexing per joint), scalars (B,) arrays, the link state (ω_j, ω̇_j).  Rotations use the MDH structure
    ^jR_{a(j)} v = Rot(z, −θ_j) Rot(x, −α_j) Rot(z, −γ_j) v (the α and γ steps skipped when exactly 0).

    ``q`` URDF positions (B, n) (or ``geometry=(rot, pos)`` of :func:`mdh_geometry`), ``qd_m``/``qdd_m`` MDH
    joint rates (B, n) (``qdd_m`` None for a velocity pass), ``g0`` gravity in R0, ``fe`` (B, n, 6) the
    wrenches exerted on the environment, ``friction``: add Fc sign(q̇) + Fv q̇ + Ia q̈ to Γ (7.61)."""

    def __init__(
        self, model: RobotData, q: np.ndarray | None, qd_m: np.ndarray, qdd_m: np.ndarray | None, g0: np.ndarray,
        fe: np.ndarray | None = None, friction: bool = False,
        geometry: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.model, self.g0, self.fe, self.friction = model, g0, fe, friction
        self.batch = qd_m.shape[0]
        # one state: Python floats (a NumPy call on a (1,) array costs ten float operations)
        self.scalar = self.batch == 1 and geometry is None
        if self.scalar:
            self.qd, self.qdd = qd_m[0].tolist(), None if qdd_m is None else qdd_m[0].tolist()
        else:
            self.qd = np.ascontiguousarray(qd_m.T)
            self.qdd = None if qdd_m is None else np.ascontiguousarray(qdd_m.T)
        self.joints = self._geometry(model, q, self.scalar) if geometry is None else self._matrices(*geometry)
        self._inertia: list[tuple[list[list[float]], Vec, float]] | None = None

    @staticmethod
    def _geometry(model: RobotData, q: np.ndarray, scalar: bool) -> list[_Joint]:
        prism = model.sigma == PRISMATIC
        qv = (model.sign * q)[0].tolist() if scalar else np.ascontiguousarray((model.sign * q).T)  # (n, B)
        cos, sin = (math.cos, math.sin) if scalar else (np.cos, np.sin)
        out = []
        for i in range(model.dof):
            jt = _Joint()
            alpha, gamma = float(model.alpha[i]), float(model.gamma[i])
            jt.ca, jt.sa, jt.cg, jt.sg = math.cos(alpha), math.sin(alpha), math.cos(gamma), math.sin(gamma)
            jt.alpha, jt.gamma = alpha != 0.0, gamma != 0.0
            if prism[i]:
                jt.c, jt.s = math.cos(float(model.theta[i])), math.sin(float(model.theta[i]))
                r = float(model.r[i]) + qv[i]
            else:
                theta = float(model.theta[i]) + qv[i]
                jt.c, jt.s = cos(theta), sin(theta)
                r = float(model.r[i])
            p = (float(model.d[i]), -r * jt.sa, r * jt.ca)
            if jt.gamma:
                p = (jt.cg * p[0] - jt.sg * p[1], jt.sg * p[0] + jt.cg * p[1], p[2])
            jt.p = (p[0], p[1], p[2] + float(model.b[i]))
            out.append(jt)
        return out

    @staticmethod
    def _matrices(rot: np.ndarray, pos: np.ndarray) -> list[_Joint]:
        out = []
        for i in range(rot.shape[1]):
            jt = _Joint()
            jt.matrix = [[rot[:, i, r, c] for c in range(3)] for r in range(3)]
            jt.p = (pos[:, i, 0], pos[:, i, 1], pos[:, i, 2])
            out.append(jt)
        return out

    def inertia(self, j: int) -> tuple[list[list[float]], Vec, float]:
        """I_Oj (nested lists), MS_j (components) and M_j of link j, as floats."""
        if self._inertia is None:
            jo, ms, mass = inertia_tensors(self.model)
            self._inertia = [(jo[i].tolist(), tuple(ms[i].tolist()), float(mass[i])) for i in range(len(mass))]
        return self._inertia[j - 1]

    # ---- the primitives
    def rates(self, j: int) -> tuple[np.ndarray, np.ndarray | None]:
        return self.qd[j - 1], None if self.qdd is None else self.qdd[j - 1]

    def zero(self) -> Vec:
        z = 0.0 if self.scalar else np.zeros(self.batch)
        return z, z, z

    def base_acceleration(self) -> Vec:
        if self.scalar:
            return tuple(-float(g) for g in self.g0)  # 7.47
        return tuple(np.full(self.batch, -float(g)) for g in self.g0)

    @staticmethod
    def store(name: str, j: int, v: Vec) -> Vec:
        return v

    @staticmethod
    def store_scalar(name: str, j: int, s: np.ndarray) -> np.ndarray:
        return s

    def to_link(self, j: int, v: Vec, name: str) -> Vec:
        jt = self.joints[j - 1]
        x, y, z = v
        if jt.matrix is not None:
            m = jt.matrix
            return tuple(m[0][c] * x + m[1][c] * y + m[2][c] * z for c in range(3))
        if jt.gamma:
            x, y = jt.cg * x + jt.sg * y, jt.cg * y - jt.sg * x
        if jt.alpha:
            y, z = jt.ca * y + jt.sa * z, jt.ca * z - jt.sa * y
        return jt.c * x + jt.s * y, jt.c * y - jt.s * x, z

    def to_antecedent(self, j: int, v: Vec, name: str) -> Vec:
        jt = self.joints[j - 1]
        x, y, z = v
        if jt.matrix is not None:
            m = jt.matrix
            return tuple(m[r][0] * x + m[r][1] * y + m[r][2] * z for r in range(3))
        x, y = jt.c * x - jt.s * y, jt.s * x + jt.c * y
        if jt.alpha:
            y, z = jt.ca * y - jt.sa * z, jt.sa * y + jt.ca * z
        if jt.gamma:
            x, y = jt.cg * x - jt.sg * y, jt.sg * x + jt.cg * y
        return x, y, z

    def position_cross(self, j: int, v: Vec) -> Vec:
        return _vcross(self.joints[j - 1].p, v)

    @staticmethod
    def add(u: Vec, v: Vec) -> Vec:
        return u[0] + v[0], u[1] + v[1], u[2] + v[2]

    @staticmethod
    def scale(c: int, v: Vec) -> Vec:
        return c * v[0], c * v[1], c * v[2]

    @staticmethod
    def cross_axis(v: Vec, s: np.ndarray) -> Vec:
        return v[1] * s, -(v[0] * s), 0.0

    @staticmethod
    def add_axis(v: Vec, s: np.ndarray) -> Vec:
        return v[0], v[1], v[2] + s

    @staticmethod
    def axis(v: Vec) -> np.ndarray:
        return v[2]

    @staticmethod
    def link_state(j: int, w: Vec, wd: Vec | None) -> tuple[Vec, Vec | None]:
        return w, wd

    def transport(self, j: int, state_a: tuple[Vec, Vec], vd_a: Vec) -> Vec:
        wa, wda = state_a
        p = self.joints[j - 1].p
        a, b = _vcross(wda, p), _vcross(wa, _vcross(wa, p))  # (ω̂̇ + ω̂ω̂) P (7.54, 7.57)
        return vd_a[0] + a[0] + b[0], vd_a[1] + a[1] + b[1], vd_a[2] + a[2] + b[2]

    def link_force(self, j: int, state: tuple[Vec, Vec], vd: Vec) -> Vec:
        w, wd = state
        _, msj, m = self.inertia(j)
        a, b = _vcross(wd, msj), _vcross(w, _vcross(w, msj))  # 7.55
        return m * vd[0] + a[0] + b[0], m * vd[1] + a[1] + b[1], m * vd[2] + a[2] + b[2]

    def link_moment(self, j: int, state: tuple[Vec, Vec]) -> Vec:
        w, wd = state
        jo = self.inertia(j)[0]
        a, b = _vmat(jo, wd), _vcross(w, _vmat(jo, w))
        return a[0] + b[0], a[1] + b[1], a[2] + b[2]

    def ms_cross(self, j: int, vd: Vec) -> Vec:
        return _vcross(self.inertia(j)[1], vd)

    def external_wrench(self, j: int) -> tuple[Vec, Vec] | None:
        if self.fe is None:
            return None
        f = self.fe[0, j - 1].tolist() if self.scalar else self.fe[:, j - 1].T
        return (f[0], f[1], f[2]), (f[3], f[4], f[5])

    def joint_terms(self, j: int, tau: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        if not self.friction:
            return tau
        m, i = self.model, j - 1
        sign = float((qd > 0.0) - (qd < 0.0)) if self.scalar else np.sign(qd)
        return tau + float(m.Fc[i]) * sign + float(m.Fv[i]) * qd + float(m.Ia[i]) * qdd


def _tree(model: RobotData) -> tuple[list[int], list[bool]]:
    """Antecedents a(j) and prismatic flags σ_j as Python lists (for :mod:`.recursion`)."""
    return [int(a) for a in model.antecedent], (model.sigma == PRISMATIC).tolist()


def forward_recursion(
    model: RobotData, rot: np.ndarray, pos: np.ndarray, qd_m: np.ndarray, qdd_m: np.ndarray, g0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ω_j, ω̇_j and v̇_j of every frame in R_j, shape (B, n+1, 3) (index 0: the base, v̇_0 = −g, 7.47): the
    forward recursion of :func:`robot_dynamics.dynamics.recursion.forward` (001 eqs. 7.51–7.54) in NumPy, from
    the geometry ``rot, pos`` (:func:`mdh_geometry`) and MDH joint rates."""
    kin = recursion.forward(NumpyArithmetic(model, None, qd_m, qdd_m, g0, geometry=(rot, pos)), *_tree(model))
    b = qd_m.shape[0]
    return tuple(np.stack([_varray(v, b) for v in x], 1) for x in (kin.w, kin.wd, kin.vd))


def newton_euler_mdh(
    model: RobotData,
    q: np.ndarray,
    qd_m: np.ndarray,
    qdd_m: np.ndarray,
    g0: np.ndarray,
    fe: np.ndarray | None = None,
    geometry: tuple[np.ndarray, np.ndarray] | None = None,
    friction: bool = False,
) -> np.ndarray:
    """Joint efforts in MDH coordinates (B, n) by :func:`robot_dynamics.dynamics.recursion.newton_euler`
    (001 eqs. 7.51–7.61), without friction and rotor inertia unless ``friction``.

    ``q`` is in URDF coordinates (for the geometry), ``qd_m``/``qdd_m`` in MDH
    coordinates, ``g0`` is gravity in R0, ``fe`` (B, n, 6) the wrenches exerted
    on the environment in R_j.
    """
    ar = NumpyArithmetic(model, q, qd_m, qdd_m, g0, fe, friction, geometry)
    tau = np.empty(qd_m.shape)
    for i, t in enumerate(recursion.newton_euler(ar, *_tree(model))):
        tau[:, i] = t
    return tau


def friction_rotor(model: RobotData, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Fc sign(q̇) + Fv q̇ + Ia q̈ (001 eq. 7.61), identical in URDF and MDH coordinates."""
    return model.Fc * np.sign(qd) + model.Fv * qd + model.Ia * qdd


def inverse_dynamics(
    model: RobotData,
    q: Any,
    qd: Any,
    qdd: Any,
    f_ext: Any = None,
    gravity: Any = None,
    f_ext_frame: str = "base",
) -> np.ndarray:
    """Joint efforts Γ = A q̈ + C q̇ + Q + friction + Ia q̈ + J^T f_e (001 §7.4.3, eqs. 7.51–7.61).

    ``q, qd, qdd``: URDF joint positions, velocities, accelerations, ``(n,)`` or ``(N, n)``.
    Returns efforts in URDF sign convention with the same leading shape.
    """
    (q, qd, qdd), batch = check_states(model, (q, "q"), (qd, "qd"), (qdd, "qdd"))
    g0 = _gravity_r0(model, gravity)
    fe = external_wrenches(model, q, f_ext, f_ext_frame, batch)
    s = model.sign
    tau = s * newton_euler_mdh(model, q, s * qd, s * qdd, g0, fe, friction=True)  # Fc, Fv, Ia odd in s
    return tau if batch else tau[0]


# ----------------------------------------------------------------- regressor
_JBASIS = np.zeros((6, 3, 3))
for _k, (_r, _c) in enumerate([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]):
    _JBASIS[_k, _r, _c] = _JBASIS[_k, _c, _r] = 1.0


def _link_wrench_basis(w: np.ndarray, wd: np.ndarray, vd: np.ndarray) -> np.ndarray:
    """(B, 6, 10): the wrench [f_t; m_t] of 7.55/7.56 per unit standard parameter XX..M."""
    b = w.shape[0]
    out = np.zeros((b, 6, 10))
    # J ω̇ + ω × (J ω) for each of the six J basis tensors
    jwd = np.einsum("kij,bj->bki", _JBASIS, wd)
    jw = np.einsum("kij,bj->bki", _JBASIS, w)
    out[:, 3:, :6] = np.swapaxes(jwd + _cross(w[:, None, :], jw), 1, 2)
    # U_j MS_j: columns of U = ω̂̇ + ω̂ω̂ (7.57); MS × v̇ for unit MS
    eye = np.eye(3)
    u_cols = _cross(wd[:, None, :], eye[None]) + _cross(w[:, None, :], _cross(w[:, None, :], eye[None]))
    out[:, :3, 6:9] = np.swapaxes(u_cols, 1, 2)
    out[:, 3:, 6:9] = np.swapaxes(_cross(eye[None], vd[:, None, :]), 1, 2)
    out[:, :3, 9] = vd
    return out


def regressor(model: RobotData, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
    """Regressor W(q, q̇, q̈) with ``W @ model.standard_parameters.values == inverse_dynamics`` (001 eq. 9.3).

    Columns follow ``model.standard_parameter_names`` (13 per link: XX XY XZ YY YZ
    ZZ MX MY MZ M Ia Fc Fv).  Shape ``(n, 13n)`` or ``(N, n, 13n)``; reshape a batch
    to ``(N*n, 13n)`` for the observation matrix.
    """
    (q, qd, qdd), batch = check_states(model, (q, "q"), (qd, "qd"), (qdd, "qdd"))
    g0 = _gravity_r0(model, gravity)
    s = model.sign
    qd_m, qdd_m = s * qd, s * qdd
    rot, pos = mdh_geometry(model, q)
    b, n = q.shape
    rev = model.sigma != PRISMATIC
    ant = model.antecedent
    fb = np.zeros((b, n + 1, 6, 10 * n))  # wrench basis accumulated at each joint

    def link(j: int, kin: recursion.Kinematics) -> None:
        w, wd, vd = (_varray(x[j], b) for x in (kin.w, kin.wd, kin.vd))
        fb[:, j, :, 10 * (j - 1) : 10 * j] = _link_wrench_basis(w, wd, vd)

    # the forward recursion of Newton–Euler; the backward pass stays linear in the parameters (001 eq. 9.3)
    recursion.forward(NumpyArithmetic(model, q, qd_m, qdd_m, g0), *_tree(model), link=link)
    out = np.zeros((b, n, 13 * n))
    for j in range(n, 0, -1):
        i = j - 1
        lo = 10 * i  # descendants of j have larger indices
        cols = np.arange(n) * 13
        out[:, i, (cols[:, None] + np.arange(10)).ravel()[lo:]] = fb[:, j, 2 if not rev[i] else 5, lo:]
        a = ant[i]
        if a > 0:
            fj = np.einsum("bik,bkc->bic", rot[:, i], fb[:, j, :3, lo:])
            fb[:, a, :3, lo:] += fj
            fb[:, a, 3:, lo:] += np.einsum("bik,bkc->bic", rot[:, i], fb[:, j, 3:, lo:]) + np.swapaxes(
                _cross(pos[:, i, None, :], np.swapaxes(fj, 1, 2)), 1, 2
            )
    idx = np.arange(n)
    out[:, idx, 13 * idx + 10] = qdd
    out[:, idx, 13 * idx + 11] = np.sign(qd)
    out[:, idx, 13 * idx + 12] = qd
    # URDF sign convention: tau_urdf = sign * tau_mdh for the inertial columns
    inert_cols = (np.arange(n)[:, None] * 13 + np.arange(10)).ravel()
    out[:, :, inert_cols] *= s[None, :, None]
    return out if batch else out[0]
