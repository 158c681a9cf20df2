"""An answer sent once the client can receive it.

A service (or an action server's goal service) on a DDS participant of its own, or any service under a fresh
client, may take a request before this participant has matched the client's response reader: rmw_fastrtps then
waits 100 ms and fails ("client will not receive response"), and the client waits for ever.  Discovery completes
moments later, so an answer that failed that way is sent again from a thread of its own (the executor goes on) every
``period`` until it goes or ``ANSWER_WAIT`` has passed.  Pure: the sender, the clock and the sleep are given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

RCL_RET_OK = 0
RETRIED = (1, 2)  # RCL_RET_ERROR (rmw_fastrtps: not matched within 100 ms), RCL_RET_TIMEOUT
ANSWER_WAIT = 10.0  # s: discovery of a new participant on a loaded host, generously
ANSWER_PERIOD = 0.05  # s between tries


def retry(send: Callable[[], int], cap: float = ANSWER_WAIT, period: float = ANSWER_PERIOD,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> tuple[int, int]:
    """Call ``send`` (an rcl return code) until it returns 0, a code not in :data:`RETRIED`, or ``cap`` seconds
    have passed since the first call; returns (last code, tries).  An exception (the handle destroyed at
    shutdown) ends the tries with code -1."""
    t0 = clock()
    tries = 0
    while True:
        tries += 1
        try:
            ret = send()
        except Exception:  # noqa: BLE001 - the service went away meanwhile: nothing left to answer
            return -1, tries
        if ret == RCL_RET_OK or ret not in RETRIED or clock() - t0 >= cap:
            return ret, tries
        sleep(period)


def send_or_retry(send: Callable[[], int], on_end: Callable[[int, int], None] | None = None,
                  cap: float = ANSWER_WAIT, period: float = ANSWER_PERIOD) -> int:
    """Send once; on a retried code go on in a daemon thread (:func:`retry`, then ``on_end(code, tries)``) and
    return that code; any other code is returned as it is (0: sent)."""
    ret = send()
    if ret in RETRIED:
        def run() -> None:
            code, tries = retry(send, cap, period)
            if on_end is not None:
                on_end(code, tries + 1)

        threading.Thread(target=run, name="late answer", daemon=True).start()
    return ret


def late_answer_log(what: str) -> Callable[[int, int], None]:
    """``on_end`` that says, on the ``robot_dynamics`` logger, how a late answer of ``what`` ended."""
    def on_end(code: int, tries: int) -> None:
        from rclpy.logging import get_logger  # only when an answer was late

        if code == RCL_RET_OK:
            get_logger("robot_dynamics").info(f"{what}: answer sent at try {tries} (the client was not yet matched)")
        elif code != -1:
            get_logger("robot_dynamics").error(f"{what}: answer not sent after {tries} tries (rcl code {code}): "
                                               "the client never became reachable")
    return on_end


__all__ = ["ANSWER_PERIOD", "ANSWER_WAIT", "RETRIED", "late_answer_log", "retry", "send_or_retry"]
