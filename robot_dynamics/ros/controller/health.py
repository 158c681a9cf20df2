"""The control loop's ``/diagnostics`` level and message from the figures of one diagnostic period, pure (the node's
:mod:`.reporting` gathers the figures and publishes what this returns).

OK: holding or tracking, fewer than :data:`MISSED_WARN_PCT` % of the cycles missed and no joint saturated; WARN:
missed >= :data:`MISSED_WARN_PCT` % (a starved or overloaded loop), a saturated joint, no model or no state yet;
ERROR: stale states, or no control cycle in the whole period while it should run (the timer loop; in lockstep the
cycles follow the states and there is no period to miss)."""

from __future__ import annotations

from ..levels import ERROR, OK, WARN
from .modes import NO_MODEL, NO_STATE, STALE

MISSED_WARN_PCT = 1.0  # %, of the nominal cycles in a diagnostic period


def loop_level(mode: str, reason: str, *, window_cycles: int, lockstep: bool, missed_pct: float,
               saturated: list[str], rate_hz: float, nominal_hz: float, p99_ms: float, period_s: float
               ) -> tuple[int, str]:
    """(level, one-line message) of the loop over one diagnostic period of ``period_s`` s."""
    if mode == STALE:
        return ERROR, f"stale: {reason}"
    if mode in (NO_MODEL, NO_STATE):
        return WARN, f"{mode}: {reason}"
    if not window_cycles and not lockstep:
        return ERROR, f"{mode}, but no control cycle for {period_s:.2f} s"
    level, problems = OK, []
    if not lockstep and missed_pct >= MISSED_WARN_PCT:
        level = WARN
        problems.append(f"missed {missed_pct:.1f} % of cycles")
    if saturated:
        level = WARN
        problems.append(f"saturated: {', '.join(saturated)}")
    line = f"{mode} at {rate_hz:.0f} Hz (nominal {nominal_hz:.0f}), period error p99 {p99_ms:.3f} ms"
    return level, "; ".join([line, *problems])
