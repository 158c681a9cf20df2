"""Coupled rotor inertia in the regressor and the base parameters (issue 30): a coupled transmission identified
without a residual model error.

Model
-----
A transmission ``q = J_qm q_m``, ``J_qm = K diag(N)⁻¹`` (001 eq. 7.31, :mod:`robot_dynamics.model.transmission`)
gives the rotors' inertia referred to the joint side (001 eq. 7.29 generalised; q̇_mk = N_k h_kᵀ q̇)::

    I_a = J_qm⁻ᵀ diag(J_m) J_qm⁻¹ = Σ_k Iam_k h_k h_kᵀ,      Iam_k = N_k² J_mk,   h_kᵀ = row k of K⁻¹

Its diagonal is the standard ``Ia_j`` of 001 eq. 7.61 (a parameter of every joint already).  Its off-diagonal part
``I_c`` (:attr:`~robot_dynamics.model.robot_model.RobotModel.rotor_coupling`) comes from the *coupled motors* only —
those whose h_k has two or more non-zero entries: the motor turns with several joints — and is linear in their
``Iam_k``.  So the inverse dynamic model, linear in the standard parameters x (001 eq. 9.3), becomes::

    Γ = W(q, q̇, q̈) x + Σ_k c_k(q̈) Iam_k,      c_k(q̈) = offdiag(h_k h_kᵀ) q̈

one extra standard parameter per coupled motor, ``Iam<k>`` = N_k² J_mk (kg m²: the rotor inertia of motor k
referred to its gear output, as in 7.29), after the 13 n of 7.61; ``c_k`` is its regressor column.  A coupled wrist
(q6 = q_m6/N6 + c q_m5/N5, so h_6 = (0, 0, 0, 0, −c, 1)): Γ5 += −c Iam6 q̈6, Γ6 += −c Iam6 q̈5, I_a,56 = −c N6² J_m6.
An estimate is written back as the motor inertia ``J_mk = Iam_k / N_k²`` of the model's transmission, ``Ia``
untouched (:func:`model_with_coupled_rotor`), so the model's dynamics, its YAML and the MuJoCo plant carry it.

Identifiability and the shapes supported: ``c_k`` is linear in q̈ with constant coefficients, so the columns of the
coupled motors are dependent for all data exactly when the matrices ``P_k = offdiag(h_k h_kᵀ)`` are.  Independent
P_k (a coupled wrist; PUMA's three-joint wrist) are supported; dependent ones (a differential: two motors turning the
same joints in fixed ratios) are refused with one ``ValueError`` naming the motors (:func:`coupled_rotor_patterns`).

Base parameters (:func:`coupled_base_parameters`): the closed-form base parameters of 000 (the 7.61 model) plus the
``c_k``, each tested on a stacked regressor of random states (columns in units of the robot's length, Iam like Ia;
threshold ``IDENTIFIABLE_RTOL · σ_max`` as the identifiability rank of :mod:`.base_rank`):

* independent: ``Iam<k>`` is a base parameter of its own (relation ``Iam<k>``), appended after those of 000;
* in the span of the inertial base columns: grouped into them only when every coefficient is an integer multiple of
  the coupling product ``s_k = max |h_ki h_kj|`` (exact numbers of the transmission, never fitted floats; e.g. a belt
  drive over parallel axes, q̇_m2 = N2 (q̇1 + q̇2): c_2 = W_ZZR2 − W_ZZR1 − W_Ia2, so ZZR2 += Iam2, ZZR1 −= Iam2,
  Ia2 −= Iam2), never into friction; the base parameters receiving it get the ``R`` of a grouped parameter;
* otherwise kept as a separate parameter with a note (the fit then names the null direction).

Motor friction of a coupled motor (F_vm, F_cm of the transmission) is not modelled: the model's dynamics has none
(the joint-side Fc, Fv are identified as before).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.data import INERTIAL_NAMES
from ..model.mdh import PRISMATIC
from ..model.transmission import Transmission
from .base_rank import IDENTIFIABLE_RTOL, column_weights

__all__ = [
    "COUPLED_PREFIX",
    "CoupledBaseParameters",
    "coupled_base_parameters",
    "coupled_motors",
    "coupled_rotor_names",
    "coupled_rotor_patterns",
    "coupled_rotor_regressor",
    "coupled_rotor_values",
    "model_with_coupled_base_parameters",
    "model_with_coupled_rotor",
]

COUPLED_PREFIX = "Iam"  # Iam<k>: N_k² J_mk of a coupled motor k (1-based, the gear output of joint k)
COUPLING_RTOL = 1e-12  # an entry of h_k below this fraction of its largest is a round-off zero (K⁻¹ by a solve)
PATTERN_RTOL = 1e-9  # σ_min/σ_max of the stacked patterns P_k under which they are dependent (a differential)
_KINDS = INERTIAL_NAMES + ("Ia", "Fc", "Fv")
_FRICTION = (11, 12)  # Fc, Fv among the 13 standard parameters of a link


def _rows(tr: Transmission) -> np.ndarray:
    """h_kᵀ = row k of K⁻¹ = row k of J_qm⁻¹ / N_k (q̇_mk = N_k h_kᵀ q̇)."""
    return np.asarray(tr.inverse_jacobian, float) / np.asarray(tr.gear_ratio, float)[:, None]


def coupled_motors(transmission: Transmission | None) -> list[int]:
    """Indices (0-based) of the motors that turn with several joints (h_k with >= 2 non-zero entries)."""
    if transmission is None or not transmission.is_coupled:
        return []
    out = []
    for k, row in enumerate(np.abs(_rows(transmission))):
        if int(np.sum(row > COUPLING_RTOL * row.max())) >= 2:
            out.append(k)
    return out


def coupled_rotor_names(model: Any) -> list[str]:
    """``Iam<k>`` of each coupled motor of ``model.transmission`` (empty without a coupled transmission)."""
    return [f"{COUPLED_PREFIX}{k + 1}" for k in coupled_motors(getattr(model, "transmission", None))]


def coupled_rotor_patterns(model: Any) -> np.ndarray:
    """P_k = offdiag(h_k h_kᵀ) of the coupled motors, (m, n, n); ``ValueError`` when they are linearly dependent
    (their Iam_k could not be identified separately by any data: module docstring)."""
    tr = model.transmission
    motors = coupled_motors(tr)
    h = _rows(tr) if motors else np.zeros((0, model.dof))
    pats = np.array([np.outer(h[k], h[k]) for k in motors]).reshape(len(motors), model.dof, model.dof)
    pats[:, np.arange(model.dof), np.arange(model.dof)] = 0.0
    if len(motors) > 1:
        iu = np.triu_indices(model.dof, 1)
        _, s, vt = np.linalg.svd(np.array([p[iu] for p in pats]).T, full_matrices=False)
        if s[-1] <= PATTERN_RTOL * s[0]:
            v = np.abs(vt[-1])
            who = [motors[i] for i in np.flatnonzero(v >= 0.1 * v.max())]
            names = ", ".join(f"{COUPLED_PREFIX}{k + 1}" for k in who)
            joints = ", ".join(tr.joint_names[k] for k in who)
            raise ValueError(
                f"coupled transmission not supported: the motors of {joints} turn the same joints in fixed ratios "
                f"(a differential: their off-diagonal rotor inertia patterns offdiag(h_k h_kᵀ), h_k = row k of the "
                f"coupling's inverse, are linearly dependent), so their coupled rotor inertias {names} cannot be "
                "identified separately by any data; supported: coupled motors with independent patterns "
                "(e.g. a coupled wrist, q6 = q_m6/N6 + c q_m5/N5)")
    return pats


def coupled_rotor_values(model: Any) -> np.ndarray:
    """Iam_k = N_k² J_mk of the coupled motors of ``model.transmission`` (m,)."""
    tr = model.transmission
    motors = coupled_motors(tr)
    if not motors:
        return np.zeros(0)
    return np.array([tr.gear_ratio[k] ** 2 * tr.motor_inertia[k] for k in motors], dtype=float)


def coupled_rotor_regressor(model: Any, qdd: Any, patterns: np.ndarray | None = None) -> np.ndarray:
    """The columns c_k(q̈) = P_k q̈ of the coupled motors: (n, m) or (N, n, m), URDF joint order."""
    pats = coupled_rotor_patterns(model) if patterns is None else patterns
    qdd = model.check_joint_vector(qdd, "qdd")
    return np.einsum("kij,...j->...ik", pats, qdd)


# ----------------------------------------------------------------- base parameters
@dataclass
class CoupledBaseParameters:
    """Base parameters of 000 (``base``) extended by the coupled rotor inertias (module docstring).

    ``names``: the base names (a trailing ``R`` on those receiving an Iam) then the ``Iam<k>`` kept;
    ``matrix`` (b, 13 n + m): ``values = matrix @ standard_values`` over the extended standard vector
    (13 n standard parameters of 7.61, then the Iam of :func:`coupled_rotor_names`); ``grouped``: Iam name ->
    {base name: coefficient} for an Iam grouped into base parameters; ``notes``: what was decided."""

    base: Any = field(repr=False)
    model: Any = field(repr=False)
    names: list[str]
    matrix: np.ndarray
    coupled_names: list[str]
    patterns: np.ndarray = field(repr=False)
    kept: list[int]  # indices (into coupled_names) of the Iam that are base parameters of their own
    grouped: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def method(self) -> str:
        return f"{self.base.method} + coupled rotor inertia"

    @property
    def eliminated(self) -> list[str]:
        return list(self.base.eliminated)

    @property
    def numerical(self) -> list[str]:
        return list(getattr(self.base, "numerical", []))

    @property
    def standard_names(self) -> list[str]:
        """The extended standard parameters: XX1 … Fv<n>, then Iam<k>."""
        return list(self.model.standard_parameter_names) + list(self.coupled_names)

    @property
    def standard_values(self) -> np.ndarray:
        return np.concatenate([self.model.standard_parameter_values, coupled_rotor_values(self.model)])

    @property
    def values(self) -> np.ndarray:
        return self.matrix @ self.standard_values

    @property
    def relations(self) -> list[Any]:
        """The relations of 000 with the Iam terms (sympy)."""
        import sympy as sp

        nb0 = len(self.base.names)
        extra = self.matrix[:nb0, -len(self.coupled_names):] if self.coupled_names else np.zeros((nb0, 0))
        syms = [sp.Symbol(nm, real=True) for nm in self.coupled_names]
        out = []
        for b, rel in enumerate(self.base.relations):
            terms = [(sp.Integer(int(c)) if float(c).is_integer() else sp.Float(c, 15)) * s
                     for c, s in zip(extra[b], syms, strict=True) if c != 0.0]
            out.append(sp.Add(rel, *terms) if terms else rel)
        return out + [syms[i] for i in self.kept]

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        """W_b: the base regressor of 000 then the columns of the Iam kept, ``W_b @ values`` = the model's
        inverse dynamics with ``I_c q̈`` (minus the optional Stribeck/offset friction): (n, b) or (N, n, b)."""
        w = np.asarray(self.base.regressor(q, qd, qdd) if gravity is None else
                       self.base.regressor(q, qd, qdd, gravity=gravity))
        if not self.kept:
            return w
        c = coupled_rotor_regressor(self.model, qdd, self.patterns)[..., self.kept]
        return np.concatenate([w, c], axis=-1)

    def standard_regressor(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        """[W | c_1 … c_m] over the extended standard vector (001 eq. 9.3 plus the module's columns)."""
        w = np.asarray(self.model.regressor(q, qd, qdd))
        return np.concatenate([w, coupled_rotor_regressor(self.model, qdd, self.patterns)], axis=-1)

    def table(self) -> str:
        w = max([4] + [len(n) for n in self.names])
        lines = [f"{'name':<{w}}  {'value':>14}  relation", "-" * (w + 28)]
        lines += [f"{nm:<{w}}  {v:>14.6g}  {r}" for nm, v, r in zip(self.names, self.values, self.relations, strict=True)]
        return "\n".join(lines)


def _random_states(model: Any, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States of :func:`~.base_rank.stacked_regressor`: q in [-π, π] (prismatic [-1, 1] m), q̇, q̈ in [-2, 2]."""
    n = model.dof
    rng = np.random.default_rng(seed)
    span = np.where(model.sigma == PRISMATIC, 1.0, math.pi)
    return (rng.uniform(-1.0, 1.0, (samples, n)) * span, rng.uniform(-2.0, 2.0, (samples, n)),
            rng.uniform(-2.0, 2.0, (samples, n)))


def coupled_base_parameters(model: Any, base: Any = None, samples: int = 32, seed: int = 0) -> Any:
    """The base parameters of ``model`` with its coupled rotor inertias (module docstring); ``base``: those of 000
    (default ``model.base_parameters()``).  A model without a coupled transmission gets ``base`` itself (the same
    object: same names, values, regressor).  ``ValueError`` for a transmission whose coupled motors cannot be
    identified separately (:func:`coupled_rotor_patterns`)."""
    names = coupled_rotor_names(model)
    if not names:
        return model.base_parameters() if base is None else base
    base = model.base_parameters() if base is None else base
    pats = coupled_rotor_patterns(model)
    n, m, nb0 = model.dof, len(names), len(base.names)
    q, qd, qdd = _random_states(model, samples, seed)
    wb = np.asarray(base.regressor(q, qd, qdd)).reshape(samples * n, nb0)
    wc = coupled_rotor_regressor(model, qdd, pats).reshape(samples * n, m)
    dw = column_weights(model)
    cols = np.asarray(base.columns, int)
    wt_b, wt_c = dw[cols], dw[10]  # length scaling: base columns as their standard column, Iam as Ia
    thr = IDENTIFIABLE_RTOL * float(np.linalg.norm(np.hstack([wb * wt_b, wc * wt_c]), 2))
    # basis: the inertial base columns (never friction), then the Iam kept so far
    basis: list[tuple[str, int]] = [("b", i) for i in range(nb0) if int(cols[i]) % 13 not in _FRICTION]
    extra = np.zeros((nb0, m))
    kept: list[int] = []
    grouped: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    new_names = list(base.names)
    for k in range(m):
        a_s = np.column_stack([wb[:, i] * wt_b[i] if kind == "b" else wc[:, i] * wt_c for kind, i in basis])
        wts = np.array([wt_b[i] if kind == "b" else wt_c for kind, i in basis])
        v = wc[:, k] * wt_c
        coef = np.linalg.lstsq(a_s, v, rcond=None)[0]
        r_fit = float(np.linalg.norm(v - a_s @ coef))
        if r_fit > thr * math.sqrt(1.0 + float(coef @ coef)):
            kept.append(k)
            basis.append(("c", k))
            notes.append(f"{names[k]}: a base parameter of its own (coupled rotor inertia, N² J_m of that motor)")
            continue
        s = float(np.abs(pats[k]).max())
        ints = np.round(coef * wts / wt_c / s)  # unscaled coefficients in units of the coupling product s_k
        exact = ints * s * wt_c / wts
        r_int = float(np.linalg.norm(v - a_s @ exact))
        if np.any(ints != 0) and r_int <= 2.0 * r_fit + thr * math.sqrt(1.0 + float(exact @ exact)):
            into: dict[str, float] = {}
            for (kind, i), c in zip(basis, ints * s, strict=True):
                if c == 0.0:
                    continue
                if kind == "c":  # another Iam kept: c_k = c · c_i (+ base columns)
                    into[names[i]] = float(c)
                    continue
                extra[i, k] = float(c)
                col = int(cols[i])
                new_names[i] = f"{_KINDS[col % 13]}R{col // 13 + 1}"
                into[base.names[i]] = float(c)
            grouped[names[k]] = into
            notes.append(f"{names[k]}: its column is exactly " + " ".join(f"{c:+.6g}·{t}" for t, c in into.items())
                         + f" (integer multiples of the coupling product {s:.6g}): grouped, no parameter of its own")
            continue
        kept.append(k)
        basis.append(("c", k))
        notes.append(f"{names[k]}: numerically dependent on the base columns (σ < {IDENTIFIABLE_RTOL:g} σ_max) "
                     "without integer coefficients: kept as a separate parameter (not identifiable from any data)")
    # coupled-on-coupled groupings: move the Iam coefficient onto the Iam kept
    ns = 13 * n
    rows_c = np.zeros((len(kept), ns + m))
    for r, k in enumerate(kept):
        rows_c[r, ns + k] = 1.0
    for nm, into in grouped.items():
        k = names.index(nm)
        for t, c in into.items():
            if t in names:
                rows_c[kept.index(names.index(t)), ns + k] += c
    top = np.hstack([np.asarray(base.matrix, float), extra])
    matrix = np.vstack([top, rows_c])
    out_names = [new_names[i] for i in range(nb0)] + [names[k] for k in kept]
    # relation renames: the grouped 000 names (Ia2 -> IaR2) must stay unique
    if len(set(out_names)) != len(out_names):
        raise RuntimeError(f"coupled rotor inertia: duplicate base names {out_names}")
    return CoupledBaseParameters(base, model, out_names, matrix, names, pats, kept, grouped,
                                 list(getattr(base, "notes", [])) + notes)


# ----------------------------------------------------------------- write-back
def model_with_coupled_rotor(model: Any, values: Mapping[str, float] | Sequence[float]) -> Any:
    """``model`` whose transmission has the motor inertias ``J_mk = Iam_k / N_k²`` of the coupled motors named in
    ``values`` ({``Iam<k>``: value}, or one value per :func:`coupled_rotor_names`); ``Ia`` and every other motor
    inertia unchanged.  ``ValueError`` for an unknown name or a negative value (a rotor inertia)."""
    names = coupled_rotor_names(model)
    items = dict(values) if isinstance(values, Mapping) else dict(zip(names, values, strict=True))
    unknown = sorted(set(items) - set(names))
    if unknown:
        raise ValueError(f"{unknown}: not a coupled rotor inertia of this model (its coupled motors: {names or 'none'})")
    if not items:
        return model
    tr = model.transmission
    jm = np.array(tr.motor_inertia, dtype=float)
    for nm, v in items.items():
        k = int(nm[len(COUPLED_PREFIX):]) - 1
        v = float(v)
        if not math.isfinite(v) or v < 0.0:
            raise ValueError(f"{nm} = {v:.6g}: a rotor inertia is never negative (the motor inertia J_m{k + 1} = "
                             f"{nm} / N{k + 1}² of the transmission)")
        jm[k] = v / float(tr.gear_ratio[k]) ** 2
    new = Transmission(tr.joint_names, tr.gear_ratio, tr.coupling, jm, tr.motor_viscous, tr.motor_coulomb)
    return model.replace(transmission=new)


def model_with_coupled_base_parameters(model: Any, names: Sequence[str], values: Any,
                                       base: CoupledBaseParameters | None = None) -> Any:
    """A copy of ``model`` whose extended base parameters (:func:`coupled_base_parameters`) are ``values`` (by name,
    any order): the minimum-norm change of the extended standard vector, ``x = x_nom + K⁺ (β̂ − K x_nom)`` (an Iam
    grouped into others, so not identifiable, stays nominal), then written back (standard parameters, and the Iam
    as motor inertias: :func:`model_with_coupled_rotor`)."""
    cb = coupled_base_parameters(model) if base is None else base
    vals = np.asarray(values, float)
    names = list(names)
    if vals.shape != (len(names),) or not np.all(np.isfinite(vals)):
        raise ValueError(f"{len(names)} finite values expected, got shape {vals.shape}")
    if sorted(names) != sorted(cb.names):
        raise ValueError(f"base parameter names do not match the model's (differences: "
                         f"{sorted(set(names) ^ set(cb.names))})")
    target = vals[[names.index(nm) for nm in cb.names]]
    k = np.asarray(cb.matrix, float)
    x_nom = cb.standard_values
    ns = 13 * model.dof
    # an Iam grouped into other base parameters (not identifiable) keeps its nominal value: the change goes to
    # the standard parameters and the Iam kept (K restricted to them still has full row rank)
    free = np.r_[np.arange(ns), ns + np.asarray(cb.kept, int)]
    x = x_nom.copy()
    x[free] += np.linalg.pinv(k[:, free]) @ (target - k @ x_nom)
    out = model.with_standard_parameters(x[:ns])
    return model_with_coupled_rotor(out, dict(zip(cb.coupled_names, x[ns:], strict=True)))
