"""Decentralized joint PID (001 §9.3.1, eq. [9.5]) with the gains of [9.10].

    Γ = K_p (q^d − q) + K_d (q̇^d − q̇) + K_I ∫ (q^d − q) dτ            [9.5]

Integral switching (notes of §9.3.1): the integral of joint j only accumulates while
``integral_band[0] <= |e_j| <= integral_band[1]`` — off for large errors (the
proportional action suffices) and for tiny ones (limit cycles from Coulomb
friction).  The integral term is also clamped to the effort limit (anti-windup).  Model free: no
Coulomb term (the Coulomb options of the base class are accepted and have no effect).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.robot_model import RobotModel
from .base import JointController, gain_vector
from .gains import max_diagonal_inertia, pid_gains


def _model_free(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    raise RuntimeError("PID control is model free")


class PIDController(JointController):
    name = "pid"

    def __init__(
        self,
        model: RobotModel,
        kp: Any,
        kd: Any,
        ki: Any,
        *,
        integral_band: tuple[float, float] = (0.0, np.inf),
        effort_limit: Any = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=_model_free,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        n = self.dof
        self.kp, self.kd, self.ki = (gain_vector(k, n, s) for k, s in ((kp, "kp"), (kd, "kd"), (ki, "ki")))
        lo, hi = (float(x) for x in integral_band)
        if not (0.0 <= lo < hi):
            raise ValueError(f"integral_band must satisfy 0 <= lo < hi, got {integral_band}")
        self.integral_band = (lo, hi)
        self.integral = np.zeros(n)
        self._t_prev: float | None = None
        bound = np.where(self.ki > 0, self.effort_limit / np.where(self.ki > 0, self.ki, 1.0), 0.0)
        self._integral_bound = bound

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, *, a: Any = None, **kwargs: Any) -> PIDController:
        """Gains by the triple real pole of [9.9]–[9.10] (errata 33), a_j = max A_jj."""
        a = max_diagonal_inertia(model) if a is None else a
        kp, kd, ki = pid_gains(a, omega, model.Fv)
        return cls(model, kp, np.maximum(kd, 0.0), ki, **kwargs)

    def reset(self) -> None:
        super().reset()
        self.integral[:] = 0.0
        self._t_prev = None

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        e = np.subtract(q_ref, q, out=self._e)
        ed = np.subtract(qd_ref, qd, out=self._ed)
        if self._t_prev is not None and t > self._t_prev:
            ae = np.abs(e)
            active = (ae >= self.integral_band[0]) & (ae <= self.integral_band[1])
            self.integral += np.where(active, e, 0.0) * (t - self._t_prev)
            np.clip(self.integral, -self._integral_bound, self._integral_bound, out=self.integral)
        self._t_prev = t
        return self.kp * e + self.kd * ed + self.ki * self.integral


__all__ = ["PIDController"]
