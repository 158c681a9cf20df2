"""Samples of a planned trajectory for a controller that interpolates them (ros2_controllers' JTC, the controller of
this package: :class:`~robot_dynamics.trajectory.sampled.SampledTrajectory`), chosen so that the interpolation *is*
the plan wherever the plan is a polynomial of degree <= 5.

The profiles of 001 §8.3 (and their sequences through waypoints) are piecewise polynomials of degree <= 5: the
trapezoids (8.19, 8.36-8.45), bang-bang (8.15), cubic (8.7), quintic (8.11), linear (8.4).  A quintic Hermite
segment between two samples that lie in one piece reproduces that piece exactly (it interpolates q, qd, qdd at
both ends).  So the samples are the period grid *plus every breakpoint* of the plan (:meth:`Trajectory.breakpoints`):
no segment straddles a switch, and the only inexact segments are those next to a breakpoint where the acceleration
jumps (one sample carries one acceleration).  There the sample's acceleration is the value between the two one-sided
accelerations closest to zero (the plateau's 0 at the end of an acceleration phase, 0 at the bang-bang switch, the
smaller one at a stop where the motion reverses; the inside value at the first and last point).  With that choice
the interpolated velocity stays below the plateau or the peak on either side (the Hermite error of an acceleration
mismatch d is d h^2 u^3 (1-u)^2 / 2 at the segment's end, resp. d h^2 u^2 (1-u)^3 / 2 at its start: its velocity
never adds up beyond them), and near a stop the interpolated position stays on the side of the true one (no
overshoot of a waypoint placed on a position limit).  Two *guard* samples (exact states, :data:`GUARD` away)
confine those inexact segments to a short window around the switch.

A plan whose *velocity* jumps inside (the linear profile through several waypoints) cannot be followed by a C^1
interpolation without overshooting the velocity (by up to half the jump, whatever the sampling): its samples carry
positions only, so the controller interpolates linearly, which is then the plan itself.

Sample times are rounded to the nanoseconds of ``builtin_interfaces/Duration`` *before* the states are evaluated, so
that what a receiver rebuilds (:func:`message_times`) is consistent with the states it gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Trajectory
from .sampled import SampledTrajectory

MIN_INTERVAL = 1e-6
"""s: samples closer than max(MIN_INTERVAL, 1e-3 period) are merged (a grid point next to a breakpoint is dropped,
breakpoints closer than that become one sample): a tiny segment would amplify the rounding of the positions."""
GUARD = 1e-4
"""s: guard samples this close (at most 5 % of the period, at least 4 x the merge distance) on either side of an
acceleration switch: the interpolation differs from the plan only within them."""


def message_times(t: np.ndarray | float) -> np.ndarray:
    """Times as a ``JointTrajectory`` carries them (integer nanoseconds, rounded) and as a receiver reads them back
    (``sec + 1e-9 * nanosec``, :func:`robot_dynamics.ros.validation.trajectory`)."""
    ns = np.round(np.atleast_1d(np.asarray(t, dtype=float)) * 1e9).astype(np.int64)
    return (ns // 1_000_000_000) + 1e-9 * (ns % 1_000_000_000)


def toward_zero(a_left: np.ndarray, a_right: np.ndarray) -> np.ndarray:
    """The value in [min(a_left, a_right), max(a_left, a_right)] closest to 0, elementwise (see module docstring)."""
    return np.clip(0.0, np.minimum(a_left, a_right), np.maximum(a_left, a_right))


def breakpoint_states(traj: Trajectory, times: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """(times, q, qd, qdd, qd_jump, qdd_left, qdd_right) at the breakpoints of ``traj`` (default all of them), in
    its own time: the states the samples there carry (q, qd of ``evaluate``, the acceleration by
    :func:`toward_zero`, the inside value at 0 and at the end), the size of the velocity jump |qd(t+) - qd(t-)|
    and the one-sided accelerations."""
    b = traj.breakpoints() if times is None else np.asarray(times, dtype=float)
    _, vl, al = traj.one_sided(b, -1)
    _, vr, ar = traj.one_sided(b, +1)
    q, v, _ = traj.evaluate(b)
    a = toward_zero(al, ar)
    first, last = b <= 0.0, b >= traj.duration
    a[first] = ar[first]
    a[last] = al[last]
    jump = np.abs(vr - vl)
    jump[first | last] = 0.0  # the rest before and after is the controller's hold, not part of the samples
    return b, q, v, a, jump, al, ar


@dataclass
class PlaybackSamples:
    """Samples for a controller: ``times`` (N,) as a message carries them, ``q``, ``qd``, ``qdd`` (N, n) (the
    states: ``qd``/``qdd`` are the plan's, also when the message carries positions only), ``fields``: 3 (positions,
    velocities, accelerations) or 1 (positions only: the velocity jumps inside), ``at_breakpoint`` (N,) bool."""

    times: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    fields: int
    at_breakpoint: np.ndarray

    def trajectory(self) -> SampledTrajectory:
        """What a controller interpolates from these samples (linear with positions only, quintic otherwise)."""
        if self.fields == 1:
            return SampledTrajectory(self.times, self.q)
        return SampledTrajectory(self.times, self.q, self.qd, self.qdd)


def _merge(times: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clusters of the sorted breakpoint ``times`` (0 first, the end last) closer than ``gap`` to their first member:
    (representative time, first index, last index) per cluster.  0 and the end stay samples: a cluster holding the
    end is represented by it (unless it is the cluster of 0: then the end is a cluster of its own)."""
    reps, firsts, lasts = [float(times[0])], [0], [0]
    for i in range(1, times.size):
        if times[i] - reps[-1] < gap:
            lasts[-1] = i
        else:
            reps.append(float(times[i]))
            firsts.append(i)
            lasts.append(i)
    end = float(times[-1])
    if reps[-1] != end:
        if len(reps) == 1:
            lasts[0] = max(times.size - 2, 0)
            reps.append(end)
            firsts.append(times.size - 1)
            lasts.append(times.size - 1)
        else:
            reps[-1] = end
    return np.array(reps), np.array(firsts), np.array(lasts)


