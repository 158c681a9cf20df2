"""``/diagnostics`` of the controller and the simulated arm (issue 17), from real node processes.

The test plays the arm for the controller (``/joint_states`` of a still rx90 stamped with the node clock, as in
``test_controller_loop.py``) and watches ``/diagnostics``: the controller reports its loop figures while the states
come (OK, or WARN with the share of missed cycles on a host that starves its loop), ERROR (stale) when they stop,
holding again when they come back.  A ``mujoco_sim`` that no controller
commands (its own topics, so that it does not disturb the controller) says it is braked, and STALE when paused."""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from ros_harness import call_service, node_process, wait_for_service
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.computed_torque_controller import LoopStatistics
from robot_dynamics.ros.controller.health import loop_level
from robot_dynamics.ros.diagnostics import ERROR, OK, STALE, WARN, make_status
from robot_dynamics.ros.node_set import config_dir

pytestmark = pytest.mark.ros

MODEL = load_model("rx90")
Q = np.array([0.1, -0.4, 0.6, 0.2, -0.3, 0.5])
LOOP_RATE = 250.0
PERIOD = 0.5  # s, diagnostic_period of both nodes
FILES = [str(config_dir() / "robot_dynamics.yaml"), str(config_dir() / "rx90.yaml")]
CTL = "/computed_torque_controller: control loop"
SIM = "/mujoco_sim: drive"
LOOP_KEYS = ("rate_hz", "nominal_rate_hz", "period_error_p50_ms", "period_error_p99_ms", "period_error_max_ms",
             "missed_cycles", "missed_pct", "cycles", "window_cycles", "cycle_us", "process_cpu_per_cycle_us",
             "saturated_count", "inputs_refused", "trajectories_accepted")


class Watch:
    """The test's node: publishes the arm's states (while ``publishing``) and records ``/diagnostics``."""

    def __init__(self, node) -> None:
        self.node = node
        self.publishing = True
        self.got: list[tuple[float, float, DiagnosticStatus]] = []  # (arrival monotonic, header stamp, status)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._diagnostics, 100)
        self.pub = node.create_publisher(JointState, "/joint_states", 10)
        node.create_timer(0.01, self._state)

    def _diagnostics(self, msg: DiagnosticArray) -> None:
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.got.extend((time.monotonic(), stamp, s) for s in msg.status)

    def _state(self) -> None:
        if self.publishing:
            msg = JointState(name=MODEL.joint_names, position=Q.tolist(), velocity=[0.0] * 6)
            msg.header.stamp = self.node.get_clock().now().to_msg()
            self.pub.publish(msg)

    def statuses(self, name: str, since: float = 0.0) -> list[DiagnosticStatus]:
        return [s for t, _, s in self.got if s.name == name and t >= since]

    def wait_for(self, name: str, cond, timeout: float, what: str) -> DiagnosticStatus:
        """Spin until a status of ``name`` arriving from now on satisfies ``cond``; returns it."""
        t0 = time.monotonic()
        end = t0 + timeout
        while time.monotonic() < end:
            for s in self.statuses(name, t0):
                if cond(s):
                    return s
            rclpy.spin_once(self.node, timeout_sec=0.01)
        last = self.statuses(name)[-1:] or [None]
        raise TimeoutError(f"{what}: last status {_describe(last[0])}")

    def spin(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=0.01)


def _level(s: DiagnosticStatus) -> int:
    return s.level[0] if isinstance(s.level, bytes) else int(s.level)


def _values(s: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in s.values}


def _describe(s: DiagnosticStatus | None) -> str:
    return "none" if s is None else f"level {_level(s)} {s.message!r} {_values(s)}"


