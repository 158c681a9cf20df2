"""robot_dynamics: modelling, dynamics and control of serial arms (Khalil's methods)."""

from .robot_model import INERTIAL_NAMES, MDHJoint, RobotModel

__all__ = ["INERTIAL_NAMES", "MDHJoint", "RobotModel"]
__version__ = "0.1.0"
