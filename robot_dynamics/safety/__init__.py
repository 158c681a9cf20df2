"""The robot's safety envelope: the limits of its description as invariants.

* :class:`SafetyEnvelope` (``envelope.py``): commands clipped to the description's effort limits (a
  parameter may only lower them), impossible measured states refused, hold targets inside the limits,
  plans checked on their interpolated path (an arm outside its limits may only be brought back);
  :func:`check_gains`: gains the sampled loop realizes at its rate;
* :class:`StateMonitor` (``state_monitor.py``): which measured state the loop may trust (stamps, order,
  jumps, two sources disagreeing);
* :class:`LimitGuard` (``limit_guard.py``): the acceleration bounds that keep every command's joint motion inside
  the position and velocity limits (discrete-time viability), the last guard before the effort clip;
* :class:`Refused` (``refusal.py``): the one exception of a refused input, with a stable cause key.

Pure NumPy (no rclpy): the nodes wire these checks, the tests call them at their boundaries.
"""

from .envelope import (
    GAIN_MARGIN,
    JUMP_MARGIN,
    LIMIT_RTOL,
    POSITION_MARGIN,
    VELOCITY_MARGIN,
    SafetyEnvelope,
    check_gains,
)
from .limit_guard import (
    GUARD_HORIZON,
    GUARD_PERIODS,
    Extremes,
    LimitGuard,
    braking_acceleration,
    check_holding,
    sampled_extremes,
)
from .refusal import Refused
from .state_monitor import ARRIVAL_SLACK, CONFIRM_STATES, StateMonitor

__all__ = ["ARRIVAL_SLACK", "CONFIRM_STATES", "GAIN_MARGIN", "GUARD_HORIZON", "GUARD_PERIODS", "JUMP_MARGIN",
           "LIMIT_RTOL", "POSITION_MARGIN", "VELOCITY_MARGIN", "Extremes", "LimitGuard", "Refused", "SafetyEnvelope",
           "StateMonitor", "braking_acceleration", "check_gains", "check_holding", "sampled_extremes"]
