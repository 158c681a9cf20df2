"""Huge requests to the trajectory generator (issue 29), against its real node process: a 10^6-point ``~/time_scale``
and a 10^6-waypoint ``~/plan`` are refused (``too_large``) before rclpy converts them to Python objects, the other
service answers meanwhile (the request is taken with the GIL released: ``ros/gil_free_take.py``), and the node's
memory comes back.  Figures are printed; durations are not asserted (the
sender's serialization and the transport of ~200 MB depend on the host)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from ros_harness import call_service, node_process, rss_mb, start_process, stop_process, wait_for_service
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.node_set import config_dir
from robot_dynamics_interfaces.srv import PlanTrajectory, TimeScale

pytestmark = pytest.mark.ros

MODEL = load_model("rx90")
N = 1_000_000

SENDER = """
import json, sys, time
from array import array
import rclpy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from robot_dynamics_interfaces.srv import PlanTrajectory, TimeScale
kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rclpy.init()
node = rclpy.create_node("huge_generator_sender")
names = [f"joint{i}" for i in range(1, 7)]
p = JointTrajectoryPoint(positions=array("d", [0.1] * 6), velocities=array("d", [0.0] * 6))
if kind == "time_scale":
    cl = node.create_client(TimeScale, "/trajectory_generator/time_scale")
    req = TimeScale.Request(trajectory=JointTrajectory(joint_names=names, points=[p] * n))
else:
    cl = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
    req = PlanTrajectory.Request(joint_names=names, waypoints=[p] * n)
if not cl.wait_for_service(timeout_sec=60):
    raise SystemExit("no service")
t_call = time.time()
fut = cl.call_async(req)  # serializes here
t_sent = time.time()
rclpy.spin_until_future_complete(node, fut, timeout_sec=240)
t_done = time.time()
r = fut.result() if fut.done() else None
json.dump({"t_call": t_call, "t_sent": t_sent, "t_done": t_done, "answered": r is not None,
           "success": bool(r and r.success), "message": r.message if r else ""}, open(out, "w"))
"""


@pytest.fixture(scope="module")
def generator(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("generator_bounds")
    params = {"urdf_path": str(resolve_urdf("rx90"))}
    rclpy.init()
    try:
        node = rclpy.create_node("test_generator_bounds")
        with node_process("trajectory_generator", tmp, params, param_files=[config_dir() / "rx90.yaml"]) as proc:
            plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
            scale = node.create_client(TimeScale, "/trajectory_generator/time_scale")
            wait_for_service(plan, 60)
            wait_for_service(scale, 60)
            log = tmp / "trajectory_generator.log"
            yield proc, node, plan, scale, log
        node.destroy_node()
    finally:
        rclpy.shutdown()


def _small_time_scale(node, scale) -> float:
    traj = JointTrajectory(joint_names=MODEL.joint_names, points=[
        JointTrajectoryPoint(positions=[0.0] * 6, velocities=[0.0] * 6, time_from_start=Duration(sec=0)),
        JointTrajectoryPoint(positions=[0.1] * 6, velocities=[0.0] * 6, time_from_start=Duration(sec=1))])
    t0 = time.perf_counter()
    r = call_service(node, scale, TimeScale.Request(trajectory=traj), timeout=60)
    assert r.success, r.message
    return time.perf_counter() - t0


def _small_plan(node, plan) -> float:
    req = PlanTrajectory.Request(joint_names=MODEL.joint_names, waypoints=[
        JointTrajectoryPoint(positions=[0.0] * 6), JointTrajectoryPoint(positions=[0.1] * 6)], profile="quintic")
    t0 = time.perf_counter()
    r = call_service(node, plan, req, timeout=60)
    assert r.success, r.message
    return time.perf_counter() - t0


@pytest.mark.parametrize("kind", ["time_scale", "plan"])
def test_million_point_request_refused_before_conversion(generator, kind, tmp_path):
    proc, node, plan, scale, log = generator

    def other() -> float:  # a small call to the node's other service (the huge one's own requests queue behind it)
        return _small_time_scale(node, scale) if kind == "plan" else _small_plan(node, plan)

    for _ in range(3):  # warm: the model and its compiled programs are in use
        other()
    idle = [other() for _ in range(10)]
    rss_before = rss_mb(proc.pid)
    out = tmp_path / "huge.json"
    script = tmp_path / "sender.py"
    script.write_text(SENDER)
    sender = start_process([sys.executable, str(script), kind, str(N), str(out)], tmp_path / "sender.log")
    probes: list[tuple[float, float]] = []
    try:
        t0 = time.time()
        while sender.poll() is None and time.time() - t0 < 280:
            t = time.time()
            probes.append((t, other()))  # (start, latency): counted where it overlaps the huge request
            time.sleep(0.02)
        sender.wait(10)
    finally:
        stop_process(sender)
    assert out.is_file(), (tmp_path / "sender.log").read_text()[-2000:]
    res = json.loads(out.read_text())
    assert res["answered"] and not res["success"], res
    assert res["message"].startswith(f"too_large: request with {N} points exceeds "), res
    assert res["message"].endswith("refused before its conversion to Python objects"), res
    during = [lat for t, lat in probes if t <= res["t_done"] and t + lat >= res["t_sent"]]
    time.sleep(3.0)  # the housekeeping: freed buffers handed back
    rss_after = rss_mb(proc.pid)
    assert proc.poll() is None
    _small_plan(node, plan)  # both still answering correctly
    _small_time_scale(node, scale)
    assert rss_after - rss_before < 50, (rss_before, rss_after)  # back within 50 MB of before (one malloc arena)
    print(f"\n10^6-point ~/{kind}: answered {res['t_done'] - res['t_sent']:.2f} s after the sender's serialization "
          f"({res['t_sent'] - res['t_call']:.2f} s; transport of the request included); the other service idle median "
          f"{1e3 * np.median(idle):.1f} ms, meanwhile {len(during)} calls, median "
          f"{1e3 * np.median(during) if during else float('nan'):.1f} ms, max "
          f"{1e3 * max(during) if during else float('nan'):.1f} ms; RSS {rss_before:.0f} -> {rss_after:.0f} MB")
