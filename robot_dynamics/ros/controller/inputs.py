"""The controller node's inputs: joint states (validated, judged by the safety envelope's monitor), trajectories
on ``~/joint_trajectory`` (size bound on the bytes, then deserialized and the whole interpolated path checked in a
worker), pose references (validated, their inverse kinematics in a worker), the motors' states of the elastic law,
JTC's speed scaling factor.
What passes is handed to the control core (:mod:`.core`).  A mixin of
:class:`~robot_dynamics.ros.computed_torque_controller.ComputedTorqueControllerNode`."""

from __future__ import annotations

import gc
import time

import numpy as np
from control_msgs.msg import SpeedScalingFactor
from geometry_msgs.msg import PoseStamped
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from ...trajectory.sampled import SampledTrajectory
from .. import validation
from ..conversions import short
from ..request_gate import trim_for
from ..runtime import Refused, guarded
from .context import (
    Context,
)
from .parameters import TASK_SPACE_LAWS
from .pose import POSE_IK_TOLERANCE, PoseHold, pose_guard, pose_text

# serialized size bound of one trajectory point, checked before deserializing (generous: 40 joints x 4 fields)
MAX_BYTES_PER_POINT = 2048
MODEL_BUILD_WAIT = 120.0  # s a trajectory waits for the model being built (code generation on a cold cache)
MAX_POSE_BYTES = 4096  # serialized PoseStamped (a longer frame_id is refused before deserializing)


