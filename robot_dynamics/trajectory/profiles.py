"""One-dimensional interpolation functions r(t) of 001 chapter 8, with exact derivatives.

Every function maps times ``t`` (any shape) to ``(r, rd, rdd)``: the interpolation
function and its first and second time derivatives, with r(0) = 0 and r(tf) = 1
(001 eq. 8.1: q(t) = q^i + r(t) D).  Times outside [0, tf] are clamped (the
motion is at rest before and after).  ``tau`` is the duration of the
acceleration phase of the trapezoid profiles.

Peak values for a unit displacement (multiply by |D_j| for joint j):

=================  ====================  ===============================
profile            max |rd|              max |rdd|
=================  ====================  ===============================
linear (8.4)       1/tf                  infinite at t = 0, tf (0 inside)
cubic (8.7)        3/(2 tf)  (8.8)       6/tf^2  (8.9)
quintic (8.11)     15/(8 tf) (8.12)      10/(sqrt(3) tf^2)  (8.13)
bang_bang (8.15)   2/tf  (8.16)          4/tf^2  (8.17)
trapezoid (8.19)   1/(tf - tau)          1/(tau (tf - tau))
smooth_trapezoid   1/(tf - tau)          3/(2 tau (tf - tau))  (8.40)
=================  ====================  ===============================
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

PROFILES = ("linear", "cubic", "quintic", "bang_bang", "trapezoid", "smooth_trapezoid")
"""Names of the interpolation functions, as accepted by ``point_to_point``."""

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


def _prepare(t: np.ndarray | float, tf: float) -> tuple[np.ndarray, np.ndarray]:
    if not (math.isfinite(tf) and tf > 0.0):
        raise ValueError(f"tf must be finite and positive, got {tf}")
    t = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(t)):
        raise ValueError("t contains NaN or inf")
    inside = (t >= 0.0) & (t <= tf)
    return np.clip(t, 0.0, tf), inside


def _finish(r: np.ndarray, rd: np.ndarray, rdd: np.ndarray, inside: np.ndarray) -> Triple:
    return r, np.where(inside, rd, 0.0), np.where(inside, rdd, 0.0)


def linear(t: np.ndarray | float, tf: float) -> Triple:
    """r = t/tf (001 eq. 8.4).  Velocity 1/tf on [0, tf]; the acceleration is impulsive at the ends (reported 0)."""
    tc, inside = _prepare(t, tf)
    r = tc / tf
    return _finish(r, np.full_like(r, 1.0 / tf), np.zeros_like(r), inside)


def cubic(t: np.ndarray | float, tf: float) -> Triple:
    """r = 3 s^2 - 2 s^3, s = t/tf (001 eq. 8.7); zero boundary velocities."""
    tc, inside = _prepare(t, tf)
    s = tc / tf
    r = s * s * (3.0 - 2.0 * s)
    rd = 6.0 * s * (1.0 - s) / tf
    rdd = (6.0 - 12.0 * s) / tf**2
    return _finish(r, rd, rdd, inside)


def quintic(t: np.ndarray | float, tf: float) -> Triple:
    """r = 10 s^3 - 15 s^4 + 6 s^5 (001 eq. 8.11); zero boundary velocities and accelerations."""
    tc, inside = _prepare(t, tf)
    s = tc / tf
    r = s**3 * (10.0 - 15.0 * s + 6.0 * s * s)
    rd = 30.0 * s * s * (1.0 - s) ** 2 / tf
    rdd = 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s) / tf**2
    return _finish(r, rd, rdd, inside)


def bang_bang(t: np.ndarray | float, tf: float) -> Triple:
    """Constant acceleration then deceleration, switching at tf/2 (001 eq. 8.15)."""
    tc, inside = _prepare(t, tf)
    s = tc / tf
    first = s <= 0.5
    r = np.where(first, 2.0 * s * s, -1.0 + 4.0 * s - 2.0 * s * s)
    rd = np.where(first, 4.0 * s, 4.0 - 4.0 * s) / tf
    rdd = np.where(first, 4.0, -4.0) / tf**2
    return _finish(r, rd, rdd, inside)


def _check_tau(tau: float, tf: float) -> None:
    if not (math.isfinite(tau) and 0.0 < tau <= 0.5 * tf * (1.0 + 1e-12)):
        raise ValueError(f"tau must be in (0, tf/2] = (0, {0.5 * tf}], got {tau}")


def trapezoid(t: np.ndarray | float, tf: float, tau: float) -> Triple:
    """Trapezoidal velocity with acceleration phases of duration tau (001 eqs. 8.19, 8.33 general form).

    r = t^2 / (2 tau (tf - tau)) on [0, tau], (2t - tau) / (2 (tf - tau)) on the
    constant-velocity phase, 1 - (tf - t)^2 / (2 tau (tf - tau)) on [tf - tau, tf].
    tau = tf/2 is the bang-bang profile.  Computed in s = t/tf, b = tau/tf.
    """
    tc, inside = _prepare(t, tf)
    _check_tau(tau, tf)
    b = min(tau / tf, 0.5)
    s = tc / tf
    c = 1.0 / (b * (1.0 - b))
    u = 1.0 - s
    acc, dec = s < b, s > 1.0 - b
    r = np.where(acc, 0.5 * c * s * s, np.where(dec, 1.0 - 0.5 * c * u * u, (2.0 * s - b) / (2.0 * (1.0 - b))))
    rd = np.where(acc, c * s, np.where(dec, c * u, 1.0 / (1.0 - b))) / tf
    rdd = np.where(acc, c, np.where(dec, -c, 0.0)) / tf**2
    return _finish(r, rd, rdd, inside)


def smooth_trapezoid(t: np.ndarray | float, tf: float, tau: float) -> Triple:
    """Continuous-acceleration trapezoid (001 eqs. 8.36-8.45, last relation of §8.3.4).

    Acceleration phase r = (2 t^3/tau^2 - t^4/tau^3) / (2 (tf - tau)) (8.37 with
    lambda_j k_vj = |D_j| / (tf - tau) by 8.45), constant velocity in the middle,
    deceleration by symmetry r(t) = 1 - r_acc(tf - t) (equivalent to "[13.43]" = 8.43).
    The acceleration is parabolic, peaking at tau/2 with 3/(2 tau (tf - tau)) (8.40).
    Computed in s = t/tf, b = tau/tf.
    """
    tc, inside = _prepare(t, tf)
    _check_tau(tau, tf)
    b = min(tau / tf, 0.5)
    s = tc / tf
    k = 1.0 / (2.0 * (1.0 - b))
    acc, dec = s < b, s > 1.0 - b
    x = np.where(acc, s, np.where(dec, 1.0 - s, 0.0)) / b  # phase progress in [0, 1]
    ra = k * b * (2.0 * x**3 - x**4)
    rda = k * (6.0 * x**2 - 4.0 * x**3)
    rdda = k / b * (12.0 * x - 12.0 * x**2)
    r = np.where(acc, ra, np.where(dec, 1.0 - ra, (2.0 * s - b) * k))
    rd = np.where(acc | dec, rda, 2.0 * k) / tf
    rdd = np.where(acc, rdda, np.where(dec, -rdda, 0.0)) / tf**2
    return _finish(r, rd, rdd, inside)


def profile_function(name: str) -> Callable[..., Triple]:
    """The interpolation function called ``name`` (one of ``PROFILES``)."""
    table: dict[str, Callable[..., Triple]] = {
        "linear": linear,
        "cubic": cubic,
        "quintic": quintic,
        "bang_bang": bang_bang,
        "trapezoid": trapezoid,
        "smooth_trapezoid": smooth_trapezoid,
    }
    if name not in table:
        raise ValueError(f"unknown profile {name!r}; expected one of {PROFILES}")
    return table[name]


def minimum_time(name: str, distance: np.ndarray | float, k_v: np.ndarray | float, k_a: np.ndarray | float) -> np.ndarray:
    """Minimum travelling time of each joint taken alone (001 Table 8.1, eqs. 8.22, 8.35, 8.45-8.47).

    ``distance`` = |D_j|; ``k_v``, ``k_a`` the velocity and acceleration limits
    (for the smooth trapezoid k_a bounds the peak acceleration 8.40, so that
    tau = 3/2 k_v / k_a by 8.41).  Returns 0 for a zero distance.
    """
    D = np.abs(np.asarray(distance, dtype=float))
    kv = np.asarray(k_v, dtype=float)
    ka = np.asarray(k_a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "linear":
            t = D / kv
        elif name == "cubic":
            t = np.maximum(1.5 * D / kv, np.sqrt(6.0 * D / ka))
        elif name == "quintic":
            t = np.maximum(15.0 * D / (8.0 * kv), np.sqrt(10.0 * D / (math.sqrt(3.0) * ka)))
        elif name == "bang_bang":
            t = np.maximum(2.0 * D / kv, 2.0 * np.sqrt(D / ka))
        elif name == "trapezoid":
            v = np.minimum(kv, np.sqrt(D * ka))  # 8.35 when 8.18 fails
            t = v / ka + D / v  # 8.22
        elif name == "smooth_trapezoid":
            v = np.minimum(kv, np.sqrt(2.0 / 3.0 * D * ka))  # 8.47 when 8.46 fails
            t = 1.5 * v / ka + D / v  # 8.41, 8.45
        else:
            raise ValueError(f"unknown profile {name!r}; expected one of {PROFILES}")
    return np.where(D > 0.0, t, 0.0)
