"""Position and velocity limits as an invariant of every command: the last guard before the effort clip.

Whatever the law, its gains, its rate or its reference, the joint accelerations a command produces are kept
inside bounds from which each joint can still stop before its position limits and stays under its velocity
limit.  The bounds are those of a discrete-time acceleration control (Del Prete, *Joint position and velocity
bounds in discrete-time acceleration/torque control of robot manipulators*, IEEE RA-L 3(1), 2018), derived here
for a constant acceleration a over one control period δt, a braking acceleration B > 0 of the joint and
d = q_max − q:

* **viability** (after the period, the joint can still stop at q_max braking at B):
  (q̇ + δt a)² <= 2 B (d − δt q̇ − δt² a / 2), that is
  a <= a_v = (sqrt(B (2 d − δt q̇ + B δt² / 4)) − q̇ − B δt / 2) / δt, and a = −B where the root is not real
  (the state is no longer viable: brake as hard as allowed).  It implies q(t + δt) <= q_max, and on the braking
  curve q̇ = sqrt(2 B d) it asks exactly a = −B as δt -> 0.  Where that a turns the joint back within δt, the
  farthest point d − q̇² / (2 |a|) is what must stay inside: a <= −q̇² / (2 d) too;
* **velocity**: a <= (v − q̇) / δt, never below −B (an arm above its velocity limit brakes at B), with
  v = (1 − :data:`GUARD_VELOCITY_MARGIN`) q̇_max in a control loop (the plant is never exactly the model);
* **beyond the limit** (d < 0, an arm measured outside): back toward the range at
  v_r = −min(q̇_max, k_r |d|): a <= max(−B, k_v (v_r − q̇)), with k_v = min(:data:`RETURN_GAIN`, 1 / (2 δt)).

δt is the horizon over which the command may stay in force (:data:`GUARD_PERIODS`, :data:`GUARD_HORIZON`) plus
the age of the state it is computed on: a law that runs on a state refused for a while (a conflicting publisher,
until ``state_timeout``) is bounded as if its command held from that state's instant on.

The lower limit mirrors the upper one.  The law's command Γ gives q̈ = A⁻¹(Γ − H) (direct dynamics, 001
§7.6); where a component leaves [a_lo, a_hi] it is clipped there and the command becomes Γ' = A q̈' + H
(inverse dynamics, 001 §7.4), the other joints keeping the law's acceleration.  Γ itself is returned (the same
array) when no bound is active: a plan inside the limits (its velocity at most v) that decelerates at most B is
never touched.

B per joint (:func:`braking_acceleration`): the acceleration its effort limit gives against the worst gravity
and the largest inertia of its range, times :data:`BRAKING_FRACTION` (the rest for the coupling with the other
joints), never less than the robot's configured acceleration limit when the effort allows that.  A parameter
may not lower an effort limit below what holds the arm up (:func:`check_holding`): no guard can keep an arm
that falls inside its limits.  Pure NumPy; the model's dynamics come in as functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..model.robot_model import RobotModel

BRAKING_FRACTION = 0.5
"""Share of a joint's worst-case acceleration capability the guard counts on to brake it."""
RETURN_GAIN = 50.0
"""1/s: velocity gain k_v of an arm measured beyond a limit (at most 1 / (2 δt))."""
RETURN_RATE = 2.0
"""1/s: an arm measured d beyond a limit is brought back at k_r d (at most its velocity limit)."""
HOLD_MARGIN = 0.1
"""An effort limit must exceed (1 + this) x the largest gravity torque of its joint over the range (sampled)."""
MAX_BRAKING = 10.0
"""A bound never asks to brake harder than this x B (a joint at its limit still moving toward it: the effort clip
limits the braking anyway; the command stays finite)."""
MIN_BRAKING = 1e-6
"""rad/s², m/s²: the braking acceleration of a joint whose effort cannot even hold it (it then barely moves)."""
GUARD_PERIODS = 3
"""δt >= this many control periods: the command in flight (computed on the last state, applied until the next one
is) counts."""
GUARD_HORIZON = 0.05
"""s: δt >= this: a command may stay in force this long (a late cycle on a loaded host; the simulated drive's
command timeout) without taking a joint past a limit.  On a MuJoCo RX-90 pushed at full effort toward its limits,
each command held 50 ms: 0.015 rad beyond with δt = 50 ms, 1.3 rad with δt = 3 periods (2 ms); every command
fresh: 2e-3 rad; a trapezoid at the velocity limits toward the limits: the same tracking error as unguarded."""
SAMPLES = 512
"""Configurations of the joint box sampled for the gravity and inertia extremes."""
GUARD_VELOCITY_MARGIN = 1e-3
"""The loop's guard bounds the velocity at (1 − this) q̇_max: with a plant that is not exactly the model (friction,
integration, a held command) the velocity bound a <= (q̇_max − q̇)/δt settles e δt above its target for an
acceleration error e; on MuJoCo's RX-90 tracking ``~/plan``'s minimum-time trapezoids at 500 Hz the arm ran up to
1.5e-4 q̇_max over the limit without this margin, 8.5e-4 under it with it (``test/test_executed_velocity.py``).
Plans at the limit are tracked that much slower on their cruise (the position error it leaves is caught up in the
deceleration)."""

