"""Robots with elastic joints (001 §7.3.8, eqs. 7.34–7.35; [Khalil 78], [Spong 87]).

Each joint j is a linear torsional (revolute) or linear (prismatic) spring of stiffness k_j between
the link coordinate q_j and the rotor position q_Mj reflected through the gear ratio (joint side,
URDF coordinates and units).  The potential energy of the springs is 7.34,
U_k = ½ (q − q_M)ᵀ k (q − q_M) with k = diag(k_j) (the seed allows a full SPD matrix; here diagonal),
and the Lagrange equations give 7.35::

    A(q) q̈ + C(q, q̇) q̇ + Q(q) + k (q − q_M) + diag(q̇) F_v + diag(sign q̇) F_c = 0          [7.35a]
    I_a q̈_M + diag(q̇_M) F_vm + diag(sign q̇_M) F_cm − k (q − q_M) = Γ                    [7.35b]

so the spring delivers the joint torque τ_J = k (q_M − q) to the link (the "Γ" of the rigid model)
and Γ is the motor effort (joint side).  In the code ``theta`` is q_M.

**Rotor inertia (not counted twice).**  The rigid model's ``Ia`` is the rotor inertia added to the
diagonal of A (001 §7.3.3, errata 34).  With elastic joints the rotor is on the other side of the
spring: A in 7.35a is the *link* inertia matrix (``model.inertia_matrix(q) − diag(model.Ia)``) and the
rotor inertia is the I_a of 7.35b, :attr:`ElasticJoints.motor_inertia` (default: the model's ``Ia``,
which then moves from the link side to the motor side).  A model whose ``Ia`` holds the rotor inertia
is thus the *rigid equivalent* of the elastic robot (k → ∞: A + I_a).

**Friction.**  The link side keeps the model's joint friction (``Fv``, ``Fc`` and the optional
Stribeck/offset terms, 7.35a); the motor side has the actuator and transmission friction F_vm, F_cm of
7.35b (:attr:`ElasticJoints.motor_damping`, :attr:`ElasticJoints.motor_coulomb`).

**Inverse dynamics (flat output).**  q is a flat output: from a link trajectory q(t) with its
derivatives up to the 4th order, 7.35a gives the spring torque and the motor position,

    τ_J = A q̈ + H(q, q̇)           θ = q + k⁻¹ τ_J         θ̇ = q̇ + k⁻¹ τ̇_J        θ̈ = q̈ + k⁻¹ τ̈_J

and 7.35b the motor effort Γ = I_a θ̈ + F_vm θ̇ + F_cm sign(θ̇) + τ_J ([Spong 87]; De Luca & Book,
Springer Handbook of Robotics 2008, §13.1).  τ̇_J and τ̈_J are the first two time derivatives of
the Newton–Euler model along the trajectory; :func:`elastic_inverse_dynamics` takes them by 5-point
central differences of NE evaluated on the trajectory's 4th-order Taylor jet at t,
q(t+s) = q + s q̇ + s²/2 q̈ + s³/6 q⁽³⁾ + s⁴/24 q⁽⁴⁾ (and its derivatives), which is exact to 2nd
order in s and so has the exact first two derivatives: only the values at t are needed (no
sampling of the trajectory), with a stencil error O((ω h)⁴) for a motion of frequency ω and a
round-off error ~1e-16 |τ_J| / h² (h = ``step``, default 1 ms).  The non-smooth friction terms of
H (Coulomb, Stribeck, offset: piecewise constant or with a kink at q̇ = 0) are taken out of the
differences: their derivative, a Dirac at a velocity reversal, is dropped (a spring torque cannot
jump; a trajectory through q̇ = 0 with Coulomb friction has no exact elastic inverse).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .forward_dynamics import cholesky_solve
from .inverse_dynamics import check_states

__all__ = [
    "ElasticAccelerations",
    "ElasticInverseDynamics",
    "ElasticJoints",
    "elastic_equilibrium",
    "elastic_forward_dynamics",
    "elastic_inverse_dynamics",
    "link_inertia_matrix",
]

DEFAULT_STEP = 1e-3  # s: step of the finite differences along the Taylor jet (see the module docstring)


def _parameter(value: Any, what: str, *, positive: bool) -> np.ndarray:
    """A scalar or 1-D parameter, finite and > 0 (``positive``) or >= 0; read-only float array."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a number or a 1-D sequence of numbers, got {value!r}") from exc
    if a.ndim > 1 or a.size == 0:
        raise ValueError(f"{what} must be a scalar or a non-empty 1-D sequence, got shape {a.shape}")
    bad = ~np.isfinite(a) | ((a <= 0.0) if positive else (a < 0.0))
    if np.any(bad):
        raise ValueError(f"{what} must be finite and {'> 0' if positive else '>= 0'}, got {a.tolist()}")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class ElasticJoints:
    """Joint elasticity and motor parameters of 7.34–7.35b, joint side (after the gear), URDF units.

    Each field is a scalar (the same for every joint) or one value per joint:

    * ``stiffness``: k_j > 0 (N m/rad, or N/m for a prismatic joint), the diagonal of k in 7.34;
    * ``motor_inertia``: I_a of 7.35b, > 0 (kg m², or kg); ``None``: the model's ``Ia`` (then it must be > 0),
      which moves from the link side to the motor side (module docstring);
    * ``motor_damping``: F_vm ≥ 0 (N m s/rad), ``motor_coulomb``: F_cm ≥ 0 (N m).

    Values are checked on construction and, against a model's joint count, by :meth:`resolve`; a bad
    value raises one ``ValueError`` naming the field.
    """

    stiffness: Any
    motor_inertia: Any = None
    motor_damping: Any = 0.0
    motor_coulomb: Any = 0.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "stiffness", _parameter(self.stiffness, "stiffness", positive=True))
        if self.motor_inertia is not None:
            set_(self, "motor_inertia", _parameter(self.motor_inertia, "motor_inertia", positive=True))
        set_(self, "motor_damping", _parameter(self.motor_damping, "motor_damping", positive=False))
        set_(self, "motor_coulomb", _parameter(self.motor_coulomb, "motor_coulomb", positive=False))

    def resolve(self, model: Any) -> ElasticJoints:
        """Per-joint vectors (n,) for ``model`` (scalars broadcast; ``motor_inertia=None`` → ``model.Ia``)."""
        n = model.dof
        out = {}
        for name in ("stiffness", "motor_inertia", "motor_damping", "motor_coulomb"):
            v = getattr(self, name)
            if v is None:
                v = np.asarray(model.Ia, dtype=float)
                if np.any(v <= 0.0):
                    raise ValueError(f"motor_inertia must be > 0; it defaults to the model's rotor inertia Ia = "
                                     f"{v.tolist()}: give ElasticJoints(..., motor_inertia=...)")
            if v.ndim == 1 and v.shape[0] != n:
                raise ValueError(f"{name} has {v.shape[0]} values; the model has {n} joints (give 1 or {n})")
            out[name] = np.broadcast_to(v, (n,)).copy()
        return ElasticJoints(**out)

    @property
    def natural_frequencies(self) -> np.ndarray:
        """sqrt(k / I_a): each motor's frequency against a locked link (rad/s); needs resolved vectors."""
        if self.motor_inertia is None:
            raise ValueError("motor_inertia is None: resolve(model) first")
        return np.sqrt(self.stiffness / self.motor_inertia)


