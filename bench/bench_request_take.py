"""What one huge message costs the other threads of the Python process that receives it (the GIL).

rclpy takes a typed message (or service request, or action goal) into rosidl's C structure before any Python code
can look at its size, then converts it to Python objects.  A :class:`~robot_dynamics.ros.request_gate.RequestGate`
skips the conversion of an oversize one; the C take remains.  This bench measures how long the receiving process's
other threads (a control loop, other services) are held, for a ``trajectory_msgs/JointTrajectory`` of ``--points``
points (6 joints, positions, velocities, accelerations) sent once by a publisher in another process:

* ``raw``: a serialized take (``raw=True``: the bytes only; the controller's ``~/joint_trajectory``);
* ``gated``: a typed take through a RequestGate (the C structure, no Python objects: services, goals);
* ``typed``: rclpy's plain typed take (C structure, then Python objects);
* ``goal``: a FollowJointTrajectory goal of as many points to the controller's action server (gated at 10 points:
  refused), taken with the GIL released (:class:`~robot_dynamics.ros.gil_free_goal.GilFreeGoalTake`);
* ``goal-rclpy``: the same through rclpy's goal take (GIL held).

A thread ticks every 0.5 ms in the receiving process; printed per case: its largest gap around the message
(min/median over ``--repeats`` fresh processes) and, as the reference measured in the same run, its largest gap
over as long a time without a message (``idle``)::

    .venv/bin/python bench/bench_request_take.py --points 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

RECEIVER = r"""
import json, os, sys, threading, time
import rclpy
from rclpy.executors import SingleThreadedExecutor
from trajectory_msgs.msg import JointTrajectory
from robot_dynamics.ros.request_gate import JointTrajectoryHead, RequestGate
case, wait = sys.argv[1], float(sys.argv[2])
gate = RequestGate(JointTrajectory, JointTrajectoryHead, ["points"], lambda: 10)
rclpy.init()
node = rclpy.create_node("bench_take_receiver")
got = []
if case.startswith("goal"):  # the controller's action server class, gated at 10 points
    from control_msgs.action import FollowJointTrajectory
    from robot_dynamics.ros.trajectory_action import _ActionServer
    server = _ActionServer(node, FollowJointTrajectory, "/bench_take_goal", execute_callback=lambda h: None,
                           max_points=lambda: 10, on_oversize=lambda why: got.append(time.perf_counter()))
    if case == "goal-rclpy":
        server.gil_free = None
else:
    kind = gate.gated_type if case == "gated" else JointTrajectory
    node.create_subscription(kind, "/bench_take", lambda m: got.append(time.perf_counter()), 1, raw=case == "raw")
ex = SingleThreadedExecutor()
ex.add_node(node)
threading.Thread(target=ex.spin, daemon=True).start()
print("ready", flush=True)
gaps, last, end = [], time.perf_counter(), time.perf_counter() + wait
while time.perf_counter() < end and not (got and time.perf_counter() > got[0] + 0.5):
    time.sleep(0.0005)
    now = time.perf_counter()
    gaps.append(now - last)
    last = now
print(json.dumps({"received": bool(got), "max_gap_ms": 1e3 * max(gaps)}), flush=True)
os._exit(0)
"""

SENDER = r"""
import sys, time
import rclpy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
rclpy.init()
node = rclpy.create_node("bench_take_sender")
pub = node.create_publisher(JointTrajectory, "/bench_take", 1)
deadline = time.monotonic() + 30
while sys.argv[3] != "goal" and pub.get_subscription_count() == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
msg = JointTrajectory(joint_names=[f"j{i}" for i in range(6)])
p = JointTrajectoryPoint(positions=[0.1] * 6, velocities=[0.0] * 6, accelerations=[0.0] * 6)
msg.points = [p] * int(sys.argv[1])
if sys.argv[3] == "goal":
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    client = ActionClient(node, FollowJointTrajectory, "/bench_take_goal")
    client.wait_for_server(timeout_sec=30)
    client.send_goal_async(FollowJointTrajectory.Goal(trajectory=msg))
else:
    pub.publish(msg)
time.sleep(float(sys.argv[2]))
"""


def _env(domain: int) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), ROS_DOMAIN_ID=str(domain),
                ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", OPENBLAS_NUM_THREADS="1")


def run(case: str, points: int, domain: int, wait: float = 40.0) -> dict:
    """One receiver process (``idle``: nobody sends) and one sender process; the receiver's result."""
    env = _env(domain)
    rx = subprocess.Popen([sys.executable, "-c", RECEIVER, "typed" if case == "idle" else case,
                           str(8.0 if case == "idle" else wait)],
                          env=env, stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    tx = None
    if case != "idle":
        tx = subprocess.Popen([sys.executable, "-c", SENDER, str(points), str(wait),
                               "goal" if case.startswith("goal") else "topic"], env=env)
    out = json.loads(rx.stdout.readline())
    rx.wait(timeout=60)
    if tx is not None:
        tx.kill()
        tx.wait()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--domain", type=int, default=91)
    args = ap.parse_args()
    cases = ("idle", "raw", "gated", "typed", "goal", "goal-rclpy")
    res: dict[str, list[float]] = {c: [] for c in cases}
    for _ in range(args.repeats):
        for c in cases:
            r = run(c, args.points, args.domain)
            if c == "idle" or r["received"]:
                res[c].append(r["max_gap_ms"])
            time.sleep(0.5)
    print(f"largest gap of a 0.5 ms ticking thread in the receiving process, one {args.points}-point "
          f"JointTrajectory ({args.repeats} fresh process pairs per case)")
    idle = float(np.median(res["idle"]))
    for c in cases:
        x = np.array(res[c])
        if not x.size:
            print(f"  {c:10s} not received")
            continue
        print(f"  {c:10s} min {x.min():8.1f} / median {np.median(x):8.1f} ms   ({np.median(x) / idle:7.1f} x idle)")


if __name__ == "__main__":
    main()
