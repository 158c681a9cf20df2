"""Mutation check of the safety checks: each check disabled in turn must make a test fail.

``python tools/check_mutations.py [--nodes] [NAME ...]`` copies the repository's ``robot_dynamics`` and ``test``
trees into a temporary directory once per mutation, applies the mutation (one exact text replacement, which must
match once), runs the tests that guard it (``pytest -x -q``) and reports whether they failed, as they must.
``--nodes`` also runs the mutations whose guard is a test against real node processes (minutes each).  Exit code 1
when a mutation survives (its tests pass) or no longer applies (the code changed: update the table).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVELOPE = "robot_dynamics/safety/envelope.py"
MONITOR = "robot_dynamics/safety/state_monitor.py"
GOAL = "robot_dynamics/ros/controller/goal.py"
CORE = "robot_dynamics/ros/controller/core.py"
CORE_TESTS = ("test/test_controller_core.py",)
UNIT = ["test/test_safety_envelope.py", "test/test_state_monitor.py", "test/test_goal_tolerances.py"]
NODES = "test/test_invariants_nodes.py"
GUARD = "robot_dynamics/safety/limit_guard.py"
GUARD_TESTS = ("test/test_limit_guard.py",)


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...] = tuple(UNIT)
    nodes: bool = False  # guarded by a test of real node processes


MUTATIONS = (
    # the three of the issue
    Mutation("path tolerance bound e > 2 bound", GOAL, "if (e > bound).any():", "if (e > 2 * bound).any():"),
    Mutation("trajectory efforts beyond the limits accepted (controller)", "robot_dynamics/ros/controller/inputs.py",
             'ctx.envelope.check_efforts(data["effort"], ctx.effort)', "pass",
             (f"{NODES}::test_trajectory_efforts_beyond_the_limits_are_refused",), nodes=True),
    Mutation("an older goal preempts a newer one", GOAL,
             "any(o is not None and o.seq is not None and o.seq > self.seq for o in others)", "False"),
    Mutation("out-of-order states accepted", MONITOR, "if stamp < anchor.stamp:", "if False:"),
    # every check of the envelope
    Mutation("effort limits raised by a parameter", ENVELOPE, "above = r > self.effort * (1 + LIMIT_RTOL)",
             "above = r < 0"),
    Mutation("commands not clipped", ENVELOPE, "out = np.minimum(tau, lim, out=out)\n        return np.maximum(out, -lim, out=out)",
             "return np.array(tau, dtype=float)"),
    Mutation("non-finite commands sent", ENVELOPE, "if not np.isfinite(tau).all():\n            raise Refused(\"non_finite_output\"",
             "if False:\n            raise Refused(\"non_finite_output\""),
    Mutation("plan efforts not checked", ENVELOPE, "over = np.abs(effort) > lim", "over = np.abs(effort) > np.inf"),
    Mutation("impossible positions accepted", ENVELOPE, "out = (q < lo) | (q > hi)", "out = np.zeros(q.shape, bool)"),
    Mutation("beyond the margin trusted out of nowhere", MONITOR,
             "if a is None or stamp < a.stamp or self._jump(a, q, stamp, now) is not None:", "if False:"),
    Mutation("beyond the margin trusted after a jump", MONITOR,
             "if a is None or stamp < a.stamp or self._jump(a, q, stamp, now) is not None:",
             "if a is None or stamp < a.stamp:"),
    Mutation("impossible velocities accepted", ENVELOPE, "fast = np.abs(qd) > vmax", "fast = np.zeros(qd.shape, bool)"),
    Mutation("hold target outside the limits", ENVELOPE, "return np.clip(q, self.lower, self.upper)", "return q.copy()"),
    Mutation("recovery bound not capped by the margin", ENVELOPE,
             "hi = np.maximum(hi, np.minimum(p, self.upper + m))", "hi = np.maximum(hi, p)"),
    Mutation("path positions not checked", ENVELOPE, "check_path_limits(traj, lo, hi, self.velocity,",
             "check_path_limits(traj, lo - 1e3, hi + 1e3, self.velocity,"),
    Mutation("path velocities not checked", ENVELOPE, "check_path_limits(traj, lo, hi, self.velocity,",
             "check_path_limits(traj, lo, hi, None,"),
    Mutation("path end outside the limits accepted", ENVELOPE,
             "out = np.maximum(self.lower - tol - end, end - self.upper - tol)", "out = np.zeros_like(end)"),
    Mutation("positions-only velocity jumps unchecked", ENVELOPE, "if traj.degree == 1:", "if False:"),
    Mutation("Kd beyond the sampled loop's bound", ENVELOPE, "over_d = kd > kd_max", "over_d = kd < 0"),
    Mutation("Kp beyond the sampled loop's bound", ENVELOPE, "over_p = kp > kp_max", "over_p = kp < 0"),
    Mutation("stale stamps accepted", MONITOR, "if age > self.timeout:", "if False:"),
    Mutation("future stamps accepted", MONITOR, "if age < -self.timeout:", "if False:"),
    Mutation("jumps accepted", MONITOR, "if np.any(over > 0):", "if False:"),
    Mutation("a stamp ahead of the clock buys room", MONITOR,
             "return min(abs(stamp - a.stamp), max(arrival - a.arrival, 0.0) + ARRIVAL_SLACK)",
             "return abs(stamp - a.stamp)"),
    Mutation("no conflict hold", MONITOR, "elif now < self.conflict_until:", "elif False:"),
    Mutation("no confirmation after a conflict", MONITOR, "elif self.confirming and self.run < self.confirm:",
             "elif False:"),
    # the limit guard (the arm inside its position and velocity limits whatever the law)
    Mutation("viability bound ignored", GUARD, "inside = np.minimum(viable, velocity)", "inside = velocity",
             GUARD_TESTS),
    Mutation("a turn within the period unchecked", GUARD, "turns = (v > 0.0) & (v + viable * dt < 0.0)",
             "turns = v < -np.inf", GUARD_TESTS),
    Mutation("velocity limit not bounded", GUARD, "velocity = np.maximum((vmax - v) / dt, -b)",
             "velocity = np.full_like(v, np.inf)", GUARD_TESTS),
    Mutation("velocity bound brakes harder than B", GUARD, "velocity = np.maximum((vmax - v) / dt, -b)",
             "velocity = (vmax - v) / dt", GUARD_TESTS),
    Mutation("no return from beyond a limit", GUARD,
             "back = np.maximum(-b, k_v * (-np.minimum(vmax, RETURN_RATE * -d) - v))", "back = np.full_like(d, np.inf)",
             GUARD_TESTS),
    Mutation("braking not capped", GUARD, ", -MAX_BRAKING * b)", ", -np.inf)", GUARD_TESTS),
    Mutation("crossed bounds not resolved", GUARD, "if np.any(crossed):", "if False:", GUARD_TESTS),
    Mutation("the age of the state ignored", GUARD, "dt = self.period + (age if age > 0.0 else 0.0)",
             "dt = self.period", GUARD_TESTS),
    Mutation("the guard's command never applied", GUARD, "return np.array(inverse(q, qd, np.clip(a, lo, hi)), dtype=float)",
             "return tau", GUARD_TESTS),
    # bounded work per request: the C take of a huge request does not hold the GIL (other services go on)
    Mutation("the GIL held during a service's take", "robot_dynamics/ros/gil_free_take.py",
             "                    return ctypes.CDLL(path)", "                    return ctypes.PyDLL(path)",
             ("test/test_gil_free_take.py",)),
    Mutation("the GIL held during a goal's take", "robot_dynamics/ros/gil_free_take.py",
             "                    return ctypes.CDLL(path)", "                    return ctypes.PyDLL(path)",
             ("test/test_gil_free_goal.py",)),
    Mutation("an effort limit below gravity accepted", GUARD, "low = np.asarray(effort, float) < need",
             "low = np.asarray(effort, float) < 0", GUARD_TESTS),
    # the controller's control cycle (its pure core; the node tests replay the same faults against processes)
    Mutation("the controller does not guard", CORE, "if ctx.guard is not None:  # the arm stays inside",
             "if False:  # the arm stays inside", CORE_TESTS),
    Mutation("the controller trusts every state", CORE, "stamp = self.monitor.judge(q, qd, stamp, now_clock)",
             "stamp = stamp or now_clock", CORE_TESTS),
    Mutation("the controller holds outside the limits", CORE,
             "self.hold = self.ctx.envelope.hold_target(q)  # never outside the limits", "self.hold = q.copy()",
             CORE_TESTS),
    Mutation("stale states judged at twice the timeout", CORE,
             "stale = self.state_wall is None or wall - self.state_wall > self.timeout",
             "stale = self.state_wall is None or wall - self.state_wall > 2 * self.timeout", CORE_TESTS),
    Mutation("a leap of the control time is no jump", CORE, "if dt < 0 or dt > self.max_time_step:", "if dt < 0:",
             CORE_TESTS),
    Mutation("the law runs on a frozen state until stale", CORE,
             "(stale or wall - self.state_wall > self.blind_age)", "stale", CORE_TESTS),
    Mutation("a goal never succeeds", GOAL, "if not ((ep > tol.goal_position).any() or (ev > tol.goal_velocity).any()):",
             "if False:", CORE_TESTS),
    Mutation("a blind cycle reports a reference outside the limits", CORE,
             "return Cycle(tau, ctx.envelope.hold_target(self.q), self.zero, self.zero)",
             "return Cycle(tau, self.q, self.zero, self.zero)", CORE_TESTS),
    Mutation("a preempted goal reported as JTC does not", CORE,
             'self.end_goal(CANCELED, INVALID_GOAL, preempted(\n                "a new "',
             'self.end_goal(ABORTED, SUCCESSFUL, preempted(\n                "a new "',
             CORE_TESTS),
    Mutation("a trajectory ending in motion accepted", "robot_dynamics/ros/validation.py",
             "moving = np.flatnonzero(last > END_VELOCITY_ZERO)", "moving = np.flatnonzero(last > np.inf)",
             ("test/test_goal_tolerances.py",)),
    # answers wait for discovery; a refused huge request leaves no memory behind
    Mutation("an answer the client cannot receive yet is dropped", "robot_dynamics/ros/late_answer.py",
             "if ret in RETRIED:\n        def run", "if False:\n        def run",
             ("test/test_late_answer.py", "test/test_gil_free_take.py")),
    Mutation("nodes start with several malloc arenas", "robot_dynamics/ros/node_set.py",
             'NODE_ENVIRONMENT: dict[str, str] = {"MALLOC_ARENA_MAX": "1"}', "NODE_ENVIRONMENT: dict[str, str] = {}",
             ("test/test_node_environment.py",)),
)


def run(m: Mutation) -> tuple[str, float]:
    """'killed' (a test failed), 'SURVIVED' or 'NOT APPLIED'; seconds."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutation_") as tmp:
        work = Path(tmp)
        for sub in ("robot_dynamics", "test", "config", "urdf", "tools", "docs"):
            shutil.copytree(ROOT / sub, work / sub, ignore=shutil.ignore_patterns("__pycache__"))
        for f in ("pytest.ini", "README.md"):
            shutil.copy(ROOT / f, work / f)
        target = work / m.path
        text = target.read_text()
        if m.old and text.count(m.old) != 1:
            return "NOT APPLIED", time.monotonic() - t0
        target.write_text(text.replace(m.old, m.new) if m.old else text)
        env = {**os.environ, "PYTHONPATH": str(work)}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests],
                              cwd=work, env=env, capture_output=True, text=True)
        return ("killed" if proc.returncode == 1 else "SURVIVED" if proc.returncode == 0
                else f"error {proc.returncode}"), time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="run only mutations whose name contains one of these")
    ap.add_argument("--nodes", action="store_true", help="also the mutations guarded by node-process tests")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if (args.nodes or not m.nodes)
              and (not args.names or any(n in m.name for n in args.names))]
    # the guarding tests pass on the code as it is, else a "killed" mutation would prove nothing
    tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
    outcome, seconds = run(Mutation("baseline", ENVELOPE, "", "", tests))
    print(f"{'passed' if outcome == 'SURVIVED' else 'FAILED':12s} {seconds:6.1f} s  baseline: the guarding tests "
          "without a mutation", flush=True)
    if outcome != "SURVIVED":
        return 1
    bad = 0
    for m in chosen:
        outcome, seconds = run(m)
        bad += outcome != "killed"
        print(f"{outcome:12s} {seconds:6.1f} s  {m.name}  ({m.path})", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} mutations killed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
