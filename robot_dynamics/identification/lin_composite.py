"""Composite bodies and Renaud's formulation as Lin writes them (seed 003 eqs. 5–11, 44–50).

Lin's frames E_i are Khalil's MDH frames R_i (003 eqs. 3–4: β = α, b = d, d = r); vectors carry the
frame they are expressed in as a superscript, ``^i_j s`` is the vector from O_i to O_j.  Composite
body i is links i..n of a serial chain.  Everything here is in Lin's (MDH) joint sense; the public
functions return URDF coordinates (H_URDF = S H S, τ_URDF = S τ with S = diag(sign)).

* :func:`composite_bodies`: m̂_i (5), ĉ_i^(i) (6), Ĵ_i^(i) about O_i (7), summed link by link.
* :func:`renaud_inertia_matrix`: h_mi (9) with a_{i,m} (10) and K_i, K*_i (8).
* :func:`renaud_gravity_torques`: τ^g_i (11).
* :func:`composite_joint_wrench`: (f_Ej, t_Ej) of joint j on composite body j when joints j+1..n are
  locked, from the inertia force/torque at the composite centre of mass (44)–(47) and the
  equilibrium (48)–(49) first line (the second line, used by 003 (51)/(52), follows by (50)).

``composite=`` lets the caller supply (m̂, ĉ, Ĵ) instead of (5)–(7), e.g. Lin's constants plus
varying parts (12)–(13) (:func:`robot_dynamics.identification.lin.composite_from_constants`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.inertia import central_inertia, skew
from ..model.mdh import PRISMATIC

if TYPE_CHECKING:
    from ..model.robot_model import RobotModel

__all__ = [
    "composite_bodies",
    "composite_central_inertia",
    "composite_joint_wrench",
    "renaud_gravity_torques",
    "renaud_inertia_matrix",
]

Composite = tuple[np.ndarray, np.ndarray, np.ndarray]


def _require_serial(model: RobotModel) -> None:
    """Refuse a model that is not a serial chain: Lin's composite body i is links i..n (003 eq. 5)
    and eqs. 18–25 reduce ^{i}P_{i+1} along z_{i+1} in the serial MDH row (a(j) = j − 1, γ_j = b_j = 0)."""
    branching = [f"{jt.name} (a({j}) = {jt.antecedent})" for j, jt in enumerate(model.joints, start=1)
                 if jt.antecedent != j - 1]
    placed = [f"{jt.name} (gamma = {jt.gamma:.6g}, b = {jt.b:.6g})" for jt in model.joints
              if jt.gamma != 0.0 or jt.b != 0.0]
    if branching or placed:
        def few(items: list[str]) -> str:
            return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        why = "; ".join(x for x in (
            f"joint(s) not carried by the previous one: {few(branching)}" if branching else "",
            f"tree-row parameters gamma/b nonzero: {few(placed)}" if placed else "") if x)
        raise ValueError(
            f"Lin's composite bodies need a serial chain (a(j) = j-1, gamma_j = b_j = 0); {model.name!r} "
            f"{'is a kinematic tree' if branching else 'has tree rows'}: {why}. Convert the chain that is identified, "
            "e.g. RobotModel.from_urdf(..., tip_link=...)"
        )


def _single(model: RobotModel, q: Any) -> np.ndarray:
    q = model.check_joint_vector(q)
    if q.ndim != 1:
        raise ValueError(f"q must be one configuration ({model.dof},)")
    return q


def _gravity0(model: RobotModel, gravity: Any = None) -> np.ndarray:
    g = model.gravity if gravity is None else np.asarray(gravity, float).reshape(3)
    return model.base_transform[:3, :3].T @ g  # g in R0


def composite_bodies(model: RobotModel, q: Any) -> Composite:
    """(m̂ (n,), ĉ (n, 3), Ĵ (n, 3, 3)): composite body i = links i..n at URDF ``q``, in frame i about O_i.

    003 eq. (5) m̂_i = Σ_{j≥i} m_j; (6) ĉ_i^(i) = Σ m_j (^i_j s^(i) + c_j^(i)); (7) Ĵ_i^(i) =
    Σ ^i_jR I_j ^i_jR^T − m_j [(^i_j s + c_j)×]² with I_j the inertia of link j about its centre of mass
    (products −∫xy dm, the tensor convention of the standard parameters)."""
    _require_serial(model)
    q = _single(model, q)
    n = model.dof
    frames = model.link_frames(q)
    mh, ch, jh = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
    links = [central_inertia(model.inertial[j]) for j in range(n)]  # (m_j, c_j^(j), I_j^(j) about the COM)
    for i in range(1, n + 1):
        ri, pi = frames[i][:3, :3], frames[i][:3, 3]
        for j in range(i, n + 1):
            m, c, ic = links[j - 1]
            rij = ri.T @ frames[j][:3, :3]  # ^iR_j
            sc = ri.T @ (frames[j][:3, 3] - pi) + rij @ c  # ^i_j s^(i) + c_j^(i)
            mh[i - 1] += m  # (5)
            ch[i - 1] += m * sc  # (6)
            jh[i - 1] += rij @ ic @ rij.T - m * skew(sc) @ skew(sc)  # (7)
    return mh, ch, jh


def composite_central_inertia(m_hat: float, c_hat: np.ndarray, j_hat: np.ndarray) -> np.ndarray:
    """Î_j: inertia of a composite body about its own centre of mass, 003 eq. (46) Î = Ĵ + [ĉ×][ĉ×]/m̂."""
    if m_hat <= 0.0:
        return np.array(j_hat, float)
    return j_hat + skew(c_hat) @ skew(c_hat) / m_hat


def _geometry(model: RobotModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_m^(i) [m, i], ^m_i s^(i) [m, i] (O_m to O_i in frame i), R_i (rotation of frame i in R0)."""
    frames = model.link_frames(q)
    n = model.dof
    r = frames[1:, :3, :3]
    p = frames[1:, :3, 3]
    u = np.einsum("iba,mb->mia", r, r[:, :, 2])  # R_i^T z_m
    s = np.einsum("iba,mib->mia", r, p[None, :, :] - p[:, None, :])  # R_i^T (p_i - p_m)
    assert u.shape == s.shape == (n, n, 3)
    return u, s, r


