"""The main job: a MuJoCo-simulated arm driven by the full robot_dynamics stack over ROS 2.

``robot-dynamics demo`` (``make demo``) brings up the simulated arm, the dynamics
server, the trajectory generator and the computed-torque controller as separate
processes, plans and executes a synchronized trapezoid move and then a quintic
move through waypoints via ``/trajectory_generator/plan``, and reports tracking
error, controller loop rate and jitter, and service latency; plots go to the
output folder.  It ends by itself.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import numpy as np

from .robots import load_model

GOALS = {
    # all joints move >= 1 rad in the first move
    "rx90": ([1.2, -1.0, 1.3, 1.5, 1.1, -1.6], [[0.4, 0.3, 0.6, -0.5, 0.6, 0.8], [-0.3, 0.2, -0.2, 0.4, -0.3, -0.2]]),
}


def _default_goals(model) -> tuple[list[float], list[list[float]]]:
    lim = model.limits
    lo, hi = np.nan_to_num(lim["lower"], neginf=-2.0), np.nan_to_num(lim["upper"], posinf=2.0)
    mid = (lo + hi) / 2
    span = (hi - lo) / 2
    return (mid + 0.5 * span).tolist(), [(mid - 0.3 * span).tolist(), mid.tolist()]


def run_demo(output: str = "out/demo", robot: str = "rx90") -> int:
    # DDS traffic stays on this machine, in a domain of the demo's own
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_DOMAIN_ID"] = os.environ.get("RD_DEMO_DOMAIN_ID") or str(random.randint(110, 160))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    import rclpy
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectoryPoint

    from robot_dynamics_interfaces.msg import ControllerState
    from robot_dynamics_interfaces.srv import InverseDynamics, PlanTrajectory

    from .ros.bringup import Bringup
    from .ros.node_set import node_set

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    model = load_model(robot)
    goal, via = GOALS.get(robot, _default_goals(model))
    print(f"demo: robot {robot} ({model.dof} joints), ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, logs in {out / 'logs'}")
    print(model.table())

    # phase 1, lockstep: the simulated arm advances one control period per command, so the
    # closed loop is deterministic whatever the load of the machine
    nodes = _with_parameters(
        node_set(robot, "mujoco"),
        mujoco_sim={"lockstep": True, "lockstep_timeout": 5.0},
        # a command advances the arm: no watchdog hold on a slow cycle of a loaded machine
        computed_torque_controller={"trigger": "state", "state_timeout": 1.0},
    )
    bringup = Bringup(nodes, log_dir=out / "logs" / "lockstep").start()
    rclpy.init()
    node = rclpy.create_node("robot_dynamics_demo")
    report: dict = {"robot": robot}
    codes: dict = {}
    try:
        states: list = []
        joint_state: dict = {}
        node.create_subscription(ControllerState, "/computed_torque_controller/controller_state", states.append, 1000)
        node.create_subscription(JointState, "/joint_states", lambda m: joint_state.update(msg=m), 10)
        plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
        inv = node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics")
        stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
        for c in (plan, inv, stats):
            _wait(node, lambda c=c: c.service_is_ready(), 60, f"service {c.srv_name}")
        _wait(node, lambda: "msg" in joint_state, 30, "/joint_states")
        _spin_for(node, 1.0)  # the controller holds the initial pose

        moves = [("trapezoid", [goal]), ("quintic", via)]
        move_reports = []
        for profile, waypoints in moves:
            req = PlanTrajectory.Request(
                joint_names=model.joint_names,
                waypoints=[JointTrajectoryPoint(positions=list(map(float, w))) for w in waypoints],
                profile=profile, execute=True, start_from_current=True,
            )
            t0 = time.monotonic()
            resp = _call(node, plan, req)
            for _ in range(50):  # the generator may not have seen /joint_states yet
                if resp.success or "no current position" not in resp.message:
                    break
                _spin_for(node, 0.1)
                t0 = time.monotonic()
                resp = _call(node, plan, req)
            latency = time.monotonic() - t0
            if not resp.success:
                raise RuntimeError(f"plan failed: {resp.message}")
            first = len(states)
            print(f"demo: {profile}: {resp.message} (planned in {latency * 1e3:.1f} ms)")
            _wait_settled(node, states, first, waypoints[-1], 0.5)
            seg = states[first:]
            err = np.array([s.error.positions for s in seg])
            final = np.abs(np.array(seg[-1].feedback.positions) - np.array(waypoints[-1], float)).max()
            move_reports.append({
                "profile": profile,
                "duration_s": resp.duration,
                "samples": len(seg),
                "max_tracking_error_rad": float(np.abs(err).max()),
                "rms_tracking_error_rad": float(np.sqrt((err**2).mean())),
                "final_error_rad": float(final),
                "plan_latency_ms": latency * 1e3,
            })
        report["moves"] = move_reports

        # service latency: inverse dynamics for 1 and 1000 points
        rng = np.random.default_rng(0)
        lat = {}
        for npts, reps in ((1, 20), (1000, 5)):
            q = rng.uniform(-1, 1, (npts, model.dof))
            pts = [JointTrajectoryPoint(positions=r.tolist(), velocities=r.tolist(), accelerations=r.tolist()) for r in q]
            times = []
            for _ in range(reps):
                t0 = time.monotonic()
                r = _call(node, inv, InverseDynamics.Request(joint_names=model.joint_names, points=pts))
                times.append(time.monotonic() - t0)
                if not r.success:
                    raise RuntimeError(f"inverse dynamics failed: {r.message}")
            lat[f"inverse_dynamics_{npts}_points_ms"] = float(np.median(times) * 1e3)
        report["service_latency"] = lat
        report["lockstep_loop"] = json.loads(_call(node, stats, Trigger.Request()).message)
        _plot(states, model.joint_names, out / "tracking.png")
        codes = bringup.stop()

        # phase 2, real time: the arm runs at wall-clock speed and the controller on its own
        # 500 Hz timer, as on a real arm; measure its rate and period jitter while it holds a pose
        nodes = _with_parameters(
            node_set(robot, "mujoco", use_sim_time=False),
            mujoco_sim={"lockstep": False},
            computed_torque_controller={"trigger": "timer", "state_publish_divider": 10},
        )
        rt_nodes = [n for n in nodes if n.name in ("mujoco_sim", "computed_torque_controller")]
        bringup = Bringup(rt_nodes, log_dir=out / "logs" / "realtime").start()
        _wait(node, lambda: stats.service_is_ready(), 60, "controller statistics")
        _spin_for(node, 4.0)
        report["realtime_loop"] = json.loads(_call(node, stats, Trigger.Request()).message)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        codes.update({f"{k} (realtime)" if k in codes else k: v for k, v in bringup.stop().items()})
    report["node_exit_codes"] = codes
    report["wall_time_s"] = time.monotonic() - t_start
    (out / "report.json").write_text(json.dumps(report, indent=2))
    _print_report(report, out)
    bad = {k: v for k, v in codes.items() if v not in (0, None)}
    return 1 if bad else 0


def _with_parameters(nodes, **overrides):
    """The node set with some parameters overridden, by node name."""
    for n in nodes:
        n.parameters.update(overrides.get(n.name, {}))
    return nodes


def _wait_settled(node, states, first: int, goal, settle: float, timeout: float = 120.0) -> None:
    """Spin until the controller's reference has reached ``goal`` and ``settle`` s of sim time passed since."""

    def stamp(s):
        return s.header.stamp.sec + 1e-9 * s.header.stamp.nanosec

    def done():
        for k in range(first, len(states)):
            if np.allclose(states[k].reference.positions, goal, atol=1e-12, rtol=0):
                return stamp(states[-1]) - stamp(states[k]) >= settle
        return False

    _wait(node, done, timeout, "the end of the move")


