"""The control loop's statistics: per cycle, in a ring buffer, the start time and the CPU time of each phase
(what ``~/statistics`` and ``/diagnostics`` report)."""

from __future__ import annotations

import time

import numpy as np

PHASES = ("sampling", "law", "publish", "state_publish", "other")


class LoopStatistics:
    """Per control cycle, in a ring buffer: start time (steady clock, ns) and the CPU time of each phase
    (``PHASES``, ns of the cycle thread's CPU clock; ``other``: the time checks and mode logic before sampling)."""

    def __init__(self, size: int = 20000) -> None:
        self.size = size
        self.starts = np.zeros(size, dtype=np.int64)
        self.phases = np.zeros((size, len(PHASES)), dtype=np.int64)
        self.k = 0
        self.cpu0: float | None = None  # process CPU time at the first cycle (s)
        self.k0 = 0

    def tick(self, start: int, sampling: int, law: int, publish: int, state: int, other: int) -> None:
        i = self.k % self.size
        self.starts[i] = start
        row = self.phases[i]
        row[0], row[1], row[2], row[3], row[4] = sampling, law, publish, state, other
        if self.cpu0 is None:
            self.cpu0, self.k0 = time.process_time(), self.k
        self.k += 1

    def summary(self, nominal_period: float) -> dict[str, float]:
        """Loop figures over the last ``size`` cycles; ``process_cpu_per_cycle_us`` since the first cycle.

        A cycle is *missed* when a period spans more than one nominal period: a period p counts
        round(p / T) - 1 missed cycles; ``missed_pct`` = missed / (cycles + missed)."""
        k = self.k  # the loop thread may tick meanwhile: one snapshot of the count, the oldest entries left out
        n = min(k, self.size - 8)
        out: dict[str, float] = {"cycles": int(k), "process_cpu_s": time.process_time()}
        if self.cpu0 is not None and k > self.k0:
            out["process_cpu_per_cycle_us"] = (time.process_time() - self.cpu0) / (k - self.k0) * 1e6
        if n < 3:
            return out
        order = np.arange(k - n, k) % self.size
        starts = self.starts[order]
        ph = self.phases[order] * 1e-3  # us
        p = np.diff(starts) * 1e-9
        err = np.abs(p - nominal_period)
        missed = int(np.maximum(np.rint(p / nominal_period) - 1, 0).sum())
        out.update({
            "window_cycles": int(n),
            "rate_hz": float(p.size / p.sum()),
            "period_mean_ms": float(p.mean() * 1e3),
            "period_error_p50_ms": float(np.percentile(err, 50) * 1e3),
            "period_error_p99_ms": float(np.percentile(err, 99) * 1e3),
            "period_error_max_ms": float(err.max() * 1e3),
            "period_error_max_age_s": float((time.perf_counter_ns() - starts[int(err.argmax()) + 1]) * 1e-9),
            "missed_cycles": missed,
            "missed_pct": 100.0 * missed / (p.size + missed),
        })
        total = ph.sum(axis=1)
        for j, name in enumerate(PHASES):
            out[f"{name}_us"] = float(ph[:, j].mean())
        out["cycle_us"] = float(total.mean())
        out["cycle_p99_us"] = float(np.percentile(total, 99))
        out["compute_mean_us"] = out["cycle_us"]  # the old key: the whole cycle
        return out

    def recent(self, nominal_period: float, since: int) -> dict[str, float]:
        """The loop figures of ``summary`` over the cycles after cycle ``since`` only (the previous call's
        ``cycles``; the period ending at the first of them included), on slices of the ring in integer ns and
        with few NumPy calls: cheap enough for the executor thread (``/diagnostics``)."""
        k = self.k  # one snapshot of the count (the loop thread may tick meanwhile)
        first = max(since - 1, k - (self.size - 8), 0)
        out: dict[str, float] = {"cycles": int(k), "window_cycles": int(max(k - since, 0))}
        if k - first < 2:
            return out
        i0, i1 = first % self.size, k % self.size
        if i0 < i1:
            starts, phases = self.starts[i0:i1], self.phases[i0 + 1:i1]
        else:  # wrapped around the ring
            starts = np.concatenate((self.starts[i0:], self.starts[:i1]))
            phases = np.concatenate((self.phases[i0 + 1:], self.phases[:i1])) if i0 + 1 < self.size else \
                self.phases[:i1]
        p = np.diff(starts)  # ns
        t_ns = round(nominal_period * 1e9)
        err = np.abs(p - t_ns)
        err.sort()
        missed = int(np.maximum((2 * p + t_ns) // (2 * t_ns) - 1, 0).sum())  # round(p / T) - 1 per period
        total = int(p.sum())
        out.update({
            "rate_hz": p.size / (total * 1e-9) if total > 0 else 0.0,
            "period_error_p50_ms": _sorted_percentile(err, 0.5) * 1e-6,
            "period_error_p99_ms": _sorted_percentile(err, 0.99) * 1e-6,
            "period_error_max_ms": float(err[-1]) * 1e-6,
            "missed_cycles": missed,
            "missed_pct": 100.0 * missed / (p.size + missed),
            "cycle_us": float(phases.sum()) / p.size * 1e-3,
        })
        return out


def _sorted_percentile(values: np.ndarray, q: float) -> float:
    """The ``q`` quantile (0..1) of sorted ``values``, linear interpolation (``np.percentile``'s default)."""
    pos = q * (values.size - 1)
    i = int(pos)
    j = min(i + 1, values.size - 1)
    return float(values[i] + (values[j] - values[i]) * (pos - i))
