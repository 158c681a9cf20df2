"""PID control in the task space (001 §9.3.3, eq. [9.17]).

    Γ = J^T [K_p (X^d − X) + K_d (Ẋ^d − Ẋ) + K_I ∫_{t0}^{t} (X^d − X) dτ]            [9.17]

X^d − X is the pose error of :func:`~robot_dynamics.control.task_space.task_error` (position; rotation
vector of R^d R^T, 002 §2.3.8), Ẋ = J q̇ = [v; ω] in base_link, so the bracket is a wrench
[f; m] (N, N·m) at the origin of ``link`` and J^T maps it to joint efforts.  The integral is the
rectangle rule at the call times; as in the joint PID ([9.5], notes of §9.3.1) it only
accumulates while ``integral_band[0] <= |e_i| <= integral_band[1]`` and K_I ∫e is clamped to
``integral_limit`` (anti-windup, N and N·m per task coordinate).

Options beyond [9.17] (off by default in the constructor):

* ``gravity=True`` adds Q(q) (the task-space form of PD + gravity [9.12]); [9.17] alone lets the
  integral take up the gravity load;
* redundant arms (n > 6): J^T F only acts in the row space of J, so a null-space joint motion is
  neither braked nor held.  ``null_space="posture"|"joint_limits"`` adds the torque
  (I − J^T J^{#T}) Â(q) q̈_0 with q̈_0 the damped posture law or joint-limit gradient of
  :mod:`~robot_dynamics.control.task_space` (K_pn in 1/s², K_dn in 1/s, required when the term is
  active).  The default ``null_space_metric="inertia"`` (J^# = J̄ = Â^{-1} J^T (J Â^{-1} J^T)^{-1},
  002 eq. 6.30 with E = A) makes it dynamically consistent (Khatib 87): (I − J^T J̄^T) Â = Â (I − J̄ J),
  so with an exact model the term accelerates the joints by (I − J̄ J) q̈_0 and the tip by nothing,
  and J^T F gives no null-space acceleration ((I − J̄ J) Â^{-1} J^T = 0); the self-motion is then a
  PD on the model's inertia (computed-torque-like gains, like the task-space computed torque), whereas
  constant torque gains K_n on a null-space mode of small inertia easily exceed the sampling limit
  (Â^{-1} K_n Δt < 2).  :meth:`TaskSpacePID.tuned` switches it on (posture) for a redundant arm.

Gains of :meth:`TaskSpacePID.tuned`: [9.10] per task coordinate (triple real pole ω of the
decoupled model a_i ẍ_i = f_i, [9.6]–[9.9]): K_p = 3 a ω², K_d = 3 a ω, K_I = a ω³, with a_i the
diagonal of the task-space inertia Λ = (J A^{-1} J^T)^{-1} (Khatib 87), the median over the
well-conditioned configurations of the joint box (Λ is unbounded near singularities, so the max of
errata 33 does not apply), or Λ(q) at a given design configuration ``q``.  Constant gains on a
configuration-dependent Λ are a compromise: where Λ_ii is far below the design value the sampled loop
can exceed its limit (eigenvalues of A^{-1} J^T K_d J times the period above 2: a fast vibration; e.g.
the rotation about the Panda's flange axis, Λ ≈ 0.007 kg m² in its ready posture against a median of
0.26), and the triple pole only tolerates Λ_ii < 9 a_i (Routh on [9.8]); pass ``q`` (the operating
configuration) or ``task_inertia`` then.  Model free apart from these options: no Coulomb term (the
base class' Coulomb options are accepted and have no effect).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kinematics.geometric_model import jacobian
from ..model.robot_model import RobotModel
from .base import InverseDynamics, gain_vector
from .gains import computed_torque_gains, pid_gains, sampling_box
from .task_space import TASK_DIM, TaskSpaceLaw, _generalized_inverse, task_error


def task_space_inertia(model: RobotModel, q: Any, link: str | None = None) -> np.ndarray:
    """Λ(q) = (J A^{-1} J^T)^{-1} (6, 6), or (N, 6, 6) for a batch: the inertia seen at the origin of ``link``."""
    jac = jacobian(model, q, link)
    a = model.inertia_matrix(q)
    return np.linalg.inv(jac @ np.linalg.solve(a, np.swapaxes(jac, -1, -2)))


def median_task_inertia(model: RobotModel, link: str | None = None, n_samples: int = 200, max_condition: float = 100.0,
                        rng: np.random.Generator | int | None = 0) -> np.ndarray:
    """Median over random configurations of the joint box with cond(J) < ``max_condition`` of diag Λ(q) (6,)."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    lo, hi = sampling_box(model)
    qs = rng.uniform(lo, hi, (int(n_samples), model.dof))
    cond = np.linalg.cond(jacobian(model, qs, link))
    ok = qs[np.isfinite(cond) & (cond < max_condition)]
    if len(ok) == 0:
        raise ValueError(f"no configuration with cond(J) < {max_condition} among {n_samples} samples")
    return np.median(np.diagonal(task_space_inertia(model, ok, link), axis1=-2, axis2=-1), axis=0)


