"""Node ``identifier``: identification that closes the loop on the running robot (000, 001 ch. 12, issue 19).

``~/identify`` (``robot_dynamics_interfaces/srv/Identify``), one call:

1. an exciting trajectory around the arm's current position (finite Fourier series minimizing cond(W_b),
   :func:`~robot_dynamics.identification.excitation.optimize_excitation`, within ``margin`` of the limits; it starts
   and ends at rest where the arm is);
2. executed through the controller's ``<controller>/follow_joint_trajectory`` action while ``joint_states_topic``
   is recorded (positions, velocities, measured efforts; several publishers merged by joint name: a sample is
   complete once every model joint has been updated; a zero stamp is replaced by the arrival time);
3. the base parameters estimated (WLS, :func:`~robot_dynamics.identification.estimation.identify`) on the first
   ``1 - holdout`` of the run and validated on the rest: effort RMS error per joint with the model in use and with
   the identified one (the same filtering for both), relative standard deviations;
4. written to ``output_dir``: ``estimates.yaml``, ``model.yaml`` (the model carrying the identified base
   parameters), and ``model.urdf`` when a physically consistent fit is found
   (:func:`~robot_dynamics.identification.estimation.physically_consistent_estimate`);
5. with ``swap``: pushed into every node of ``swap_targets`` by its ``~/set_dynamic_parameters`` (dynamics server and
   controller: no restart; the controller adopts it at a cycle boundary, keeps commanding meanwhile and says so on
   ``~/status``).

The node never computes dynamics itself: the core does (excitation, estimation, validation efforts).

Where it writes (issue 29): only under ``output_root``, a directory read at start (absolute, or relative to the
node's working directory; it may be anywhere: the operator chose it).  ``output_dir`` (parameter, live) and a
request's ``output_dir`` name a sub-directory of that root, checked by :func:`sub_directory` (relative, no ``..``, no
NUL or control character, at most MAX_SUBDIR_CHARS) and :func:`output_path` (no symbolic link on the way leads
out of the root; no file to be written is a symbolic link).  A request's is taken instead of the parameter's; a
bad one is refused before anything else happens (no recording, no motion, nothing written), a bad run-time
``output_dir`` is refused by the set-parameters call with the reason.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from robot_dynamics_interfaces.srv import Identify, SetDynamicParameters

from ..identification.data import IdentificationData, _lowpass, preprocess, save_npz
from ..identification.estimation import base_parameters_of, identify, physically_consistent_estimate
from ..identification.excitation import optimize_excitation
from ..identification.io import is_physically_consistent, result_to_yaml, write_model_urdf
from ..identification.update import check_inertia, sign_violation, updated_model
from ..model.robot_model import RobotModel
from ..trajectory.joint_space import point_to_point
from .description import RobotDescription
from .parameter_files import load_schema
from .recorder import _joint_trajectory_msg
from .runtime import SIM_TIME_POLL, Refusals, guarded, poll_sim_time, run_node

STATES_WAIT = 10.0  # s a recording waits for its first complete joint state before the goal is sent
URDF_FIT_DECIMATION = 5  # samples of the physically consistent fit: every 5th (2 ms periods: 10 ms apart)
MAX_SUBDIR_CHARS = 255  # a sub-directory of output_root, as given
ARRIVAL_CLOCK_POLL = 0.001  # s: the sim-time clock of an unstamped state's arrival (/clock polled this often)
# joint states the recording's subscription holds while its executor is starved (a busy host): 10 s at 1 kHz; the
# backlog is taken late, not lost (a depth of 1000 lost 1.8 s of an 8 s excitation under a CPU hog: refused swap)
STATE_DEPTH = 10_000
BACKLOG_WAIT = 10.0  # s (wall) the recording waits, after the goal's result, for the states stamped up to it
SAME_CLOCK = 60.0  # s: a latest stamp this far behind the node clock is on another clock (never waited for)
OUTPUT_FILES = ("recording.npz", "estimates.yaml", "model.yaml", "validation.json", "model.urdf")


def backlog_pending(latest: float | None, t_end: float) -> bool:
    """True while states stamped up to ``t_end`` (the node clock when the goal's result came) may still be waiting
    in the subscription's queue: the latest recorded stamp is behind ``t_end``, on the same clock (less than
    ``SAME_CLOCK`` s behind; states stamped on another clock, or none yet, never hold the recording)."""
    return latest is not None and t_end - SAME_CLOCK < latest < t_end


def await_backlog(latest: Callable[[], float | None], t_end: float, wait: float = BACKLOG_WAIT,
                  clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> str | None:
    """Wait while :func:`backlog_pending` (``latest()``: the newest recorded stamp), at most ``wait`` s of ``clock``;
    None once the states stamped up to ``t_end`` are taken, else what the recording lacks (for the log)."""
    deadline = clock() + wait
    while backlog_pending(latest(), t_end):
        if clock() >= deadline:
            return (f"the recording ends {t_end - latest():.3f} s short of the goal's result: states stamped up to it "
                    f"were still queued after {wait:g} s (a starved executor)")
        sleep(0.01)
    return None


def sub_directory(text: str, what: str = "output_dir") -> PurePosixPath:
    """``text`` as a sub-directory of the output root (``PurePosixPath('.')`` for ``""``), or ``ValueError`` naming
    ``what`` and the rule it breaks: not absolute, no ``..`` component, no NUL or control character, at most
    MAX_SUBDIR_CHARS characters.  ``.`` and empty components are dropped (``a/./b`` and ``a//b`` are ``a/b``)."""
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_SUBDIR_CHARS:
        raise ValueError(f"{what} has {len(text)} characters, more than {MAX_SUBDIR_CHARS}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        kind = "a NUL byte" if "\x00" in text else "a control character"
        raise ValueError(f"{what} {text[:60]!r} contains {kind}")
    if text.startswith("/"):
        raise ValueError(f"{what} {text[:60]!r} is an absolute path: name a sub-directory of output_root")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{what} {text[:60]!r} contains '..': name a sub-directory of output_root")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def output_path(root: Path, sub: PurePosixPath, what: str = "output_dir") -> Path:
    """``root / sub`` when no symbolic link on the way leads out of ``root`` and none of OUTPUT_FILES there is a
    symbolic link (``ValueError`` otherwise); ``root`` is absolute."""
    real_root = Path(os.path.realpath(root))
    target = root / sub
    real = Path(os.path.realpath(target))  # follows every existing link on the way
    if real != real_root and real_root not in real.parents:
        raise ValueError(f"{what} {str(sub)!r} leads out of output_root {str(root)!r} (to {str(real)!r}, through a "
                         "symbolic link)")
    for name in OUTPUT_FILES:
        if (target / name).is_symlink():
            raise ValueError(f"{what} {str(sub)!r}: {name} there is a symbolic link; nothing is written through one")
    return target

PARAMETERS = load_schema("identifier")  # identifier.yaml in robot_dynamics/ros/schemas (types, defaults, ranges, units)


class _Recording:
    """Joint states merged by name into complete samples (model order)."""

    def __init__(self, names: list[str]) -> None:
        self.col = {nm: i for i, nm in enumerate(names)}
        n = len(names)
        self.q, self.qd, self.eff = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        self.seen = np.zeros(n, dtype=bool)
        self.rows: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, msg: JointState, arrival: float) -> None:
        names = msg.name
        pos, vel, eff = msg.position, msg.velocity, msg.effort
        got = False
        for k, nm in enumerate(names):
            j = self.col.get(nm)
            if j is None or k >= len(pos) or k >= len(eff):
                continue
            self.q[j], self.eff[j] = pos[k], eff[k]
            self.qd[j] = vel[k] if k < len(vel) else np.nan
            self.seen[j] = got = True
        if got and self.seen.all():
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            self.rows.append((stamp if stamp > 0 else arrival, self.q.copy(), self.qd.copy(), self.eff.copy()))
            self.seen[:] = False

    def latest(self) -> float | None:
        """The stamp of the last complete sample (None before the first)."""
        rows = self.rows
        return rows[-1][0] if rows else None

    def data(self, names: list[str]) -> IdentificationData:
        if len(self.rows) < 10:
            raise ValueError(f"only {len(self.rows)} complete joint states recorded")
        t = np.array([r[0] for r in self.rows])
        keep = np.concatenate([[True], np.diff(t) > 0])  # repeated or out-of-order stamps dropped
        q, qd, eff = (np.array([r[i] for r in self.rows])[keep] for i in (1, 2, 3))
        ok = np.isfinite(q).all(axis=1) & np.isfinite(eff).all(axis=1)
        qd_ok = np.isfinite(qd[ok]).all()
        return IdentificationData(t[keep][ok], q[ok], eff[ok], qd[ok] if qd_ok else None, None, list(names))


class Identifier(Node):
    multithreaded = True
    executor_threads = 4

    def __init__(self) -> None:
        super().__init__("identifier")
        self.params = PARAMETERS.copy()
        v = self.params.declare(self)
        root = v["output_root"]
        if not root or "\x00" in root:
            raise ValueError("output_root must name a directory")
        self.output_root = Path(os.path.abspath(os.path.expanduser(root)))  # fixed for the node's life
        output_path(self.output_root, sub_directory(v["output_dir"]))  # the start value follows the rule too
        self.params.attach(self, self._on_parameters)
        self.refusals = Refusals(self)
        self.model: RobotModel | None = None
        self.latest: dict[str, float] = {}
        self.recording: _Recording | None = None
        self._busy = threading.Lock()
        self.follow = ActionClient(self, FollowJointTrajectory, f"{v['controller']}/follow_joint_trajectory",
                                   callback_group=MutuallyExclusiveCallbackGroup())
        # joint_states are taken only while an identification needs them (a position, then the run): idle, the
        # node costs the host nothing (a 500 Hz subscription in Python took ~30 % of a core from the control loop)
        self._state_sub: Any = None
        self._state_group = MutuallyExclusiveCallbackGroup()
        self.create_service(Identify, "~/identify", self.on_identify, callback_group=ReentrantCallbackGroup())
        self.clients_group = MutuallyExclusiveCallbackGroup()
        self.description = RobotDescription(self, self._on_model, MutuallyExclusiveCallbackGroup())
        # use_sim_time: /clock polled, not a callback per message; every ms while it listens to the states (it
        # stamps unstamped ones on arrival), every SIM_TIME_POLL otherwise (a thread waking every ms costs an idle
        # node 0.07 of a core)
        self.sim_time_thread = poll_sim_time(self, SIM_TIME_POLL)

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model = model

    def _on_parameters(self, changes: dict[str, Any]) -> None:
        """Run-time changes: ``output_dir`` must name a sub-directory of ``output_root`` (ValueError: the reason)."""
        if "output_dir" in changes:
            output_path(self.output_root, sub_directory(changes["output_dir"]))

    def _output(self, requested: str) -> Path:
        """Where this identification writes: the request's sub-directory of ``output_root``, else the parameter's."""
        what = "request output_dir" if requested else "output_dir"
        sub = sub_directory(requested or self.params.values["output_dir"], what)
        return output_path(self.output_root, sub, what)

    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        for nm, p in zip(msg.name, msg.position, strict=False):
            if math.isfinite(p):
                self.latest[nm] = p
        rec = self.recording
        if rec is not None:
            rec.add(msg, self.get_clock().now().nanoseconds * 1e-9)

    # ------------------------------------------------------------------ the flow
    def on_identify(self, request: Identify.Request, response: Identify.Response) -> Identify.Response:
        if not self._busy.acquire(blocking=False):
            response.success, response.message = False, "busy: an identification is running"
            return response
        try:
            errors: list[Exception] = []
            worker = threading.Thread(target=self._niced, args=(request, response, errors), name="identify")
            worker.start()
            worker.join()
            if errors:
                raise errors[0]
            response.success = True
        except Exception as exc:  # noqa: BLE001 - every request is answered, the node keeps serving
            response.success = False
            response.message = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"identify: {response.message}")
        finally:
            self.recording = None
            self._busy.release()
        return response

    def _niced(self, request: Identify.Request, response: Identify.Response, errors: list[Exception]) -> None:
        """The identification in a thread of lower priority (nice +10: Linux sets it per thread): its seconds of
        optimization and estimation never take the CPU from the robot's control loop on the same machine."""
        with contextlib.suppress(OSError, AttributeError):
            os.nice(10)
        try:
            self._identify(request, response)
        except Exception as exc:  # noqa: BLE001 - handed to the service callback
            errors.append(exc)

    @contextlib.contextmanager
    def _listening(self) -> Any:
        """``joint_states_topic`` subscribed for the duration of the block (and sim time read every
        ``ARRIVAL_CLOCK_POLL``)."""
        poll = getattr(self, "_sim_time_poll", None)
        if poll is not None:
            poll.period = ARRIVAL_CLOCK_POLL
            poll.drain()  # the clock of now, not of the last slow poll
        self._state_sub = self.create_subscription(JointState, self.params.values["joint_states_topic"],
                                                   self.on_joint_states, STATE_DEPTH, callback_group=self._state_group)
        try:
            yield
        finally:
            sub, self._state_sub = self._state_sub, None
            self.destroy_subscription(sub)
            if poll is not None:
                poll.period = SIM_TIME_POLL

    def _position(self, names: list[str], timeout: float = 5.0) -> np.ndarray:
        """Where the arm is now: a fresh position of every joint from ``joint_states_topic`` (``timeout`` s)."""
        self.latest = {}
        with self._listening():
            end = time.monotonic() + timeout
            while any(j not in self.latest for j in names) and time.monotonic() < end:
                time.sleep(0.01)
        missing = [j for j in names if j not in self.latest]
        if missing:
            raise ValueError(f"no position on {self.params.values['joint_states_topic']} for {missing} within "
                             f"{timeout:g} s")
        return np.array([self.latest[j] for j in names])

    def _say(self, text: str) -> None:
        self.get_logger().info(f"identify: {text}")

    def _identify(self, request: Identify.Request, response: Identify.Response) -> None:
        v = self.params.values
        out = self._output(request.output_dir)  # first: a bad directory is refused before anything happens
        duration = request.duration or v["duration"]
        holdout = request.holdout or v["holdout"]
        if not (math.isfinite(duration) and 1.0 <= duration <= 600.0):
            raise ValueError("duration must be in [1, 600] s")
        if not (math.isfinite(holdout) and 0.05 <= holdout <= 0.5):
            raise ValueError("holdout must be in [0.05, 0.5]")
        model = self.model
        if model is None:
            raise ValueError("no robot model yet (robot_description not received)")
        names = list(model.joint_names)
        q0 = self._position(names)
        # 1. excitation: over the workspace (mid-range of the limits) or around where the arm is
        t0 = time.monotonic()
        here = v["center"] == "current"
        self._say(f"optimizing a {duration:g} s excitation ({v['harmonics']} harmonics) around "
                  + ("the current position" if here else "the middle of the joint ranges"))
        ex = optimize_excitation(model, harmonics=int(v["harmonics"]), period=duration,
                                 samples=max(100, 10 * model.dof), margin=float(v["margin"]),
                                 center=q0 if here else None, maxiter=int(v["maxiter"]), time_budget=60.0)
        traj = ex.trajectory
        self._say(f"cond(W_b) {ex.initial_condition_number:.4g} -> {ex.condition_number:.4g} "
                  f"({time.monotonic() - t0:.1f} s)")
        # 2. to its start (from where the arm is now: it may have moved meanwhile), then run it, recording
        q0 = self._position(names)
        start = traj.evaluate(np.zeros(1))[0][0]
        if np.abs(start - q0).max() > 1e-3:
            lim = model.limits
            approach = point_to_point(q0, start, 0.5 * lim["velocity"], 0.5 * lim["acceleration"], profile="quintic")
            self._say(f"moving to the excitation's start ({approach.duration:.1f} s)")
            self._run_and_record(model, approach, record=False)
        data = self._run_and_record(model, traj)
        self._say(f"{data.samples} samples recorded over {data.t[-1] - data.t[0]:.2f} s")
        out.mkdir(parents=True, exist_ok=True)
        out = output_path(self.output_root, out.relative_to(self.output_root))  # again: the run took seconds
        save_npz(out / "recording.npz", data)  # the raw run: `robot-dynamics identify out/recording.npz` offline
        # 3. estimate on the first part, validate on the rest
        split = data.t[0] + (1.0 - holdout) * (data.t[-1] - data.t[0])
        train, test = _slice(data, data.t <= split), _slice(data, data.t > split)
        delay = float(v["effort_delay"])
        self._say(f"estimating the base parameters on {train.samples} samples (WLS)")
        res = identify(model, train, effort_delay=delay, friction=v["friction"])
        new = updated_model(model, res.names, res.values, check=False)  # (checked before a swap, below)
        nominal = base_parameters_of(model)
        before, after = (_holdout_rms(m, test, delay) for m in (model, new))
        self._say(f"held-out effort RMS per joint: {np.round(before, 4).tolist()} -> {np.round(after, 4).tolist()}")
        # 4. files
        out.mkdir(parents=True, exist_ok=True)
        files = [out / "recording.npz", out / "estimates.yaml", out / "model.yaml"]
        files[1].write_text(result_to_yaml(res))
        files[2].write_text(new.to_yaml())
        (out / "validation.json").write_text(json.dumps({
            "joint_names": names, "holdout_rms_before": before.tolist(), "holdout_rms_after": after.tolist(),
            "samples": data.samples, "condition_number": res.condition_number}, indent=1))
        files.append(out / "validation.json")
        # 5. swap (before the URDF fit: the running nodes get the estimate as soon as it is validated), only a
        # model that explains the held-out efforts better than the one in use and describes a physical arm
        swapped = False
        refused = ""
        if request.swap:
            refused = _swap_refusal(new, before, after)
            if refused:
                self.get_logger().error(f"identify: not swapped: {refused}")
            else:
                self._swap(res.names, res.values, f"identifier ({out})")
                swapped = True
        # 6. a physically consistent model for the URDF (nonlinear least squares on decimated data)
        consistent = False
        try:
            self._say("fitting a physically consistent model for model.urdf (nonlinear least squares)")
            p = preprocess(train.reorder(names), cutoff=20.0, trim=0.1, decimate=URDF_FIT_DECIMATION)
            # (the regressor holds the 13 standard parameters: the extended friction terms are taken off first)
            rigid = _delayed(train, delay, p.t) - new.extra_friction(p.qd)
            real = physically_consistent_estimate(new, p.q, p.qd, p.qdd, rigid)
            consistent = is_physically_consistent(real, tol=1e-9)
            if consistent:
                write_model_urdf(real, out / "model.urdf")
                files.append(out / "model.urdf")
        except Exception as exc:  # noqa: BLE001 - the URDF is a bonus: the estimate stands without it
            self._say(f"no physically consistent URDF: {type(exc).__name__}: {exc}")
        response.names = list(res.names)
        response.values = [float(x) for x in res.values]
        response.relative_std = [float(x) if np.isfinite(x) else -1.0 for x in res.relative_std]
        idx = {nm: i for i, nm in enumerate(nominal.names)}
        extra = {f"{k}{j + 1}": float(getattr(model, k)[j]) for k in ("Foff", "Fs", "vs") for j in range(model.dof)}
        response.nominal = [float(nominal.values[idx[nm]]) if nm in idx else extra.get(nm, math.nan)
                            for nm in res.names]
        response.holdout_rms_before = before.tolist()
        response.holdout_rms_after = after.tolist()
        response.joint_names = names
        response.physically_consistent = consistent
        response.samples = int(data.samples)
        response.swapped = swapped
        response.files = [str(f) for f in files]
        response.message = (f"{len(res.names)} base parameters from {data.samples} samples; held-out effort RMS "
                            f"{np.sqrt(np.mean(before**2)):.4g} -> {np.sqrt(np.mean(after**2)):.4g}"
                            + ("; swapped into " + ", ".join(v["swap_targets"]) if swapped else "")
                            + (f"; NOT swapped: {refused}" if refused else "")
                            + f"; {time.monotonic() - t0:.1f} s")
        self._say(response.message)
        if refused:
            raise SwapRefused(response.message)

    def _run_and_record(self, model: RobotModel, traj: Any, record: bool = True) -> IdentificationData | None:
        """The trajectory as a FollowJointTrajectory goal; joint states recorded from acceptance to the result."""
        client = self.follow
        if not client.wait_for_server(timeout_sec=5.0):
            raise RuntimeError(f"no action server {client._action_name} (the controller)")
        goal = FollowJointTrajectory.Goal(trajectory=_joint_trajectory_msg(model.joint_names, traj, 0.01))
        with self._listening():
            return self._run(model, traj, goal, record)

    def _run(self, model: RobotModel, traj: Any, goal: Any, record: bool) -> IdentificationData | None:
        client = self.follow
        self.recording = _Recording(list(model.joint_names))
        # the subscription is new: wait until it delivers (its discovery takes seconds on a loaded host; the goal
        # sent before would lose the start of the motion, the part a held-out validation may need)
        end = time.monotonic() + STATES_WAIT
        while not self.recording.rows and time.monotonic() < end:
            time.sleep(0.01)
        if not self.recording.rows:
            raise RuntimeError(f"no joint state of every joint on {self.params.values['joint_states_topic']} within "
                               f"{STATES_WAIT:g} s: nothing would be recorded")
        sent = client.send_goal_async(goal)
        if not _wait(sent, 10.0) or sent.result() is None or not sent.result().accepted:
            raise RuntimeError("the controller did not accept the exciting trajectory")
        self._say(f"excitation running ({traj.duration:.1f} s)")
        result = sent.result().get_result_async()
        end = time.monotonic() + traj.duration + 30.0
        next_say = time.monotonic() + 5.0
        while not result.done():
            if time.monotonic() > end:
                sent.result().cancel_goal_async()
                raise RuntimeError("no result from the controller within the trajectory's duration + 30 s")
            if time.monotonic() > next_say:
                self._say(f"recording: {len(self.recording.rows)} samples")
                next_say += 5.0
            time.sleep(0.05)
        # the states up to the result, still queued when the executor was starved: taken before the recording ends
        short = await_backlog(self.recording.latest, self.get_clock().now().nanoseconds * 1e-9)
        if short:
            self.get_logger().warning(f"identify: {short}")
        rec, self.recording = self.recording, None
        res = result.result()
        if res.status != GoalStatus.STATUS_SUCCEEDED:
            raise RuntimeError(f"the controller did not execute the trajectory: {res.result.error_code} "
                               f"{res.result.error_string}")
        return rec.data(list(model.joint_names)) if record else None

    def _swap(self, names: list[str], values: np.ndarray, source: str) -> None:
        for target in self.params.values["swap_targets"]:
            cli = self.create_client(SetDynamicParameters, f"{target}/set_dynamic_parameters",
                                     callback_group=self.clients_group)
            try:
                if not cli.wait_for_service(timeout_sec=5.0):
                    raise RuntimeError(f"no service {cli.srv_name}: the identified model was not swapped there")
                fut = cli.call_async(SetDynamicParameters.Request(names=list(names), values=[float(x) for x in values],
                                                                  source=source))
                if not _wait(fut, 120.0):
                    raise RuntimeError(f"{cli.srv_name} did not answer within 120 s")
                ans = fut.result()
                if not ans.success:
                    raise RuntimeError(f"{cli.srv_name} refused the model: {ans.message}")
                self._say(f"{target}: {ans.message}")
            finally:
                self.destroy_client(cli)