def _nearest_distance(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Distance of each of ``x`` to the nearest of the sorted ``ref``."""
    pos = np.searchsorted(ref, x)
    below = ref[np.clip(pos - 1, 0, ref.size - 1)]
    above = ref[np.clip(pos, 0, ref.size - 1)]
    return np.minimum(np.abs(x - below), np.abs(above - x))


def playback_samples(traj: Trajectory, period: float, scale: float = 1.0) -> PlaybackSamples:
    """Samples of ``traj`` played ``scale`` times slower (001 §8.3: q(t/k), qd/k, qdd/k^2) every ``period`` s and at
    every breakpoint (see the module docstring), times rounded to nanoseconds first.  Where the acceleration jumps,
    two guard samples :data:`GUARD` s (at most; 5 % of the period) on either side confine the inexact segments to
    that window."""
    period, k = float(period), float(scale)
    if not (np.isfinite(period) and period > 0 and np.isfinite(k) and k > 0):
        raise ValueError(f"period and scale must be finite and positive, got {period}, {k}")
    n = traj.n
    end = float(message_times(k * traj.duration)[0])
    if end <= 0.0:
        q = traj.evaluate(np.zeros(1))[0]
        z = np.zeros((1, n))
        return PlaybackSamples(np.zeros(1), q, z, z.copy(), 3, np.ones(1, bool))
    gap = max(MIN_INTERVAL, 1e-3 * period)
    b, _, _, _, jump, b_al, b_ar = breakpoint_states(traj)
    bt = message_times(k * b)
    bt[0], bt[-1] = 0.0, end
    rep, first, last = _merge(bt, gap)
    # a merged cluster: the left acceleration of its first breakpoint, the right one of its last; the inside
    # value at the first and the last sample
    al, ar = b_al[first], b_ar[last]
    acc = toward_zero(al, ar)
    acc[0], acc[-1] = ar[0], al[-1]
    # guards around the interior breakpoints where the acceleration jumps, if the pieces there are long enough
    eps = max(min(0.05 * period, GUARD), 4.0 * gap)
    amax = float(np.max(np.abs(np.concatenate([al, ar])), initial=0.0))
    jumps = np.max(np.abs(al - ar), axis=1) > 1e-9 * max(amax, 1e-300)
    jumps[0] = jumps[-1] = False
    room_l = np.concatenate([[0.0], np.diff(rep)])
    room_r = np.concatenate([np.diff(rep), [0.0]])
    guards = np.concatenate([rep[jumps & (room_l >= 2 * eps + gap)] - eps, rep[jumps & (room_r >= 2 * eps + gap)] + eps])
    guards = message_times(guards) if guards.size else guards
    fixed = np.sort(np.concatenate([rep, guards]))
    count = int(np.floor(end / period * (1 + 1e-12)))
    grid = message_times(period * np.arange(1, count + 1))
    grid = grid[(_nearest_distance(grid, fixed) >= gap) & (grid < end)]
    times = np.concatenate([rep, guards, grid])
    order = np.argsort(times, kind="stable")
    times = times[order]
    is_bp = np.concatenate([np.ones(rep.size, bool), np.zeros(guards.size + grid.size, bool)])[order]
    q, qd, qdd = traj.evaluate(np.clip(times / k, 0.0, traj.duration))
    qd, qdd = qd / k, qdd / k**2
    qdd[is_bp] = acc / k**2
    vmax = np.max(np.abs(qd)) if qd.size else 0.0
    fields = 1 if np.any(jump > 1e-9 * max(vmax * k, 1e-300)) else 3
    return PlaybackSamples(times, q, qd, qdd, fields, is_bp)
