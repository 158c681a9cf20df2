"""Streaming identification (issue 30): recordings of any length, and several recordings in one estimate.

:func:`identify_streaming` gives the estimate of :func:`~.estimation.identify` (OLS or WLS, linear friction
models) without holding the observation matrix of a whole recording: each recording is cut into pieces of
``chunk`` samples, each piece read with ``overlap`` samples more on both sides, then the steps of
:func:`~.estimation.identify` run on it (:func:`~.data.preprocess`: zero-phase filter of the positions,
central differences; :func:`~.estimation.filtered_observation`: base regressor rows, parallel filter of the
rows and the efforts), and only the piece's own samples of the decimated, trimmed selection are kept.  The
zero-phase filters are IIR: a sample depends on its neighbours through a decay ``r^k`` (``r``: the modulus of
the slowest pole); the overlap (:func:`overlap_samples`) is where that decay reaches 1e-16 (x 1.2), plus the
differences and the effort delay, so the rows equal the in-memory ones to rounding.

Reduction, numerically stable (no normal equations): for each joint j the rows ``[W_j | y_j]`` go into an
upper-triangular ``T_j`` (b+1, b+1) by QR of ``[T_j; new rows]`` — ``T_j = [[R_j, z_j], [0, ρ_j]]``, with
``‖W_j β − y_j‖² = ‖T_j [β; −1]‖²`` for every β.  The joint equations kept (``|q̇_j| >= min_velocity``, no gap)
and all the selected samples (for the residual RMS) have a set each.  OLS: QR of the stacked ``T_j``; WLS
(Gautier): the per-joint σ_ρj of the OLS residuals follow from the ``T_j``, then QR of the stacked
``T_j / σ_ρj``: **no second pass over the data**.  β̂, the covariance, the relative std and the rank
diagnostics come from :func:`~.estimation._lstsq` on the final triangle, as for the in-memory fit.

Sources: NPZ files are read lazily (each ``.npy`` member read row block by row block, compressed or not; the
stamps ``t`` are read whole, 8 bytes a sample, for the median period): at most :data:`MAX_RECORDING_SAMPLES`
samples a recording.  Stamps that jitter (bags) are resampled as by :func:`~.data.preprocess` on the whole
recording first, so such recordings, CSV files and ROS 2 bags are loaded by :func:`~.data.load_data` (its
limits) and only the observation is streamed.  Several recordings: each filtered on its own, all rows in
one estimate.  Not streamed: the Stribeck friction (nonlinear least squares on all the rows) and the
physically consistent fit (``--urdf-output``).

On Dask (``scheduler=``, ``identify --dask``): the same pieces, read here, are reduced to triangles by Dask
tasks (:func:`~.pieces.piece_rows` on a worker), and the triangles combined by QR of stacked triangles, a tree
reduction of the same least-squares problem (:mod:`.streaming_dask`).
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .data import (
    JOINT_STATES,
    MAX_JOINTS,
    MAX_SAMPLES,
    IdentificationData,
    _npz_header,
    filter_transient_samples,
    joint_side_data,
    load_data,
    uniform_samples,
)
from .estimation import (
    METHODS,
    IdentificationResult,
    base_parameters_of,
    gap_samples,
)
from .friction import FRICTION_MODELS, with_friction
from .pieces import Triangles, piece_rows
from .progress import report

__all__ = ["MAX_RECORDING_SAMPLES", "MIN_CHUNK", "identify_streaming", "npz_samples", "overlap_samples"]

MAX_RECORDING_SAMPLES = 10_000_000  # samples of one NPZ recording (2.8 h at 1 kHz; its stamps are held: 80 MB)
MIN_CHUNK = 1_000  # samples of a piece (without its overlap)
CHUNK_ENTRIES = 15_000_000  # default piece: this many entries (samples x joints x base parameters) of W (120 MB)


def overlap_samples(fs: float, cutoff: float | None, band: float | None, effort_delay: float = 0.0) -> int:
    """Samples read on each side of a piece so that its own rows equal those of the whole recording: the decay
    to 1e-16 (x 1.2) of the zero-phase filters of the positions (``cutoff``) and of the parallel filter (``band``)
    (order-4 Butterworth, :func:`~.data._lowpass`), the central differences (2) and the effort delay."""
    import scipy.signal

    total = 4 + int(math.ceil(effort_delay * fs)) + 2
    for f in (cutoff, band):
        if f is not None and f < 0.5 * fs:
            _, p, _ = scipy.signal.butter(4, f / (0.5 * fs), output="zpk")
            total += int(math.ceil(1.2 * math.log(1e-16) / math.log(float(np.max(np.abs(p))))))
    return total


def npz_samples(path: str | Path) -> int | None:
    """The sample count of an NPZ recording from the header of its ``t`` (None if it cannot be read so)."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"PK":
                return None
        with np.load(path, allow_pickle=False) as npz:
            shape, _ = _npz_header(npz, "t")
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    return int(shape[0]) if len(shape) == 1 else None


