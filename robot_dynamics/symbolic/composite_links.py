"""The inertia matrix A(q) by composite links (001 §7.6.1, its Appendix 8 method) on expressions.

The spatial inertia of a link (001 eq. 7.21) and the screw congruence ^jS_{a(j)}ᵀ 𝕂 ^jS_{a(j)} (7.75 with the
motion transform of 7.23a) that carries a 6x6 inertia to the antecedent link; the direct dynamics
(:mod:`~robot_dynamics.symbolic.direct_dynamics`) uses the same congruence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .arithmetic import _cross, _Geometry
from .builder import _Builder
from .expressions import _X, _ZERO


def _spatial_inertia(p: Callable[[str], _X]) -> list[list[_X]]:
    """^j𝕀_j of 001 eq. 7.21, ordering [v; ω] / [f; m], about O_j in R_j (symmetric 6x6)."""
    xx, xy, xz, yy, yz, zz = (p(k) for k in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"))
    mx, my, mz, m = p("MX"), p("MY"), p("MZ"), p("M")
    return [
        [m, _ZERO, _ZERO, _ZERO, mz, -my],
        [_ZERO, m, _ZERO, -mz, _ZERO, mx],
        [_ZERO, _ZERO, m, my, -mx, _ZERO],
        [_ZERO, -mz, my, xx, xy, xz],
        [mz, _ZERO, -mx, xy, yy, yz],
        [-my, mx, _ZERO, xz, yz, zz],
    ]


def _hat(v: list[_X]) -> list[list[_X]]:
    return [[_ZERO, -v[2], v[1]], [v[2], _ZERO, -v[0]], [-v[1], v[0], _ZERO]]


def _matmul(a: list[list[_X]], b: list[list[_X]]) -> list[list[_X]]:
    return [[sum((a[r][k] * b[k][c] for k in range(3)), _ZERO) for c in range(3)] for r in range(3)]


def _add_screw_congruence(tgt: list[list[_X]], gj: _Geometry, kk: list[list[_X]], prefix: str) -> None:
    """``tgt += ^jS_{a(j)}ᵀ 𝕂 ^jS_{a(j)}`` for a symmetric 6x6 𝕂 in R_j (7.75; composite inertias).

    ^jS_a = diag(Rᵀ, Rᵀ) T with T = [[1, −P̂], [0, 1]] (7.23a), so with the blocks of R 𝕂 Rᵀ (rotated by
    :meth:`_Geometry.congruence`) [[A, B], [Bᵀ, C]]: Tᵀ [[A, B], [Bᵀ, C]] T = [[A, B − A P̂], [·, C + P̂ (B − A P̂) − Bᵀ P̂]]."""
    b, j = gj.b, gj.j
    ka = gj.congruence([row[:3] for row in kk[:3]], f"{prefix}A", True)
    kb = gj.congruence([row[3:] for row in kk[:3]], f"{prefix}B", False)
    kc = gj.congruence([row[3:] for row in kk[3:]], f"{prefix}C", True)
    ph = _hat(gj.p)
    apm = _matmul(ka, ph)
    kb2 = [[b.var(f"{prefix}T{r + 1}{c + 1}{j}", kb[r][c] - apm[r][c]) for c in range(3)] for r in range(3)]
    e1 = _matmul(ph, kb2)
    e2 = _matmul([[kb[c][r] for c in range(3)] for r in range(3)], ph)
    for r in range(3):
        for c in range(3):
            if c >= r:
                tgt[r][c] = tgt[r][c] + ka[r][c]
                tgt[3 + r][3 + c] = tgt[3 + r][3 + c] + kc[r][c] + e1[r][c] - e2[r][c]
            tgt[r][3 + c] = tgt[r][3 + c] + kb2[r][c]
    for r in range(6):
        for c in range(r):
            tgt[r][c] = tgt[c][r]


def _composite_inertia_matrix(
    model: Any, b: _Builder, par: dict[str, _X], progress: Callable[[str], None] | None,
) -> list[_X]:
    """A(q) incl. the rotor inertias by composite links (001 §7.6.1, its Appendix 8 method), row-major n x n.

    𝕀c_j = 𝕀_j + Σ_{a(k)=j} ^kS_jᵀ 𝕀c_k ^kS_j (7.75 with 𝕂 = 𝕀c); column j: the wrench F = 𝕀c_j a_j carried
    to each ancestor i by F ← ^kS_{a(k)}ᵀ F gives A_ij = a_iᵀ F, and A_jj = a_jᵀ 𝕀c_j a_j + Ia_j."""
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    geo = {j: _Geometry(b, model, j) for j in range(1, n + 1)}
    ic = {j: _spatial_inertia(lambda k, j=j: par.get(f"{k}{j}", _ZERO)) for j in range(1, n + 1)}
    axis = {j: 2 if geo[j].prismatic else 5 for j in range(1, n + 1)}
    for j in range(n, 0, -1):
        if progress:
            progress(f"inertia matrix, composite links: link {j}/{n}")
        m = ic[j]
        for r in range(6):
            for c in range(r, 6):
                m[r][c] = m[c][r] = b.var(f"JC{r + 1}{c + 1}{j}", m[r][c])
        if ant[j - 1] > 0:
            _add_screw_congruence(ic[ant[j - 1]], geo[j], m, "IC")
    out = [[_ZERO] * n for _ in range(n)]
    for j in range(1, n + 1):
        if progress:
            progress(f"inertia matrix: column {j}/{n}")
        f = [ic[j][r][axis[j]] for r in range(6)]
        out[j - 1][j - 1] = b.var(f"AJ{j}{j}", f[axis[j]] + par.get(f"Ia{j}", _ZERO))
        i = j
        while ant[i - 1] > 0:  # ^iS_{a(i)}ᵀ F = [R f; P × (R f) + R m]
            gi = geo[i]
            ff = b.vec("FC", i, gi.r(f[:3], "FC"))
            fm = gi.r(f[3:], "MC")
            pf = _cross(gi.p, ff)
            i = ant[i - 1]
            f = ff + b.vec("MC", i, [fm[r] + pf[r] for r in range(3)])
            out[i - 1][j - 1] = out[j - 1][i - 1] = f[axis[i]]
    return [x for row in out for x in row]
