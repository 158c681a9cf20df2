"""The real-time loop: computed-torque controller + simulated arm (``mujoco_sim``, real time, not lockstep).

For each configuration (rate 500 Hz / 1 kHz; with or without a CPU hog pinned to CPU 1; default priority
or, with ``--rt``, SCHED_FIFO priority 80) the two nodes are started as processes, the controller tracks a slow
sinusoid (so that sampling, law and publishing all run every cycle) for ``--duration`` s after a warm-up,
and the figures are read from the controller's ``~/statistics`` (its own ring of the last ``duration`` s
of cycles) and from ``/proc/<pid>/stat`` (process CPU / cycles over the measured window)::

    .venv/bin/python bench/bench_loop.py                       # 30 s per configuration, all four
    .venv/bin/python bench/bench_loop.py --duration 5 --rates 1000 --hog off --loop timer-single

Printed per configuration: achieved loop rate, period error p50/p99/max, missed cycles (%), controller CPU
per cycle (process CPU time / cycles), per-phase time inside the cycle (sampling, law, publish, state
publish, other), and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WARMUP = 3.0  # s of tracking before the measured window


def _proc_cpu(pid: int) -> float:
    """utime + stime of a process (s), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _trajectory(names: list[str], q0: np.ndarray, duration: float):
    """A slow sinusoid around ``q0`` (quintic interpolation: positions, velocities, accelerations), 100 Hz points."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    t = np.arange(0.0, duration, 0.01)
    w = 2 * np.pi / 8.0
    amp = 0.2 * np.ones(len(names))
    pts = []
    for ti in t:
        ns = round(ti * 1e9)
        pts.append(JointTrajectoryPoint(
            positions=(q0 + amp * np.sin(w * ti)).tolist(), velocities=(amp * w * np.cos(w * ti)).tolist(),
            accelerations=(-amp * w * w * np.sin(w * ti)).tolist(),
            time_from_start=Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))
    return JointTrajectory(joint_names=names, points=pts)


def run_config(rate: float, hog: bool, rt: bool, loop: str, duration: float, log_dir: Path, clock: str = "sim",
               pin: bool = False) -> dict:
    """One configuration; ``loop`` is ``<loop>-<executor>`` (``thread-events``, ``timer-single``, ...); ``clock``
    ``sim``: the sim publishes /clock and stamps in sim time, the controller uses sim time; ``system``: the sim
    stamps its states with the system clock and publishes no /clock, as a real arm's driver (no sim time).  ``pin``:
    the controller's loop thread on CPU 0 (``cpu_affinity: [0]``) and the sim on CPU 1."""
    import rclpy
    from std_srvs.srv import Trigger

    from robot_dynamics.model.robots import load_model
    from robot_dynamics.ros.bringup import Bringup
    from robot_dynamics.ros.node_set import node_set
    from robot_dynamics_interfaces.msg import ControllerState

    period = 1.0 / rate
    nodes = [n for n in node_set("rx90", "mujoco") if n.name in ("mujoco_sim", "computed_torque_controller")]
    for n in nodes:
        if n.name == "mujoco_sim":
            n.parameters.update(lockstep=False, control_period=period, timestep=min(0.001, period), stamp_time=clock)
        else:
            n.parameters.update(use_sim_time=clock == "sim", trigger="timer", rate=rate, loop=loop.split("-")[0], executor=loop.split("-")[1], state_publish_rate=100.0,
                                state_publish_divider=0, statistics_window=duration,
                                realtime_priority=80 if rt else 0, **({"cpu_affinity": [0]} if pin else {}))
    hog_proc = None
    if hog:  # a busy loop pinned to CPU 1 (the "other" core of a 2-core machine)
        hog_proc = subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0, {1})\nwhile True: pass"])
    bringup = Bringup(nodes, log_dir=log_dir, say=lambda s: None).start()
    node = rclpy.create_node("bench_loop")
    stats = node.create_client(Trigger, "/computed_torque_controller/statistics")
    from trajectory_msgs.msg import JointTrajectory
    traj_pub = node.create_publisher(JointTrajectory, "/computed_torque_controller/joint_trajectory", 10)
    states: list[ControllerState] = []
    node.create_subscription(ControllerState, "/computed_torque_controller/status", states.append, 100)

    def spin_until(cond, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            rclpy.spin_once(node, timeout_sec=0.05)

    def call() -> dict:
        fut = stats.call_async(Trigger.Request())
        rclpy.spin_until_future_complete(node, fut, timeout_sec=10.0)
        if not fut.done():
            raise TimeoutError("no answer from ~/statistics")
        return json.loads(fut.result().message)

    try:
        spin_until(stats.service_is_ready, 60, "controller statistics service")
        spin_until(lambda: states and states[-1].mode == "holding" and len(states[-1].feedback.positions), 120,
                   "controller holding")
        model = load_model("rx90")
        q0 = np.array(states[-1].feedback.positions)
        spin_until(lambda: traj_pub.get_subscription_count() > 0, 30, "trajectory subscription")
        traj_pub.publish(_trajectory(model.joint_names, q0, WARMUP + duration + 10.0))
        spin_until(lambda: states and states[-1].mode == "tracking", 30, "controller tracking")
        end = time.monotonic() + WARMUP
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        pid = bringup.procs["computed_torque_controller"].pid
        if pin:  # the controller's loop on CPU 0 (its cpu_affinity parameter), every thread of the sim on CPU 1
            sim_pid = bringup.procs["mujoco_sim"].pid
            for tid in os.listdir(f"/proc/{sim_pid}/task"):
                os.sched_setaffinity(int(tid), {1})
        a, cpu_a, t_a = call(), _proc_cpu(pid), time.monotonic()
        end = t_a + duration
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        b, cpu_b, t_b = call(), _proc_cpu(pid), time.monotonic()
        if bringup.dead():
            raise RuntimeError(f"a node died: {bringup.dead()}")
        cycles = b["cycles"] - a["cycles"]
        b.update(
            measured_s=t_b - t_a, measured_cycles=cycles,
            cycles_per_s=cycles / (t_b - t_a),
            proc_cpu_per_cycle_us=(cpu_b - cpu_a) / max(cycles, 1) * 1e6,
            proc_cpu_pct=100 * (cpu_b - cpu_a) / (t_b - t_a),
            final_mode=b.get("mode"),
        )
        return b
    finally:
        node.destroy_node()
        bringup.stop()
        if hog_proc is not None:
            hog_proc.kill()
            hog_proc.wait()


def bare_loop(rate: float, duration: float, clock: str) -> None:
    """The trivial baseline (run as its own process): an rclpy node whose loop thread does only the I/O of a control
    cycle, the cheapest way rclpy allows (the controller's own way): take the latest ``/joint_states`` (and
    ``/clock`` with sim time) as bytes, publish a command as bytes (the gravity torque at the first state, held),
    at ``rate`` on the steady clock.  Prints its process CPU per cycle over ``duration`` s after a warm-up."""
    import threading

    import rclpy
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from robot_dynamics.model.robots import load_model
    from robot_dynamics.ros.cdr import Float64MultiArrayWriter, JointStateReader

    rclpy.init()
    node = Node("bare_loop")  # no TimeSource subscription: the loop takes /clock itself, as the controller does
    inputs = Node("bare_loop_input", use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
    best_effort = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)  # (a node no executor spins)
    states = inputs.create_subscription(JointState, "/joint_states", lambda m: None, best_effort, raw=True)
    clocks = inputs.create_subscription(Clock, "/clock", lambda m: None, best_effort, raw=True) if clock == "sim" else None
    pub = node.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
    model = load_model("rx90")
    reader, writer = JointStateReader(100), Float64MultiArrayWriter(model.dof)
    period_ns = round(1e9 / rate)
    result: dict = {}

    def loop() -> None:
        deadline, cycles, t_start, cpu_start = time.monotonic_ns(), 0, None, None
        while True:
            deadline += period_ns
            wait = deadline - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait * 1e-9)
            if clocks is not None:
                with clocks.handle:
                    clocks.handle.take_message(Clock, True)
            with states.handle:
                got = states.handle.take_message(JointState, True)
            if got is not None and cycles == 0:
                q = reader.read(got[0]).position
                writer.data[:] = model.gravity_torques(q)
                cycles = 1
            if cycles:
                pub.publish(writer.bytes())
                cycles += 1
            if cycles == round(WARMUP * rate):
                t_start, cpu_start = time.monotonic(), time.process_time()
            if t_start is not None and time.monotonic() - t_start >= duration:
                result["cpu_per_cycle_us"] = (time.process_time() - cpu_start) / (cycles - round(WARMUP * rate)) * 1e6
                return

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    while thread.is_alive():
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps(result), flush=True)
    inputs.destroy_node()
    node.destroy_node()
    rclpy.try_shutdown()


