"""Dynamics-aware speed scaling (issue 33, ``speed_scaling.dynamics_aware``): the controller lowers the speed scaling
factor by itself when the efforts the trajectory ahead needs would leave the limits (a payload heavier than the
model, limits lowered at run time), and gives it back when they fit again.  Pure Python, no rclpy.

Played at factor f (speed scaling: q(tau), q' f, q'' f^2 + q' df/dt), the model's effort at a point of the path is,
by Newton–Euler (001 eq. 7.61; friction 7.66-7.67),

    Gamma(f) = a f^2 + b f + c,   a = A(q) q'' + C(q, q') q',   b = Fv q',   c = Q(q) + Fc sign(q'),

with a, b, c from three inverse-dynamics calls (the retiming's ``quadratics``: exact, whatever the friction model).  The effort the arm takes beyond the model's (the law's command minus the model's feed-forward
at the reference, low-pass filtered) is added to c: measured, it carries what the model lacks.  The factor allowed
is the largest F with |a f^2 + b f + c| <= margin x limit for every f in [0, F], every joint and every point of a
window ahead of the reference (long enough for the factor's ramp to get there); the df/dt term is left to the
margin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...trajectory.base import Trajectory
from ...trajectory.effort_bounds import quadratics, row_crossings

SAMPLES = 8
"""Points of the window ahead at which the efforts are predicted."""
EVERY = 5
"""Cycles between two predictions (the window covers them)."""
START_SAMPLES = 128
"""Points (besides the trajectory's own) at which a trajectory's efforts are predicted when it is adopted."""
OFFSET_TIME = 0.05
"""s: time constant of the low-pass filter on the measured effort offset."""


def largest_factor(a: np.ndarray, b: np.ndarray, c: np.ndarray, limit: np.ndarray, f_max: float = 1.0) -> float:
    """The largest F in [0, ``f_max``] with |a f^2 + b f + c| < ``limit`` for every f in [0, F) and every element
    (arrays broadcast together; the last axis the joints): the first crossing of
    :func:`~robot_dynamics.trajectory.effort_bounds.row_crossings` (the retiming's own); 0 when the static effort c
    is at or beyond the limit already."""
    a, b, c = (np.atleast_2d(x) for x in np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, c))))
    lim = np.broadcast_to(np.asarray(limit, float), c.shape[-1:])
    x = row_crossings(c.reshape(-1, c.shape[-1]), b.reshape(-1, c.shape[-1]), a.reshape(-1, c.shape[-1]), lim)
    return float(min(f_max, max(0.0, float(x.min()))))


@dataclass
class EffortScaling:
    """``speed_scaling.dynamics_aware`` and ``speed_scaling.effort_margin``.  :meth:`start`: the factor the whole
    trajectory allows (at its adoption: at rest, the factor may take it at once); :meth:`update`: every
    :data:`EVERY` cycles along a window of ``horizon`` s of control time ahead, the cap only lowered while the
    trajectory runs (no ramp back up mid-path: each ramp costs effort, q' df/dt); ``offset``: the filtered effort
    the arm takes beyond the model's (holding too: a heavier payload's weight is known before the goal);
    ``limiting``: the joint that bounds the factor."""

    enabled: bool = False
    margin: float = 0.9
    horizon: float = 0.4
    cap: float = 1.0
    offset: np.ndarray | None = None
    limiting: str = ""
    _cycles: int = field(default=0, repr=False)

    def reset(self) -> None:
        """No trajectory: the cap back to 1 (the measured offset is kept: the arm's, not the path's)."""
        self.cap, self.limiting, self._cycles = 1.0, "", 0

    def measure(self, tau: np.ndarray, tau_model: np.ndarray, dt: float) -> None:
        """The cycle's command ``tau`` against the model's effort at the reference ``tau_model``: the offset filtered
        over :data:`OFFSET_TIME` (first-order, ``dt`` the cycle's period)."""
        extra = np.asarray(tau, float) - np.asarray(tau_model, float)
        if self.offset is None or self.offset.shape != extra.shape:
            self.offset = np.zeros_like(extra)
        k = min(1.0, max(dt, 0.0) / OFFSET_TIME)
        self.offset += k * (extra - self.offset)

    def allowed(self, states: tuple[np.ndarray, np.ndarray, np.ndarray], effort: np.ndarray,
                inverse_dynamics: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                names: list[str]) -> tuple[float, str]:
        """(the largest factor, the joint bounding it or '') at the path states (q, q', q'') (N, n):
        :func:`largest_factor` with the model's a, b, c (:func:`~robot_dynamics.trajectory.effort_bounds.quadratics`:
        exact, friction included) plus the measured offset, within ``margin`` x ``effort``."""
        c, b, a = quadratics(inverse_dynamics, *states)
        if self.offset is not None:
            c = c + self.offset
        lim = self.margin * np.asarray(effort, float)
        cap = largest_factor(a, b, c, lim)
        over = np.abs(a + b + c) / lim  # at f = 1: the joint that needs the slowing most
        return cap, (names[int(np.argmax(over.max(axis=0)))] if cap < 1.0 else "")

    def start(self, traj: Trajectory, effort: np.ndarray,
              inverse_dynamics: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], names: list[str]) -> float:
        """The factor the whole of ``traj`` allows (its points and :data:`START_SAMPLES` more); 1 when disabled."""
        self._cycles = 0
        if not self.enabled:
            self.cap, self.limiting = 1.0, ""
            return 1.0
        ts = np.union1d(np.asarray(getattr(traj, "times", []), float), np.linspace(0.0, traj.duration, START_SAMPLES))
        if ts.size > 2 * START_SAMPLES:
            ts = np.linspace(0.0, traj.duration, 2 * START_SAMPLES)
        self.cap, self.limiting = self.allowed(traj.evaluate(ts), effort, inverse_dynamics, names)
        return self.cap

    def update(self, traj: Trajectory, tau_now: float, factor: float, effort: np.ndarray,
               inverse_dynamics: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], names: list[str]) -> float:
        """The factor allowed from trajectory time ``tau_now`` on (every :data:`EVERY` calls; the last one between):
        the window ahead (``horizon`` s at the current ``factor``, at least 1 ms of the path), never above the cap
        so far."""
        if not self.enabled:
            self.cap, self.limiting = 1.0, ""
            return 1.0
        self._cycles += 1
        if (self._cycles - 1) % EVERY:
            return self.cap
        span = max(self.horizon * max(factor, 0.05), 1e-3)
        ts = np.minimum(tau_now + np.linspace(0.0, span, SAMPLES), traj.duration)
        cap, joint = self.allowed(traj.evaluate(ts), effort, inverse_dynamics, names)
        if cap < self.cap:
            self.cap, self.limiting = cap, joint
        return self.cap


__all__ = ["EVERY", "OFFSET_TIME", "SAMPLES", "START_SAMPLES", "EffortScaling", "largest_factor"]