class ElasticAccelerations(NamedTuple):
    """Link and motor accelerations of 7.35 (``qdd`` = q̈, ``thetadd`` = q̈_M)."""

    qdd: np.ndarray
    thetadd: np.ndarray


class ElasticInverseDynamics(NamedTuple):
    """Motor trajectory and efforts producing a link trajectory (module docstring)."""

    theta: np.ndarray  # q_M = q + k⁻¹ τ_J
    thetad: np.ndarray  # q̇_M
    thetadd: np.ndarray  # q̈_M
    tau: np.ndarray  # Γ, the motor effort of 7.35b
    joint_torque: np.ndarray  # τ_J = k (q_M − q) = A q̈ + H, the spring torque on the link


def link_inertia_matrix(model: Any, q: Any) -> np.ndarray:
    """A(q) of 7.35a: the model's inertia matrix without the rotor inertias ``Ia`` (module docstring)."""
    a = np.array(model.inertia_matrix(q), dtype=float)
    idx = np.arange(model.dof)
    a[..., idx, idx] -= model.Ia
    return a


def _link_torque(model: Any, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """A q̈ + H(q, q̇) of 7.35a (link side: NE without the rotor term Ia q̈, errata 34)."""
    return np.asarray(model.inverse_dynamics(q, qd, qdd), dtype=float) - model.Ia * qdd


def _nonsmooth_friction(model: Any, qd: np.ndarray) -> np.ndarray:
    """The friction terms of H without a time derivative in the jet: Fc sign(q̇) + Stribeck + offset."""
    out = model.Fc * np.sign(qd)
    return out + model.extra_friction(qd) if model.has_extra_friction else out


def _motor_friction(e: ElasticJoints, thetad: np.ndarray) -> np.ndarray:
    return e.motor_damping * thetad + e.motor_coulomb * np.sign(thetad)


def elastic_forward_dynamics(
    model: Any, elastic: ElasticJoints, q: Any, qd: Any, theta: Any, thetad: Any, tau: Any
) -> ElasticAccelerations:
    """(q̈, q̈_M) of 7.35 for the link state (q, q̇), the motor state (θ, θ̇) = (q_M, q̇_M) and the motor
    efforts ``tau`` (Γ), URDF coordinates, (n,) or a batch (N, n).

    q̈ = A⁻¹ (k (θ − q) − H(q, q̇)) with the link-side A and H of the model (7.35a; A by the
    model's engine, Cholesky solve), q̈_M = I_a⁻¹ (Γ − F_vm θ̇ − F_cm sign θ̇ − k (θ − q)) (7.35b).
    """
    (q, qd, theta, thetad, tau), batch = check_states(
        model, (q, "q"), (qd, "qd"), (theta, "theta"), (thetad, "thetad"), (tau, "tau"))
    e = elastic.resolve(model)
    spring = e.stiffness * (theta - q)  # τ_J = k (q_M − q)
    h = _link_torque(model, q, qd, np.zeros_like(q))  # H = C q̇ + Q + friction (7.35a)
    a = link_inertia_matrix(model, q)
    qdd = cholesky_solve(a, spring - h)
    thetadd = (tau - _motor_friction(e, thetad) - spring) / e.motor_inertia
    return ElasticAccelerations(qdd, thetadd) if batch else ElasticAccelerations(qdd[0], thetadd[0])


def elastic_inverse_dynamics(
    model: Any,
    elastic: ElasticJoints,
    q: Any,
    qd: Any,
    qdd: Any,
    qddd: Any,
    qdddd: Any,
    *,
    step: float = DEFAULT_STEP,
) -> ElasticInverseDynamics:
    """Motor positions, velocities, accelerations and efforts that make the links follow q(t) (the
    flat-output inverse of 7.35; module docstring), from q, q̇, q̈, q⁽³⁾, q⁽⁴⁾ at the same instants,
    (n,) or (N, n).  ``step`` (s): finite-difference step along the Taylor jet."""
    (q, qd, qdd, q3, q4), batch = check_states(
        model, (q, "q"), (qd, "qd"), (qdd, "qdd"), (qddd, "qddd"), (qdddd, "qdddd"))
    if not (np.isfinite(step) and step > 0.0):
        raise ValueError(f"step must be finite and > 0, got {step}")
    e = elastic.resolve(model)
    h = float(step)
    s = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])[:, None, None] * h  # (5, 1, 1) jet offsets
    qs = q + s * qd + s**2 / 2 * qdd + s**3 / 6 * q3 + s**4 / 24 * q4
    vs = qd + s * qdd + s**2 / 2 * q3 + s**3 / 6 * q4
    acs = qdd + s * q3 + s**2 / 2 * q4
    b, n = q.shape
    tj = _link_torque(model, qs.reshape(-1, n), vs.reshape(-1, n), acs.reshape(-1, n)).reshape(5, b, n)
    g = tj - _nonsmooth_friction(model, vs.reshape(-1, n)).reshape(5, b, n)  # smooth part along the jet
    tau_j = tj[2]
    dtau = (g[0] - 8.0 * g[1] + 8.0 * g[3] - g[4]) / (12.0 * h)
    ddtau = (-g[0] + 16.0 * g[1] - 30.0 * g[2] + 16.0 * g[3] - g[4]) / (12.0 * h * h)
    theta = q + tau_j / e.stiffness
    thetad = qd + dtau / e.stiffness
    thetadd = qdd + ddtau / e.stiffness
    tau = e.motor_inertia * thetadd + _motor_friction(e, thetad) + tau_j  # 7.35b
    out = ElasticInverseDynamics(theta, thetad, thetadd, tau, tau_j)
    return out if batch else ElasticInverseDynamics(*(x[0] for x in out))


def elastic_equilibrium(model: Any, elastic: ElasticJoints, q: Any) -> np.ndarray:
    """Motor positions holding the links still at ``q``: θ = q + k⁻¹ Q(q) (7.35a at rest, friction-free)."""
    q = model.check_joint_vector(q)
    e = elastic.resolve(model)
    return q + np.asarray(model.gravity_torques(q), dtype=float) / e.stiffness
