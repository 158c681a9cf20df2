"""Safety of the simulated arm (issue 13): holding brake until a controller takes over, drive watchdog, command
validation and clipping, deterministic lockstep protocol, ``~/reset``.  Real ``mujoco_sim`` processes; the test
process plays the controller.  Timings are printed (run with ``-s``), never asserted."""

from __future__ import annotations

import itertools
import json
import random
import re
import time
from collections.abc import Callable

import numpy as np
import pytest
import rclpy
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import call_service, node_process, wait_for_service
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from std_srvs.srv import Trigger

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.lockstep import label_answer, label_hold, stamp_ns
from robot_dynamics.ros.mujoco_sim import GAP_PERIODS
from robot_dynamics.ros.node_set import config_dir

pytestmark = pytest.mark.ros

DRIVE_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RX90_Q0 = [0.1, -0.5, 0.8, 0.2, 0.3, 0.1]
P2R_Q0 = [0.3, -0.2]
PERIOD_NS = 2_000_000
WAITING = "braked: waiting for the first command"


def _sim(tmp_path, robot: str, **params):
    return node_process("mujoco_sim", tmp_path, params={"urdf_path": resolve_urdf(robot), **params},
                        param_files=[config_dir() / f"{robot}.yaml"])


def _log(tmp_path) -> str:
    return (tmp_path / "mujoco_sim.log").read_text()


