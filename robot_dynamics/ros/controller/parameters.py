"""The computed-torque controller's parameters as data: the node-wide schema (types, defaults, ranges, units,
live or read-only, descriptions) and the per-joint parameters in JTC's names (``gains.<joint>.*``,
``constraints.<joint>.*``).  The node declares, validates and documents from them (docs/ros2_interface.md's tables
are generated from them: ``tools/parameter_tables.py``)."""

from __future__ import annotations

from ...control import CONTROLLERS, TASK_SPACE_CONTROLLERS
from ...control.task_space import NULL_SPACE_LAWS
from ...safety import JUMP_MARGIN, POSITION_MARGIN, VELOCITY_MARGIN
from ..parameters import Param, Schema

LAWS = tuple(CONTROLLERS) + tuple(c for c in TASK_SPACE_CONTROLLERS if c not in CONTROLLERS) + ("elastic",)


TASK_SPACE_LAWS = ("task_space", *TASK_SPACE_CONTROLLERS)  # the laws that take a pose reference


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
