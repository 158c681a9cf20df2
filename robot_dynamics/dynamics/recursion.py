"""Newton–Euler, written once: the recursions of 001 §7.4.3 (eqs. 7.47, 7.51–7.61) on a tree, generic over
how their arithmetic is carried out.

This module holds the algorithm: which quantity is computed from which, in which order, over the tree of
antecedents a(j) (Khalil & Kleinfinger: every "j − 1" of 001 is a(j), ^{a(j)}T_j = Rot(z, γ_j) Trans(z, b_j)
Rot(x, α_j) Trans(x, d_j) Rot(z, θ_j) Trans(z, r_j), and the wrench of "link j + 1" in 7.58/7.60 is the sum
over the successors k of j, a(k) = j).  How a 3-vector or a scalar is represented and how the few primitives
of :class:`Arithmetic` are evaluated belongs to the caller:

* :class:`robot_dynamics.dynamics.inverse_dynamics.NumpyArithmetic`: NumPy, component-wise over a batch of
  states (Python floats for one state) — inverse dynamics, gravity and nonlinear effects, the forward pass of
  the regressor, the first pass of both direct dynamics;
* :class:`robot_dynamics.symbolic.customized_model.SymbolicArithmetic`: expressions that record scalar
  statements (the customized models of 001 §7.5: inverse dynamics, gravity, the forward pass of the regressor,
  the first pass of the direct dynamics), which keep their structure-exploiting expansions (U_j of 7.57, the
  DV products, exact zeros and ±1 of the MDH rotations), so their operation counts are those of 001.

The regressors keep their own backward passes, linear in the parameters (001 eq. 9.3): the NumPy one carries
the 10 columns of each link's wrench basis through 7.59–7.60, the symbolic one projects the joint axes forward
(fewer operations); neither is an instance of :func:`backward`, whose wrenches are vectors.

Frames and conventions: quantities of link j are in R_j, a_j = z_j, joint rates q̇_j, q̈_j are MDH rates,
``σ_j`` is 1 for a prismatic joint (``prismatic[j-1]``), v̇_0 = −g (7.47) and ω_0 = ω̇_0 = 0 (fixed base).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Arithmetic", "Kinematics", "backward", "forward", "newton_euler"]

V = TypeVar("V")  # a 3-vector
S = TypeVar("S")  # a scalar
L = TypeVar("L")  # what a backend derives from ω_j, ω̇_j for link j (e.g. U_j of 7.57)


class Arithmetic(Protocol[V, S, L]):
    """The primitives the recursions need; j is a joint (1..n), ``name`` names what a recording backend
    emits (the seed's SYMORO names: ``WI``, ``WP``, ``VSP``, ``VP``, ``F``, ``No``, ``E``, ``N``, ``FDI``,
    ``GAM``); a numeric backend ignores it."""

    def rates(self, j: int) -> tuple[S, S]:
        """(q̇_j, q̈_j) in MDH coordinates."""

    def zero(self) -> V:
        """The zero vector (ω_0, ω̇_0)."""

    def base_acceleration(self) -> V:
        """v̇_0 = −g in R_0 (7.47)."""

    def store(self, name: str, j: int, v: V) -> V:
        """``v`` kept as the quantity ``name`` of link j (a recording backend emits named statements)."""

    def store_scalar(self, name: str, j: int, s: S) -> S:
        """``s`` kept as the scalar ``name`` of joint j."""

    def to_link(self, j: int, v: V, name: str) -> V:
        """^jR_{a(j)} v = Rot(z, −θ_j) Rot(x, −α_j) Rot(z, −γ_j) v."""

    def to_antecedent(self, j: int, v: V, name: str) -> V:
        """^{a(j)}R_j v = Rot(z, γ_j) Rot(x, α_j) Rot(z, θ_j) v."""

    def position_cross(self, j: int, v: V) -> V:
        """^{a(j)}P_j × v."""

    def add(self, u: V, v: V) -> V:
        """u + v."""

    def scale(self, c: int, v: V) -> V:
        """c v for a small integer c."""

    def cross_axis(self, v: V, s: S) -> V:
        """v × (s a_j), a_j = z_j."""

    def add_axis(self, v: V, s: S) -> V:
        """v + s a_j."""

    def axis(self, v: V) -> S:
        """a_jᵀ v."""

    def link_state(self, j: int, w: V, wd: V | None) -> L:
        """Per-link data from ω_j and ω̇_j (None in a velocity pass), used by :meth:`transport` and the
        link wrench (U_j = ω̂̇_j + ω̂_j ω̂_j of 7.57, ω_j ω_jᵀ, or just (ω_j, ω̇_j)); j = 0 is the base."""

    def transport(self, j: int, state_a: L, vd_a: V) -> V:
        """v̇_{a(j)} + U_{a(j)} ^{a(j)}P_j, the bracket of 7.54 (``state_a``: :meth:`link_state` of a(j))."""

    def link_force(self, j: int, state: L, vd: V) -> V:
        """f_tj = M_j v̇_j + U_j MS_j (7.55)."""

    def link_moment(self, j: int, state: L) -> V:
        """I_Oj ω̇_j + ω_j × (I_Oj ω_j): m_tj of 7.56 without MS_j × v̇_j."""

    def ms_cross(self, j: int, vd: V) -> V:
        """MS_j × v̇_j (the remaining term of 7.56)."""

    def external_wrench(self, j: int) -> tuple[V, V] | None:
        """(f_ej, m_ej) exerted by link j on the environment, in R_j about O_j (7.58, 7.60), or None."""

    def joint_terms(self, j: int, tau: S, qd: S, qdd: S) -> S:
        """Γ_j from a_jᵀ(σ_j f_j + σ̄_j m_j): + Fc_j sign(q̇_j) + Fv_j q̇_j + Ia_j q̈_j (7.61, errata 15)."""


@dataclass
class Kinematics(Generic[V, L]):
    """Results of :func:`forward`, indexed by link 0..n (0: the base): ω_j, ^jω_{a(j)} (7.51), ω̇_j, v̇_j
    (None in a velocity pass) and the backend's :meth:`Arithmetic.link_state` of every link."""

    w: list[V] = field(default_factory=list)
    wi: list[V] = field(default_factory=list)
    wd: list[Any] = field(default_factory=list)
    vd: list[Any] = field(default_factory=list)
    state: list[L] = field(default_factory=list)