class Probe:
    """The test's side of the topics: records states (with arrival wall time), drive states and /clock."""

    def __init__(self, node) -> None:
        self.node = node
        self.states: list[tuple[float, int, np.ndarray, np.ndarray, np.ndarray]] = []
        self.drive: list[str] = []
        self.clock: list[int] = []
        self.on_state: Callable[[JointState], None] | None = None
        self.last_moving = -1  # index of the last state with a nonzero velocity
        node.create_subscription(JointState, "/joint_states", self._state, 1000)
        node.create_subscription(String, "/mujoco_sim/drive_state", lambda m: self.drive.append(m.data), DRIVE_QOS)
        node.create_subscription(Clock, "/clock", lambda m: self.clock.append(stamp_ns(m.clock)), 1000)
        self.pub = node.create_publisher(Float64MultiArray, "/effort_controller/commands", 100)
        self.stats = node.create_client(Trigger, "/mujoco_sim/statistics")
        self.reset = node.create_client(Trigger, "/mujoco_sim/reset")

    def _state(self, m: JointState) -> None:
        self.states.append((time.monotonic(), stamp_ns(m.header.stamp), np.array(m.position), np.array(m.velocity),
                            np.array(m.effort)))
        if np.any(self.states[-1][3] != 0.0):
            self.last_moving = len(self.states) - 1
        if self.on_state is not None:
            self.on_state(m)

    def spin(self, seconds: float, each: Callable[[], None] | None = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if each is not None:
                each()
            rclpy.spin_once(self.node, timeout_sec=0.001 if each is not None else 0.01)

    def until(self, cond: Callable[[], bool], timeout: float, what: str, each: Callable[[], None] | None = None):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            if each is not None:
                each()
            rclpy.spin_once(self.node, timeout_sec=0.001 if each is not None else 0.01)

    def ready(self, sim) -> None:
        wait_for_service(self.stats, 60)
        self.until(lambda: bool(self.states) and bool(self.drive) and "no robot model" not in self.drive[-1], 30,
                   "no state or drive state from the sim")
        while self.pub.get_subscription_count() == 0:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        assert sim.poll() is None

    def send(self, values) -> None:
        self.pub.publish(Float64MultiArray(data=[float(v) for v in values]))

    def statistics(self) -> dict:
        return json.loads(call_service(self.node, self.stats, Trigger.Request()).message)


class Pacer:
    """Publishes ``values`` at ``rate`` Hz (wall) while the probe spins; remembers the last send."""

    def __init__(self, probe: Probe, values, rate: float = 500.0) -> None:
        self.probe, self.values, self.dt = probe, values, 1.0 / rate
        self.next = 0.0
        self.last_wall = None
        self.last_state_stamp = None

    def __call__(self) -> None:
        now = time.monotonic()
        if now >= self.next:
            self.next = now + self.dt
            self.probe.send(self.values)
            self.last_wall = now
            self.last_state_stamp = self.probe.states[-1][1] if self.probe.states else None


@pytest.fixture
def probe():
    rclpy.init()
    node = rclpy.create_node("test_mujoco_sim_safety")
    yield Probe(node)
    node.destroy_node()
    rclpy.shutdown()


def test_arm_held_until_first_command_real_time(probe, tmp_path):
    """(a) No command for 2 s in real time: the arm does not move at all, time advances, the brake carries gravity."""
    model = load_model("rx90")
    with _sim(tmp_path, "rx90", initial_positions=RX90_Q0) as sim:
        probe.ready(sim)
        first = len(probe.states)
        probe.spin(2.0)
        seg = probe.states[first:]
        assert sim.poll() is None
    q = np.array([s[2] for s in seg])
    assert len(seg) > 20
    assert np.abs(q - RX90_Q0).max() <= 1e-9
    assert np.all(np.array([s[3] for s in seg]) == 0.0)
    stamps = np.array([s[1] for s in seg])
    gaps = np.diff(stamps)
    assert np.all(gaps > 0) and np.all(gaps % PERIOD_NS == 0), "whole periods (a state may be lost under load)"
    assert len(probe.clock) > 20 and probe.clock[-1] > probe.clock[0]
    # the brake exerts gravity at the held pose (model law vs MuJoCo inverse dynamics)
    np.testing.assert_allclose(seg[-1][4], model.gravity_torques(np.array(RX90_Q0)), atol=1e-6)
    assert probe.drive[-1] == WAITING
    print(f"\n[a] {len(seg)} states in 2 s wall, sim time advanced {(stamps[-1] - stamps[0]) * 1e-9:.3f} s")


def test_runs_on_one_command_are_counted_in_sim_and_wall_time(probe, tmp_path):
    """~/statistics: a silence of 0.2 s between two valid commands (below command_timeout: no brake) is one run of
    about 100 periods on one command, in sim time (``long_runs_on_one_command``: [sim time of the next command,
    periods]) and on the steady clock (``long_runs_wall``: the same two, the wall time since the previous command,
    the longest wall gap between two periods), and ``periods_on_one_command`` holds the longest; the call clears
    the history."""
    g = load_model("planar2r").gravity_torques(np.array(P2R_Q0))
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0, command_timeout=0.5) as sim:
        probe.ready(sim)
        probe.send(g)
        probe.until(lambda: probe.drive[-1] == "running", 30, "the command did not release the brake")
        probe.statistics()  # clears the history
        probe.send(g)
        probe.spin(0.05)
        t0 = time.monotonic()
        probe.send(g)  # the run measured: from this command to the next one
        probe.spin(0.2)
        probe.send(g)
        wall = (time.monotonic() - t0) * 1e3
        probe.spin(0.1)
        stats = probe.statistics()
        again = probe.statistics()
        assert sim.poll() is None
    assert probe.drive[-1] == "running"
    period_ms = PERIOD_NS * 1e-6
    runs, walls = stats["long_runs_on_one_command"], stats["long_runs_wall"]
    assert len(runs) == len(walls) >= 1, (runs, walls)
    t, n = max(runs, key=lambda r: r[1])
    t_w, n_w, since_ms, tick_ms = max(walls, key=lambda r: r[1])
    assert (t_w, n_w) == (t, n)
    # ~100 periods of 2 ms on an idle host, fewer when the sim fell behind (62 seen on a busy one): no rate is
    # asserted, only that the run was counted and that its periods fit in the wall time the sim measured
    print(f"\nrun on one command: {n} periods, {since_ms:.1f} ms since the previous command (sent {wall:.1f} ms apart), "
          f"longest gap between two periods {tick_ms:.1f} ms")
    assert n >= GAP_PERIODS, n
    assert n * period_ms <= since_ms + 2 * period_ms, (n, since_ms)  # n periods fit in the wall time between
    assert period_ms * 0.5 <= tick_ms <= since_ms, tick_ms
    longest = stats["periods_on_one_command"]["since_last_call"]
    # the longest counts the run still going when the call came too (after the last command: long on a busy host)
    assert longest["periods"] >= n and longest["seconds"] == pytest.approx(longest["periods"] * period_ms * 1e-3)
    if longest["periods"] == n:
        assert longest["ended_at_sim_time"] == pytest.approx(t, abs=period_ms * 1e-3)
    else:
        assert longest["ended_at_sim_time"] > t
    assert again["long_runs_on_one_command"] == [] and again["long_runs_wall"] == []


