"""Record ``/joint_states`` and the identification experiment over ROS 2 (issue 10, ROS path).

* :class:`JointStateRecorder`: an rclpy node that keeps every ``sensor_msgs/JointState`` of
  ``/joint_states`` (reliable, deep queue: what a real joint_state_broadcaster publishes:
  positions, velocities, efforts) and writes them as a rosbag2 (``rosbags`` Writer, via
  :func:`~robot_dynamics.identification.data.write_bag`) or an NPZ file.  Standalone:
  ``python -m robot_dynamics.ros.recorder --ros-args -p output:=DIR`` records until SIGINT and
  writes on shutdown.
* :func:`record_identification_experiment`: brings up the simulated arm (``mujoco_sim``) and the
  ``computed_torque_controller`` of :func:`~robot_dynamics.ros.node_set.node_set` in lockstep
  (a command advances the arm one control period), optimizes an exciting trajectory
  (:func:`~robot_dynamics.identification.excitation.optimize_excitation`), sends it sampled as a
  ``control_msgs/FollowJointTrajectory`` goal to ``/computed_torque_controller/follow_joint_trajectory`` (from where
  the arm is: its points start ``APPROACH`` s after the stamp; the arm is paused, ``~/pause``, while the goal
  travels, so the run does not depend on how busy the host is; a refusal or an abort stops the recording with the
  controller's reason),
  records ``/joint_states`` while the arm executes it, writes the bag, stops the nodes and runs
  :func:`~robot_dynamics.identification.estimation.identify` on the bag.
  ``robot-dynamics identify-record --robot rx90 --output DIR [--duration S]`` is its CLI.

Efforts of ``mujoco_sim`` (and of a ros2_control effort interface) stamped t_k are the command
held over the previous control period [t_k − h, t_k]; identification pairs them with the state at
t_k − h/2 (``effort_delay = h/2`` of :func:`~robot_dynamics.identification.estimation.identify`).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState

from ..identification.data import IdentificationData, save_npz, write_bag
from .runtime import Refusals, Refused, guarded

__all__ = ["JointStateRecorder", "identify_record_cli", "record_identification_experiment"]


DEPTH = 10_000  # states the recorder's reader queue holds while its process does not run


class JointStateRecorder(Node):
    """Keeps every ``/joint_states`` message (stamp, names, position, velocity, effort) while ``recording``."""

    def __init__(self, name: str = "joint_state_recorder", topic: str = "/joint_states", *,
                 recording: bool = True, context: Any = None, depth: int = DEPTH) -> None:
        super().__init__(name, context=context)
        self.declare_parameter("output", "")
        self.declare_parameter("topic", topic)
        self.declare_parameter("depth", int(depth))
        self.recording = recording
        self.stamps: list[float] = []
        self.names: list[str] = []
        self.rows: list[tuple[list[float], list[float], list[float]]] = []
        self.latest: JointState | None = None
        self.refusals = Refusals(self)
        topic = str(self.get_parameter("topic").value)
        # reliable and deep: the messages wait in the DDS reader's queue while this process is starved (a busy
        # host), so every state of a lockstep simulation is kept; ``depth`` states (20 s at 500 Hz by default)
        depth = int(self.get_parameter("depth").value)
        if depth < 1:
            self.destroy_node()
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.create_subscription(JointState, topic, self.on_joint_states, depth)
        out = str(self.get_parameter("output").value)
        if out:  # the standalone recorder: say when it listens (a user, or a test, waits for this line)
            self.get_logger().info(f"recording {self.resolve_topic_name(topic)} until SIGINT, then writing {out}")

    @property
    def last_stamp(self) -> float | None:
        return self.stamps[-1] if self.stamps else None

    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        self.latest = msg
        if not self.recording:
            return
        names = list(msg.name)
        n = len(names)
        if len(msg.position) != n or len(msg.effort) != n:
            raise Refused("no_positions", "JointState without positions or efforts: skipped")
        if not self.names:
            self.names = names
        if names != self.names:
            try:
                idx = [names.index(x) for x in self.names]
            except ValueError:
                raise Refused("missing_joints", f"JointState joints {names} differ from {self.names}: skipped") from None
        else:
            idx = list(range(n))
        vel = [msg.velocity[i] for i in idx] if len(msg.velocity) == n else []
        self.stamps.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        self.rows.append(([msg.position[i] for i in idx], vel, [msg.effort[i] for i in idx]))

    def data(self, t_min: float = -np.inf, t_max: float = np.inf) -> IdentificationData:
        """The recorded samples with stamps in [t_min, t_max] (duplicate stamps dropped)."""
        t = np.array(self.stamps)
        sel = np.flatnonzero((t >= t_min) & (t <= t_max))
        if sel.size < 2:
            raise ValueError(f"{sel.size} /joint_states samples recorded in [{t_min}, {t_max}]")
        sel = sel[np.concatenate([[True], np.diff(t[sel]) > 0])]
        q = np.array([self.rows[k][0] for k in sel])
        eff = np.array([self.rows[k][2] for k in sel])
        vel = [self.rows[k][1] for k in sel]
        qd = np.array(vel) if all(len(v) == q.shape[1] for v in vel) else None
        return IdentificationData(t[sel], q, eff, qd, None, list(self.names))

    def write(self, path: str | Path, data: IdentificationData | None = None) -> Path:
        """Write the recording (or ``data``): ``*.npz`` as NPZ, anything else as a rosbag2 directory (sqlite3)."""
        p = Path(path)
        d = self.data() if data is None else data
        if p.suffix == ".npz":
            save_npz(p, d)
        else:
            write_bag(p, d)
        return p

    def on_shutdown(self) -> None:
        out = str(self.get_parameter("output").value)
        if out and self.stamps:
            p = self.write(out)
            self.get_logger().info(f"{len(self.stamps)} samples written to {p}")
        elif out:
            self.get_logger().warning(f"no message on {self.resolve_topic_name(str(self.get_parameter('topic').value))}"
                                      f" was recorded: nothing written to {out}")


# ---------------------------------------------------------------- the experiment
APPROACH = 0.5  # s from where the arm is to the excitation's start (identify-record)


def _joint_trajectory_msg(names: list[str], traj: Any, sample_period: float, offset: float = 0.0) -> Any:
    """The trajectory sampled every ``sample_period`` s (positions, velocities, accelerations: quintic in the
    controller); ``offset`` > 0 delays every point (no point at t = 0: the controller starts from the arm)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from .trajectory_generator import _duration_msg

    times = np.arange(0.0, traj.duration + 0.5 * sample_period, sample_period)
    times[-1] = min(times[-1], traj.duration)
    q, qd, qdd = traj.evaluate(times)
    msg = JointTrajectory(joint_names=list(names))
    msg.points = [JointTrajectoryPoint(positions=q[k].tolist(), velocities=qd[k].tolist(),
                                       accelerations=qdd[k].tolist(), time_from_start=_duration_msg(float(t) + offset))
                  for k, t in enumerate(times)]
    return msg