def forward(
    ar: Arithmetic[V, S, L],
    antecedent: Sequence[int],
    prismatic: Sequence[bool],
    accelerations: bool = True,
    link: Callable[[int, Kinematics[V, L]], None] | None = None,
    progress: Callable[[str], None] | None = None,
    label: str = "forward recursion",
) -> Kinematics[V, L]:
    """The forward recursion (001 eqs. 7.51–7.54, v̇_0 = −g of 7.47) over the tree ``antecedent`` (a(j) < j).

    ``accelerations=False`` gives the velocity pass (7.51–7.52 only; ω̇, v̇ are None), the first pass of
    the direct dynamics.  ``link(j, kin)`` runs as soon as link j is known (its wrench, a regressor block)."""
    n = len(antecedent)
    z = ar.zero()
    kin: Kinematics[V, L] = Kinematics([z], [z], [z], [ar.base_acceleration() if accelerations else None])
    kin.state.append(ar.link_state(0, z, z if accelerations else None))
    for j in range(1, n + 1):
        if progress:
            progress(f"{label}: link {j}/{n}")
        a = antecedent[j - 1]
        qd, qdd = ar.rates(j)
        wi = ar.store("WI", j, ar.to_link(j, kin.w[a], "WI"))  # 7.51
        w = wi if prismatic[j - 1] else ar.store("W", j, ar.add_axis(wi, qd))  # 7.52
        wd = vd = None
        if accelerations:
            wd = ar.to_link(j, kin.wd[a], "WP")
            if not prismatic[j - 1]:
                wd = ar.add_axis(ar.add(wd, ar.cross_axis(wi, qd)), qdd)  # 7.53
            wd = ar.store("WP", j, wd)
        state = ar.link_state(j, w, wd)
        if accelerations:
            vd = ar.to_link(j, ar.store("VSP", j, ar.transport(j, kin.state[a], kin.vd[a])), "VP")  # 7.54
            if prismatic[j - 1]:
                vd = ar.add_axis(ar.add(vd, ar.scale(2, ar.cross_axis(wi, qd))), qdd)
            vd = ar.store("VP", j, vd)
        kin.w.append(w)
        kin.wi.append(wi)
        kin.wd.append(wd)
        kin.vd.append(vd)
        kin.state.append(state)
        if link:
            link(j, kin)
    return kin