def renaud_inertia_matrix(model: RobotModel, q: Any, composite: Composite | None = None) -> np.ndarray:
    """Inertia matrix H(q) (n, n), URDF coordinates, by Renaud's formulation as 003 writes it.

    003 eq. (9), for m ≤ i (h_im = h_mi), with K*_i = 1 − K_i = 1 for a rotational joint (8) and
    a_{i,m}^(i) = u_m^(i) × ^m_i s^(i) (10)::

        h_mi = K*_m K*_i (u_m^(i) · Ĵ_i[:, 3] + [a_y, −a_x, 0] · ĉ_i) + K_m K*_i [u_y, −u_x, 0] · ĉ_i
             + K*_m K_i (m̂_i a_z − [u_y, −u_x, 0] · ĉ_i) + K_m K_i m̂_i u_z

    (u = u_m^(i), a = a_{i,m}^(i)).  No rotor inertia (Lin's model has none)."""
    _require_serial(model)
    q = _single(model, q)
    mh, ch, jh = composite_bodies(model, q) if composite is None else composite
    u, s, _ = _geometry(model, q)
    kk = (model.sigma == PRISMATIC).astype(float)  # K_i (8)
    ks = 1.0 - kk  # K*_i
    n = model.dof
    h = np.zeros((n, n))
    for i in range(n):
        for m in range(i + 1):
            um = u[m, i]
            a = np.cross(um, s[m, i])  # (10)
            perp = np.array([um[1], -um[0], 0.0])
            h[m, i] = (ks[m] * ks[i] * (um @ jh[i][:, 2] + np.array([a[1], -a[0], 0.0]) @ ch[i])
                       + kk[m] * ks[i] * (perp @ ch[i])
                       + ks[m] * kk[i] * (mh[i] * a[2] - perp @ ch[i])
                       + kk[m] * kk[i] * mh[i] * um[2])
            h[i, m] = h[m, i]
    return model.sign[:, None] * h * model.sign[None, :]


