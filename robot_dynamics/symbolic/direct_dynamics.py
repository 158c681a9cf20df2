"""The O(n) direct dynamic model of 001 §7.6.2.1 (eqs. 7.67–7.79) on expressions.

A first forward recursion (ω_j, γ_j, β_j), a backward recursion (𝕀*_j, β*_j, H_j, ν_j) and a second forward
recursion (q̈_j); the divisions ``JDj = 1/H_j`` are :class:`~robot_dynamics.symbolic.expressions.Reciprocal`
atoms, the joint torque Γ_j arrives as the atom ``QDPj``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..dynamics.recursion import Kinematics, forward
from .arithmetic import SymbolicArithmetic, _cross, _gravity_r0, _tree
from .builder import _Builder
from .composite_links import _add_screw_congruence, _spatial_inertia
from .expressions import _X, _ZERO, _sign, _v


def _direct_dynamics(
    model: Any, b: _Builder, par: dict[str, _X], wrench: bool, progress: Callable[[str], None] | None,
) -> list[_X]:
    """O(n) direct dynamic model of 001 §7.6.2.1 (eqs. 7.67–7.79) on scalars; returns q̈_1..q̈_n (MDH).

    Run-time inputs: ``Sj, Cj`` (or ``Qj``), ``QPj`` and the joint torque Γ_j as the atom ``QDPj`` (the third
    input slot of the emitters, see :func:`customized_forward_dynamics`).  Spatial vectors are [v; ω], [f; m];
    a_j = e_6 (revolute) or e_3 (prismatic).  With ν_j = H_j⁻¹ (τ_j + a_jᵀβ*_j − (𝕀*_j a_j)ᵀ γ_j) the
    equations are used in the equivalent forms (expand 7.72 in 7.73 and 7.77)::

        α_j = 𝕀*_j γ_j + (𝕀*_j a_j) ν_j − β*_j                       (7.73)
        q̈_j = ν_j − GK_jᵀ (^jS_{a(j)} ^{a(j)}V̇_{a(j)}),  GK_j = 𝕀*_j a_j / H_j   (7.77)
        𝕂_j a_j = Ia_j GK_j,  𝕂_j = 𝕀*_j − GK_j (𝕀*_j a_j)ᵀ elsewhere   (7.72)

    so that a zero rotor inertia makes row and column a_j of 𝕂_j exact zeros."""
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    z = _ZERO

    def p(k: str, j: int) -> _X:
        return par.get(f"{k}{j}", z)

    g = _gravity_r0(model)
    gs = [b.param(f"G{i}", g[i - 1]) if g[i - 1] != 0.0 else z for i in (1, 2, 3)]
    # i) first forward recursion: ω_j (the velocity pass of the Newton–Euler recursion), γ_j (7.68), β_j (7.70)
    ww: dict[int, list[list[_X]]] = {0: [[z] * 3 for _ in range(3)]}  # ω̂_j ω̂_j
    gam: dict[int, list[_X]] = {}
    beta: dict[int, list[_X]] = {}

    def first(j: int, kin: Kinematics) -> None:
        a = ant[j - 1]
        gj = ar.geometry(j)
        qp = _v(f"QP{j}")
        wi, dv = kin.wi[j], kin.state[j].dv
        wwj = [[dv[r][c] for c in range(3)] for r in range(3)]
        for i in range(3):  # ω̂ω̂ = ωωᵀ − |ω|² 1: diagonal −ω_k² − ω_l²
            o1, o2 = [k for k in range(3) if k != i]
            wwj[i][i] = b.var(f"WW{i + 1}{i + 1}{j}", dv[o1][o1] + dv[o2][o2])
        ww[j] = wwj
        # γ_j (7.68): ^jR_{a(j)} [ω_a × (ω_a × P_j)] + 2σ_j ω_{a(j)} × q̇_j a_j; σ̄_j ω_{a(j)} × q̇_j a_j
        pj = gj.p
        lin = gj.rt([sum((ww[a][r][c] * pj[c] for c in range(3)), z) for r in range(3)], "GV")
        cor = [qp * wi[1], -qp * wi[0], z]
        if gj.prismatic:
            gam[j] = b.vec("GV", j, [lin[r] + 2 * cor[r] for r in range(3)]) + [z, z, z]
        else:
            gam[j] = b.vec("GV", j, lin) + b.vec("GW", j, cor)
        # β_j (7.70) = −F_ej − [ω × (ω × MS); ω × (J ω)]
        ms = [p("MX", j), p("MY", j), p("MZ", j)]
        xx, xy, xz, yy, yz, zz = (p(k, j) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
        bl = [-sum((wwj[r][c] * ms[c] for c in range(3)), z) for r in range(3)]
        d11, d22, d33, d12, d13, d23 = dv[0][0], dv[1][1], dv[2][2], dv[0][1], dv[0][2], dv[1][2]
        pis1, pis2, pis3 = b.const(zz - yy, f"PIS1{j}"), b.const(xx - zz, f"PIS2{j}"), b.const(yy - xx, f"PIS3{j}")
        ba = [
            -(yz * (d33 - d22) + pis1 * d23 + xz * d12 - xy * d13),
            -(xz * (d11 - d33) + pis2 * d13 + xy * d23 - yz * d12),
            -(xy * (d22 - d11) + pis3 * d12 + yz * d13 - xz * d23),
        ]
        if wrench and j == n:
            bl = [bl[0] - _v(f"FX{j}"), bl[1] - _v(f"FY{j}"), bl[2] - _v(f"FZ{j}")]
            ba = [ba[0] - _v(f"CX{j}"), ba[1] - _v(f"CY{j}"), ba[2] - _v(f"CZ{j}")]
        beta[j] = bl + ba

    ar = SymbolicArithmetic(model, b, par)
    forward(ar, *_tree(model), accelerations=False, link=first, progress=progress,
            label="direct dynamics, first forward recursion")
    geo = ar.geo
    # ii) backward recursion (7.71–7.75); 𝕀*_j, β*_j start at 𝕀_j, β_j and collect the successors' terms
    istar = {j: _spatial_inertia(lambda k, j=j: p(k, j)) for j in range(1, n + 1)}
    nu: dict[int, _X] = {}
    gk: dict[int, list[_X]] = {}
    jd: dict[int, _X] = {}
    ias: dict[int, list[_X]] = {}
    for j in range(n, 0, -1):
        if progress:
            progress(f"direct dynamics, backward recursion: link {j}/{n}")
        a = ant[j - 1]
        gj = geo[j]
        ax = 2 if gj.prismatic else 5
        ist = istar[j]
        for r in range(6):
            for c in range(r, 6):
                ist[r][c] = ist[c][r] = b.var(f"JA{r + 1}{c + 1}{j}", ist[r][c])
        bs = b.vec("BS", j, beta[j])
        ia = [ist[r][ax] for r in range(6)]
        ias[j] = ia
        iaj = p("Ia", j)
        jh = b.var(f"JH{j}", ia[ax] + iaj)  # H_j (7.71)
        if b.is_const(jh) and jh.evaluate(b.numeric) == 0.0:
            raise ValueError(f"joint {j} ({model.joints[j - 1].name}) moves no inertia and has no rotor inertia: "
                             "the inertia matrix is singular, there is no direct dynamic model")
        jd[j] = b.reciprocal(f"JD{j}", jh)
        qp = _v(f"QP{j}")
        tau = _v(f"QDP{j}") - p("Fc", j) * _sign(qp) - p("Fv", j) * qp  # τ_j (7.82)
        gj_ = gam[j]
        u = b.var(f"TAU{j}", tau + bs[ax] - sum((ia[r] * gj_[r] for r in range(6)), z))
        nu[j] = b.var(f"NU{j}", jd[j] * u)
        if a == 0:
            continue
        gkj = gk[j] = b.vec("GK", j, [ia[r] * jd[j] for r in range(6)])
        kk = [[z] * 6 for _ in range(6)]
        for r in range(6):
            for c in range(r, 6):
                # 𝕂_j a_j = Ia_j GK_j (row and column a_j), else 𝕀*_rc − GK_r (𝕀* a)_c
                e = iaj * gkj[c if r == ax else r] if ax in (r, c) else ist[r][c] - gkj[r] * ia[c]
                kk[r][c] = kk[c][r] = b.var(f"KK{r + 1}{c + 1}{j}", e)
        alpha = b.vec("AL", j, [sum((ist[r][c] * gj_[c] for c in range(6)), z) + ia[r] * nu[j] - bs[r]
                                for r in range(6)])
        _add_screw_congruence(istar[a], gj, kk, "K")  # 7.75
        # 7.74: β*_a −= ^jS_aᵀ α_j = [R α_f; P × (R α_f) + R α_n]
        af = b.vec("AF", j, gj.r(alpha[:3], "AF"))
        an = gj.r(alpha[3:], "AN")
        pf = _cross(gj.p, af)
        beta[a] = [beta[a][r] - af[r] for r in range(3)] + [beta[a][3 + r] - an[r] - pf[r] for r in range(3)]
    # iii) second forward recursion (7.76–7.78), v̇_0 = −g, ω̇_0 = 0
    vp: dict[int, list[_X]] = {0: [-x for x in gs]}
    wp: dict[int, list[_X]] = {0: [z, z, z]}
    qdd: list[_X] = [z] * n
    for j in range(1, n + 1):
        if progress:
            progress(f"direct dynamics, second forward recursion: link {j}/{n}")
        a = ant[j - 1]
        gj = geo[j]
        ax = 2 if gj.prismatic else 5
        wxp = _cross(wp[a], gj.p)
        x = gj.rt([vp[a][r] + wxp[r] for r in range(3)], "VS") + gj.rt(wp[a], "WS")  # 7.76
        x = b.vec("VS", j, x[:3]) + b.vec("WS", j, x[3:])
        if a == 0:
            acc = nu[j] - jd[j] * sum((ias[j][r] * x[r] for r in range(6)), z)
        else:
            acc = nu[j] - sum((gk[j][r] * x[r] for r in range(6)), z)
        qdd[j - 1] = b.var(f"QDD{j}", acc)  # 7.77
        v = [x[r] + gam[j][r] + (qdd[j - 1] if r == ax else z) for r in range(6)]  # 7.78
        vp[j] = b.vec("VP", j, v[:3])
        wp[j] = b.vec("WP", j, v[3:])
    return qdd
