"""Test oracle: the customized Newton–Euler model of the Stäubli RX-90 (001, Appendix "MOCOM II").

A verbatim transcription of the SYMORO+ output printed in the appendix (base inertial
parameters of symmetric links, errata 22 for the operation count): ``QP``/``QDP`` are
the MDH joint velocities/accelerations, ``G3`` the z component of gravity in R0,
``FX6 … CZ6`` the wrench exerted by link 6 on the environment (in R6, about O6) and
``GAM`` the joint torques.  Symbols: ZZ1R, XXR2, ZZR2, MXR2, MY2, XXR3, ZZR3, MYR3,
XXR4, ZZR4, XXR5, ZZR5, MYR5, XXR6, ZZ6, IA3…IA6, d3, RL4.  Only the OCR "–" signs
were replaced by "-" and "X**2" kept as Python.  :func:`base_parameters` maps standard
parameters to these symbols with the regrouping relations of 000 eq. (20) (errata 2)
applied from link 6 down to link 1 (which reproduces the SCEMI steps as corrected by
errata 7).
"""

from __future__ import annotations

import math

import numpy as np

RX90_ALPHA = (0.0, math.pi / 2, 0.0, -math.pi / 2, math.pi / 2, -math.pi / 2)


def base_parameters(std: np.ndarray, ia: np.ndarray, d3: float, rl4: float) -> dict[str, float]:
    """Grouped parameters of the appendix from standard ones ``std`` (6, 10) = XX XY XZ YY YZ ZZ MX MY MZ M.

    Regrouping of a revolute joint j into j-1 (000 eq. 20 with errata 2):
    XXR_j = XX_j - YY_j and YY_j, MZ_j, M_j move to link j-1.
    """
    d = np.array([0.0, 0.0, d3, 0.0, 0.0, 0.0])
    r = np.array([0.0, 0.0, 0.0, rl4, 0.0, 0.0])
    p = np.array(std, dtype=float).copy()  # columns: 0 XX 1 XY 2 XZ 3 YY 4 YZ 5 ZZ 6 MX 7 MY 8 MZ 9 M
    for j in range(5, 0, -1):  # links 6..2 grouped into links 5..1 (0-based j)
        ca, sa = math.cos(RX90_ALPHA[j]), math.sin(RX90_ALPHA[j])
        yy, mz, m = p[j, 3], p[j, 8], p[j, 9]
        dj, rj = d[j], r[j]
        p[j, 0] -= yy  # XXR_j
        p[j, 3] = p[j, 8] = p[j, 9] = 0.0
        k = j - 1
        p[k, 0] += yy + 2 * rj * mz + rj**2 * m
        p[k, 3] += ca**2 * yy + 2 * rj * ca**2 * mz + (dj**2 + rj**2 * ca**2) * m
        p[k, 5] += sa**2 * yy + 2 * rj * sa**2 * mz + (dj**2 + rj**2 * sa**2) * m
        p[k, 1] += dj * sa * mz + dj * rj * sa * m
        p[k, 2] += -dj * ca * mz - dj * rj * ca * m
        p[k, 4] += ca * sa * yy + 2 * rj * ca * sa * mz + rj**2 * ca * sa * m
        p[k, 6] += dj * m
        p[k, 7] += -sa * mz - rj * sa * m
        p[k, 8] += ca * mz + rj * ca * m
        p[k, 9] += m
    # ω_2 · z_2 = q̇_2 for the RX-90 (α2 = π/2), so Ia2 groups with ZZ2; Ia1 with ZZ1 (000 theorem 3)
    out = {
        "ZZ1R": p[0, 5] + ia[0],
        "XXR2": p[1, 0], "ZZR2": p[1, 5] + ia[1], "MXR2": p[1, 6], "MY2": p[1, 7],
        "XXR3": p[2, 0], "ZZR3": p[2, 5], "MYR3": p[2, 7],
        "XXR4": p[3, 0], "ZZR4": p[3, 5],
        "XXR5": p[4, 0], "ZZR5": p[4, 5], "MYR5": p[4, 7],
        "XXR6": p[5, 0], "ZZ6": p[5, 5],
        "IA3": ia[2], "IA4": ia[3], "IA5": ia[4], "IA6": ia[5],
    }  # fmt: skip
    # the grouped parameters the appendix omits (symmetric links) must vanish
    absent = [p[1, 1], p[1, 2], p[1, 4], p[2, 1], p[2, 2], p[2, 4], p[2, 6], p[3, 1], p[3, 2], p[3, 4], p[3, 6],
              p[3, 7], p[4, 1], p[4, 2], p[4, 4], p[4, 6], p[5, 1], p[5, 2], p[5, 4], p[5, 6], p[5, 7]]  # fmt: skip
    if max(abs(x) for x in absent) > 1e-12:
        raise ValueError("standard parameters are not of the symmetric-link form assumed by the appendix")
    return out


