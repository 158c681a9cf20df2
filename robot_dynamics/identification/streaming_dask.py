"""Streaming identification on Dask (issue 30): the piece reduction of :mod:`.streaming` as Dask tasks.

For a fleet (many robots, many hours), :func:`~.streaming.identify_streaming` with ``scheduler=`` and
``robot-dynamics identify --dask ADDRESS`` run the streaming reduction on a Dask cluster.  The caller reads each
piece of each recording (``chunk`` samples and their overlap), in order: a recording is read once, sequentially,
so a compressed NPZ is not decompressed again for every piece and the workers need no access to the caller's
files.  A worker turns the piece into the per-joint triangles of its rows (:func:`~.pieces.piece_rows`:
zero-phase filter, differences, base regressor rows, parallel filter, decimation and selection; then QR).  The
partial triangles are combined as they arrive, two at a time, by QR of the stacked pair: ``‖T_a x‖² + ‖T_b x‖²
= ‖qr([T_a; T_b]) x‖²`` for every x, so this tree reduction keeps the least-squares problem of the serial
reduction exactly (the estimates agree to rounding).  The caller solves OLS / WLS on the final triangles, as
the serial path does.

Memory: at most :data:`WINDOW` pieces a worker thread are in flight, so the caller holds a bounded number of
pieces whatever the length of the recordings.  The workers need this package installed (the same version).  The
base parameters (their sympy relations cannot be pickled) are rebuilt once on each worker from the model and
checked against the caller's names.

``"local"``: a ``distributed.LocalCluster`` of worker processes (:func:`local_cluster`), sized to the machine by
Dask (on 2 cores: 2 workers of 1 thread), started and closed by the call.  An address (``tcp://HOST:PORT`` or
``HOST:PORT``): a running scheduler, reached within :data:`CONNECT_TIMEOUT` s.  Dask is imported only then: the
rest of the package never needs it.  A script that starts a local cluster must guard its entry point
(``if __name__ == "__main__":``): the worker processes are spawned.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .data import IdentificationData
from .estimation import base_parameters_of
from .friction import with_friction
from .pieces import Triangles, piece_rows
from .progress import report

__all__ = ["CONNECT_TIMEOUT", "LOCAL", "WINDOW", "DaskReduction", "dask_client", "local_cluster"]

LOCAL = "local"  # the scheduler name of a local cluster started by the call
CONNECT_TIMEOUT = 10.0  # s to reach a scheduler, and for a first worker to join it
WINDOW = 2  # pieces in flight a worker thread: one reduced, one waiting

Partial = tuple[Triangles, Triangles, int, float]  # kept and every triangles, samples, largest |q̇|


def _distributed() -> Any:
    """The ``distributed`` module, or an ImportError naming the packages to install."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"dask and distributed are needed to reduce on Dask (pip install dask distributed): "
                          f"{exc}") from exc
    return distributed


def local_cluster(**options: Any) -> Any:
    """A ``distributed.LocalCluster`` (worker processes sized to the machine by Dask unless ``options`` say
    otherwise), with its HTTP server on a free port and glibc's dynamic memory thresholds kept in the workers: Dask
    sets ``MALLOC_TRIM_THRESHOLD_`` in their environment, which makes every large temporary of the observation
    matrix a fresh mapping and costs 1.5-2x the CPU time of a piece (rx90, 10,500 samples: 0.7-0.85 s instead of
    0.4 s measured)."""
    distributed = _distributed()
    import dask

    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return distributed.LocalCluster(**{"dashboard_address": ":0", **options})


@contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A ``distributed.Client`` of ``scheduler`` for the ``with`` block: ``"local"`` (a local cluster of worker
    processes sized to this machine, closed at the end) or the address of a running scheduler (ValueError if it
    is malformed or not reached within :data:`CONNECT_TIMEOUT` s)."""
    distributed = _distributed()
    address = scheduler.strip()
    if address.lower() == LOCAL:
        report("starting a local Dask cluster")
        with local_cluster() as cluster, distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except ValueError as exc:
        raise ValueError(f"{address!r} is not a Dask scheduler address ({exc}): give 'local' or "
                         "tcp://HOST:PORT") from None
    except Exception as exc:  # noqa: BLE001 - refused, unknown host, timed out, TLS not configured...: one line
        why = str(exc) or type(exc).__name__
        raise ValueError(f"cannot reach the Dask scheduler at {address!r} ({why})") from None
    with client:
        yield client


class _WorkerBase:
    """The base parameters of ``model`` with ``friction`` (``names``, ``regressor``), rebuilt on first use where
    they are unpickled (a worker): their sympy relations cannot be pickled."""

    def __init__(self, model: Any, friction: str, names: list[str]) -> None:
        self.model, self.friction, self.names = model, friction, list(names)
        self._base: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self.model, "friction": self.friction, "names": self.names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"], state["friction"], state["names"])

    def regressor(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        if self._base is None:
            base = with_friction(base_parameters_of(self.model), self.model, self.friction)
            if list(base.names) != self.names:
                raise ValueError(f"the base parameters rebuilt on a Dask worker ({len(base.names)}: "
                                 f"{', '.join(base.names[:4])}, ...) are not the caller's ({len(self.names)}: "
                                 f"{', '.join(self.names[:4])}, ...): same package version on the workers?")
            self._base = base
        return self._base.regressor(q, qd, qdd)


def _shipped(base: Any, model: Any, friction: str) -> Any:
    """``base`` if it survives a pickle round trip, else a :class:`_WorkerBase` of the same names."""
    try:
        pickle.loads(pickle.dumps(base))
    except Exception:  # noqa: BLE001 - any failure to pickle: rebuilt on the worker
        return _WorkerBase(model, friction, list(base.names))
    return base


def _reduce_piece(base: Any, data: IdentificationData, a0: int, a: int, b: int, gap: np.ndarray | None,
                  layout: dict[str, Any], n: int, nb: int) -> Partial:
    """Task: the per-joint triangles of one piece (kept joint equations, every selected sample)."""
    w3, tau, keep, top = piece_rows(base, data, a0, a, b, gap=gap, **layout)
    kept, every = Triangles(n, nb), Triangles(n, nb)
    for j in range(n):
        kept.add(j, w3[keep[:, j], j], tau[keep[:, j], j])
        every.add(j, w3[:, j], tau[:, j])
    return kept, every, int(w3.shape[0]), top


def _stacked(x: Triangles, y: Triangles) -> Triangles:
    """The triangles of the rows of ``x`` and ``y``: QR of each joint's stacked pair."""
    out = Triangles(len(x.t), x.t[0].shape[1] - 1)
    for j, (tx, ty) in enumerate(zip(x.t, y.t, strict=True)):
        s = np.vstack([tx, ty])
        out.t[j] = np.linalg.qr(s, mode="r") if s.shape[0] else s
    out.rows = x.rows + y.rows
    return out


def _merge(x: Partial, y: Partial) -> Partial:
    """Task: one partial reduction of two."""
    return _stacked(x[0], y[0]), _stacked(x[1], y[1]), x[2] + y[2], max(x[3], y[3])


class DaskReduction:
    """Pieces reduced by the workers of a ``distributed.Client``, their triangles combined as they come (module
    docstring): :meth:`submit` each piece, then :meth:`result`."""

    def __init__(self, client: Any, model: Any, base: Any, friction: str) -> None:
        distributed = _distributed()
        if not isinstance(client, distributed.Client):
            raise ValueError(f"scheduler must be 'local', a Dask scheduler address or a distributed.Client, got "
                             f"{type(client).__name__}")
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            raise ValueError(f"the Dask scheduler {client.scheduler.address} has no worker after "
                             f"{CONNECT_TIMEOUT:g} s ({exc})") from None
        self.client, self.n, self.nb = client, model.dof, len(base.names)
        threads = client.nthreads()
        self.window = WINDOW * max(sum(threads.values()), 1)
        report(f"reducing the pieces on Dask ({client.scheduler.address}): {len(threads)} worker(s), "
               f"{sum(threads.values())} thread(s)")
        self.base = client.scatter(_shipped(base, model, friction), broadcast=True, hash=False)
        self.done = distributed.as_completed()
        self.pieces: dict[str, str] = {}  # key of a piece in flight -> its progress line
        self.ready: list[Any] = []  # partial reductions waiting for a partner
        self.flight: set[Any] = set()  # tasks submitted, not yet taken

    def submit(self, data: IdentificationData, a0: int, a: int, b: int, gap: np.ndarray | None,
               layout: dict[str, Any], done: str) -> None:
        """Send one piece (:func:`~.pieces.piece_rows`'s arguments); ``done``: its progress line.  Blocks while
        :data:`WINDOW` pieces a worker thread are in flight."""
        while len(self.pieces) >= self.window:
            self._take(next(self.done))
        sent = self.client.scatter(data, hash=False)  # sent once, directly (not inside the task graph)
        future = self.client.submit(_reduce_piece, self.base, sent, a0, a, b, gap, layout, self.n, self.nb,
                                    pure=False)
        self.pieces[future.key] = done
        self._add(future)

    def _add(self, future: Any) -> None:
        self.flight.add(future)
        self.done.add(future)

    def _take(self, future: Any) -> None:
        self.flight.discard(future)
        if future.status != "finished":
            try:
                future.result()  # raises the task's error (or CancelledError)
            finally:  # the other tasks are of no use any more
                self.client.cancel([*self.flight, *self.ready])
        line = self.pieces.pop(future.key, None)
        if line is not None:
            report(line)
        self.ready.append(future)
        if len(self.ready) >= 2:
            x, y = self.ready.pop(0), self.ready.pop(0)
            self._add(self.client.submit(_merge, x, y, pure=False))

    def result(self) -> Partial:
        """The triangles of every piece submitted (kept, every), the samples and the largest |q̇|."""
        for future in self.done:
            self._take(future)
        if not self.ready:
            raise ValueError("no piece was reduced")
        return self.ready.pop().result()
