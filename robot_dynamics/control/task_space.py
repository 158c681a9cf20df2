"""Computed torque control in the task space — resolved acceleration control (001 §9.4.3).

    Γ = Â J^{-1} (w(t) − J̇ q̇) + Ĥ                                       [9.33]
    w(t) = Ẍ^d + K_d (Ẋ^d − Ẋ) + K_p (X^d − X)                           [9.35]

evaluated by Newton–Euler with q, q̇ and q̈ = J^{-1}(w − J̇ q̇) (§9.4.3).  X is the pose
of ``link`` in base_link; Ẋ = J q̇ = [v; ω] (base_link components); the orientation
error is the rotation vector of ``R^d R^T`` (002 §2.3.8), so that with an exact model
the error obeys ë_x + K_d ė_x + K_p e_x = 0 [9.36] to first order.  J̇ q̇ is a central
difference of J along q̇.  Near singularities (or for a redundant arm) J^{-1} is
replaced by a damped least-squares inverse (note of §9.4.3).

The Coulomb term of Ĥ is Fc sat(q̇^d / band) by default (:mod:`robot_dynamics.control.base`), q̇^d =
J(q)^{-1} Ẋ^d for a task reference.

``compute_task(t, q, qd, pose_ref, twist_ref, accel_ref)`` takes a task reference;
``compute(t, q, qd, q_ref, qd_ref, qdd_ref)`` converts a joint reference with the
DGM/KM (X^d = DGM(q^d), Ẋ^d = J q̇^d, Ẍ^d = J q̈^d + J̇ q̇^d) so that the closed-loop
harness can drive it like the joint-space laws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kinematics.geometric_model import jacobian, rotation_vector
from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .gains import computed_torque_gains


class TaskSpaceComputedTorque(JointController):
    name = "task_space_computed_torque"

    def __init__(
        self,
        model: RobotModel,
        kp: Any,
        kd: Any,
        *,
        link: str | None = None,
        damping: float = 1e-6,
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=inverse_dynamics,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        self.kp = gain_vector(kp, 6, "kp")
        self.kd = gain_vector(kd, 6, "kd")
        self.link = link or model.tip_link
        if self.link not in model.frames:
            raise ValueError(f"unknown link {self.link!r}")
        if not (np.isfinite(damping) and damping >= 0.0):
            raise ValueError("damping must be finite and >= 0")
        self.damping = float(damping)

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, xi: Any = 1.0, **kwargs: Any) -> TaskSpaceComputedTorque:
        """Gains of [9.26] on each of the 6 task coordinates."""
        kp, kd = computed_torque_gains(omega, xi, 6)
        return cls(model, kp, kd, **kwargs)

    # ---------------------------------------------------------- kinematics
    def pose(self, q: np.ndarray) -> np.ndarray:
        return self.model.forward_kinematics(q, self.link)

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        return jacobian(self.model, q, self.link)

    def jdot_qd(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """J̇ q̇ = d/dh J(q + h q̇) q̇ at h = 0, central difference."""
        h = 1e-6 / max(1.0, float(np.abs(qd).max()))
        jj = jacobian(self.model, np.stack([q + h * qd, q - h * qd]), self.link)
        return (jj[0] - jj[1]) @ qd / (2.0 * h)

    def _solve(self, jac: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """J^{-1} rhs, damped least squares J^T (J J^T + λ² I)^{-1} rhs when ill-conditioned or not square."""
        if jac.shape[0] == jac.shape[1] and np.linalg.cond(jac) < 1e8:
            return np.linalg.solve(jac, rhs)
        lam2 = max(self.damping, 1e-12) ** 2
        return jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(jac.shape[0]), rhs)

    # ----------------------------------------------------------------- laws
    def compute_task(self, t: float, q: Any, qd: Any, pose_ref: Any, twist_ref: Any = None,
                     accel_ref: Any = None) -> np.ndarray:
        """Γ of [9.33]/[9.35] for a task reference: pose (4, 4), twist [v; ω] (6,), acceleration (6,)."""
        q = self._check(q, "q")
        qd = self._check(qd, "qd")
        xd = np.asarray(pose_ref, float)
        vd = np.zeros(6) if twist_ref is None else np.asarray(twist_ref, float)
        ad = np.zeros(6) if accel_ref is None else np.asarray(accel_ref, float)
        if xd.shape != (4, 4) or vd.shape != (6,) or ad.shape != (6,):
            raise ValueError("pose_ref must be (4, 4), twist_ref and accel_ref (6,)")
        if not (np.isfinite(xd).all() and np.isfinite(vd).all() and np.isfinite(ad).all() and np.isfinite(t)):
            raise ValueError("task reference contains NaN or inf")
        return self._saturate(self._task_law(q, qd, xd, vd, ad, None))

    def _task_law(self, q, qd, xd, vd, ad, qd_ref):
        """[9.33]/[9.35]; the Coulomb term on q̇^d = ``qd_ref``, or J(q)^{-1} Ẋ^d for a task reference (None)."""
        x = self.pose(q)
        jac = self.jacobian(q)
        e = np.concatenate([xd[:3, 3] - x[:3, 3], rotation_vector(xd[:3, :3] @ x[:3, :3].T)])
        w = ad + self.kd * (vd - jac @ qd) + self.kp * e  # [9.35]
        qdd = self._solve(jac, w - self.jdot_qd(q, qd))  # [9.33]
        if qd_ref is None:
            qd_ref = self._solve(jac, vd) if self._coulomb_fix and self.coulomb_velocity == "desired" else qd
        return self._dynamics(q, qd, qdd, qd_ref, qd)

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        xd = self.pose(q_ref)
        jd = self.jacobian(q_ref)
        vd = jd @ qd_ref
        ad = jd @ qdd_ref + self.jdot_qd(q_ref, qd_ref)
        return self._task_law(q, qd, xd, vd, ad, qd_ref)

    def _saturate(self, raw: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{self.name}: non-finite effort")
        np.greater(np.abs(raw), self.effort_limit, out=self.saturated)
        return np.clip(raw, -self.effort_limit, self.effort_limit)


__all__ = ["TaskSpaceComputedTorque"]