def _spin_until(executor: Any, cond: Any, timeout: float, what: str, bringup: Any = None) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"identify-record: {what} not seen after {timeout} s")
        if bringup is not None and bringup.dead():
            raise RuntimeError(f"identify-record: node(s) exited: {bringup.dead()}")
        executor.spin_once(timeout_sec=0.05)


def _set_paused(executor: Any, client: Any, paused: bool, bringup: Any) -> None:
    """``mujoco_sim``'s ``~/pause`` (``std_srvs/SetBool``), answered and successful."""
    from std_srvs.srv import SetBool

    future = client.call_async(SetBool.Request(data=paused))
    _spin_until(executor, future.done, 60.0, f"the simulator's answer to ~/pause {paused}", bringup)
    if not future.result().success:
        raise RuntimeError(f"identify-record: ~/pause {paused} refused: {future.result().message}")


def record_identification_experiment(
    robot: str = "rx90",
    output: str | Path = "out/identify_record",
    *,
    duration: float = 10.0,
    periods: int = 1,
    harmonics: int = 5,
    maxiter: int = 30,
    model_error: float = 0.0,
    seed: int = 0,
    sample_period: float = 0.01,
    method: str = "wls",
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Bring-up, exciting trajectory, recording of ``/joint_states``, identification (see the module docstring).

    ``duration``: period of the Fourier trajectory (s, sim time), repeated ``periods`` times;
    ``model_error`` and ``seed`` go to ``mujoco_sim`` (plant = ``perturbed(model, model_error, seed)``).
    Writes ``DIR/bag`` (rosbag2), ``DIR/estimates.yaml``, ``DIR/excitation.json`` and node logs in
    ``DIR/logs``; returns the result (estimates, condition numbers, times, true base parameters).
    """
    import rclpy
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.time import Time
    from std_srvs.srv import SetBool

    from ..identification.data import load_bag
    from ..identification.estimation import base_parameters_of, identify
    from ..identification.excitation import FourierTrajectory, optimize_excitation
    from ..identification.io import result_to_yaml
    from ..model.robots import load_model
    from ..sim.simulator import perturbed
    from .bringup import Bringup
    from .node_set import node_set

    if not (np.isfinite(duration) and duration > 0) or int(periods) < 1:
        raise ValueError("duration must be > 0 s and periods >= 1")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    model = load_model(robot)
    ex = optimize_excitation(model, harmonics=harmonics, period=duration, samples=max(100, 10 * model.dof),
                             maxiter=maxiter, time_budget=np.inf, seed=seed)
    tr = ex.trajectory
    traj = FourierTrajectory(tr.center, tr.a, tr.b, tr.omega, periods=int(periods))
    (out / "excitation.json").write_text(json.dumps({**traj.to_dict(), "condition_number": ex.condition_number,
                                                     "initial_condition_number": ex.initial_condition_number}))
    nodes = [n for n in node_set(robot, "mujoco") if n.name in ("mujoco_sim", "computed_torque_controller")]
    control_period = 0.002
    sim_params: dict[str, Any] = {"lockstep": True, "lockstep_timeout": 0.5, "control_period": control_period,
                                  "initial_positions": [float(x) for x in traj.center]}
    if model_error > 0:
        sim_params.update(model_error=float(model_error), seed=int(seed))
    for n in nodes:
        # the sim is paused while the goal travels (below): the controller's steady-clock state timeout must
        # outlast that pause on a busy host (in lockstep the arm never moves without its answer anyway)
        n.parameters.update({"mujoco_sim": sim_params,
                             "computed_torque_controller": {"trigger": "state", "state_timeout": 60.0}}[n.name])
    bringup = Bringup(nodes, log_dir=out / "logs")
    # DDS traffic stays on this machine, in a domain of the experiment's own (like the demo); the
    # caller's environment is restored at the end
    saved = {k: os.environ.get(k) for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_DOMAIN_ID", "RMW_IMPLEMENTATION")}
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_DOMAIN_ID"] = (os.environ.get("RD_IDENTIFY_DOMAIN_ID") or os.environ.get("ROS_DOMAIN_ID")
                                   or str(random.randint(0, 101)))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    context = rclpy.Context()  # its own context, in that domain, whatever the caller's rclpy state
    recorder = client = None
    try:
        bringup.start()
        rclpy.init(context=context)
        # the reader's queue holds the whole run (its lead, approach and excitation, twice over): none is dropped
        # however long this process waits for a core
        expected = (10.0 + APPROACH + traj.duration) / control_period
        recorder = JointStateRecorder(recording=False, context=context, depth=max(DEPTH, int(2 * expected)))
        client = rclpy.create_node("identification_experiment", context=context)
        action = ActionClient(client, FollowJointTrajectory, "/computed_torque_controller/follow_joint_trajectory")
        pause = client.create_client(SetBool, "/mujoco_sim/pause")
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(recorder)
        executor.add_node(client)
        _spin_until(executor, lambda: recorder.latest is not None, 60.0, "/joint_states", bringup)
        _spin_until(executor, action.server_is_ready, 60.0, "the controller's action server", bringup)
        _spin_until(executor, pause.service_is_ready, 60.0, "the simulator's ~/pause", bringup)
        # the controller runs once the arm moves in lockstep: wait for sim time to advance
        t_first = _stamp(recorder.latest)
        _spin_until(executor, lambda: _stamp(recorder.latest) > t_first + 0.1, 60.0, "the control loop", bringup)
        recorder.recording = True
        # sim time stops while the goal travels, so it arrives ahead of its stamp however long that takes (a
        # goal arriving late would shorten the approach below and change the recording): the run is the same on a
        # busy host as on an idle one
        _set_paused(executor, pause, True, bringup)
        t_send = _stamp(recorder.latest)
        # JTC semantics: the trajectory starts at its header stamp (sim time), a little ahead, so the
        # recorded window does not depend on how long the goal takes to arrive; its points start APPROACH s later:
        # the controller first goes from where the arm is (it may sag a little while holding with a model that is
        # off) to the excitation's start, instead of refusing a first point away from the arm
        msg = _joint_trajectory_msg(model.joint_names, traj, sample_period, offset=APPROACH)
        t_go = t_send + 0.2
        msg.header.stamp = Time(nanoseconds=round(t_go * 1e9)).to_msg()
        sent = action.send_goal_async(FollowJointTrajectory.Goal(trajectory=msg))
        _spin_until(executor, sent.done, 30.0, "the controller's answer to the goal", bringup)
        if sent.result() is None or not sent.result().accepted:
            raise RuntimeError("identify-record: the controller rejected the exciting trajectory")
        result = sent.result().get_result_async()
        _set_paused(executor, pause, False, bringup)
        t_end = t_go + APPROACH + traj.duration + 0.05

        def finished() -> bool:
            if result.done() and result.result().status != GoalStatus.STATUS_SUCCEEDED:
                r = result.result().result
                raise RuntimeError(f"identify-record: the controller did not execute the exciting trajectory "
                                   f"({r.error_code}: {r.error_string})")
            return (recorder.last_stamp or 0.0) >= t_end
        t_wall = time.monotonic()
        _spin_until(executor, finished, timeout, "the end of the trajectory", bringup)
        sim_rate = traj.duration / (time.monotonic() - t_wall)
        recorder.recording = False
        bag = out / "bag"
        if bag.exists():
            import shutil

            shutil.rmtree(bag)
        recorder.write(bag, recorder.data(t_send, t_end))
    finally:
        for nd in (recorder, client):
            if nd is not None:
                nd.destroy_node()
        rclpy.try_shutdown(context=context)
        codes = bringup.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    data = load_bag(bag)
    res = identify(model, data, method=method, effort_delay=0.5 * control_period)
    (out / "estimates.yaml").write_text(result_to_yaml(res))
    truth = perturbed(model, model_error, int(seed)) if model_error > 0 else model
    true = base_parameters_of(truth)
    true_values = true.values[[list(true.names).index(nm) for nm in res.names]]
    lost = int(round((data.t[-1] - data.t[0]) / control_period)) + 1 - data.samples  # dropped by DDS
    return {
        "robot": model.name, "result": res, "true_values": true_values, "samples": data.samples, "lost": lost,
        "excitation_condition_number": ex.condition_number,
        "excitation_initial_condition_number": ex.initial_condition_number,
        "excitation_seconds": ex.seconds, "sim_time_per_wall_second": sim_rate, "bag": str(bag),
        "node_exit_codes": codes, "wall_time_s": time.monotonic() - t_start,
    }


def _stamp(msg: Any) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def identify_record_cli(args: Any) -> int:
    """``robot-dynamics identify-record --robot R --output DIR [--duration S]``: record, identify, print."""
    rep = record_identification_experiment(
        args.robot, args.output, duration=args.duration, periods=args.periods, harmonics=args.harmonics,
        maxiter=args.maxiter, model_error=args.model_error, seed=args.seed, method=args.method)
    res, true = rep["result"], rep["true_values"]
    big = np.abs(true) > 1e-6
    err = np.where(big, np.abs(res.values - true) / np.where(big, np.abs(true), 1.0), np.abs(res.values - true))
    if args.json:
        print(json.dumps({"names": res.names, "values": res.values.tolist(), "true_values": true.tolist(),
                          "relative_std": [float(x) if np.isfinite(x) else None for x in res.relative_std],
                          "condition_number": res.condition_number,
                          "excitation_condition_number": rep["excitation_condition_number"],
                          "samples": rep["samples"], "lost": rep["lost"], "bag": rep["bag"], "wall_time_s": rep["wall_time_s"]}))
    else:
        print(f"identify-record: robot {rep['robot']!r}, {rep['samples']} samples ({rep['lost']} lost) in {rep['bag']}, "
              f"excitation cond(W_b) {rep['excitation_initial_condition_number']:.4g} -> "
              f"{rep['excitation_condition_number']:.4g} ({rep['excitation_seconds']:.1f} s), "
              f"sim {rep['sim_time_per_wall_second']:.2f}x real time")
        w = max([4] + [len(n) for n in res.names])
        print(f"{'name':<{w}}  {'estimate':>12}  {'true':>12}  {'%std':>8}  {'error':>9}")
        for nm, v, t, p, e, b in zip(res.names, res.values, true, res.relative_std, err, big, strict=True):
            print(f"{nm:<{w}}  {v:>12.6g}  {t:>12.6g}  {p:>8.3g}  {(f'{100 * e:.3g} %' if b else f'{e:.2g}'):>9}")
        well = res.relative_std < 2.0
        if np.any(well & big):
            print(f"max error of the well-excited parameters (%std < 2): {100 * err[well & big].max():.3g} %")
        print(f"nodes exited with {rep['node_exit_codes']}; wall time {rep['wall_time_s']:.1f} s")
    bad = {k: v for k, v in rep["node_exit_codes"].items() if v not in (0, None)}
    return 1 if bad else 0


def main(args: list[str] | None = None) -> int:
    from .runtime import run_node

    return run_node(JointStateRecorder, args)


if __name__ == "__main__":
    raise SystemExit(main())