def test_arm_frozen_until_first_command_lockstep(probe, tmp_path):
    """(a, lockstep) No command: time does not advance; the same state is republished for late joiners."""
    with _sim(tmp_path, "rx90", initial_positions=RX90_Q0, lockstep=True, noise_q=1e-3) as sim:
        probe.ready(sim)
        probe.spin(1.0)
        assert sim.poll() is None
    assert len(probe.states) >= 3
    assert {s[1] for s in probe.states} == {0}
    ref = probe.states[0]
    for s in probe.states:  # republished unchanged: the noise sample is not redrawn
        assert np.array_equal(s[2], ref[2]) and np.array_equal(s[4], ref[4])
    assert np.abs(ref[2] - RX90_Q0).max() < 1e-2
    assert probe.drive[-1] == WAITING
    gaps = np.diff([s[0] for s in probe.states])
    print(f"\n[a lockstep] republish period median {np.median(gaps) * 1e3:.1f} ms over {len(gaps)} gaps")


def test_watchdog_stops_arm_after_commands_stop(probe, tmp_path):
    """(b) A big constant torque for 0.3 s, then silence: the brake engages after command_timeout and the arm stays
    still; repeated trials give the stop-latency distribution (sim-time stamps and wall clock)."""
    tau = [18.0, -9.0]  # limits 20, 10 N m
    lat_stamp, lat_wall = [], []
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0) as sim:
        probe.ready(sim)
        for trial in range(12):
            n_drive = len(probe.drive)
            start = len(probe.states)
            pace = Pacer(probe, tau)
            probe.spin(0.3, pace)
            # (under load the states arrive late: wait for the stop to show in them, whatever the lag)
            probe.until(lambda n=start: probe.drive[-1] == "braked: command timeout" and probe.last_moving >= n
                        and len(probe.states) - probe.last_moving > 50, 30, "the arm did not move, then stop")
            seq = probe.drive[n_drive:]
            # running, braked: command timeout; more pairs only if this process stalled > 50 ms mid-stream.
            # ~/drive_state keeps its latest only (depth 1): on a busy host a transition may be replaced before this
            # reader has it (two "running" in a row), and the end of the previous trial's stall may arrive after its
            # wait ended (CI: this trial began with a "braked", its "running" replaced unread): the arm's own motion
            # below and the sim's own counts after the trials say it ran
            assert seq and seq[-1] == "braked: command timeout", seq
            assert set(seq) <= {"running", "braked: command timeout"}, seq
            assert max(np.abs(s[3]).max() for s in probe.states[start:]) > 0.1, "the torque did not move the arm"
            held = probe.states[probe.last_moving + 1:]
            for s in held:
                assert np.array_equal(s[2], held[0][2]) and np.all(s[3] == 0.0)
            lat_stamp.append((held[0][1] - pace.last_state_stamp) * 1e-9)
            lat_wall.append(held[0][0] - pace.last_wall)
            if trial == 0:
                assert np.any(np.abs(held[0][2] - P2R_Q0) > 0.01), "the arm should have moved before stopping"
        stats = probe.statistics()
        assert sim.poll() is None
    # the sim's own count: the start, the first release, then a brake per stream (and per stall of this process)
    # and a release per stream after the first (and per stall)
    engaged = _log(tmp_path).count("brake engaged: command timeout")
    back = _log(tmp_path).count("brake released: commands are back")
    spurious = engaged - 12
    assert spurious >= 0 and back == engaged - 1, (engaged, back)
    assert stats["drive_transitions"] == 2 + engaged + back, (stats, engaged, back)
    ls, lw = np.array(lat_stamp) * 1e3, np.array(lat_wall) * 1e3
    trip = np.array([float(x) for x in re.findall(r"no valid command for ([0-9.]+) ms", _log(tmp_path))])
    print(f"\n[b] stop latency (command_timeout 50 ms, period 2 ms), {len(ls)} trials:"
          f"\n    sim stamps: min {ls.min():.1f} median {np.median(ls):.1f} p90 {np.percentile(ls, 90):.1f} "
          f"max {ls.max():.1f} ms\n    wall clock: min {lw.min():.1f} median {np.median(lw):.1f} "
          f"p90 {np.percentile(lw, 90):.1f} max {lw.max():.1f} ms (last send -> first still state received)"
          f"\n    sim's own steady clock at the trip: min {trip.min():.1f} median {np.median(trip):.1f} "
          f"max {trip.max():.1f} ms since its last valid command; spurious trips while streaming: {spurious}")


