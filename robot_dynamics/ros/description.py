"""Where a node gets its robot: the ``robot_description`` parameter, a URDF path, or the topic.

ROS 2 convention (robot_state_publisher): ``/robot_description`` is a
``std_msgs/String`` published with transient-local durability; nodes accept
both the parameter and the topic.  ``urdf_path`` (a file or a bundled robot
name such as ``rx90``) is the convenience used by the bring-up runner.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..robot_model import RobotModel
from ..robots import by_joint, resolve_urdf

DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


class RobotDescription:
    """Declares the description parameters of ``node`` and calls ``on_model`` with each new model."""

    def __init__(self, node: Node, on_model: Callable[[RobotModel, str], None]) -> None:
        self.node = node
        self.on_model = on_model
        node.declare_parameter("robot_description", "")
        node.declare_parameter("urdf_path", "")
        node.declare_parameter("base_link", "")
        node.declare_parameter("tip_link", "")
        # what a URDF cannot carry (config/<robot>.yaml): per joint, chain order; [0.0] = none
        node.declare_parameter("rotor_inertia", [0.0])
        node.declare_parameter("acceleration_limits", [0.0])
        self.urdf = ""
        text = node.get_parameter("robot_description").value
        path = node.get_parameter("urdf_path").value
        if not text and path:
            text = Path(resolve_urdf(path)).read_text()
        if text:
            self.load(text)
        else:
            node.get_logger().info("waiting for the URDF on /robot_description (transient local)")
        self._sub = node.create_subscription(String, "/robot_description", self._on_topic, DESCRIPTION_QOS)

    def load(self, urdf: str) -> RobotModel | None:
        base = self.node.get_parameter("base_link").value or None
        tip = self.node.get_parameter("tip_link").value or None
        try:
            model = RobotModel.from_urdf(urdf, base_link=base, tip_link=tip)
            ia = by_joint(model, self.node.get_parameter("rotor_inertia").value, "rotor_inertia")
            acc = by_joint(model, self.node.get_parameter("acceleration_limits").value, "acceleration_limits")
            if ia is not None or acc is not None:
                model = RobotModel.from_urdf(urdf, base_link=base, tip_link=tip, rotor_inertia=ia, acceleration_limits=acc)
        except Exception as exc:  # a bad description must not kill the node
            self.node.get_logger().error(f"cannot use the robot description: {exc}")
            return None
        self.urdf = urdf
        self.node.get_logger().info(f"robot {model.name!r}: {model.dof} joints {model.joint_names}")
        self.on_model(model, urdf)
        return model

    def _on_topic(self, msg: String) -> None:
        if msg.data and msg.data != self.urdf:
            self.load(msg.data)
