"""Computed torque (linearizing and decoupling) control in the joint space (001 §9.4.2).

All laws are evaluated by one call of the Newton–Euler inverse dynamics
Γ = NE(q, q̇, q̈) (§9.4.2.5), without forming A or H:

* tracking [9.22] + [9.24]:  Γ = NE(q, q̇, w),  w = q̈^d + K_d (q̇^d − q̇) + K_p (q^d − q)
* position [9.22] + [9.29]:  Γ = NE(q, q̇, w),  w = K_p (q^d − q) − K_d q̇
* predictive [9.31]:         Γ = NE(q^d, q̇^d, w) = Â(q^d) w + Ĥ(q^d, q̇^d), w from [9.24]
  (or [9.29] with ``scheme="position"``)

Gains from [9.26]: K_p = ω², K_d = 2 ξ ω.  The Coulomb term of Ĥ is Fc sat(v / band) with v = q̇^d
by default (v = q̇ for the position scheme; ``coulomb_velocity``, ``coulomb_velocity_band``: see
:mod:`robot_dynamics.control.base`).  The model used by the controller may
differ from the plant (model error); pass the estimated :class:`RobotModel`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .gains import computed_torque_gains


class ComputedTorqueController(JointController):
    """Tracking ([9.24]) or position ([9.29]) computed torque, model at the measured state ([9.22])."""

    name = "computed_torque"
    SCHEMES = ("tracking", "position")

    def __init__(
        self,
        model: RobotModel,
        kp: Any,
        kd: Any,
        *,
        scheme: str = "tracking",
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        if scheme not in self.SCHEMES:
            raise ValueError(f"scheme must be one of {self.SCHEMES}, got {scheme!r}")
        self.scheme = scheme
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=inverse_dynamics,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        self.kp = gain_vector(kp, self.dof, "kp")
        self.kd = gain_vector(kd, self.dof, "kd")

    def _default_coulomb_velocity(self) -> str:
        """q̇^d for tracking [9.24]; q̇ for the position scheme [9.29], whose reference has no velocity."""
        return "measured" if self.scheme == "position" else "desired"

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, xi: Any = 1.0, **kwargs: Any) -> ComputedTorqueController:
        """Gains of [9.26] for bandwidth ω and damping ξ."""
        kp, kd = computed_torque_gains(omega, xi, model.dof)
        return cls(model, kp, kd, **kwargs)

    def _acceleration(self, q, qd, q_ref, qd_ref, qdd_ref) -> np.ndarray:
        e = np.subtract(q_ref, q, out=self._e)
        w = np.multiply(self.kp, e, out=self._w)
        if self.scheme == "tracking":  # [9.24]
            ed = np.subtract(qd_ref, qd, out=self._ed)
            w += self.kd * ed
            w += qdd_ref
        else:  # [9.29]
            w -= self.kd * qd
        return w

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        w = self._acceleration(q, qd, q_ref, qd_ref, qdd_ref)
        return self._dynamics(q, qd, w, qd_ref, qd)  # [9.22] via NE (§9.4.2.5), Coulomb per the options


class PredictiveController(ComputedTorqueController):
    """Predictive dynamic control [9.31]: the model is evaluated at the desired state."""

    name = "predictive"
    _ne_velocity = "desired"

    def _default_coulomb_velocity(self) -> str:
        return "desired"  # the model is evaluated at q̇^d anyway [9.31]

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        w = self._acceleration(q, qd, q_ref, qd_ref, qdd_ref)
        return self._dynamics(q_ref, qd_ref, w, qd_ref, qd)  # [9.31] via NE (§9.4.2.5), Coulomb per the options


__all__ = ["ComputedTorqueController", "PredictiveController"]
