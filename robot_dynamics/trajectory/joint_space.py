"""Joint-space trajectories: synchronized point to point (001 §8.3) and through waypoints.

Synchronization (all joints start and stop together, 001 eq. 8.14) writes every
motion as q(t) = q^i + r(t) D (8.1), a straight line in joint space.  Joint j
then moves with |qd_j| = |D_j| |rd| and |qdd_j| = |D_j| |rdd|, so the joint
limits become limits on the interpolation function:

    V = min_j k_vj / |D_j|,   A = min_j k_aj / |D_j|     (joints with D_j != 0).

* polynomial and bang-bang profiles: t_f = max_j t_fj of Table 8.1 (8.14),
  which equals the same table applied to r with (V, A);
* trapezoid: the homothetic synchronization of 8.23-8.34 (lambda_j, nu_j,
  tau = lambda_j k_vj / (nu_j k_aj)) with k'_vj = sqrt(|D_j| k_aj) (8.35) when the
  velocity cannot be reached; in r-space this is the peak velocity
  min(V, sqrt(A)), tau = V'/A, t_f = tau + 1/V' (8.22);
* smooth trapezoid: same with the continuous-acceleration phases, k_a bounding
  the *peak* acceleration (8.40), tau = 3/2 V'/A (8.41), t_f = tau + 1/V' (8.45),
  V' = min(V, sqrt(2A/3)) (8.47).  No jerk limit is needed: the seed fixes the
  shape of the acceleration phase (parabolic acceleration), so the jerk is
  implied: 6 V'/tau^2 per unit displacement at the ends of the phases.

A requested ``duration`` longer than the minimum is honoured by a uniform time
stretch of the minimum-time profile (velocities / k, accelerations / k^2, 001
§8.3 end of introduction); shorter raises ValueError.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .base import PiecewiseTrajectory, Trajectory, Triple
from .profiles import PROFILES, minimum_time, profile_function

_TINY = 1e-200  # displacements below this are treated as zero (avoids overflow of k_v / |D_j|)
_REL = 1e-12  # relative slack when comparing a requested duration to the minimum


def _joint_vector(x: Any, what: str, n: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{what} must be a non-empty 1-D joint vector, got shape {a.shape}")
    if n is not None and a.size != n:
        raise ValueError(f"{what} has {a.size} entries, expected {n}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or inf")
    return a


def _limit_vector(x: Any, what: str, n: int) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{what} must be a scalar or have shape ({n},), got {a.shape}")
    if np.any(np.isnan(a)) or np.any(a <= 0.0):
        raise ValueError(f"{what} must be positive (inf allowed), got {a}")
    return a


def _check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return profile


class PointToPointTrajectory(Trajectory):
    """q(t) = q_start + r(t) (q_goal - q_start) for one interpolation function r (001 eq. 8.1).

    Attributes: ``profile``, ``duration`` (t_f), ``tau`` (acceleration phase of the
    trapezoid profiles, else None), ``q_start``, ``q_goal``, ``displacement`` D.
    """

    def __init__(self, q_start: np.ndarray, q_goal: np.ndarray, profile: str, duration: float,
                 tau: float | None = None) -> None:
        self.q_start_ = np.asarray(q_start, dtype=float).copy()
        self.q_goal = np.asarray(q_goal, dtype=float).copy()
        self.displacement = self.q_goal - self.q_start_
        self.profile = _check_profile(profile)
        self.n = self.q_start_.size
        self.duration = float(duration)
        self.tau = tau
        self._r = profile_function(profile)

    def interpolation(self, t: np.ndarray | float) -> Triple:
        """(r, rd, rdd) of the interpolation function at times t."""
        if self.duration == 0.0 or not np.any(self.displacement):
            z = np.zeros_like(np.asarray(t, dtype=float))
            return z + 1.0, z, z
        if self.tau is None:
            return self._r(t, self.duration)
        return self._r(t, self.duration, self.tau)

    def breakpoints(self) -> np.ndarray:
        """0, t_f and the phase switches of the profile: tau and t_f - tau for the trapezoids (001 eqs. 8.19,
        8.36), t_f/2 for bang-bang (8.15); the pieces between are polynomials of degree <= 5."""
        tf = self.duration
        if tf == 0.0 or not np.any(self.displacement):
            return np.unique([0.0, tf])
        if self.tau is not None:
            return np.unique([0.0, self.tau, tf - self.tau, tf])
        if self.profile == "bang_bang":
            return np.array([0.0, 0.5 * tf, tf])
        return np.array([0.0, tf])

    def _evaluate(self, t: np.ndarray) -> Triple:
        r, rd, rdd = self.interpolation(t)
        D = self.displacement
        return self.q_start_ + r[:, None] * D, rd[:, None] * D, rdd[:, None] * D


def synchronized_timing(profile: str, displacement: np.ndarray, v_max: np.ndarray, a_max: np.ndarray
                        ) -> tuple[float, float | None]:
    """Minimum synchronized duration t_f and acceleration time tau (None for non-trapezoids).

    See the module docstring; raises ValueError when the limits allow an
    infinitely fast motion (e.g. a_max = inf for a profile that needs it).
    """
    profile = _check_profile(profile)
    a = np.abs(displacement)
    moving = a > _TINY
    if not np.any(moving):
        return 0.0, None
    if profile != "linear" and not np.all(np.isfinite(a_max[moving])):
        raise ValueError(f"profile {profile!r} needs a finite acceleration limit for every moving joint")
    V = float(np.min(v_max[moving] / a[moving]))
    A = float(np.min(a_max[moving] / a[moving])) if profile != "linear" else math.inf
    if profile == "trapezoid":
        v = min(V, math.sqrt(A))
        tau = v / A
        return tau + 1.0 / v, tau
    if profile == "smooth_trapezoid":
        v = min(V, math.sqrt(2.0 * A / 3.0))
        tau = 1.5 * v / A
        return tau + 1.0 / v, tau
    tf = float(minimum_time(profile, 1.0, V, A))
    if not (math.isfinite(tf) and tf > 0.0):
        raise ValueError(f"profile {profile!r} needs a finite velocity limit for every moving joint")
    return tf, None


def point_to_point(q_start: Any, q_goal: Any, v_max: Any, a_max: Any, profile: str = "trapezoid",
                   duration: float | None = None) -> PointToPointTrajectory:
    """Synchronized point-to-point joint trajectory, minimum time under the limits (001 §8.3).

    Parameters
    ----------
    q_start, q_goal: (n,) joint vectors.
    v_max, a_max: velocity and acceleration limits k_v, k_a, scalars or (n,)
        (positive; ``inf`` allowed where the profile does not need the limit).
        For "smooth_trapezoid" a_max bounds the peak acceleration (8.40).
    profile: one of "linear", "cubic", "quintic", "bang_bang", "trapezoid", "smooth_trapezoid".
    duration: optional t_f; must be >= the minimum time (else ValueError); a
        longer one stretches the minimum-time motion uniformly in time.

    Joints with zero displacement stay still; if all are still the minimum
    duration is 0 and q(t) = q_goal.  (|D_j| < 1e-200 counts as zero for the timing.)
    """
    qs = _joint_vector(q_start, "q_start")
    n = qs.size
    qg = _joint_vector(q_goal, "q_goal", n)
    kv = _limit_vector(v_max, "v_max", n)
    ka = _limit_vector(a_max, "a_max", n)
    tf, tau = synchronized_timing(profile, qg - qs, kv, ka)
    if duration is not None:
        duration = float(duration)
        if not math.isfinite(duration) or duration < 0.0:
            raise ValueError(f"duration must be finite and non-negative, got {duration}")
        if duration < tf * (1.0 - _REL):
            raise ValueError(f"requested duration {duration} s is shorter than the minimum {tf} s for these limits")
        if tf > 0.0:
            if tau is not None:
                tau *= duration / tf
            tf = duration
        else:
            tf = duration
    return PointToPointTrajectory(qs, qg, profile, tf, tau)


# ---------------------------------------------------------------- via points
_HERMITE = {
    # rows: value/derivative conditions at s = 0 and s = 1 on the monomials s^0..s^deg
    3: np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 1, 2, 3]], dtype=float),
    5: np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0],
                 [1, 1, 1, 1, 1, 1], [0, 1, 2, 3, 4, 5], [0, 0, 2, 6, 12, 20]], dtype=float),
}


class HermiteSegment(Trajectory):
    """Cubic (C^1) or quintic (zero boundary accelerations, C^2) polynomial from (q0, v0) to (q1, v1) in time T."""

    def __init__(self, q0: np.ndarray, q1: np.ndarray, v0: np.ndarray, v1: np.ndarray, duration: float,
                 degree: int) -> None:
        self.n = q0.size
        self.duration = float(duration)
        self.degree = degree
        T = self.duration
        if degree == 3:
            rhs = np.stack([q0, v0 * T, q1, v1 * T])
        else:
            z = np.zeros_like(q0)
            rhs = np.stack([q0, v0 * T, z, q1, v1 * T, z])
        self.coeffs = np.linalg.solve(_HERMITE[degree], rhs)  # (deg+1, n), in s = t/T

    def _evaluate(self, t: np.ndarray) -> Triple:
        T = self.duration
        s = (t / T)[:, None]
        c = self.coeffs
        k = np.arange(c.shape[0])
        powers = s ** k  # (N, deg+1)
        q = powers @ c
        d1 = (k[1:] * c[1:].T).T
        d2 = (k[2:] * (k[2:] - 1) * c[2:].T).T
        qd = (s ** k[:-1]) @ d1 / T
        qdd = (s ** k[:-2]) @ d2 / T**2
        return q, qd, qdd

    def peaks(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact max |qd_j| and max |qdd_j| over the segment (endpoints and interior extrema)."""
        T = self.duration
        c = self.coeffs
        k = np.arange(c.shape[0])
        out = []
        for order in (1, 2):
            kk = k[order:]
            fac = kk.astype(float) if order == 1 else kk * (kk - 1.0)
            d = fac[:, None] * c[order:]  # derivative coefficients (ascending powers), per joint
            peaks = np.empty(self.n)
            for j in range(self.n):  # loop over joints: roots of the next derivative
                p = d[:, j]
                dp = np.arange(1, p.size) * p[1:]
                cand = [0.0, 1.0]
                if np.any(dp != 0.0):
                    roots = np.roots(dp[::-1])
                    cand += [float(x.real) for x in roots if abs(x.imag) < 1e-12 and 0.0 < x.real < 1.0]
                peaks[j] = np.max(np.abs(np.polyval(p[::-1], np.array(cand))))
            out.append(peaks / T**order)
        return out[0], out[1]