def _spin_for(node, seconds: float) -> None:
    import rclpy

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.01)


def _wait(node, cond, timeout: float, what: str) -> None:
    import rclpy

    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"demo: {what} not available after {timeout} s")
        rclpy.spin_once(node, timeout_sec=0.1)


def _call(node, client, request, timeout: float = 30.0):
    import rclpy

    fut = client.call_async(request)
    rclpy.spin_until_future_complete(node, fut, timeout_sec=timeout)
    if not fut.done():
        raise TimeoutError(f"no answer from {client.srv_name}")
    return fut.result()


def _plot(states, names, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not states:
        return
    t = np.array([s.header.stamp.sec + 1e-9 * s.header.stamp.nanosec for s in states])
    t -= t[0]
    ref = np.array([s.reference.positions for s in states])
    fb = np.array([s.feedback.positions for s in states])
    eff = np.array([s.output.effort for s in states])
    fig, ax = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    for j, name in enumerate(names):
        line = ax[0].plot(t, ref[:, j], "--", lw=1)[0]
        ax[0].plot(t, fb[:, j], color=line.get_color(), lw=1, label=name)
        ax[1].plot(t, ref[:, j] - fb[:, j], lw=1, label=name)
        ax[2].plot(t, eff[:, j], lw=1, label=name)
    ax[0].set_ylabel("q (rad): ref -- / actual —")
    ax[1].set_ylabel("tracking error (rad)")
    ax[2].set_ylabel("effort (N·m)")
    ax[2].set_xlabel("sim time (s)")
    ax[0].legend(ncol=3, fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle("robot_dynamics demo: computed-torque control of the simulated arm over ROS 2")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _print_report(report: dict, out: Path) -> None:
    print("\n=== robot_dynamics demo report ===")
    for m in report.get("moves", []):
        print(
            f"  {m['profile']:>10}: duration {m['duration_s']:.3f} s, max tracking error {m['max_tracking_error_rad']:.2e} rad, "
            f"RMS {m['rms_tracking_error_rad']:.2e} rad, final error {m['final_error_rad']:.2e} rad"
        )
    for key, what in (("lockstep_loop", "lockstep loop (cycles/s of wall time)"), ("realtime_loop", "real-time loop (500 Hz timer)")):
        loop = report.get(key, {})
        if "rate_hz" in loop:
            print(
                f"  {what}: {loop['rate_hz']:.1f} Hz over {loop['cycles']} cycles, period error p50 "
                f"{loop['period_error_p50_ms']:.3f} ms, p99 {loop['period_error_p99_ms']:.3f} ms, "
                f"compute {loop['compute_mean_us']:.0f} µs"
            )
    for k, v in report.get("service_latency", {}).items():
        print(f"  {k}: {v:.2f} ms")
    print(f"  nodes exited with {report.get('node_exit_codes')}")
    print(f"  wall time {report['wall_time_s']:.1f} s; plots and report.json in {out}")
