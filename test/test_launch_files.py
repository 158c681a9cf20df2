"""The launch files parse and start the same robot_dynamics nodes as the bring-up runner.

launch/launch_ros cannot be installed from PyPI, so they are replaced here by recording
stand-ins with the same call signatures; the launch file's own code runs unchanged.
The ros2_control block is checked against the ros2_control URDF conventions (hand-written
expectations: one effort command interface per joint, position/velocity/effort states).
"""

from __future__ import annotations

import importlib.util
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.model.ros2_control import PLUGINS, add_ros2_control, controllers_yaml
from robot_dynamics.ros.node_set import node_set

LAUNCH = Path(__file__).resolve().parents[1] / "launch" / "bringup.launch.py"


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context.launch_configurations[self.name]


def _stub_modules() -> dict[str, types.ModuleType]:
    mods = {}
    for name in ("launch", "launch.actions", "launch.substitutions", "launch.launch_description_sources",
                 "launch_ros", "launch_ros.actions", "launch_ros.parameter_descriptions", "launch_ros.substitutions"):
        mods[name] = types.ModuleType(name)
    mods["launch"].LaunchDescription = lambda entities: list(entities)
    for cls in ("DeclareLaunchArgument", "OpaqueFunction", "IncludeLaunchDescription"):
        setattr(mods["launch.actions"], cls, type(cls, (_Recorder,), {}))
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch.substitutions"].PathJoinSubstitution = type("PathJoinSubstitution", (_Recorder,), {})
    mods["launch.launch_description_sources"].PythonLaunchDescriptionSource = type("PythonLaunchDescriptionSource", (_Recorder,), {})
    mods["launch_ros.actions"].Node = type("Node", (_Recorder,), {})
    mods["launch_ros.parameter_descriptions"].ParameterValue = lambda value, value_type=None: value
    mods["launch_ros.substitutions"].FindPackageShare = type("FindPackageShare", (_Recorder,), {})
    return mods


