"""Progress lines of the long identification steps (reading data, filtering, building the observation
matrix, solving, optimizing an excitation, writing a bag).

The library functions call :func:`report`; it prints nothing unless a caller (the command line)
installed a sink with :func:`progress_to`, so the Python API stays silent.  A sink also gets a
heartbeat: while a step runs longer than ``every`` seconds without a new line, the step is repeated
with its elapsed time, so that a step that cannot report by itself (a recording in other processes)
still shows that the command is alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["progress_to", "report"]

_lock = threading.Lock()
_sink: _Sink | None = None


class _Sink:
    def __init__(self, stream: TextIO, prefix: str, after: dict[str, str]) -> None:
        self.stream, self.prefix, self.after = stream, prefix, after
        self.t0 = self.last = time.monotonic()
        self.step = ""

    def write(self, text: str) -> None:
        now = time.monotonic()
        self.stream.write(f"{self.prefix}: [{now - self.t0:6.1f} s] {text}\n")
        self.stream.flush()
        self.last = now


def report(text: str, *, then: str | None = None) -> None:
    """One progress line (``prefix: [elapsed] text``) on the installed sink, if any; ``then``: the step
    that follows (what the heartbeat repeats; default ``text`` itself, a step under way)."""
    with _lock:
        if _sink is not None:
            nxt = next((v for k, v in _sink.after.items() if text.startswith(k)), None)
            _sink.step = then or nxt or text
            _sink.write(text)
            if nxt:
                _sink.write(nxt)


@contextmanager
def progress_to(stream: TextIO, prefix: str, *, every: float = 5.0,
                after: dict[str, str] | None = None) -> Iterator[None]:
    """Print the :func:`report` lines of the ``with`` block on ``stream`` (flushed), with a heartbeat
    every ``every`` seconds of silence (``... still <step>``); ``after`` maps the start of a line to the
    step the caller knows comes next (e.g. the recording that follows the excitation), printed after it."""
    global _sink
    sink = _Sink(stream, prefix, dict(after or {}))
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(min(1.0, every)):
            with _lock:
                if _sink is sink and sink.step and time.monotonic() - sink.last >= every:
                    sink.write(f"... still {sink.step}")

    with _lock:
        previous, _sink = _sink, sink
    thread = threading.Thread(target=beat, name="identification-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with _lock:
            _sink = previous
