"""Bring-up without launch_ros: start the node set of :mod:`node_set` as child processes.

``robot-dynamics bringup --robot rx90 --sim mujoco`` runs until SIGINT/SIGTERM (or
``--duration``), then stops every child cleanly (SIGINT, then SIGTERM, then SIGKILL),
and exits non-zero if a node died on its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from .node_set import NodeSpec, node_set


class Bringup:
    """The node set as child processes (context manager)."""

    def __init__(self, nodes: list[NodeSpec], log_dir: str | Path | None = None) -> None:
        self.nodes = nodes
        self.log_dir = Path(log_dir) if log_dir else None
        self.procs: dict[str, subprocess.Popen] = {}
        self._logs: list[IO[str]] = []

    def start(self) -> Bringup:
        for spec in self.nodes:
            out: IO[str] | None = None
            if self.log_dir is not None:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                out = open(self.log_dir / f"{spec.name}.log", "w")  # noqa: SIM115 - closed in stop()
                self._logs.append(out)
            self.procs[spec.name] = subprocess.Popen(
                spec.command(), stdout=out, stderr=subprocess.STDOUT if out else None, start_new_session=True
            )
        return self

    def dead(self) -> dict[str, int]:
        """Children that have exited, with their exit codes."""
        return {name: p.returncode for name, p in self.procs.items() if p.poll() is not None}

    def stop(self, timeout: float = 10.0) -> dict[str, int | None]:
        """SIGINT every child (controller first gets to send its holding command), then escalate."""
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            alive = [p for p in self.procs.values() if p.poll() is None]
            if not alive:
                break
            for p in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
            deadline = time.monotonic() + wait
            for p in alive:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(max(0.0, deadline - time.monotonic()))
        for f in self._logs:
            f.close()
        self._logs.clear()
        return {name: p.returncode for name, p in self.procs.items()}

    def __enter__(self) -> Bringup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_bringup(robot: str = "rx90", sim: str = "mujoco", params_file: str | None = None,
                duration: float | None = None) -> int:
    """Run the node set until SIGINT/SIGTERM or ``duration`` seconds; return an exit code."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    nodes = node_set(robot, sim, extra_parameter_files=[params_file] if params_file else None)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    bringup = Bringup(nodes).start()
    print(f"bringup: {', '.join(n.name for n in nodes)} (robot {robot}, sim {sim}); Ctrl-C to stop", flush=True)
    t0 = time.monotonic()
    code = 0
    while not stop.is_set():
        dead = bringup.dead()
        if dead:
            print(f"bringup: node(s) exited on their own: {dead}; stopping the others", file=sys.stderr, flush=True)
            code = 1
            break
        if duration is not None and time.monotonic() - t0 >= duration:
            break
        stop.wait(0.2)
    codes = bringup.stop()
    print(f"bringup: stopped ({codes})", flush=True)
    return code
