"""The one description of the robot_dynamics node set.

Both ``launch/bringup.launch.py`` (real ROS 2 installs, launch_ros) and the
runner ``robot-dynamics bringup`` (no launch_ros) build their nodes from
:func:`node_set`, so the two cannot drift apart.  No rclpy import here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.robots import PACKAGE, config_dir, resolve_urdf

SIMULATORS = ("mujoco", "gazebo", "none", "mock")

NODE_ENVIRONMENT: dict[str, str] = {"MALLOC_ARENA_MAX": "1"}
"""Set in every node process before it starts (the runner, the launch file, the tests).  One glibc malloc arena:
a huge request's C structure is taken and freed by an executor thread, and in a thread arena its freed pages stay in
the arena's top, which ``malloc_trim`` never gives back (+55 MB for good after a refused 10^6-point request).  The
``mallopt`` call inside the node (``request_gate.one_malloc_arena``) comes after imports have started threads that
made arenas of their own, so it only limits new ones; read at exec, the variable leaves one arena from the start."""


def node_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a node process starts with: ``base`` (default: this process's) with :data:`NODE_ENVIRONMENT`
    (a value the user set wins)."""
    env = dict(os.environ if base is None else base)
    for key, value in NODE_ENVIRONMENT.items():
        env.setdefault(key, value)
    return env


@dataclass
class NodeSpec:
    """One node: ROS package/executable/name, parameter files and inline parameters."""

    executable: str
    name: str
    module: str  # python -m robot_dynamics.ros.<module>
    parameter_files: list[str] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    package: str = PACKAGE
    namespace: str = ""  # e.g. "/arm1": every relative topic, service and the node itself move there

    def command(self, python: str = sys.executable) -> list[str]:
        """Command line that runs this node without ros2 run / launch."""
        cmd = [python, "-m", f"{PACKAGE}.ros.{self.module}", "--ros-args", "-r", f"__node:={self.name}"]
        if self.namespace:
            cmd += ["-r", f"__ns:={self.namespace}"]
        for f in self.parameter_files:
            cmd += ["--params-file", f]
        for k, v in self.parameters.items():
            cmd += ["-p", f"{k}:={_param_text(v)}"]
        return cmd


def _param_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_param_text(x) for x in v) + "]"
    return str(v)


def node_set(robot: str = "rx90", sim: str = "mujoco", use_sim_time: bool | None = None,
             extra_parameter_files: list[str] | None = None, namespace: str = "") -> list[NodeSpec]:
    """The nodes of a bring-up: conversion, dynamics server, trajectory generator, controller (+ simulated arm).

    ``sim``: ``mujoco`` adds the ``mujoco_sim`` node (it stands in for controller_manager +
    joint_state_broadcaster + effort ForwardCommandController); ``gazebo`` and ``none`` expect
    those from ros2_control (launch file only); ``mock`` is mock hardware that moves: the MuJoCo arm behind the
    same topics, in real time, stamping its states with the system clock and publishing no ``/clock``, as a real
    arm's driver does (every node on the system clock).  ``mock_components/GenericSystem`` cannot stand in for an
    arm under a torque controller: it mirrors an effort command into the effort state and never moves.
    ``use_sim_time`` defaults to True with a simulator (``mujoco``, ``gazebo``).  ``namespace`` (``/arm1``) moves
    every node and its topics and services there (all their names are relative, ``/clock`` aside): robots side by
    side in one domain need no remap (with sim time, one ``/clock`` for all: use ``mock`` or one simulator).
    """
    if namespace and not namespace.startswith("/"):
        namespace = "/" + namespace
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {SIMULATORS}, got {sim!r}")
    urdf = str(resolve_urdf(robot))
    cfg = config_dir()
    files = [str(cfg / "robot_dynamics.yaml")]
    robot_file = cfg / f"{Path(urdf).stem}.yaml"
    if robot_file.is_file():
        files.append(str(robot_file))
    files += list(extra_parameter_files or [])
    sim_time = (sim in ("mujoco", "gazebo")) if use_sim_time is None else use_sim_time
    common = {"urdf_path": urdf, "use_sim_time": sim_time}
    nodes = [
        NodeSpec("urdf_to_dh", "urdf_to_dh", "urdf_to_dh", files, dict(common)),
        NodeSpec("dynamics_server", "dynamics_server", "dynamics_server", files, dict(common)),
        NodeSpec("trajectory_generator", "trajectory_generator", "trajectory_generator", files, dict(common)),
        NodeSpec("computed_torque_controller", "computed_torque_controller", "computed_torque_controller", files, dict(common)),
        # idle until ~/identify is called: identification on the running robot, swapped into the nodes above
        NodeSpec("identifier", "identifier", "identifier", files, dict(common)),
    ]
    if sim == "mujoco":
        # the simulator is the source of /clock: it runs on the wall clock itself
        nodes.append(NodeSpec("mujoco_sim", "mujoco_sim", "mujoco_sim", files, {"urdf_path": urdf, "use_sim_time": False}))
    elif sim == "mock":
        nodes.append(NodeSpec("mujoco_sim", "mujoco_sim", "mujoco_sim", files,
                              {"urdf_path": urdf, "use_sim_time": False, "lockstep": False, "stamp_time": "system"}))
    return _in_namespace(nodes, namespace)


def _in_namespace(nodes: list[NodeSpec], namespace: str) -> list[NodeSpec]:
    for n in nodes:
        n.namespace = namespace
    return nodes
