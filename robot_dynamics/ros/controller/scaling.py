"""Speed scaling of the running trajectory, as Kilted's joint_trajectory_controller does it (its
``~/speed_scaling_input``, ``control_msgs/SpeedScalingFactor``, and its state's ``speed_scaling_factor``): each cycle
the trajectory's time advances by factor x the control period, so 0.5 plays the rest of the motion twice as long along
the same path, 0 stops it and holds where it is, 1 resumes.  Path and goal-time tolerances follow the trajectory's
(virtual) time, as JTC's.

Two differences for a controller that commands efforts: the factor in use moves toward the requested one at most
1 / ``ramp_time`` per second (a step would make the reference's velocity jump), and the reference is the trajectory
*played* at that rate, q(tau), q'(tau) f, q''(tau) f^2 + q'(tau) df/dt, so the law's feed-forward is that of the
motion the arm makes.  A factor above 1 is taken as 1: the trajectory was checked against the limits at its own
speed.  Pure Python: the controller's node feeds the topic, its core calls :meth:`TrajectoryClock.advance` once per
cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

RAMP_TIME = 0.2
"""s: the default ``speed_scaling.ramp_time``, from 0 to 1 (or back)."""


def factor_error(factor: float) -> str | None:
    """Why ``factor`` cannot be a speed scaling factor (JTC: negative values are ignored), or None."""
    if not math.isfinite(factor):
        return f"speed scaling factor {factor} is not finite: ignored"
    if factor < 0.0:
        return f"speed scaling factor {factor:g} < 0: ignored (JTC's rule)"
    return None


@dataclass
class TrajectoryClock:
    """The trajectory's time ``tau`` (s since its start, negative before it) and the rate ``factor`` at which it
    advances against the control time; ``requested``: the factor asked for (clamped to [0, 1]); ``rate``: df/dt of
    the last advance (the reference's extra acceleration q' df/dt)."""

    requested: float = 1.0
    cap: float = 1.0  # dynamics-aware scaling's bound on the factor (effort_scaling.py): the target is the lower
    factor: float = 1.0
    ramp_time: float = RAMP_TIME
    tau: float = 0.0
    rate: float = 0.0
    _anchor_now: float = 0.0
    _anchor_tau: float = 0.0
    _last_now: float = 0.0
    _rebase: bool = False

    def configure(self, initial: float, ramp_time: float) -> None:
        """The node's parameters: ``speed_scaling.initial_scaling_factor`` (in use at once, above 1 taken as 1; a
        value the schema refuses never gets here) and ``speed_scaling.ramp_time``."""
        self.requested = self.factor = min(float(initial), 1.0)
        self.ramp_time = float(ramp_time)

    def request(self, factor: float) -> str | None:
        """A new requested factor (a message on ``~/speed_scaling_input``); the error text when ignored."""
        if (err := factor_error(factor)) is not None:
            return err
        self.requested = min(float(factor), 1.0)
        return None

    def start(self, now: float, t0: float) -> None:
        """A trajectory starting at control time ``t0`` taken at ``now`` (tau = now - t0 if the factor is 1)."""
        self.tau = self._anchor_tau = now - t0
        self._anchor_now = self._last_now = now
        self.rate, self._rebase = 0.0, False

    def set_factor(self, factor: float) -> None:
        """The factor in use changed at once, without a ramp (where the reference is at rest: its velocity, q' f, is 0
        whatever f); tau goes on from where the last :meth:`advance` left it."""
        self.factor, self.rate = float(factor), 0.0
        self._anchor_now, self._anchor_tau = self._last_now, self.tau

    def restart(self) -> None:
        """A trajectory that goes on from where the running one is (its time 0 at the last :meth:`advance`'s
        control time): the next advance moves tau from 0 exactly as it would have moved the running one's."""
        self.tau = self._anchor_tau = 0.0
        self._anchor_now = self._last_now

    def advance(self, now: float) -> float:
        """tau at control time ``now``: the factor moves toward the requested one by at most dt / ramp_time since
        the last cycle, tau by the integral of the factor (exact: the factor is linear in time between cycles).
        While the factor stays constant tau = anchor + factor (now - anchor): exactly now - t0 at 1.  The same time
        changes nothing; a time that went back starts a new time base (tau and the factor kept).  Called every cycle,
        a trajectory running or not: the factor follows the requests meanwhile."""
        dt = now - self._last_now
        if dt < 0.0 or self._rebase:  # a new time base (the time went back, a resume): the same tau and factor
            self._anchor_now = self._last_now = now
            self._anchor_tau = self.tau
            self._rebase = False
            return self.tau
        if dt == 0.0:
            return self.tau
        target = min(self.requested, self.cap)
        if self.factor == target:
            self.rate = 0.0
            self.tau = self._anchor_tau + self.factor * (now - self._anchor_now)
        else:
            if self.ramp_time > 0.0:  # linear in time over the cycle
                step = dt / self.ramp_time
                new = target if abs(target - self.factor) <= step else \
                    self.factor + math.copysign(step, target - self.factor)
                self.rate = (new - self.factor) / dt
                self.tau += 0.5 * (self.factor + new) * dt
            else:  # a step, as JTC's: the new factor over the whole cycle
                new, self.rate = target, 0.0
                self.tau += new * dt
            self.factor = new
            self._anchor_now, self._anchor_tau = now, self.tau
        self._last_now = now
        return self.tau

    def resume(self, tau: float, factor: float) -> None:
        """Go on from the trajectory's time ``tau`` at ``factor`` (ramping to the requested one), from the next
        :meth:`advance`'s control time (the time between is the outage's)."""
        self.tau, self.factor, self.rate = float(tau), max(0.0, float(factor)), 0.0
        self._rebase = True

    def scaled(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The trajectory's state at tau, played at the current factor: (q, qd f, qdd f^2 + qd df/dt)."""
        f = self.factor
        if f == 1.0 and self.rate == 0.0:
            return q, qd, qdd
        return q, qd * f, qdd * (f * f) + qd * self.rate

    def end_time(self, now: float, duration: float) -> float:
        """The control time at which tau reached ``duration`` (tau > duration at ``now``)."""
        over = self.tau - duration
        return now - over / self.factor if self.factor > 0.0 else now


REJOIN_WINDOW = 1.0
"""s of the trajectory searched ahead of where it paused (a braked arm stops ~v / (2 B) s of path ahead)."""
REJOIN_STEP = 1e-3


def rejoin(traj: Any, tau: float, q: np.ndarray, qd: np.ndarray) -> tuple[float, float, float]:
    """Where a paused trajectory goes on: (the trajectory's time of its point nearest ``q`` within 0.05 s before
    ``tau`` and :data:`REJOIN_WINDOW` s after it, the distance max_j |q_j(t) - q_j| there, the arm's pace along the
    path there: qd . q'(t) / |q'(t)|^2, clipped to [0, 1]; 0 where the path is at rest)."""
    times = np.clip(tau + np.arange(-0.05, REJOIN_WINDOW + REJOIN_STEP / 2, REJOIN_STEP), 0.0, traj.duration)
    qs, vs, _ = traj.evaluate(times)
    dist = np.max(np.abs(qs - q), axis=1)
    k = int(np.argmin(dist))
    v = vs[k]
    vv = float(v @ v)
    pace = float(np.clip(qd @ v / vv, 0.0, 1.0)) if vv > 1e-12 else 0.0
    return float(times[k]), float(dist[k]), pace


__all__ = ["RAMP_TIME", "REJOIN_WINDOW", "TrajectoryClock", "factor_error", "rejoin"]
