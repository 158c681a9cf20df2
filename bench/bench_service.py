"""Round trip of ``~/inverse_dynamics`` vs a trivial server with the same payload, measured in one run.

Two real processes over DDS (localhost): the ``dynamics_server`` node (bundled RX-90, its default engine:
the compiled customized model once built, warmed up before timing) and a trivial server of the same
service type that answers every point with zero efforts (the same request and response payload, no
dynamics).  The client (this process) calls each one ``--calls`` times per request size (1, 1000 and
10 000 points by default), interleaving the two servers call by call so that machine load hits both
alike, and prints p50/min/p90 of the round trip and the ratio dynamics_server / trivial (issue 16 wants
<= 1.3 at p50).

    python bench/bench_service.py [--calls 200] [--points 1,1000,10000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test"))

TRIVIAL = r"""
import rclpy
from rclpy.node import Node
from robot_dynamics_interfaces.srv import InverseDynamics


class Trivial(Node):
    def __init__(self):
        super().__init__("trivial_server")
        self.create_service(InverseDynamics, "/trivial_server/inverse_dynamics", self.cb)

    def cb(self, request, response):
        n = len(request.points[0].positions) if request.points else 0
        zero = [0.0] * n
        for p in request.points:
            p.effort = zero
        response.joint_names = list(request.joint_names)
        response.points = request.points
        response.success = True
        response.message = "ok"
        return response


import sys
rclpy.init()
try:
    if sys.argv[1:] == ["multi"]:
        from rclpy.executors import MultiThreadedExecutor
        ex = MultiThreadedExecutor(num_threads=6)
        ex.add_node(Trivial())
        while True:
            ex.spin_once(timeout_sec=0.05)
    rclpy.spin(Trivial())
except KeyboardInterrupt:
    pass
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--points", default="1,1000,10000")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--trivial-executor", choices=("single", "multi"), default="single",
                    help="executor of the trivial server (multi: the dynamics server's arrangement, for diagnosis)")
    args = ap.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(60 + os.getpid() % 40))

    import rclpy
    from rclpy.node import Node
    from ros_harness import call_service, node_process, start_process, stop_process, wait_for_service
    from trajectory_msgs.msg import JointTrajectoryPoint

    from robot_dynamics.model.robots import load_model, resolve_urdf
    from robot_dynamics_interfaces.srv import InverseDynamics

    model = load_model("rx90")
    n = model.dof
    rng = np.random.default_rng(0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        (logs / "trivial.py").write_text(TRIVIAL)
        trivial = start_process([sys.executable, str(logs / "trivial.py"), args.trivial_executor], logs / "trivial.log")
        rclpy.init()
        try:
            with node_process("dynamics_server", logs, params={"urdf_path": str(resolve_urdf("rx90"))},
                              param_files=[ROOT / "config" / "rx90.yaml"]):
                node = Node("bench_service_client")
                clients = {
                    "dynamics_server": node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics"),
                    "trivial": node.create_client(InverseDynamics, "/trivial_server/inverse_dynamics"),
                }
                for c in clients.values():
                    wait_for_service(c, 60.0)
                for npts in (int(x) for x in args.points.split(",")):
                    req = InverseDynamics.Request(joint_names=list(model.joint_names))
                    q, qd, qdd = rng.uniform(-1, 1, (3, npts, n))
                    req.points = [JointTrajectoryPoint(positions=q[i].tolist(), velocities=qd[i].tolist(),
                                                       accelerations=qdd[i].tolist()) for i in range(npts)]
                    # warm-up: the server's engine builds its programs after a few calls (background)
                    deadline = time.monotonic() + 120.0
                    for _ in range(25):
                        r = call_service(node, clients["dynamics_server"], req, 120.0)
                        assert r.success, r.message
                        call_service(node, clients["trivial"], req, 120.0)
                    while time.monotonic() < deadline:
                        t0 = time.perf_counter()
                        call_service(node, clients["dynamics_server"], req, 120.0)
                        if time.perf_counter() - t0 < 0.02 + 2e-5 * npts:
                            break
                    times: dict[str, list[float]] = {k: [] for k in clients}
                    for _ in range(args.calls):
                        for name, c in clients.items():
                            t0 = time.perf_counter()
                            r = call_service(node, c, req, 120.0)
                            times[name].append(time.perf_counter() - t0)
                            assert r.success, r.message
                    # the answer is the model's, in the request's order
                    r = call_service(node, clients["dynamics_server"], req, 120.0)
                    tau = np.array([p.effort for p in r.points])
                    ref = model.inverse_dynamics(q, qd, qdd)
                    dev = float(np.abs(tau - ref).max() / max(1.0, np.abs(ref).max()))
                    row = {"points": npts, "calls": args.calls, "max_rel_dev": dev}
                    for name, ts in times.items():
                        a = np.array(ts) * 1e3
                        row[name] = {"p50_ms": float(np.median(a)), "min_ms": float(a.min()),
                                     "p90_ms": float(np.percentile(a, 90))}
                    row["ratio_p50"] = row["dynamics_server"]["p50_ms"] / row["trivial"]["p50_ms"]
                    results.append(row)
                    print(f"{npts:6d} points: dynamics_server p50 {row['dynamics_server']['p50_ms']:8.3f} ms "
                          f"(min {row['dynamics_server']['min_ms']:.3f}), trivial p50 {row['trivial']['p50_ms']:8.3f} "
                          f"ms (min {row['trivial']['min_ms']:.3f}); ratio {row['ratio_p50']:.2f}; "
                          f"efforts vs model {dev:.1e}", flush=True)
                node.destroy_node()
        finally:
            stop_process(trivial)
            rclpy.try_shutdown()
    load = os.getloadavg()
    print(f"trivial server executor: {args.trivial_executor}; machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
