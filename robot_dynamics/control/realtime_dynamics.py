"""Newton–Euler inverse dynamics for one state, in scalar arithmetic, for the control loop.

:func:`robot_dynamics.dynamics.inverse_dynamics.inverse_dynamics` is vectorized over batches
of states; its NumPy overhead dominates for a single state (~0.7 ms for 6 dof).
The computed-torque laws (001 §9.4.2.5) call NE once per control period, so this
module evaluates the same recursion (001 eqs. 7.47, 7.51–7.61) with Python floats
and the MDH structure of the rotations:

    ^jR_i v = Rot(z, −θ_j) Rot(x, −α_j) v,     ^iP_j = (d_j, −r_j sin α_j, r_j cos α_j)

and, for a tree row (Khalil & Kleinfinger 1986, see :mod:`robot_dynamics.model.mdh`), Rot(z, −γ_j)
applied first and ^iP_j = Rot(z, γ_j) (d_j, −r_j sin α_j, r_j cos α_j) + (0, 0, b_j); rows with
γ_j = b_j = 0 take the serial path.  Links are visited in index order and a(j) < j, so the
recursion is the tree form of 001 eqs. 7.51–7.61 (sums over the successors in 7.58, 7.59).

All constants (α, d, offsets, J_j, MS_j, M_j, Ia, Fc, Fv, gravity in R0, the
children lists) are unpacked once at construction; call :meth:`update` after
changing the model's parameters.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..model.mdh import PRISMATIC
from ..model.robot_model import RobotModel


class RealTimeNewtonEuler:
    """``ne(q, qd, qdd) -> tau`` (URDF coordinates, one state, shape (n,)), friction and rotor inertia included."""

    def __init__(self, model: RobotModel, gravity: Any = None) -> None:
        self.model = model
        self.update(gravity)

    def update(self, gravity: Any = None) -> None:
        """(Re)read the model constants."""
        m = self.model
        n = self.n = m.dof
        g = np.asarray(m.gravity if gravity is None else gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError("gravity must be a finite 3-vector")
        g0 = m.base_transform[:3, :3].T @ g
        self._vd0 = (-float(g0[0]), -float(g0[1]), -float(g0[2]))  # 7.47: v̇_0 = −g
        self._ant = [int(a) for a in m.antecedent]
        self._prism = [bool(s == PRISMATIC) for s in m.sigma]
        self._sign = [float(s) for s in m.sign]
        self._off = [float(m.r[j] if self._prism[j] else m.theta[j]) for j in range(n)]
        self._th = [float(x) for x in m.theta]
        self._r = [float(x) for x in m.r]
        self._ca = [math.cos(a) for a in m.alpha]
        self._sa = [math.sin(a) for a in m.alpha]
        self._d = [float(x) for x in m.d]
        gamma, b = m.gamma, m.b
        self._cg = [math.cos(float(x)) for x in gamma]
        self._sg = [math.sin(float(x)) for x in gamma]
        self._b = [float(x) for x in b]
        self._tree_row = [bool(gamma[j] != 0.0 or b[j] != 0.0) for j in range(n)]
        p = m.inertial
        self._J = [tuple(float(x) for x in p[j, :6]) for j in range(n)]
        self._MS = [tuple(float(x) for x in p[j, 6:9]) for j in range(n)]
        self._M = [float(p[j, 9]) for j in range(n)]
        self._Ia = [float(x) for x in m.Ia]
        self._Fc = [float(x) for x in m.Fc]
        self._Fv = [float(x) for x in m.Fv]

    def __call__(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        n = self.n
        ql, qdl, qddl = (np.asarray(x, dtype=float).tolist() for x in (q, qd, qdd))
        if not (len(ql) == len(qdl) == len(qddl) == n) or not all(
            isinstance(v, float) for v in ql + qdl + qddl
        ):
            raise ValueError(f"q, qd, qdd must be flat vectors of length {n}")
        # per-frame kinematic quantities, index 0 = base
        W = [(0.0, 0.0, 0.0)] * (n + 1)
        WD = [(0.0, 0.0, 0.0)] * (n + 1)
        VD = [self._vd0] * (n + 1)
        F = [None] * (n + 1)
        N = [None] * (n + 1)
        ct_l = [0.0] * n
        st_l = [0.0] * n
        rj_l = [0.0] * n
        ant, prism, sign = self._ant, self._prism, self._sign
        for i in range(n):
            j = i + 1
            a = ant[i]
            s = sign[i]
            qm, qdm, qddm = s * ql[i], s * qdl[i], s * qddl[i]
            if prism[i]:
                th, r = self._th[i], self._r[i] + qm
            else:
                th, r = self._th[i] + qm, self._r[i]
            ct, st = math.cos(th), math.sin(th)
            ca, sa, d = self._ca[i], self._sa[i], self._d[i]
            ct_l[i], st_l[i], rj_l[i] = ct, st, r
            px, py, pz = d, -r * sa, r * ca
            tree_row = self._tree_row[i]
            if tree_row:  # ^aP_j = Rot(z, γ) P + b z
                cg, sg = self._cg[i], self._sg[i]
                px, py, pz = cg * px - sg * py, sg * px + cg * py, pz + self._b[i]
            wx, wy, wz = W[a]
            wdx, wdy, wdz = WD[a]
            vx, vy, vz = VD[a]
            # U_{a} P_j = ω̇ × P + ω × (ω × P)  (in frame a)
            cx, cy, cz = wy * pz - wz * py, wz * px - wx * pz, wx * py - wy * px
            vx += wdy * pz - wdz * py + wy * cz - wz * cy
            vy += wdz * px - wdx * pz + wz * cx - wx * cz
            vz += wdx * py - wdy * px + wx * cy - wy * cx
            if tree_row:  # Rot(z, −γ) first
                wx, wy = cg * wx + sg * wy, -sg * wx + cg * wy
                wdx, wdy = cg * wdx + sg * wdy, -sg * wdx + cg * wdy
                vx, vy = cg * vx + sg * vy, -sg * vx + cg * vy
            # rotate to frame j: Rot(z, −θ) Rot(x, −α)
            u1, u2 = ca * wy + sa * wz, -sa * wy + ca * wz
            wjx, wjy, wjz = ct * wx + st * u1, -st * wx + ct * u1, u2  # 7.51
            u1, u2 = ca * wdy + sa * wdz, -sa * wdy + ca * wdz
            wdjx, wdjy, wdjz = ct * wdx + st * u1, -st * wdx + ct * u1, u2
            u1, u2 = ca * vy + sa * vz, -sa * vy + ca * vz
            vjx, vjy, vjz = ct * vx + st * u1, -st * vx + ct * u1, u2
            if prism[i]:
                vjx += 2.0 * wjy * qdm  # 7.54
                vjy -= 2.0 * wjx * qdm
                vjz += qddm
            else:
                wdjx += wjy * qdm  # 7.53
                wdjy -= wjx * qdm
                wdjz += qddm
                wjz += qdm  # 7.52
            W[j], WD[j], VD[j] = (wjx, wjy, wjz), (wdjx, wdjy, wdjz), (vjx, vjy, vjz)
            xx, xy, xz, yy, yz, zz = self._J[i]
            mx, my, mz = self._MS[i]
            mass = self._M[i]
            # 7.55: F = M v̇ + ω̇ × MS + ω × (ω × MS)
            cx, cy, cz = wjy * mz - wjz * my, wjz * mx - wjx * mz, wjx * my - wjy * mx
            fx = mass * vjx + wdjy * mz - wdjz * my + wjy * cz - wjz * cy
            fy = mass * vjy + wdjz * mx - wdjx * mz + wjz * cx - wjx * cz
            fz = mass * vjz + wdjx * my - wdjy * mx + wjx * cy - wjy * cx
            # 7.56: N = J ω̇ + MS × v̇ + ω × (J ω)
            jwx, jwy, jwz = xx * wjx + xy * wjy + xz * wjz, xy * wjx + yy * wjy + yz * wjz, xz * wjx + yz * wjy + zz * wjz
            nx = xx * wdjx + xy * wdjy + xz * wdjz + my * vjz - mz * vjy + wjy * jwz - wjz * jwy
            ny = xy * wdjx + yy * wdjy + yz * wdjz + mz * vjx - mx * vjz + wjz * jwx - wjx * jwz
            nz = xz * wdjx + yz * wdjy + zz * wdjz + mx * vjy - my * vjx + wjx * jwy - wjy * jwx
            F[j] = [fx, fy, fz]
            N[j] = [nx, ny, nz]
        out = np.empty(n)
        for i in range(n - 1, -1, -1):
            j = i + 1
            fx, fy, fz = F[j]
            nx, ny, nz = N[j]
            tau = fz if prism[i] else nz  # 7.61
            out[i] = sign[i] * tau + self._Fc[i] * _sign(qdl[i]) + self._Fv[i] * qdl[i] + self._Ia[i] * qddl[i]
            a = ant[i]
            if a > 0:
                ct, st, ca, sa = ct_l[i], st_l[i], self._ca[i], self._sa[i]
                r, d = rj_l[i], self._d[i]
                # ^aR_j v = Rot(x, α) Rot(z, θ) v   (7.59, 7.60)
                ux, uy = ct * fx - st * fy, st * fx + ct * fy
                gx, gy, gz = ux, ca * uy - sa * fz, sa * uy + ca * fz
                ux, uy = ct * nx - st * ny, st * nx + ct * ny
                hx, hy, hz = ux, ca * uy - sa * nz, sa * uy + ca * nz
                px, py, pz = d, -r * sa, r * ca
                if self._tree_row[i]:  # ^aR_j = Rot(z, γ) Rot(x, α) Rot(z, θ), ^aP_j = Rot(z, γ) P + b z
                    cg, sg = self._cg[i], self._sg[i]
                    gx, gy = cg * gx - sg * gy, sg * gx + cg * gy
                    hx, hy = cg * hx - sg * hy, sg * hx + cg * hy
                    px, py, pz = cg * px - sg * py, sg * px + cg * py, pz + self._b[i]
                fa, na = F[a], N[a]
                fa[0] += gx
                fa[1] += gy
                fa[2] += gz
                na[0] += hx + py * gz - pz * gy
                na[1] += hy + pz * gx - px * gz
                na[2] += hz + px * gy - py * gx
        return out


def _sign(x: float) -> float:
    return (x > 0.0) - (x < 0.0)


__all__ = ["RealTimeNewtonEuler"]