def _min_hermite_duration(q0, q1, v0, v1, kv, ka, degree, slack=1e-12) -> HermiteSegment:
    """Smallest T (by bracketing and bisection on the exact peaks) for which the segment respects the limits."""
    def ok(T: float) -> bool:
        pv, pa = HermiteSegment(q0, q1, v0, v1, T, degree).peaks()
        return bool(np.all(pv <= kv * (1 + slack)) and np.all(pa <= ka * (1 + slack)))

    D = np.abs(q1 - q0)
    lo = max(float(np.max(D / kv)), 1e-9)
    hi = lo
    for _ in range(200):
        if ok(hi):
            break
        lo, hi = hi, hi * 2.0
    else:
        raise ValueError("no feasible duration for a via-point segment (via velocity too close to the limit?)")
    if hi == lo and ok(lo):  # the lower bound itself is feasible
        return HermiteSegment(q0, q1, v0, v1, lo, degree)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-13 * hi:
            break
    return HermiteSegment(q0, q1, v0, v1, hi, degree)


def through_waypoints(waypoints: Any, v_max: Any, a_max: Any, profile: str = "trapezoid",
                      via_velocities: Any = None) -> PiecewiseTrajectory:
    """Trajectory through a sequence of joint waypoints (m, n), each segment synchronized.

    * ``via_velocities=None``: stop at every waypoint; each segment is a minimum
      time ``point_to_point`` with ``profile`` (any of ``PROFILES``).
    * ``via_velocities`` given: continuous-velocity polynomial segments, profile
      "cubic" (C^1) or "quintic" (C^2, zero accelerations at the waypoints).  It
      is an (m-2, n) array of velocities at the interior waypoints (start and end
      at rest), or ``"auto"``: the classic heuristic (mean of the adjacent
      segment slopes of the stop-at-every-point timing, 0 where the slope changes
      sign or is 0), clipped to the velocity limit.  Each segment gets the
      smallest duration (bisection on the exact peaks of |qd|, |qdd|) that keeps
      every joint within its limits.
    """
    W = np.asarray(waypoints, dtype=float)
    if W.ndim != 2 or W.shape[0] < 2 or W.shape[1] < 1:
        raise ValueError(f"waypoints must have shape (m >= 2, n), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("waypoints contain NaN or inf")
    m, n = W.shape
    kv = _limit_vector(v_max, "v_max", n)
    ka = _limit_vector(a_max, "a_max", n)
    _check_profile(profile)
    if via_velocities is None:
        return PiecewiseTrajectory([point_to_point(W[i], W[i + 1], kv, ka, profile) for i in range(m - 1)])
    if profile not in ("cubic", "quintic"):
        raise ValueError("via velocities need profile 'cubic' or 'quintic'")
    if not (np.all(np.isfinite(kv)) and np.all(np.isfinite(ka))):
        raise ValueError("via-point segments need finite velocity and acceleration limits")
    if isinstance(via_velocities, str):
        if via_velocities != "auto":
            raise ValueError(f"via_velocities must be None, 'auto' or an array, got {via_velocities!r}")
        T = np.array([point_to_point(W[i], W[i + 1], kv, ka, profile).duration for i in range(m - 1)])
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(T[:, None] > 0, (W[1:] - W[:-1]) / T[:, None], 0.0)
        same = np.sign(slope[:-1]) * np.sign(slope[1:]) > 0
        V = np.where(same, 0.5 * (slope[:-1] + slope[1:]), 0.0)
        V = np.clip(V, -kv, kv)
    else:
        V = np.asarray(via_velocities, dtype=float)
        if V.shape != (m - 2, n):
            raise ValueError(f"via_velocities must have shape ({m - 2}, {n}), got {V.shape}")
        if not np.all(np.isfinite(V)):
            raise ValueError("via_velocities contain NaN or inf")
        if np.any(np.abs(V) > kv):
            raise ValueError("a via velocity exceeds the velocity limit")
    vel = np.vstack([np.zeros(n), V, np.zeros(n)])
    degree = 3 if profile == "cubic" else 5
    segs = []
    for i in range(m - 1):
        if np.all(W[i] == W[i + 1]) and np.all(vel[i] == 0) and np.all(vel[i + 1] == 0):
            continue  # repeated waypoint at rest: nothing to do
        segs.append(_min_hermite_duration(W[i], W[i + 1], vel[i], vel[i + 1], kv, ka, degree))
    if not segs:
        return PiecewiseTrajectory([point_to_point(W[0], W[-1], kv, ka, profile)])
    return PiecewiseTrajectory(segs)
