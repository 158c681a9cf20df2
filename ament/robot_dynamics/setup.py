"""The ament_python package robot_dynamics, as colcon builds it (``colcon build`` with the repository under src/).

The metadata and the executables are those of the repository's pyproject.toml (``pip install -e .``), read here so
the two installs cannot drift; ``robot_dynamics``, ``launch``, ``config`` and ``urdf`` are links to the repository's
own folders. The executables go to ``lib/robot_dynamics`` (setup.cfg) for ``ros2 run``.
"""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (Humble): python3-tomli
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
package_name = "robot_dynamics"
project = tomllib.loads((HERE.parents[1] / "pyproject.toml").read_text())["project"]

setup(
    name=package_name,
    version=project["version"],
    packages=find_packages(include=["robot_dynamics", "robot_dynamics.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*")),
        ("share/" + package_name + "/urdf", glob("urdf/*.urdf")),
    ],
    package_data={"robot_dynamics": ["py.typed", "ros/schemas/*.yaml"]},
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer=project["authors"][0]["name"],
    maintainer_email=project["authors"][0]["email"],
    description=project["description"],
    license=project["license"]["text"],
    entry_points={"console_scripts": [f"{name} = {target}" for name, target in project["scripts"].items()]},
)
