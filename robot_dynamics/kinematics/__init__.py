"""Geometric and kinematic models (002 ch. 3-6): transforms, Jacobians, inverse kinematics."""