class _NpyRows:
    """Row blocks of one ``.npy`` member of an NPZ, read in order."""

    def __init__(self, z: Any, key: str, path: str | Path) -> None:
        fmt = np.lib.format
        self.f = z.open(f"{key}.npy")
        version = fmt.read_magic(self.f)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = read(self.f)
        if dtype.kind not in "biuf" or dtype.hasobject:
            raise ValueError(f"{path}: NPZ array {key!r} has dtype {dtype}, numbers expected")
        if fortran and len(shape) > 1:
            raise ValueError(f"{path}: NPZ array {key!r} is stored in Fortran order; a long recording must be stored "
                             "row by row (np.ascontiguousarray before np.savez)")
        self.shape, self.dtype = tuple(int(x) for x in shape), dtype
        self.cols = int(math.prod(self.shape[1:]))
        self.key, self.path = key, path

    def read(self, rows: int) -> np.ndarray:
        size = rows * self.cols * self.dtype.itemsize
        raw = self.f.read(size)
        if len(raw) != size:
            raise ValueError(f"{self.path}: NPZ array {self.key!r} is truncated")
        return np.frombuffer(raw, self.dtype).astype(float).reshape(rows, *self.shape[1:])


class _NpzSource:
    """A uniformly stamped NPZ recording read piece by piece (pieces in increasing order, overlapping)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.npz = np.load(path, allow_pickle=False)  # lazy: the members are read below, row block by row block
        self.z = self.npz.zip
        try:
            self._open(path)
        except BaseException:
            self.npz.close()
            raise
        self.start, self.buf_q, self.buf_e = 0, np.empty((0, self.q.shape[1])), np.empty((0, self.q.shape[1]))

    def _open(self, path: str | Path) -> None:
        names = set(self.z.namelist())
        for k in ("t", "q", "effort"):
            if f"{k}.npy" not in names:
                raise ValueError(f"{path}: NPZ file has no array {k!r} (needs t, q, effort)")
        self.joint_names: list[str] = []
        if "joint_names.npy" in names:
            shape, dtype = _npz_header(self.npz, "joint_names")
            if dtype.kind not in "US" or len(shape) != 1 or shape[0] > MAX_JOINTS:
                raise ValueError(f"{path}: NPZ array 'joint_names' must hold at most {MAX_JOINTS} strings")
            self.joint_names = [str(x) for x in self.npz["joint_names"]]
        t = _NpyRows(self.z, "t", path)
        self.q, self.effort = _NpyRows(self.z, "q", path), _NpyRows(self.z, "effort", path)
        n = t.shape[0] if len(t.shape) == 1 else -1
        if n > MAX_RECORDING_SAMPLES:
            raise ValueError(f"{path}: {n} samples; the maximum of a recording is {MAX_RECORDING_SAMPLES} "
                             "(split it: identify takes several recordings)")
        for a in (self.q, self.effort):
            if len(a.shape) != 2 or a.shape[0] != n or a.shape[1] > MAX_JOINTS:
                raise ValueError(f"{path}: t (N,), q and effort (N, n) expected (n <= {MAX_JOINTS}), got {t.shape}, "
                                 f"{self.q.shape}, {self.effort.shape}")
        if self.q.shape != self.effort.shape:
            raise ValueError(f"{path}: q {self.q.shape} and effort {self.effort.shape} differ in shape")
        self.t = np.empty(n)
        step = 1_000_000
        for a in range(0, n, step):
            self.t[a:a + step] = t.read(min(step, n - a))
        if n < 2 or not np.all(np.isfinite(self.t)) or np.any(np.diff(self.t) <= 0):
            raise ValueError(f"{path}: t must hold at least 2 strictly increasing finite times")

    def piece(self, a: int, b: int) -> IdentificationData:
        if a < self.start:
            raise RuntimeError("NPZ pieces must be read in increasing order")
        self.buf_q, self.buf_e = self.buf_q[a - self.start:], self.buf_e[a - self.start:]
        have = a + self.buf_q.shape[0]
        if b > have:
            self.buf_q = np.concatenate([self.buf_q, self.q.read(b - have)])
            self.buf_e = np.concatenate([self.buf_e, self.effort.read(b - have)])
        self.start = a
        try:
            return IdentificationData(self.t[a:b], self.buf_q[:b - a], self.buf_e[:b - a], None, None,
                                      self.joint_names)
        except ValueError as exc:
            raise ValueError(f"{self.path}: samples {a}..{b - 1}: {exc}") from exc

    def close(self) -> None:
        self.npz.close()


Piece = Callable[[int, int], IdentificationData]


def _recording(path: str | Path | IdentificationData, model: Any, topic: str, joints: list[str] | None
               ) -> tuple[int, float, float, Piece, np.ndarray | None, Any, str]:
    """(samples on the uniform grid, period, rate, piece(a, b) in the model's joint order, raw stamps if
    resampled, closer, name) of one recording; period and rate as :func:`~.estimation.identify` finds them."""
    if isinstance(path, IdentificationData):
        data, name = path, "the data"
    else:
        name = f"data {str(path)!r}"
        p = Path(path)
        if p.suffix == ".npz" and p.is_file() and (npz_samples(p) or 0) > 0:
            report(f"reading {path} piece by piece")
            src = _NpzSource(p)
            step = np.diff(src.t)  # (in place below: the stamps are the one array as long as the recording)
            dt = float(np.median(step))
            if float(np.abs(np.subtract(step, dt, out=step), out=step).max()) <= 1e-3 * dt:
                del step
                return (src.t.size, dt, 1.0 / dt, lambda a, b: joint_side_data(model, src.piece(a, b), name), None,
                        src.close, name)
            src.close()  # jittering stamps: resampled whole (the in-memory limits of load_data)
        data = load_data(p, topic=topic, joints=joints)
    data = joint_side_data(model, data, name)
    dt = float(np.median(np.diff(data.t)))
    cells = int(math.floor((data.t[-1] - data.t[0]) / dt)) + 1  # the grid of uniform_samples
    if cells > MAX_SAMPLES and float(np.max(np.abs(np.diff(data.t) - dt))) > 1e-3 * dt:
        raise ValueError(f"{name}: its {data.samples} stamps jitter: resampled on a uniform grid of their median period "
                         f"{dt:.3g} s they give {cells} samples; the maximum is {MAX_SAMPLES} for such a recording")
    grid = uniform_samples(data, dt)
    raw = data.t if grid is not data else None

    def piece(a: int, b: int) -> IdentificationData:
        return IdentificationData(grid.t[a:b], grid.q[a:b], grid.effort[a:b], None, None, grid.joint_names)

    return grid.samples, dt, 1.0 / float(np.median(np.diff(grid.t))), piece, raw, None, name


def identify_streaming(
    model: Any,
    recordings: Sequence[str | Path | IdentificationData],
    *,
    method: str = "wls",
    cutoff: float | None = 20.0,
    band: float | None = 10.0,
    decimate: int = 10,
    trim: float = 0.1,
    min_velocity: float = 0.02,
    effort_delay: float = 0.0,
    friction: str = "coulomb_viscous",
    base: Any = None,
    chunk: int | None = None,
    topic: str = JOINT_STATES,
    joints: list[str] | None = None,
    scheduler: Any = None,
) -> IdentificationResult:
    """The estimate of :func:`~.estimation.identify` (same arguments) from one or several ``recordings`` (paths
    of NPZ / CSV / ROS 2 bags, or :class:`~.data.IdentificationData`), piece by piece (module docstring).
    Several recordings: each filtered and trimmed on its own, one estimate of all their rows.  ``chunk``:
    samples of a piece (default: about :data:`CHUNK_ENTRIES` entries of W, at least :data:`MIN_CHUNK`).
    ``scheduler``: the pieces reduced by Dask tasks (:mod:`.streaming_dask`): ``"local"`` (a local cluster of
    this call), a scheduler's address, or a ``distributed.Client`` (left open); None: in this process."""
    if isinstance(scheduler, str):  # a client (and local cluster) of this call: opened, used, closed
        from .streaming_dask import dask_client

        with dask_client(scheduler) as client:
            return identify_streaming(model, recordings, method=method, cutoff=cutoff, band=band, decimate=decimate,
                                      trim=trim, min_velocity=min_velocity, effort_delay=effort_delay,
                                      friction=friction, base=base, chunk=chunk, topic=topic, joints=joints,
                                      scheduler=client)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if friction not in FRICTION_MODELS or friction == "stribeck":
        raise ValueError(f"streaming identification fits the linear friction models {FRICTION_MODELS[:2]}, got "
                         f"{friction!r} (the Stribeck fit needs every row in memory: one shorter recording)")
    if not (np.isfinite(effort_delay) and effort_delay >= 0.0):
        raise ValueError(f"effort_delay must be finite and >= 0, got {effort_delay}")
    if not recordings:
        raise ValueError("no recording to identify from")
    base = with_friction(base_parameters_of(model) if base is None else base, model, friction)
    names, n, nb = list(base.names), model.dof, len(base.names)
    if chunk is None:
        chunk = max(MIN_CHUNK, CHUNK_ENTRIES // (n * nb))
    if int(chunk) < MIN_CHUNK:
        raise ValueError(f"chunk must be at least {MIN_CHUNK} samples, got {chunk}")
    chunk, k = int(chunk), max(int(decimate), 1)
    kept, every = Triangles(n, nb), Triangles(n, nb)
    samples, speed = 0, 0.0
    pool = None
    if scheduler is not None:  # a distributed.Client: its workers reduce the pieces
        from .streaming_dask import DaskReduction

        pool = DaskReduction(scheduler, model, base, friction)
    for number, rec in enumerate(recordings, 1):
        size, dt, fs, piece, raw, close, name = _recording(rec, model, topic, joints)
        try:
            m = max(int(round(trim * fs)), filter_transient_samples(fs, cutoff, band))
            if size - 2 * m < 2:
                raise ValueError(f"{name}: the recording ({(size - 1) * dt:.3g} s) is shorter than the {m / fs:.3g} s "
                                 "dropped at each end (trim and the filter transients): record longer, or raise "
                                 "--cutoff/--band (0: off)")
            gap = None if raw is None else gap_samples(raw, raw[0] + dt * np.arange(size), fs,
                                                        filter_transient_samples(fs, cutoff, band))
            over = overlap_samples(fs, cutoff, band, effort_delay)
            count = -(-size // chunk)
            report(f"recording {number} of {len(recordings)}: {size} samples over {(size - 1) * dt:.4g} s in {count} piece(s) of about {chunk} "
                   f"(+{over} on each side)")
            layout = {"size": size, "m": m, "k": k, "dt": dt, "fs": fs, "cutoff": cutoff, "band": band,
                      "effort_delay": effort_delay, "min_velocity": min_velocity}
            for c in range(count):
                a, b = c * chunk, min(size, (c + 1) * chunk)
                a0, b0 = max(0, a - over), min(size, b + over)
                done = f"recording {number}: piece {c + 1} of {count} reduced ({b} of {size} samples)"
                if pool is not None:  # the same piece reduced by a Dask task (read here, sent to a worker)
                    pool.submit(piece(a0, b0), a0, a, b, None if gap is None else gap[a0:b0], layout, done)
                    continue
                w3, tau, keep, top = piece_rows(base, piece(a0, b0), a0, a, b,
                                                gap=None if gap is None else gap[a0:b0], **layout)
                for j in range(n):
                    kept.add(j, w3[keep[:, j], j], tau[keep[:, j], j])
                    every.add(j, w3[:, j], tau[:, j])
                samples += w3.shape[0]
                speed = max(speed, top)
                report(done)
        finally:
            if close is not None:
                close()
    if pool is not None:
        kept, every, samples, speed = pool.result()
    total = int(kept.rows.sum())
    if total <= nb:
        raise ValueError(f"{total} joint equations left for {nb} base parameters (|q̇| >= {min_velocity:g} on {total} "
                         f"of {samples * n}, largest |q̇| {speed:.3g}): did the arm follow the exciting trajectory? "
                         "Record longer or lower --min-velocity")
    report(f"solving {method.upper()}: {total} equations, {nb} base parameters")
    beta, cov, r = kept.solve(np.ones(n), names, base)
    cond = float(np.linalg.cond(r))
    if method == "wls":
        sig = np.sqrt(kept.sq_residual(beta) / np.maximum(kept.rows - 1, 1))
        sig = np.where(sig > 0, sig, max(float(sig.max()), 1e-12))
        beta, cov, _ = kept.solve(sig, names, base)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(beta) > 0, 100.0 * std / np.abs(beta), np.inf)
    return IdentificationResult(
        names=names, values=beta, std=std, relative_std=rel, method=method,
        residual_rms=np.sqrt(every.sq_residual(beta) / samples), condition_number=cond, samples=samples,
        joint_names=model.joint_names, robot=model.name,
    )
