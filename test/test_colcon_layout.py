"""The repository in a colcon workspace (issue 31): with only the repository under ``src/``, a bare ``colcon build``
finds and builds both ROS packages (the repository's root is no package, so colcon looks inside it), the
executables land where ``ros2 run`` looks and import the interfaces from the install space, and package.xml
declares every package the launch paths start or the nodes import.

colcon here is the PyPI one in the venv, and the ROS underlay is the venv's (CMAKE_PREFIX_PATH, AMENT_PREFIX_PATH),
as ``make env`` builds the interfaces."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_XML = ROOT / "ament" / "robot_dynamics" / "package.xml"
COLCON = Path(sys.executable).parent / "colcon"
EXECUTABLES = ["computed_torque_controller", "dynamics_server", "identifier", "mujoco_sim", "recorder",
               "robot-dynamics", "trajectory_generator", "urdf_to_dh"]
# packages of the ROS 2 distribution the nodes import messages from, but which are no dependency of their own
# (rclpy's own)
SELF_EVIDENT = {"rclpy"}
# pluginlib library -> the package that ships it
PLUGIN_PACKAGES = {"mock_components": "hardware_interface"}


def _declared() -> set[str]:
    root = ET.parse(PACKAGE_XML).getroot()
    return {e.text.strip() for tag in ("depend", "exec_depend", "build_depend") for e in root.iter(tag)}


def _launch_packages() -> set[str]:
    """Packages the launch file starts or includes: ``Node(package=...)`` and ``FindPackageShare(...)``."""
    text = (ROOT / "launch" / "bringup.launch.py").read_text()
    return set(re.findall(r'package="([a-z0-9_]+)"', text)) | set(re.findall(r'FindPackageShare\("([a-z0-9_]+)"\)', text))


def _controller_packages() -> set[str]:
    """Packages of the ros2_control controllers the launch file spawns and of the hardware plugins it names."""
    cfg = yaml.safe_load((ROOT / "config" / "ros2_controllers.yaml").read_text())
    types = [v["type"] for v in cfg["controller_manager"]["ros__parameters"].values()
             if isinstance(v, dict) and "type" in v]
    from robot_dynamics.model.ros2_control import PLUGINS
    launch = (ROOT / "launch" / "bringup.launch.py").read_text()
    plugins = [PLUGINS[k] for k in re.findall(r'PLUGINS\["([a-z_]+)"\]', launch)]
    return {PLUGIN_PACKAGES.get(t.split("/")[0], t.split("/")[0]) for t in types + plugins}


def _imported_interface_packages() -> set[str]:
    """ROS packages whose ``msg``/``srv``/``action`` modules the library imports."""
    found = set()
    for path in (ROOT / "robot_dynamics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                parts = name.split(".")
                if len(parts) >= 2 and parts[1] in ("msg", "srv", "action"):
                    found.add(parts[0])
    return found


def test_package_xml_declares_every_started_and_imported_package() -> None:
    """Every package the launch paths start (robot_state_publisher, controller_manager, ros_gz_sim, ros_gz_bridge,
    rviz2), the controllers and hardware plugin they load, and every interface package the nodes import."""
    needed = _launch_packages() | _controller_packages() | _imported_interface_packages()
    # the discovery of the three sources is itself checked: each finds what the launch paths are known to use
    assert {"robot_state_publisher", "controller_manager", "ros_gz_sim", "ros_gz_bridge", "rviz2"} <= needed
    assert {"joint_state_broadcaster", "forward_command_controller", "gz_ros2_control", "hardware_interface"} <= needed
    assert {"action_msgs", "control_msgs", "robot_dynamics_interfaces", "sensor_msgs"} <= needed
    missing = sorted(needed - _declared() - SELF_EVIDENT)
    assert not missing, f"package.xml does not declare {missing}"


def test_the_repository_root_is_no_package() -> None:
    """colcon does not look inside a package: the root must carry none of the files that make one."""
    for marker in ("package.xml", "setup.py", "CMakeLists.txt", "COLCON_IGNORE"):
        assert not (ROOT / marker).exists(), marker
    links = {p.name: os.readlink(p) for p in PACKAGE_XML.parent.iterdir() if p.is_symlink()}
    assert links == {"robot_dynamics": "../../robot_dynamics", "launch": "../../launch", "config": "../../config",
                     "urdf": "../../urdf"}, links


def _workspace(tmp_path: Path) -> Path:
    """A colcon workspace with the repository's files (tracked and new, not ignored) under ``src/robot_dynamics``."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the repository's git checkout (git ls-files) to copy what a clone holds")
    if not COLCON.is_file():
        pytest.skip(f"colcon is not installed in this environment ({COLCON}): make env installs it")
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    src = tmp_path / "ws" / "src" / "robot_dynamics"
    src.mkdir(parents=True)
    archive = tmp_path / "repo.tar"
    with tarfile.open(archive, "w") as tar:
        for f in files:
            if f and (os.path.lexists(ROOT / f)):
                tar.add(ROOT / f, arcname=f, recursive=False)
    with tarfile.open(archive) as tar:
        tar.extractall(src, filter="tar")
    return tmp_path / "ws"