def renaud_gravity_torques(
    model: RobotModel, q: Any, composite: Composite | None = None, gravity: Any = None
) -> np.ndarray:
    """Gravity efforts τ^g (n,), URDF coordinates: 003 eq. (11)
    τ^g_i = −u_i · (K*_i ĉ_i × g^(i) + K_i m̂_i g^(i)) = K*_i [−g_y, g_x, 0] · ĉ_i − K_i m̂_i g_z
    (g: gravity acceleration, ``model.gravity`` in base_link unless given)."""
    _require_serial(model)
    q = _single(model, q)
    mh, ch, _ = composite_bodies(model, q) if composite is None else composite
    _, _, r = _geometry(model, q)
    g0 = _gravity0(model, gravity)
    tau = np.zeros(model.dof)
    for i in range(model.dof):
        g = r[i].T @ g0
        if model.sigma[i] == PRISMATIC:
            tau[i] = -mh[i] * g[2]
        else:
            tau[i] = -g[1] * ch[i, 0] + g[0] * ch[i, 1]
    return model.sign * tau


def _link_motion(model: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[
        np.ndarray, np.ndarray, np.ndarray]:
    """ω_j, ω̇_j, a_j (acceleration of O_j, 003 eq. 47) of every link in its own frame (no gravity)."""
    n = model.dof
    t = model.joint_transforms(q)
    w, wd, a = np.zeros((n + 1, 3)), np.zeros((n + 1, 3)), np.zeros((n + 1, 3))
    z = np.array([0.0, 0.0, 1.0])
    qdm, qddm = model.sign * qd, model.sign * qdd  # MDH rates
    for j in range(1, n + 1):
        rot, p = t[j - 1, :3, :3], t[j - 1, :3, 3]
        wp, wdp = rot.T @ w[j - 1], rot.T @ wd[j - 1]
        a[j] = rot.T @ (a[j - 1] + np.cross(wd[j - 1], p) + np.cross(w[j - 1], np.cross(w[j - 1], p)))
        if model.sigma[j - 1] == PRISMATIC:
            w[j], wd[j] = wp, wdp
            a[j] += qddm[j - 1] * z + 2.0 * np.cross(w[j], qdm[j - 1] * z)
        else:
            w[j] = wp + qdm[j - 1] * z
            wd[j] = wdp + qddm[j - 1] * z + np.cross(wp, qdm[j - 1] * z)
    return w[1:], wd[1:], a[1:]


def composite_joint_wrench(
    model: RobotModel, q: Any, qd: Any, qdd: Any, j: int, composite: Composite | None = None, gravity: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """(f_Ej^(j), t_Ej^(j)): force and torque (about O_j, in frame j) of joint j on composite body j
    (1-based) with joints j+1..n locked (their rates in ``qd``/``qdd`` are ignored).

    003 (44) −f_Tj = m̂_j a_j + ω̇_j × ĉ_j + ω_j × (ω_j × ĉ_j); (45) −t_Tj = Î_j ω̇_j + ω_j × (Î_j ω_j)
    with Î_j from (46) and a_j from (47); (48) f_Ej = −f_Tj − m̂_j g; (49) t_Ej = −t_Tj −
    (ĉ_j / m̂_j) × (f_Tj + m̂_j g).  The joint effort (MDH sense) is z·t_Ej (rotational) or z·f_Ej."""
    _require_serial(model)
    q = _single(model, q)
    qd = _single(model, qd)
    qdd = _single(model, qdd)
    if not 1 <= j <= model.dof:
        raise ValueError(f"j must be in 1..{model.dof}, got {j}")
    locked = np.arange(model.dof) >= j
    qd, qdd = np.where(locked, 0.0, qd), np.where(locked, 0.0, qdd)
    mh, ch, jh = composite_bodies(model, q) if composite is None else composite
    m, c, jj = float(mh[j - 1]), ch[j - 1], jh[j - 1]
    w, wd, a = (x[j - 1] for x in _link_motion(model, q, qd, qdd))
    g = model.link_frames(q)[j][:3, :3].T @ _gravity0(model, gravity)
    minus_f_t = m * a + np.cross(wd, c) + np.cross(w, np.cross(w, c))  # (44)
    f_e = minus_f_t - m * g  # (48)
    if m <= 0.0:  # massless tail: (45)–(46) about O_j directly
        return f_e, jj @ wd + np.cross(w, jj @ w)
    ic = composite_central_inertia(m, c, jj)  # (46)
    minus_t_t = ic @ wd + np.cross(w, ic @ w)  # (45)
    t_e = minus_t_t + np.cross(c / m, minus_f_t - m * g)  # (49), first line
    return f_e, t_e
