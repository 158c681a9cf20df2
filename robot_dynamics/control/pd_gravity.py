"""PD control with gravity compensation (001 §9.3.2, eq. [9.12]).

    Γ = K_p (q^d − q) + K_d (q̇^d − q̇) + Q(q)                          [9.12]

With a constant set point (q̇^d = 0) this is exactly [9.12]; the velocity
reference term is the predictive action of the notes of §9.3.1 for tracking.
``gravity_at="desired"`` uses the constant-per-set-point Q(q^d) instead of Q(q),
also asymptotically stable (§9.3.2).  Q is computed by the Newton–Euler model with
q̇ = q̈ = 0, so it holds no Coulomb term: the Coulomb options of the base class are accepted (one
parameter set for every law) and have no effect.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .gains import max_diagonal_inertia, pd_gains


class PDGravityController(JointController):
    name = "pd_gravity"

    def __init__(
        self,
        model: RobotModel,
        kp: Any,
        kd: Any,
        *,
        gravity_at: str = "measured",
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=inverse_dynamics,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        self.kp = gain_vector(kp, self.dof, "kp")
        self.kd = gain_vector(kd, self.dof, "kd")
        if gravity_at not in ("measured", "desired"):
            raise ValueError("gravity_at must be 'measured' (Q(q)) or 'desired' (Q(q^d))")
        self.gravity_at = gravity_at

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, xi: Any = 1.0, *, a: Any = None, **kwargs: Any) -> PDGravityController:
        """K_p = a ω², K_d = 2 ξ a ω: the bandwidth ω of the computed-torque gains [9.26] on a_j = max A_jj."""
        a = max_diagonal_inertia(model) if a is None else a
        kp, kd = pd_gains(a, omega, xi)
        return cls(model, kp, kd, **kwargs)

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        e = np.subtract(q_ref, q, out=self._e)
        ed = np.subtract(qd_ref, qd, out=self._ed)
        g = self._gravity(q if self.gravity_at == "measured" else q_ref)
        return self.kp * e + self.kd * ed + g


__all__ = ["PDGravityController"]
