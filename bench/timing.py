"""Timing helper shared by the benches: the best of several runs (stdlib timeit)."""

from __future__ import annotations

import timeit
from collections.abc import Callable


def best_time(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(fn, repeat=repeat, number=number)) / number
