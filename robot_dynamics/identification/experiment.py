"""Identification experiments in simulation: the MuJoCo plant driven along an exciting trajectory.

The plant (:class:`~robot_dynamics.sim.simulator.MujocoArm`) simulates the *true* model (e.g. the
nominal model off by ±30 %, :func:`~robot_dynamics.sim.simulator.perturbed`); a computed-torque
controller built on the *nominal* model makes it follow the trajectory.  What a real rig
records is returned: the measured positions (optionally quantized by an encoder of
``encoder_bits`` per turn) and the applied efforts (plus Gaussian noise of ``effort_noise``
times the largest applied effort of each joint), at the control rate.  The recorded effort at t_k is
the mean over [t_k − h/2, t_k + h/2] of the zero-order-hold control (what an averaging current
sensor gives; it pairs with accelerations by central differences).
"""

from __future__ import annotations

import math

import numpy as np

from ..model.robot_model import RobotModel
from ..trajectory.base import Trajectory
from .data import IdentificationData

__all__ = ["quantize", "simulate_experiment"]


def quantize(q: np.ndarray, bits: int | None, sigma: np.ndarray | None = None) -> np.ndarray:
    """Encoder quantization: revolute joints to 2π/2^bits rad, prismatic (``sigma`` = 1) to 1e-6 m·2^(20-bits)."""
    if bits is None:
        return q
    step = np.full(q.shape[-1], 2.0 * math.pi / 2**int(bits))
    if sigma is not None:
        step = np.where(np.asarray(sigma) == 1, 1e-6 * 2.0 ** (20 - int(bits)), step)
    return np.round(q / step) * step


def simulate_experiment(
    nominal: RobotModel,
    truth: RobotModel,
    trajectory: Trajectory,
    *,
    omega: float = 20.0,
    timestep: float = 0.001,
    encoder_bits: int | None = None,
    effort_noise: float = 0.0,
    seed: int = 0,
) -> IdentificationData:
    """Run ``truth`` in MuJoCo along ``trajectory`` under computed torque on ``nominal``; the recorded data."""
    from ..control import make_controller
    from ..sim.closed_loop import run_closed_loop
    from ..sim.simulator import MujocoArm

    rng = np.random.default_rng(seed)
    plant = MujocoArm(truth, timestep=timestep)
    ctrl = make_controller("computed_torque", nominal, omega, 1.0)
    q0, qd0, _ = trajectory.evaluate(0.0)
    res = run_closed_loop(nominal, plant, ctrl, trajectory, settle_time=0.0, q0=q0, qd0=qd0)
    if not res.metrics["stable"]:
        raise RuntimeError("the identification experiment diverged")
    q = quantize(res.q, encoder_bits, nominal.sigma)
    # effort sensor: mean effort over [t_k - h/2, t_k + h/2] (the zero-order-hold torque of the
    # previous and current control periods), the value consistent with q̈ at t_k by central differences
    tau = res.tau.copy()
    tau[1:] = 0.5 * (res.tau[1:] + res.tau[:-1])
    if effort_noise > 0:
        tau += rng.normal(0.0, 1.0, tau.shape) * effort_noise * np.abs(res.tau).max(axis=0)
    return IdentificationData(res.t, q, tau, joint_names=nominal.joint_names)

