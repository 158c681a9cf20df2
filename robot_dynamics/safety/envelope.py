"""The robot's safety envelope: the limits of its description as invariants of every node and command.

One object, built from the robot's description (URDF limits: position, velocity, effort) and never
widened by a run-time parameter, judges everything that crosses the boundary of the control loop:

* **commands**: :meth:`SafetyEnvelope.effort_limits` turns a parameter's per-joint limits into the
  limits in use (a parameter may lower a limit, never raise one: refused with the reason), and
  :meth:`~SafetyEnvelope.clip_effort` clips every command to them (a non-finite command is refused);
  :meth:`~SafetyEnvelope.check_efforts` refuses a plan's feed-forward efforts beyond them;
  :func:`check_gains` refuses gains the sampled loop cannot realize at its rate;
* **measured states**: :meth:`~SafetyEnvelope.check_state` refuses a position farther than
  ``position_margin`` outside its limits, or a velocity beyond ``(1 + velocity_margin)`` times its limit —
  finite but impossible, like a NaN; :meth:`~SafetyEnvelope.max_jump` bounds how far a joint can move
  between two states (used by :class:`~robot_dynamics.safety.state_monitor.StateMonitor`);
  :meth:`~SafetyEnvelope.hold_target` keeps a hold target inside the limits;
* **plans**: :meth:`~SafetyEnvelope.check_path` checks the *interpolated* path (exact polynomial bounds,
  :func:`~robot_dynamics.trajectory.sampled.check_path_limits`) within the position and velocity limits
  and its end inside the limits; an arm measured outside a limit may be brought back toward the range
  (the path never farther out than the arm or the path's first point, and never beyond the margin),
  never farther out.

Limits the description does not give (a velocity or effort of 0 in a URDF, a continuous joint) are not
checked (infinite).  Pure NumPy: every check is a function the tests call at its boundary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .refusal import Refused

if TYPE_CHECKING:
    from ..model.robot_model import RobotModel
    from ..trajectory.sampled import SampledTrajectory

POSITION_MARGIN = 0.05
"""rad or m: a measured position farther than this outside its limits is impossible (refused); a path may
leave the limits, toward the range, at most this far (an arm being brought back)."""
VELOCITY_MARGIN = 9.0
"""A measured |q̇| above (1 + this) = 10 x the velocity limit is impossible (refused); between two states a joint
moves at most that fast (plus :data:`JUMP_MARGIN`).  Generous on purpose: a real arm (or a simulated one without a
speed limit) does overshoot its URDF velocity limit in a transient (2.1 x seen on the planar arm at the start of
an excitation, 2.8 x on a mock RX-90 under load), and refusing its true states then leaves it without feedback."""
JUMP_MARGIN = 0.02
"""rad or m: position change allowed between two states on top of the velocity bound (sensor noise,
quantization, stamps that are not the sampling instants)."""
LIMIT_RTOL = 1e-9
"""A parameter's limit equal to the description's up to this relative round-off is not above it."""
GAIN_MARGIN = 2.0
"""Gains must stay this factor inside the stability bounds of the sampled PD loop (:func:`check_gains`)."""


def _limits(x: Any, n: int, what: str, positive: bool) -> np.ndarray:
    a = np.array(np.broadcast_to(np.asarray(x, dtype=float), (n,)), dtype=float)
    if np.any(np.isnan(a)):
        raise ValueError(f"{what} contains NaN")
    if positive:  # 0 or negative: the description gives no limit
        a = np.where(a > 0, a, np.inf)
    return a


@dataclass(frozen=True, eq=False)
class SafetyEnvelope:
    """The limits of one robot (URDF coordinates, model joint order) and the margins of the checks."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray  # > 0; inf where none is given
    effort: np.ndarray    # > 0; inf where none is given
    acceleration: np.ndarray | None = None  # > 0; inf where none is given (a URDF has none: the robot's config)
    position_margin: float = POSITION_MARGIN
    velocity_margin: float = VELOCITY_MARGIN
    jump_margin: float = JUMP_MARGIN

    def __post_init__(self) -> None:
        n = len(self.names)
        set_ = object.__setattr__
        set_(self, "names", tuple(self.names))
        set_(self, "lower", _limits(self.lower, n, "lower", False))
        set_(self, "upper", _limits(self.upper, n, "upper", False))
        set_(self, "velocity", _limits(self.velocity, n, "velocity", True))
        set_(self, "effort", _limits(self.effort, n, "effort", True))
        set_(self, "acceleration", _limits(np.inf if self.acceleration is None else self.acceleration, n,
                                           "acceleration", True))
        if np.any(self.lower > self.upper):
            j = int(np.argmax(self.lower > self.upper))
            raise ValueError(f"{self.names[j]}: lower limit {self.lower[j]:g} above upper limit {self.upper[j]:g}")
        for what in ("position_margin", "velocity_margin", "jump_margin"):
            value = getattr(self, what)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{what} must be finite and >= 0, got {value!r}")
        for a in (self.lower, self.upper, self.velocity, self.effort, self.acceleration):
            a.flags.writeable = False

    @classmethod
    def from_model(cls, model: RobotModel, **margins: float) -> SafetyEnvelope:
        """The envelope of ``model``'s description (its ``limits``), with ``margins`` (see the class fields)."""
        lim = model.limits
        return cls(tuple(model.joint_names), lim["lower"], lim["upper"], lim["velocity"], lim["effort"],
                   lim.get("acceleration"), **margins)

    def with_margins(self, **margins: float) -> SafetyEnvelope:
        """The same limits with other margins (the limits themselves never change)."""
        return dataclasses.replace(self, **margins)

    @property
    def dof(self) -> int:
        return len(self.names)

    # ------------------------------------------------------------------ commands
    def effort_limits(self, requested: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
        """The effort limits in use for a parameter's ``requested`` per-joint limits (empty or None: the
        description's).  ``ValueError`` when one is not finite and > 0, or above the description's: a
        parameter may lower a limit, never raise it."""
        if requested is None or len(requested) == 0:
            return self.effort.copy()
        r = np.asarray(requested, dtype=float)
        if r.shape != (self.dof,):
            raise ValueError(f"effort_limits needs {self.dof} values (model order), got {r.size}")
        bad = ~(np.isfinite(r) & (r > 0))
        if np.any(bad):
            j = int(np.argmax(bad))
            raise ValueError(f"effort_limits of {self.names[j]} is {r[j]!r}: a limit must be finite and > 0")
        above = r > self.effort * (1 + LIMIT_RTOL)
        if np.any(above):
            j = int(np.argmax(above))
            raise ValueError(f"effort_limits of {self.names[j]} is {r[j]:g}, above the robot's limit "
                             f"{self.effort[j]:g} (its description): a parameter may lower a limit, never raise it")
        return np.minimum(r, self.effort)

    def clip_effort(self, tau: np.ndarray, limits: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """``tau`` (n,) clipped to ±``limits`` (default: the description's; never above them); ``Refused``
        (``non_finite_output``) when it is not finite: such a command is not sent."""
        if not np.isfinite(tau).all():
            raise Refused("non_finite_output", "a non-finite effort was computed: not sent")
        lim = self.effort if limits is None else np.minimum(limits, self.effort)
        out = np.minimum(tau, lim, out=out)
        return np.maximum(out, -lim, out=out)

    def check_efforts(self, effort: np.ndarray, limits: np.ndarray | None = None) -> None:
        """``Refused`` (``effort_limits``) when a plan's effort (m, n) exceeds ``limits`` (default: the
        description's) anywhere, naming the point and the joint."""
        lim = self.effort if limits is None else np.minimum(limits, self.effort)
        over = np.abs(effort) > lim
        if np.any(over):
            k, j = np.argwhere(over)[0]
            raise Refused("effort_limits", f"points[{k}].effort of {self.names[j]} is {effort[k, j]:.6g}, beyond its "
                                           f"limit {lim[j]:.6g}")

    # ------------------------------------------------------------------ states
    def check_state(self, q: np.ndarray, qd: np.ndarray) -> None:
        """``Refused`` for a measured state no arm of this description can be in: a position farther than
        ``position_margin`` outside its limits (``position_limits``) or a velocity above
        (1 + ``velocity_margin``) x its limit (``velocity_limits``)."""
        self.check_velocity(qd)
        self.check_position(q)

    def check_position(self, q: np.ndarray) -> None:
        """``Refused`` (``position_limits``) for a position farther than ``position_margin`` outside its limits."""
        m = self.position_margin
        lo, hi = self.lower - m, self.upper + m
        out = (q < lo) | (q > hi)
        if np.any(out):
            j = int(np.argmax(np.where(out, np.maximum(lo - q, q - hi), -np.inf)))
            side = self.lower[j] - q[j] if q[j] < lo[j] else q[j] - self.upper[j]
            raise Refused("position_limits", f"joint_states says {self.names[j]} is at {q[j]:.6g}, {side:.3g} outside "
                                             f"its limits [{self.lower[j]:.6g}, {self.upper[j]:.6g}] (more than the "
                                             f"margin {m:g}): impossible, refused")

    def check_velocity(self, qd: np.ndarray) -> None:
        """``Refused`` (``velocity_limits``) for a velocity above (1 + ``velocity_margin``) x its limit."""
        vmax = self.velocity * (1 + self.velocity_margin)
        fast = np.abs(qd) > vmax
        if np.any(fast):
            j = int(np.argmax(np.abs(qd) / vmax))
            raise Refused("velocity_limits", f"joint_states says {self.names[j]} moves at {qd[j]:.6g}, above "
                                             f"{1 + self.velocity_margin:g} x its velocity limit {self.velocity[j]:.6g}: "
                                             "impossible, refused")

    def max_jump(self, dt: float) -> np.ndarray:
        """The farthest each joint can move in ``dt`` seconds (>= 0): (1 + velocity_margin) v_max dt +
        ``jump_margin`` (inf where the description gives no velocity limit)."""
        finite = np.isfinite(self.velocity)
        step = np.where(finite, self.velocity, 0.0) * ((1 + self.velocity_margin) * max(dt, 0.0))
        return np.where(finite, step, np.inf) + self.jump_margin

    def hold_target(self, q: np.ndarray) -> np.ndarray:
        """The position to hold for a measured ``q``: ``q`` moved inside the position limits (a hold target is
        never outside them; an arm measured outside is brought back to the nearest limit)."""
        return np.clip(q, self.lower, self.upper)

    # ------------------------------------------------------------------ plans
    def path_bounds(self, start: np.ndarray | None = None, first: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Position bounds of a path that starts with the arm at ``start`` and the path at ``first``: the limits,
        widened where the arm (or the path's first point) is outside them up to that point — a path may bring
        the arm back toward the range, never farther out — and never beyond ``position_margin``."""
        lo, hi = self.lower.copy(), self.upper.copy()
        m = self.position_margin
        for p in (start, first):
            if p is not None:
                lo = np.minimum(lo, np.maximum(p, self.lower - m))
                hi = np.maximum(hi, np.minimum(p, self.upper + m))
        return lo, hi

    def check_path(self, traj: SampledTrajectory, *, start: np.ndarray | None = None,
                   names: Sequence[str] | None = None, **tolerances: float) -> None:
        """``Refused`` (``path_limits``) unless the interpolated path of ``traj`` stays within the position
        bounds of :meth:`path_bounds` and the velocity limits (exact, between the samples too), and its last
        point within the position limits (where the arm will be held).  ``tolerances``: those of
        :func:`~robot_dynamics.trajectory.sampled.check_path_limits` (its defaults: the controller's policy,
        shared with the planners)."""
        from ..trajectory.sampled import check_path_limits

        names = list(names or self.names)
        lo, hi = self.path_bounds(start, traj.positions[0])
        try:
            check_path_limits(traj, lo, hi, self.velocity, names=names, **tolerances)
        except ValueError as exc:
            raise Refused("path_limits", str(exc) + self._start_segment_cause(traj, lo, hi, names, tolerances)) \
                from None
        if traj.degree == 1:
            self._check_velocity_jumps(traj, names, tolerances.get("rate_tolerance", 1e-6))
        tol = tolerances.get("position_tolerance", 1e-6)
        end = traj.positions[-1]
        out = np.maximum(self.lower - tol - end, end - self.upper - tol)
        if np.any(out > 0):
            j = int(np.argmax(out))
            raise Refused("path_limits", f"the trajectory ends with {names[j]} at {end[j]:.6g}, outside its limits "
                                         f"[{self.lower[j]:.6g}, {self.upper[j]:.6g}]: the arm would be held there")


    def _start_segment_cause(self, traj: SampledTrajectory, lo: np.ndarray, hi: np.ndarray, names: Sequence[str],
                             tolerances: dict[str, float]) -> str:
        """Where a refused path went wrong, when it is the segment JTC adds from the arm's position to a first point
        later than t = 0 (``traj.started``): that segment alone checked; '' when it is within the limits."""
        from ..trajectory.sampled import SampledTrajectory, check_path_limits

        if not traj.started or traj.times.size < 2:
            return ""
        two = slice(0, 2)
        first = SampledTrajectory(traj.times[two], traj.positions[two],
                                  None if traj.velocities is None else traj.velocities[two],
                                  None if traj.accelerations is None else traj.accelerations[two])
        try:
            check_path_limits(first, lo, hi, self.velocity, names=names, **tolerances)
        except ValueError:
            d = np.abs(traj.positions[1] - traj.positions[0])
            v = np.zeros_like(d) if traj.velocities is None else np.abs(traj.velocities[1])
            j = int(np.argmax(d / traj.times[1] + v))  # the joint with the most to do in that segment
            at = f" and must reach {v[j]:.4g} there" if v[j] > 0 else ""
            return (f"; in the segment from where the arm is to the first point (no point at t = 0, the first at "
                    f"t = {traj.times[1]:.6g} s): {names[j]} is {d[j]:.4g} from it{at} — start the trajectory at "
                    "the arm's position or give its first point more time")
        return ""

    def _check_velocity_jumps(self, traj: SampledTrajectory, names: Sequence[str], rtol: float) -> None:
        """A positions-only trajectory is played linearly (JTC): its velocity jumps at every point, from rest at
        the start and to rest at the end — an infinite acceleration no arm under torque control follows (a reversal
        at full speed drove a simulated arm to 3.9 x its velocity limit and out of its limits).  Refused
        (``path_limits``) unless every jump Δv at a point could be made at the acceleration limit within the
        shorter of its two segments: |Δv| <= a_max min(T_k, T_k+1) (from rest: T_0, to rest: T_last)."""
        a = self.acceleration
        if traj.times.size < 2 or not np.any(np.isfinite(a)):
            return
        dt = np.diff(traj.times)
        v = np.diff(traj.positions, axis=0) / dt[:, None]  # (S, n) the segments' velocities
        zero = np.zeros((1, v.shape[1]))
        jumps = np.abs(np.diff(np.vstack([zero, v, zero]), axis=0))  # (S + 1, n) at every point, rest at both ends
        span = np.minimum(np.concatenate([[np.inf], dt]), np.concatenate([dt, [np.inf]]))  # (S + 1,)
        allowed = a[None, :] * span[:, None] * (1 + rtol)
        over = jumps > allowed
        if np.any(over):
            k, j = np.argwhere(over)[0]
            raise Refused("path_limits", f"positions-only trajectory: the velocity of {names[j]} jumps by "
                                         f"{jumps[k, j]:.6g} at t = {traj.times[k]:.6g} s (linear interpolation), "
                                         f"more than its acceleration limit {a[j]:.6g} allows within the adjacent "
                                         f"segment ({span[k]:.6g} s): send velocities and accelerations, or slower "
                                         "points")


def check_gains(kp: Any, kd: Any, period: float, names: Sequence[str], *, inertia: Any = None,
                what: str = "gains") -> None:
    """``ValueError`` unless the PD gains (per joint) keep the sampled loop stable with margin at ``period``.

    The joint error of a decoupled double integrator under PD with zero-order hold, e = q^d − q, follows
    e_{k+1} = (A − B K) e_k with A = [[1, T], [0, 1]], B = [T²/2, T], K = [Kp, Kd]; its characteristic
    polynomial z² − (2 − a − b) z + (1 + a − b) (a = Kp T²/2, b = Kd T) is stable (Jury) iff Kd T < 2 and
    Kp T < 2 Kd.  Required here with the margin :data:`GAIN_MARGIN`: Kd T <= 2 / GAIN_MARGIN and
    Kp T <= 2 Kd / GAIN_MARGIN.  Acceleration gains (computed torque, 001 eq. 9.24) as they are; torque
    gains (PD + gravity, PID: N m/rad) divided by ``inertia``, the smallest diagonal A_jj(q) of the arm
    (the largest closed-loop bandwidth)."""
    kp = np.asarray(kp, dtype=float)
    kd = np.asarray(kd, dtype=float)
    if inertia is not None:
        a = np.asarray(inertia, dtype=float)
        kp, kd = kp / a, kd / a
    if not (np.isfinite(period) and period > 0):
        raise ValueError(f"control period {period!r} must be finite and > 0")
    kd_max = 2.0 / GAIN_MARGIN / period
    over_d = kd > kd_max
    if np.any(over_d):
        j = int(np.argmax(kd / kd_max))
        raise ValueError(f"{what}: Kd of {names[j]} ({kd[j]:.6g} 1/s{', per unit inertia' if inertia is not None else ''}) "
                         f"exceeds {kd_max:.6g} = 1/T at {1 / period:g} Hz: the sampled loop would be unstable "
                         "or nearly so (Jury: Kd T < 2)")
    kp_max = 2.0 * kd / GAIN_MARGIN / period
    over_p = kp > kp_max
    if np.any(over_p):
        j = int(np.argmax(kp - kp_max))
        raise ValueError(f"{what}: Kp of {names[j]} ({kp[j]:.6g}) exceeds Kd/T = {kp_max[j]:.6g} at {1 / period:g} Hz: "
                         "the sampled loop would be unstable or nearly so (Jury: Kp T < 2 Kd); raise the damping or "
                         "lower the stiffness")


__all__ = ["GAIN_MARGIN", "JUMP_MARGIN", "LIMIT_RTOL", "POSITION_MARGIN", "VELOCITY_MARGIN", "SafetyEnvelope",
           "check_gains"]
