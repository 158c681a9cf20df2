"""Node ``mujoco_sim``: a MuJoCo-simulated arm with the topic interface of ros2_control.

* publishes ``/joint_states`` (``sensor_msgs/JointState``, reliable, depth 10, like
  joint_state_broadcaster: name, position, velocity, effort) and ``/clock`` (sim time);
* takes efforts from ``/<effort_controller>/commands`` (``std_msgs/Float64MultiArray``,
  ``joints`` order, like ForwardCommandController: a message with a non-finite value is
  dropped, a length mismatch is an error);
* ``lockstep: true`` advances exactly one ``control_period`` per command, so closed-loop
  runs are deterministic under load (time does not start before the first command; if
  commands stop for ``lockstep_timeout`` wall seconds, it advances with the last command);
  ``lockstep: false`` runs in real time (``real_time_factor``) with a zero-order hold;
* serves ``~/pause`` (``std_srvs/SetBool``): stop stepping and publishing (to test stale states).
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool

from ..robot_model import RobotModel
from ..simulator import MujocoArm, perturbed
from .description import RobotDescription
from .runtime import run_node


class MujocoSim(Node):
    def __init__(self) -> None:
        super().__init__("mujoco_sim")
        dp = self.declare_parameter
        dp("control_period", 0.002)
        dp("timestep", 0.001)
        dp("lockstep", False)
        dp("lockstep_timeout", 0.5)
        dp("real_time_factor", 1.0)
        dp("effort_controller", "effort_controller")
        dp("joints", [""])
        dp("initial_positions", [0.0])
        dp("model_error", 0.0)
        dp("noise_q", 0.0)
        dp("seed", 0)
        dp("publish_clock", True)
        self.period = float(self.get_parameter("control_period").value)
        self.timestep = float(self.get_parameter("timestep").value)
        self.substeps = max(1, round(self.period / self.timestep))
        if abs(self.substeps * self.timestep - self.period) > 1e-12:
            raise ValueError("control_period must be a multiple of timestep")
        self.lockstep = bool(self.get_parameter("lockstep").value)
        self.paused = False
        self.arm: MujocoArm | None = None
        self.command: np.ndarray | None = None
        self.started = False
        self.last_command_wall = time.monotonic()
        self.steps = 0
        self.state_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.get_parameter("publish_clock").value else None
        topic = f"/{self.get_parameter('effort_controller').value}/commands"
        self.create_subscription(Float64MultiArray, topic, self.on_command, 10)
        self.create_service(SetBool, "~/pause", self.on_pause)
        self.description = RobotDescription(self, self._on_model)
        rtf = float(self.get_parameter("real_time_factor").value)
        wall_period = self.period / rtf if not self.lockstep else 0.1
        # the sim's own timers run on the wall clock; it is the source of /clock
        self.timer = self.create_timer(wall_period, self.on_timer)
        self.get_logger().info(
            f"{'lockstep' if self.lockstep else 'real time'}: control period {self.period * 1e3:.1f} ms, "
            f"{self.substeps} x {self.timestep * 1e3:.2f} ms steps; commands on {topic}"
        )

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        joints = [j for j in self.get_parameter("joints").value if j] or model.joint_names
        if sorted(joints) != sorted(model.joint_names):
            self.get_logger().error(f"joints {joints} do not match the model {model.joint_names}")
            return
        err = float(self.get_parameter("model_error").value)
        plant = perturbed(model, err, int(self.get_parameter("seed").value)) if err > 0 else model
        self.arm = MujocoArm(
            plant, timestep=self.timestep, noise_q=float(self.get_parameter("noise_q").value),
            rng=int(self.get_parameter("seed").value),
        )
        q0 = np.array([v for v in self.get_parameter("initial_positions").value], float)
        q0 = q0 if q0.size == model.dof else np.zeros(model.dof)
        self.arm.reset(q0)
        self.model = model
        self.joints = joints
        self.cmd_to_model = np.array([joints.index(j) for j in model.joint_names])
        self.command = np.zeros(model.dof)
        self.msg = JointState(name=list(model.joint_names))
        self.publish_state()

    def on_command(self, msg: Float64MultiArray) -> None:
        if self.arm is None:
            return
        data = np.asarray(msg.data, float)
        if data.size != self.model.dof:
            self.get_logger().error(f"command of length {data.size}, expected {self.model.dof}: dropped")
            return
        if not np.all(np.isfinite(data)):
            self.get_logger().warn("command with a non-finite value: dropped", throttle_duration_sec=2.0)
            return
        self.command = data[self.cmd_to_model]
        self.last_command_wall = time.monotonic()
        self.started = True
        if self.lockstep and not self.paused:
            self.advance()

    def on_timer(self) -> None:
        if self.arm is None or self.paused:
            return
        if not self.lockstep:
            self.advance()
        elif not self.started or time.monotonic() - self.last_command_wall > float(
            self.get_parameter("lockstep_timeout").value
        ):
            if self.started:
                self.advance()  # no controller answer: zero-order hold keeps time going
            else:
                self.publish_state()  # frozen until the first command; late joiners still see a state

    def on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self.paused = bool(request.data)
        response.success = True
        response.message = "paused" if self.paused else "running"
        if not self.paused and self.arm is not None:
            self.last_command_wall = time.monotonic()
            self.publish_state()
        return response

    def advance(self) -> None:
        self.arm.step(self.command, n_steps=self.substeps)
        self.steps += 1
        self.publish_state()

    def publish_state(self) -> None:
        t, q, qd, effort = self.arm.state()
        stamp = _stamp(t)
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=stamp))
        m = self.msg
        m.header.stamp = stamp
        m.position, m.velocity, m.effort = q.tolist(), qd.tolist(), effort.tolist()
        self.state_pub.publish(m)


def _stamp(t: float):
    from builtin_interfaces.msg import Time

    ns = round(t * 1e9)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def main(args: list[str] | None = None) -> int:
    return run_node(MujocoSim, args)


if __name__ == "__main__":
    raise SystemExit(main())