def test_bad_commands_never_feed_the_watchdog(probe, tmp_path):
    """(c) NaN/inf commands are dropped: they neither release the brake nor keep the drive running (a NaN stream
    at 500 Hz during a 0.5 s command timeout); hostile messages (wrong lengths, garbage labels) are refused with
    their cause and the node stays up."""
    inf = float("inf")
    bad = itertools.cycle([[float("nan"), 1.0], [1.0, inf], [-inf, float("nan")]])
    send_bad = _each(lambda: probe.send(next(bad)), 500.0)

    def nonfinite() -> int:
        return probe.statistics()["refused"].get("command_nonfinite", 0)

    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0, command_timeout=0.5) as sim:
        probe.ready(sim)
        probe.spin(0.3, send_bad)
        probe.until(lambda: nonfinite() > 10, 30, "no NaN command reached the sim", send_bad)
        assert probe.drive[-1] == WAITING
        assert all(np.array_equal(s[2], P2R_Q0) for s in probe.states)
        n_drive = len(probe.drive)
        probe.send(load_model("planar2r").gravity_torques(np.array(P2R_Q0)))  # one valid command
        probe.until(lambda: probe.drive[-1] == "running", 30, "a valid command did not release the brake", send_bad)
        n_running = nonfinite()
        probe.until(lambda: probe.drive[-1] != "running", 30, "NaN commands kept the drive running", send_bad)
        n_braked = nonfinite()
        probe.spin(0.5, send_bad)
        assert probe.drive[n_drive:] == ["running", "braked: command timeout"], probe.drive[n_drive:]
        assert n_braked - n_running > 10, "NaN commands should have arrived while the drive ran"
        silence = float(re.findall(r"no valid command for ([0-9.]+) ms", _log(tmp_path))[-1])
        # hostile messages
        n_drive = len(probe.drive)
        for data in ([], [1.0], [1.0, 2.0, 3.0], [0.0] * 100_000):
            probe.send(data)
        m = Float64MultiArray(data=[0.5, 0.5])
        m.layout.dim = [MultiArrayDimension(label="state_stamp_ns=notanumber", size=7, stride=0)]
        probe.pub.publish(m)  # real time ignores labels: a valid command
        probe.until(lambda: probe.drive[n_drive:] == ["running", "braked: command timeout"], 30,
                    "one valid command, then silence: running, then braked")
        stats = probe.statistics()
        assert sim.poll() is None
    refused = stats["refused"]
    assert refused["command_length"] == 4, refused
    print(f"\n[c] {n_braked - n_running} NaN/inf commands taken while running; the watchdog tripped after "
          f"{silence:.1f} ms without a valid command (command_timeout 500 ms); refusals {refused}; "
          f"commands {stats['commands']}")


def _each(fn: Callable[[], None], rate: float) -> Callable[[], None]:
    state = {"next": 0.0}

    def call() -> None:
        now = time.monotonic()
        if now >= state["next"]:
            state["next"] = now + 1.0 / rate
            fn()

    return call