def rx90_customized_torques(
    q: np.ndarray, qp: np.ndarray, qdp: np.ndarray, par: dict[str, float], d3: float, RL4: float,  # noqa: N803
    G3: float, wrench: np.ndarray | None = None,  # noqa: N803
) -> np.ndarray:
    """GAM1..GAM6 of the appendix (MDH coordinates, q = θ_j)."""
    S2, S3, S4, S5, S6 = (math.sin(q[k]) for k in range(1, 6))
    C2, C3, C4, C5, C6 = (math.cos(q[k]) for k in range(1, 6))
    QP1, QP2, QP3, QP4, QP5, QP6 = qp
    QDP1, QDP2, QDP3, QDP4, QDP5, QDP6 = qdp
    FX6, FY6, FZ6, CX6, CY6, CZ6 = np.zeros(6) if wrench is None else wrench
    ZZ1R, XXR2, ZZR2, MXR2, MY2 = par["ZZ1R"], par["XXR2"], par["ZZR2"], par["MXR2"], par["MY2"]
    XXR3, ZZR3, MYR3, XXR4, ZZR4 = par["XXR3"], par["ZZR3"], par["MYR3"], par["XXR4"], par["ZZR4"]
    XXR5, ZZR5, MYR5, XXR6, ZZ6 = par["XXR5"], par["ZZR5"], par["MYR5"], par["XXR6"], par["ZZ6"]
    IA3, IA4, IA5, IA6 = par["IA3"], par["IA4"], par["IA5"], par["IA6"]
    No31=QDP1*ZZ1R
    WI12=QP1*S2
    WI22=C2*QP1
    WP12=QDP1*S2 + QP2*WI22
    WP22=C2*QDP1 - QP2*WI12
    DV222=-WI22**2
    DV332=-QP2**2
    DV122=WI12*WI22
    DV132=QP2*WI12
    DV232=QP2*WI22
    U112=DV222 + DV332
    U212=DV122 + QDP2
    U312=DV132 - WP22
    VP12=- G3*S2
    VP22=- C2*G3
    PIS22=XXR2 - ZZR2
    No12=WP12*XXR2 + DV232*ZZR2
    No22=DV132*PIS22
    No32=-DV122*XXR2 + QDP2*ZZR2
    WI13=C3*WI12 + S3*WI22
    WI23=-S3*WI12 + C3*WI22
    W33=QP2 + QP3
    WP13=QP3*WI23 + C3*WP12 + S3*WP22
    WP23=-QP3*WI13 - S3*WP12 + C3*WP22
    WP33=QDP2 + QDP3
    DV113=-WI13**2
    DV333=-W33**2
    DV123=WI13*WI23
    DV133=W33*WI13
    DV233=W33*WI23
    U123=DV123 - WP33
    U223=DV113 + DV333
    U323=DV233 + WP13
    VSP13=d3*U112 + VP12
    VSP23=d3*U212 + VP22
    VSP33=d3*U312
    VP13=C3*VSP13 + S3*VSP23
    VP23=-S3*VSP13 + C3*VSP23
    F13=MYR3*U123
    F23=MYR3*U223
    F33=MYR3*U323
    PIS23=XXR3 - ZZR3
    No13=WP13*XXR3 + DV233*ZZR3
    No23=DV133*PIS23
    No33=-DV123*XXR3 + WP33*ZZR3
    WI14=-S4*W33 + C4*WI13
    WI24=-C4*W33 - S4*WI13
    W34=QP4 + WI23
    WP14=QP4*WI24 + C4*WP13 - S4*WP33
    WP24=-QP4*WI14 - S4*WP13 - C4*WP33
    WP34=QDP4 + WP23
    DV124=WI14*WI24
    DV134=W34*WI14
    DV234=W34*WI24
    VSP14=RL4*U123 + VP13
    VSP24=RL4*U223 + VP23
    VSP34=RL4*U323 + VSP33
    VP14=C4*VSP14 - S4*VSP34
    VP24=-S4*VSP14 - C4*VSP34
    PIS24=XXR4 - ZZR4
    No14=WP14*XXR4 + DV234*ZZR4
    No24=DV134*PIS24
    No34=-DV124*XXR4 + WP34*ZZR4
    WI15=S5*W34 + C5*WI14
    WI25=C5*W34 - S5*WI14
    W35=QP5 - WI24
    WP15=QP5*WI25 + C5*WP14 + S5*WP34
    WP25=-QP5*WI15 - S5*WP14 + C5*WP34
    WP35=QDP5 - WP24
    DV115=-WI15**2
    DV335=-W35**2
    DV125=WI15*WI25
    DV135=W35*WI15
    DV235=W35*WI25
    U125=DV125 - WP35
    U225=DV115 + DV335
    U325=DV235 + WP15
    VP15=C5*VP14 + S5*VSP24
    F15=MYR5*U125
    F25=MYR5*U225
    F35=MYR5*U325
    PIS25=XXR5 - ZZR5
    No15=WP15*XXR5 + DV235*ZZR5
    No25=DV135*PIS25
    No35=-DV125*XXR5 + WP35*ZZR5
    WI16=-S6*W35 + C6*WI15
    WI26=-C6*W35 - S6*WI15
    W36=QP6 + WI25
    WP16=QP6*WI26 + C6*WP15 - S6*WP35
    WP36=QDP6 + WP25
    DV126=WI16*WI26
    DV136=W36*WI16
    DV236=W36*WI26
    PIS26=XXR6 - ZZ6
    No16=WP16*XXR6 + DV236*ZZ6
    No26=DV136*PIS26
    No36=-DV126*XXR6 + WP36*ZZ6
    N16=CX6 + No16
    N26=CY6 + No26
    N36=CZ6 + No36
    FDI16=C6*FX6 - FY6*S6
    FDI36=-C6*FY6 - FX6*S6
    E15=F15 + FDI16
    E25=F25 + FZ6
    E35=F35 + FDI36
    N15=C6*N16 + No15 - N26*S6 - MYR5*VP24
    N25=N36 + No25
    N35=-(C6*N26) + No35 - N16*S6 - MYR5*VP15
    FDI15=C5*E15 - E25*S5
    FDI35=C5*E25 + E15*S5
    N14=C5*N15 + No14 - N25*S5
    N24=-N35 + No24
    N34=C5*N25 + No34 + N15*S5
    FDI14=C4*FDI15 + E35*S4
    FDI34=C4*E35 - FDI15*S4
    E13=F13 + FDI14
    E23=F23 + FDI35
    E33=F33 + FDI34
    N13=C4*N14 + No13 + FDI34*RL4 - N24*S4 + MYR3*VSP33
    N23=N34 + No23
    N33=-(C4*N24) + No33 - FDI14*RL4 - N14*S4 - MYR3*VP13
    FDI23=C3*E23 + E13*S3
    N12=C3*N13 + No12 - N23*S3
    N22=-(d3*E33) + C3*N23 + No22 + N13*S3
    N32=d3*FDI23 + N33 + No32 - MY2*VP12 + MXR2*VP22
    N31=C2*N22 + No31 + N12*S2
    GAM1=N31
    GAM2=N32
    GAM3=N33 + IA3*QDP3
    GAM4=N34 + IA4*QDP4
    GAM5=N35 + IA5*QDP5
    GAM6=N36 + IA6*QDP6
    return np.array([GAM1, GAM2, GAM3, GAM4, GAM5, GAM6])
