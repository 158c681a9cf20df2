"""ament_python package robot_dynamics (also pip-installable into a plain venv)."""

from glob import glob

from setuptools import find_packages, setup

package_name = "robot_dynamics"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(include=["robot_dynamics", "robot_dynamics.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*")),
        ("share/" + package_name + "/urdf", glob("urdf/*.urdf")),
    ],
    package_data={"robot_dynamics": ["py.typed", "ros/schemas/*.yaml"]},
    install_requires=["setuptools", "numpy", "scipy", "sympy", "urdf-parser-py", "xacro", "PyYAML", "matplotlib"],
    extras_require={"sim": ["mujoco"], "test": ["pytest", "hypothesis", "pin", "example-robot-data"],
                    "dask": ["dask", "distributed"]},
    zip_safe=True,
    maintainer="robot_dynamics developers",
    maintainer_email="dev@robot-dynamics.invalid",
    description="Khalil modified-DH modelling, Newton-Euler dynamics, trajectories and computed-torque control for ROS 2",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "robot-dynamics = robot_dynamics.cli:main",
            "urdf_to_dh = robot_dynamics.ros.urdf_to_dh:main",
            "dynamics_server = robot_dynamics.ros.dynamics_server:main",
            "trajectory_generator = robot_dynamics.ros.trajectory_generator:main",
            "computed_torque_controller = robot_dynamics.ros.computed_torque_controller:main",
            "mujoco_sim = robot_dynamics.ros.mujoco_sim:main",
            "identifier = robot_dynamics.ros.identifier:main",
        ],
    },
)