class SwapRefused(RuntimeError):
    """The identification ran and its files are written, but the result was not swapped in (the message says why):
    the response is complete, with ``success`` false."""


def _swap_refusal(new: RobotModel, before: np.ndarray, after: np.ndarray) -> str:
    """Why the identified model ``new`` must not replace the running one ("" when it may): it explains the
    held-out efforts no better (RMS over the joints), a friction coefficient is negative, or its inertia matrix is
    not positive definite (the targets' ``updated_model`` would refuse it anyway, after the files are written)."""
    rms_b, rms_a = float(np.sqrt(np.mean(before**2))), float(np.sqrt(np.mean(after**2)))
    if not rms_a < rms_b:
        return (f"the identified model does not explain the held-out efforts better (RMS {rms_b:.4g} -> {rms_a:.4g}"
                " N m): a disturbed recording (e.g. the drive braked) or too little excitation; the model in use "
                "is kept")
    for k in ("Fc", "Fv"):  # friction terms are base parameters of their own: the identified values
        for j, value in enumerate(getattr(new, k), start=1):
            why = sign_violation(f"{k}{j}", float(value), new.dof)
            if why:
                return f"{why}; the model in use is kept"
    try:
        check_inertia(new)
    except ValueError as exc:
        return f"{exc}; the model in use is kept"
    return ""


