"""Bring-up without launch_ros: start the node set of :mod:`node_set` as child processes.

``robot-dynamics bringup --robot rx90 --sim mujoco`` runs until SIGINT, SIGTERM, SIGHUP or
SIGQUIT (or ``--duration``), then stops its children in order: the controller first (on
SIGINT it sends its holding command, so the arm must still be there to take it), bounded by
``first_timeout``; then the others (SIGINT, then SIGTERM, then SIGKILL).  It exits 0 after a
requested stop and 1 if a node died on its own.

Whatever happens to the runner, its children do not outlive it: each child is started with
``PR_SET_PDEATHSIG`` = SIGTERM (Linux), so a SIGKILL of the runner makes every node stop
cleanly on its own (:func:`~robot_dynamics.ros.runtime.run_node` handles SIGTERM).  The
death signal is kept across the interpreter's own re-exec at start-up (not a set-user-ID
program); it is tied to the *thread* that started the child, so call :meth:`Bringup.start`
from a thread that lives as long as the children should (the main thread in the runner).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO

from .node_set import NodeSpec, node_environment, node_set

#: signals that make the runner stop its children in order and exit 0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: modules stopped first, alone (the controller sends its holding command on SIGINT)
STOP_FIRST = ("computed_torque_controller",)

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@functools.cache
def _libc_calls() -> tuple[Callable[..., int], Callable[..., int]] | None:
    """(prctl, signal) of the C library, set up before any fork; None off Linux or without them."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl, sigfn = libc.prctl, libc.signal
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    sigfn.argtypes = [ctypes.c_int, ctypes.c_void_p]
    sigfn.restype = ctypes.c_void_p
    return prctl, sigfn


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child gets ``sig`` when this process dies.

    Runs in the forked child before ``execve``, and does only system calls: the default
    action for ``sig`` (the parent's Python handler must not swallow a death signal that
    arrives before ``execve``), ``prctl(PR_SET_PDEATHSIG, sig)``, then, if the parent died
    before the ``prctl`` (the child has been re-parented), ``sig`` to itself.  ``None`` where
    ``prctl`` is not available (not Linux): the child is then started without the protection.
    """
    calls = _libc_calls()
    if calls is None:
        return None
    prctl, sigfn = calls
    parent = os.getpid()
    signum = int(sig)

    def preexec() -> None:
        sigfn(signum, None)  # SIG_DFL
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signum)

    return preexec


def _say(text: str, stream: IO[str] | None = None) -> None:
    """One progress line (stderr: stdout stays clean for the JSON of the CLIs that run a bring-up); a closed
    terminal or pipe (SIGHUP, EPIPE) must not stop the shutdown."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=stream or sys.stderr, flush=True)


