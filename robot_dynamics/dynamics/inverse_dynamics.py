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
  (the Coulomb coefficient is ``Fc``, errata 15).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC

__all__ = ["inverse_dynamics", "regressor", "check_states", "external_wrenches", "forward_recursion"]


# ----------------------------------------------------------------- validation
def check_states(model: Any, *arrays: tuple[Any, str]) -> tuple[list[np.ndarray], bool]:
    """Validate joint arrays of one shape, ``(n,)`` or ``(N, n)``; return them as (B, n) and a batch flag."""
    out = [model.check_joint_vector(a, what) for a, what in arrays]
    shape = out[0].shape
    for a, (_, what) in zip(out[1:], arrays[1:], strict=True):
        if a.shape != shape:
            raise ValueError(f"{what} has shape {a.shape}, expected {shape} like {arrays[0][1]}")
    batch = len(shape) == 2
    return [a if batch else a[None, :] for a in out], batch


def _gravity_r0(model: Any, gravity: Any) -> np.ndarray:
    """Gravity expressed in R0 from a vector expressed in base_link."""
    g = model.gravity if gravity is None else gravity
    g = np.asarray(g, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be a finite 3-vector, got shape {g.shape}")
    return model.base_transform[:3, :3].T @ g


# ----------------------------------------------------------------- geometry
def mdh_geometry(model: Any, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def inertia_tensors(model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """J_j (n, 3, 3) about O_j (001 eq. 7.3 layout), MS_j (n, 3) and M_j (n,) from ``model.inertial``."""
    p = model.inertial
    xx, xy, xz, yy, yz, zz = (p[:, k] for k in range(6))
    jo = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2)
    return jo, p[:, 6:9].copy(), p[:, 9].copy()


# ----------------------------------------------------------------- f_ext
def external_wrenches(model: Any, q: np.ndarray, f_ext: Any, frame: str, batch: bool) -> np.ndarray | None:
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
def forward_recursion(
    model: Any, rot: np.ndarray, pos: np.ndarray, qd_m: np.ndarray, qdd_m: np.ndarray, g0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward recursion of Newton–Euler (001 eqs. 7.51–7.54), written once.

    ω_j, ω̇_j and v̇_j of every frame in R_j, shape (B, n+1, 3) (index 0: the base, v̇_0 = −g, 7.47), from the
    geometry ``rot, pos`` (:func:`mdh_geometry`) and MDH joint rates.  Used by :func:`newton_euler_mdh`,
    :func:`regressor` and the first pass of the direct dynamics (ω_j only, with q̈ = 0)."""
    b, n = qd_m.shape
    rev = model.sigma != PRISMATIC
    ant = model.antecedent
    w = np.zeros((b, n + 1, 3))
    wd = np.zeros((b, n + 1, 3))
    vd = np.zeros((b, n + 1, 3))
    vd[:, 0] = -g0  # 7.47
    for j in range(1, n + 1):
        i = j - 1
        a = ant[i]
        rj, pj = rot[:, i], pos[:, i]
        wa, wda = w[:, a], wd[:, a]
        wjm = _rt(rj, wa)  # 7.51
        qdj, qddj = qd_m[:, i], qdd_m[:, i]
        wxa = _cross_z(wjm, qdj)  # jω_{a(j)} × q̇_j a_j with a_j = z
        vdj = _rt(rj, vd[:, a] + _cross(wda, pj) + _cross(wa, _cross(wa, pj)))  # U_{a(j)} P_j
        wdj = _rt(rj, wda)
        wj = wjm.copy()
        if rev[i]:
            wj[:, 2] += qdj  # 7.52
            wdj += wxa  # 7.53
            wdj[:, 2] += qddj
        else:
            vdj += 2.0 * wxa  # 7.54
            vdj[:, 2] += qddj
        w[:, j], wd[:, j], vd[:, j] = wj, wdj, vdj
    return w, wd, vd


def newton_euler_mdh(
    model: Any,
    q: np.ndarray,
    qd_m: np.ndarray,
    qdd_m: np.ndarray,
    g0: np.ndarray,
    fe: np.ndarray | None = None,
    geometry: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Joint efforts in MDH coordinates (B, n), without friction and rotor inertia.

    ``q`` is in URDF coordinates (for the geometry), ``qd_m``/``qdd_m`` in MDH
    coordinates, ``g0`` is gravity in R0, ``fe`` (B, n, 6) the wrenches exerted
    on the environment in R_j.  001 eqs. 7.51–7.60.
    """
    rot, pos = mdh_geometry(model, q) if geometry is None else geometry
    b, n = q.shape
    jo, ms, mass = inertia_tensors(model)
    rev = model.sigma != PRISMATIC
    ant = model.antecedent
    w, wd, vd = forward_recursion(model, rot, pos, qd_m, qdd_m, g0)
    ft = np.empty((b, n + 1, 3))
    mt = np.empty((b, n + 1, 3))
    for j in range(1, n + 1):
        i = j - 1
        wj, wdj, vdj, msj = w[:, j], wd[:, j], vd[:, j], ms[i]
        # 7.55 / 7.56
        ft[:, j] = mass[i] * vdj + _cross(wdj, msj) + _cross(wj, _cross(wj, msj))
        mt[:, j] = wdj @ jo[i].T + _cross(msj, vdj) + _cross(wj, wj @ jo[i].T)
    f = ft
    m = mt
    if fe is not None:
        f[:, 1:] += fe[:, :, :3]  # 7.58
        m[:, 1:] += fe[:, :, 3:]  # 7.60
    tau = np.empty((b, n))
    for j in range(n, 0, -1):
        i = j - 1
        tau[:, i] = f[:, j, 2] if not rev[i] else m[:, j, 2]  # 7.61 (a_j = z)
        a = ant[i]
        if a > 0:
            fj = _rv(rot[:, i], f[:, j])  # 7.59
            f[:, a] += fj
            m[:, a] += _rv(rot[:, i], m[:, j]) + _cross(pos[:, i], fj)  # 7.60
    return tau


def friction_rotor(model: Any, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Fc sign(q̇) + Fv q̇ + Ia q̈ (001 eq. 7.61), identical in URDF and MDH coordinates."""
    return model.Fc * np.sign(qd) + model.Fv * qd + model.Ia * qdd


def inverse_dynamics(
    model: Any,
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
    tau = s * newton_euler_mdh(model, q, s * qd, s * qdd, g0, fe) + friction_rotor(model, qd, qdd)
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


def regressor(model: Any, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
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
    w, wd, vd = forward_recursion(model, rot, pos, qd_m, qdd_m, g0)
    fb = np.zeros((b, n + 1, 6, 10 * n))  # wrench basis accumulated at each joint
    for j in range(1, n + 1):
        i = j - 1
        fb[:, j, :, 10 * i : 10 * j] = _link_wrench_basis(w[:, j], wd[:, j], vd[:, j])
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