class Inputs:
    """The node's inputs, validated and handed to the control core (mixin of the controller node: its attributes)."""

    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        ctx = self.core.ctx
        if ctx is None:
            with self._lock:
                self.core.take_pending(None)
            ctx = self.core.ctx
            if ctx is None:
                return
        q, qd, stamp = validation.joint_state(msg, ctx.index)
        now_clock = self.now()
        if self.trigger == "state":
            # lockstep: the stamp is the control time (0 is a valid sim time)
            if self.core.state_stamp is not None and stamp == self.core.state_stamp and self._last_answer is not None:
                self.cmd_pub.publish(self._last_answer[1])  # the same answer again, never a second law cycle
                return
            with self._lock:
                self.core.lockstep_state(q, qd, stamp, time.monotonic())
                self.step()
            return
        self._state_arrived(q, qd, stamp, now_clock)

    def _state_arrived(self, q: np.ndarray, qd: np.ndarray, stamp: float, now_clock: float | None = None) -> None:
        """A valid timer-triggered state judged by the safety envelope's :class:`StateMonitor` (stamps against the
        clock, order, impossible values, jumps, two sources disagreeing), then accepted (or ``Refused``)."""
        self.core.state_arrived(q, qd, stamp, self.control_time() if now_clock is None else now_clock,
                                time.monotonic())

    @guarded()
    def on_trajectory(self, raw: bytes) -> None:
        """Executor thread: a size check on the serialized bytes, then hand over to the worker."""
        if len(raw) > self.max_points * MAX_BYTES_PER_POINT:
            trim_for()  # the message's buffers, freed once refused, back to the system
            raise Refused("too_large", f"trajectory message of {len(raw)} bytes (max_trajectory_points "
                                       f"{self.max_points})")
        self.trajectory_worker.put(raw)

    @guarded()
    def check_trajectory(self, raw: bytes) -> None:
        """Worker: deserialize, validate the whole interpolated path; the control cycle adopts the result."""
        ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None and self.model_worker.busy():  # the model is being built: wait for it (worker thread)
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.core.ctx or self.core.pending_ctx
        if ctx is None:
            raise Refused("no_model", "trajectory before the robot model")
        gc.disable()  # one burst of allocations: no collector pauses for the control thread meanwhile
        try:
            msg = deserialize_message(raw, JointTrajectory)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"trajectory message cannot be deserialized: {exc}") from None
        finally:
            gc.enable()
        traj, stamp = self._checked_trajectory(msg, ctx)
        self.core.queue_trajectory((traj, stamp, len(msg.points), None))

    @guarded()
    def on_speed_scaling(self, msg: SpeedScalingFactor) -> None:
        """Executor thread: JTC's ``~/speed_scaling_input``: the factor the trajectory's time advances at from the
        next cycle (:class:`~.scaling.TrajectoryClock`; negative or non-finite: refused, the factor kept)."""
        factor = float(msg.factor)
        with self.core.lock:
            old = self.core.clock.requested
            err = self.core.clock.request(factor)
            new = self.core.clock.requested
        if err is not None:
            raise Refused("speed_scaling", err)
        if new != old:
            self.get_logger().info(f"speed scaling factor {new:g}" + (f" (asked {factor:g}: at most 1)"
                                                                     if factor > 1.0 else ""))

    @guarded()
    def on_pose_reference(self, raw: bytes) -> None:
        """Executor thread: a pose reference validated (message, frame, stamp, law), then handed to the worker that
        solves its inverse kinematics (:meth:`check_pose`)."""
        if len(raw) > MAX_POSE_BYTES:
            raise Refused("too_large", f"pose reference message of {len(raw)} bytes")
        ctx = self.core.pending_ctx or self.core.ctx
        if ctx is None:
            raise Refused("pose_no_model", "pose reference before the robot model")
        try:
            msg = deserialize_message(raw, PoseStamped)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"pose reference cannot be deserialized: {exc}") from None
        pose, stamp = validation.pose_stamped(msg, ctx.model.base_link)
        if ctx.task_link is None:
            raise Refused("pose_joint_space_law", f"pose reference under the joint-space law {ctx.law}: set law to one "
                                                  f"of {', '.join(TASK_SPACE_LAWS)} first")
        if stamp != 0.0:
            age = self.control_time() - stamp
            if age > self.core.timeout:
                raise Refused("pose_stale_stamp", f"pose reference stamped {age:.3f} s in the past (state_timeout "
                                                  f"{self.core.timeout} s)")
            if age < -self.core.timeout:
                raise Refused("pose_future_stamp", f"pose reference stamped {-age:.3f} s in the future (state_timeout "
                                                   f"{self.core.timeout} s)")
        self.pose_worker.put((pose, self.core.trajectories_accepted))

    @guarded()
    def check_pose(self, item: tuple[np.ndarray, int]) -> None:
        """Worker: the pose's inverse kinematics from the current position (002 eqs 6.16-6.17, no random restart);
        queued for the next cycle when it converges with every joint ``pose_limit_margin`` inside its limits."""
        pose, trajectories = item
        ctx = self.core.pending_ctx or self.core.ctx
        if ctx is None or ctx.task_link is None:
            raise Refused("pose_joint_space_law", "pose reference: the law is no longer a task-space law")
        q = self.core.q
        if q is None:
            raise Refused("pose_no_state", f"pose reference before a valid joint state (mode {self.core.mode})")
        q = q.copy()
        names, margin, link = ctx.model.joint_names, self.core.pose_margin, ctx.task_link
        text = pose_text(pose, link, ctx.model.base_link)
        zero, unlimited = np.zeros(ctx.model.dof), np.full(ctx.model.dof, np.inf)
        why = pose_guard(q, zero, ctx.lower, ctx.upper, unlimited, margin, names)
        if why is not None:
            raise Refused("pose_near_limits", f"pose reference ({text}) refused: the arm is too near a limit to hold "
                                              f"a pose ({why}); move it away with a joint trajectory first")
        t0 = time.monotonic()
        try:
            # the facade's numeric IGM (damped least squares, iterates clamped to the limits), no random restart
            q_ref = ctx.model.inverse_kinematics(pose, q, link, restarts=0, tolerance=POSE_IK_TOLERANCE)
        except ValueError as exc:
            raise Refused("pose_unreachable", f"pose reference ({text}) not reachable from the current position "
                                              f"within the joint limits: {exc}") from None
        why = pose_guard(q_ref, zero, ctx.lower, ctx.upper, unlimited, margin, names)
        if why is not None:
            raise Refused("pose_unreachable", f"pose reference ({text}) needs {why}")
        if not self.core.queue_pose(PoseHold(pose=pose, q_ref=q_ref, link=link, text=text), trajectories):
            self.get_logger().info(f"pose reference ({text}) superseded by a trajectory that came meanwhile")
            return
        self.get_logger().info(f"pose reference accepted: {text}; inverse kinematics in "
                               f"{(time.monotonic() - t0) * 1e3:.1f} ms, q = {np.round(q_ref, 4).tolist()}")

    def _checked_trajectory(self, msg: JointTrajectory, ctx: Context) -> tuple[SampledTrajectory, float | None]:
        """The trajectory of ``msg`` with its start time (None: now) once its whole interpolated path is within
        the limits (``Refused`` with the cause otherwise); worker or action thread."""
        data = validation.trajectory(msg, ctx.model.joint_names, self.max_points)
        validation.end_velocity(data["velocities"], ctx.model.joint_names,
                                self.params.values["allow_nonzero_velocity_at_trajectory_end"])
        q = self.core.q
        start = None if q is None else q.copy()
        if start is not None and data["times"][0] == 0.0:
            dev = np.abs(data["positions"][0] - start)
            if np.any(dev > self.start_tolerance):
                j = int(np.argmax(dev))
                raise Refused("start_deviation", f"first point at t = 0 is {dev[j]:.3g} from the arm on "
                                                 f"{ctx.model.joint_names[j]} (start_tolerance {self.start_tolerance})")
        try:
            traj = SampledTrajectory(data["times"], data["positions"], data["velocities"], data["accelerations"],
                                     start=start)
        except ValueError as exc:
            raise Refused("path_limits", str(exc)) from None
        # the interpolated path within the limits (an arm outside them: only back toward the range), its end inside
        ctx.envelope.check_path(traj, start=start, names=ctx.model.joint_names)
        if data["effort"] is not None:
            ctx.envelope.check_efforts(data["effort"], ctx.effort)
        stamp = data["stamp"]
        return traj, (stamp if stamp > 0 else None)

    def _subscribe_motor_states(self) -> None:
        """Executor thread: subscribe ``motor_states_topic`` once (law elastic)."""
        if self._motor_sub is None:
            self.core.motor_state = None  # one from an earlier subscription is stale: "no motor state yet" until one comes
            self._motor_sub = self.create_subscription(JointState, self._motor_topic, self.on_motor_states,
                                                       qos_profile_sensor_data)
            self.get_logger().info(f"law elastic: motor states from {self.resolve_topic_name(self._motor_topic)}")

    def on_motor_states(self, msg: JointState) -> None:
        """The motors' positions and velocities (motor side) -> θ, θ̇ joint side (``transmissions.*``); a message
        that does not name every joint's motor with finite values is refused."""
        try:
            ctx = self.core.ctx or self.core.pending_ctx
            if ctx is None:
                return
            model = ctx.model
            index = {nm: k for k, nm in enumerate(msg.name)}
            try:
                cols = [index[f"{j}_motor"] if f"{j}_motor" in index else index[j] for j in model.joint_names]
            except KeyError:
                raise Refused("motor_state_names", f"motor states naming {short(list(msg.name))} lack a motor of "
                                                   f"{model.joint_names}") from None
            if len(msg.position) != len(msg.name) or len(msg.velocity) != len(msg.name):
                raise Refused("motor_state_ragged", "motor states without one position and velocity per name")
            qm = np.asarray(msg.position, float)[cols]
            qmd = np.asarray(msg.velocity, float)[cols]
            if not (np.all(np.isfinite(qm)) and np.all(np.isfinite(qmd))):
                raise Refused("motor_state_nonfinite", "motor state with a non-finite value")
            tr = model.transmission
            if tr is not None:  # q = J_qm q_m (001 eq. 7.31)
                qm, qmd = tr.joint_positions(qm), tr.joint_velocities(qmd)
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            self.core.motor_state = (stamp, qm, qmd)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
        except Exception as exc:  # noqa: BLE001 - never raise into the executor
            self.refusals.refuse("motor_state_error", f"motor states: {type(exc).__name__}: {exc}")
