"""Computed torque control in the task space — resolved acceleration control (001 §9.4.3).

    Γ = Â J^{-1} (w(t) − J̇ q̇) + Ĥ                                       [9.33]
    w(t) = Ẍ^d + K_d (Ẋ^d − Ẋ) + K_p (X^d − X)                           [9.35]

evaluated by Newton–Euler with q, q̇ and q̈ = J^{-1}(w − J̇ q̇) (§9.4.3).  X is the pose
of ``link`` in base_link; Ẋ = J q̇ = [v; ω] (base_link components); the orientation
error is the rotation vector of ``R^d R^T`` (002 §2.3.8), so that with an exact model
the error obeys ë_x + K_d ė_x + K_p e_x = 0 [9.36] to first order.  J̇ q̇ comes from the
forward recursion of 002 eq. [5.47] (:mod:`robot_dynamics.kinematics.analysis`).  Near singularities J^{-1} is replaced by a damped least-squares
inverse (note of §9.4.3).

Redundant arms (n > 6).  The note of §9.4.3 replaces J^{-1} by a generalized inverse and warns
that its homogeneous term must be chosen to avoid self-motion in the null space of J (Hsu 88,
de Luca 91): with J⁺ alone a null-space joint velocity is never braked (the tip holds, the joints
drift).  The law is therefore, as 002 eq. 6.31–6.32 one derivative up,

    q̈ = J^#(w − J̇ q̇) + (I − J^# J) q̈_0

with ``null_space`` choosing q̈_0:

* ``"posture"`` (default): q̈_0 = q̈_p + K_dn (q̇_p − q̇) + K_pn (q_p − q), a damped posture law;
  (q_p, q̇_p, q̈_p) = (``posture``, 0, 0), or with ``posture=None`` the joint reference
  (q^d, q̇^d, q̈^d) of :meth:`compute` (X^d = DGM(q^d), so the reference is the posture that
  reaches it), for :meth:`compute_task` the configuration of the first call after :meth:`reset`;
* ``"joint_limits"``: q̈_0 = −K_pn D ∇φ(q) − K_dn q̇, the damped gradient descent of the
  joint-limit criterion φ = (1/p) Σ_i |u_i|^p, u_i = (q_i − q_i^moy)/(Δq_i/2) (002 eqs 6.34–6.35;
  p = 2 is 2× the quadratic criterion 6.36, p = 6 the p-norm approximation 6.39 of the max
  criterion 6.38), scaled by D = diag((Δq_i/2)²) so that K_pn is in 1/s² as for the posture
  law: q̈_0,i = −K_pn (Δq_i/2) sign(u_i) |u_i|^{p−1} − K_dn q̇_i (for p = 2 the posture law at
  mid-range).  Joints without finite limits only get the damping;
* ``None``: q̈ = J^#(w − J̇ q̇), the behaviour before the null-space term.

J^# is the damped least-squares inverse J^T (J J^T + λ² I)^{-1} (λ = ``damping``, the
pseudo-inverse of 002 eq. 6.27 away from singularities) with ``null_space_metric="identity"``
(default), or the inertia-weighted inverse Â^{-1} J^T (J Â^{-1} J^T + λ² I)^{-1} (002 eqs
6.29–6.30 with E = A, Benoit 75) with ``"inertia"``.  With an exact model both give the task
error dynamics [9.36] (J q̈ = w − J̇ q̇ because J (I − J^# J) = 0) and the self-motion
(I − J^# J) q̈ = (I − J^# J) q̈_0; the inertia-weighted one also makes the null-space effort
Â (I − J̄ J) q̈_0 = (I − J^T J̄^T) Â q̈_0 dynamically consistent (Khatib 87: it gives no task
acceleration) and its particular solution minimizes q̈^T Â q̈, at the cost of Â(q) per cycle.  The
identity metric is the default: cheaper, and the seed's formulation (a generalized inverse).
With the default gains (K_pn = min K_p, K_dn = 2 √K_pn) the self-motion is critically damped
at the task bandwidth.  For n <= 6 there is no null space: the term is skipped and the law is
exactly [9.33].

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

from ..kinematics.analysis import jdot_qd as _jdot_qd
from ..kinematics.geometric_model import jacobian, rotation_vector
from ..model.robot_model import RobotModel
from .base import InverseDynamics, JointController, gain_vector
from .gains import computed_torque_gains

NULL_SPACE_LAWS = ("posture", "joint_limits")
NULL_SPACE_METRICS = ("identity", "inertia")
TASK_DIM = 6


def _generalized_inverse(jac: np.ndarray, lam2: float, inertia: np.ndarray | None = None) -> np.ndarray:
    """J^# (n, 6): J^T (J J^T + λ² I)^{-1} (002 eq. 6.27, damped), or with ``inertia`` = A the weighted
    A^{-1} J^T (J A^{-1} J^T + λ² I)^{-1} (002 eqs 6.29–6.30, E = A)."""
    m = jac.shape[0]
    ajt = jac.T if inertia is None else np.linalg.solve(inertia, jac.T)
    return np.linalg.solve(jac @ ajt + lam2 * np.eye(m), ajt.T).T


def _null_space_projector(jac: np.ndarray, lam2: float, inertia: np.ndarray | None = None) -> tuple[
        np.ndarray, np.ndarray]:
    """(J^#, I − J^# J): the generalized inverse and the projector on the null space of J (002 eq. 6.31)."""
    jp = _generalized_inverse(jac, lam2, inertia)
    return jp, np.eye(jac.shape[1]) - jp @ jac


def task_error(pose_ref: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """e_x = X^d − X [9.37]: [p^d − p; rotation vector of R^d R^T] (002 §2.3.8), base_link components."""
    return np.concatenate([pose_ref[:3, 3] - pose[:3, 3], rotation_vector(pose_ref[:3, :3] @ pose[:3, :3].T)])


class TaskSpaceLaw(JointController):
    """Common part of the task-space laws: tip kinematics, task reference, null-space options (module docstring).

    ``null_space_kp``/``null_space_kd`` are per joint (scalar or (n,)); their units are those of the
    subclass' null-space term.  Subclasses implement ``_task_law(q, qd, xd, vd, ad, joint_ref)``.
    """

    name = "task_space"

    def __init__(
        self,
        model: RobotModel,
        *,
        link: str | None = None,
        damping: float = 1e-6,
        null_space: str | None = "posture",
        null_space_kp: Any = None,
        null_space_kd: Any = None,
        posture: Any = None,
        joint_limit_exponent: float = 2.0,
        null_space_metric: str = "identity",
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        super().__init__(model, effort_limit=effort_limit, inverse_dynamics=inverse_dynamics,
                         coulomb_velocity=coulomb_velocity, coulomb_velocity_band=coulomb_velocity_band)
        self.link = link or model.tip_link
        if self.link not in model.frames:
            raise ValueError(f"unknown link {self.link!r}")
        if not (np.isfinite(damping) and damping >= 0.0):
            raise ValueError("damping must be finite and >= 0")
        self.damping = float(damping)
        if null_space is not None and null_space not in NULL_SPACE_LAWS:
            raise ValueError(f"null_space must be one of {NULL_SPACE_LAWS} or None, got {null_space!r}")
        if null_space_metric not in NULL_SPACE_METRICS:
            raise ValueError(f"null_space_metric must be one of {NULL_SPACE_METRICS}, got {null_space_metric!r}")
        p = float(joint_limit_exponent)
        if not (np.isfinite(p) and p >= 2.0):
            raise ValueError(f"joint_limit_exponent must be finite and >= 2, got {joint_limit_exponent}")
        n = self.dof
        self.null_space = null_space
        self.null_space_metric = null_space_metric
        self.joint_limit_exponent = p
        self.redundant = n > TASK_DIM
        self.null_space_kp = None if null_space_kp is None else gain_vector(null_space_kp, n, "null_space_kp")
        self.null_space_kd = None if null_space_kd is None else gain_vector(null_space_kd, n, "null_space_kd")
        self.posture = None if posture is None else self._check(posture, "posture").copy()
        lim = model.limits
        finite = np.isfinite(lim["lower"]) & np.isfinite(lim["upper"]) & (lim["upper"] > lim["lower"])
        self._q_moy = np.where(finite, 0.5 * (lim["upper"] + lim["lower"]), 0.0)  # 002 eq. 6.34
        self._half_range = np.where(finite, 0.5 * (lim["upper"] - lim["lower"]), np.inf)  # Δq/2, 002 eq. 6.35
        self._start: np.ndarray | None = None
        self._ref_key: tuple[bytes, bytes, bytes] | None = None
        self._ref_task: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def null_space_active(self) -> bool:
        """True when the law adds a null-space term (redundant arm and ``null_space`` set)."""
        return self.redundant and self.null_space is not None

    def reset(self) -> None:
        super().reset()
        self._start = None

    def reset_posture(self) -> None:
        """Without ``posture``: the posture of :meth:`compute_task` becomes the configuration of its next call (a new
        task reference), the rest of the law's state (e.g. an integral) kept."""
        self._start = None

    # ---------------------------------------------------------- kinematics
    def pose(self, q: np.ndarray) -> np.ndarray:
        return self.model.forward_kinematics(q, self.link)

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        return jacobian(self.model, q, self.link)

    def jdot_qd(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """J̇ q̇ by the forward recursion of 002 eq. [5.47] with q̈ = 0 (:func:`~robot_dynamics.kinematics.analysis.jdot_qd`;
        exactly 0 at q̇ = 0)."""
        if not qd.any():
            return np.zeros(TASK_DIM)
        return _jdot_qd(self.model, q, qd, self.link)

    def _solve(self, jac: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """J^{-1} rhs, damped least squares J^T (J J^T + λ² I)^{-1} rhs when ill-conditioned or not square."""
        if jac.shape[0] == jac.shape[1] and np.linalg.cond(jac) < 1e8:
            return np.linalg.solve(jac, rhs)
        lam2 = max(self.damping, 1e-12) ** 2
        return jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(jac.shape[0]), rhs)

    def null_space_projector(self, q: np.ndarray, jac: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(J^#, I − J^# J) at q with the law's metric and damping (module docstring)."""
        jac = self.jacobian(q) if jac is None else jac
        inertia = self.model.inertia_matrix(q) if self.null_space_metric == "inertia" else None
        return _null_space_projector(jac, max(self.damping, 1e-12) ** 2, inertia)

    def joint_limit_gradient(self, q: np.ndarray) -> np.ndarray:
        """D ∇φ(q) = (Δq/2) sign(u) |u|^{p−1}, u = (q − q^moy)/(Δq/2) (module docstring; 002 eqs 6.34–6.39)."""
        u = (q - self._q_moy) / self._half_range
        return self._half_range * np.where(np.isfinite(self._half_range),
                                           np.sign(u) * np.abs(u) ** (self.joint_limit_exponent - 1.0), 0.0)

    def _posture_ref(self, q: np.ndarray, joint_ref: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> tuple[
            np.ndarray, np.ndarray, np.ndarray]:
        """(q_p, q̇_p, q̈_p): ``posture`` at rest, else the joint reference, else the first configuration."""
        if self.posture is not None:
            return self.posture, self._zero, self._zero
        if joint_ref is not None:
            return joint_ref
        if self._start is None:
            self._start = q.copy()
        return self._start, self._zero, self._zero

    def _null_space_input(self, q, qd, joint_ref) -> np.ndarray:
        """The null-space input (q̈_0 or Γ_0): posture law or damped joint-limit gradient, gains K_pn, K_dn."""
        if self.null_space == "joint_limits":
            return -self.null_space_kp * self.joint_limit_gradient(q) - self.null_space_kd * qd
        qp, qdp, qddp = self._posture_ref(q, joint_ref)
        return self._posture_feedforward(qddp) + self.null_space_kd * (qdp - qd) + self.null_space_kp * (qp - q)

    def _posture_feedforward(self, qdd_ref: np.ndarray) -> np.ndarray:
        return qdd_ref

    # ----------------------------------------------------------------- laws
    def compute_task(self, t: float, q: Any, qd: Any, pose_ref: Any, twist_ref: Any = None,
                     accel_ref: Any = None) -> np.ndarray:
        """Γ for a task reference: pose (4, 4), twist [v; ω] (6,), acceleration (6,) in base_link."""
        q = self._check(q, "q")
        qd = self._check(qd, "qd")
        xd = np.asarray(pose_ref, float)
        vd = np.zeros(6) if twist_ref is None else np.asarray(twist_ref, float)
        ad = np.zeros(6) if accel_ref is None else np.asarray(accel_ref, float)
        if xd.shape != (4, 4) or vd.shape != (6,) or ad.shape != (6,):
            raise ValueError("pose_ref must be (4, 4), twist_ref and accel_ref (6,)")
        if not (np.isfinite(xd).all() and np.isfinite(vd).all() and np.isfinite(ad).all() and np.isfinite(t)):
            raise ValueError("task reference contains NaN or inf")
        return self._saturate(self._task_law(float(t), q, qd, xd, vd, ad, None))

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref):
        key = (q_ref.tobytes(), qd_ref.tobytes(), qdd_ref.tobytes())
        if key != self._ref_key:  # the reference's DGM/KM, kept while the reference holds
            xd = self.pose(q_ref)
            jd = self.jacobian(q_ref)
            self._ref_task = (xd, jd @ qd_ref, jd @ qdd_ref + self.jdot_qd(q_ref, qd_ref))
            self._ref_key = key
        xd, vd, ad = self._ref_task
        return self._task_law(t, q, qd, xd, vd, ad, (q_ref, qd_ref, qdd_ref))

    def _task_law(self, t, q, qd, xd, vd, ad, joint_ref):  # pragma: no cover - abstract
        raise NotImplementedError

    def _saturate(self, raw: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{self.name}: non-finite effort")
        np.greater(np.abs(raw), self.effort_limit, out=self.saturated)
        return np.clip(raw, -self.effort_limit, self.effort_limit)


class TaskSpaceComputedTorque(TaskSpaceLaw):
    """[9.33]–[9.35] with a null-space acceleration for redundant arms (module docstring).

    ``null_space_kp`` (1/s²) and ``null_space_kd`` (1/s), per joint; defaults K_pn = min K_p,
    K_dn = 2 √K_pn (critically damped self-motion at the task bandwidth).
    """

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
        null_space: str | None = "posture",
        null_space_kp: Any = None,
        null_space_kd: Any = None,
        posture: Any = None,
        joint_limit_exponent: float = 2.0,
        null_space_metric: str = "identity",
    ) -> None:
        super().__init__(model, link=link, damping=damping, null_space=null_space, null_space_kp=null_space_kp,
                         null_space_kd=null_space_kd, posture=posture, joint_limit_exponent=joint_limit_exponent,
                         null_space_metric=null_space_metric, effort_limit=effort_limit,
                         inverse_dynamics=inverse_dynamics, coulomb_velocity=coulomb_velocity,
                         coulomb_velocity_band=coulomb_velocity_band)
        self.kp = gain_vector(kp, 6, "kp")
        self.kd = gain_vector(kd, 6, "kd")
        if self.null_space_kp is None:
            self.null_space_kp = np.full(self.dof, float(self.kp.min()))
        if self.null_space_kd is None:
            self.null_space_kd = 2.0 * np.sqrt(self.null_space_kp)

    @classmethod
    def tuned(cls, model: RobotModel, omega: Any, xi: Any = 1.0, **kwargs: Any) -> TaskSpaceComputedTorque:
        """Gains of [9.26] on each of the 6 task coordinates (null-space gains: the defaults of the class)."""
        kp, kd = computed_torque_gains(omega, xi, 6)
        return cls(model, kp, kd, **kwargs)

    def _task_law(self, t, q, qd, xd, vd, ad, joint_ref):
        """[9.33]/[9.35] (+ null-space term); the Coulomb term on q̇^d of the joint reference, or J(q)^# Ẋ^d."""
        x = self.pose(q)
        jac = self.jacobian(q)
        w = ad + self.kd * (vd - jac @ qd) + self.kp * task_error(xd, x)  # [9.35]
        rhs = w - self.jdot_qd(q, qd)
        if self.null_space_active:
            jp, proj = self.null_space_projector(q, jac)
            qdd = jp @ rhs + proj @ self._null_space_input(q, qd, joint_ref)  # [9.33], J^{-1} -> J^#, 002 eq. 6.31
        else:
            qdd = self._solve(jac, rhs)  # [9.33]
        if joint_ref is not None:
            qd_ref = joint_ref[1]
        else:
            qd_ref = self._solve(jac, vd) if self._coulomb_fix and self.coulomb_velocity == "desired" else qd
        return self._dynamics(q, qd, qdd, qd_ref, qd)


__all__ = ["NULL_SPACE_LAWS", "NULL_SPACE_METRICS", "TaskSpaceComputedTorque", "TaskSpaceLaw", "task_error"]
