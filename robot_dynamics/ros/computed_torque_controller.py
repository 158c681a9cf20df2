"""Node ``computed_torque_controller``: a joint-space dynamic controller next to ros2_control.

Python cannot be a ros2_control plugin, so this node talks to the topics of a
``forward_command_controller/ForwardCommandController`` (``interface_name: effort``):

* subscribes ``/joint_states`` (sensor-data QoS, joints mapped by name, only the latest sample kept); with the
  default ``loop: thread`` and ``state_input: loop`` the loop thread takes the latest state (and ``/clock`` under
  ``use_sim_time``) itself as serialized bytes at the start of each cycle and reads them with :mod:`.cdr` — no
  executor dispatch, no message conversion (process CPU per 1 kHz cycle 470 -> ~240 µs, ``bench/bench_loop.py``);
* subscribes ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``, JTC semantics: a new
  trajectory replaces the current one; interpolation degree follows the filled fields);
* subscribes ``~/pose_reference`` (``geometry_msgs/PoseStamped``) under a task-space law: the pose of ``task_link``
  to hold (see *Pose reference* below);
* law ``elastic`` (elastic joints, 001 §7.3.8): subscribes ``motor_states_topic`` (``sensor_msgs/JointState`` of
  the motors, only while that law is in use) and holds gravity while no fresh valid motor state is there;
* publishes ``/<effort_controller>/commands`` (``std_msgs/Float64MultiArray``, configured joint order:
  joint efforts Γ, or with ``command_space: motor`` the motor torques τ_m = J_qmᵀ Γ of the robot's
  ``transmissions.*`` parameters, 001 eq. 7.33, the effort limits applied to Γ) and ``~/controller_state`` (``robot_dynamics_interfaces/ControllerState``);
* serves ``~/statistics`` (``std_srvs/Trigger``): loop rate, period error p50/p99/max, missed cycles,
  per-phase CPU of the cycle (sampling, law, publish), process CPU per cycle, mode and refusals, and
  ``imported_while_running`` (modules imported beside the running loop: each import holds the GIL) as JSON
  (the figures ``bench/bench_loop.py`` prints);
* publishes ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``, every ``diagnostic_period`` s of steady clock,
  :mod:`.diagnostics`): the loop figures of the last period (rate, period error, missed cycles), the mode and its
  reason, saturated joints, refusals — OK, WARN (missed >= 1 %, saturation, no model/state) or ERROR (stale).

The control cycle (:meth:`ComputedTorqueControllerNode.step`) costs little more than the law: the
reference comes from :meth:`SampledTrajectory.at` (cursor, O(1) amortized), the command and state
messages are preallocated and filled in place, inputs validated on arrival are not checked again,
and ``~/controller_state`` goes out at ``state_publish_rate`` (control time, default 100 Hz; 0 = every
cycle; ``state_publish_divider`` >= 1 keeps the old every-n-th-cycle behaviour and, with
``trigger: state``, every lockstep cycle is published unless a divider is set).  ``loop`` chooses
how the timer-triggered cycle is driven: ``thread`` (default: a dedicated thread on the steady clock,
absolute deadlines; the executor only runs the inputs, services and watchdog), ``timer`` (a timer of
the single-threaded executor, on the node clock) or ``events`` (the same timer on rclpy's
EventsExecutor).  ``realtime_priority`` (1-99; 0 = off) asks SCHED_FIFO for the loop's thread and
``cpu_affinity`` pins it; whether it was granted is logged.

Laws (parameter ``law``): ``computed_torque`` (001 eq. 9.22/9.24), ``position`` (9.29),
``predictive`` (9.31), ``pd_gravity`` (9.12), ``pid`` (9.5/9.10), and in the task space of ``task_link``
``task_space_computed_torque`` (9.33–9.35, ``task_space`` is the same law; null-space term ``null_space`` on a
redundant arm) and ``task_space_pid`` (9.17).  A joint trajectory under a task-space law is followed through the law's
joint-reference path (X^d = DGM(q^d), ...); a pose reference holds X^d with zero twist and acceleration.

Pose reference (``~/pose_reference``, task-space laws only): validated on arrival (finite; quaternion of non-zero
norm, normalized; ``frame_id`` empty or the model's base link; a non-zero stamp within ``state_timeout`` of the
clock), then in a worker thread the inverse kinematics from the current position (damped least squares, no random
restart) must reach it with every joint at least ``pose_limit_margin`` inside its limits, else refused
(``pose_unreachable``).  Adopted at a cycle boundary, it replaces the running trajectory (a goal is preempted) and
is held (mode ``holding``, reason ``pose reference ...``; the published joint reference is the IK solution) until a
trajectory or a new pose arrives.  While holding it, a joint closer than ``pose_limit_margin`` to a position limit
or faster than its velocity limit makes the controller hold the current joint position instead (logged), with
joint-space computed torque at the same ``omega``/``xi`` (``Context.hold_controller``: the task-space law may be the
cause) until the next trajectory, pose or law.

Safety, by construction:

* **One validation at the boundary** (:mod:`.validation`): a joint state or trajectory that is
  malformed, non-finite, lacks a joint, is too large, or is stamped too far from the clock is
  refused with its cause (logged once per cause and period, counted in ``inputs_refused``); no
  input can raise into the executor.
* **Whole-path check**: a trajectory is accepted only if its *interpolated* path (not only its
  points) stays within the position and velocity limits, and its ``effort`` fields within the
  effort limits (:func:`~robot_dynamics.trajectory.sampled.check_path_limits`).  The check runs
  in a worker thread (the subscription takes raw bytes, so even deserializing a huge message stays
  off the executor); the control cycle picks the result up at a cycle boundary.  ``max_trajectory_points`` bounds the work.
* **State machine** (``ControllerState.mode``): ``no_model`` -> ``no_state`` -> ``holding`` /
  ``tracking``; ``stale`` when the last state is older than ``state_timeout`` (steady clock) —
  then the ``stale_behavior`` (``gravity_hold``: gravity torques at the last position; ``none``);
  every transition is logged and published at once.  Coming back from ``stale``, after a time
  jump (clock or stamps going back, or leaping forward) the running trajectory is dropped and
  the arm holds where it is; the law's internal state is reset.
* **Outputs**: every command is finite and within the effort limits, or it is not sent.
* **Lockstep** (``trigger: state``): one command per new state stamp, labelled with it
  (:mod:`.lockstep`); a repeated stamp gets the same command again, never a second law cycle.
"""

from __future__ import annotations

import array
import gc
import importlib
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import SetDynamicParameters

from ..control import CONTROLLERS, TASK_SPACE_CONTROLLERS, JointController, make_controller
from ..control.elastic import ElasticJointController
from ..control.task_space import NULL_SPACE_LAWS, TaskSpaceLaw
from ..dynamics.elastic import ElasticJoints
from ..identification.update import updated_model
from ..kinematics.geometric_model import rotation_vector
from ..model.robot_model import RobotModel
from ..safety import JUMP_MARGIN, POSITION_MARGIN, VELOCITY_MARGIN, SafetyEnvelope, StateMonitor, check_gains
from ..safety import limit_guard as lg
from ..symbolic.codegen import PROGRAM_MODULE_PREFIX
from ..trajectory.sampled import SampledTrajectory
from . import cdr, lockstep, validation
from .conversions import short
from .description import RobotDescription
from .diagnostics import ERROR, OK, WARN, DiagnosticsPublisher, Report
from .parameters import Param, Schema
from .runtime import LatestWorker, Refusals, Refused, guarded, run_node
from .trajectory_action import (
    ABORTED,
    CANCELED,
    INVALID_GOAL,
    INVALID_JOINTS,
    JOINT_CAUSES,
    OLD_HEADER_TIMESTAMP,
    PATH_TOLERANCE_VIOLATED,
    SUCCESSFUL,
    FollowJointTrajectoryServer,
    GoalError,
    GoalRun,
    tolerances,
)

# modules the run-time paths import lazily (a swap's base parameters: sympy; a pose reference's inverse kinematics;
# a description update's URDF parser; quaternions): imported at start-up, never beside the running loop — an import
# holds the GIL for tens of ms at a time (the first identified-parameter swap held the loop 45-64 periods on a
# loaded host); ``~/statistics`` lists any module imported after the first model was in use
PRELOAD = ("sympy", "robot_dynamics.dynamics.base_parameters", "robot_dynamics.dynamics.dynamic_terms",
           "robot_dynamics.kinematics.redundancy", "robot_dynamics.kinematics.analytic_ik",
           "robot_dynamics.model.urdf_conversion", "scipy.spatial.transform", "yaml")

NO_MODEL, NO_STATE, STALE, HOLDING, TRACKING = (
    ControllerState.MODE_NO_MODEL, ControllerState.MODE_NO_STATE, ControllerState.MODE_STALE,
    ControllerState.MODE_HOLDING, ControllerState.MODE_TRACKING,
)


# serialized size bound of one trajectory point, checked before deserializing (generous: 40 joints x 4 fields)
MAX_BYTES_PER_POINT = 2048
STATE_WAIT = 2.0  # s a goal waits for the first valid joint state (action thread)
MODEL_BUILD_WAIT = 120.0  # s a trajectory waits for the model being built (code generation on a cold cache)


STATE_QUEUE = 10  # /joint_states kept between two cycles with state_input loop (each validated and counted)
CLOCK_OVERRIDE_NS = 10_000_000  # with state_input loop: the node clock follows /clock to within 10 ms

PHASES = ("sampling", "law", "publish", "state_publish", "other")
LAWS = tuple(CONTROLLERS) + tuple(c for c in TASK_SPACE_CONTROLLERS if c not in CONTROLLERS) + ("elastic",)
TASK_SPACE_LAWS = ("task_space", *TASK_SPACE_CONTROLLERS)  # the laws that take a pose reference
MAX_POSE_BYTES = 4096  # serialized PoseStamped (a longer frame_id is refused before deserializing)
POSE_IK_TOLERANCE = 1e-9  # m and rad: the inverse kinematics of a pose reference must reach it this closely