class Answerer:
    """A deterministic lockstep controller: answers each new state stamp with a PD law (re-sends the same command
    for a repeated stamp); with ``rng``, injects duplicate answers, stale labels, hold commands and delays."""

    def __init__(self, probe: Probe, n: int, rng: random.Random | None = None) -> None:
        self.probe, self.n, self.rng = probe, n, rng
        self.goal = np.array(RX90_Q0) + 0.3
        self.sent: dict[int, list[float]] = {}
        self.states: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        self.injected = {"duplicate": 0, "stale": 0, "hold": 0, "delay": 0, "republished_seen": 0}
        self.mismatch = 0

    def __call__(self, m: JointState) -> None:
        s = stamp_ns(m.header.stamp)
        q, qd, eff = np.array(m.position), np.array(m.velocity), np.array(m.effort)
        if s in self.sent:
            self.injected["republished_seen"] += 1
            first = next(x for x in self.states if x[0] == s)
            if not (np.array_equal(first[1], q) and np.array_equal(first[2], qd) and np.array_equal(first[3], eff)):
                self.mismatch += 1
            self._answer(s, self.sent[s])
            return
        if len(self.states) >= self.n or (not self.states and s != 0):
            return
        self.states.append((s, q, qd, eff))
        tau = (400.0 * (self.goal - q) - 40.0 * qd).tolist()
        self.sent[s] = tau
        rng = self.rng
        if rng is not None:
            if rng.random() < 0.1:
                self.injected["stale"] += 1
                junk = [rng.uniform(-300, 300) for _ in tau]
                old = self.states[-2][0] if len(self.states) > 1 else s + PERIOD_NS
                self._answer(old, junk)
            if rng.random() < 0.1:
                self.injected["hold"] += 1
                self.probe.pub.publish(label_hold(Float64MultiArray(data=[rng.uniform(-300, 300) for _ in tau])))
            if rng.random() < 0.03:
                self.injected["delay"] += 1
                time.sleep(rng.uniform(0.0, 0.08))  # longer than the republish period sometimes
        self._answer(s, tau)
        if rng is not None and rng.random() < 0.1:
            self.injected["duplicate"] += 1
            self._answer(s, tau)

    def _answer(self, s: int, tau: list[float]) -> None:
        self.probe.pub.publish(label_answer(Float64MultiArray(data=tau), s))


def _lockstep_run(probe: Probe, n: int, rng: random.Random | None) -> Answerer:
    ans = Answerer(probe, n, rng)
    probe.on_state = ans
    probe.until(lambda: len(ans.states) >= n, 120, f"lockstep run stalled at {len(ans.states)} states")
    probe.spin(0.2)
    probe.on_state = None
    assert ans.mismatch == 0, "a republished state differs from the first publication"
    return ans


def test_lockstep_bit_identical_under_injected_faults(probe, tmp_path):
    """(d) Two processes, a reset, and injected duplicate answers / stale labels / hold commands / delays: the
    state sequences of N = 300 steps are bit-identical; one period per answer; time never advances otherwise."""
    n = 300
    params = dict(initial_positions=RX90_Q0, lockstep=True, lockstep_timeout=0.05, noise_q=1e-4, model_error=0.1,
                  seed=3)
    runs: list[Answerer] = []
    with _sim(tmp_path, "rx90", **params) as sim:
        probe.ready(sim)
        runs.append(_lockstep_run(probe, n, None))
        probe.spin(0.3)  # no answer: frozen at the state after the last answer, republished every 50 ms
        stats_a = probe.statistics()
        assert max(s[1] for s in probe.states) == n * PERIOD_NS
        assert [s[1] for s in probe.states[-3:]] == [n * PERIOD_NS] * 3
        assert call_service(probe.node, probe.reset, Trigger.Request()).success
        runs.append(_lockstep_run(probe, n, random.Random()))
        stats_b = probe.statistics()
        assert sim.poll() is None
    (tmp_path / "second").mkdir()
    with _sim(tmp_path / "second", "rx90", **params) as sim:
        probe.ready(sim)
        runs.append(_lockstep_run(probe, n, random.Random()))
        stats_c = probe.statistics()
        assert sim.poll() is None
    ref = runs[0].states
    stamps = np.array([s[0] for s in ref])
    assert stamps[0] == 0 and np.all(np.diff(stamps) == PERIOD_NS)
    assert stats_a["steps"] == n  # n answers; the state after the last one is frozen (no answer, no motion)
    assert np.abs(ref[-1][1] - ref[0][1]).max() > 0.05, "the PD law should have moved the arm"
    for run in runs[1:]:
        assert len(run.states) == n
        for a, b in zip(ref, run.states, strict=True):
            assert a[0] == b[0]
            for x, y in zip(a[1:], b[1:], strict=True):
                assert np.array_equal(x, y)
    for st in (stats_b, stats_c):
        assert st["steps"] == n
        assert st["ignored"].get("other_stamp", 0) > 0 and st["ignored"].get("hold", 0) > 0, st
    print(f"\n[d] {n} steps x 3 runs bit-identical; injected run B {runs[1].injected}, run C {runs[2].injected}; "
          f"sim ignored B {stats_b['ignored']}, C {stats_c['ignored']}")


