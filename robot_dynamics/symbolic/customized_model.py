"""Customized symbolic models (001 §7.5, SYMORO style): inverse dynamics, gravity, inertia matrix, regressor
and the O(n) direct dynamics of 001 §7.6.2.

The recursion of 001 §7.4.3 (eqs. 7.51–7.61) is expanded into scalar assignments
for one given robot: the Newton–Euler recursion is the one of :mod:`robot_dynamics.dynamics.recursion`
(shared with the NumPy model), run with :class:`SymbolicArithmetic`, whose vectors are expressions that
record statements.  Every element of a vector or matrix that contains an
operation becomes an intermediate variable named like the seed's SYMORO output
(``WI12``, ``W33``, ``WP13``, ``DV123``, ``U112``, ``VSP13``, ``VP13``, ``F13``,
``PIS23``, ``No13``, ``FDI14``, ``E13``, ``N13``, ``GAM1``; 001 Example 7.4 and
Appendix "MOCOM II"); elements without an operation are propagated as they are,
so multiplications by 0 and ±1 and additions of 0 disappear (001 §7.5.2).

* Constant expressions of the geometric and inertial parameters are hoisted
  (the seed's ``*`` lines) and not counted.
* Identical right-hand sides are computed once (hash-consing common subexpressions).
* Variables without effect on the torques are removed by a backward scan.
* Parameters: ``"standard"`` (10 inertial parameters per link), or ``"base"``
  (001 §7.5.3: parameters without effect removed, grouped ones replaced by their
  regrouped value).  ``simplified=True`` additionally treats the inertial
  parameters whose value is zero in the model as structural zeros (001 Table 7.5
  note: diagonal inertia tensors and first moments with zero components).

Operation counts follow the seed: ``a*b*c`` is 2 multiplications, ``x**2`` one,
``-x`` and ``±1·x`` none, ``a + b - c`` two additions; sin/cos and sign are
counted apart; hoisted constants are free.

The program is in MDH coordinates (``QPj``/``QDPj`` the MDH velocity and
acceleration, ``Sj``/``Cj`` the sine/cosine of θ_j, ``Qj`` the prismatic r_j,
``FXn … CZn`` the wrench exerted by link n on the environment, in R_n about O_n).
The direct dynamic model takes the joint torque Γ_j where the others take q̈_j (``QDPj``)
and returns q̈_j (``QDDj``); its divisions ``JDj = 1/H_j`` are :class:`Reciprocal` atoms.

Generation time: the recursions are written once over a small expression type (``_X``) that
applies sympy's automatic simplifications (so the statements and counts are the ones sympy
gives) at a fraction of sympy's cost; the surviving statements are converted to sympy once,
at the end.  Generation is linear in the number of statements (O(n) for inverse, direct
dynamics and gravity, O(n²) for the inertia matrix and the regressor); the base parameters
are computed once per model (memoized on its content) and shared by the programs.

Modules: this module holds the entry points (:func:`customized_inverse_dynamics`,
:func:`customized_gravity_torques`, :func:`customized_inertia_matrix`, :func:`customized_regressor`,
:func:`customized_forward_dynamics`); the pieces are in

* :mod:`~robot_dynamics.symbolic.expressions` — the expression type ``_X`` and :class:`Reciprocal`;
* :mod:`~robot_dynamics.symbolic.program` — :class:`CustomizedModel`, :class:`Statement`, :func:`count_operations`;
* :mod:`~robot_dynamics.symbolic.builder` — zeros and ±1 propagated, constants hoisted, common
  subexpressions, dead code (001 §7.5.2);
* :mod:`~robot_dynamics.symbolic.arithmetic` — :class:`SymbolicArithmetic` and the MDH geometry of a row;
* :mod:`~robot_dynamics.symbolic.parameter_table` — the standard or base parameters of a program (001 §7.5.3);
* :mod:`~robot_dynamics.symbolic.composite_links` — A(q) by composite links (001 §7.6.1);
* :mod:`~robot_dynamics.symbolic.direct_dynamics` — the O(n) direct dynamics (001 §7.6.2).

Every name defined in this module before it was split is importable from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..dynamics.recursion import Kinematics, forward
from .arithmetic import SymbolicArithmetic as SymbolicArithmetic
from .arithmetic import _cross as _cross
from .arithmetic import _exact_trig as _exact_trig
from .arithmetic import _Geometry as _Geometry
from .arithmetic import _gravity_r0 as _gravity_r0
from .arithmetic import _LinkState as _LinkState
from .arithmetic import _newton_euler as _newton_euler
from .arithmetic import _tree as _tree
from .builder import _Builder as _Builder
from .builder import _could_extract_minus_sign as _could_extract_minus_sign
from .builder import _live as _live
from .builder import _rec_sympy as _rec_sympy
from .builder import _Stmt as _Stmt
from .composite_links import _add_screw_congruence as _add_screw_congruence
from .composite_links import _composite_inertia_matrix as _composite_inertia_matrix
from .composite_links import _hat as _hat
from .composite_links import _matmul as _matmul
from .composite_links import _spatial_inertia as _spatial_inertia
from .direct_dynamics import _direct_dynamics as _direct_dynamics
from .expressions import _E0 as _E0
from .expressions import _ONE as _ONE
from .expressions import _X as _X
from .expressions import _ZERO as _ZERO
from .expressions import Reciprocal as Reciprocal
from .expressions import _Atom as _Atom
from .expressions import _Coeff as _Coeff
from .expressions import _mono_mul as _mono_mul
from .expressions import _poly_mul as _poly_mul
from .expressions import _sign as _sign
from .expressions import _sym as _sym
from .expressions import _v as _v
from .parameter_table import _TABLES as _TABLES
from .parameter_table import BaseParameterChoice as BaseParameterChoice
from .parameter_table import _closed_form_base_parameters as _closed_form_base_parameters
from .parameter_table import _model_digest as _model_digest
from .parameter_table import _parameter_symbol_name as _parameter_symbol_name
from .parameter_table import _parameter_table as _parameter_table
from .parameter_table import _parameter_table_uncached as _parameter_table_uncached
from .parameter_table import base_parameter_choice
from .program import CustomizedModel, Statement, count_operations

__all__ = [
    "CustomizedModel",
    "Statement",
    "base_parameter_choice",
    "count_operations",
    "customized_forward_dynamics",
    "customized_gravity_torques",
    "customized_inertia_matrix",
    "customized_inverse_dynamics",
    "customized_regressor",
]

GENERATOR_VERSION = "11"  # 11: direct dynamics (001 §7.6.2), divisions; own expression type, sympy at the end


def _joint_inputs(model: Any) -> list[tuple[int, float, float]]:
    return [(int(jt.sigma), float(jt.sign), float(jt.offset)) for jt in model.joints]


def customized_inverse_dynamics(
    model: Any,
    parameters: str = "base",
    simplified: bool = False,
    wrench: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized symbolic inverse dynamic model of ``model`` (001 §7.5).

    ``parameters``: ``"base"`` (default) or ``"standard"``; ``simplified``: zero-valued
    inertial parameters are structural zeros; ``wrench``: include the wrench
    ``FXn … CZn`` exerted by link n on the environment (as in the seed appendix).
    Rotor inertia and friction terms are included when non-zero in the model.
    """
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    gam = _newton_euler(model, b, par, wrench, progress)
    if progress:
        progress("eliminating dead variables")
    stmts, outs, values, numeric = b.program(gam)
    return CustomizedModel(
        name=model.name, dof=model.dof, statements=stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=wrench, output_shape=(model.dof,),
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
        numeric=numeric,
    )