Dynamics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Extremes:
    """Per joint, over mid-range and :data:`SAMPLES` configurations uniform in the joint box (±π where a joint
    has no limit): the largest |Q_j(q)| (gravity, 001 eq. 7.62) and the smallest and largest A_jj(q)."""

    gravity_max: np.ndarray
    inertia_min: np.ndarray
    inertia_max: np.ndarray


def sampled_extremes(model: RobotModel, samples: int = SAMPLES, seed: int = 0) -> Extremes:
    """The :class:`Extremes` of ``model`` (batched: one call of each model function)."""
    lim = model.limits
    lo = np.where(np.isfinite(lim["lower"]), lim["lower"], -np.pi)
    hi = np.where(np.isfinite(lim["upper"]), lim["upper"], np.pi)
    q = np.vstack([(lo + hi) / 2, np.random.default_rng(seed).uniform(lo, hi, (samples, model.dof))])
    diag = np.diagonal(np.asarray(model.inertia_matrix(q), float), axis1=-2, axis2=-1)
    gravity = np.abs(np.asarray(model.gravity_torques(q), float))
    return Extremes(gravity.max(axis=0), diag.min(axis=0), diag.max(axis=0))


def check_holding(effort: np.ndarray, gravity_max: np.ndarray, names: Sequence[str]) -> None:
    """``ValueError`` when an effort limit in use is below (1 + :data:`HOLD_MARGIN`) x the largest gravity torque
    of its joint: the arm could not hold itself up and would fall past its limits, whatever the law."""
    need = (1.0 + HOLD_MARGIN) * np.asarray(gravity_max, float)
    low = np.asarray(effort, float) < need
    if np.any(low):
        j = int(np.argmax(need - np.where(low, effort, np.inf)))
        raise ValueError(f"effort_limits of {names[j]} is {effort[j]:g}, below {need[j]:.6g} = {1 + HOLD_MARGIN:g} x "
                         f"the largest gravity torque on it in its range ({gravity_max[j]:.6g}, sampled): the arm "
                         "could not hold itself up and would fall past its limits")


def braking_acceleration(effort: np.ndarray, extremes: Extremes, acceleration: np.ndarray | None = None
                         ) -> np.ndarray:
    """B per joint: :data:`BRAKING_FRACTION` x (effort − max |Q|) / max A_jj, raised to the configured
    ``acceleration`` limit where the capability allows it; at least :data:`MIN_BRAKING`."""
    capability = (np.asarray(effort, float) - extremes.gravity_max) / extremes.inertia_max
    capability = np.where(np.isfinite(capability), capability, np.inf)
    b = BRAKING_FRACTION * capability
    if acceleration is not None:
        acc = np.asarray(acceleration, float)
        b = np.where(np.isfinite(acc), np.maximum(b, np.minimum(acc, capability)), b)
    return np.maximum(b, MIN_BRAKING)


def _upper_bound(d: np.ndarray, v: np.ndarray, vmax: np.ndarray, b: np.ndarray, dt: float, k_v: float
                 ) -> np.ndarray:
    """The largest acceleration toward a limit ``d`` ahead (d < 0: beyond it) at velocity ``v`` (module
    docstring); +inf where the limit is infinite."""
    with np.errstate(invalid="ignore", over="ignore"):
        radicand = b * (2.0 * d - dt * v + b * dt * dt / 4.0)
        viable = np.where(radicand >= 0.0, (np.sqrt(np.maximum(radicand, 0.0)) - v - b * dt / 2.0) / dt, -b)
        # turning back within the period: the farthest point, d − q̇² / (2 |a|), not the end, must stay inside
        turns = (v > 0.0) & (v + viable * dt < 0.0)
        viable = np.where(turns, np.minimum(viable, -v * v / (2.0 * np.maximum(d, 1e-300))), viable)
        velocity = np.maximum((vmax - v) / dt, -b)
        inside = np.minimum(viable, velocity)
        back = np.maximum(-b, k_v * (-np.minimum(vmax, RETURN_RATE * -d) - v))
        bound = np.maximum(np.where(d >= 0.0, inside, np.minimum(back, velocity)), -MAX_BRAKING * b)
    return np.where(np.isfinite(d), bound, np.where(np.isfinite(vmax), velocity, np.inf))


