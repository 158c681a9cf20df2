"""Effort at standstill with the real node set (issue 16): the bring-up of ``robot-dynamics bringup --robot rx90
--sim mujoco`` (MuJoCo arm node with the true Coulomb law −Fc sign(q̇), the computed-torque controller node with its
default law), the arm holding its initial pose; the efforts it is commanded on /effort_controller/commands are
recorded for ``--hold`` seconds (wall clock) once the controller holds.

Usage: ``python bench/bench_friction_standstill_nodes.py [--hold 2.0] [--settle 1.0] [--noise-q 0]``.  Prints,
per joint, the holding torque Q(q) and the peak-to-peak effort, absolute and in % of max_j |Q_j|.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hold", type=float, default=2.0, help="recording time (s)")
    ap.add_argument("--settle", type=float, default=1.0, help="time waited once the controller holds (s)")
    ap.add_argument("--noise-q", type=float, default=0.0, help="mujoco_sim position noise std (rad)")
    args = ap.parse_args()
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.setdefault("ROS_DOMAIN_ID", str(10 + os.getpid() % 90))
    import rclpy
    from std_msgs.msg import Float64MultiArray

    from robot_dynamics.model.robots import load_model
    from robot_dynamics.ros.bringup import Bringup
    from robot_dynamics.ros.node_set import node_set
    from robot_dynamics_interfaces.msg import ControllerState

    model = load_model("rx90")
    nodes = node_set("rx90", "mujoco")
    for n in nodes:
        if n.name == "mujoco_sim" and args.noise_q > 0:
            n.parameters.update(noise_q=args.noise_q)
    cmds: list[np.ndarray] = []
    modes: list[str] = []
    rclpy.init()
    try:
        node = rclpy.create_node("standstill_probe")
        node.create_subscription(Float64MultiArray, "/effort_controller/commands",
                                 lambda m: cmds.append(np.array(m.data)), 1000)
        node.create_subscription(ControllerState, "/computed_torque_controller/status",
                                 lambda m: modes.append(m.mode), 100)
        with Bringup(nodes, log_dir=tempfile.mkdtemp(prefix="standstill_")):
            end = time.monotonic() + 120
            while not (modes and modes[-1] == "holding"):
                if time.monotonic() > end:
                    raise SystemExit("the controller never held")
                rclpy.spin_once(node, timeout_sec=0.01)
            for dur in (args.settle, args.hold):
                cmds.clear()
                end = time.monotonic() + dur
                while time.monotonic() < end:
                    rclpy.spin_once(node, timeout_sec=0.005)
            tau = np.array(cmds)
        node.destroy_node()
    finally:
        rclpy.shutdown()
    q = np.abs(model.inverse_dynamics(np.zeros(6), np.zeros(6), np.zeros(6)))
    p2p = np.ptp(tau, axis=0)
    print(f"{len(tau)} commands in {args.hold} s, load {os.getloadavg()[0]:.2f}, noise_q {args.noise_q}")
    print(f"holding torque |Q| N·m {np.array2string(q, precision=3)}")
    print(f"p2p effort N·m {np.array2string(p2p, precision=4)}  max % of max|Q| {100 * p2p.max() / q.max():.3f}")
    print(f"mean effort N·m {np.array2string(tau.mean(axis=0), precision=3)}")


if __name__ == "__main__":
    main()