def _fast(states, speed: float = 0.1) -> int:
    return sum(1 for s in states if np.abs(s[3]).max() > speed)


def test_reset_jumps_time_back_and_returns_to_initial_positions(probe, tmp_path):
    """(e) ~/reset: stamps (and /clock) jump back to 0, positions return to the initial ones at rest, the brake
    is engaged until the next command, which releases it."""
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0) as sim:
        probe.ready(sim)
        probe.until(lambda: _fast(probe.states) > 10, 30, "the arm did not move", Pacer(probe, [15.0, 5.0]))
        probe.until(lambda: probe.states[-1][1] > 1_000_000_000, 30, "sim time did not pass 1 s")
        # every command sent has been taken (the sim timed out since): none can arrive after the reset
        probe.until(lambda: probe.drive[-1] == "braked: command timeout" and len(probe.states) - probe.last_moving > 20,
                    30, "no timeout")
        before = probe.states[-1]
        assert np.abs(before[2] - P2R_Q0).max() > 0.01
        n_state, n_clock, n_drive = len(probe.states), len(probe.clock), len(probe.drive)
        resp = call_service(probe.node, probe.reset, Trigger.Request())
        assert resp.success, resp.message

        def back() -> list:
            return [s for s in probe.states[n_state:] if s[1] < before[1]]

        probe.until(lambda: len(back()) > 20 and probe.drive[-1] == WAITING, 30, "no state after the reset")
        after = back()
        assert after[0][1] < 20 * PERIOD_NS, "time did not jump back to 0"
        for s in after:
            assert np.array_equal(s[2], P2R_Q0) and np.all(s[3] == 0.0)
        assert min(probe.clock[n_clock:]) < 20 * PERIOD_NS
        assert probe.drive[n_drive:] == [WAITING]
        probe.until(lambda: probe.drive[-1] == "running", 30, "no release", Pacer(probe, [15.0, 5.0]))
        assert sim.poll() is None
    print(f"\n[e] reset at t = {before[1] * 1e-9:.3f} s -> first state after reset at t = {after[0][1] * 1e-9:.3f} s")


def test_out_of_limit_torques_are_clipped(probe, tmp_path):
    """(f) Efforts beyond the URDF limits are applied saturated (the applied effort in joint_states says so), counted
    and logged."""
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0) as sim:
        probe.ready(sim)
        start = len(probe.states)
        probe.until(lambda: _fast(probe.states[start:], 0.0) > 20, 30, "the arm did not move",
                    Pacer(probe, [1e6, -55.0]))
        running = [s for s in probe.states[start:] if np.any(s[3] != 0.0)]
        stats = probe.statistics()
        assert sim.poll() is None
    for s in running:
        assert np.array_equal(s[4], [20.0, -10.0])
    assert stats["commands"]["clipped"] == stats["commands"]["applied"] > 10
    assert "command clipped to the effort limits: joint1 1e+06 -> 20, joint2 -55 -> -10" in _log(tmp_path)


def _set_param(probe: Probe, name: str, value) -> bool:
    cli = probe.node.create_client(SetParameters, "/mujoco_sim/set_parameters")
    wait_for_service(cli)
    v = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value) if isinstance(value, str) else \
        ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    resp = call_service(probe.node, cli, SetParameters.Request(parameters=[ParameterMsg(name=name, value=v)]))
    return resp.results[0].successful


