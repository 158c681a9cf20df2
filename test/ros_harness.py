"""Start nodes in separate processes and call them over DDS; children are always reaped."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from robot_dynamics.ros.bringup import die_with_parent
from robot_dynamics.ros.node_set import node_environment
from robot_dynamics.ros.runtime import DUMP_SIGNAL

_CHILDREN: list[subprocess.Popen] = []


def _reap_all() -> None:
    for p in _CHILDREN:
        stop_process(p)


atexit.register(_reap_all)


def stop_process(proc: subprocess.Popen, timeout: float = 8.0) -> int | None:
    """SIGINT, then SIGTERM, then SIGKILL the process group; returns the exit code."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    if proc in _CHILDREN:
        _CHILDREN.remove(proc)
    return proc.returncode


def start_process(cmd: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``cmd`` in its own session (so the whole group can be signalled), output to ``log``.

    The child gets SIGTERM when the test process dies, even by SIGKILL (``PR_SET_PDEATHSIG``).
    """
    fh = open(log, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(list(cmd), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, env=os.environ.copy() if env is None else env,
                            preexec_fn=die_with_parent())
    _CHILDREN.append(proc)
    return proc


@contextmanager
def node_process(
    module: str, log_dir: Path, params: dict[str, Any] | None = None, remaps: dict[str, str] | None = None,
    param_files: Sequence[str | Path] = (),
) -> Iterator[subprocess.Popen]:
    """Run ``python -m robot_dynamics.ros.<module> --ros-args [--params-file F] -p k:=v ...`` for the block."""
    cmd = [sys.executable, "-m", f"robot_dynamics.ros.{module}", "--ros-args"]
    for f in param_files:
        cmd += ["--params-file", str(f)]
    for k, v in (params or {}).items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple)):
            v = "[" + ",".join(repr(x) if isinstance(x, str) else str(x) for x in v) + "]"
        cmd += ["-p", f"{k}:={v}"]
    for k, v in (remaps or {}).items():
        cmd += ["-r", f"{k}:={v}"]
    proc = start_process(cmd, Path(log_dir) / f"{module}.log", env=node_environment())
    try:
        yield proc
    finally:
        stop_process(proc)


CALL_CAP = 60.0  # s: a generous cap on one service call (a starved host answers late, not never)
RESEND_AFTER = 15.0  # s: an idempotent request unanswered this long is sent again (see call_service)


def call_service(node: Any, client: Any, request: Any, timeout: float = CALL_CAP, *, idempotent: bool = True) -> Any:
    """Call a service and spin ``node`` until the answer arrives (or fail after ``timeout``).

    A request sent right after the service appeared can lose its answer: the server's response writer may not have
    matched the client's reader yet (discovery is slower on a busy host), and the server sends it once.  An
    ``idempotent`` request unanswered after ``RESEND_AFTER`` s is sent again (the first answer to arrive wins)."""
    import rclpy

    deadline = time.monotonic() + timeout
    futures = [client.call_async(request)]
    while True:
        left = deadline - time.monotonic()
        wait = min(left, RESEND_AFTER) if idempotent else left
        rclpy.spin_until_future_complete(node, futures[-1], timeout_sec=max(wait, 0.0))
        done = [f for f in futures if f.done()]
        if done:
            for f in futures:
                if not f.done():
                    client.remove_pending_request(f)
            return done[0].result()
        if time.monotonic() >= deadline:
            for f in futures:
                client.remove_pending_request(f)
            dumped = dump_node_stacks()
            raise TimeoutError(f"no answer from {client.srv_name} within {timeout} s ({len(futures)} request(s) sent; "
                               f"the stacks of {dumped or 'no'} node process(es) are in their logs)")
        if idempotent:
            futures.append(client.call_async(request))


def dump_node_stacks() -> list[int]:
    """``DUMP_SIGNAL`` to every node process this test process started (its children running
    ``robot_dynamics.ros.*``): each writes its threads' stacks to its log.  Their pids."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"robot_dynamics.ros." in cmd:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), DUMP_SIGNAL)
                pids.append(int(entry))
    return pids


def wait_for_service(client: Any, timeout: float = CALL_CAP) -> None:
    deadline = time.monotonic() + timeout
    while not client.wait_for_service(timeout_sec=0.5):
        if time.monotonic() > deadline:
            raise TimeoutError(f"service {client.srv_name} did not appear within {timeout} s")


READY = ("holding", "tracking")  # ControllerState modes in which a controller takes a trajectory


def send_trajectory(node: Any, trajectory: Any, topic: str = "/computed_torque_controller/joint_trajectory",
                    timeout: float = 30.0, confirm: bool = True) -> None:
    """Publish ``trajectory`` (e.g. a ``~/plan`` response's) on a controller's ``~/joint_trajectory`` topic once it
    has a subscriber: the topic path of the controller, independent of its FollowJointTrajectory action (which
    ``~/plan`` with ``execute`` uses).  ``confirm``: as a user watching the controller's ``~/status`` would, wait
    for the controller to hold (or track), then until its ``trajectories_accepted`` counts the message; a message lost while discovery completes (the writer
    matched before the reader did) is published again (up to 5 times)."""
    import rclpy
    from trajectory_msgs.msg import JointTrajectory

    from robot_dynamics_interfaces.msg import ControllerState

    pub = node.create_publisher(JointTrajectory, topic, 10)
    seen: list[Any] = []
    sub = None
    if confirm:
        sub = node.create_subscription(ControllerState, topic.rsplit("/", 1)[0] + "/status", seen.append, 100)
    deadline = time.monotonic() + timeout
    try:
        while pub.get_subscription_count() == 0 or (confirm and not (seen and seen[-1].mode in READY)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no subscriber on {topic} (or its controller not holding) within {timeout} s")
            rclpy.spin_once(node, timeout_sec=0.01)
        if not confirm:
            pub.publish(trajectory)
            return
        accepted, refused = seen[-1].trajectories_accepted, seen[-1].inputs_refused
        for _ in range(5):
            pub.publish(trajectory)
            wait = time.monotonic() + 2.0
            while time.monotonic() < wait:
                rclpy.spin_once(node, timeout_sec=0.01)
                last = seen[-1]
                if last.trajectories_accepted > accepted:
                    node.destroy_publisher(pub)
                    return
        raise TimeoutError(f"the controller on {topic} did not take the trajectory (5 times 2 s; last mode "
                           f"{seen[-1].mode}: {seen[-1].mode_reason}; inputs refused {refused} -> "
                           f"{seen[-1].inputs_refused}: its log says why)")
    finally:
        if sub is not None:
            node.destroy_subscription(sub)


def publish_still_arm(node: Any, names: Sequence[str], q: Sequence[float], period: float = 0.01) -> Any:
    """A timer of ``node`` publishing ``/joint_states`` of an arm held still at ``q`` (zero velocity), stamped with
    the node clock: the arm of tests that watch a controller without a simulator. Returns the timer."""
    from sensor_msgs.msg import JointState

    pub = node.create_publisher(JointState, "/joint_states", 10)
    position, velocity = [float(x) for x in q], [0.0] * len(q)

    def publish() -> None:
        msg = JointState(name=list(names), position=position, velocity=velocity)
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)

    return node.create_timer(period, publish)


def quintic_trajectory(names: Sequence[str], q0: Any, q1: Any, duration: float, points: int = 41) -> Any:
    """A ``JointTrajectory`` q0 -> q1 in ``duration`` s along s(u) = 10u³ − 15u⁴ + 6u⁵ (rest to rest), ``points``
    points from t = 0 with positions, velocities and accelerations."""
    import numpy as np
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
    msg = JointTrajectory(joint_names=list(names))
    for t in np.linspace(0.0, duration, points):
        u = t / duration
        s = 10 * u**3 - 15 * u**4 + 6 * u**5
        sd = (30 * u**2 - 60 * u**3 + 30 * u**4) / duration
        sdd = (60 * u - 180 * u**2 + 120 * u**3) / duration**2
        sec = int(t)
        msg.points.append(JointTrajectoryPoint(
            positions=(q0 + s * (q1 - q0)).tolist(), velocities=(sd * (q1 - q0)).tolist(),
            accelerations=(sdd * (q1 - q0)).tolist(), time_from_start=Duration(sec=sec, nanosec=round((t - sec) * 1e9))))
    return msg


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_parts(pid: int) -> str:
    """VmRSS split as the kernel counts it (anonymous heap, mapped files, shared memory: DDS's segments)."""
    keys = ("RssAnon", "RssFile", "RssShmem")
    values = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in
              Path(f"/proc/{pid}/status").read_text().splitlines() if line.split(":")[0] in keys}
    return ", ".join(f"{k[3:].lower()} {values.get(k, float('nan')):.0f}" for k in keys)


