"""The per-piece work of the streaming identification (:mod:`.streaming`, :mod:`.streaming_dask`): the rows of one
piece of a recording and their reduction to per-joint triangles (see :mod:`.streaming`'s docstring).  Below both
modules, so that neither imports the other at its top."""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import IdentificationData, preprocess
from .estimation import _lstsq, filtered_observation

__all__ = ["Triangles", "piece_rows"]


class Triangles:
    """Per joint, the triangle ``T_j`` of the rows ``[W_j | y_j]`` added so far (module docstring)."""

    def __init__(self, n: int, b: int) -> None:
        self.t = [np.zeros((0, b + 1)) for _ in range(n)]
        self.rows = np.zeros(n, int)

    def add(self, j: int, w: np.ndarray, y: np.ndarray) -> None:
        if w.shape[0]:
            self.t[j] = np.linalg.qr(np.vstack([self.t[j], np.column_stack([w, y])]), mode="r")
            self.rows[j] += w.shape[0]

    def sq_residual(self, beta: np.ndarray) -> np.ndarray:
        """‖W_j β − y_j‖² per joint."""
        x = np.append(beta, -1.0)
        return np.array([float(np.sum((tj @ x) ** 2)) for tj in self.t])

    def solve(self, scale: np.ndarray, names: list[str], base: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """β̂, covariance and R of the rows of joint j divided by ``scale[j]`` (:func:`~.estimation._lstsq`)."""
        b = self.t[0].shape[1] - 1
        r = int(self.rows.sum())
        if r <= b:
            raise ValueError(f"{r} equations for {b} base parameters: record more samples")
        tri = np.linalg.qr(np.vstack([tj / s for tj, s in zip(self.t, scale, strict=True)]), mode="r")
        tri = np.vstack([tri, np.zeros((b + 1 - tri.shape[0], b + 1))]) if tri.shape[0] < b + 1 else tri
        # [R; 0] β = [z; ρ]: the least-squares residual is ρ², so _lstsq's σ² is ρ² and its covariance ρ² (RᵀR)⁻¹
        w = np.vstack([tri[:b, :b], np.zeros((1, b))])
        beta, cov, _ = _lstsq(w, tri[:, b], names, base)
        return beta, cov / (r - b), tri[:b, :b]


def piece_rows(base: Any, data: IdentificationData, a0: int, a: int, b: int, *, size: int, m: int, k: int,
               dt: float, fs: float, cutoff: float | None, band: float | None, effort_delay: float,
               min_velocity: float, gap: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The rows of the piece ``[a, b)`` of a recording of ``size`` samples, from ``data``: its samples ``[a0, b0)``
    (the piece and its overlap).  ``m``: samples trimmed at each end, ``k``: decimation, ``gap``: the recording's
    gap flags of ``[a0, b0)`` (None: no gap).  Returns W (r, n, b), τ (r, n) of the piece's selected samples, the
    joint equations kept (r, n) and the largest |q̇| of ``data``."""
    full = preprocess(data, cutoff=cutoff, decimate=1, trim=0.0, dt=dt)
    w3, tau = filtered_observation(base, full, fs, band=band, effort_delay=effort_delay, quiet=True)
    lo = max(a, m)
    first = m + -(-(lo - m) // k) * k
    loc = np.arange(first, min(b, size - m), k) - a0
    w3, tau, qd = w3[loc], tau[loc], full.qd[loc]
    keep = np.abs(qd) >= min_velocity
    if gap is not None:
        keep &= ~gap[loc][:, None]
    return w3, tau, keep, float(np.abs(full.qd).max())