@dataclass(frozen=True, eq=False)
class LimitGuard:
    """The acceleration bounds of one robot at one control period (model joint order)."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray  # > 0; inf where none is given
    braking: np.ndarray   # B > 0
    period: float         # δt, s
    velocity_margin: float = 0.0  # the velocity bound is (1 − this) x velocity (GUARD_VELOCITY_MARGIN in a loop)

    def __post_init__(self) -> None:
        if not (np.isfinite(self.period) and self.period > 0):
            raise ValueError(f"control period {self.period!r} must be finite and > 0")
        if np.any(~(np.asarray(self.braking) > 0)):
            raise ValueError("braking accelerations must be > 0")
        if not 0.0 <= self.velocity_margin < 1.0:
            raise ValueError(f"velocity_margin {self.velocity_margin!r} must be in [0, 1)")
        # both sides in one vectorized call (upper, then the mirrored lower): half the per-call cost of NumPy on
        # a few joints, every control cycle
        velocity = np.asarray(self.velocity, float)
        vmax = velocity * (1.0 - self.velocity_margin) if self.velocity_margin else velocity
        braking = np.asarray(self.braking, float)
        object.__setattr__(self, "_vmax2", np.concatenate((vmax, vmax)))
        object.__setattr__(self, "_braking2", np.concatenate((braking, braking)))

    @classmethod
    def for_loop(cls, lower: np.ndarray, upper: np.ndarray, velocity: np.ndarray, braking: np.ndarray, rate: float
                 ) -> LimitGuard:
        """The guard of a loop at ``rate`` Hz: δt = max(:data:`GUARD_PERIODS` / rate, :data:`GUARD_HORIZON`), the
        velocity bounded :data:`GUARD_VELOCITY_MARGIN` inside the limit."""
        return cls(lower, upper, velocity, braking, max(GUARD_PERIODS / rate, GUARD_HORIZON), GUARD_VELOCITY_MARGIN)

    def acceleration_bounds(self, q: np.ndarray, qd: np.ndarray, age: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(a_lo, a_hi) at the measured state, ``age`` s old (δt + age: the command holds from the state's
        instant on, as far as the guard knows); a_lo <= a_hi.  Where the two sides cannot both hold over δt (braking
        hard enough for one limit would, held for all of δt, turn the joint back past the other or past its velocity
        limit), the side the joint moves toward wins: the next cycles see to the other."""
        dt = self.period + (age if age > 0.0 else 0.0)
        k_v = min(RETURN_GAIN, 0.5 / dt)
        n = len(q)
        both = _upper_bound(np.concatenate((self.upper - q, q - self.lower)), np.concatenate((qd, -qd)),
                            self._vmax2, self._braking2, dt, k_v)
        hi, lo = both[:n], -both[n:]
        crossed = lo > hi
        if np.any(crossed):
            toward_upper = (qd > 0) | ((qd == 0) & (self.upper - q < q - self.lower))
            lo, hi = np.where(crossed & toward_upper, hi, lo), np.where(crossed & ~toward_upper, lo, hi)
        return lo, hi

    def apply(self, tau: np.ndarray, q: np.ndarray, qd: np.ndarray, forward: Dynamics, inverse: Dynamics,
              age: float = 0.0, effort: np.ndarray | None = None,
              inertia: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """``tau`` itself when the acceleration it gives (``forward(q, qd, tau)``) is inside the bounds of the state
        (``age`` s old); else ``inverse(q, qd, a')`` with a' the acceleration clipped to them (a new array).  A
        non-finite ``tau`` or acceleration is returned as it is (the effort check refuses it).

        With the ``effort`` limits and the ``inertia`` matrix A(q): where that command would exceed a limit (the
        effort clip that follows would change the accelerations of every joint through A: a wrist pushed past its
        limit by the saturated shoulder): the clipped command where it keeps the bounds (to 1e-6 of a braking
        acceleration, summed); else the command within the limits whose accelerations are nearest a'
        (:func:`within_effort`), a joint it leaves outside its bounds weighing more until they hold, when it is
        less outside them (total excess in braking accelerations) than the clipped command.  On 14 MuJoCo RX-90 runs
        of 6 s under an adversary commanding ± the effort limits in random sign patterns, a fresh command every
        2 ms: the arm at most 0.0030 rad beyond its limits, at most one cycle per run outside the bounds (with the
        clip after the guard: 0.050 rad, up to 787 cycles); each command held 50 ms: 0.145 rad (0.164)."""
        if not np.isfinite(tau).all():
            return tau
        lo, hi = self.acceleration_bounds(q, qd, age)
        a = np.asarray(forward(q, qd, tau), float)
        if not np.isfinite(a).all() or np.all((a >= lo) & (a <= hi)):
            return tau
        target = np.clip(a, lo, hi)
        out = np.array(inverse(q, qd, target), dtype=float)
        if effort is None or inertia is None or np.all(np.abs(out) <= effort):
            return out
        effort = np.asarray(effort, float)
        clipped = np.clip(out, -effort, effort)  # what the effort clip that follows would send

        def excess(x: np.ndarray) -> float:
            acc = np.asarray(forward(q, qd, x), float)
            return float(np.sum(np.maximum(np.maximum(acc - hi, lo - acc), 0.0) / self.braking))

        before = excess(clipped)
        if before <= 1e-6:  # the clip keeps the bounds (to 1e-6 of a braking acceleration): as before
            return clipped
        bias = np.asarray(inverse(q, qd, np.zeros_like(target)), float)  # H(q, qd): Gamma = A qdd + H
        gamma = within_effort(np.asarray(inertia(q), float), bias, target, effort, self.braking, lo, hi)
        return gamma if excess(gamma) < before else clipped


REWEIGHT = 1e3
"""Factor on the weight of a joint whose acceleration the least-squares command leaves outside its bounds, per round
(:func:`within_effort`, at most :data:`REWEIGHT_ROUNDS`)."""
REWEIGHT_ROUNDS = 4


def within_effort(A: np.ndarray, H: np.ndarray, target: np.ndarray, effort: np.ndarray, braking: np.ndarray,
                  lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> np.ndarray:
    """The command Gamma, |Gamma_j| <= effort_j, whose accelerations A^-1 (Gamma - H) are nearest ``target``, in
    least squares with each joint's error in units of its braking acceleration (bounded-variable least squares,
    SciPy's BVLS; where the target is within reach, the command that gives it).  With bounds [``lo``, ``hi``] (the
    target inside them): a joint the solution leaves outside them by more than 1e-9 of its braking acceleration
    weighs :data:`REWEIGHT` times more in the next round, so that the bounds hold wherever the effort limits allow
    them; else the round's command with the least total excess over the bounds (in braking accelerations): one
    bound out of any reach does not drive the other joints out of theirs.
    """
    from scipy.optimize import lsq_linear

    M = np.linalg.solve(A, np.eye(target.size))  # A^-1
    braking = np.asarray(braking, float)
    w = 1.0 / braking
    best, best_excess = np.zeros_like(target), np.inf
    for _ in range(REWEIGHT_ROUNDS if lo is not None and hi is not None else 1):
        gamma = np.clip(lsq_linear(w[:, None] * M, w * (target + M @ H), bounds=(-effort, effort), method="bvls").x,
                        -effort, effort)
        if lo is None or hi is None:
            return gamma
        a = M @ (gamma - H)
        excess = np.maximum(np.maximum(a - hi, lo - a), 0.0) / braking  # in units of each joint's braking
        if excess.sum() < best_excess:  # a round that only moves the excess to other joints is not taken
            best, best_excess = gamma, float(excess.sum())
        outside = excess > 1e-9
        if not np.any(outside):
            break
        w = np.where(outside, w * REWEIGHT, w)
    return best


__all__ = ["BRAKING_FRACTION", "GUARD_HORIZON", "GUARD_PERIODS", "GUARD_VELOCITY_MARGIN", "HOLD_MARGIN", "MAX_BRAKING", "MIN_BRAKING",
           "RETURN_GAIN", "RETURN_RATE", "SAMPLES", "Extremes", "LimitGuard", "braking_acceleration", "check_holding",
           "sampled_extremes", "within_effort", "REWEIGHT", "REWEIGHT_ROUNDS"]
