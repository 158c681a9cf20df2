"""Isolated compilation: a program generated and compiled in a child process.

:func:`_build_in_worker` runs :func:`_worker` in a new Python process (a JSON spec on its stdin, progress
lines on its stderr), so that generating the program (pure Python) never contends for the GIL with the
caller's threads (a control loop); the child runs at nice +``WORKER_NICE``.  The children still running
when this process exits are killed.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .codegen_build import _build_kind
from .codegen_cache import cache_dir, generator_hash
from .codegen_config import CACHE_ENV, ENGINE_ENV

_WORKERS: set[subprocess.Popen] = set()


@atexit.register
def _stop_workers() -> None:
    for p in list(_WORKERS):
        if p.poll() is None:
            p.kill()


# --------------------------------------------------------------- background build process
def _build_in_worker(model: Any, kind: str, key: str, progress: Callable[[str], None]) -> None:
    """Generate and compile ``kind`` in a child process (no GIL contention with the caller's threads)."""
    pkg_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OPENBLAS_NUM_THREADS"] = env.get("OPENBLAS_NUM_THREADS", "1")
    env[ENGINE_ENV] = "numpy"  # the models of the build process never start builds of their own
    spec = {"key": key, "kind": kind, "model": model.to_dict(), "cache": str(cache_dir()), "generator": generator_hash(),
            "cls": f"{type(model).__module__}:{type(model).__qualname__}"}
    p = subprocess.Popen([sys.executable, "-c", f"import {__name__} as m; m._worker()"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    _WORKERS.add(p)
    tail: list[str] = []
    try:
        assert p.stdin is not None and p.stderr is not None
        p.stdin.write(json.dumps(spec))
        p.stdin.close()
        for line in p.stderr:
            line = line.rstrip()
            if line.startswith("progress: "):
                progress(line[10:])
            elif line:
                tail = (tail + [line])[-20:]
        rc = p.wait()
    finally:
        _WORKERS.discard(p)
    if rc != 0:
        raise RuntimeError(f"build process exited with {rc}: " + "\n".join(tail))


WORKER_NICE = 10  # the build process and its compilers yield the CPU to the caller's process (a control loop)


def _worker() -> None:
    """Entry of the build process: a JSON spec on stdin, progress lines on stderr.  Runs at nice
    +``WORKER_NICE`` (its compilers inherit it): a build started beside a running control loop never takes its
    cores."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    spec = json.loads(sys.stdin.read())
    if spec["generator"] != generator_hash():
        sys.exit("the generator's source files changed since the parent process imported them")
    os.environ[CACHE_ENV] = spec["cache"]
    mod_name, cls_name = spec["cls"].split(":")
    cls = getattr(importlib.import_module(mod_name), cls_name)
    model = cls.from_dict(spec["model"])

    def progress(msg: str) -> None:
        print(f"progress: {msg}", file=sys.stderr, flush=True)

    _build_kind(model, spec["kind"], spec["key"], progress=progress, origin="background")
