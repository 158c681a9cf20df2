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
import math
import os
import random
import time
from pathlib import Path

import numpy as np

from .model.robots import load_model

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


START_TIME = 0.5  # s of sim time: when the lockstep moves start (the arm holds its initial pose before)
SETTLE = 0.5      # s of sim time between and after the moves
PERIOD = 0.002    # s: control period of the simulated arm (config/robot_dynamics.yaml)


class DemoError(RuntimeError):
    """A phase of the demo failed or recorded nothing."""


class _Done(Exception):
    """The requested phases are over."""


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _concatenate(first, second, gap: float):
    """One JointTrajectory: ``first``, a rest of ``gap`` s, then ``second`` (its points shifted)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    def t(p) -> float:
        return p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec

    shift = t(first.points[-1]) + gap
    points = list(first.points)
    for p in second.points:
        ns = round((t(p) + shift) * 1e9)
        points.append(JointTrajectoryPoint(positions=p.positions, velocities=p.velocities, accelerations=p.accelerations,
                                           effort=p.effort, time_from_start=Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))
    return JointTrajectory(joint_names=first.joint_names, points=points), shift


def run_demo(output: str = "out/demo", robot: str = "rx90", lockstep_only: bool = False) -> int:
    """Run the demo; ``lockstep_only`` stops after the (deterministic) lockstep moves."""
    # DDS traffic stays on this machine; the user's ROS_DOMAIN_ID is honoured, else one in 0-101
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_DOMAIN_ID"] = (os.environ.get("RD_DEMO_DOMAIN_ID") or os.environ.get("ROS_DOMAIN_ID")
                                   or str(random.randint(0, 101)))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from std_srvs.srv import SetBool, Trigger
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

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

    # phase 1, lockstep: the simulated arm advances one control period per command that answers its
    # latest state, and every input is in place before sim time starts (the sim starts paused; both
    # moves go to the controller as one trajectory stamped at START_TIME of sim time): the run is a
    # deterministic function of its inputs, bit for bit, whatever the load of the machine
    nodes = _with_parameters(
        node_set(robot, "mujoco"),
        mujoco_sim={"lockstep": True, "start_paused": True},
        computed_torque_controller={"trigger": "state", "state_timeout": 1.0},
    )
    bringup = Bringup(nodes, log_dir=out / "logs" / "lockstep").start()
    rclpy.init()
    node = rclpy.create_node("robot_dynamics_demo")
    report: dict = {"robot": robot}
    codes: dict = {}
    code = 0
    try:
        states: list = []
        keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(ControllerState, "/computed_torque_controller/status", states.append, keep_all)
        traj_pub = node.create_publisher(JointTrajectory, "/computed_torque_controller/joint_trajectory", 10)
        plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
        inv = node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics")
        stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
        pause = node.create_client(SetBool, "/mujoco_sim/pause")
        for c in (plan, inv, stats, pause):
            _wait(node, lambda c=c: c.service_is_ready(), 60, f"service {c.srv_name}")

        q0 = np.zeros(model.dof)  # mujoco_sim's initial positions
        moves = [("trapezoid", [q0.tolist(), goal]), ("quintic", [goal, *via])]
        planned = []
        for profile, waypoints in moves:
            req = PlanTrajectory.Request(
                joint_names=model.joint_names, profile=profile, execute=False, start_from_current=False,
                waypoints=[JointTrajectoryPoint(positions=list(map(float, w))) for w in waypoints],
            )
            t0 = time.monotonic()
            resp = _call(node, plan, req, timeout=10.0, attempts=6)
            if not resp.success:
                raise DemoError(f"plan failed: {resp.message}")
            planned.append((profile, waypoints[-1], resp, (time.monotonic() - t0) * 1e3))
            print(f"demo: {profile}: {resp.message} (planned in {planned[-1][3]:.1f} ms)")
        both, shift = _concatenate(planned[0][2].trajectory, planned[1][2].trajectory, SETTLE)
        ns = round(START_TIME * 1e9)
        both.header.stamp.sec, both.header.stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        _wait(node, lambda: traj_pub.get_subscription_count() > 0, 30, "the controller's trajectory topic")
        _wait(node, lambda: states and states[-1].mode != ControllerState.MODE_NO_MODEL, 120, "the controller's model")
        traj_pub.publish(both)
        _wait(node, lambda: any(s.trajectories_accepted for s in states), 30, "the controller accepting the moves")
        end_time = START_TIME + shift + planned[1][2].duration + SETTLE
        if not _call(node, pause, SetBool.Request(data=False), timeout=5.0, attempts=12).success:
            raise DemoError("the simulated arm did not start")
        _wait(node, lambda: states and _stamp(states[-1]) >= end_time, 300, "the end of the moves")

        cycles = [s for s in states if len(s.output.effort)]  # one per control cycle (not the mode notices)
        windows = [(START_TIME, START_TIME + shift), (START_TIME + shift, end_time)]
        move_reports = []
        for (profile, target, resp, latency), (w0, w1) in zip(planned, windows, strict=True):
            seg = [s for s in cycles if w0 <= _stamp(s) < w1 - 1e-9]
            expected = math.floor((w1 - 1e-9) / PERIOD) - math.ceil((w0 - 1e-9) / PERIOD) + 1  # cycles in [w0, w1)
            if not seg:
                raise DemoError(f"{profile}: the controller recorded no cycle in [{w0:.3f}, {w1:.3f}] s of sim time")
            err = np.array([s.error.positions for s in seg])
            final = np.abs(np.array(seg[-1].feedback.positions) - np.array(target, float)).max()
            move_reports.append({
                "profile": profile,
                "duration_s": resp.duration,
                "samples": len(seg),
                "samples_expected": expected,
                "max_tracking_error_rad": float(np.abs(err).max()),
                "rms_tracking_error_rad": float(np.sqrt((err**2).mean())),
                "final_error_rad": float(final),
                "plan_latency_ms": latency,
            })
            if len(seg) != expected:
                print(f"demo: warning: {profile}: {len(seg)} cycles recorded, {expected} expected (lost messages)")
        report["moves"] = move_reports
        states = cycles

        _plot(states, model.joint_names, out / "tracking.png")
        if lockstep_only:
            report["lockstep_loop"] = json.loads(_call(node, stats, Trigger.Request()).message)
            raise _Done
        # service latency: inverse dynamics for 1 and 1000 points, with the lockstep sim paused (it would run
        # flat out on both cores) and from a client node of its own (no subscription to serve while waiting)
        report["lockstep_loop"] = json.loads(_call(node, stats, Trigger.Request()).message)
        _call(node, pause, SetBool.Request(data=True), timeout=5.0, attempts=3)
        client_node = rclpy.create_node("demo_service_client")
        inv = client_node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics")
        if not inv.wait_for_service(timeout_sec=10.0):
            raise DemoError("dynamics_server's inverse_dynamics service is not available")
        node, demo_node = client_node, node
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
                    raise DemoError(f"inverse dynamics failed: {r.message}")
            lat[f"inverse_dynamics_{npts}_points_ms"] = float(np.median(times) * 1e3)
        report["service_latency"] = lat
        node = demo_node
        client_node.destroy_node()
        codes = bringup.stop()

        # phase 2, real time: the arm runs at wall-clock speed and the controller on its own
        # 500 Hz timer, as on a real arm; measure its rate and period jitter while it holds a pose
        nodes = _with_parameters(
            node_set(robot, "mujoco"),
            mujoco_sim={"lockstep": False},
            computed_torque_controller={"trigger": "timer"},  # loop thread, ~/controller_state at 100 Hz
        )
        rt_nodes = [n for n in nodes if n.name in ("mujoco_sim", "computed_torque_controller")]
        bringup = Bringup(rt_nodes, log_dir=out / "logs" / "realtime").start()
        _wait(node, lambda: stats.service_is_ready(), 60, "controller statistics")
        _spin_for(node, 4.0)
        report["realtime_loop"] = json.loads(_call(node, stats, Trigger.Request()).message)
        report["load_average"] = list(os.getloadavg())  # the host's load during the real-time run (1, 5, 15 min)
        if not report["realtime_loop"].get("cycles"):
            raise DemoError("the real-time phase recorded no control cycle")
    except _Done:
        pass
    except (DemoError, TimeoutError) as exc:
        print(f"demo: error: {exc}", flush=True)
        code = 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        codes.update({f"{k} (realtime)" if k in codes else k: v for k, v in bringup.stop().items()})
    report["node_exit_codes"] = codes
    report["wall_time_s"] = time.monotonic() - t_start
    report["ok"] = code == 0
    (out / "report.json").write_text(json.dumps(report, indent=2))
    _print_report(report, out)
    bad = {k: v for k, v in codes.items() if v not in (0, None)}
    return 1 if bad or code else 0


def _with_parameters(nodes, **overrides):
    """The node set with some parameters overridden, by node name."""
    for n in nodes:
        n.parameters.update(overrides.get(n.name, {}))
    return nodes


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


def _call(node, client, request, timeout: float = 30.0, attempts: int = 1):
    """Call a service; an idempotent request may be sent again (``attempts``): right after discovery, DDS can
    lose the first response when the server has not matched the client's response reader yet."""
    import rclpy

    for _ in range(attempts):
        fut = client.call_async(request)
        rclpy.spin_until_future_complete(node, fut, timeout_sec=timeout)
        if fut.done():
            return fut.result()
        client.remove_pending_request(fut)
    raise TimeoutError(f"no answer from {client.srv_name}")


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
    for key, what in (("lockstep_loop", "lockstep loop (cycles/s of wall time)"), ("realtime_loop", "real-time loop")):
        loop = report.get(key, {})
        if "rate_hz" in loop:
            print(f"  {what}: {_loop_text(loop)}")
    if "load_average" in report:
        print(f"  {load_text(report['load_average'], os.cpu_count() or 1)}")
    for k, v in report.get("service_latency", {}).items():
        print(f"  {k}: {v:.2f} ms")
    print(f"  nodes exited with {report.get('node_exit_codes')}")
    print(f"  wall time {report['wall_time_s']:.1f} s; plots and report.json in {out}")


