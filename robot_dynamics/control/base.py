"""Common base of the joint-space control laws (001 chapter 9).

Every law maps the measured state and the reference to joint efforts in URDF
coordinates::

    tau = controller.compute(t, q, qd, q_ref, qd_ref, qdd_ref)

Inputs of the wrong shape or with NaN/inf raise ``ValueError``.  The output is
always finite and saturated to the effort limits (``|tau_j| <= effort_limit_j``);
``saturated`` tells which joints were clipped on the last call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..model.robot_model import RobotModel

InverseDynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class JointController:
    """Base class: input validation, preallocated buffers, saturation."""

    name = "controller"

    def __init__(
        self,
        model: RobotModel,
        *,
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
    ) -> None:
        self.model = model
        n = self.dof = model.dof
        lim = model.limits["effort"] if effort_limit is None else np.broadcast_to(np.asarray(effort_limit, float), (n,))
        lim = np.asarray(lim, dtype=float).copy()
        if lim.shape != (n,) or np.any(np.isnan(lim)) or np.any(lim <= 0):
            raise ValueError(f"effort_limit must be ({n},) and > 0, got {lim}")
        self.effort_limit = lim
        # Newton–Euler inverse dynamics Γ = NE(q, q̇, q̈) (001 §9.4.2.5), URDF coordinates, friction and rotor
        # inertia included; default: the model's engine (model.inverse_dynamics: its compiled customized
        # program, or without a C compiler the generated scalar Python one; the NumPy model until it is
        # ready, see robot_dynamics.symbolic.codegen.Engine and RobotModel.compile)
        self.inverse_dynamics: InverseDynamics = inverse_dynamics or model.inverse_dynamics
        self.saturated = np.zeros(n, dtype=bool)
        self._zero = np.zeros(n)
        self._e = np.empty(n)
        self._ed = np.empty(n)
        self._w = np.empty(n)
        self._tau = np.empty(n)

    # ---------------------------------------------------------------- API
    def reset(self) -> None:
        """Forget the internal state (integrators, last time)."""
        self.saturated[:] = False

    def compute(self, t: float, q: Any, qd: Any, q_ref: Any, qd_ref: Any = None, qdd_ref: Any = None) -> np.ndarray:
        """Joint efforts (URDF coordinates), saturated to the effort limits."""
        if not np.isfinite(t):
            raise ValueError("t must be finite")
        q = self._check(q, "q")
        qd = self._check(qd, "qd")
        q_ref = self._check(q_ref, "q_ref")
        qd_ref = self._zero if qd_ref is None else self._check(qd_ref, "qd_ref")
        qdd_ref = self._zero if qdd_ref is None else self._check(qdd_ref, "qdd_ref")
        raw = self._law(float(t), q, qd, q_ref, qd_ref, qdd_ref)
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{self.name}: non-finite effort for a finite input (state far outside the model's range)")
        tau = np.clip(raw, -self.effort_limit, self.effort_limit, out=self._tau)
        np.greater(np.abs(raw), self.effort_limit, out=self.saturated)
        return tau.copy()

    def _law(self, t: float, q: np.ndarray, qd: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
             qdd_ref: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ helpers
    def _check(self, v: Any, what: str) -> np.ndarray:
        a = v if type(v) is np.ndarray and v.dtype == np.float64 else np.asarray(v, dtype=float)
        if a.shape != (self.dof,):
            raise ValueError(f"{what} must have shape ({self.dof},), got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{what} contains NaN or inf")
        return a

    def _gravity(self, q: np.ndarray) -> np.ndarray:
        """Q(q) by the Newton–Euler model with q̇ = q̈ = 0."""
        return np.asarray(self.inverse_dynamics(q, self._zero, self._zero), dtype=float)


def gain_vector(x: Any, n: int, what: str) -> np.ndarray:
    """A per-joint gain: scalar or (n,), finite and >= 0."""
    a = np.asarray(x, dtype=float)
    a = np.full(n, float(a)) if a.ndim == 0 else a.copy()
    if a.shape != (n,) or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{what} must be a finite, non-negative scalar or ({n},) vector")
    return a


__all__ = ["InverseDynamics", "JointController", "gain_vector"]
