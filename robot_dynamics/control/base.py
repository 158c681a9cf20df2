"""Common base of the joint-space control laws (001 chapter 9).

Every law maps the measured state and the reference to joint efforts in URDF
coordinates::

    tau = controller.compute(t, q, qd, q_ref, qd_ref, qdd_ref)

Inputs of the wrong shape or with NaN/inf raise ``ValueError``.  The output is
always finite and saturated to the effort limits (``|tau_j| <= effort_limit_j``);
``saturated`` tells which joints were clipped on the last call.

Coulomb friction compensation (every law whose model term holds Fc sign(q̇), 001 eq. 7.26/7.61:
computed torque, position, predictive, task space; PD + gravity and PID have none): the model's
term Fc sign(q̇) evaluated at the *measured* velocity flips with the velocity noise at
standstill (torque chatter of 2 Fc).  The laws replace it by :func:`~robot_dynamics.dynamics.
friction.coulomb` ``Fc sat(v / band)`` with

* ``coulomb_velocity="desired"`` (default of the tracking laws): v = q̇^d, noise free, exactly 0
  while the reference holds a pose, so the effort at standstill does not chatter;
  ``"measured"``: v = q̇ (default of the position scheme [9.29], which has no velocity reference:
  on q̇^d ≡ 0 it would compensate nothing and leave a stiction error ~Fc / (K_p A)); with
  ``band = 0`` this is the plain model, the behaviour before issue 16;
* ``coulomb_velocity_band`` (rad/s or m/s, scalar or per joint ≥ 0; 0 = Fc sign(v)): width of the
  linear ramp around v = 0.  Default (None): :data:`DEFAULT_COULOMB_BAND` on q̇^d, where it only
  smooths the start and the stop and ignores round-off residues of q̇^d at rest; 0 on q̇, where a
  band bounds the chatter to about 2 Fc · 3σ / band (σ: velocity noise) but leaves a stiction
  error that grows with it (the simulated plant's exact Fc sign(q̇) is then no longer cancelled),
  so it is left to the user, who knows σ.

The model's efforts are corrected after the dynamics call, Γ = NE(q, q̇, q̈) − Fc sign(q̇_NE) +
Fc sat(v / band) (q̇_NE: the velocity given to NE; :func:`~robot_dynamics.dynamics.friction.coulomb_ramp`,
the kernel of :func:`~robot_dynamics.dynamics.friction.coulomb`), which is exact because the Coulomb term is
additive in NE (7.61); a custom ``inverse_dynamics`` must carry the model's ``Fc`` term.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dynamics.friction import coulomb_ramp, coulomb_slope
from ..model.robot_model import RobotModel

COULOMB_VELOCITIES = ("desired", "measured")
DEFAULT_COULOMB_BAND = 1e-3
"""rad/s (m/s): the Coulomb compensation ramps over |v| < 1e-3 (0.1 ms of a 10 rad/s² start), full beyond."""

InverseDynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class JointController:
    """Base class: input validation, preallocated buffers, saturation."""

    name = "controller"
    _ne_velocity = "measured"  # the velocity the law gives to NE: q̇ ("measured") or q̇^d ("desired")

    def __init__(
        self,
        model: RobotModel,
        *,
        effort_limit: Any = None,
        inverse_dynamics: InverseDynamics | None = None,
        coulomb_velocity: str | None = None,
        coulomb_velocity_band: Any = None,
    ) -> None:
        self.model = model
        n = self.dof = model.dof
        lim = model.limits["effort"] if effort_limit is None else np.broadcast_to(np.asarray(effort_limit, float), (n,))
        lim = np.asarray(lim, dtype=float).copy()
        if lim.shape != (n,) or np.any(np.isnan(lim)) or np.any(lim <= 0):
            raise ValueError(f"effort_limit must be ({n},) and > 0, got {lim}")
        self.effort_limit = lim
        self._neg_limit = -lim
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
        self._set_coulomb(coulomb_velocity or self._default_coulomb_velocity(), coulomb_velocity_band)

    def _default_coulomb_velocity(self) -> str:
        """The velocity of the Coulomb compensation when ``coulomb_velocity`` is None."""
        return "desired"

    def _set_coulomb(self, velocity: str, band: Any) -> None:
        """Coulomb compensation options (see the module docstring); precomputes the correction's constants."""
        n = self.dof
        if velocity not in COULOMB_VELOCITIES:
            raise ValueError(f"coulomb_velocity must be one of {COULOMB_VELOCITIES}, got {velocity!r}")
        if band is None:
            band = DEFAULT_COULOMB_BAND if velocity == "desired" else 0.0
        b = np.asarray(band, dtype=float)
        b = np.full(n, float(b)) if b.ndim == 0 else b.copy()
        if b.shape != (n,) or not np.all(np.isfinite(b)) or np.any(b < 0):
            raise ValueError(f"coulomb_velocity_band must be a finite, non-negative scalar or ({n},) vector")
        self.coulomb_velocity = velocity
        self.coulomb_velocity_band = b
        fc = np.asarray(self.model.Fc, dtype=float)
        self._fc = fc.copy()
        self._mfc, self._afc = -np.abs(fc), np.abs(fc)  # clip bounds of Fc sat(v / band)
        self._banded = b > 0
        # nothing to correct without Coulomb friction, or when NE's own Fc sign(q̇_NE) is the chosen term
        self._coulomb_fix = bool(np.any(fc != 0.0)) and (velocity != self._ne_velocity or bool(np.any(b > 0)))
        self._fc_ib = coulomb_slope(fc, b)  # Fc / band
        self._band_all = bool(np.all(b > 0))
        self._band_any = bool(np.any(b > 0))
        self._c = np.empty(n)
        self._s = np.empty(n)
        self._id = np.empty(n)

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
        return self.compute_validated(float(t), q, qd, q_ref, qd_ref, qdd_ref).copy()

    def compute_validated(self, t: float, q: np.ndarray, qd: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
                          qdd_ref: np.ndarray) -> np.ndarray:
        """:meth:`compute` past its input checks, for a caller that validated the inputs on arrival (float64
        arrays of shape (n,), finite; the control loop).  Returns the law's internal buffer (valid until the
        next call): finite and saturated, or ``ValueError`` for a non-finite effort."""
        raw = self._law(t, q, qd, q_ref, qd_ref, qdd_ref)
        if not np.isfinite(raw).all():
            raise ValueError(f"{self.name}: non-finite effort for a finite input (state far outside the model's range)")
        lim = self.effort_limit
        tau = self._tau
        np.abs(raw, out=tau)
        np.greater(tau, lim, out=self.saturated)
        np.minimum(raw, lim, out=tau)  # clip to [-lim, lim] (np.clip's wrapper costs ~3 us more)
        return np.maximum(tau, self._neg_limit, out=tau)

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

    def _dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, qd_ref: np.ndarray,
                  qd_meas: np.ndarray) -> np.ndarray:
        """NE(q, q̇, q̈) with its Coulomb term Fc sign(q̇) replaced by Fc sat(v / band) (7.26), v = q̇^d
        (``qd_ref``) or the measured ``qd_meas`` per ``coulomb_velocity``; ~2 µs on top of NE."""
        tau = self.inverse_dynamics(q, qd, qdd)
        if not self._coulomb_fix:
            return tau
        v = qd_ref if self.coulomb_velocity == "desired" else qd_meas
        c = self._c
        if self._band_all:  # Fc sat(v / band) = clip(v Fc / band, −|Fc|, |Fc|)
            coulomb_ramp(v, self._fc_ib, self._mfc, self._afc, c)
        else:
            np.sign(v, out=c)
            c *= self._fc
            if self._band_any:
                np.copyto(c, coulomb_ramp(v, self._fc_ib, self._mfc, self._afc, np.empty(self.dof)),
                          where=self._banded)
        np.sign(qd, out=self._s)
        self._s *= self._fc
        c -= self._s
        return np.add(tau, c, out=self._id)

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


__all__ = ["COULOMB_VELOCITIES", "DEFAULT_COULOMB_BAND", "InverseDynamics", "JointController", "gain_vector"]