def run_bare(rate: float, duration: float, log_dir: Path, clock: str) -> float:
    """The sim and :func:`bare_loop` in their own processes; the bare loop's CPU per cycle (us)."""
    from robot_dynamics.ros.bringup import Bringup
    from robot_dynamics.ros.node_set import node_set

    period = 1.0 / rate
    nodes = [n for n in node_set("rx90", "mujoco") if n.name == "mujoco_sim"]
    nodes[0].parameters.update(lockstep=False, control_period=period, timestep=min(0.001, period), stamp_time=clock)
    bringup = Bringup(nodes, log_dir=log_dir, say=lambda s: None).start()
    try:
        out = subprocess.run([sys.executable, __file__, "--bare", str(rate), str(duration), clock], capture_output=True,
                             text=True, timeout=duration + 120)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"bare loop failed: {out.stderr[-2000:]}")
        return float(json.loads(lines[-1])["cpu_per_cycle_us"])
    finally:
        bringup.stop()


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--bare":
        bare_loop(float(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="measured seconds per configuration (>= 30 for the record)")
    ap.add_argument("--rates", type=float, nargs="+", default=[500.0, 1000.0])
    ap.add_argument("--hog", choices=("off", "on", "both"), default="both", help="CPU hog pinned to CPU 1")
    ap.add_argument("--rt", choices=("off", "on", "both"), nargs="?", const="on", default="off",
                    help="SCHED_FIFO priority 80 for the controller's loop (--rt: only; --rt both: default and FIFO)")
    ap.add_argument("--loop", default="thread-events",
                    help="controller loop-executor: thread|timer - events|single (comma-separated to compare)")
    ap.add_argument("--clock", default="sim,system",
                    help="sim (sim time from /clock) | system (states stamped with the system clock, no /clock, as on "
                         "a real arm); comma-separated to compare")
    ap.add_argument("--pin", action="store_true",
                    help="controller loop thread on CPU 0 (cpu_affinity), the simulated arm on CPU 1 (the hog too)")
    ap.add_argument("--baseline", choices=("on", "off"), default="on",
                    help="also measure the trivial baseline (bare rclpy loop: take + publish only) per rate and clock")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(60 + os.getpid() % 40))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import rclpy

    rclpy.init()
    results = []
    log_root = Path(tempfile.mkdtemp(prefix="bench_loop_"))
    load0 = os.getloadavg()
    hogs = {"off": [False], "on": [True], "both": [False, True]}[args.hog]
    try:
        for loop, clock in ((lp, ck) for lp in args.loop.split(",") for ck in args.clock.split(",")):
            for rate in args.rates:
                bare = None
                if args.baseline == "on":
                    try:
                        bare = run_bare(rate, args.duration, log_root / f"bare_{rate:.0f}_{clock}", clock)
                        print(f"{rate:.0f} Hz, {clock} time: trivial baseline (bare rclpy loop, take + publish only, "
                              f"no hog): CPU/cycle {bare:.0f} us", flush=True)
                    except (TimeoutError, RuntimeError, subprocess.TimeoutExpired) as exc:
                        print(f"{rate:.0f} Hz, {clock} time: baseline FAILED: {exc}", flush=True)
                for hog in hogs:
                    for rt in {"off": [False], "on": [True], "both": [False, True]}[args.rt]:
                        name = (f"{rate:.0f} Hz, loop {loop}, {clock} time, hog {'on ' if hog else 'off'}, "
                                f"{'SCHED_FIFO' if rt else 'default prio'}{', pinned' if args.pin else ''}")
                        load = os.getloadavg()[0]
                        try:
                            r = run_config(rate, hog, rt, loop, args.duration,
                                           log_root / name.replace(" ", "_").replace(",", ""), clock, args.pin)
                        except (TimeoutError, RuntimeError) as exc:
                            print(f"{name}: FAILED: {exc} (logs in {log_root})", flush=True)
                            continue
                        r.update(config=name, load_before=load, baseline_cpu_per_cycle_us=bare)
                        if os.environ.get("BENCH_LOOP_DEBUG"):
                            print(json.dumps(r))
                        results.append(r)
                        print(
                            f"{name}: {r['cycles_per_s']:.1f} Hz, period error p50 {r['period_error_p50_ms']:.3f} / "
                            f"p99 {r['period_error_p99_ms']:.3f} / max {r['period_error_max_ms']:.2f} ms, missed "
                            f"{r['missed_pct']:.2f} %, CPU/cycle {r['proc_cpu_per_cycle_us']:.0f} us "
                            f"({r['proc_cpu_pct']:.0f} % of a core); in-cycle us: sampling {r['sampling_us']:.1f}, law "
                            f"{r['law_us']:.1f}, publish {r['publish_us']:.1f}, state {r['state_publish_us']:.1f}, other "
                            f"{r['other_us']:.1f} (cycle {r['cycle_us']:.1f}, p99 {r['cycle_p99_us']:.0f}); "
                            f"{r['scheduling']}; final mode {r['final_mode']}; load avg before {load:.2f}"
                            + (f"; CPU/cycle vs the bare loop {r['proc_cpu_per_cycle_us'] / bare:.2f}x" if bare else ""),
                            flush=True)
    finally:
        rclpy.try_shutdown()
    load1 = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
          f"at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}; node logs in {log_root}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "load": [load0, load1]}, indent=1))
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