class TaskSpacePID(TaskSpaceLaw):
    """[9.17] (module docstring): K_p, K_d, K_I per task coordinate [v; ω] (scalar or (6,))."""

    name = "task_space_pid"

    def __init__(
        self,
        model: RobotModel,
        kp: Any,
        kd: Any,
        ki: Any,
        *,
        link: str | None = None,
        damping: float = 1e-6,
        gravity: bool = False,
        integral_band: tuple[float, float] = (0.0, np.inf),
        integral_limit: Any = np.inf,
        null_space: str | None = None,
        null_space_kp: Any = None,
        null_space_kd: Any = None,
        posture: Any = None,
        joint_limit_exponent: float = 2.0,
        null_space_metric: str = "inertia",
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        super().__init__(model, link=link, damping=damping, null_space=null_space, null_space_kp=null_space_kp,
                         null_space_kd=null_space_kd, posture=posture, joint_limit_exponent=joint_limit_exponent,
                         null_space_metric=null_space_metric, effort_limit=effort_limit,
                         inverse_dynamics=inverse_dynamics, coulomb_velocity=coulomb_velocity,
                         coulomb_velocity_band=coulomb_velocity_band)
        self.kp, self.kd, self.ki = (gain_vector(k, TASK_DIM, s) for k, s in ((kp, "kp"), (kd, "kd"), (ki, "ki")))
        if self.null_space_active and (self.null_space_kp is None or self.null_space_kd is None):
            raise ValueError("null_space_kp (1/s²) and null_space_kd (1/s) are required with null_space "
                             "on a redundant arm")
        lo, hi = (float(x) for x in integral_band)
        if not (0.0 <= lo < hi):
            raise ValueError(f"integral_band must satisfy 0 <= lo < hi, got {integral_band}")
        self.integral_band = (lo, hi)
        lim = np.asarray(integral_limit, dtype=float)
        lim = np.full(TASK_DIM, float(lim)) if lim.ndim == 0 else lim.copy()
        if lim.shape != (TASK_DIM,) or np.any(np.isnan(lim)) or np.any(lim <= 0):
            raise ValueError("integral_limit must be > 0, a scalar or (6,) vector")
        self.integral_limit = lim
        self.gravity = bool(gravity)
        self.integral = np.zeros(TASK_DIM)
        self._t_prev: float | None = None
        ki_pos = self.ki > 0
        self._integral_bound = np.where(ki_pos, lim / np.where(ki_pos, self.ki, 1.0), 0.0)

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, xi: Any = 1.0, *, task_inertia: Any = None, q: Any = None,
              **kwargs: Any) -> TaskSpacePID:
        """[9.10] on each task coordinate with a_i = diag Λ (module docstring): ``task_inertia`` (6,), else
        Λ(``q``), else the median over the joint box.  On a redundant arm the null space gets a posture
        law (unless ``null_space`` is given) with K_pn = ω², K_dn = 2 ξ ω ([9.26], smallest ω and ξ)."""
        link = kwargs.get("link")
        if task_inertia is None:
            if q is not None:
                task_inertia = np.diag(task_space_inertia(model, np.asarray(q, float), link))
            else:
                task_inertia = median_task_inertia(model, link)
        kp, kd, ki = pid_gains(task_inertia, omega)
        if model.dof > TASK_DIM:
            kwargs.setdefault("null_space", "posture")
            if kwargs["null_space"] is not None:
                kpn, kdn = computed_torque_gains(float(np.min(omega)), float(np.min(xi)), model.dof)
                if kwargs.get("null_space_kp") is None:
                    kwargs["null_space_kp"] = kpn
                if kwargs.get("null_space_kd") is None:
                    kwargs["null_space_kd"] = kdn
        return cls(model, kp, kd, ki, **kwargs)

    def reset(self) -> None:
        super().reset()
        self.integral[:] = 0.0
        self._t_prev = None

    def _task_law(self, t, q, qd, xd, vd, ad, joint_ref):
        x = self.pose(q)
        jac = self.jacobian(q)
        e = task_error(xd, x)
        if self._t_prev is not None and t > self._t_prev:
            ae = np.abs(e)
            active = (ae >= self.integral_band[0]) & (ae <= self.integral_band[1])
            self.integral += np.where(active, e, 0.0) * (t - self._t_prev)
            np.clip(self.integral, -self._integral_bound, self._integral_bound, out=self.integral)
        self._t_prev = t
        wrench = self.kp * e + self.kd * (vd - jac @ qd) + self.ki * self.integral
        tau = jac.T @ wrench  # [9.17]
        if self.gravity:
            tau = tau + self._gravity(q)
        if self.null_space_active:
            inertia = self.model.inertia_matrix(q)
            jp = _generalized_inverse(jac, max(self.damping, 1e-12) ** 2,
                                      inertia if self.null_space_metric == "inertia" else None)
            gamma0 = inertia @ self._null_space_input(q, qd, joint_ref)
            tau = tau + gamma0 - jac.T @ (jp.T @ gamma0)  # (I − J^T J^{#T}) Â q̈_0
        return tau


__all__ = ["TaskSpacePID", "median_task_inertia", "task_space_inertia"]