def backward(
    ar: Arithmetic[V, S, L],
    antecedent: Sequence[int],
    prismatic: Sequence[bool],
    kin: Kinematics[V, L],
    force: Sequence[V],
    moment: Sequence[V],
    progress: Callable[[str], None] | None = None,
) -> list[S]:
    """The backward recursion (001 eqs. 7.58–7.61) from the link wrenches ``force[j]`` (7.55) and
    ``moment[j]`` (7.56 without MS_j × v̇_j); returns Γ_1..Γ_n."""
    n = len(antecedent)
    children: list[list[int]] = [[] for _ in range(n + 1)]
    for j in range(1, n + 1):
        children[antecedent[j - 1]].append(j)
    m_tot: dict[int, V] = {}
    f_ant: dict[int, V] = {}  # ^{a(j)}f_j (7.59)
    tau: list[Any] = [None] * n
    for j in range(n, 0, -1):
        if progress:
            progress(f"backward recursion: link {j}/{n}")
        f = force[j]
        m = ar.add(moment[j], ar.ms_cross(j, kin.vd[j]))  # 7.56
        ext = ar.external_wrench(j)
        if ext is not None:
            f, m = ar.add(f, ext[0]), ar.add(m, ext[1])
        for k in children[j]:
            f = ar.add(f, f_ant[k])  # 7.58
            m = ar.add(m, ar.add(ar.to_antecedent(k, m_tot[k], "N"), ar.position_cross(k, f_ant[k])))  # 7.60
        f = ar.store("E", j, f)
        m = m_tot[j] = ar.store("N", j, m)
        if antecedent[j - 1] > 0:
            f_ant[j] = ar.store("FDI", j, ar.to_antecedent(j, f, "FDI"))  # 7.59
        qd, qdd = ar.rates(j)
        tau[j - 1] = ar.store_scalar("GAM", j, ar.joint_terms(j, ar.axis(f if prismatic[j - 1] else m), qd, qdd))
    return tau


def newton_euler(
    ar: Arithmetic[V, S, L],
    antecedent: Sequence[int],
    prismatic: Sequence[bool],
    progress: Callable[[str], None] | None = None,
) -> list[S]:
    """Joint efforts Γ_1..Γ_n by Newton–Euler (001 §7.4.3, eqs. 7.47, 7.51–7.61) with ``ar``'s arithmetic."""
    n = len(antecedent)
    force: list[Any] = [None] * (n + 1)
    moment: list[Any] = [None] * (n + 1)

    def link(j: int, kin: Kinematics[V, L]) -> None:
        force[j] = ar.store("F", j, ar.link_force(j, kin.state[j], kin.vd[j]))  # 7.55
        moment[j] = ar.store("No", j, ar.link_moment(j, kin.state[j]))  # 7.56

    kin = forward(ar, antecedent, prismatic, True, link, progress)
    return backward(ar, antecedent, prismatic, kin, force, moment, progress)
