"""Simulation: the MuJoCo plant (the only core module that needs mujoco) and closed-loop runs."""
