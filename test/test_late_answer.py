"""late_answer: an answer the client cannot receive yet (rmw_fastrtps: its response reader not matched within
100 ms) is sent again until it goes or the cap passes; any other failure is not retried."""

from __future__ import annotations

import threading

import pytest

from robot_dynamics.ros.late_answer import ANSWER_WAIT, RETRIED, retry, send_or_retry


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def clock(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.t += dt


def sender(codes: list[int]):
    calls: list[int] = []

    def send() -> int:
        calls.append(1)
        return codes[min(len(calls), len(codes)) - 1]
    return send, calls


def test_sent_at_once_is_one_try():
    send, calls = sender([0])
    assert retry(send, 1.0, 0.1, *_time()) == (0, 1) and len(calls) == 1


@pytest.mark.parametrize("code", RETRIED)
def test_a_late_match_is_sent_on_a_later_try(code):
    send, calls = sender([code, code, 0])
    assert retry(send, 1.0, 0.1, *_time()) == (0, 3) and len(calls) == 3


def test_the_cap_boundary():
    # tries at t = 0, 0.1, ..., a try at exactly the cap is the last one; one more period is never tried
    send, calls = sender([1])
    code, tries = retry(send, 0.5, 0.1, *_time())
    assert code == 1 and tries == 6 and len(calls) == 6  # t = 0.0 .. 0.5 (within float rounding)
    send, calls = sender([1] * 6 + [0])
    assert retry(send, 0.5, 0.1, *_time())[0] == 1  # the 7th try (t = 0.6) would have gone: past the cap
    send, calls = sender([1] * 5 + [0])
    assert retry(send, 0.5, 0.1, *_time()) == (0, 6)  # the 6th (t = 0.5) is still tried


def test_other_codes_are_not_retried():
    send, calls = sender([400, 0])  # e.g. RCL_RET_SERVICE_INVALID at shutdown
    assert retry(send, 1.0, 0.1, *_time()) == (400, 1) and len(calls) == 1


def test_a_handle_gone_ends_the_tries():
    def send() -> int:
        raise RuntimeError("destroyed")
    assert retry(send, 1.0, 0.1, *_time()) == (-1, 1)


def test_send_or_retry_goes_on_in_a_thread_and_reports():
    codes = [1, 1, 0]
    send, calls = sender(codes)
    done = threading.Event()
    ended: list[tuple[int, int]] = []

    def on_end(code: int, tries: int) -> None:
        ended.append((code, tries))
        done.set()
    assert send_or_retry(send, on_end, cap=5.0, period=0.001) == 1  # the caller sees the first code at once
    assert done.wait(30), "the retry thread never ended"
    assert ended == [(0, 3)] and len(calls) == 3


def test_send_or_retry_sent_or_failed_for_good_starts_no_thread():
    for first in (0, 400):
        send, calls = sender([first])
        before = threading.active_count()
        assert send_or_retry(send, lambda *_: pytest.fail("no thread expected")) == first
        assert threading.active_count() == before and len(calls) == 1


def test_the_wait_covers_discovery_on_a_loaded_host():
    assert ANSWER_WAIT >= 5.0


def _time():
    ft = FakeTime()
    return ft.clock, ft.sleep