MIN_VELOCITY_MARGIN = 2.0  # state_velocity_margin below this refused (its description)
PARAMETERS = Schema(
    Param("law", "computed_torque", "control law: computed_torque (001 eq. 9.22/9.24), position (9.29), predictive "
          "(9.31), pd_gravity (9.12), pid (9.5/9.10); in the task space of task_link (joint trajectories and "
          "~/pose_reference): task_space_computed_torque (9.33-9.35; task_space: the same), task_space_pid (9.17); "
          "for elastic joints (001 §7.3.8; elastic.* parameters, motor states on motor_states_topic): elastic "
          "(link computed torque + motor PD, Spong's composite control)",
          choices=LAWS, live=True),
    Param("omega", 20.0, "closed-loop bandwidth, Kp = omega^2, Kd = 2 xi omega (001 eq. 9.26), unless kp/kd are given",
          lo=0.0, hi=1e4, open_lo=True, live=True, unit="rad/s"),
    Param("xi", 1.0, "damping ratio of the closed loop (001 eq. 9.26)", lo=0.0, hi=100.0, live=True),
    Param("kp", [], "per-joint proportional gains (model order); with kd, instead of omega/xi (not for pid); "
          "task-space laws: 6 values, one per task coordinate [vx, vy, vz, wx, wy, wz]", kind="double_array", lo=0.0,
          open_lo=True, live=True, unit="1/s^2; task_space_pid: N/m, N m/rad"),
    Param("kd", [], "per-joint derivative gains (model order); with kp; task-space laws: 6 values as kp",
          kind="double_array", lo=0.0, open_lo=True, live=True, unit="1/s; task_space_pid: N s/m, N m s/rad"),
    Param("ki", [], "integral gains of task_space_pid per task coordinate [vx, vy, vz, wx, wy, wz] (6 values, with "
          "kp and kd); empty: from omega (9.10); other laws: not used", kind="double_array", lo=0.0, live=True,
          unit="N/(m s), N m/(rad s)"),
    Param("task_link", "", "link whose pose the task-space laws control (a link of the model); empty: the model's "
          "tip (the description's tip_link, or the end of the chain)", live=True),
    Param("null_space", "posture", "null-space term of the task-space laws on a redundant arm (more than 6 joints; "
          "none on a 6-joint arm): posture (damped posture law) | joint_limits (damped gradient of the joint-limit "
          "criterion, 002 eqs 6.34-6.35) | none", choices=(*NULL_SPACE_LAWS, "none"), live=True),
    Param("null_space_kp", [], "null-space stiffness K_pn of the task-space laws: one value (every joint) or one per "
          "joint (model order); empty: the law's default (task_space_computed_torque: min Kp; task_space_pid: "
          "omega^2)", kind="double_array", lo=0.0, live=True, unit="1/s^2"),
    Param("null_space_kd", [], "null-space damping K_dn: one value or one per joint; empty: the law's default "
          "(2 sqrt(K_pn); task_space_pid: 2 xi omega)", kind="double_array", lo=0.0, live=True, unit="1/s"),
    Param("pose_limit_margin", 0.05, "~/pose_reference: refused unless the arm and the pose's inverse kinematics keep "
          "every joint this far inside its position limits; while a pose is held, a joint this close to a limit makes "
          "the controller hold the current joint position", lo=0.0, hi=10.0, live=True, unit="rad, m"),
    Param("elastic.stiffness", [], "law elastic: joint stiffness k (001 eq. 7.34), one value or one per joint (model "
          "order)", kind="double_array", lo=0.0, open_lo=True, live=True, unit="N m/rad, N/m"),
    Param("elastic.motor_inertia", [], "law elastic: motor inertia I_a (joint side), one value or one per joint; "
          "empty: the model's rotor inertias Ia", kind="double_array", lo=0.0, open_lo=True, live=True,
          unit="kg m^2"),
    Param("elastic.motor_damping", [], "law elastic: motor viscous friction F_vm, one value or one per joint; empty: 0",
          kind="double_array", lo=0.0, live=True, unit="N m s/rad"),
    Param("elastic.omega_motor", 0.0, "law elastic: bandwidth of the motor (joint-torque) loop; 0: 3 omega, at least "
          "sqrt(k / I_a)", lo=0.0, hi=1e5, live=True, unit="rad/s"),
    Param("elastic.xi_motor", 0.7, "law elastic: damping ratio of the motor loop", lo=0.0, hi=100.0, live=True),
    Param("motor_states_topic", "mujoco_sim/motor_states", "law elastic: sensor_msgs/JointState of the motors "
          "(names <joint>_motor or <joint>; motor side, mapped through the transmissions.* parameters); a motor "
          "state older than state_timeout makes the law hold gravity"),
    Param("effort_limits", [], "per-joint saturation of the commands (model order); empty: the URDF effort limits; "
          "a value may lower a limit, never raise it above the robot description's, nor below 1.1 x the largest "
          "gravity torque of its joint (refused: the arm could not hold itself up)",
          kind="double_array", lo=0.0, open_lo=True, live=True, unit="N m, N"),
    Param("state_position_margin", POSITION_MARGIN, "a joint state farther than this outside the position limits is "
          "impossible and refused like a NaN, unless reached continuously from the last trusted state (an arm that "
          "really overshoots stays under control and is brought back); a trajectory may bring an arm measured outside its limits back toward "
          "the range, at most this far out", lo=0.0, hi=0.5, live=True, unit="rad, m"),
    Param("state_velocity_margin", VELOCITY_MARGIN, "a joint state moving faster than (1 + this) x the velocity limit "
          "is refused, and so is a state farther from the last trusted one than that speed allows (two sources "
          "disagreeing: no state is trusted until they agree); at least 2: a real arm overshoots its velocity limit "
          "in transients (2.8 x seen), and refusing its true states would leave the controller blind while it "
          "moves", lo=MIN_VELOCITY_MARGIN, hi=100.0, live=True),
    Param("state_jump_margin", JUMP_MARGIN, "position change allowed between two joint states on top of the velocity "
          "bound (noise, quantization, stamp jitter)", lo=0.0, hi=0.5, live=True, unit="rad, m"),
    Param("coulomb_velocity_band", -1.0, "velocity band of the Coulomb compensation Fc sat(v/band) (001 eq. 7.26); "
          "0: Fc sign(v); < 0: the law's default (1e-3 on the desired velocity)", lo=-1.0, hi=10.0, live=True,
          unit="rad/s, m/s"),
    Param("coulomb_velocity", "", "velocity of the Coulomb compensation: desired (no chatter at standstill) | "
          "measured (the model's Fc sign(qd)) | empty: the law's default", choices=("", "desired", "measured"),
          live=True),
    Param("rate", 500.0, "control loop rate (trigger timer); the gains must keep the sampled loop stable at this rate",
          lo=1.0, hi=10_000.0, live=True, unit="Hz"),
    Param("state_timeout", 0.1, "a state older than this (steady clock), or stamped farther than this from the clock, "
          "makes the controller stale", lo=1e-3, hi=60.0, live=True, unit="s"),
    Param("stale_behavior", "gravity_hold", "output while stale: gravity_hold (gravity torques at the last position) "
          "| none", choices=("gravity_hold", "none"), live=True),
    Param("max_trajectory_points", 100_000, "larger trajectories and goals are refused before any per-point work (a "
          "goal before rclpy converts it to Python objects, which holds the interpreter from the loop: ~7 us a point)",
          lo=1, hi=10_000_000, live=True),
    Param("start_tolerance", 0.1, "a trajectory whose point at t = 0 is farther than this from the arm is refused",
          lo=0.0, hi=10.0, live=True, unit="rad, m"),
    Param("state_publish_rate", 100.0, "~/controller_state rate in control time, decoupled from the loop; 0: every "
          "cycle", lo=0.0, hi=10_000.0, live=True, unit="Hz"),
    Param("joints", [], "joint order of the commands (default: the model's)", kind="string_array"),
    Param("effort_controller", "effort_controller", "commands go to /<effort_controller>/commands "
          "(forward_command_controller, interface effort)"),
    Param("command_space", "joint", "joint: the commands are joint efforts Γ; motor: motor torques τ_m = J_qmᵀ Γ "
          "through the robot's transmissions.* parameters (001 eq. 7.33; limits stay on the joint side)",
          choices=("joint", "motor")),
    Param("trigger", "timer", "timer (a cycle per period) | state (a cycle per /joint_states: lockstep simulation)",
          choices=("timer", "state")),
    Param("state_publish_divider", 0, "publish ~/controller_state every n-th cycle instead of by rate (>= 1); 0: by "
          "rate (trigger state: every cycle)", lo=0, hi=1_000_000),
    Param("statistics_window", 30.0, "cycles (at the nominal rate) summarized by ~/statistics", lo=0.0, hi=3600.0,
          open_lo=True, unit="s"),
    Param("loop", "thread", "what drives the timer-triggered cycle: thread (own thread, steady clock) | timer (a timer "
          "of the executor, node clock)", choices=("thread", "timer")),
    Param("state_input", "loop", "how /joint_states (and /clock with use_sim_time) reach the loop thread: loop (taken "
          "as serialized bytes at the start of each cycle; use_sim_time then fixed at start) | executor (a callback)",
          choices=("loop", "executor")),
    Param("executor", "events", "executor of the node's callbacks: events (rclpy's EventsExecutor) | single",
          choices=("events", "single")),
    Param("realtime_priority", 0, "SCHED_FIFO priority of the control loop's thread; 0: default scheduling",
          lo=0, hi=99),
    Param("cpu_affinity", [], "CPUs the control loop's thread may run on; empty: unchanged", kind="int_array", lo=0),
    Param("action_monitor_rate", 20.0, "feedback rate of ~/follow_joint_trajectory (JTC's name)", lo=0.1, hi=1000.0,
          unit="Hz"),
    Param("allow_partial_joints_goal", False, "a goal may name some of the joints: the others hold their measured "
          "position (JTC's name)", live=True),
    Param("constraints.goal_time", 0.0, "default goal_time_tolerance of a goal: after the last point, time allowed to "
          "get within the goal tolerances, else GOAL_TOLERANCE_VIOLATED; 0: no limit (JTC)", lo=0.0, hi=3600.0,
          live=True, unit="s"),
    Param("constraints.stopped_velocity_tolerance", 0.01, "velocity goal tolerance of every joint when a goal gives "
          "none (the arm has stopped); 0: not checked (JTC)", lo=0.0, hi=100.0, live=True, unit="rad/s, m/s"),
    Param("backend", "generated", "dynamic model of the laws: generated (the compiled customized model, or the "
          "generated scalar Python one without a C compiler) | numpy", choices=("generated", "numpy")),
)
# parameters whose change builds a new control context (adopted at a cycle boundary, the trajectory kept)
CONTEXT_PARAMETERS = frozenset({"law", "omega", "xi", "kp", "kd", "effort_limits", "coulomb_velocity_band", "rate",
                                "state_position_margin", "state_velocity_margin", "state_jump_margin",
                                "coulomb_velocity", "ki", "task_link", "null_space", "null_space_kp", "null_space_kd",
                                "elastic.stiffness", "elastic.motor_inertia", "elastic.motor_damping",
                                "elastic.omega_motor", "elastic.xi_motor"})
GAINS = ("p", "d", "i", "ff_velocity_scale")


def joint_parameters(joint: str) -> list[Param]:
    """The per-joint parameters in JTC's names, declared when the model names the joints (``gains.*`` build a new
    control context when they change; ``constraints.*`` are read when a goal starts)."""
    return [
        Param(f"gains.{joint}.p", 0.0, "proportional gain of this joint (Kp); 0: from kp or omega (joint-space "
              "laws)", lo=0.0, hi=1e9,
              live=True, unit="1/s^2 (computed torque), N m/rad (pd_gravity, pid)"),
        Param(f"gains.{joint}.d", 0.0, "derivative gain (Kd); 0: from kd or omega/xi", lo=0.0, hi=1e9, live=True,
              unit="1/s, N m s/rad"),
        Param(f"gains.{joint}.i", 0.0, "integral gain (law pid); 0: from omega", lo=0.0, hi=1e9, live=True,
              unit="N m/(rad s)"),
        Param(f"gains.{joint}.ff_velocity_scale", 0.0, "JTC's velocity feed-forward of velocity interfaces: only 0 "
              "(the feed-forward here is the model's, 001 eq. 9.22)", lo=0.0, hi=0.0, live=True),
        Param(f"constraints.{joint}.trajectory", 0.0, "position path tolerance of goals that give none; 0: not "
              "checked", lo=0.0, hi=100.0, live=True, unit="rad, m"),
        Param(f"constraints.{joint}.goal", 0.0, "position goal tolerance of goals that give none; 0: not checked",
              lo=0.0, hi=100.0, live=True, unit="rad, m"),
    ]


JOINT_PARAMETERS = Schema(*joint_parameters("<joint>"))  # the README's table