def _env() -> dict[str, str]:
    prefix = sys.prefix
    return {**os.environ, "CMAKE_PREFIX_PATH": prefix, "AMENT_PREFIX_PATH": prefix, "COLCON_HOME": "/nonexistent",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_colcon_finds_both_packages(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    out = subprocess.run([str(COLCON), "list"], cwd=ws, env=_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = sorted(tuple(line.split("\t")) for line in out.stdout.splitlines() if line.strip())
    assert rows == [("robot_dynamics", "src/robot_dynamics/ament/robot_dynamics", "(ros.ament_python)"),
                    ("robot_dynamics_interfaces", "src/robot_dynamics/robot_dynamics_interfaces", "(ros.ament_cmake)")
                    ], out.stdout
    # the build order: the interfaces first (robot_dynamics depends on them); control_msgs (COLCON_IGNORE) absent
    order = subprocess.run([str(COLCON), "list", "--topological-order", "--names-only"], cwd=ws, env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert order.stdout.split() == ["robot_dynamics_interfaces", "robot_dynamics"], order.stdout


@pytest.mark.ros  # the integration tier: a colcon build and node imports in subprocesses
def test_colcon_build_installs_the_package(tmp_path: Path) -> None:
    """``colcon build --symlink-install`` of the workspace: the executables are in lib/robot_dynamics (``ros2 run``),
    the launch, config and URDF files in the share directory, and with install/setup.bash sourced a node's module
    imports the interfaces.  The interfaces package is taken from the underlay here (``--packages-ignore``): its
    CMakeLists.txt is the one ``make env`` compiles with cmake on every clean clone (a minute of compiling the
    suite need not repeat); colcon's discovery and build order of both packages are checked above."""
    ws = _workspace(tmp_path)
    build = subprocess.run([str(COLCON), "build", "--symlink-install", "--packages-ignore", "robot_dynamics_interfaces"],
                           cwd=ws, env=_env(), capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, (build.stdout[-3000:], build.stderr[-3000:])
    install = ws / "install"
    assert (install / "robot_dynamics" / "share" / "robot_dynamics" / "package.xml").is_file(), build.stdout[-2000:]
    assert not (install / "robot_dynamics_interfaces").exists()  # the selection holds: only the Python package
    lib = install / "robot_dynamics" / "lib" / "robot_dynamics"
    assert sorted(p.name for p in lib.iterdir()) == EXECUTABLES
    share = install / "robot_dynamics" / "share" / "robot_dynamics"
    assert (share / "launch" / "bringup.launch.py").is_file() and (share / "package.xml").is_file()
    assert sorted(p.name for p in (share / "urdf").glob("*.urdf")) == sorted(p.name for p in (ROOT / "urdf").glob("*.urdf"))
    assert (share / "config" / "robot_dynamics.yaml").is_file()
    assert (install / "robot_dynamics" / "share" / "ament_index" / "resource_index" / "packages" / "robot_dynamics").is_file()
    code = ("import robot_dynamics_interfaces.srv as s, robot_dynamics.ros.dynamics_server as d; "
            "from robot_dynamics.model.robots import resolve_urdf; print(s.__file__); print(d.__file__); "
            "print(resolve_urdf('rx90'))")
    run = subprocess.run(["bash", "-c", f"source install/setup.bash && {sys.executable} -c \"{code}\""], cwd=ws,
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    interfaces, module, urdf = run.stdout.split()
    assert Path(interfaces).is_relative_to(sys.prefix), interfaces  # the underlay's interfaces
    # the package's modules come from the workspace (symlinked to its source), not from the venv's editable install
    assert Path(module).is_relative_to(ws), module
    assert Path(urdf).name == "rx90.urdf" and Path(urdf).is_file(), urdf
    # an executable as ros2 run starts it
    cli = subprocess.run(["bash", "-c", "source install/setup.bash && install/robot_dynamics/lib/robot_dynamics/"
                          "robot-dynamics dh planar2r"], cwd=ws, env=_env(), capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0 and "robot 'planar_2r': whole chain under base 'base_link', 2 joints" in cli.stdout, \
        (cli.stdout, cli.stderr)