def _run_launch(monkeypatch, **configuration):
    for name, mod in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    spec = importlib.util.spec_from_file_location("bringup_launch", LAUNCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entities = module.generate_launch_description()
    declared = {e.args[0]: e.kwargs.get("default_value") for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    context = types.SimpleNamespace(launch_configurations={**declared, **configuration})
    opaque = [e for e in entities if type(e).__name__ == "OpaqueFunction"][0]
    return declared, opaque.kwargs["function"](context)


def _nodes(actions):
    return [a for a in actions if type(a).__name__ == "Node"]


@pytest.mark.parametrize("sim", ["mujoco", "gazebo", "none"])
def test_launch_lists_the_node_set(monkeypatch, sim):
    declared, actions = _run_launch(monkeypatch, sim=sim)
    assert set(declared) >= {"robot", "sim", "rviz", "use_sim_time"}
    nodes = _nodes(actions)
    launched = {(n.kwargs["executable"], n.kwargs.get("name")) for n in nodes if n.kwargs["package"] == "robot_dynamics"}
    expected = {(s.executable, s.name) for s in node_set("rx90", sim)}
    assert launched == expected
    # same parameter files and inline parameters as the runner
    by_name = {n.kwargs["name"]: n for n in nodes if n.kwargs["package"] == "robot_dynamics"}
    for s in node_set("rx90", sim):
        assert by_name[s.name].kwargs["parameters"] == [*s.parameter_files, s.parameters]
    packages = {n.kwargs["package"] for n in nodes}
    assert "robot_state_publisher" in packages and "rviz2" in packages
    spawned = {n.kwargs["arguments"][0] for n in nodes if n.kwargs.get("executable") == "spawner"}
    assert spawned == ({"joint_state_broadcaster", "effort_controller"} if sim != "mujoco" else set())
    rsp = next(n for n in nodes if n.kwargs["package"] == "robot_state_publisher")
    urdf = rsp.kwargs["parameters"][0]["robot_description"]
    has_block = ET.fromstring(urdf).find("ros2_control") is not None
    assert has_block == (sim != "mujoco")


def test_mock_hardware_is_an_arm_that_moves(monkeypatch):
    """use_mock_hardware:=true starts the MuJoCo arm behind the ros2_control topics on the system clock (no /clock,
    driver-like stamps, every node with use_sim_time false) instead of mock_components, which never moves."""
    _, actions = _run_launch(monkeypatch, sim="none", use_mock_hardware="true")
    nodes = _nodes(actions)
    by_name = {n.kwargs["name"]: n for n in nodes if n.kwargs["package"] == "robot_dynamics"}
    sim = by_name["mujoco_sim"].kwargs["parameters"][-1]
    assert sim["stamp_time"] == "system" and sim["lockstep"] is False and sim["use_sim_time"] is False
    assert all(n.kwargs["parameters"][-1]["use_sim_time"] is False for n in by_name.values())
    packages = {n.kwargs["package"] for n in nodes}
    assert "controller_manager" not in packages  # no ros2_control_node, no spawners
    rsp = next(n for n in nodes if n.kwargs["package"] == "robot_state_publisher")
    assert ET.fromstring(rsp.kwargs["parameters"][0]["robot_description"]).find("ros2_control") is None
    with pytest.raises(ValueError, match="replaces the real arm"):
        _run_launch(monkeypatch, sim="mujoco", use_mock_hardware="true")


def test_launch_without_rviz(monkeypatch):
    _, actions = _run_launch(monkeypatch, rviz="false")
    assert "rviz2" not in {n.kwargs["package"] for n in _nodes(actions)}


def test_ros2_control_block_and_controllers_yaml():
    model = load_model("rx90")
    urdf = add_ros2_control(resolve_urdf("rx90").read_text(), model.joint_names,
                            PLUGINS["gazebo"], model.limits["effort"], gazebo_parameters="/tmp/c.yaml")
    root = ET.fromstring(urdf)
    block = root.find("ros2_control")
    assert block.get("type") == "system"
    assert block.find("hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
    joints = block.findall("joint")
    assert [j.get("name") for j in joints] == model.joint_names
    for j, lim in zip(joints, [300.0, 300.0, 150.0, 40.0, 40.0, 20.0], strict=True):  # rx90 URDF effort limits
        ci = j.findall("command_interface")
        assert [c.get("name") for c in ci] == ["effort"]
        assert float(ci[0].find("param[@name='max']").text) == lim
        assert [s.get("name") for s in j.findall("state_interface")] == ["position", "velocity", "effort"]
    assert root.find("gazebo/plugin").get("filename") == "gz_ros2_control-system"
    data = yaml.safe_load(controllers_yaml(model.joint_names))
    cm = data["controller_manager"]["ros__parameters"]
    assert cm["effort_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    assert cm["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert data["effort_controller"]["ros__parameters"] == {"joints": model.joint_names, "interface_name": "effort"}
    with pytest.raises(ValueError, match="not in the URDF"):
        add_ros2_control(urdf, ["nope"])


# ------------------------------------------------------------------ namespaces: every end in the robot's namespace
# the topics each launched executable publishes (+) and subscribes (-), relative names resolved in its namespace
# (ros2_control's conventions: the controller manager reads robot_description, the broadcaster publishes
# joint_states, the effort controller reads effort_controller/commands; ours as the nodes declare them)
WIRING = {
    ("robot_state_publisher", "robot_state_publisher"): ["+robot_description", "-joint_states"],
    ("controller_manager", "ros2_control_node"): ["-robot_description", "+joint_states", "-effort_controller/commands"],
    ("robot_dynamics", "computed_torque_controller"): ["-joint_states", "+effort_controller/commands",
                                                       "-robot_description"],
    ("robot_dynamics", "mujoco_sim"): ["+joint_states", "-effort_controller/commands"],
    ("robot_dynamics", "dynamics_server"): ["-joint_states", "-robot_description"],
    ("robot_dynamics", "trajectory_generator"): ["+trajectory_generator/path_markers", "-robot_description"],
}


def _resolve(ns: str, name: str) -> str:
    return name if name.startswith("/") else f"{ns}/{name}"


def _graph(actions, sim: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    pubs: dict[str, set[str]] = {}
    subs: dict[str, set[str]] = {}
    for n in _nodes(actions):
        key = (n.kwargs["package"], n.kwargs["executable"])
        ns = n.kwargs.get("namespace") or ""
        ends = list(WIRING.get(key, []))
        if key == ("ros_gz_sim", "create"):  # spawns what it reads on -topic; gz_ros2_control is the manager
            args = n.kwargs["arguments"]
            ends = [f"-{args[args.index('-topic') + 1]}", "+joint_states", "-effort_controller/commands"]
        if key == ("rviz2", "rviz2"):  # what its config (written per launch) displays
            text = Path(n.kwargs["arguments"][1]).read_text()
            ends = ["-" + line.split()[1] for line in text.splitlines() if line.strip().startswith("Value: /")]
        for end in ends:
            topic = _resolve(ns, end[1:])
            (pubs if end[0] == "+" else subs).setdefault(topic, set()).add(n.kwargs.get("name") or key[1])
    return pubs, subs


@pytest.mark.parametrize("namespace", ["", "/arm1"])
@pytest.mark.parametrize("sim", ["mujoco", "mock", "none", "gazebo"])
def test_every_topic_has_both_ends_in_the_robots_namespace(monkeypatch, tmp_path, sim, namespace):
    config = {"sim": "none", "use_mock_hardware": "true"} if sim == "mock" else {"sim": sim}
    _, actions = _run_launch(monkeypatch, namespace=namespace, **config)
    nodes = _nodes(actions)
    for n in nodes:  # every node of the robot is in its namespace (the Gazebo server and /clock bridge are global)
        if n.kwargs["executable"] != "parameter_bridge":
            assert (n.kwargs.get("namespace") or "") == namespace, (n.kwargs["executable"], n.kwargs.get("namespace"))
    pubs, subs = _graph(actions, sim)
    shown = namespace or "''"
    print(f"\nsim:={sim} namespace:={shown}: " +
          "; ".join(f"{t}: {sorted(pubs.get(t, ()))} -> {sorted(subs[t])}" for t in sorted(subs)))
    for topic, readers in subs.items():
        assert topic.startswith(namespace + "/"), topic
        assert pubs.get(topic), f"{topic} read by {sorted(readers)} has no publisher"
    spawners = [n for n in nodes if n.kwargs["executable"] == "spawner"]
    for sp in spawners:
        args = sp.kwargs["arguments"]
        assert args[args.index("--controller-manager") + 1] == f"{namespace}/controller_manager"
        data = yaml.safe_load(Path(args[args.index("--param-file") + 1]).read_text())
        assert (f"{namespace}/controller_manager" if namespace else "controller_manager") in data
    rviz = next(n for n in nodes if n.kwargs["package"] == "rviz2")
    text = Path(rviz.kwargs["arguments"][1]).read_text()
    topics = [line.split()[1] for line in text.splitlines() if line.strip().startswith("Value: /")]
    assert topics and all(t.startswith(namespace + "/") for t in topics), topics
    if sim == "gazebo":
        rsp = next(n for n in nodes if n.kwargs["package"] == "robot_state_publisher")
        plugin = ET.fromstring(rsp.kwargs["parameters"][0]["robot_description"]).find(
            "gazebo/plugin[@filename='gz_ros2_control-system']")
        assert (plugin.findtext("ros/namespace") or "") == namespace


def test_namespaced_rviz_config_keeps_tf_global():
    from robot_dynamics.model.ros2_control import namespaced_rviz_config

    text = "a:\n  Value: /robot_description\n  Value: /tf\n  Value: /tf_static\n  Value: relative\n"
    assert namespaced_rviz_config(text, "/arm1") == ("a:\n  Value: /arm1/robot_description\n  Value: /tf\n"
                                                     "  Value: /tf_static\n  Value: relative\n")
    assert namespaced_rviz_config(text, "") == text