class LoopStatistics:
    """Per control cycle, in a ring buffer: start time (steady clock, ns) and the CPU time of each phase
    (``PHASES``, ns of the cycle thread's CPU clock; ``other``: the time checks and mode logic before sampling)."""

    def __init__(self, size: int = 20000) -> None:
        self.size = size
        self.starts = np.zeros(size, dtype=np.int64)
        self.phases = np.zeros((size, len(PHASES)), dtype=np.int64)
        self.k = 0
        self.cpu0: float | None = None  # process CPU time at the first cycle (s)
        self.k0 = 0

    def tick(self, start: int, sampling: int, law: int, publish: int, state: int, other: int) -> None:
        i = self.k % self.size
        self.starts[i] = start
        row = self.phases[i]
        row[0], row[1], row[2], row[3], row[4] = sampling, law, publish, state, other
        if self.cpu0 is None:
            self.cpu0, self.k0 = time.process_time(), self.k
        self.k += 1

    def summary(self, nominal_period: float) -> dict[str, float]:
        """Loop figures over the last ``size`` cycles; ``process_cpu_per_cycle_us`` since the first cycle.

        A cycle is *missed* when a period spans more than one nominal period: a period p counts
        round(p / T) - 1 missed cycles; ``missed_pct`` = missed / (cycles + missed)."""
        k = self.k  # the loop thread may tick meanwhile: one snapshot of the count, the oldest entries left out
        n = min(k, self.size - 8)
        out: dict[str, float] = {"cycles": int(k), "process_cpu_s": time.process_time()}
        if self.cpu0 is not None and k > self.k0:
            out["process_cpu_per_cycle_us"] = (time.process_time() - self.cpu0) / (k - self.k0) * 1e6
        if n < 3:
            return out
        order = np.arange(k - n, k) % self.size
        starts = self.starts[order]
        ph = self.phases[order] * 1e-3  # us
        p = np.diff(starts) * 1e-9
        err = np.abs(p - nominal_period)
        missed = int(np.maximum(np.rint(p / nominal_period) - 1, 0).sum())
        out.update({
            "window_cycles": int(n),
            "rate_hz": float(p.size / p.sum()),
            "period_mean_ms": float(p.mean() * 1e3),
            "period_error_p50_ms": float(np.percentile(err, 50) * 1e3),
            "period_error_p99_ms": float(np.percentile(err, 99) * 1e3),
            "period_error_max_ms": float(err.max() * 1e3),
            "period_error_max_age_s": float((time.perf_counter_ns() - starts[int(err.argmax()) + 1]) * 1e-9),
            "missed_cycles": missed,
            "missed_pct": 100.0 * missed / (p.size + missed),
        })
        total = ph.sum(axis=1)
        for j, name in enumerate(PHASES):
            out[f"{name}_us"] = float(ph[:, j].mean())
        out["cycle_us"] = float(total.mean())
        out["cycle_p99_us"] = float(np.percentile(total, 99))
        out["compute_mean_us"] = out["cycle_us"]  # the old key: the whole cycle
        return out

    def recent(self, nominal_period: float, since: int) -> dict[str, float]:
        """The loop figures of ``summary`` over the cycles after cycle ``since`` only (the previous call's
        ``cycles``; the period ending at the first of them included), on slices of the ring in integer ns and
        with few NumPy calls: cheap enough for the executor thread (``/diagnostics``)."""
        k = self.k  # one snapshot of the count (the loop thread may tick meanwhile)
        first = max(since - 1, k - (self.size - 8), 0)
        out: dict[str, float] = {"cycles": int(k), "window_cycles": int(max(k - since, 0))}
        if k - first < 2:
            return out
        i0, i1 = first % self.size, k % self.size
        if i0 < i1:
            starts, phases = self.starts[i0:i1], self.phases[i0 + 1:i1]
        else:  # wrapped around the ring
            starts = np.concatenate((self.starts[i0:], self.starts[:i1]))
            phases = np.concatenate((self.phases[i0 + 1:], self.phases[:i1])) if i0 + 1 < self.size else \
                self.phases[:i1]
        p = np.diff(starts)  # ns
        t_ns = round(nominal_period * 1e9)
        err = np.abs(p - t_ns)
        err.sort()
        missed = int(np.maximum((2 * p + t_ns) // (2 * t_ns) - 1, 0).sum())  # round(p / T) - 1 per period
        total = int(p.sum())
        out.update({
            "rate_hz": p.size / (total * 1e-9) if total > 0 else 0.0,
            "period_error_p50_ms": _sorted_percentile(err, 0.5) * 1e-6,
            "period_error_p99_ms": _sorted_percentile(err, 0.99) * 1e-6,
            "period_error_max_ms": float(err[-1]) * 1e-6,
            "missed_cycles": missed,
            "missed_pct": 100.0 * missed / (p.size + missed),
            "cycle_us": float(phases.sum()) / p.size * 1e-3,
        })
        return out


def _sorted_percentile(values: np.ndarray, q: float) -> float:
    """The ``q`` quantile (0..1) of sorted ``values``, linear interpolation (``np.percentile``'s default)."""
    pos = q * (values.size - 1)
    i = int(pos)
    j = min(i + 1, values.size - 1)
    return float(values[i] + (values[j] - values[i]) * (pos - i))


def _with_gains(law: str, model: RobotModel, kp: np.ndarray, kd: np.ndarray, effort: np.ndarray | None,
                **kwargs) -> JointController:
    """A controller of ``law`` with explicit per-joint gains."""
    from ..control import ComputedTorqueController, PDGravityController, PredictiveController

    if law == "pd_gravity":
        return PDGravityController(model, kp, kd, effort_limit=effort, **kwargs)
    if law == "predictive":
        return PredictiveController(model, kp, kd, effort_limit=effort, **kwargs)
    return ComputedTorqueController(model, kp, kd, scheme="position" if law == "position" else "tracking",
                                    effort_limit=effort, **kwargs)


def _completed(msg: JointTrajectory, names: list[str], q: np.ndarray) -> JointTrajectory:
    """``msg`` with the joints of ``names`` it lacks held at ``q`` (model order; zero velocity, acceleration and
    effort where the points give those fields); itself when it names them all or names an unknown one (refused by
    the check that follows, with its reason)."""
    given = list(msg.joint_names)
    missing = [j for j in names if j not in given]
    if not missing or not set(given) <= set(names):
        return msg
    hold = [float(q[names.index(j)]) for j in missing]
    zeros = [0.0] * len(missing)
    out = JointTrajectory(header=msg.header, joint_names=given + missing)
    for p in msg.points:
        out.points.append(JointTrajectoryPoint(
            positions=list(p.positions) + hold if len(p.positions) else [],
            velocities=list(p.velocities) + zeros if len(p.velocities) else [],
            accelerations=list(p.accelerations) + zeros if len(p.accelerations) else [],
            effort=list(p.effort) + zeros if len(p.effort) else [], time_from_start=p.time_from_start))
    return out


def _with_joint_gains(controller: JointController, law: str, model: RobotModel, values: dict, effort: np.ndarray | None,
                      friction: dict) -> JointController:
    """``controller`` with the per-joint gains ``gains.<joint>.p/.d/.i`` (JTC's names) that are set (> 0) in place of
    its own (from ``kp``/``kd`` or ``omega``/``xi``); itself when none is set."""
    from ..control import PIDController

    names = model.joint_names
    given = {g: np.array([values.get(f"gains.{j}.{g}", 0.0) for j in names], float) for g in ("p", "d", "i")}
    if not any(g.any() for g in given.values()):
        return controller
    kp = np.where(given["p"] > 0, given["p"], controller.kp)
    kd = np.where(given["d"] > 0, given["d"], controller.kd)
    if law == "pid":
        ki = np.where(given["i"] > 0, given["i"], controller.ki)
        return PIDController(model, kp, kd, ki, effort_limit=effort, **friction)
    return _with_gains(law, model, kp, kd, effort, **friction)


def _null_space_gain(values: list[float], n: int, what: str) -> float | np.ndarray | None:
    """A null-space gain parameter: empty -> None (the law's default), one value -> scalar, n values -> (n,)."""
    if not values:
        return None
    if len(values) not in (1, n):
        raise ValueError(f"{what} needs 1 or {n} values (model order), got {len(values)}")
    return float(values[0]) if len(values) == 1 else np.array(values, float)


def _task_space_controller(law: str, model: RobotModel, v: dict, effort: np.ndarray | None,
                           friction: dict) -> TaskSpaceLaw:
    """A task-space law of the parameter values ``v``: gains from omega/xi, or ``kp``/``kd`` (and ``ki`` for
    task_space_pid) per task coordinate; ``task_link``, ``null_space`` and its gains.  ``ValueError`` names what does
    not fit."""
    from ..control import TaskSpaceComputedTorque, TaskSpacePID

    null = v["null_space"]
    opts = {"link": v["task_link"] or None, "null_space": None if null == "none" else null,
            "null_space_kp": _null_space_gain(v["null_space_kp"], model.dof, "null_space_kp"),
            "null_space_kd": _null_space_gain(v["null_space_kd"], model.dof, "null_space_kd")}
    kp, kd, ki = v["kp"], v["kd"], v["ki"]
    pid = law == "task_space_pid"
    if kp or kd or (pid and ki):
        if len(kp) != 6 or len(kd) != 6 or (pid and len(ki) != 6):
            gains = "kp, kd and ki" if pid else "kp and kd"
            raise ValueError(f"with law {law}, {gains} are task-space gains, 6 values each [vx, vy, vz, wx, wy, wz]; "
                             f"got {len(kp)}, {len(kd)}" + (f" and {len(ki)}" if pid else ""))
        if pid:
            return TaskSpacePID(model, kp, kd, ki, effort_limit=effort, **opts, **friction)
        return TaskSpaceComputedTorque(model, kp, kd, effort_limit=effort, **opts, **friction)
    return make_controller(law, model, omega=v["omega"], xi=v["xi"], effort_limit=effort, **opts, **friction)


def pose_guard(q: np.ndarray, qd: np.ndarray, lower: np.ndarray, upper: np.ndarray, velocity: np.ndarray,
               margin: float, names: list[str]) -> str | None:
    """Why a pose cannot be held at (q, q̇): a joint closer than ``margin`` to a position limit, or faster than its
    velocity limit (the first found, as a sentence); None when neither."""
    below, above = q - lower, upper - q
    room = np.minimum(below, above)
    if np.any(room < margin):
        j = int(np.argmin(room))
        side = "lower" if below[j] <= above[j] else "upper"
        return f"{names[j]} at {q[j]:.4f}, {room[j]:.4f} from its {side} limit (pose_limit_margin {margin:g})"
    velocity = np.where(velocity > 0, velocity, np.inf)  # a limit of 0 (unset in a URDF): none
    fast = np.abs(qd) > velocity
    if np.any(fast):
        j = int(np.argmax(np.abs(qd) / velocity))
        return f"{names[j]} moving at {qd[j]:.3f}, beyond its velocity limit {velocity[j]:.3f}"
    return None


def pose_text(pose: np.ndarray, link: str, base: str) -> str:
    """A pose for logs and the mode's reason: position (m) and rotation vector (rad) in ``base``."""
    p = ", ".join(f"{x:.4f}" for x in pose[:3, 3])
    r = ", ".join(f"{x:.4f}" for x in rotation_vector(pose[:3, :3]))
    return f"{link} at [{p}] m, rotation vector [{r}] rad in {base}"


@dataclass(frozen=True)
class PoseHold:
    """A pose reference checked by the inverse kinematics: held by a task-space law until replaced."""

    pose: np.ndarray   # (4, 4) of ``link`` in the base link
    q_ref: np.ndarray  # the inverse kinematics' solution (the published joint reference)
    link: str
    text: str


@dataclass(frozen=True)
class Context:
    """Everything the control cycle needs about the robot; replaced as a whole (never mutated)."""

    model: RobotModel
    controller: JointController
    joints: list[str]          # command order (parameter ``joints`` or the model's)
    to_cmd: np.ndarray         # model order -> command order
    index: validation.NameIndex
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray         # the limits in use: the description's, or lower (parameter effort_limits)
    envelope: SafetyEnvelope   # the description's limits and the margins of the state checks
    law: str = "computed_torque"
    task_link: str | None = None  # the link of a task-space law (None: a joint-space law)
    to_motor: np.ndarray | None = None  # command_space motor: τ_m = J_qmᵀ Γ (model order; None: joint efforts)
    # a task-space law's stand-in after a dropped pose: joint-space computed torque with the same omega/xi
    hold_controller: JointController | None = None
    guard: lg.LimitGuard | None = None  # position and velocity limits on every command (None: law elastic)


def _elastic_controller(model: RobotModel, v: dict, effort: np.ndarray | None, friction: dict) -> JointController:
    """Law ``elastic``: :class:`~robot_dynamics.control.elastic.ElasticJointController` tuned from omega/xi and the
    ``elastic.*`` parameters (one value for every joint, or one per joint in model order)."""
    def per_joint(name: str) -> Any:
        x = list(v[name])
        if len(x) not in (0, 1, model.dof):
            raise ValueError(f"{name} needs one value or {model.dof} (model order), got {len(x)}")
        return None if not x else (x[0] if len(x) == 1 else np.array(x))

    stiffness = per_joint("elastic.stiffness")
    if stiffness is None:
        raise ValueError("law elastic needs elastic.stiffness (the joints' stiffness k, 001 eq. 7.34)")
    damping = per_joint("elastic.motor_damping")
    elastic = ElasticJoints(stiffness=stiffness, motor_inertia=per_joint("elastic.motor_inertia"),
                            motor_damping=0.0 if damping is None else damping)
    wm = v["elastic.omega_motor"]
    return ElasticJointController.tuned(model, elastic, v["omega"], v["xi"], omega_motor=wm if wm > 0 else None,
                                        xi_motor=v["elastic.xi_motor"], effort_limit=effort, **friction)


TORQUE_GAIN_LAWS = ("pd_gravity", "pid")  # gains in N m/rad (the others: acceleration gains, 001 eq. 9.24)
INERTIA_SAMPLES = 32  # configurations of the joint box where the smallest A_jj(q) of torque gains is looked for


def smallest_inertia(model: RobotModel, samples: int = INERTIA_SAMPLES, seed: int = 0) -> np.ndarray:
    """min over q of each diagonal A_jj(q) (rotor inertia included), at mid-range and ``samples`` configurations
    uniform in the joint box (±pi where a joint has no limit): the inertia of the fastest closed loop of torque
    gains."""
    return lg.sampled_extremes(model, samples, seed).inertia_min


def _check_loop_gains(controller: JointController, hold: JointController | None, law: str, model: RobotModel,
                      period: float) -> None:
    """The joint-space PD gains in use (the law's and the stand-in's) within the stability bounds of the sampled
    loop at ``period`` (:func:`~robot_dynamics.safety.check_gains`; ``ValueError`` refuses the parameters).  The
    task-space and elastic laws' own gains act on other coordinates: only their joint-space stand-in is judged."""
    names = list(model.joint_names)
    for c, name in ((controller, law), (hold, "computed_torque (stand-in hold)")):
        kp, kd = getattr(c, "kp", None), getattr(c, "kd", None)
        if c is None or kp is None or kd is None or np.shape(kp) != (model.dof,) or np.shape(kd) != (model.dof,):
            continue
        if c is controller and (law in TASK_SPACE_LAWS or law == "elastic"):
            continue
        inertia = smallest_inertia(model) if name in TORQUE_GAIN_LAWS else None
        check_gains(kp, kd, period, names, inertia=inertia, what=f"law {name} at rate {1.0 / period:g} Hz")


def _motor_map(model: RobotModel, command_space: str) -> np.ndarray | None:
    """J_qmᵀ (model order) when the commands are motor torques τ_m = J_qmᵀ Γ (001 eq. 7.33), else None."""
    if command_space != "motor":
        return None
    if model.transmission is None:
        raise ValueError("command_space motor needs the robot's transmissions (transmissions.gear_ratio ...)")
    return np.ascontiguousarray(model.transmission.motor_torques(np.eye(model.dof)).T)


class ComputedTorqueControllerNode(Node):

    def __init__(self) -> None:
        super().__init__("computed_torque_controller")
        self.params = PARAMETERS.copy()
        v = self.params.declare(self)
        self.law = v["law"]
        self.stale_behavior = v["stale_behavior"]
        self.trigger = v["trigger"]
        self.rate = v["rate"]
        self.period = 1.0 / self.rate
        self._period_ns = round(self.period * 1e9)  # read by the loop thread every cycle (live rate)
        self.timeout = v["state_timeout"]
        self.divider = v["state_publish_divider"]
        if self.divider == 0 and self.trigger == "state":
            self.divider = 1  # lockstep records every cycle
        self.state_period = 1.0 / v["state_publish_rate"] if v["state_publish_rate"] > 0 else 0.0
        self.next_state_time = -math.inf  # control time of the next ~/controller_state (by rate)
        self.loop = v["loop"]
        self.executor_kind = v["executor"]  # read by runtime.run_node
        # the loop thread takes its inputs itself (timer trigger, loop thread)
        self.loop_input = v["state_input"] == "loop" and self.trigger == "timer" and self.loop == "thread"
        self.rt_priority = v["realtime_priority"]
        self.cpu_affinity = list(v["cpu_affinity"])
        self.scheduling = "default"  # what the loop got (reported by ~/statistics)
        self.max_points = v["max_trajectory_points"]
        self.start_tolerance = v["start_tolerance"]
        self.pose_margin = v["pose_limit_margin"]
        # a leap of the control time larger than this is a time jump (sim restart, clock change)
        self.max_time_step = max(1.0, 2.0 * self.timeout)
        self._pending_params: str | None = None  # a context rebuilt for new parameters: adopted keeping the trajectory
        sys.setswitchinterval(0.0005)  # the control thread waits at most this long for the GIL

        self.refusals = Refusals(self)
        self.monitor: StateMonitor | None = None  # which joint state to trust (safety envelope; with the first model)
        self.ctx: Context | None = None
        self._pending_ctx: Context | None = None
        self._pending_traj: tuple[SampledTrajectory, float | None, int, GoalRun | None] | None = None
        self.trajectory: SampledTrajectory | None = None
        self.goal: GoalRun | None = None  # the action goal the running trajectory belongs to
        self.trajectory_t0 = 0.0
        self.trajectories_accepted = 0
        self.pose: PoseHold | None = None  # the pose reference held (task-space laws), when no trajectory runs
        self._pending_pose: PoseHold | None = None
        self.poses_accepted = 0
        self.safe_hold = False  # a dropped pose: held by the context's hold_controller until the next reference
        self.hold: np.ndarray | None = None
        self.q: np.ndarray | None = None
        self.qd: np.ndarray | None = None
        self.state_stamp: float | None = None   # stamp of the last accepted state (s)
        self.state_wall: float | None = None    # steady time of its arrival
        self.last_now: float | None = None      # control time of the last cycle
        self.mode = NO_MODEL
        self.mode_reason = "waiting for the robot description"
        self.mode_wall = 0.0
        self._last_answer: tuple[float, Float64MultiArray] | None = None
        window = v["statistics_window"]
        self.stats = LoopStatistics(max(100, min(10_000_000, round(window * self.rate))))
        self.cycle = 0
        self.guarded_cycles = 0  # cycles whose command the limit guard changed
        self._extremes: tuple[RobotModel, lg.Extremes] | None = None
        self._lock = threading.RLock()  # the loop thread vs the executor's callbacks (uncontended: ~0.1 us)
        self._stop_loop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        # preallocated outputs, filled in place every cycle (see _allocate_messages)
        self.cmd_msg = Float64MultiArray()
        self._cmd_view = np.zeros(0)
        self._clipped = np.zeros(0)  # the cycle's command clipped to the limits (model order)
        self._state_views: dict[str, np.ndarray] = {}
        self._zero = np.zeros(0)

        # heavy input work (deserializing and checking a trajectory, building/compiling a model) runs in
        # worker threads: the single-threaded executor only ever runs short callbacks
        self._ctx_ready = threading.Event()
        self._modules_in_use: set[str] | None = None  # sys.modules when the first model came into use
        self.trajectory_worker = LatestWorker(self.check_trajectory, "trajectory_check")
        self.model_worker = LatestWorker(self._build_model, "model_build")
        self.pose_worker = LatestWorker(self.check_pose, "pose_check")  # the inverse kinematics of a pose reference
        topic = f"{v['effort_controller']}/commands"  # relative: a namespace moves the whole robot
        self.cmd_pub = self.create_publisher(Float64MultiArray, topic, 10)
        # lockstep: one state per cycle, deep enough that a recorder never loses one
        depth = 1000 if self.trigger == "state" else 100
        self.state_pub = self.create_publisher(ControllerState, "~/status", depth)
        self.state_msg = ControllerState(law=self.law)
        # JTC's state (control_msgs): the same reference/feedback/error/output objects as ~/status, filled once
        self.jtc_pub = self.create_publisher(JointTrajectoryControllerState, "~/controller_state", depth)
        self.jtc_msg = JointTrajectoryControllerState(speed_scaling_factor=1.0)
        # sensor-data QoS keeps only the latest sample; state-triggered (lockstep) control must see every state
        state_qos = qos_profile_sensor_data if self.trigger == "timer" else 10
        self._input_node: Node | None = None
        self._state_sub = self._clock_sub = None
        self._raw_cmd: cdr.Float64MultiArrayWriter | None = None
        self._sim_ns = 0  # the latest /clock (ns), taken by the loop thread (loop_input with use_sim_time)
        self._override_ns = -CLOCK_OVERRIDE_NS  # the node clock's last override from it
        self._sim_time = bool(self.get_parameter("use_sim_time").value)
        self.params.attach(self, self._apply_parameters)
        if self.loop_input:
            self._setup_loop_input()
        else:
            self.create_subscription(JointState, "joint_states", self.on_joint_states, state_qos)
        # raw: the executor thread only sees bytes; the worker deserializes and checks
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10, raw=True)
        # law elastic: the motors' state (subscribed only while that law is in use: a 500 Hz topic costs the
        # executor otherwise); (stamp, θ, θ̇) joint side, replaced as a whole
        self.motor_state: tuple[float, np.ndarray, np.ndarray] | None = None
        self._motor_sub = None
        self._motor_topic = v["motor_states_topic"]
        if self.law == "elastic":
            self._subscribe_motor_states()
        self.create_subscription(PoseStamped, "~/pose_reference", self.on_pose_reference, 10, raw=True)
        self.create_service(Trigger, "~/statistics", self.on_statistics)
        # goals are counted before rclpy converts them (a huge goal would hold the GIL from the loop for seconds)
        self.action = FollowJointTrajectoryServer(
            self, v["action_monitor_rate"], max_points=lambda: self.max_points,
            on_oversize=lambda why: self.refusals.refuse("too_large", f"~/follow_joint_trajectory: {why}"))
        if self.action.server.gate is None:
            self.get_logger().warning("~/follow_joint_trajectory: this rclpy does not allow counting a goal's points "
                                      "before converting it: max_trajectory_points is checked after the conversion")
        self.side_nodes = (self.action.node,)  # spun by runtime.run_node (multithreaded: execute callbacks wait)
        # building a model (maybe compiling it) takes time: on the side node's threads, never the executor's
        self.action.node.create_service(SetDynamicParameters, self.resolve_service_name("~/set_dynamic_parameters"),
                                        self.on_set_dynamic_parameters)
        self.executor_scheduling = "default"
        if self.trigger == "timer" and self.loop == "thread":
            self._loop_thread = threading.Thread(target=self._run_loop, name="control_loop", daemon=True)
            if self.rt_priority > 1:
                self._apply_scheduling(self.rt_priority - 1, "the executor")  # this thread spins the executor
        elif self.trigger == "timer":
            self.timer = self.create_timer(self.period, self.step)
            self._apply_scheduling()  # the executor's thread (this one) runs the cycle
        # the watchdog runs on the steady clock: a paused simulation also stops /clock
        self.watchdog_timer = self.create_timer(self.timeout / 5, self.watchdog,
                                                clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.description = RobotDescription(self, self._on_model, lock_from_joint_states=True)
        self._diag_k = 0  # cycle count and process CPU time at the previous /diagnostics
        self._diag_cpu = time.process_time()
        self.diagnostics = DiagnosticsPublisher(self, "control loop", self._diagnostics, self._robot_name)
        self.get_logger().info(f"law {self.law}, {self.rate:.0f} Hz ({self.trigger}, loop {self.loop}, executor {self.executor_kind}), "
                               f"commands on {self.resolve_topic_name(topic)}")
        if self._loop_thread is not None:
            self._loop_thread.start()

    # ------------------------------------------------------------ loop
    def _setup_loop_input(self) -> None:
        """``state_input: loop``: ``/joint_states`` (and ``/clock`` with ``use_sim_time``) subscribed as raw bytes
        on a hidden node of this process that no executor spins; the loop thread takes them at the start of
        each cycle (:meth:`_take_inputs`), so a state costs a take and a CDR read (~10 µs), not an executor
        dispatch and a message conversion (~150 µs).  The node's own /clock subscription (rclpy's TimeSource)
        is dropped: the loop sets the node clock from the /clock it takes, and ``use_sim_time`` cannot change
        at run time (refused with the reason)."""
        side = Node(f"_{self.get_name()}_loop_input", namespace=self.get_namespace(), context=self.context,
                    use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
        self._input_node = side
        self._state_reader = cdr.JointStateReader(validation.MAX_JOINT_STATE_NAMES)
        sensor = qos_profile_sensor_data  # best effort, keep last: what arrived since the last cycle, bounded
        queue = QoSProfile(history=sensor.history, depth=STATE_QUEUE, reliability=sensor.reliability,
                           durability=sensor.durability)
        self._state_sub = side.create_subscription(JointState, self.resolve_topic_name("joint_states"),
                                                   _never_called, queue, raw=True)
        if self._sim_time:
            time_source = getattr(self, "_time_source", None)
            if time_source is not None and hasattr(time_source, "detach_node"):
                time_source.detach_node()  # its /clock subscription: the loop takes /clock instead
            self._clock_sub = side.create_subscription(
                ClockMsg, self.resolve_topic_name("/clock"), _never_called,
                QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
        self.add_on_set_parameters_callback(self._refuse_sim_time_change)

    def _refuse_sim_time_change(self, params: list[Parameter]) -> SetParametersResult:
        for p in params:
            if p.name == "use_sim_time" and bool(p.value) != self._sim_time:
                return SetParametersResult(successful=False, reason="use_sim_time is fixed at start with "
                                                                    "state_input: loop (restart the node)")
        return SetParametersResult(successful=True)

    def _take_inputs(self) -> None:
        """Loop thread, at the start of a cycle: the latest /clock (a depth-1 queue) and every /joint_states since
        the last cycle (up to ``STATE_QUEUE``), each validated as :meth:`on_joint_states` does (a refusal is counted
        and logged; the last valid one is the state).  The node clock follows the /clock taken to within
        ``CLOCK_OVERRIDE_NS`` (the loop itself uses the exact value)."""
        sub = self._clock_sub
        if sub is not None:
            with sub.handle:
                got = sub.handle.take_message(ClockMsg, True)
            if got is not None:
                try:
                    ns = cdr.read_clock(got[0])
                except cdr.CDRError as exc:
                    self.refusals.refuse("malformed_clock", f"/clock: {exc}")
                else:
                    self._sim_ns = ns
                    if not 0 <= ns - self._override_ns < CLOCK_OVERRIDE_NS:
                        self._override_ns = ns
                        self.get_clock().set_ros_time_override(Time(nanoseconds=ns, clock_type=ClockType.ROS_TIME))
        sub = self._state_sub
        while True:  # every state since the last cycle, in order: each validated and counted, the last valid wins
            with sub.handle:
                got = sub.handle.take_message(JointState, True)
            if got is None:
                return
            if self.ctx is None:  # no model to validate it against yet
                continue
            try:
                q, qd, stamp = self._read_state(got[0], self.ctx)
                self._state_arrived(q, qd, stamp)
            except Refused as exc:
                self.refusals.refuse(exc.cause, str(exc))
            except Exception as exc:  # noqa: BLE001 - no message can stop the loop
                self.refusals.refuse("malformed", f"joint_states: {type(exc).__name__}: {exc}")

    def _read_state(self, raw: bytes, ctx: Context) -> tuple[np.ndarray, np.ndarray, float]:
        """(q, qd, stamp) of a serialized JointState: the CDR reader, or rclpy's deserializer (the reference)
        for anything the reader does not parse exactly."""
        try:
            return validation.joint_state_view(self._state_reader.read(raw), ctx.index)
        except cdr.CDRError:
            pass
        try:
            msg = deserialize_message(raw, JointState)
        except Exception as exc:  # noqa: BLE001
            raise Refused("malformed", f"joint_states cannot be deserialized: {exc}") from None
        return validation.joint_state(msg, ctx.index)

    def _apply_scheduling(self, priority: int | None = None, what: str = "the loop") -> None:
        """SCHED_FIFO at ``priority`` (default ``realtime_priority``) and the ``cpu_affinity`` for the calling
        thread, when permitted (CAP_SYS_NICE or an RLIMIT_RTPRIO allowance); says clearly what was and was not
        granted.  With the loop thread, the executor's thread gets ``realtime_priority - 1`` (``what`` = "the
        executor"): it holds the GIL in the input callbacks, and preempted by ordinary load it would stall the loop
        thread waiting for the GIL (priority inversion)."""
        log = self.get_logger()
        executor = priority is not None
        priority = self.rt_priority if priority is None else priority
        got = []
        if self.cpu_affinity and not executor:
            try:
                os.sched_setaffinity(0, self.cpu_affinity)
                got.append(f"cpus {sorted(os.sched_getaffinity(0))}")
            except (OSError, ValueError) as exc:
                log.warning(f"cpu_affinity {self.cpu_affinity} not granted ({exc}): running on the inherited CPUs")
        if priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
                got.append(f"SCHED_FIFO priority {priority}")
                log.info(f"real-time scheduling granted to {what}: SCHED_FIFO priority {priority}")
            except (OSError, AttributeError) as exc:
                log.warning(f"real-time scheduling NOT granted to {what} (SCHED_FIFO priority {priority}: {exc}; "
                            f"needs CAP_SYS_NICE or an rtprio limit): {what} runs at default priority")
        if executor:
            self.executor_scheduling = ", ".join(got) or "default"
        else:
            self.scheduling = ", ".join(got) or "default"

    def _run_loop(self) -> None:
        """The dedicated loop thread: one cycle per period at absolute deadlines on the steady clock
        (a late cycle is run at once; more than one period late, the schedule restarts from now).  The period
        is read every cycle: a new ``rate`` takes effect from the next deadline."""
        self._apply_scheduling()
        deadline = time.monotonic_ns() + self._period_ns
        sleep, mono = time.sleep, time.monotonic_ns
        while not self._stop_loop.is_set():
            period_ns = self._period_ns
            wait = deadline - mono()
            if wait > 0:
                sleep(wait * 1e-9)
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - the loop never dies
                self.refusals.refuse("cycle_error", f"control cycle: {type(exc).__name__}: {exc}")
            deadline += period_ns
            late = mono() - deadline
            if late > period_ns:
                deadline += (late // period_ns) * period_ns  # cycles missed: keep the phase, do not burst

    # -------------------------------------------------------------- setup
    def _on_model(self, model: RobotModel, urdf: str) -> None:
        """Executor thread: the per-joint parameters of the model's joints declared (JTC's ``gains.<joint>.*``,
        ``constraints.<joint>.*``; start values from the node's parameters), then the context built in the worker."""
        try:
            self.params.extend(self, [p for j in model.joint_names for p in joint_parameters(j)])
        except ValueError as exc:
            self.get_logger().error(f"robot model not used: per-joint parameter {exc}")
            return
        self.model_worker.put(model)

    def _build_model(self, model: RobotModel) -> None:
        """Worker: build the control context (may compile code) and hand it to the control cycle; the first time,
        import the modules of :data:`PRELOAD` before (the loop has no model yet: no arm to hold up)."""
        try:
            if self._modules_in_use is None:
                for name in PRELOAD:
                    importlib.import_module(name)
            self._pending_ctx = self._build_context(model)
            self._ctx_ready.set()
            self.get_logger().info(f"dynamic model engine: {model.engine['inverse_dynamics']}")
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f"robot model not usable by the controller: {type(exc).__name__}: {exc}")

    def _build_context(self, model: RobotModel, values: dict | None = None) -> Context:
        """The control context of ``model`` with the parameter ``values`` (default: the node's); ``ValueError``
        names what does not fit the model (joint names, numbers of gains or limits, a law without gains)."""
        v = self.params.values if values is None else values
        joints = list(v["joints"])
        if joints and sorted(joints) != sorted(model.joint_names):
            raise ValueError(f"parameter joints {joints} does not match the model joints {model.joint_names}")
        joints = joints or list(model.joint_names)
        envelope = SafetyEnvelope.from_model(model, position_margin=v["state_position_margin"],
                                             velocity_margin=v["state_velocity_margin"],
                                             jump_margin=v["state_jump_margin"])
        effort = envelope.effort_limits(v["effort_limits"])  # never above the description's (ValueError)
        if v["backend"] == "generated":
            # the laws call model.inverse_dynamics: its program is built (or loaded from the cache) here, in the
            # model worker, never in a callback, and in use from the first cycle (no engine switch mid-run); a
            # build runs in a child process (isolated): the generator's pure Python would hold the GIL from the
            # loop thread for ~1 s (a model swapped in while the arm moves: commands paused 0.3-0.8 s)
            model.compile("inverse_dynamics", "forward_dynamics", isolated=True)  # the law's, the limit guard's
        else:
            model.set_backend("numpy")
        band = v["coulomb_velocity_band"]
        friction = {"coulomb_velocity_band": None if band < 0 else band, "coulomb_velocity": v["coulomb_velocity"] or None}
        law, kp, kd = v["law"], v["kp"], v["kd"]
        link = v["task_link"]
        if link and link not in model.frames:
            raise ValueError(f"task_link {link!r} is not a link of the model (links: {', '.join(model.frames)})")
        task_link = None
        if law in TASK_SPACE_LAWS:
            controller = _task_space_controller(law, model, v, effort, friction)
            task_link = controller.link
        elif law == "elastic":
            controller = _elastic_controller(model, v, effort, friction)
        elif kp or kd:
            if len(kp) != model.dof or len(kd) != model.dof or law == "pid":
                raise ValueError(f"kp and kd need {model.dof} values each (model order; not for law pid), got "
                                 f"{len(kp)} and {len(kd)}")
            controller = _with_gains(law, model, np.array(kp), np.array(kd), effort, **friction)
        else:
            controller = make_controller(law, model, omega=v["omega"], xi=v["xi"], effort_limit=effort, **friction)
        hold_controller = None
        if task_link is None and law != "elastic":
            controller = _with_joint_gains(controller, law, model, v, effort, friction)
        else:
            hold_controller = make_controller("computed_torque", model, omega=v["omega"], xi=v["xi"],
                                              effort_limit=controller.effort_limit, **friction)
        _check_loop_gains(controller, hold_controller, law, model, 1.0 / v["rate"])
        effort = np.minimum(controller.effort_limit, effort)
        extremes = self._extremes_of(model)
        if len(v["effort_limits"]):  # a parameter may not lower a limit below what holds the arm up
            lg.check_holding(effort, extremes.gravity_max, model.joint_names)
        lim = model.limits
        guard = None
        if law != "elastic":  # the elastic law's command acts through the springs: not the rigid model's q̈
            guard = lg.LimitGuard.for_loop(lim["lower"], lim["upper"], envelope.velocity,
                                           lg.braking_acceleration(effort, extremes, envelope.acceleration), v["rate"])
        return Context(
            model=model, controller=controller, joints=joints,
            to_cmd=np.array([model.joint_names.index(j) for j in joints]),
            index=validation.NameIndex(model.joint_names),
            lower=np.asarray(lim["lower"], float), upper=np.asarray(lim["upper"], float),
            velocity=np.asarray(lim["velocity"], float), effort=effort,
            envelope=envelope, law=law, task_link=task_link, hold_controller=hold_controller,
            to_motor=_motor_map(model, v["command_space"]), guard=guard,
        )

    def _extremes_of(self, model: RobotModel) -> lg.Extremes:
        """The gravity and inertia extremes of ``model`` (sampled once per model: it is immutable)."""
        cached = self._extremes
        if cached is None or cached[0] is not model:
            cached = self._extremes = (model, lg.sampled_extremes(model))
        return cached[1]

    def _subscribe_motor_states(self) -> None:
        """Executor thread: subscribe ``motor_states_topic`` once (law elastic)."""
        if self._motor_sub is None:
            self.motor_state = None  # one from an earlier subscription is stale: "no motor state yet" until one comes
            self._motor_sub = self.create_subscription(JointState, self._motor_topic, self.on_motor_states,
                                                       qos_profile_sensor_data)
            self.get_logger().info(f"law elastic: motor states from {self.resolve_topic_name(self._motor_topic)}")

    def on_motor_states(self, msg: JointState) -> None:
        """The motors' positions and velocities (motor side) -> θ, θ̇ joint side (``transmissions.*``); a message
        that does not name every joint's motor with finite values is refused."""
        try:
            ctx = self.ctx or self._pending_ctx
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
            self.motor_state = (stamp, qm, qmd)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
        except Exception as exc:  # noqa: BLE001 - never raise into the executor
            self.refusals.refuse("motor_state_error", f"motor states: {type(exc).__name__}: {exc}")

    def _apply_parameters(self, changes: dict) -> None:
        """Executor thread, a ``SetParameters`` call accepted by the schema: a new law, gains, limits or friction
        options build a new control context now (``ValueError`` refuses the change with its reason: nothing
        changes), adopted at the next cycle boundary keeping the running trajectory; rates, timeouts and
        tolerances change under the cycle's lock.  Logged."""
        values = {**self.params.values, **changes}
        rebuild = bool(CONTEXT_PARAMETERS & changes.keys()) or any(k.startswith("gains.") for k in changes)
        if rebuild:
            base = self._pending_ctx or self.ctx
            if base is not None:  # (without a model yet, the first context is built with the new values)
                ctx = self._build_context(base.model, values)
                with self._lock:
                    self._pending_ctx, self._pending_params = ctx, ", ".join(sorted(changes))
            if values["law"] == "elastic":
                self._subscribe_motor_states()
            elif self._motor_sub is not None:  # another law: the 500 Hz motor states would only cost the executor
                self.destroy_subscription(self._motor_sub)  # (the elastic law, until the next cycle adopts the new
                self._motor_sub = None                       # one, keeps the last motor state: fresh for a cycle)
        with self._lock:
            if "rate" in changes:
                self.rate = values["rate"]
                self.period = 1.0 / self.rate
                self._period_ns = round(self.period * 1e9)
                if getattr(self, "timer", None) is not None:  # loop: timer
                    self.timer.timer_period_ns = self._period_ns
            if "state_timeout" in changes:
                self.timeout = values["state_timeout"]
                self.max_time_step = max(1.0, 2.0 * self.timeout)
                if self.monitor is not None:
                    self.monitor.timeout = self.timeout
            if "state_publish_rate" in changes:
                r = values["state_publish_rate"]
                self.state_period = 1.0 / r if r > 0 else 0.0
            self.stale_behavior = values["stale_behavior"]
            self.max_points = values["max_trajectory_points"]
            self.start_tolerance = values["start_tolerance"]
            self.pose_margin = values["pose_limit_margin"]
        self.get_logger().info(f"parameters set: {changes}" + (" (applied at the next cycle)" if rebuild else ""))

    def _take_pending(self, now: float | None) -> None:
        """At a cycle boundary: adopt a new model, an accepted trajectory or pose reference (executor thread only)."""
        ctx = self._pending_ctx
        if ctx is not None:
            self._pending_ctx = None
            old = self.ctx
            self.ctx = ctx
            if self.monitor is None or old is None or old.model.joint_names != ctx.model.joint_names:
                self.monitor = StateMonitor(ctx.envelope, self.timeout)
            else:  # the same arm: the stream goes on, judged with the new margins
                self.monitor.envelope = ctx.envelope
            self.law = self.state_msg.law = ctx.law
            changed, self._pending_params = self._pending_params, None
            if self._modules_in_use is None:
                self._modules_in_use = set(sys.modules)
            if old is None or old.law != ctx.law:
                self.safe_hold = False  # another law holds from now on (the user's choice); new gains: the stand-in
            if changed is not None and old is not None and old.model.joint_names == ctx.model.joint_names:
                # new parameters or dynamic parameters (identified), same arm: the trajectory goes on
                ctx.controller.reset()
                self.get_logger().info(f"parameters in use: {changed} (law {ctx.law})")
                if old.model is not ctx.model:  # a swapped model: the state machine says so
                    self._transition(self.mode, f"{changed} in use; {self.mode_reason}"[:400])
                    self._publish_state(None)
                if ctx.joints != old.joints:
                    self._allocate_messages(ctx)
                if self.pose is not None and ctx.task_link != self.pose.link:  # a joint law or another link
                    self._hold_here(f"law {ctx.law}" + (f", task_link {ctx.task_link}" if ctx.task_link else "") +
                                    ": pose reference dropped, holding the current joint position")
                if self.mode == TRACKING:
                    self._publish_state(None)
                return self._take_pending_inputs(now)
            self._allocate_messages(ctx)
            self.trajectory = None
            self.pose = None
            self._end_goal(ABORTED, INVALID_GOAL, "a new robot model: trajectory dropped")
            if old is None or old.model.joint_names != ctx.model.joint_names:
                self.q = self.qd = self.hold = None
                self.state_wall = self.state_stamp = None
                self._transition(NO_STATE, f"robot model with {ctx.model.dof} joints; waiting for joint_states")
            else:
                self.hold = None if self.q is None else ctx.envelope.hold_target(self.q)
                ctx.controller.reset()
                self._transition(HOLDING, "new robot model: holding the current position")
        self._take_pending_inputs(now)

    def _take_pending_inputs(self, now: float | None) -> None:
        """A checked trajectory, then a checked pose reference (queued after it: a later trajectory clears it)."""
        self._take_pending_trajectory(now)
        self._take_pending_pose(now)

    def _take_pending_pose(self, now: float | None) -> None:
        """Adopt a pose reference checked by :meth:`check_pose`: it replaces the running trajectory (a goal is
        preempted) and is held by the task-space law."""
        pose, ctx = self._pending_pose, self.ctx
        if pose is None or ctx is None or now is None or self.q is None:
            return
        self._pending_pose = None
        if ctx.task_link != pose.link:  # the law or its link changed since the check
            self.refusals.refuse("pose_joint_space_law" if ctx.task_link is None else "pose_link_changed",
                                 f"pose reference of {pose.link} dropped: law {ctx.law}" +
                                 (f" controls {ctx.task_link}" if ctx.task_link else ""))
            return
        if self.goal is not None:
            self._end_goal(ABORTED, SUCCESSFUL, "preempted by a pose reference")
        self.trajectory = None
        self.pose = pose
        self.safe_hold = False
        self.hold = pose.q_ref
        if isinstance(ctx.controller, TaskSpaceLaw):
            ctx.controller.reset_posture()
        self._transition(HOLDING, f"pose reference: {pose.text}, held by {ctx.law}")

    def _take_pending_trajectory(self, now: float | None) -> None:
        pending = self._pending_traj
        if pending is not None and self.ctx is not None and now is not None and self.q is not None:
            self._pending_traj = None
            traj, t0, points, run = pending
            t0 = now if t0 is None else t0
            if t0 + traj.duration < now:
                text = f"trajectory ended {now - t0 - traj.duration:.3f} s before it was taken"
                self.refusals.refuse("old_stamp", text)
                if run is not None:
                    run.finish(ABORTED, OLD_HEADER_TIMESTAMP, text)
                return
            if self.goal is not None and self.goal is not run:  # JTC: the running goal is preempted
                self._end_goal(ABORTED, SUCCESSFUL, "preempted by a new " +
                               ("goal" if run is not None else "trajectory on ~/joint_trajectory"))
            if run is not None and run.status is not None:  # canceled meanwhile
                return
            self.goal = run
            self.trajectory, self.trajectory_t0 = traj, t0
            self.pose = None  # a joint trajectory takes over from a pose reference
            self.safe_hold = False
            start = "now" if t0 <= now else f"in {t0 - now:.3f} s"
            self._transition(TRACKING, f"trajectory of {points} points, {traj.duration:.3f} s (degree {traj.degree}), "
                                       f"starts {start}")

    def _allocate_messages(self, ctx: Context) -> None:
        """The command and state messages of ``ctx``'s joints, and NumPy views on their arrays (command
        order): a cycle fills them in place, no message or list is built per cycle."""
        n = ctx.model.dof
        zeros = [0.0] * n
        self.cmd_msg = Float64MultiArray(data=zeros)
        self._cmd_view = np.frombuffer(self.cmd_msg.data, dtype=np.float64)
        if self.loop_input:
            self._raw_cmd = cdr.Float64MultiArrayWriter(n)
        m = self.state_msg
        m.joint_names = list(ctx.joints)
        m.reference = JointTrajectoryPoint(positions=zeros, velocities=zeros, accelerations=zeros)
        m.feedback = JointTrajectoryPoint(positions=zeros, velocities=zeros)
        m.error = JointTrajectoryPoint(positions=zeros, velocities=zeros)
        self._effort = array.array("d", zeros)
        m.output = JointTrajectoryPoint(effort=self._effort)
        self._effort = m.output.effort  # the message's own array
        v = self._state_views = {}
        for key, pt, field in (("q_ref", m.reference, "positions"), ("qd_ref", m.reference, "velocities"),
                               ("qdd_ref", m.reference, "accelerations"), ("q", m.feedback, "positions"),
                               ("qd", m.feedback, "velocities"), ("e", m.error, "positions"),
                               ("ed", m.error, "velocities")):
            v[key] = np.frombuffer(getattr(pt, field), dtype=np.float64)
        v["tau"] = np.frombuffer(self._effort, dtype=np.float64)
        j = self.jtc_msg  # control_msgs' state shares the points (filled once for both)
        j.joint_names = list(ctx.joints)
        j.reference, j.feedback, j.error, j.output = m.reference, m.feedback, m.error, m.output
        self._zero = np.zeros(n)
        self._clipped = np.zeros(n)

    def _transition(self, mode: str, reason: str) -> None:
        """Enter ``mode`` (logged and published once per change)."""
        if mode == self.mode and reason == self.mode_reason:
            return
        changed = mode != self.mode
        self.mode, self.mode_reason = mode, reason
        # one call site per severity: rclpy refuses a call site whose severity changes
        if mode == STALE:
            self.get_logger().warning(f"mode {mode}: {reason}")
        else:
            self.get_logger().info(f"mode {mode}: {reason}")
        if changed or mode == TRACKING:
            self._publish_state(None)

    # ------------------------------------------------------------ inputs
    @guarded()
    def on_joint_states(self, msg: JointState) -> None:
        ctx = self.ctx
        if ctx is None:
            with self._lock:
                self._take_pending(None)
            ctx = self.ctx
            if ctx is None:
                return
        q, qd, stamp = validation.joint_state(msg, ctx.index)
        now_clock = self.now()
        if self.trigger == "state":
            # lockstep: the stamp is the control time (0 is a valid sim time)
            if self.state_stamp is not None and stamp == self.state_stamp and self._last_answer is not None:
                self.cmd_pub.publish(self._last_answer[1])  # the same answer again, never a second law cycle
                return
            with self._lock:
                if self.state_stamp is not None and not 0.0 <= stamp - self.state_stamp <= self.max_time_step:
                    self.monitor.reset()  # a restarted simulation: its first state is trusted (_accept_state holds)
                self.monitor.judge(q, qd, stamp, stamp)  # the stamp is the control time
                self._accept_state(q, qd, stamp)
                self.step()
            return
        self._state_arrived(q, qd, stamp, now_clock)

    def _state_arrived(self, q: np.ndarray, qd: np.ndarray, stamp: float, now_clock: float | None = None) -> None:
        """A valid timer-triggered state judged by the safety envelope's :class:`StateMonitor` (stamps against the
        clock, order, impossible values, jumps, two sources disagreeing), then accepted (or ``Refused``)."""
        if now_clock is None:
            now_clock = self.control_time()
        with self._lock:
            if self._clock_jumped(now_clock):  # the clock went back: the stream starts anew (step holds)
                self.monitor.reset()
            stamp = self.monitor.judge(q, qd, stamp, now_clock)
            self._accept_state(q, qd, stamp)

    def _accept_state(self, q: np.ndarray, qd: np.ndarray, stamp: float) -> None:
        self.q, self.qd = q, qd
        if self.trigger == "state" and self.state_stamp is not None:
            jump = stamp - self.state_stamp
            if jump < 0 or jump > self.max_time_step:
                self._hold_here(f"state stamps jumped by {jump:+.3f} s (restart?)")
        self.state_stamp = stamp
        self.state_wall = time.monotonic()
        if self.hold is None:
            self.hold = self.ctx.envelope.hold_target(q)  # never outside the limits

    def _clock_jumped(self, now: float) -> bool:
        return self.last_now is not None and now < self.last_now

    @guarded()
    def on_trajectory(self, raw: bytes) -> None:
        """Executor thread: a size check on the serialized bytes, then hand over to the worker."""
        if len(raw) > self.max_points * MAX_BYTES_PER_POINT:
            raise Refused("too_large", f"trajectory message of {len(raw)} bytes (max_trajectory_points "
                                       f"{self.max_points})")
        self.trajectory_worker.put(raw)

    @guarded()
    def check_trajectory(self, raw: bytes) -> None:
        """Worker: deserialize, validate the whole interpolated path; the control cycle adopts the result."""
        ctx = self.ctx or self._pending_ctx
        if ctx is None and self.model_worker.busy():  # the model is being built: wait for it (worker thread)
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.ctx or self._pending_ctx
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
        self._queue_trajectory((traj, stamp, len(msg.points), None))

    @guarded()
    def on_pose_reference(self, raw: bytes) -> None:
        """Executor thread: a pose reference validated (message, frame, stamp, law), then handed to the worker that
        solves its inverse kinematics (:meth:`check_pose`)."""
        if len(raw) > MAX_POSE_BYTES:
            raise Refused("too_large", f"pose reference message of {len(raw)} bytes")
        ctx = self._pending_ctx or self.ctx
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
            if age > self.timeout:
                raise Refused("pose_stale_stamp", f"pose reference stamped {age:.3f} s in the past (state_timeout "
                                                  f"{self.timeout} s)")
            if age < -self.timeout:
                raise Refused("pose_future_stamp", f"pose reference stamped {-age:.3f} s in the future (state_timeout "
                                                   f"{self.timeout} s)")
        self.pose_worker.put((pose, self.trajectories_accepted))

    @guarded()
    def check_pose(self, item: tuple[np.ndarray, int]) -> None:
        """Worker: the pose's inverse kinematics from the current position (002 eqs 6.16-6.17, no random restart);
        queued for the next cycle when it converges with every joint ``pose_limit_margin`` inside its limits."""
        pose, trajectories = item
        ctx = self._pending_ctx or self.ctx
        if ctx is None or ctx.task_link is None:
            raise Refused("pose_joint_space_law", "pose reference: the law is no longer a task-space law")
        q = self.q
        if q is None:
            raise Refused("pose_no_state", f"pose reference before a valid joint state (mode {self.mode})")
        q = q.copy()
        names, margin, link = ctx.model.joint_names, self.pose_margin, ctx.task_link
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
        with self._lock:
            if self.trajectories_accepted != trajectories:
                self.get_logger().info(f"pose reference ({text}) superseded by a trajectory that came meanwhile")
                return
            self.get_logger().info(f"pose reference accepted: {text}; inverse kinematics in "
                                   f"{(time.monotonic() - t0) * 1e3:.1f} ms, q = {np.round(q_ref, 4).tolist()}")
            self._pending_pose = PoseHold(pose=pose, q_ref=q_ref, link=link, text=text)
            self.poses_accepted += 1

    def _checked_trajectory(self, msg: JointTrajectory, ctx: Context) -> tuple[SampledTrajectory, float | None]:
        """The trajectory of ``msg`` with its start time (None: now) once its whole interpolated path is within
        the limits (``Refused`` with the cause otherwise); worker or action thread."""
        data = validation.trajectory(msg, ctx.model.joint_names, self.max_points)
        q = self.q
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

    def _queue_trajectory(self, entry: tuple[SampledTrajectory, float | None, int, GoalRun | None]) -> None:
        """Queue a checked trajectory for the next cycle; a goal still queued is superseded (aborted, as preempted)."""
        with self._lock:
            old = self._pending_traj
            run = entry[3]
            if run is not None and run.older_than(old[3] if old is not None else None, self.goal):
                # a goal accepted after this one is queued or running already: this one never runs (JTC's order)
                run.finish(ABORTED, SUCCESSFUL, "preempted by a newer goal before it started")
                return
            self._pending_traj = entry
            self._pending_pose = None  # a pose reference not adopted yet is superseded
            self.trajectories_accepted += 1  # checked and queued: the next cycle adopts it
        if old is not None and old[3] is not None:
            old[3].finish(ABORTED, SUCCESSFUL, "preempted by a newer " +
                          ("goal" if entry[3] is not None else "trajectory on ~/joint_trajectory") + " before it started")

    def on_set_dynamic_parameters(self, request: SetDynamicParameters.Request,
                                  response: SetDynamicParameters.Response) -> SetDynamicParameters.Response:
        """Side thread: identified parameters swapped into the running controller without a restart.  The new model
        and control context are built here (the loop keeps commanding with the old ones), adopted at a cycle boundary
        keeping the running trajectory (law state reset), and the answer comes once the loop uses them."""
        try:
            base = self._pending_ctx or self.ctx
            if base is None:
                raise ValueError("no robot model yet (robot_description not received)")
            model = updated_model(base.model, list(request.names), np.asarray(request.values, dtype=float))
            ctx = self._build_context(model)
        except Exception as exc:  # noqa: BLE001 - a bad request is answered, the controller keeps its model
            response.success, response.message = False, f"{type(exc).__name__}: {exc}"
            self.refusals.refuse("bad_dynamic_parameters", f"~/set_dynamic_parameters: {response.message}")
            return response
        source = request.source or "a client"
        with self._lock:
            self._pending_ctx, self._pending_params = ctx, f"dynamic parameters from {source}"
        end = time.monotonic() + 2.0
        while self.ctx is not ctx and time.monotonic() < end:
            time.sleep(0.005)
        response.success = True
        response.message = (f"{len(request.names)} dynamic parameters from {source} " +
                            ("in use" if self.ctx is ctx else "adopted at the next cycle (the loop is not running)"))
        return response

    # ------------------------------------------------------------ action
    def prepare_goal(self, handle) -> GoalRun:
        """Action thread: the goal's trajectory checked like the topic's, its tolerances; ``GoalError`` (code and
        reason) when it cannot run."""
        goal = handle.request
        ctx = self.ctx or self._pending_ctx
        if ctx is None and self.model_worker.busy():
            self._ctx_ready.wait(MODEL_BUILD_WAIT)
            ctx = self.ctx or self._pending_ctx
        if ctx is None:
            raise GoalError(INVALID_GOAL, "no robot model yet (robot_description not received)")
        end = time.monotonic() + STATE_WAIT
        while self.q is None and time.monotonic() < end:  # a goal right after start-up: the first state is near
            time.sleep(0.01)
        if self.q is None:
            raise GoalError(INVALID_GOAL, f"no valid joint state yet (mode {self.mode}: {self.mode_reason})")
        if len(goal.trajectory.points) > self.max_points:
            raise GoalError(INVALID_GOAL, f"trajectory with {len(goal.trajectory.points)} points exceeds "
                                          f"max_trajectory_points={self.max_points}")
        names = ctx.model.joint_names
        values = self.params.values
        defaults = {
            "trajectory": [values.get(f"constraints.{j}.trajectory", 0.0) for j in names],
            "goal": [values.get(f"constraints.{j}.goal", 0.0) for j in names],
            "stopped_velocity_tolerance": values["constraints.stopped_velocity_tolerance"],
            "goal_time": values["constraints.goal_time"],
        }
        tol = tolerances(goal, names, defaults)
        trajectory = goal.trajectory
        if values["allow_partial_joints_goal"]:
            trajectory = _completed(trajectory, names, self.q)
        try:
            traj, stamp = self._checked_trajectory(trajectory, ctx)
        except Refused as exc:
            self.refusals.refuse(exc.cause, f"goal: {exc}")
            raise GoalError(INVALID_JOINTS if exc.cause in JOINT_CAUSES else INVALID_GOAL, f"{exc.cause}: {exc}") \
                from None
        if stamp is not None:
            late = self.control_time() - (stamp + traj.duration)
            if late > 0:
                raise GoalError(OLD_HEADER_TIMESTAMP, f"the trajectory stamped {stamp:.3f} s ended {late:.3f} s ago")
        run = GoalRun(handle, tol, points=len(goal.trajectory.points))
        run.checks_path = tol.checks_path
        run.trajectory, run.stamp = traj, stamp
        return run

    def submit_goal(self, run: GoalRun) -> None:
        """Action thread: hand the goal's trajectory to the next cycle (it preempts a running goal then)."""
        self._queue_trajectory((run.trajectory, run.stamp, run.points, run))

    def cancel_goal(self, run: GoalRun) -> None:
        """Action thread: a cancel request; the arm holds where it is (a goal still queued is dropped)."""
        with self._lock:
            pending = self._pending_traj
            if pending is not None and pending[3] is run:
                self._pending_traj = None
                run.finish(CANCELED, SUCCESSFUL, "canceled before it started")
            elif self.goal is run:
                self._end_goal(CANCELED, SUCCESSFUL, "canceled: holding the current position")
                self._hold_here("goal canceled: holding the current position")
            else:
                run.finish(CANCELED, SUCCESSFUL, "canceled")

    def goal_feedback(self, run: GoalRun):
        """Action thread: desired, actual and error of the last ``~/controller_state`` (controller joint order)."""
        with self._lock:
            if self.goal is not run or self.ctx is None:
                return None
            m = self.jtc_msg
            fb = FollowJointTrajectory.Feedback(joint_names=list(m.joint_names))
            # copies: the loop fills the state message's arrays in place
            fb.header.stamp.sec, fb.header.stamp.nanosec = m.header.stamp.sec, m.header.stamp.nanosec
            ref, act, err = m.reference, m.feedback, m.error
            fb.desired = JointTrajectoryPoint(positions=ref.positions.tolist(), velocities=ref.velocities.tolist(),
                                              accelerations=ref.accelerations.tolist())
            fb.actual = JointTrajectoryPoint(positions=act.positions.tolist(), velocities=act.velocities.tolist())
            fb.error = JointTrajectoryPoint(positions=err.positions.tolist(), velocities=err.velocities.tolist())
            t = self.control_time() - self.trajectory_t0
            times = self.trajectory.times if self.trajectory is not None else None
        fb.index = int(np.searchsorted(times, t, side="right")) - 1 if times is not None else run.points - 1
        return fb

    def _end_goal(self, status: str, code: int, text: str) -> None:
        """The running goal's outcome (under the lock); the action's thread sends the result."""
        goal, self.goal = self.goal, None
        if goal is not None:
            goal.finish(status, code, text)

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        summary = self.stats.summary(self.period)
        if self.trigger == "state":  # lockstep: cycles follow the states, there is no period to miss
            summary.pop("missed_cycles", None)
            summary.pop("missed_pct", None)
        summary.update(mode=self.mode, mode_reason=self.mode_reason, refused=dict(self.refusals.counts),
                       limit_guard_cycles=self.guarded_cycles,
                       law=self.law, poses_accepted=self.poses_accepted,
                       nominal_rate_hz=self.rate, loop=self.loop if self.trigger == "timer" else "state",
                       executor=self.executor_kind, state_input="loop" if self.loop_input else "executor",
                       scheduling=self.scheduling, executor_scheduling=self.executor_scheduling,
                       imported_while_running=self.imported_while_running())
        response.success = True
        response.message = json.dumps(summary)
        return response

    def imported_while_running(self) -> list[str]:
        """The modules imported since the first model came into use (each import held the GIL from the loop),
        but a new model's compiled programs (a dlopen of ~1 ms, what a swap needs)."""
        start = self._modules_in_use
        return [] if start is None else sorted(m for m in set(sys.modules) - start
                                               if not m.startswith(PROGRAM_MODULE_PREFIX))

    # --------------------------------------------------------- diagnostics
    def _robot_name(self) -> str:
        ctx = self.ctx
        return ctx.model.name if ctx is not None else ""

    def _diagnostics(self, dt: float) -> Report:
        """``/diagnostics`` (executor thread, every ``diagnostic_period``): the loop figures of the cycles since
        the previous report (a slice of the ring, not the whole ``statistics_window``), the state machine,
        saturation and input counters.  OK: holding/tracking, missed < 1 %; WARN: missed >= 1 %, saturated,
        no_model/no_state; ERROR: stale, or no control cycle in the period while holding/tracking."""
        got = self._lock.acquire(timeout=0.01)  # mode and reason as one pair (the loop holds it for a cycle)
        try:
            mode, reason, ctx = self.mode, self.mode_reason, self.ctx
        finally:
            if got:
                self._lock.release()
        s = self.stats.recent(self.period, self._diag_k)
        cpu = time.process_time()
        new = s["window_cycles"]
        cpu_per_cycle = (cpu - self._diag_cpu) / new * 1e6 if new else 0.0
        self._diag_k, self._diag_cpu = s["cycles"], cpu
        lockstep_mode = self.trigger == "state"  # cycles follow the states: no period to miss
        sat = None if ctx is None else ctx.controller.saturated
        saturated = [] if sat is None or not sat.any() else [ctx.model.joint_names[int(j)] for j in np.flatnonzero(sat)]
        rate = s.get("rate_hz", 0.0) if new else 0.0
        values: dict[str, object] = {
            "mode": mode, "mode_reason": reason,
            "rate_hz": rate, "nominal_rate_hz": self.rate,
            "period_error_p50_ms": s.get("period_error_p50_ms", 0.0),
            "period_error_p99_ms": s.get("period_error_p99_ms", 0.0),
            "period_error_max_ms": s.get("period_error_max_ms", 0.0),
        }
        if not lockstep_mode:
            values.update(missed_cycles=s.get("missed_cycles", 0), missed_pct=s.get("missed_pct", 0.0))
        values.update({
            "cycles": s["cycles"], "window_cycles": new, "window_s": dt,
            "cycle_us": s.get("cycle_us", 0.0), "process_cpu_per_cycle_us": cpu_per_cycle,
            "saturated_joints": saturated, "saturated_count": len(saturated),
            "inputs_refused": self.refusals.total(), "trajectories_accepted": self.trajectories_accepted,
            "poses_accepted": self.poses_accepted,
            "loop": self.loop if self.trigger == "timer" else "state", "executor": self.executor_kind,
            "scheduling": self.scheduling,
        })
        values.update({f"refused.{cause}": n for cause, n in sorted(self.refusals.counts.items())})
        if mode == STALE:
            return Report(ERROR, f"stale: {reason}", values)
        if mode in (NO_MODEL, NO_STATE):
            return Report(WARN, f"{mode}: {reason}", values)
        if not new and not lockstep_mode:
            return Report(ERROR, f"{mode}, but no control cycle for {dt:.2f} s", values)
        level, problems = OK, []
        missed = float(values.get("missed_pct", 0.0))
        if missed >= 1.0:
            level = WARN
            problems.append(f"missed {missed:.1f} % of cycles")
        if saturated:
            level = WARN
            problems.append(f"saturated: {', '.join(saturated)}")
        line = f"{mode} at {rate:.0f} Hz (nominal {self.rate:.0f}), period error p99 " \
               f"{values['period_error_p99_ms']:.3f} ms"
        return Report(level, "; ".join([line, *problems]), values)

    # ------------------------------------------------------------- control
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def control_time(self) -> float:
        """Time of the control law: the state's stamp when triggered by states, else the node clock."""
        if self.trigger == "state" and self.state_stamp is not None:
            return self.state_stamp
        if self.loop_input:  # what the node clock says, without building rclpy Time objects
            return (self._sim_ns if self._sim_time else time.time_ns()) * 1e-9
        return self.now()

    def _hold_here(self, reason: str) -> None:
        """Drop the running trajectory (or pose reference) and hold the measured position (law state reset).  A
        trajectory checked but not yet adopted stays queued: its start is judged on the new time base."""
        self.trajectory = None
        self.pose = None
        self.safe_hold = False
        self._end_goal(ABORTED, INVALID_GOAL, f"trajectory dropped: {reason}")
        if self.q is not None:
            self.hold = self.ctx.envelope.hold_target(self.q) if self.ctx is not None else self.q.copy()
        if self.ctx is not None:
            self.ctx.controller.reset()
        self._transition(HOLDING, reason)

    def step(self) -> None:
        """One control cycle (timer, loop thread or lockstep state); its phases are timed for ``~/statistics``."""
        start = time.perf_counter_ns()  # the period is measured on the steady clock
        clock = time.thread_time_ns    # the phases in CPU time of this thread (preemption not counted)
        t0 = clock()
        with self._lock:
            if self.loop_input:
                self._take_inputs()
            now = self.control_time()
            if self._pending_ctx is not None or self._pending_traj is not None or self._pending_pose is not None:
                self._take_pending(now)
            ctx = self.ctx
            if ctx is None or self.q is None or self._is_stale():
                return
            if self.last_now is not None and self.trigger == "timer":
                dt = now - self.last_now
                if dt < 0 or dt > self.max_time_step:
                    self._hold_here(f"control time jumped by {dt:+.3f} s")
                    # the last state may predate the jump (the loop thread can see the new clock before the
                    # first state of the new time base): hold where the FIRST state after the jump puts the
                    # arm, and accept it whatever its stamp relative to the old time base
                    self.q = None
                    self.hold = None
                    self.state_stamp = None
                    self.monitor.reset()
                    self.last_now = now
                    return
            self.last_now = now
            t1 = clock()
            traj = self.trajectory
            goal = self.goal
            if traj is not None:
                tt = now - self.trajectory_t0
                q_ref, qd_ref, qdd_ref = traj.at(tt)
                text = None
                if goal is not None and goal.checks_path and tt >= 0.0:
                    text = goal.path_violation(ctx.model.joint_names, q_ref, qd_ref, self.q, self.qd)
                if text is not None:  # JTC: abort the goal, hold where the arm is
                    self._end_goal(ABORTED, PATH_TOLERANCE_VIOLATED, text)
                    self._hold_here(f"goal aborted ({text}): holding the current position")
                    q_ref, qd_ref, qdd_ref = self.hold, self._zero, self._zero
                elif tt > traj.duration:
                    self.hold = ctx.envelope.hold_target(q_ref)
                    self.trajectory = None
                    if goal is not None:
                        goal.end_time = self.trajectory_t0 + traj.duration
                    self._transition(HOLDING, "trajectory finished: holding its last point")
            elif self.pose is not None:
                why = pose_guard(self.q, self.qd, ctx.lower, ctx.upper, ctx.velocity, self.pose_margin,
                                 ctx.model.joint_names)
                if why is not None:
                    self.get_logger().warning(f"pose reference dropped: {why}")
                    # held by joint-space computed torque: the task-space law may be the cause (gains beyond what
                    # the loop's latency tolerates make task_space_pid vibrate), it must not hold the arm then
                    self._hold_here(f"pose reference dropped ({why}): holding the current joint position with "
                                    "computed_torque")
                    self.safe_hold = ctx.hold_controller is not None
                q_ref, qd_ref, qdd_ref = self.hold, self._zero, self._zero
            else:
                q_ref, qd_ref, qdd_ref = self.hold, self._zero, self._zero
                if self.mode != HOLDING:
                    self._transition(HOLDING, "joint state received: holding the current position")
            if goal is not None and self.trajectory is None and self.goal is goal:  # after the last point
                outcome = goal.goal_state(ctx.model.joint_names, self.hold, self.q, self.qd, now)
                if outcome is not None:
                    self._end_goal(*outcome)
            t2 = clock()
            tau = self._law(ctx, now, q_ref, qd_ref, qdd_ref, None if self.trajectory is not None else self.pose)
            t3 = clock()
            if tau is None:  # the law failed: gravity hold (saturated), if finite
                tau = self._holding_torque()
                if not np.isfinite(tau).all():
                    self.refusals.refuse("non_finite_output", "a non-finite effort was computed: not sent")
                    return
            if ctx.guard is not None:  # the arm stays inside its position and velocity limits, whatever the law
                age = time.monotonic() - self.state_wall  # (steady clock, as staleness): set, not stale here
                guarded = ctx.guard.apply(tau, self.q, self.qd, ctx.model.forward_dynamics, ctx.model.inverse_dynamics,
                                          age)
                if guarded is not tau:
                    self.guarded_cycles += 1
                    tau = guarded
            answer = self._publish_cycle(ctx, tau, stamp=self.state_stamp if self.trigger == "state" else None)
            if self.trigger == "state":
                self._last_answer = (self.state_stamp, answer)
            t4 = clock()
            self.cycle += 1
            if self.divider:
                due = self.cycle % self.divider == 0
            else:
                due = now >= self.next_state_time
                if due:  # on the grid of the rate; a jump or a stall restarts it from now
                    nxt = self.next_state_time + self.state_period
                    self.next_state_time = nxt if now < nxt < now + self.state_period else now + self.state_period
            if due:
                self._publish_cycle_state(ctx, now, q_ref, qd_ref, qdd_ref, tau)
            t5 = clock()
            self.stats.tick(start, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t1 - t0)

    def _law(self, ctx: Context, now: float, q_ref: np.ndarray, qd_ref: np.ndarray,
             qdd_ref: np.ndarray, pose: PoseHold | None = None) -> np.ndarray | None:
        """The law's torque, saturated; None if it failed (refusal counted).  The state and reference were
        validated on arrival (:mod:`.validation`, :func:`check_path_limits`), so a law with the base class's
        ``compute`` is called past its input checks (the output check and saturation stay).  With a ``pose``
        reference, the task-space law's ``compute_task`` (zero twist and acceleration)."""
        c = ctx.hold_controller if self.safe_hold and ctx.hold_controller is not None else ctx.controller
        try:
            if getattr(c, "needs_motor_state", False):  # law elastic: the motors' state, fresh
                ms = self.motor_state
                if ms is None:
                    raise ValueError(f"no motor state on {self._motor_topic} yet: holding gravity")
                if abs(now - ms[0]) > self.timeout:
                    raise ValueError(f"motor state stamped {now - ms[0]:.3f} s from the control time (state_timeout "
                                     f"{self.timeout} s): holding gravity")
                c.set_motor_state(ms[1], ms[2])
            if pose is not None:
                return c.compute_task(now, self.q, self.qd, pose.pose)
            if type(c).compute is not JointController.compute:
                return c.compute(now, self.q, self.qd, q_ref, qd_ref, qdd_ref)
            return c.compute_validated(now, self.q, self.qd, q_ref, qd_ref, qdd_ref)
        except ValueError as exc:
            self.refusals.refuse("law_failed", f"control law failed: {exc}")
            return None

    def _publish_cycle(self, ctx: Context, tau: np.ndarray, *, stamp: float | None) -> Float64MultiArray | None:
        """Publish the cycle's ``tau`` (model order, finite, saturated by the law) in the preallocated message
        (lockstep: labelled with ``stamp``, returned), or serialized in place when the loop takes its inputs."""
        raw = self._raw_cmd
        # the last guard: within the limits in use, never above the description's (the law saturates already)
        tau = ctx.envelope.clip_effort(tau, ctx.effort, out=self._clipped)
        if ctx.to_motor is not None:  # motor torques (001 eq. 7.33)
            tau = ctx.to_motor @ tau
        if raw is not None and stamp is None:  # serialized in place: no message conversion
            np.take(tau, ctx.to_cmd, out=raw.data)
            self.cmd_pub.publish(raw.bytes())
            return None
        msg = self.cmd_msg
        np.take(tau, ctx.to_cmd, out=self._cmd_view)
        if stamp is not None:
            dims = msg.layout.dim
            label = f"{lockstep.PREFIX}{round(stamp * 1e9)}"
            if dims:
                dims[0].label = label
            else:
                lockstep.label_answer(msg, round(stamp * 1e9))
        self.cmd_pub.publish(msg)
        return msg

    def _publish_cycle_state(self, ctx: Context, now: float, q_ref: np.ndarray, qd_ref: np.ndarray,
                             qdd_ref: np.ndarray, tau: np.ndarray) -> None:
        """``~/controller_state`` of a cycle, filled in place (command order)."""
        m = self.state_msg
        v = self._state_views
        o = ctx.to_cmd
        self.mode_wall = time.monotonic()
        ns = round(now * 1e9)
        m.header.stamp.sec, m.header.stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        m.mode, m.mode_reason = self.mode, self.mode_reason
        m.stale_state = False
        m.trajectories_accepted = self.trajectories_accepted
        m.inputs_refused = min(self.refusals.total(), 2**32 - 1)
        np.take(q_ref, o, out=v["q_ref"])
        np.take(qd_ref, o, out=v["qd_ref"])
        np.take(qdd_ref, o, out=v["qdd_ref"])
        np.take(self.q, o, out=v["q"])
        np.take(self.qd, o, out=v["qd"])
        np.subtract(v["q_ref"], v["q"], out=v["e"])
        np.subtract(v["qd_ref"], v["qd"], out=v["ed"])
        np.take(tau, o, out=v["tau"])
        m.saturated = bool(ctx.controller.saturated.any())
        self.state_pub.publish(m)
        j = self.jtc_msg
        j.header.stamp.sec, j.header.stamp.nanosec = m.header.stamp.sec, m.header.stamp.nanosec
        self.jtc_pub.publish(j)

    def _is_stale(self) -> bool:
        """True when the last state is older than ``state_timeout`` (steady clock); logs transitions."""
        stale = self.state_wall is None or time.monotonic() - self.state_wall > self.timeout
        if stale and self.mode != STALE and self.state_wall is not None:
            latest = self.refusals.latest
            why = f" (last refused: {latest[0]}: {latest[1][:300]})" if latest is not None else ""
            self._end_goal(ABORTED, INVALID_GOAL, f"no valid joint state for more than {self.timeout} s{why}")
            self._transition(STALE, f"no valid joint state for more than {self.timeout} s: " + (
                "holding gravity" if self.stale_behavior == "gravity_hold" else "publishing nothing") + why)
        elif not stale and self.mode == STALE:
            if self.trigger == "timer":  # time went on without us: never resume a trajectory mid-way
                self._hold_here("joint state back: trajectory dropped, holding the current position")
                self.last_now = None
            else:  # the control time is the state stamp: stamp jumps are judged in _accept_state
                self._transition(TRACKING if self.trajectory is not None else HOLDING, "joint state back")
        return stale

    def watchdog(self) -> None:
        """Steady-clock watchdog: the safe output on stale states, and the mode published while idle."""
        with self._lock:
            self._watchdog()

    def _watchdog(self) -> None:
        self._take_pending(None)
        if self.ctx is None or self.q is None:
            if time.monotonic() - self.mode_wall > 1.0:
                self._publish_state(None)
            return
        if not self._is_stale():
            return
        if self.stale_behavior == "gravity_hold":
            self._publish(self._holding_torque(), hold=True)
        self._publish_state(None)

    def _holding_torque(self) -> np.ndarray:
        ctx = self.ctx
        zero = np.zeros(ctx.model.dof)
        # Q(q) through the law's own (already compiled) Newton–Euler: nothing to build at shutdown
        gravity = np.asarray(ctx.controller.inverse_dynamics(self.q, zero, zero), dtype=float)
        return np.clip(gravity, -ctx.effort, ctx.effort)  # (a non-finite one is refused when published)

    def _publish(self, tau: np.ndarray, *, hold: bool = False) -> Float64MultiArray | None:
        """Publish ``tau`` (model order) if finite, clipped to the effort limits, in a new message (the safety
        path: stale hold, shutdown); returns the message."""
        ctx = self.ctx
        try:
            tau = ctx.envelope.clip_effort(tau, ctx.effort)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
            return None
        if ctx.to_motor is not None:  # motor torques (001 eq. 7.33)
            tau = ctx.to_motor @ tau
        msg = Float64MultiArray(data=tau[ctx.to_cmd].tolist())
        if hold:
            lockstep.label_hold(msg)
        self.cmd_pub.publish(msg)
        return msg

    def _publish_state(self, now: float | None) -> None:
        """A mode notice on ``~/controller_state`` (no ``output.effort``): transitions and the idle watchdog."""
        m = ControllerState(law=self.law)
        self.mode_wall = time.monotonic()
        m.header.stamp = Time(nanoseconds=round((self.control_time() if now is None else now) * 1e9)).to_msg()
        m.mode, m.mode_reason = self.mode, self.mode_reason
        m.stale_state = self.mode == STALE
        m.trajectories_accepted = self.trajectories_accepted
        m.inputs_refused = min(self.refusals.total(), 2**32 - 1)
        ctx = self.ctx
        if ctx is not None:
            m.joint_names = list(ctx.joints)
            if self.q is not None and self.hold is not None:
                o = ctx.to_cmd
                zero = [0.0] * ctx.model.dof
                m.reference = JointTrajectoryPoint(positions=self.hold[o].tolist(), velocities=zero, accelerations=zero)
                m.feedback = JointTrajectoryPoint(positions=self.q[o].tolist(), velocities=self.qd[o].tolist())
                m.error = JointTrajectoryPoint(positions=(self.hold - self.q)[o].tolist(),
                                               velocities=(-self.qd)[o].tolist())
        self.state_pub.publish(m)

    def on_shutdown(self) -> None:
        """Last holding command: gravity torques at the last measured position (the loop stopped first)."""
        self._stop_loop.set()
        if self._loop_thread is not None and self._loop_thread.is_alive():
            self._loop_thread.join(timeout=1.0)
        self.goal = None
        self.action.close("the controller is shutting down: holding the last position")
        self.trajectory_worker.stop()
        self.model_worker.stop()
        self.pose_worker.stop()
        if self.ctx is not None and self.q is not None:
            self._publish(self._holding_torque(), hold=True)
            self.get_logger().info("sent the holding command")
        if self._input_node is not None:
            self._input_node.destroy_node()
            self._input_node = None


def _never_called(msg: object) -> None:
    """Callback of the loop's input subscriptions: no executor spins their node (the loop takes them)."""


def main(args: list[str] | None = None) -> int:
    return run_node(ComputedTorqueControllerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