def _wait(future: Any, timeout: float) -> bool:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return done.wait(timeout) or future.done()


def _slice(data: IdentificationData, sel: np.ndarray) -> IdentificationData:
    return IdentificationData(data.t[sel], data.q[sel], data.effort[sel], None if data.qd is None else data.qd[sel],
                              None, list(data.joint_names))


def _delayed(data: IdentificationData, delay: float, t: np.ndarray) -> np.ndarray:
    """The measured efforts at t + delay (linear interpolation)."""
    return np.column_stack([np.interp(t + delay, data.t, data.effort[:, k]) for k in range(data.effort.shape[1])])


def _holdout_rms(model: RobotModel, data: IdentificationData, delay: float, cutoff: float = 20.0) -> np.ndarray:
    """Effort RMS error per joint of ``model`` on ``data``: q filtered and differentiated (zero phase, the
    identification's own preprocessing), the measured efforts at t + delay through the same low-pass filter."""
    p = preprocess(data, cutoff=cutoff, trim=0.1)
    measured = _lowpass(_delayed(data, delay, p.t), cutoff, 1.0 / float(np.median(np.diff(p.t))))
    predicted = np.asarray(model.inverse_dynamics(p.q, p.qd, p.qdd), dtype=float)
    return np.sqrt(np.mean((measured - predicted) ** 2, axis=0))


def main(args: list[str] | None = None) -> int:
    return run_node(Identifier, args)


if __name__ == "__main__":
    raise SystemExit(main())