def stamps_in_middle_of_takes(holder: Any, call: Callable[[], None], attempts: int = 5) -> list[tuple[float, int, int]]:
    """Whether another thread runs while ``holder._take`` (a C take) is in progress: a thread stamps the time as fast
    as it can while ``call()`` makes one request that ``holder._take`` takes; per take (ms, the thread's stamps in
    its middle half, stamps in all), up to ``attempts`` takes until one has stamps in its middle half (a busy host
    may leave the thread unscheduled during one take; with the GIL held, no take ever has any)."""
    import threading

    calls: list[tuple[float, float]] = []
    c_take = holder._take

    def measured(*args: Any) -> Any:
        t0 = time.perf_counter()
        ret = c_take(*args)
        calls.append((t0, time.perf_counter()))
        return ret

    holder._take = measured
    seen: list[tuple[float, int, int]] = []
    try:
        for _ in range(attempts):
            stamps: list[float] = []
            stop = threading.Event()

            def stamp(stamps: list[float] = stamps, stop: threading.Event = stop) -> None:
                while not stop.is_set() and len(stamps) < 20_000_000:
                    stamps.append(time.perf_counter())

            stamper = threading.Thread(target=stamp, daemon=True)
            stamper.start()
            try:
                call()
            finally:
                stop.set()
                stamper.join(10)
            t0, t1 = calls[-1]
            quarter = (t1 - t0) / 4
            inside = sum(1 for t in stamps if t0 + quarter <= t <= t1 - quarter)
            seen.append((round(1e3 * (t1 - t0), 1), inside, len(stamps)))
            if inside:
                break
    finally:
        holder._take = c_take
    return seen
