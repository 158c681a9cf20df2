"""Dynamics (001 ch. 7, 000): the Newton-Euler recursion, regressor, inertia matrix, direct dynamics, friction, base parameters."""