class Bringup:
    """The node set as child processes (context manager).

    ``first``: modules (:attr:`NodeSpec.module`) stopped alone before the others.  ``exits``
    lists the children in the order they were seen to exit: (name, exit code, seconds since
    the stop began, or negative before it).
    """

    def __init__(self, nodes: list[NodeSpec], log_dir: str | Path | None = None,
                 first: Iterable[str] = STOP_FIRST, say: Callable[[str], None] = _say) -> None:
        self.nodes = nodes
        self.log_dir = Path(log_dir) if log_dir else None
        self.first = [spec.name for spec in nodes if spec.module in set(first)]
        self.say = say
        self.procs: dict[str, subprocess.Popen] = {}
        self.exits: list[tuple[str, int, float]] = []
        self._logs: list[IO[str]] = []
        self._t_stop: float | None = None

    def start(self) -> Bringup:
        """Start every node; if one cannot be started, stop the ones already running and raise."""
        try:
            for spec in self.nodes:
                out: IO[str] | None = None
                if self.log_dir is not None:
                    self.log_dir.mkdir(parents=True, exist_ok=True)
                    out = open(self.log_dir / f"{spec.name}.log", "w")  # noqa: SIM115 - closed in stop()
                    self._logs.append(out)
                self.procs[spec.name] = subprocess.Popen(
                    spec.command(), stdout=out, stderr=subprocess.STDOUT if out else None,
                    start_new_session=True, preexec_fn=die_with_parent(), env=node_environment(),
                )
        except BaseException:
            self.stop()
            raise
        return self

    def _reap(self) -> None:
        """Note children that have exited since the last look, in order."""
        seen = {name for name, _, _ in self.exits}
        t = -1.0 if self._t_stop is None else time.monotonic() - self._t_stop
        for name, p in self.procs.items():
            if name not in seen and p.poll() is not None:
                self.exits.append((name, p.returncode, t))
                if self._t_stop is not None:
                    self.say(f"bringup: {name} exited ({p.returncode}) {t:.2f} s after the stop began")

    def _alive(self, names: Iterable[str] | None = None) -> list[str]:
        self._reap()
        return [n for n in (self.procs if names is None else names) if self.procs[n].poll() is None]

    def dead(self) -> dict[str, int]:
        """Children that have exited, with their exit codes."""
        self._reap()
        return {name: p.returncode for name, p in self.procs.items() if p.returncode is not None}

    def _signal(self, names: Sequence[str], sig: signal.Signals) -> None:
        self.say(f"bringup: {sig.name} -> {', '.join(names)}")
        for n in names:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.procs[n].pid, sig)

    def _wait(self, names: Sequence[str], budget: float) -> list[str]:
        """Poll until ``names`` have exited or ``budget`` seconds passed; the ones still alive."""
        deadline = time.monotonic() + budget
        alive = self._alive(names)
        while alive and time.monotonic() < deadline:
            time.sleep(0.01)
            alive = self._alive(alive)
        return alive

    def stop(self, timeout: float = 10.0, first_timeout: float = 3.0, escalate: float = 3.0) -> dict[str, int | None]:
        """Stop every child: SIGINT to the ``first`` ones alone (up to ``first_timeout`` s), then SIGINT
        to the others (``timeout`` s), then SIGTERM and SIGKILL to what is left (``escalate`` s each)."""
        if self._t_stop is None:
            self._t_stop = time.monotonic()
        interrupted: set[str] = set()
        first = self._alive(self.first)
        if first:
            self._signal(first, signal.SIGINT)
            interrupted.update(first)
            if self._wait(first, first_timeout):
                self.say(f"bringup: {', '.join(self._alive(first))} still running after {first_timeout:g} s")
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, escalate), (signal.SIGKILL, escalate)):
            alive = self._alive()
            if not alive:
                break
            targets = [n for n in alive if not (sig == signal.SIGINT and n in interrupted)]
            if targets:
                self._signal(targets, sig)
            self._wait(alive, wait)
        for f in self._logs:
            f.close()
        self._logs.clear()
        return {name: p.returncode for name, p in self.procs.items()}

    def __enter__(self) -> Bringup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_bringup(robot: str = "rx90", sim: str = "mujoco", params_file: str | None = None,
                duration: float | None = None, namespace: str = "") -> int:
    """Run the node set (in ``namespace``) until a stop signal or ``duration`` seconds; return an exit code."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    nodes = node_set(robot, sim, extra_parameter_files=[params_file] if params_file else None, namespace=namespace)
    # the handler only records the signal: no locks, no I/O (it may run in the middle of either)
    received: list[int] = []
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    bringup = Bringup(nodes)
    try:
        bringup.start()
    except OSError as exc:
        _say(f"bringup: cannot start the nodes: {exc}", sys.stderr)
        return 1
    _say(f"bringup: {', '.join(n.name for n in nodes)} (robot {robot}, sim {sim}); Ctrl-C to stop")
    t0 = time.monotonic()
    code = 0
    try:
        while not received:
            dead = bringup.dead()
            if dead:
                _say(f"bringup: node(s) exited on their own: {dead}; stopping the others", sys.stderr)
                code = 1
                break
            if duration is not None and time.monotonic() - t0 >= duration:
                break
            time.sleep(0.05)
        if received:
            _say(f"bringup: {signal.Signals(received[0]).name} received: stopping")
    finally:
        t_stop = time.monotonic()
        codes = bringup.stop()
        order = ", ".join(f"{name} ({c})" for name, c, _ in bringup.exits)
        _say(f"bringup: stopped in {time.monotonic() - t_stop:.2f} s ({codes}); exit order: {order}")
    return code
