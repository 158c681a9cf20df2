"""``mujoco_sim``'s ``pause_at_time``: the period that reaches it pauses the simulation, once (the pure rule; the
node tests of speed scaling stop the arm with it at an exact simulated time and check the time it stopped at)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from robot_dynamics.ros.mujoco_sim import PARAMETERS, pause_due

P = 0.002  # s: a control period


def test_the_period_reaching_the_time_pauses_not_the_one_after():
    assert pause_due(0.998, 1.0, 1.0)  # ends exactly there
    assert pause_due(0.998, 1.0, 1.0 + 0.9e-9)  # 1 ns of rounding forgiven at the end
    assert not pause_due(0.998, 1.0, 1.0 + 1.1e-9)  # just outside: the next period's
    assert pause_due(1.0, 1.002, 1.0 + 1.1e-9)
    assert not pause_due(1.0, 1.002, 1.0)  # started there: paused already (resumed since)
    assert not pause_due(1.0, 1.002, 1.0 + 0.9e-9)
    assert pause_due(0.998, 1.0, 0.999)  # inside the period: its end
    assert not pause_due(0.998, 1.0, 0.0)  # 0: never


@given(k=st.integers(0, 10_000), at=st.floats(1e-6, 25.0))
def test_exactly_one_period_of_a_run_pauses(k, at):
    """Along a run of periods from 0, exactly one period pauses for any ``at`` inside the run (none past it)."""
    t = np.arange(k + 1) * P
    due = [pause_due(a, b, at) for a, b in zip(t[:-1], t[1:], strict=True)]
    assert sum(due) == (1 if at <= t[-1] + 1e-9 else 0)


def test_the_parameter_is_live_and_bounded():
    p = PARAMETERS.params["pause_at_time"]
    assert p.default == 0.0 and p.live and p.unit == "s"
    assert p.check(0.0) == 0.0 and p.check(1e9) == 1e9
    for bad in (np.nextafter(0.0, -1.0), np.nextafter(1e9, 2e9)):
        with pytest.raises(ValueError):
            p.check(float(bad))
