"""A position/velocity servo drive for the simulated arm (issue 33's output modes): what a position- or
velocity-controlled arm's own drives do between two commands of its controller, at every simulation step.

    Gamma = A(q) (Kp (q_c - q) + Kd (qd_c - qd)) + h(q, qd) + Gamma_ff,   clipped to the effort limits,

with A the plant's inertia matrix and h its gravity, Coriolis and centrifugal efforts (the drive knows its arm:
MuJoCo's mass matrix and ``qfrc_bias``; h is 0 when the controller sends a feed-forward effort Gamma_ff, which carries
them), Kp = w^2 and Kd = 2 zeta w (``servo_bandwidth`` w, ``servo_damping`` zeta): every joint a decoupled
second-order loop of bandwidth w (001 eq. 9.11's structure, inside the drive), its speed toward the set point within
the joint's velocity limit.  Velocity alone: Kp = 0.  Pure NumPy."""

from __future__ import annotations

import numpy as np


def servo_gains(bandwidth: float, damping: float, *, position: bool) -> tuple[float, float]:
    """(Kp, Kd): w^2 (0 without a position set point) and 2 zeta w."""
    if not (np.isfinite(bandwidth) and bandwidth > 0 and np.isfinite(damping) and damping > 0):
        raise ValueError(f"servo bandwidth and damping must be > 0, got {bandwidth}, {damping}")
    return (bandwidth**2 if position else 0.0), 2.0 * damping * bandwidth


def servo_torque(q: np.ndarray, qd: np.ndarray, q_cmd: np.ndarray, qd_cmd: np.ndarray, inertia: np.ndarray,
                 bias: np.ndarray | float, tau_ff: np.ndarray, kp: float, kd: float, limit: np.ndarray,
                 velocity_limit: np.ndarray | float = np.inf) -> np.ndarray:
    """The drive's effort (above), within +-``limit``, written as a velocity loop Kd (v - qd) on
    v = qd_c + (Kp / Kd)(q_c - q) kept within +-``velocity_limit`` (a drive never speeds toward a far set point
    faster than the joint may move: the same law near the set point)."""
    v = np.clip(qd_cmd + (kp / kd) * (q_cmd - q), -velocity_limit, velocity_limit)
    tau = inertia @ (kd * (v - qd)) + bias + tau_ff
    return np.clip(tau, -limit, limit)


__all__ = ["servo_gains", "servo_torque"]
