"""The control loop's ``/diagnostics`` level (:func:`robot_dynamics.ros.controller.health.loop_level`), pure: each
rule at its boundary, and a property over all inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from robot_dynamics.ros.controller.health import MISSED_WARN_PCT, loop_level
from robot_dynamics.ros.controller.modes import HOLDING, NO_MODEL, NO_STATE, STALE, TRACKING
from robot_dynamics.ros.levels import ERROR, OK, WARN

FIGURES = dict(window_cycles=125, lockstep=False, missed_pct=0.0, saturated=[], rate_hz=250.0, nominal_hz=250.0,
               p99_ms=0.25, period_s=0.5)


def level(mode: str = HOLDING, reason: str = "r", **changes) -> tuple[int, str]:
    return loop_level(mode, reason, **{**FIGURES, **changes})


def test_missed_cycles_warn_from_one_percent():
    assert MISSED_WARN_PCT == 1.0
    just_inside = np.nextafter(MISSED_WARN_PCT, 0.0)
    assert level(missed_pct=just_inside) == (OK, "holding at 250 Hz (nominal 250), period error p99 0.250 ms")
    lvl, msg = level(missed_pct=MISSED_WARN_PCT)
    assert lvl == WARN and msg.endswith("; missed 1.0 % of cycles"), msg
    # in lockstep the cycles follow the states: no period to miss, whatever the figure says
    assert level(missed_pct=50.0, lockstep=True)[0] == OK


def test_a_saturated_joint_warns():
    lvl, msg = level(mode=TRACKING, saturated=["joint2", "joint3"])
    assert lvl == WARN and msg == "tracking at 250 Hz (nominal 250), period error p99 0.250 ms; saturated: joint2, joint3"
    lvl, msg = level(missed_pct=2.0, saturated=["joint1"])
    assert lvl == WARN and msg.endswith("; missed 2.0 % of cycles; saturated: joint1"), msg


def test_no_cycle_in_the_period_is_an_error_but_in_lockstep():
    assert level(window_cycles=1, missed_pct=99.0)[0] == WARN  # one cycle: running, starved
    assert level(window_cycles=0, period_s=0.5) == (ERROR, "holding, but no control cycle for 0.50 s")
    assert level(window_cycles=0, lockstep=True)[0] == OK


def test_modes_before_and_outside_control():
    assert level(mode=STALE, reason="no valid joint state for 0.6 s") == (ERROR, "stale: no valid joint state for 0.6 s")
    assert level(mode=NO_MODEL, reason="waiting") == (WARN, "no_model: waiting")
    assert level(mode=NO_STATE, reason="waiting", window_cycles=0) == (WARN, "no_state: waiting")


@given(mode=st.sampled_from([HOLDING, TRACKING, STALE, NO_MODEL, NO_STATE]), cycles=st.integers(0, 1000),
       lockstep=st.booleans(), missed=st.floats(0.0, 100.0), saturated=st.lists(st.sampled_from(["a", "b"]), max_size=2))
def test_ok_exactly_when_controlling_on_time(mode, cycles, lockstep, missed, saturated):
    lvl, msg = level(mode=mode, window_cycles=cycles, lockstep=lockstep, missed_pct=missed, saturated=saturated)
    controlling = mode in (HOLDING, TRACKING) and (cycles > 0 or lockstep)
    on_time = lockstep or missed < MISSED_WARN_PCT
    assert (lvl == OK) == (controlling and on_time and not saturated), (lvl, msg)
    assert (lvl == ERROR) == (mode == STALE or (mode in (HOLDING, TRACKING) and cycles == 0 and not lockstep))
    assert msg and "\n" not in msg
