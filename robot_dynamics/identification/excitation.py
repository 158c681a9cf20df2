"""Exciting trajectories for dynamic identification: finite Fourier series optimized for cond(W_b).

Each joint follows a periodic finite Fourier series of fundamental pulsation ω_f (Swevers et al.)::

    q_j(t) = c_j + Σ_{l=1..L} a_jl/(ω_f l) sin(ω_f l t) − b_jl/(ω_f l) (cos(ω_f l t) − 1)

so q_j(0) = c_j, and with ``Σ_l a_jl = 0`` and ``Σ_l l b_jl = 0`` (imposed by solving for
a_j1, b_j1) the motion starts and ends at rest (q̇ = q̈ = 0 at t = 0 and t = T), so the arm
can start it from standstill and the period can be repeated.

The coefficients are chosen to minimize the condition number of the base observation matrix
W_b (the base regressor of :mod:`robot_dynamics.dynamics.base_parameters`, stacked over samples of one
period, 001 eq. 9.3 reduced to the base parameters), the classical criterion of exciting
trajectories.  Feasibility is kept by construction: after every optimizer step the coefficients
of joint j are scaled so that the largest of ``|q_j − m_j| / r_j``, ``|q̇_j| / v_j``,
``|q̈_j| / a_j`` equals 1 (position range, velocity and acceleration limits, each times a margin),
so the optimizer works on the shape and the amplitude always uses the limits fully.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.optimize

from ..model.robot_model import RobotModel
from ..trajectory.base import Trajectory, Triple
from .progress import report

__all__ = ["ExcitationResult", "FourierTrajectory", "condition_number", "optimize_excitation"]


class FourierTrajectory(Trajectory):
    """Finite Fourier series joint trajectory (see the module docstring); ``periods`` repetitions."""

    def __init__(self, center: Any, a: Any, b: Any, omega: float, periods: int = 1) -> None:
        c = np.asarray(center, float)
        a = np.asarray(a, float)
        b = np.asarray(b, float)
        if c.ndim != 1 or a.ndim != 2 or a.shape != b.shape or a.shape[0] != c.shape[0] or a.shape[1] < 1:
            raise ValueError(f"center (n,), a and b (n, L) expected, got {c.shape}, {a.shape}, {b.shape}")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("Fourier coefficients contain NaN or inf")
        if not (math.isfinite(omega) and omega > 0.0) or int(periods) < 1:
            raise ValueError("omega must be > 0 and periods >= 1")
        self.center, self.a, self.b, self.omega = c, a, b, float(omega)
        self.n = c.shape[0]
        self.periods = int(periods)
        self.period = 2.0 * math.pi / self.omega
        self.duration = self.period * self.periods

    @property
    def harmonics(self) -> int:
        return self.a.shape[1]

    def _evaluate(self, t: np.ndarray) -> Triple:
        l = np.arange(1, self.harmonics + 1, dtype=float)
        wl = self.omega * l  # (L,)
        s, c = np.sin(np.multiply.outer(t, wl)), np.cos(np.multiply.outer(t, wl))  # (N, L)
        q = self.center + s @ (self.a / wl).T - (c - 1.0) @ (self.b / wl).T
        qd = c @ self.a.T + s @ self.b.T
        qdd = -s @ (self.a * wl).T + c @ (self.b * wl).T
        return q, qd, qdd

    def to_dict(self) -> dict[str, Any]:
        return {"center": self.center.tolist(), "a": self.a.tolist(), "b": self.b.tolist(), "omega": self.omega,
                "periods": self.periods}


def _rest_coefficients(free_a: np.ndarray, free_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, L-1) free coefficients of harmonics 2..L -> full (n, L) with q̇(0) = q̈(0) = 0."""
    l = np.arange(2, free_a.shape[1] + 2, dtype=float)
    a1 = -free_a.sum(axis=1, keepdims=True)
    b1 = -(free_b * l).sum(axis=1, keepdims=True)
    return np.hstack([a1, free_a]), np.hstack([b1, free_b])


@dataclass
class ExcitationResult:
    """Optimized trajectory, cond(W_b) before/after, evaluations and wall time."""

    trajectory: FourierTrajectory
    condition_number: float
    initial_condition_number: float
    evaluations: int
    seconds: float
    samples: int


