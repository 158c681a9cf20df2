"""Streaming identification on Dask (issue 30, "the same chunk reduction runs on an existing distributed engine"):
three recordings reduced by the workers of a local Dask cluster give the serial streaming estimate and the estimate
of their concatenation (1e-9); ``identify --dask local`` works end to end; a bad scheduler address, or Dask missing,
fails with one line.

Cluster: ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``: worker processes, as on a fleet (the
pieces and triangles cross process boundaries, pickled); it starts in about 1-2 s here.  Recordings: the oracle of
:mod:`test_identification_streaming` (Pinocchio's RNEA + rotor inertia + friction + noise), never this package's
dynamics.  The reference of the concatenation: the rows that the in-memory :func:`identify` builds for each
recording, stacked and solved once (as in that module).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import distributed
import numpy as np
import pytest
from test_identification_streaming import ROOT, assert_same, recording

from robot_dynamics.cli import main
from robot_dynamics.identification import estimation as est
from robot_dynamics.identification import identify, save_npz, streaming_dask
from robot_dynamics.identification.streaming import identify_streaming
from robot_dynamics.model.robots import load_model

SECONDS = 10.0  # each recording
CHUNK = 4000  # samples of a piece: 3 pieces a recording, 9 in all (8 merges)
PIECES = 9


@pytest.fixture(scope="module")
def model():
    return load_model("rx90")


@pytest.fixture(scope="module")
def recordings():
    return [recording(SECONDS, seed=s) for s in (1, 2, 3)]


@pytest.fixture(scope="module")
def paths(recordings, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask")
    out = []
    for k, r in enumerate(recordings):
        out.append(str(folder / f"robot{k}.npz"))
        save_npz(out[-1], r)
    return out


@pytest.fixture(scope="module")
def concatenated(model, recordings):
    """WLS on the in-memory rows of the three recordings, stacked (each recording filtered on its own)."""
    rows = []
    real = est.estimate_from_matrix

    def capture(model, base, w3, tau, **kw):
        rows.append((base, w3, tau, kw["keep"]))
        return real(model, base, w3, tau, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(est, "estimate_from_matrix", capture)
        for r in recordings:
            identify(model, r, method="wls")
    return est.estimate_from_matrix(model, rows[0][0], np.concatenate([r[1] for r in rows]),
                                    np.concatenate([r[2] for r in rows]), keep=np.concatenate([r[3] for r in rows]),
                                    method="wls")


@pytest.fixture(scope="module")
def client():
    t0 = time.monotonic()
    with streaming_dask.local_cluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, \
            distributed.Client(cluster) as c:
        print(f"\nlocal Dask cluster (2 worker processes) up in {time.monotonic() - t0:.1f} s")
        yield c


def test_local_cluster_gives_the_serial_and_concatenated_estimate(model, paths, concatenated, client) -> None:
    t0 = time.monotonic()
    serial = identify_streaming(model, paths, method="wls", chunk=CHUNK)
    t1 = time.monotonic()
    with distributed.get_task_stream(client) as stream:
        got = identify_streaming(model, paths, method="wls", chunk=CHUNK, scheduler=client)
    t2 = time.monotonic()
    print(f"\nthree recordings of {SECONDS:g} s, {PIECES} pieces: serial {t1 - t0:.1f} s, Dask (2 workers) {t2 - t1:.1f} s")
    assert_same(serial, got)
    assert_same(concatenated, got)
    # the pieces were reduced by tasks on both workers, and combined by a tree of merges (n - 1 for n pieces)
    tasks = [(t["key"][0] if isinstance(t["key"], tuple) else t["key"], t["worker"]) for t in stream.data]
    pieces = [w for k, w in tasks if k.startswith("_reduce_piece")]
    assert len(pieces) == PIECES and len(set(pieces)) == 2
    assert sum(k.startswith("_merge") for k, _ in tasks) == PIECES - 1


def test_worker_base_refuses_other_names(model) -> None:
    """The base parameters rebuilt on a worker are checked against the caller's names."""
    w = streaming_dask._WorkerBase(model, "coulomb_viscous", ["ZZR1", "not a base parameter"])
    q = np.zeros((2, model.dof))
    with pytest.raises(ValueError, match="rebuilt on a Dask worker"):
        w.regressor(q, q, q)


def test_cli_dask_local_end_to_end(paths, concatenated, capsys) -> None:
    assert main(["identify", "rx90", *paths, "--dask", "local", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = np.asarray(concatenated.values)
    np.testing.assert_allclose(out["values"], ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
    assert out["samples"] == concatenated.samples and out["names"] == concatenated.names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_scheduler_fails_with_one_line(paths, monkeypatch, capsys) -> None:
    monkeypatch.setattr(streaming_dask, "CONNECT_TIMEOUT", 2.0)
    timeouts = []  # what the client was asked to wait (how long it took is the host's business: not asserted)
    real_client = distributed.Client

    def client(*args, **kwargs):
        timeouts.append(kwargs.get("timeout"))
        return real_client(*args, **kwargs)

    monkeypatch.setattr(distributed, "Client", client)
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    t0 = time.monotonic()
    assert main(["identify", "rx90", paths[0], "--dask", address]) == 2
    print(f"unreachable scheduler refused after {time.monotonic() - t0:.1f} s")
    err = capsys.readouterr().err
    assert err.startswith(f"robot-dynamics identify: error: cannot reach the Dask scheduler at {address!r}")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert timeouts == [2.0]  # the connection timeout in use, not the 10 s default
    assert main(["identify", "rx90", paths[0], "--dask", "no port"]) == 2
    err = capsys.readouterr().err
    assert err == ("robot-dynamics identify: error: 'no port' is not a Dask scheduler address (missing port number "
                   "in address 'no port'): give 'local' or tcp://HOST:PORT\n")
    with pytest.raises(ValueError, match="not a Dask scheduler address"):  # --debug: the exception itself
        main(["identify", "rx90", paths[0], "--dask", "no port", "--debug"])
    assert main(["identify", "rx90", paths[0], "--dask", "local", "--friction", "stribeck"]) == 2
    assert "--dask reduces the recordings piece by piece" in capsys.readouterr().err


def test_dask_missing_is_one_line(paths, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: `import distributed` fails
    assert main(["identify", "rx90", paths[0], "--dask", "local"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robot-dynamics identify: error: a required package is missing (dask and distributed are "
                          "needed to reduce on Dask (pip install dask distributed)")
    assert err.count("\n") == 1


def test_core_does_not_import_dask() -> None:
    code = ("import sys, robot_dynamics.cli, robot_dynamics.identification.io, robot_dynamics.identification.streaming; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