def load_text(load: list[float], cores: int) -> str:
    """The host's load next to the real-time figures: above one runnable task per core, missed cycles and period
    errors say how busy the machine was, not how the controller does."""
    text = f"host load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min) on {cores} cores"
    if load[0] > cores:
        text += ": a loaded machine, the real-time figures above measure the load, not the controller"
    return text


def _loop_text(loop: dict) -> str:
    """The controller's ``~/statistics`` figures, as ``bench/bench_loop.py`` prints them."""
    text = (f"{loop['rate_hz']:.1f} Hz (nominal {loop.get('nominal_rate_hz', float('nan')):.0f}) over "
            f"{loop.get('window_cycles', loop['cycles'])} cycles, period error p50 {loop['period_error_p50_ms']:.3f} / "
            f"p99 {loop['period_error_p99_ms']:.3f} / max {loop['period_error_max_ms']:.2f} ms")
    if "missed_pct" in loop:
        text += f", missed {loop['missed_pct']:.2f} %"
    if "sampling_us" in loop:
        text += (f"; CPU per cycle in the cycle: sampling {loop['sampling_us']:.1f}, law {loop['law_us']:.1f}, publish "
                 f"{loop['publish_us'] + loop.get('state_publish_us', 0.0):.1f}, total {loop['cycle_us']:.1f} µs")
    if "process_cpu_per_cycle_us" in loop:
        text += f"; process CPU {loop['process_cpu_per_cycle_us']:.0f} µs per cycle"
    return text