def _specialized(
    model: Any, kind: str, parameters: str, simplified: bool, progress: Callable[[str], None] | None,
) -> CustomizedModel:
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    n = model.dof
    if kind == "gravity":
        outs = _newton_euler(model, b, par, False, progress, joint_rates=lambda j: (_ZERO, _ZERO))
        shape: tuple[int, ...] = (n,)
    else:
        outs = _composite_inertia_matrix(model, b, par, progress)
        shape = (n, n)
    stmts, souts, values, numeric = b.program(outs)
    return CustomizedModel(
        name=model.name, dof=n, statements=stmts, outputs=souts, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=False, kind=kind, output_shape=shape,
        parameter_names=[sym for sym, _ in table.values()], generation_time=time.perf_counter() - t0,
        numeric=numeric,
    )


def customized_gravity_torques(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the gravity torques Q(q) (NE with q̇ = q̈ = 0)."""
    return _specialized(model, "gravity", parameters, simplified, progress)


def customized_inertia_matrix(
    model: Any, parameters: str = "base", simplified: bool = False, progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized program of the inertia matrix A(q) incl. rotor inertias, by composite links (001 §7.6.1).

    (The Newton–Euler columns of 001 eq. 7.64 cost about twice as many operations: 1523 × vs 719 × for a
    general 12-joint chain.)"""
    return _specialized(model, "inertia_matrix", parameters, simplified, progress)


def _link_wrench_basis(b: _Builder, j: int, kin: Kinematics) -> list[list[_X]]:
    """The wrench [f_j; n_j] of link j at O_j (7.55, 7.56 with n += MS × v̇) per unit standard parameter
    XX XY XZ YY YZ ZZ MX MY MZ M, with the DV and U elements of the forward recursion (cf.
    :meth:`SymbolicArithmetic.link_moment`)."""
    z = _ZERO
    st = kin.state[j]
    dv, u, wp, vp = st.dv, st.u, kin.wd[j], kin.vd[j]
    d11, d22, d33, d12, d13, d23 = dv[0][0], dv[1][1], dv[2][2], dv[0][1], dv[0][2], dv[1][2]
    dd = [b.var(f"DD{k}{j}", e) for k, e in enumerate((d22 - d11, d11 - d33, d33 - d22), start=1)]
    moments = [
        [wp[0], d13, -d12],  # XX
        [-u[2][0], u[2][1], dd[0]],  # XY
        [u[1][0], dd[1], -u[1][2]],  # XZ
        [-d23, wp[1], d12],  # YY
        [dd[2], -u[0][1], u[0][2]],  # YZ
        [d23, -d13, wp[2]],  # ZZ
    ]
    out = [[z, z, z, *m] for m in moments]
    out.append([u[0][0], u[1][0], u[2][0], z, -vp[2], vp[1]])  # MX: U e_1; e_1 × v̇
    out.append([u[0][1], u[1][1], u[2][1], vp[2], z, -vp[0]])  # MY
    out.append([u[0][2], u[1][2], u[2][2], -vp[1], vp[0], z])  # MZ
    out.append([vp[0], vp[1], vp[2], z, z, z])  # M
    return out


def customized_regressor(model: Any, progress: Callable[[str], None] | None = None) -> CustomizedModel:
    """Customized program of the standard-parameter regressor W (n, 13n), URDF column order (001 eq. 9.3).

    Column π of link j, row i (j or an ancestor of j): W_iπ = a_iᵀ ^iS_jᵀ w_j(π) = ζ_{ij}ᵀ w_j(π), with
    w_j(π) the wrench of link j per unit π (:func:`_link_wrench_basis`) and ζ_{ij} = ^jS_i a_i the axis
    of joint i carried to frame j by the motion transforms of 7.23a (ζ_jj = a_j, ζ_{i,k} = ^kS_j ζ_{ij} for
    a successor k of j).  Rotor inertia, Coulomb and viscous friction: q̈_j, sign(q̇_j), q̇_j in row j.
    Outputs are row-major W entries in MDH torque sign (the caller applies ``sign_j`` to row j).
    """
    t0 = time.perf_counter()
    b = _Builder()
    n = model.dof
    ant = [int(a) for a in model.antecedent]
    basis: dict[int, list[list[_X]]] = {}

    def link(j: int, kin: Kinematics) -> None:
        basis[j] = _link_wrench_basis(b, j, kin)

    ar = SymbolicArithmetic(model, b, {})
    forward(ar, *_tree(model), link=link, progress=progress)  # the forward recursion of Newton–Euler
    geo = ar.geo
    unit = {j: [_ZERO] * 6 for j in range(1, n + 1)}
    for j in range(1, n + 1):
        unit[j][2 if geo[j].prismatic else 5] = _ONE
    zeta: dict[tuple[int, int], list[_X]] = {}
    out = [[_ZERO] * (13 * n) for _ in range(n)]
    for j in range(1, n + 1):
        if progress:
            progress(f"regressor: link {j}/{n}")
        zeta[j, j] = unit[j]
        a, gj = ant[j - 1], geo[j]
        while a > 0:  # ^jS_a ζ = [R^T (v + ω × P); R^T ω] (7.23a) for every i = a(j), a(a(j)), ...
            zv, zw = zeta[a, ant[j - 1]][:3], zeta[a, ant[j - 1]][3:]
            wxp = _cross(zw, gj.p)
            zeta[a, j] = (b.vec(f"ZV{a}_", j, gj.rt([zv[r] + wxp[r] for r in range(3)], f"ZV{a}_"))
                          + b.vec(f"ZW{a}_", j, gj.rt(zw, f"ZW{a}_")))
            a = ant[a - 1]
        i = j
        while i > 0:
            zt = zeta[i, j]
            for k, wk in enumerate(basis[j]):
                out[i - 1][13 * (j - 1) + k] = sum((zt[r] * wk[r] for r in range(6)), _ZERO)
            i = ant[i - 1]
        qp = _v(f"QP{j}")
        out[j - 1][13 * (j - 1) + 10: 13 * j] = [_v(f"QDP{j}"), b.var(f"SGN{j}", _sign(qp)), qp]
    outs = [x for row in out for x in row]
    stmts, souts, values, numeric = b.program(outs)
    return CustomizedModel(
        name=model.name, dof=n, statements=stmts, outputs=souts, values=values, joints=_joint_inputs(model),
        parameters="standard", simplified=False, wrench=False, kind="regressor", output_shape=(n, 13 * n),
        parameter_names=list(model.standard_parameter_names), generation_time=time.perf_counter() - t0,
        numeric=numeric,
    )


def customized_forward_dynamics(
    model: Any,
    parameters: str = "base",
    simplified: bool = False,
    wrench: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CustomizedModel:
    """Customized symbolic direct dynamic model q̈ = f(q, q̇, Γ) of ``model`` (001 §7.6.2, O(n)).

    Same builder and options as :func:`customized_inverse_dynamics`; rotor inertia enters H_j (7.71),
    friction makes τ_j = Γ_j − Fc_j sign(q̇_j) − Fv_j q̇_j (7.82).  The program's run-time inputs are
    (q, q̇, Γ) in URDF coordinates: Γ_j arrives in the emitters' third slot (``qdd``, atoms ``QDPj``,
    with the joint sign like an acceleration), so the emitters of :mod:`robot_dynamics.symbolic.codegen` evaluate
    it as ``f(q, qd, tau[, fe])``; outputs are q̈_j (``QDDj``).
    """
    t0 = time.perf_counter()
    b = _Builder()
    table = _parameter_table(model, parameters, simplified, all_symbols=False)
    par = {std: b.param(sym, val) for std, (sym, val) in table.items()}
    qdd = _direct_dynamics(model, b, par, wrench, progress)
    if progress:
        progress("eliminating dead variables")
    stmts, outs, values, numeric = b.program(qdd)
    return CustomizedModel(
        name=model.name, dof=model.dof, statements=stmts, outputs=outs, values=values, joints=_joint_inputs(model),
        parameters=parameters, simplified=simplified, wrench=wrench, kind="forward_dynamics",
        output_shape=(model.dof,), parameter_names=[sym for sym, _ in table.values()],
        generation_time=time.perf_counter() - t0, numeric=numeric,
    )