@pytest.fixture(scope="module")
def watch(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("diagnostics")
    rclpy.init()
    node = rclpy.create_node("test_diagnostics")
    w = Watch(node)
    ctl_params = {"urdf_path": str(resolve_urdf("rx90")), "use_sim_time": False, "state_timeout": 0.5,
                  "rate": LOOP_RATE, "diagnostic_period": PERIOD}
    # the sim on topics of its own: its states do not reach the controller, the controller's commands not it
    sim_params = {"urdf_path": str(resolve_urdf("rx90")), "control_period": 0.01, "publish_clock": False,
                  "effort_controller": "sim_effort", "diagnostic_period": PERIOD}
    try:
        with node_process("computed_torque_controller", log_dir, ctl_params, param_files=FILES) as ctl, \
                node_process("mujoco_sim", log_dir, sim_params, remaps={"joint_states": "/sim/joint_states"},
                             param_files=[config_dir() / "rx90.yaml"]) as sim:
            w.wait_for(CTL, _controlling, 120, "controller holding")
            yield w
            assert ctl.poll() is None, "the controller died"
            assert sim.poll() is None, "mujoco_sim died"
    finally:
        node.destroy_node()
        rclpy.shutdown()


def _rule(s: DiagnosticStatus) -> tuple[int, str]:
    """The level and message :func:`loop_level` gives for the figures a controller status carries."""
    v = _values(s)
    return loop_level(v["mode"], v["mode_reason"], window_cycles=int(v["window_cycles"]), lockstep=False,
                      missed_pct=float(v["missed_pct"]), saturated=[j for j in v["saturated_joints"].split(",") if j],
                      rate_hz=float(v["rate_hz"]), nominal_hz=float(v["nominal_rate_hz"]),
                      p99_ms=float(v["period_error_p99_ms"]), period_s=float(v["window_s"]))


def _controlling(s: DiagnosticStatus) -> bool:
    """Holding with control cycles in the period: OK, or WARN for missed cycles only (a host that starves the loop
    thread: what the level is for, not a defect of the controller)."""
    v = _values(s)
    return v.get("mode") == "holding" and int(v["window_cycles"]) > 0 and _level(s) in (OK, WARN) and \
        _values(s)["saturated_joints"] == ""


def test_controller_reports_its_loop_figures(watch):
    """The figures of the last diagnostic period, consistent with each other and with the level: OK on a host that
    gives the loop its cycles, WARN with the missed share on one that does not (the rule at its boundaries:
    ``test_controller_health.py``); how many cycles a host gives is a rate (bench/), not asserted here."""
    s = watch.wait_for(CTL, _controlling, 30, "controller holding")
    print(f"controller status: {_describe(s)}")
    v = _values(s)
    for key in LOOP_KEYS:
        assert key in v, (key, v)
        assert np.isfinite(float(v[key])), (key, v[key])
    assert s.hardware_id == "rx90"
    assert v["mode"] == "holding" and s.message.startswith("holding at "), _describe(s)
    # the node's level and message are the rule's over the figures it reports
    assert (_level(s), s.message) == _rule(s), _describe(s)
    assert float(v["nominal_rate_hz"]) == LOOP_RATE
    window, missed, rate = int(v["window_cycles"]), int(v["missed_cycles"]), float(v["rate_hz"])
    assert rate > 0 and missed >= 0
    # missed = sum over the window's periods p of max(round(p T^-1) - 1, 0), its share of the nominal cycles
    np.testing.assert_allclose(float(v["missed_pct"]), 100 * missed / (window + missed), rtol=1e-5, atol=1e-9)
    span = window / rate  # s, the sum of the window's periods
    assert span * LOOP_RATE - window / 2 - 1e-3 <= window + missed <= span * LOOP_RATE + window + 1e-3, v
    # the figures are those of the last diagnostic period (not the whole statistics window): the cycles after the
    # previous report, spanning the time between the reports within the longest period of the window
    longest = 1 / LOOP_RATE + float(v["period_error_max_ms"]) * 1e-3
    assert abs(span - float(v["window_s"])) <= longest + 0.05, (span, v["window_s"], longest)
    assert int(v["cycles"]) >= window
    assert 0 <= float(v["period_error_p50_ms"]) <= float(v["period_error_p99_ms"]) <= float(v["period_error_max_ms"])
    assert float(v["process_cpu_per_cycle_us"]) > 0 and float(v["cycle_us"]) > 0
    assert float(v["process_cpu_per_cycle_us"]) > float(v["cycle_us"])  # the process does at least the cycle
    assert v["saturated_joints"] == "" and int(v["saturated_count"]) == 0
    assert int(v["inputs_refused"]) == 0 and int(v["trajectories_accepted"]) == 0
    # on a steady timer of diagnostic_period, stamped with the node clock (the system clock here) right after the
    # report: two reports' stamps are the report's window_s apart (this process's arrival times, bunched on a busy
    # host, are not), never closer than the timer allows
    watch.spin(3 * PERIOD)
    ours = [(st, float(_values(x)["window_s"])) for _, st, x in watch.got if x.name == CTL][-6:]
    gaps = np.diff([st for st, _ in ours])
    assert (gaps > 0).all(), gaps
    assert np.median(np.abs(gaps - [w for _, w in ours[1:]])) < 0.05, (gaps, ours)
    assert abs(ours[-1][0] - time.time()) < 600.0  # the system clock's epoch (sim time would be ~0)


def test_controller_stale_is_an_error_and_recovers(watch):
    watch.publishing = False
    try:
        s = watch.wait_for(CTL, lambda s: _level(s) == ERROR, 5.0, "controller ERROR after the states stopped")
        v = _values(s)
        assert v["mode"] == "stale" and s.message.startswith("stale: no valid joint state"), _describe(s)
        # a whole period stale: no control cycle in it
        s = watch.wait_for(CTL, lambda s: True, 3 * PERIOD, "the next status")
        v = _values(s)
        assert _level(s) == ERROR and v["mode"] == "stale", _describe(s)
        assert float(v["rate_hz"]) == 0.0 and int(v["window_cycles"]) == 0, v
    finally:
        watch.publishing = True
    s = watch.wait_for(CTL, _controlling, 20.0, "controller holding again")
    assert (_level(s), s.message) == _rule(s), _describe(s)


def test_sim_braked_at_start_and_stale_when_paused(watch):
    s = watch.wait_for(SIM, lambda s: True, 10.0, "a mujoco_sim status")
    v = _values(s)
    assert _level(s) == WARN and s.message == "braked: waiting for the first command", _describe(s)
    assert v["drive_state"] == s.message and s.hardware_id == "rx90"
    assert int(v["commands_received"]) == 0 and int(v["commands_applied"]) == 0 and int(v["commands_refused"]) == 0
    assert v["mode"] == "real time" and float(v["real_time_factor_nominal"]) == 1.0
    # braked, the sim still steps time and publishes its states (100 Hz), never faster than real time (how close to
    # real time a loaded host lets it run is a rate: bench/, not a test)
    assert int(v["steps"]) > 0 and 0.0 < float(v["real_time_factor"]) < 1.5, v
    assert 0.0 < float(v["state_rate_hz"]) < 150, v
    pause = watch.node.create_client(SetBool, "/mujoco_sim/pause")
    wait_for_service(pause)
    assert call_service(watch.node, pause, SetBool.Request(data=True)).success
    try:
        s = watch.wait_for(SIM, lambda s: _level(s) == STALE, 5.0, "mujoco_sim STALE when paused")
        assert s.message.startswith("paused") and _values(s)["paused"] == "true"
        s = watch.wait_for(SIM, lambda s: True, 5.0, "a paused status")  # a whole period paused: nothing advances
        assert float(_values(s)["real_time_factor"]) == 0.0 and float(_values(s)["state_rate_hz"]) == 0.0
    finally:
        call_service(watch.node, pause, SetBool.Request(data=False))
    watch.wait_for(SIM, lambda s: _level(s) == WARN, 5.0, "mujoco_sim braked again after the pause")


def test_recent_is_the_last_period_of_the_ring():
    """The cheap figures of /diagnostics equal ``np.percentile`` over the cycles since the previous call."""
    T = 1_000_000  # ns
    stats = LoopStatistics(200)
    rng = np.random.default_rng(0)
    starts = np.cumsum(T + rng.integers(-50_000, 50_000, 250))
    starts[200:] += 2 * T  # one period of 3 T: 2 missed cycles, in the last window only
    for t in starts[:150]:
        stats.tick(int(t), 1000, 2000, 3000, 4000, 5000)
    first = stats.recent(1e-3, 0)
    assert first["cycles"] == first["window_cycles"] == 150
    for t in starts[150:]:
        stats.tick(int(t), 1000, 2000, 3000, 4000, 5000)
    r = stats.recent(1e-3, 150)
    p = np.diff(starts[149:]) * 1e-9  # the period ending at the first new cycle included
    err = np.abs(p - 1e-3)
    assert r["cycles"] == 250 and r["window_cycles"] == 100
    assert r["missed_cycles"] == 2 and r["missed_pct"] == pytest.approx(100 * 2 / (p.size + 2))
    assert r["period_error_p50_ms"] == pytest.approx(np.percentile(err, 50) * 1e3)
    assert r["period_error_p99_ms"] == pytest.approx(np.percentile(err, 99) * 1e3)
    assert r["period_error_max_ms"] == pytest.approx(err.max() * 1e3)
    assert r["rate_hz"] == pytest.approx(p.size / p.sum())
    assert r["cycle_us"] == pytest.approx(15.0)
    assert stats.recent(1e-3, 250) == {"cycles": 250, "window_cycles": 0}


def test_status_level_and_one_line_message():
    s = make_status("/n: task", "rx90", 7, "two\nlines", {"a": 1.5, "b": True, "c": ["j1", "j2"], "d": 3})
    assert s.level == DiagnosticStatus.STALE and s.message == "two lines"
    assert [(kv.key, kv.value) for kv in s.values] == [("a", "1.5"), ("b", "true"), ("c", "j1,j2"), ("d", "3")]
