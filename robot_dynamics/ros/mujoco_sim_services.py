"""The simulator node's services and reports: ``~/pause``, ``~/reset``, ``~/statistics`` and ``/diagnostics``."""

from __future__ import annotations

import json

from std_srvs.srv import SetBool, Trigger

from .diagnostics import ERROR, OK, STALE, WARN, Report

# the drive's modes (what ~/drive_state reports)
BRAKED, RUNNING, ZERO, DAMPED, FAULT = "braked", "running", "zero torque", "damped", "fault"

class SimServices:
    """The simulator node's services and reports: ``~/pause``, ``~/reset``, ``~/statistics`` and ``/diagnostics``: a mixin of the node (its attributes)."""

    def on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        try:
            with self.lock:
                self.paused = bool(request.data)
                response.success = True
                response.message = "paused" if self.paused else "running"
                self.get_logger().info(f"simulation {response.message} (~/pause)")
                if not self.paused and self.arm is not None:
                    self._publish()
        except Exception as exc:  # noqa: BLE001 - a service never kills the node
            response.success, response.message = False, f"{type(exc).__name__}: {exc}"
        return response

    def on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            with self.lock:
                if self.arm is None:
                    response.success, response.message = False, "no robot model yet"
                    return response
                self._restart("~/reset: sim restarted at t = 0")
                response.success = True
                response.message = (f"reset: t = 0, positions {self.q0.tolist()}, at rest; "
                                    "brake engaged until the next command")
        except Exception as exc:  # noqa: BLE001 - a service never kills the node
            response.success, response.message = False, f"{type(exc).__name__}: {exc}"
        return response

    def on_statistics(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self.lock:
            stats = {
                "drive_state": self.drive_state(),
                "mode": "lockstep" if self.lockstep else "real time",
                "sim_time": self.arm.time if self.arm is not None else None,
                "paused": self.paused,
                "pause_at_time": self.pause_at_time,
                "steps": self.steps,
                "commands": {k: self.counts[k] for k in ("received", "applied", "clipped")},
                "ignored": {k[len("ignored_"):]: v for k, v in self.counts.items() if k.startswith("ignored_")},
                "republished": self.counts["republished"],
                "refused": dict(self.refusals.counts),
                "drive_transitions": self.transitions,
                "watchdog": self._watchdog_text(),
                # real time: the longest run of control periods on one command while driven (1: a fresh command
                # every period), since start and since the previous call, with the sim time it ended
                "periods_on_one_command": {k: {"periods": n, "seconds": n * self.period, "ended_at_sim_time": t}
                                           for k, (n, t) in self.longest.items()},
                # each run of GAP_PERIODS or more periods on one command since the previous call: [sim time at
                # which the next command came, periods]
                "long_runs_on_one_command": [list(g) for g in self.gaps],
                "long_runs_wall": [list(g) for g in self.gap_walls],
            }
            self.gaps.clear()
            self.gap_walls.clear()
            self.longest["since_last_call"] = (0, 0.0)
        response.success = True
        response.message = json.dumps(stats)
        return response

    def _diagnostics(self, dt: float) -> Report:
        """``/diagnostics`` (every ``diagnostic_period``): drive state, steps, command counters, and over the last
        period the achieved real-time factor (sim s per wall s) and ``joint_states`` rate."""
        with self.lock:
            sim_time = self.arm.time if self.arm is not None else 0.0
            steps, published = self.steps, self.published
            state, mode, paused = self.drive_state(), self.mode, self.paused
            counts = {k: self.counts[k] for k in ("received", "applied", "clipped")}
            ignored = sum(v for k, v in self.counts.items() if k.startswith("ignored_"))
        last_steps, last_time, last_published = self._diag_last
        self._diag_last = (steps, sim_time, published)
        # a reset sets the sim time and steps back to 0: the period's figures then count from there
        d_time = sim_time - last_time if sim_time >= last_time else sim_time
        rtf = d_time / dt if dt > 0 else 0.0
        rate = (published - last_published) / dt if dt > 0 else 0.0
        values: dict[str, object] = {
            "drive_state": state, "mode": "lockstep" if self.lockstep else "real time", "paused": paused,
            "steps": steps, "steps_in_period": steps - last_steps if steps >= last_steps else steps,
            "sim_time": sim_time, "real_time_factor": rtf,
            "real_time_factor_nominal": 0.0 if self.lockstep else self.rtf, "state_rate_hz": rate,
            "commands_received": counts["received"], "commands_applied": counts["applied"],
            "commands_clipped": counts["clipped"], "commands_refused": self.refusals.total(),
            "commands_ignored": ignored, "drive_transitions": self.transitions, "watchdog": self._watchdog_text(),
        }
        values.update({f"refused.{cause}": n for cause, n in sorted(self.refusals.counts.items())})
        if self.arm is None:
            return Report(WARN, "no robot model yet", values)
        if paused:
            return Report(STALE, f"paused (~/pause): no stepping, no joint_states; drive {state}", values)
        if mode == FAULT:
            return Report(ERROR, state, values)
        if mode != RUNNING:
            return Report(WARN, state, values)  # braked waiting for a command, or a command timeout
        if not self.lockstep and rtf < 0.9 * self.rtf:
            return Report(WARN, f"running behind real time: real-time factor {rtf:.2f} of {self.rtf:g}", values)
        return Report(OK, f"running, real-time factor {rtf:.2f}, joint_states at {rate:.0f} Hz", values)
