"""The identifier's recording on a busy host (``robot_dynamics.ros.identifier``): the states of the excitation that
were still queued when the goal's result came are taken before the recording ends.  Seen under a CPU hog: the
recording ended with the result while 1.8 s of the 8 s excitation waited in the starved executor's queue (2883 of
~4000 samples), the estimate explained the held-out efforts worse (RMS 1.108 -> 6.467 N m) and the swap was
refused."""

from __future__ import annotations

import pytest
from sensor_msgs.msg import JointState

from robot_dynamics.ros.identifier import SAME_CLOCK, STATE_DEPTH, _Recording, backlog_pending


def test_backlog_pending_at_its_boundaries() -> None:
    t_end = 1234.5
    assert backlog_pending(t_end - 1e-6, t_end)  # just behind: a state stamped before the result may be queued
    assert not backlog_pending(t_end, t_end)  # at the result's time: everything before it was taken
    assert not backlog_pending(t_end + 0.002, t_end)
    assert backlog_pending(t_end - SAME_CLOCK + 1e-6, t_end)  # far behind, the same clock: still waited for
    assert not backlog_pending(t_end - SAME_CLOCK, t_end)  # another clock (or unstamped): never waited for
    assert not backlog_pending(None, t_end)  # nothing recorded yet: the recording's own check says so


def test_recording_latest_is_the_last_complete_sample() -> None:
    rec = _Recording(["a", "b"])
    assert rec.latest() is None
    m = JointState(name=["a"], position=[0.1], effort=[1.0])
    m.header.stamp.sec, m.header.stamp.nanosec = 10, 500_000_000
    rec.add(m, 99.0)
    assert rec.latest() is None  # joint b not seen yet: no complete sample
    m2 = JointState(name=["b"], position=[0.2], effort=[2.0])
    m2.header.stamp.sec, m2.header.stamp.nanosec = 10, 502_000_000
    rec.add(m2, 99.0)
    assert rec.latest() == pytest.approx(10.502)
    unstamped = JointState(name=["a", "b"], position=[0.1, 0.2], effort=[1.0, 2.0])
    rec.add(unstamped, 99.0)  # stamp 0: the arrival time on the node clock
    assert rec.latest() == 99.0


def test_the_subscription_holds_ten_seconds_at_1khz() -> None:
    assert STATE_DEPTH >= 10 * 1000
