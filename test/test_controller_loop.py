"""The controller's loop as a process: ``~/controller_state`` at ``state_publish_rate`` (decoupled from the loop),
``~/statistics`` figures present and consistent, and a ``realtime_priority`` that is not granted is said in the log
while the loop keeps running.  The arm is this test: it publishes ``/joint_states`` of a still rx90 (wall-clock
stamps) and watches what the controllers do."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
import rclpy
from ros_harness import call_service, node_process, publish_still_arm, start_process, stop_process, wait_for_service
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.node_set import config_dir, node_environment
from robot_dynamics_interfaces.msg import ControllerState

pytestmark = pytest.mark.ros

MODEL = load_model("rx90")
Q = np.array([0.1, -0.4, 0.6, 0.2, -0.3, 0.5])
STATE_RATE = 25.0   # Hz of ~/controller_state asked for
LOOP_RATE = 250.0   # Hz of the control loop
FILES = [str(config_dir() / "robot_dynamics.yaml"), str(config_dir() / "rx90.yaml")]
COMMON = {"urdf_path": str(resolve_urdf("rx90")), "use_sim_time": False, "state_timeout": 0.5}

# the denied controller: the scheduling calls fail as for an unprivileged user (EPERM), in the node's own process
DENIED = """
import os
def deny(*args):
    raise PermissionError(1, "Operation not permitted")
