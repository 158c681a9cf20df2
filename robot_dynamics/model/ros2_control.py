"""The ros2_control side of a robot: a ``<ros2_control>`` block for its URDF and the controllers YAML.

Pure text/XML (no ROS import), used by ``launch/bringup.launch.py``:

* ``add_ros2_control(urdf, joints, plugin)`` inserts ``<ros2_control name=... type="system">`` with
  ``<hardware><plugin>`` and, per joint, ``<command_interface name="effort">`` (min/max = effort
  limit) and ``position``/``velocity``/``effort`` state interfaces; for Gazebo (``gz_ros2_control``)
  also the ``<gazebo>`` plugin element pointing at the controllers YAML.
* ``controllers_yaml(joints)``: controller_manager with ``joint_state_broadcaster`` and an
  ``effort_controller`` of type ``forward_command_controller/ForwardCommandController``
  (``interface_name: effort``), the topic interface the computed-torque controller drives.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import yaml

PLUGINS = {
    "mock": "mock_components/GenericSystem",
    "gazebo": "gz_ros2_control/GazeboSimSystem",
    "mujoco": "mujoco_ros2_control/MujocoSystemInterface",
    "topic": "topic_based_ros2_control/TopicBasedSystem",
}


def add_ros2_control(
    urdf: str, joints: Sequence[str], plugin: str = PLUGINS["mock"], effort_limits: Sequence[float] | None = None,
    name: str = "robot_dynamics_system", gazebo_parameters: str | None = None, namespace: str = "",
) -> str:
    """URDF text with a ``<ros2_control>`` block (replacing any existing one) for ``joints``; with
    ``gazebo_parameters``, gz_ros2_control's plugin (its controller manager in ``namespace``, e.g. ``/arm1``)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise ValueError(f"URDF is not well-formed XML: {exc}") from exc
    urdf_joints = {j.get("name") for j in root.iter("joint")}
    unknown = [j for j in joints if j not in urdf_joints]
    if unknown:
        raise ValueError(f"joints {unknown} are not in the URDF")
    for old in root.findall("ros2_control"):
        root.remove(old)
    block = ET.SubElement(root, "ros2_control", name=name, type="system")
    hw = ET.SubElement(block, "hardware")
    ET.SubElement(hw, "plugin").text = plugin
    for i, j in enumerate(joints):
        je = ET.SubElement(block, "joint", name=j)
        ci = ET.SubElement(je, "command_interface", name="effort")
        lim = None if effort_limits is None else float(effort_limits[i])
        if lim is not None and math.isfinite(lim) and lim > 0:
            ET.SubElement(ci, "param", name="min").text = repr(-lim)
            ET.SubElement(ci, "param", name="max").text = repr(lim)
        for s in ("position", "velocity", "effort"):
            ET.SubElement(je, "state_interface", name=s)
    if gazebo_parameters is not None:
        for old in root.findall("gazebo"):
            if old.find("plugin[@filename='gz_ros2_control-system']") is not None:
                root.remove(old)
        gz = ET.SubElement(root, "gazebo")
        pl = ET.SubElement(gz, "plugin", filename="gz_ros2_control-system", name="gz_ros2_control::GazeboSimROS2ControlPlugin")
        ET.SubElement(pl, "parameters").text = gazebo_parameters
        if namespace:
            ET.SubElement(ET.SubElement(pl, "ros"), "namespace").text = namespace
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")


def controllers_yaml(joints: Sequence[str], update_rate: int = 1000, controller: str = "effort_controller",
                     namespace: str = "") -> str:
    """controller_manager parameters: joint_state_broadcaster + effort ForwardCommandController; ``namespace``
    (e.g. ``/arm1``) prefixes the node names, as a parameter file names nodes by their full name."""
    ns = namespace.rstrip("/")
    data = {
        f"{ns}/controller_manager" if ns else "controller_manager": {
            "ros__parameters": {
                "update_rate": int(update_rate),
                "joint_state_broadcaster": {"type": "joint_state_broadcaster/JointStateBroadcaster"},
                controller: {"type": "forward_command_controller/ForwardCommandController"},
            }
        },
        f"{ns}/{controller}" if ns else controller: {"ros__parameters": {"joints": list(joints),
                                                                         "interface_name": "effort"}},
    }
    return yaml.safe_dump(data, sort_keys=False)


def namespaced_rviz_config(text: str, namespace: str) -> str:
    """An rviz config whose absolute topics (``Value: /...``) move into ``namespace`` (e.g. ``/arm1``); ``/tf``
    and ``/tf_static`` stay global (robot_state_publisher publishes them there)."""
    ns = namespace.rstrip("/")
    if not ns:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("Value: /") and stripped.split()[1] not in ("/tf", "/tf_static"):
            line = line.replace("Value: /", f"Value: {ns}/", 1)
        out.append(line)
    return "".join(out)