def _limits(model: RobotModel, margin: float, center: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    lim = model.limits
    lo, up = lim["lower"], lim["upper"]
    finite = np.isfinite(lo) & np.isfinite(up)
    default_range = np.where(model.sigma == 1, 0.2, math.pi / 2)
    m = np.where(finite, 0.5 * (lo + up), 0.0) if center is None else model.check_joint_vector(center, "center")
    r = np.where(finite, np.minimum(up - m, m - lo), default_range) * margin
    if np.any(r <= 0):
        raise ValueError("the center must lie strictly inside the joint limits")
    v = np.where(np.isfinite(lim["velocity"]) & (lim["velocity"] > 0), lim["velocity"], 2.0) * margin
    acc = np.where(np.isfinite(lim["acceleration"]) & (lim["acceleration"] > 0), lim["acceleration"], 5.0) * margin
    return m, r, v, acc


def _scaled(traj: FourierTrajectory, t: np.ndarray, r: np.ndarray, v: np.ndarray, acc: np.ndarray) -> FourierTrajectory:
    q, qd, qdd = traj._evaluate(t)
    ratio = np.maximum.reduce([np.abs(q - traj.center).max(0) / r, np.abs(qd).max(0) / v, np.abs(qdd).max(0) / acc])
    k = 1.0 / np.maximum(ratio, 1e-12)
    return FourierTrajectory(traj.center, traj.a * k[:, None], traj.b * k[:, None], traj.omega, traj.periods)


def condition_number(base: Any, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> float:
    """cond(W_b) of the base observation matrix stacked over the samples (2-norm)."""
    w = base.regressor(q, qd, qdd)
    return float(np.linalg.cond(w.reshape(-1, w.shape[-1])))


def optimize_excitation(
    model: RobotModel,
    *,
    harmonics: int = 5,
    period: float = 10.0,
    samples: int = 100,
    margin: float = 0.9,
    center: Any = None,
    seed: int = 0,
    maxiter: int = 60,
    time_budget: float = 50.0,
    base: Any = None,
) -> ExcitationResult:
    """Fourier trajectory (``harmonics`` terms, fundamental ``period`` s) minimizing cond(W_b).

    ``samples`` equally spaced instants of one period form the observation matrix; L-BFGS-B
    with finite differences on log cond, from a random start, stops after ``maxiter`` iterations
    or ``time_budget`` seconds.  Limits are the model's (position range around ``center``,
    default mid-range, velocity, acceleration), each times ``margin``.
    """
    from .estimation import base_parameters_of

    if int(harmonics) < 2:
        raise ValueError("harmonics must be >= 2 (the first harmonic is fixed by the rest conditions)")
    if not (math.isfinite(period) and period > 0.0) or int(samples) < 2 or not 0.0 < margin <= 1.0:
        raise ValueError("period must be > 0, samples >= 2 and margin in (0, 1]")
    base = base_parameters_of(model) if base is None else base
    n, L = model.dof, int(harmonics)
    omega = 2.0 * math.pi / period
    m, r, v, acc = _limits(model, margin, center)
    t = np.linspace(0.0, period, int(samples), endpoint=False)
    t_check = np.linspace(0.0, period, 8 * int(samples), endpoint=False)  # dense grid for the limits
    rng = np.random.default_rng(seed)
    x0 = rng.normal(0.0, 1.0, 2 * n * (L - 1))

    def build(x: np.ndarray) -> FourierTrajectory:
        fa, fb = x.reshape(2, n, L - 1)
        a, b = _rest_coefficients(fa, fb)
        return _scaled(FourierTrajectory(m, a, b, omega), t_check, r, v, acc)

    count = [0]
    t0 = time.perf_counter()
    report(f"optimizing an exciting trajectory ({L} harmonics, period {period:g} s, at most {int(maxiter)} "
           "iterations)")
    shown = [t0]

    def cost(x: np.ndarray) -> float:
        count[0] += 1
        tr = build(x)
        c = condition_number(base, *tr._evaluate(t))
        return math.log(c) if math.isfinite(c) else 1e3

    c0 = math.exp(cost(x0))
    best = [x0.copy(), c0]

    def track(x: np.ndarray) -> None:
        val = math.exp(cost(x))
        if val < best[1]:
            best[0], best[1] = x.copy(), val
        now = time.perf_counter()
        if now - shown[0] >= 5.0:
            shown[0] = now
            report(f"excitation: cond(W_b) {c0:.4g} -> {best[1]:.4g} after {count[0]} evaluations",
                   then="optimizing the exciting trajectory")
        if now - t0 > time_budget:
            raise StopIteration

    try:
        res = scipy.optimize.minimize(cost, x0, method="L-BFGS-B", callback=track,
                                      options={"maxiter": int(maxiter), "eps": 1e-4})
        if math.exp(res.fun) < best[1]:
            best[0], best[1] = res.x.copy(), math.exp(res.fun)
    except StopIteration:
        pass
    traj = build(best[0])
    cond = condition_number(base, *traj._evaluate(t))
    report(f"exciting trajectory ready: cond(W_b) {c0:.4g} -> {cond:.4g} in {time.perf_counter() - t0:.1f} s")
    return ExcitationResult(traj, cond, c0, count[0], time.perf_counter() - t0, int(samples))