os.sched_setscheduler = deny
os.sched_setaffinity = deny
from robot_dynamics.ros.computed_torque_controller import main
raise SystemExit(main())
"""


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("loop")
    rclpy.init()
    node = rclpy.create_node("test_controller_loop")
    states: list[ControllerState] = []
    denied_commands: list[float] = []
    node.create_subscription(ControllerState, "/computed_torque_controller/status", states.append, 1000)
    node.create_subscription(Float64MultiArray, "/denied_effort/commands",
                             lambda m: denied_commands.append(time.monotonic()), 1000)
    publish_still_arm(node, MODEL.joint_names, Q)
    denied_cmd = [sys.executable, "-c", DENIED, "--ros-args", "-r", "__node:=ctl_denied"]
    for f in FILES:
        denied_cmd += ["--params-file", f]
    for k, v in {**COMMON, "use_sim_time": "false", "effort_controller": "denied_effort", "realtime_priority": 50,
                 "cpu_affinity": "[0]", "loop": "timer", "executor": "single", "rate": LOOP_RATE}.items():
        denied_cmd += ["-p", f"{k}:={v}"]
    denied = start_process(denied_cmd, log_dir / "ctl_denied.log", env=node_environment())
    params = {**COMMON, "rate": LOOP_RATE, "state_publish_rate": STATE_RATE, "state_publish_divider": 0,
              "loop": "thread", "executor": "events"}
    try:
        with node_process("computed_torque_controller", log_dir, params, param_files=FILES) as ctl:
            stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
            denied_stats = node.create_client(Trigger, "/ctl_denied/statistics")
            wait_for_service(stats, 60)
            wait_for_service(denied_stats, 60)
            _spin_until(node, lambda: any(s.mode == "holding" and len(s.output.effort) for s in states), 120,
                        "controller holding")
            yield node, states, stats, denied_stats, denied_commands, log_dir
            assert ctl.poll() is None, "the controller died"
            assert denied.poll() is None, "the denied controller died"
    finally:
        stop_process(denied)
        node.destroy_node()
        rclpy.shutdown()


def _spin_until(node, cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        rclpy.spin_once(node, timeout_sec=0.01)


def _spin(node, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.01)


def _statistics(node, client) -> dict:
    return json.loads(call_service(node, client, Trigger.Request()).message)


def test_state_published_at_its_rate_not_the_loop_rate(loop):
    node, states, stats, *_ = loop
    a = _statistics(node, stats)
    n0 = len(states)
    _spin(node, 3.0)
    b = _statistics(node, stats)
    cycles = b["cycles"] - a["cycles"]
    cyc = [s for s in states[n0:] if len(s.output.effort)]  # cycle states (not mode notices)
    stamps = np.array([_stamp(s) for s in cyc])
    span = stamps[-1] - stamps[0]
    assert span > 1.0, f"{len(cyc)} cycle states over {span:.3f} s"
    # on the rate's grid in control time (a late cycle publishes late, the next one stays on the grid): never more
    # messages than the grid has slots, and typically one per slot, however fast the loop runs
    assert len(cyc) <= span * STATE_RATE + 2, (len(cyc), span)
    assert abs(np.median(np.diff(stamps)) - 1.0 / STATE_RATE) <= 1.0 / LOOP_RATE, np.diff(stamps)
    # the loop ran many cycles per state message: decoupled
    assert cycles >= 4 * len(cyc), (cycles, len(cyc))
    # the state messages carry the cycle's data: the arm where it is, a holding reference, the torques
    last = cyc[-1]
    np.testing.assert_allclose(last.feedback.positions, Q, atol=1e-12)
    np.testing.assert_allclose(last.reference.positions, Q, atol=1e-12)
    np.testing.assert_allclose(last.error.positions, 0.0, atol=1e-12)
    # holding a still arm: the torques are the gravity torques (computed torque with q = q_ref, qd = 0)
    np.testing.assert_allclose(last.output.effort, MODEL.inverse_dynamics(Q, np.zeros(6), np.zeros(6)), rtol=1e-6,
                               atol=1e-6)


def test_statistics_fields_consistent(loop):
    node, states, stats, *_ = loop
    s = _statistics(node, stats)
    for key in ("cycles", "rate_hz", "period_error_p50_ms", "period_error_p99_ms", "period_error_max_ms",
                "missed_cycles", "missed_pct", "sampling_us", "law_us", "publish_us", "state_publish_us", "other_us",
                "cycle_us", "process_cpu_per_cycle_us", "scheduling", "loop", "executor", "mode"):
        assert key in s, (key, s)
    assert s["loop"] == "thread" and s["executor"] == "events" and s["scheduling"] == "default"
    assert s["nominal_rate_hz"] == LOOP_RATE
    assert 0 < s["rate_hz"] < 10 * LOOP_RATE
    assert 0 <= s["period_error_p50_ms"] <= s["period_error_p99_ms"] <= s["period_error_max_ms"]
    assert s["missed_cycles"] >= 0 and 0 <= s["missed_pct"] < 100
    phases = [s[k] for k in ("sampling_us", "law_us", "publish_us", "state_publish_us", "other_us")]
    assert all(p >= 0 for p in phases) and s["law_us"] > 0 and s["publish_us"] > 0
    assert sum(phases) == pytest.approx(s["cycle_us"], rel=1e-9)
    assert s["process_cpu_per_cycle_us"] > s["law_us"]  # the process does at least the law each cycle
    # the count moves on (under load a cycle may wait out a stale state: poll, do not assume the next call sees it)
    _spin_until(node, lambda: _statistics(node, stats)["cycles"] > s["cycles"], 60, "the cycle count to move")


def test_realtime_not_granted_is_logged_and_the_loop_runs(loop):
    node, states, stats, denied_stats, denied_commands, log_dir = loop
    a = _statistics(node, denied_stats)
    n0 = len(denied_commands)
    _spin(node, 1.0)
    b = _statistics(node, denied_stats)
    assert b["cycles"] > a["cycles"] and b["mode"] == "holding", b
    assert len(denied_commands) > n0, "the denied controller stopped commanding"
    assert b["scheduling"] == "default" and b["loop"] == "timer" and b["executor"] == "single"
    log = (log_dir / "ctl_denied.log").read_text()
    assert "real-time scheduling NOT granted" in log, log[-2000:]
    assert "cpu_affinity [0] not granted" in log, log[-2000:]


def test_loop_statistics_counts_missed_cycles():
    """The figures of ~/statistics from known cycle start times: one period of 3 T misses 2 cycles."""
    from robot_dynamics.ros.computed_torque_controller import LoopStatistics

    T = 1_000_000  # ns
    stats = LoopStatistics(100)
    starts = [0, T, 2 * T, 5 * T, 6 * T, 7 * T + T // 10]
    for t in starts:
        stats.tick(t, 1000, 2000, 3000, 4000, 5000)
    s = stats.summary(1e-3)
    assert s["cycles"] == 6 and s["window_cycles"] == 6
    assert s["missed_cycles"] == 2
    assert s["missed_pct"] == pytest.approx(100 * 2 / 7)
    assert s["period_error_max_ms"] == pytest.approx(2.0)
    assert s["period_error_p50_ms"] == pytest.approx(0.0)
    assert s["rate_hz"] == pytest.approx(5 / 7.1e-3)
    assert (s["sampling_us"], s["law_us"], s["publish_us"], s["state_publish_us"], s["other_us"]) == (1, 2, 3, 4, 5)
    assert s["cycle_us"] == 15


def test_loop_input_takes_the_states_and_keeps_use_sim_time(loop):
    """The default controller takes /joint_states in its loop thread (``state_input: loop``): it holds the arm
    where the test's states put it (the state messages above), and a run-time change of ``use_sim_time`` is
    refused with the reason (the loop owns the time source)."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    node, states, stats, *_ = loop
    s = _statistics(node, stats)
    assert s["state_input"] == "loop", s
    client = node.create_client(SetParameters, "/computed_torque_controller/set_parameters")
    wait_for_service(client)
    request = SetParameters.Request(parameters=[ParameterMsg(
        name="use_sim_time", value=ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=True))])
    result = call_service(node, client, request).results[0]
    assert not result.successful and "use_sim_time is fixed at start" in result.reason, result
    n0 = len(states)
    _spin_until(node, lambda: any(len(m.output.effort) for m in states[n0:]), 60, "a cycle state after the refusal")
    last = [m for m in states[n0:] if len(m.output.effort)][-1]
    np.testing.assert_allclose(last.feedback.positions, Q, atol=1e-12)  # the loop still takes the states
    assert _statistics(node, stats)["refused"] == s["refused"], "the test's states were refused"
