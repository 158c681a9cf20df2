"""Which measured joint state the control loop trusts (issue 29): stamps, order, impossible values, jumps and two
sources disagreeing.  Every check at its boundary, and property tests of the invariants.  Pure, no processes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.safety import ARRIVAL_SLACK, CONFIRM_STATES, Refused, SafetyEnvelope, StateMonitor
from robot_dynamics.safety.state_monitor import FUTURE_SLACK

NAMES = ("j1", "j2")
LOWER = np.array([-2.0, -1.0])
UPPER = np.array([2.0, 1.5])
VEL = np.array([3.0, 2.0])
EFF = np.array([100.0, 50.0])
TIMEOUT = 0.1
ZERO = np.zeros(2)
DT = 2.0**-9  # ~2 ms; times are exact binary fractions so that the boundaries are exact


def up(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def env() -> SafetyEnvelope:
    return SafetyEnvelope(NAMES, LOWER, UPPER, VEL, EFF)


def monitor() -> StateMonitor:
    return StateMonitor(env(), TIMEOUT)


def refused(cause: str, mon: StateMonitor, q, stamp: float, now: float, qd=ZERO) -> str:
    with pytest.raises(Refused) as info:
        mon.judge(np.asarray(q, float), np.asarray(qd, float), stamp, now)
    assert info.value.cause == cause, str(info.value)
    return str(info.value)


def test_first_plausible_state_is_trusted_and_unstamped_takes_the_clock():
    mon = monitor()
    assert mon.judge(np.array([0.1, 0.2]), ZERO, 0.0, 5.0) == 5.0
    assert mon.anchor is not None and mon.anchor.stamp == 5.0


def test_stamp_age_boundaries():
    mon = monitor()
    now = 0.0  # ages are then exact: now - stamp == -stamp
    mon.judge(ZERO, ZERO, -TIMEOUT, now)  # exactly state_timeout old: accepted
    mon.reset()
    refused("stale_stamp", mon, ZERO, -up(TIMEOUT), now)
    # ahead of the clock: up to FUTURE_SLACK (the clock's lag: a lost /clock sample), or the timeout if longer
    assert FUTURE_SLACK > TIMEOUT
    mon.judge(ZERO, ZERO, FUTURE_SLACK, now)  # exactly FUTURE_SLACK ahead: accepted
    mon.reset()
    refused("future_stamp", mon, ZERO, up(FUTURE_SLACK), now)
    long = StateMonitor(env(), 4.0)
    long.judge(ZERO, ZERO, 4.0, now)  # exactly a longer state_timeout ahead: accepted
    long.reset()
    refused("future_stamp", long, ZERO, up(4.0), now)


def test_out_of_order_boundary():
    mon = monitor()
    mon.judge(ZERO, ZERO, 10.0, 10.0)
    mon.judge(ZERO, ZERO, 10.0, 10.001)  # the same stamp again: not older, accepted
    refused("out_of_order", mon, ZERO, float(np.nextafter(10.0, 0.0)), 10.002)
    assert mon.anchor.stamp == 10.0 and not mon.in_conflict  # an old but consistent state is only dropped


def test_impossible_states_are_refused_and_do_not_move_the_anchor():
    mon = monitor()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    refused("position_limits", mon, [1e300, 0.0], 1.001, 1.001)
    refused("position_limits", mon, [10.0, 0.0], 1.002, 1.002)
    refused("velocity_limits", mon, ZERO, 1.003, 1.003, qd=[0.0, 1e300])
    mon.judge(ZERO, ZERO, 1.004, 1.004)  # the true stream goes on: no conflict from impossible values
    assert not mon.in_conflict


def test_beyond_the_margin_only_when_reached_continuously_from_a_trusted_state():
    """An arm that really overshoots its limits (a starved drive, a hard stop beyond the soft limit) stays under
    control: its states are trusted while they follow the trusted stream; a state beyond the margin out of nowhere
    (first, after a conflict, a jump, out of order) is impossible and refused without touching the stream."""
    e = env()
    m = e.position_margin
    edge = UPPER[0] + m
    mon = monitor()
    refused("position_limits", mon, [up(edge), 0.0], 1.0, 1.0)  # no trusted state yet: just beyond, refused
    assert mon.anchor is None and mon.previous is None
    mon.judge(np.array([edge, 0.0]), ZERO, 1.0, 1.0)  # exactly at the margin: trusted
    step = float(e.max_jump(DT)[0])
    far = edge + step * (1 - 1e-9)  # (just less than) as far as the joint can move in DT: continuous, trusted
    assert mon.judge(np.array([far, 0.0]), ZERO, 1.0 + DT, 1.0 + DT) == 1.0 + DT
    # beyond the margin and older than the trusted state: refused as impossible, the anchor stays
    refused("position_limits", mon, [far, 0.0], 1.0, 1.0 + 2 * DT)
    # beyond the margin and farther than possible from the trusted state: impossible, no conflict entered
    msg = refused("position_limits", mon, [far + step * (1 + 1e-9), 0.0], 1.0 + 2 * DT, 1.0 + 2 * DT)
    assert "joint_states says j1" in msg and "margin" in msg
    assert not mon.in_conflict and mon.anchor.q[0] == far
    # and back toward the range, trusted
    mon.judge(np.array([edge, 0.0]), ZERO, 1.0 + 3 * DT, 1.0 + 3 * DT)
    # after a conflict there is no trusted state: beyond the margin is refused again
    mon.judge(np.array([edge, 0.0]), ZERO, 1.0 + 4 * DT, 1.0 + 4 * DT)
    refused("position_jump", mon, [0.0, 0.0], 1.0 + 5 * DT, 1.0 + 5 * DT)
    refused("position_limits", mon, [up(edge), 0.0], 1.0 + 6 * DT, 1.0 + 6 * DT)


def test_jump_boundary():
    e = env()
    mon = monitor()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    allowed = e.max_jump(DT)
    mon.judge(np.array([allowed[0], 0.0]), ZERO, 1.0 + DT, 1.0 + DT)  # exactly the bound: accepted
    mon.reset()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    text = refused("position_jump", mon, [0.0, up(float(allowed[1]))], 1.0 + DT, 1.0 + DT)
    assert "j2 moved" in text and mon.in_conflict


def test_a_stamp_ahead_of_the_clock_buys_no_room():
    """The time between two states is the stamp difference, but at most the arrival difference + ARRIVAL_SLACK:
    a state stamped 0.099 s ahead arriving 1 ms after the last one may move only as far as 21 ms allow."""
    e = env()
    mon = monitor()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    gap = 2.0**-10  # arrival 1 ms after the last state
    allowed = e.max_jump(gap + ARRIVAL_SLACK)[0]
    mon.judge(np.array([allowed, 0.0]), ZERO, 1.099, 1.0 + gap)
    mon.reset()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    refused("position_jump", mon, [up(float(allowed)), 0.0], 1.099, 1.0 + gap)


def _interleave(mon: StateMonitor, t0: float, steps: int, offset: float, q0: float = 0.0) -> list[tuple[bool, float]]:
    """A true stream (q0) and a second publisher claiming q0 + offset, alternating every DT / 2."""
    out = []
    for k in range(steps):
        for lie in (False, True):
            t = t0 + k * DT + (DT / 2 if lie else 0.0)
            try:
                mon.judge(np.array([q0 + (offset if lie else 0.0), 0.0]), ZERO, t, t)
                out.append((lie, t))
            except Refused:
                pass
    return out


def test_two_publishers_disagreeing_are_refused_both_while_both_publish():
    mon = monitor()
    accepted = _interleave(mon, 1.0, 200, 0.3)  # 0.4 s of two sources 0.3 rad apart
    assert accepted == [(False, 1.0)]  # only the very first state, before the second source appeared
    assert mon.in_conflict and mon.conflicts == 1


def test_conflict_ends_after_the_hold_and_confirmation():
    mon = monitor()
    _interleave(mon, 1.0, 50, 0.3)
    last_lie = 1.0 + 49 * DT + DT / 2
    hold = mon.conflict_hold
    t = last_lie + DT / 2
    k = 0
    accepted_at = None
    while t < last_lie + 3 * hold:
        try:
            mon.judge(ZERO, ZERO, t, t)
            accepted_at = t
            break
        except Refused as exc:
            assert exc.cause in ("conflicting_states", "unconfirmed_state")
        k += 1
        t += DT
    assert accepted_at is not None
    # not before the hold has passed since the last disagreement (the first true state after the lie)
    assert accepted_at >= last_lie + DT / 2 + hold
    assert k + 1 >= CONFIRM_STATES
    assert not mon.in_conflict


def test_confirmation_needs_consecutive_consistent_states():
    mon = StateMonitor(env(), TIMEOUT, conflict_hold=0.0)
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    refused("position_jump", mon, [1.0, 0.0], 1.001, 1.001)
    for k in range(CONFIRM_STATES - 1):  # consistent states after the disagreement: the run grows
        refused("unconfirmed_state", mon, [1.0, 0.0], 1.002 + k * 0.001, 1.002 + k * 0.001)
    mon.judge(np.array([1.0, 0.0]), ZERO, 1.01, 1.01)  # the CONFIRM_STATES-th: trusted
    assert mon.anchor.q[0] == 1.0


def test_a_stream_jumping_every_state_is_never_trusted():
    mon = monitor()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    for k in range(1, 500):
        t = 1.0 + k * DT
        q = np.array([(k % 2) * 1.0, 0.0])  # jumps by 1 rad every state
        with pytest.raises(Refused):
            mon.judge(q, ZERO, t, t)


def test_reset_trusts_the_next_state_at_once():
    mon = monitor()
    mon.judge(ZERO, ZERO, 1.0, 1.0)
    refused("position_jump", mon, [1.0, 0.0], 1.001, 1.001)
    mon.reset()
    mon.judge(np.array([1.0, 0.0]), ZERO, 1.002, 1.002)
    assert not mon.in_conflict


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(0.0, 0.01), st.floats(-0.05, 0.05)),
                min_size=2, max_size=60))
def test_property_trusted_states_are_possible_and_move_no_faster_than_possible(events):
    """Whatever the stream (values, arrival gaps, stamp offsets): a trusted state beyond the limits and margins
    was reached continuously from the one trusted before it (the first one, and the first after a conflict, are
    within them), and two consecutive trusted states are no farther apart than the joints can move between them."""
    e = env()
    mon = StateMonitor(e, TIMEOUT)
    t = 1.0
    trusted = []
    for value, gap, stamp_offset in events:
        t += gap
        q = np.array([value, 0.0])
        try:
            stamp = mon.judge(q, ZERO, t + stamp_offset, t)
        except Refused:
            continue
        trusted.append((q, stamp, t, mon.conflicts))
    def inside(q: np.ndarray) -> bool:
        return bool(LOWER[0] - e.position_margin <= q[0] <= UPPER[0] + e.position_margin)

    if trusted:
        assert inside(trusted[0][0])  # the first trusted state is possible on its own
    for (qa, sa, ta, ca), (qb, sb, tb, cb) in zip(trusted, trusted[1:], strict=False):
        if ca != cb:  # a conflict in between: the stream was re-established by confirmation, from a possible state
            assert inside(qb)
            continue
        assert sb >= sa
        dt = min(abs(sb - sa), max(tb - ta, 0.0) + ARRIVAL_SLACK)
        assert abs(qb[0] - qa[0]) <= e.max_jump(dt)[0]
