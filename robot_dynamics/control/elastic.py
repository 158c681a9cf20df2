"""Tracking control of robots with elastic joints (model: 001 §7.3.8, eqs. 7.34–7.35).

001 ch. 9 treats rigid robots only and refers to [Benallegue 91], [Brogliato 91], [Zodiac 96] for flexible
joints, so the law is taken from the literature: the rigid computed torque of the links (001 [9.22],
[9.24]) turned into a desired spring torque and a motor position reference, tracked by a motor PD —
Spong's singular-perturbation (two-time-scale) composite control [Spong 87: M. W. Spong, "Modeling and
control of elastic joint robots", ASME J. Dyn. Syst. Meas. Control 109:310–319, 1987; De Luca & Book,
"Robots with flexible elements", Springer Handbook of Robotics, 2008, §13.1] extended by a motor
position (joint-torque) loop [Albu-Schäffer, Ott & Hirzinger, "A unified passivity-based control
framework for position, torque and impedance control of flexible joint robots", IJRR 26(1), 2007]::

    w     = q̈^d + K_d (q̇^d − q̇) + K_p (q^d − q)                    [9.24]
    τ_J^d = A(q) w + H(q, q̇)          (link side of 7.35a: NE without the rotor term I_a w)
    θ^d   = q + k⁻¹ τ_J^d                 (7.35a solved for the motor position q_M)
    Γ     = τ_J^d + I_a w + F_vm v + F_cm sat(v / band) + K_θ (θ^d − θ) + D_θ (q̇ − θ̇)       (7.35b)

θ, θ̇ are the measured motor positions and velocities (joint side), v the velocity of the motor friction
compensation (q̇^d by default, see :mod:`robot_dynamics.control.base`).  With K_θ = 0 this is exactly
Spong's composite control Γ = u_s + u_f: the slow control u_s = (A + I_a) w + H is the computed torque of
the rigid (reduced, k → ∞) model and u_f = D_θ (q̇ − θ̇) damps the fast spring dynamics.  K_θ (θ^d − θ) =
K_θ k⁻¹ (τ_J^d − τ_J) feeds the spring-torque error back through the motor.  For one joint of link inertia
I, the spring torque then obeys  I_a τ̈_J + D_θ τ̇_J + (k (1 + I_a/I) + K_θ) τ_J = (same) τ_J^d  — unit
static gain, so the link sees q̈ = w (the rigid computed-torque error dynamics [9.25]) once this "torque loop"
has settled.  :meth:`ElasticJointController.tuned` places it at ω_θ (≥ its natural frequency) with
damping ξ_θ: K_θ = max(0, I_a ω_θ² − k), D_θ = 2 ξ_θ ω_θ I_a (the k/I term, which only raises the frequency,
is left out so that no link inertia is needed).

The motor state is not part of :meth:`JointController.compute`'s signature: pass it as ``compute(...,
theta=..., thetad=...)`` or by :meth:`ElasticJointController.set_motor_state` before the call
(``needs_motor_state`` tells the closed-loop runner to do so).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dynamics.elastic import ElasticJoints
from ..dynamics.friction import coulomb
from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .gains import computed_torque_gains

MOTOR_BANDWIDTH_FACTOR = 5.0  # default ω_θ = 5 ω: the torque loop settles well inside the link loop
"""Default torque-loop frequency of :meth:`ElasticJointController.tuned`, as a multiple of the link bandwidth."""


class ElasticJointController(JointController):
    """Composite (link computed torque + motor PD) control of an elastic-joint robot (module docstring).

    ``model``: the robot; its ``Ia`` is the rigid model's rotor inertia and is *not* used on the link side
    (the motor inertia is ``elastic.motor_inertia``, which defaults to it: see
    :mod:`robot_dynamics.dynamics.elastic`).  ``kp``, ``kd``: link gains of [9.24] (acceleration units);
    ``k_motor`` (K_θ, effort per rad of motor position error), ``d_motor`` (D_θ, effort per rad/s).
    """

    name = "elastic"
    needs_motor_state = True

    def __init__(
        self,
        model: RobotModel,
        elastic: ElasticJoints,
        kp: Any,
        kd: Any,
        *,
        k_motor: Any = 0.0,
        d_motor: Any = 0.0,
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        if not isinstance(elastic, ElasticJoints):
            raise ValueError(f"elastic must be an ElasticJoints, got {type(elastic).__name__}")
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=inverse_dynamics,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        n = self.dof
        self.elastic = elastic.resolve(model)
        self.kp = gain_vector(kp, n, "kp")
        self.kd = gain_vector(kd, n, "kd")
        self.k_motor = gain_vector(k_motor, n, "k_motor")
        self.d_motor = gain_vector(d_motor, n, "d_motor")
        self._ia = np.asarray(model.Ia, dtype=float).copy()  # the rigid model's rotor term, taken off NE
        e = self.elastic
        self._inv_k = 1.0 / e.stiffness
        self._fcm = e.motor_coulomb.copy()
        self._theta = np.empty(n)
        self._thetad = np.empty(n)
        self._has_motor = False

    @classmethod
    def tuned(cls, model: RobotModel, elastic: ElasticJoints, omega: Any = 20.0, xi: Any = 1.0, *,
              omega_motor: Any = None, xi_motor: Any = 0.7, **kwargs: Any) -> ElasticJointController:
        """Link gains of [9.26] (K_p = ω², K_d = 2 ξ ω) and the torque loop at ``omega_motor`` (default
        ``MOTOR_BANDWIDTH_FACTOR`` ω, and at least the natural frequency sqrt(k / I_a)) with damping ``xi_motor``."""
        n = model.dof
        kp, kd = computed_torque_gains(omega, xi, n)
        e = elastic.resolve(model)
        wm = MOTOR_BANDWIDTH_FACTOR * np.sqrt(kp) if omega_motor is None else gain_vector(omega_motor, n, "omega_motor")
        wm = np.maximum(wm, np.sqrt(e.stiffness / e.motor_inertia))
        zm = gain_vector(xi_motor, n, "xi_motor")
        k_motor = np.maximum(0.0, e.motor_inertia * wm**2 - e.stiffness)
        d_motor = 2.0 * zm * wm * e.motor_inertia
        return cls(model, elastic, kp, kd, k_motor=k_motor, d_motor=d_motor, **kwargs)

    # ---------------------------------------------------------------- API
    def reset(self) -> None:
        """Forget the motor state and the saturation flags."""
        super().reset()
        self._has_motor = False

    def set_motor_state(self, theta: Any, thetad: Any) -> None:
        """The measured motor state (θ, θ̇) = (q_M, q̇_M), joint side, used by the next :meth:`compute`."""
        np.copyto(self._theta, self._check(theta, "theta"))
        np.copyto(self._thetad, self._check(thetad, "thetad"))
        self._has_motor = True

    def compute(self, t: float, q: Any, qd: Any, q_ref: Any, qd_ref: Any = None, qdd_ref: Any = None, *,
                theta: Any = None, thetad: Any = None) -> np.ndarray:
        """Motor efforts Γ (URDF coordinates), saturated; ``theta``/``thetad``: the motor state (else the last
        one given to :meth:`set_motor_state`)."""
        if (theta is None) != (thetad is None):
            raise ValueError("give both theta and thetad (the motor state) or neither")
        if theta is not None:
            self.set_motor_state(theta, thetad)
        return super().compute(t, q, qd, q_ref, qd_ref, qdd_ref)

    # ---------------------------------------------------------------- law
    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        if not self._has_motor:
            raise ValueError("elastic controller: no motor state (pass theta/thetad to compute or set_motor_state)")
        e = self.elastic
        w = np.multiply(self.kp, np.subtract(q_ref, q, out=self._e), out=self._w)  # [9.24]
        w += self.kd * np.subtract(qd_ref, qd, out=self._ed)
        w += qdd_ref
        tau_j = self._dynamics(q, qd, w, qd_ref, qd) - self._ia * w  # τ_J^d = A w + H (link side of 7.35a)
        theta_d = q + tau_j * self._inv_k  # 7.35a solved for q_M
        v = qd_ref if self.coulomb_velocity == "desired" else self._thetad
        out = tau_j + e.motor_inertia * w + e.motor_damping * v  # 7.35b with q̈_M ≈ w
        if np.any(self._fcm != 0.0):
            out += coulomb(self._fcm, v, self.coulomb_velocity_band)  # F_cm sat(v / band)
        out += self.k_motor * (theta_d - self._theta) + self.d_motor * (qd - self._thetad)
        return out


__all__ = ["MOTOR_BANDWIDTH_FACTOR", "ElasticJointController"]
