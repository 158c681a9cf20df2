"""Bring up robot_dynamics on a real ROS 2 install (launch_ros).

ros2 launch robot_dynamics bringup.launch.py robot:=rx90 sim:=mujoco|gazebo|none rviz:=true use_sim_time:=auto

* robot: a bundled robot (rx90, stanford, scara, planar2r), a URDF path or a .xacro path (expanded
  once with xacro_args:="l1:=0.4 m2:=3" into a URDF file that every node then reads);
* sim:=mujoco: robot_dynamics' MuJoCo arm (speaks the ros2_control topics itself);
  sim:=gazebo: gz_ros2_control in Gazebo (ros_gz_sim), controllers spawned from a generated YAML;
  sim:=none: a real arm through ros2_control (controller_manager ros2_control_node and the URDF's own
  <ros2_control> block); with use_mock_hardware:=true, mock hardware that moves instead: the MuJoCo arm
  behind the same topics, stamping with the system clock, no /clock (mock_components/GenericSystem only
  mirrors an effort command into the effort state: an arm under a torque controller never moves with it);
* the robot_dynamics nodes come from robot_dynamics.ros.node_set, the same description the
  `robot-dynamics bringup` runner uses, so the two cannot drift apart.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from robot_dynamics.model.robots import load_model, read_description, robot_stem
from robot_dynamics.model.ros2_control import PLUGINS, add_ros2_control, controllers_yaml, namespaced_rviz_config
from robot_dynamics.ros.node_set import NODE_ENVIRONMENT, config_dir, node_set


def _launch_setup(context, *args, **kwargs):
    robot = LaunchConfiguration("robot").perform(context)
    sim = LaunchConfiguration("sim").perform(context)
    rviz = LaunchConfiguration("rviz").perform(context).lower() == "true"
    sim_time_arg = LaunchConfiguration("use_sim_time").perform(context).lower()
    mock = LaunchConfiguration("use_mock_hardware").perform(context).lower() == "true"
    if mock:
        if sim != "none":
            raise ValueError(f"use_mock_hardware:=true replaces the real arm (sim:=none), not sim:={sim}")
        sim = "mock"  # the MuJoCo arm on the system clock, behind the ros2_control topics
    use_sim_time = sim in ("mujoco", "gazebo") if sim_time_arg == "auto" else sim_time_arg == "true"

    xacro_args = LaunchConfiguration("xacro_args").perform(context).split()
    tmp = Path(tempfile.mkdtemp(prefix="robot_dynamics_launch_"))
    urdf_path, urdf = read_description(robot, xacro_args)
    if urdf_path.name.endswith(".xacro"):  # every node reads the expanded file
        urdf_path = tmp / f"{robot_stem(urdf_path)}.urdf"
        urdf_path.write_text(urdf, encoding="utf-8")
    model = load_model(str(urdf_path))
    namespace = LaunchConfiguration("namespace").perform(context)
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""  # every node of the robot goes there
    controllers = tmp / "ros2_controllers.yaml"
    controllers.write_text(controllers_yaml(model.joint_names, namespace=ns))
    if sim == "gazebo":
        urdf = add_ros2_control(urdf, model.joint_names, PLUGINS["gazebo"], model.limits["effort"],
                                gazebo_parameters=str(controllers), namespace=ns)
    elif sim == "none" and "<ros2_control" not in urdf:
        urdf = add_ros2_control(urdf, model.joint_names, PLUGINS["mock"], model.limits["effort"])

    actions = [
        Node(
            package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
            output="screen", namespace=ns,
            parameters=[{"robot_description": ParameterValue(urdf, value_type=str), "use_sim_time": use_sim_time}],
        )
    ]
    for spec in node_set(str(urdf_path), sim, use_sim_time, namespace=ns):
        actions.append(Node(package=spec.package, executable=spec.executable, name=spec.name, output="screen",
                            namespace=spec.namespace, parameters=[*spec.parameter_files, spec.parameters],
                            additional_env=NODE_ENVIRONMENT))
    if sim == "none":
        actions.append(Node(package="controller_manager", executable="ros2_control_node", output="screen",
                            namespace=ns, parameters=[str(controllers), {"use_sim_time": use_sim_time}]))
    if sim == "gazebo":
        actions.append(IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
            launch_arguments={"gz_args": "-r empty.sdf"}.items(),
        ))
        actions.append(Node(package="ros_gz_sim", executable="create", output="screen", namespace=ns,
                            arguments=["-topic", f"{ns}/robot_description",
                                       "-name", model.name + ns.replace("/", "_")]))
        actions.append(Node(package="ros_gz_bridge", executable="parameter_bridge", output="screen",
                            arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]))
    if sim in ("none", "gazebo"):
        for controller in ("joint_state_broadcaster", "effort_controller"):
            actions.append(Node(package="controller_manager", executable="spawner", output="screen", namespace=ns,
                                arguments=[controller, "--param-file", str(controllers),
                                           "--controller-manager", f"{ns}/controller_manager"]))
    if rviz:  # its config's topics follow the namespace (a copy written per launch)
        rviz_config = tmp / "robot_dynamics.rviz"
        rviz_config.write_text(namespaced_rviz_config((config_dir() / "robot_dynamics.rviz").read_text(), ns))
        actions.append(Node(package="rviz2", executable="rviz2", output="screen", namespace=ns,
                            arguments=["-d", str(rviz_config)], parameters=[{"use_sim_time": use_sim_time}]))
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="rx90", description="bundled robot name, URDF or .xacro path"),
        DeclareLaunchArgument("xacro_args", default_value="",
                              description="arguments of a .xacro robot, space separated name:=value pairs"),
        DeclareLaunchArgument("sim", default_value="mujoco", choices=["mujoco", "gazebo", "none"]),
        DeclareLaunchArgument("rviz", default_value="true"),
        DeclareLaunchArgument("use_sim_time", default_value="auto", description="true|false|auto (true with a simulator)"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of the whole robot (e.g. /arm1); every topic moves with it"),
        DeclareLaunchArgument("use_mock_hardware", default_value="false",
                              description="with sim:=none: the MuJoCo arm as hardware that moves (system clock)"),
        OpaqueFunction(function=_launch_setup),
    ])