@pytest.mark.parametrize("behavior", ["zero", "damp"])
def test_timeout_behaviors_zero_and_damp(probe, tmp_path, behavior):
    """``timeout_behavior`` set live: ``zero`` lets the arm fall with zero effort; ``damp`` opposes the velocity.
    Invalid values are rejected with a reason."""
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0) as sim:
        probe.ready(sim)
        assert not _set_param(probe, "timeout_behavior", "explode")
        assert not _set_param(probe, "command_timeout", "soon")
        assert _set_param(probe, "command_timeout", 1)  # an integer is a valid double
        assert _set_param(probe, "timeout_behavior", behavior)
        hold = list(load_model("planar2r").gravity_torques(np.array(P2R_Q0)))
        probe.until(lambda: probe.drive[-1] == "running", 30, "no release", Pacer(probe, hold))
        n_drive, start = len(probe.drive), len(probe.states)
        probe.until(lambda: len(probe.drive) > n_drive and _fast(probe.states[start:], 0.05) > 50, 30,
                    "the arm did not fall")
        assert sim.poll() is None
    word = {"zero": "zero torque", "damp": "damped"}[behavior]
    assert probe.drive[n_drive:] == [f"{word}: command timeout"]
    after = [s for s in probe.states[start:] if np.any(s[3] != 0.0)]
    assert len(after) > 20 and max(np.abs(s[3]).max() for s in after) > 0.05, "the arm should fall"
    if behavior == "zero":
        assert all(np.all(s[4] == 0.0) for s in after[-20:])
    else:
        fast = [(s[3], s[4]) for s in after if np.abs(s[3]).min() > 0.05]
        assert fast and all(np.all(e * v <= 0.0) for v, e in fast)
    assert "parameters set" in _log(tmp_path)


def test_position_set_points_are_checked_as_commands_are(probe, tmp_path):
    """``command_interfaces: [position]``: set points of the wrong length or with a non-finite value are refused with
    their cause and neither release the brake nor feed the watchdog; a valid one releases it and the servo takes the
    arm there; one beyond a joint's limit is clipped to it (counted) and the arm stops at the limit; the effort topic
    is not listened to."""
    model = load_model("planar2r")
    lim = model.limits
    pos = probe.node.create_publisher(Float64MultiArray, "/position_controller/commands", 100)
    with _sim(tmp_path, "planar2r", initial_positions=P2R_Q0, command_timeout=1.0,
              command_interfaces=["position"]) as sim:
        wait_for_service(probe.stats, 60)  # (not probe.ready: it waits for an effort subscriber)
        probe.until(lambda: bool(probe.states) and bool(probe.drive) and "no robot model" not in probe.drive[-1], 30,
                    "no state or drive state from the sim")
        while pos.get_subscription_count() == 0:
            rclpy.spin_once(probe.node, timeout_sec=0.05)
        # effort commands are not taken in this mode (a previous test's simulator may still be leaving the domain)
        probe.until(lambda: probe.pub.get_subscription_count() == 0, 30, "no subscriber to the effort topic")
        for data in ([], [0.1], [float("nan"), 0.0], [0.0, float("inf")]):
            pos.publish(Float64MultiArray(data=data))
        probe.until(lambda: sum(probe.statistics()["refused"].values()) >= 4, 30, "the bad set points refused")
        refused = probe.statistics()["refused"]
        assert refused.get("command_length", 0) == 2 and refused.get("command_nonfinite", 0) == 2, refused
        probe.spin(0.2)
        assert probe.drive[-1] == WAITING  # the brake still on
        target = np.array([0.5, lim["upper"][1] + 0.5])  # joint 2 half a radian beyond its upper limit
        send = _each(lambda: pos.publish(Float64MultiArray(data=target.tolist())), 100.0)
        probe.until(lambda: probe.drive[-1] == "running", 30, "a valid set point did not release the brake", send)
        probe.until(lambda: np.abs(probe.states[-1][2] - [0.5, lim["upper"][1]]).max() < 2e-3, 30,
                    "the servo did not take the arm to the clipped set point", send)
        assert probe.statistics()["commands"]["clipped"] > 0
        # the servo's approach at the velocity limit, braked within its effort limit: a few centiradians past it
        over = max(s[2][1] for s in probe.states) - lim["upper"][1]
        print(f"\nthe clipped set point at joint2's upper limit: the arm overshot it by {over:.3g} rad")
        assert over < 0.05
        assert sim.poll() is None
