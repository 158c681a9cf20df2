"""Judging a stream of measured joint states: which one the control loop may trust.

:class:`StateMonitor` takes each state that passed the message checks (names, lengths, finite values) with
its stamp and the time it arrived, and accepts it or raises :class:`~robot_dynamics.safety.refusal.Refused`
with a cause:

* ``stale_stamp`` / ``future_stamp``: stamped more than ``timeout`` before / more than ``max(timeout,``
  :data:`FUTURE_SLACK` ``)`` after the clock;
* ``velocity_limits``: impossible for the robot (:meth:`SafetyEnvelope.check_velocity`);
* ``position_limits``: farther outside the limits than the margin (:meth:`SafetyEnvelope.check_position`),
  unless the stream reached it continuously from its last trusted state (no jump, in order): an arm that
  really overshoots its limits (a starved drive, a hard stop beyond the soft limit) stays under control and is
  brought back, while a state out of nowhere (the first one, after a conflict, or a jump) is impossible;
* ``out_of_order``: older than the last accepted state (but consistent with it);
* ``position_jump``: farther from the last accepted state than the joints can move in the time between them
  (:meth:`SafetyEnvelope.max_jump`; the time is the stamp difference, but at most the arrival difference plus
  :data:`ARRIVAL_SLACK`, so a state cannot buy room with a stamp ahead of the clock).  A jump is a second
  source disagreeing with the first (two publishers of one joint), or a sensor fault: the monitor cannot know
  which state is true, so it trusts none (**conflict**);
* ``conflicting_states``: during a conflict every state is refused; it lasts until no state has disagreed
  with its predecessor for ``conflict_hold`` seconds, and then ``confirm`` consecutive mutually consistent
  states are needed (``unconfirmed_state`` until then) before one is trusted again.

The caller (the controller) goes ``stale`` when no state is accepted for ``timeout`` seconds (safe output)
and holds where the first trusted state puts the arm.  :meth:`reset` forgets the stream (a time jump, a new
robot): the next plausible state is trusted at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .envelope import SafetyEnvelope
from .refusal import Refused

ARRIVAL_SLACK = 0.02
"""s: the time between two states judged from their stamps, but at most their arrival difference plus this
(delivery jitter: states may arrive bunched after a stall of the host)."""
FUTURE_SLACK = 1.0
"""s: a stamp up to this far ahead of the clock (or ``timeout``, if longer) is the clock's lag, not the state's: the
clock a loop judges against is the last /clock it took, and a busy host loses best-effort /clock samples (states
stamped 0.108 s ahead refused with a 0.1 s timeout, a goal aborted for it).  Farther is another time base (system
stamps against sim time) or a lie."""
CONFIRM_STATES = 3
"""Consecutive mutually consistent states needed to trust the stream again after a conflict."""


@dataclass
class _Sample:
    q: np.ndarray
    stamp: float
    arrival: float


class StateMonitor:
    """Accepts or refuses each measured state (see the module docstring); not thread-safe (one caller)."""

    def __init__(self, envelope: SafetyEnvelope, timeout: float, *, conflict_hold: float | None = None,
                 confirm: int = CONFIRM_STATES) -> None:
        self.envelope = envelope
        self.timeout = float(timeout)
        self._hold = conflict_hold
        self.confirm = int(confirm)
        self.reset()

    @property
    def conflict_hold(self) -> float:
        """s without disagreement before a conflict ends (default max(2 timeout, 0.2 s))."""
        return self._hold if self._hold is not None else max(2.0 * self.timeout, 0.2)

    def reset(self) -> None:
        """Forget the stream: the next plausible state is trusted at once."""
        self.anchor: _Sample | None = None  # the last accepted state
        self.previous: _Sample | None = None  # the last plausible state, accepted or not (arrival order)
        self.run = 0  # consecutive plausible states consistent with their predecessor
        self.conflict_until = -np.inf  # arrival time until which every state is refused
        self.confirming = False  # after a conflict: ``confirm`` consistent states before trusting one
        self.conflicts = 0

    @property
    def in_conflict(self) -> bool:
        """True from a disagreement until a state is trusted again."""
        return self.confirming

    def _dt(self, a: _Sample, stamp: float, arrival: float) -> float:
        """Seconds a joint may have moved between sample ``a`` and a state (stamp, arrival)."""
        return min(abs(stamp - a.stamp), max(arrival - a.arrival, 0.0) + ARRIVAL_SLACK)

    def _jump(self, a: _Sample, q: np.ndarray, stamp: float, arrival: float) -> tuple[int, float, float] | None:
        """(joint, distance, allowed) of the largest move beyond the envelope's bound since ``a``; None if none."""
        dt = self._dt(a, stamp, arrival)
        allowed = self.envelope.max_jump(dt)
        dist = np.abs(q - a.q)
        over = dist - allowed
        if np.any(over > 0):
            j = int(np.argmax(over))
            return j, float(dist[j]), float(allowed[j])
        return None

    def judge(self, q: np.ndarray, qd: np.ndarray, stamp: float, now: float) -> float:
        """Accept the state (returns its stamp; 0 = unstamped becomes ``now``) or raise ``Refused``.  ``now`` is
        the clock the stamps are judged against, and the state's arrival time."""
        if stamp == 0.0:
            stamp = now
        age = now - stamp
        if age > self.timeout:
            raise Refused("stale_stamp", f"joint_states stamped {age:.3f} s in the past (state_timeout {self.timeout} s)")
        if age < -max(self.timeout, FUTURE_SLACK):
            raise Refused("future_stamp", f"joint_states stamped {-age:.3f} s in the future (more than "
                                          f"{max(self.timeout, FUTURE_SLACK):g} s ahead of the clock)")
        env = self.envelope
        env.check_velocity(qd)
        try:
            env.check_position(q)
        except Refused:
            a = self.anchor
            if a is None or stamp < a.stamp or self._jump(a, q, stamp, now) is not None:
                raise  # not reached continuously from a trusted state: impossible (the stream is untouched)
        names = env.names
        prev = self.previous
        consistent = prev is None or self._jump(prev, q, stamp, now) is None
        self.run = self.run + 1 if consistent else 1
        self.previous = _Sample(q, stamp, now)
        if not consistent and (self.anchor is not None or self.confirming or now < self.conflict_until):
            self.conflict_until = now + self.conflict_hold  # still two streams (or a faulty one)
        anchor = self.anchor
        if anchor is not None:
            jump = self._jump(anchor, q, stamp, now)
            if jump is not None:
                j, dist, allowed = jump
                self._enter_conflict(now)
                raise Refused("position_jump", f"joint_states says {names[j]} moved {dist:.4g} since the last "
                                               f"trusted state ({allowed:.3g} possible in the time between them): two "
                                               "sources disagree, or a sensor fault; no state is trusted for "
                                               f"{self.conflict_hold:g} s")
            if stamp < anchor.stamp:
                raise Refused("out_of_order", "joint_states older than the last accepted one")
        elif now < self.conflict_until:
            raise Refused("conflicting_states", f"joint_states disagree with each other (a second source or a faulty "
                                                f"sensor): refused until they agree for {self.conflict_hold:g} s")
        elif self.confirming and self.run < self.confirm:
            raise Refused("unconfirmed_state", f"after conflicting joint states: {self.run} of {self.confirm} "
                                               "consistent states")
        self.confirming = False
        self.anchor = _Sample(q, stamp, now)
        return stamp

    def _enter_conflict(self, now: float) -> None:
        self.anchor = None
        self.confirming = True
        self.run = 0  # the states after the disagreement must confirm the stream
        self.conflict_until = now + self.conflict_hold
        self.conflicts += 1


__all__ = ["ARRIVAL_SLACK", "CONFIRM_STATES", "FUTURE_SLACK", "StateMonitor"]
