"""Building compiled programs: compilation of the C units, publication into the cache, the programs of a model.

* :func:`build_module` — the module of a cache entry, loaded if valid, else generated, compiled (the units in
  parallel, :func:`_compile_units`) and published under the entry's lock file
  (:mod:`~robot_dynamics.symbolic.codegen_cache` describes the entries);
* :func:`compile_c` — a one-file extension module;
* :func:`generate_program` — the customized program of one kind of a model (001 §7.5, §7.6.2), and
  :func:`_build_kind` its module.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .codegen_cache import (
    _EXT,
    PROGRAM_MODULE_PREFIX,
    _check_generator_unchanged,
    _compiler_id,
    _host_tag,
    _paths,
    _sha256,
    cache_dir,
    cache_load,
    compiler,
    generator_hash,
)
from .codegen_cmodule import module_sources
from .codegen_config import CFLAGS

_LOCK = threading.Lock()
# > 0 while this thread generates a program: the generator's own calls of the dynamics API (e.g. the
# numerical base parameters use model.regressor) run the NumPy model and never start another build
_GENERATING = threading.local()


class _FileLock:
    """Exclusive advisory lock (``flock``) on a lock file: concurrent processes build an entry once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> _FileLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except ImportError:  # not POSIX: no lock, the atomic renames still keep entries whole
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None


def _compile_units(cc: str, units: list[str], module_name: str, work: Path,
                   progress: Callable[[str], None] | None) -> Path:
    """Compile the units in parallel (one process per core) and link the module; returns the .so path."""
    inc = [sysconfig.get_paths()["include"], np.get_include()]
    objs, procs = [], []
    jobs = max(1, min(len(units), os.cpu_count() or 1))
    t0 = time.perf_counter()
    for i, text in enumerate(units):
        src = work / f"{module_name}_{i}.c"
        src.write_text(text)
        obj = work / f"{module_name}_{i}.o"
        objs.append(obj)
        extra = text[len("/* rd-flags: "):text.index(" */")].split() if text.startswith("/* rd-flags: ") else []
        cmd = [cc, *CFLAGS, *extra, *[f"-I{p}" for p in inc], "-c", str(src), "-o", str(obj)]
        while len([p for p in procs if p[0].poll() is None]) >= jobs:
            time.sleep(0.01)
        procs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), cmd))
    for p, cmd in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"compilation failed: {' '.join(cmd)}\n{err[-2000:]}")
    out = work / f"{module_name}{_EXT}"
    cmd = [cc, "-shared", *[str(o) for o in objs], "-o", str(out), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"link failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    if progress:
        progress(f"compiled {len(units)} unit(s) in {time.perf_counter() - t0:.1f} s")
    return out


def build_module(key: str, sources: Callable[[str], list[str]], *, describe: dict[str, Any] | None = None,
                 progress: Callable[[str], None] | None = None) -> Any:
    """The extension module of cache entry ``key``: loaded if valid, else built and published.

    ``sources(module_name)`` returns the C units (generation happens there, only when building).
    Concurrent builders of one key (threads or processes) take turns on the entry's lock file;
    the second finds the entry built.  A corrupted entry is rebuilt once."""
    mod = cache_load(key)
    if mod is not None:
        return mod
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler found (gcc/cc/$CC)")
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    so, meta, lock = _paths(key, d)
    name = f"{PROGRAM_MODULE_PREFIX}{key}"
    with _LOCK, _FileLock(lock):
        for attempt in (0, 1):
            mod = cache_load(key)  # another process may have built it meanwhile
            if mod is not None:
                return mod
            if attempt:
                break
            for stale in d.glob(f".{name}.*"):  # left by a builder killed mid-way (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            t0 = time.perf_counter()
            _GENERATING.depth = getattr(_GENERATING, "depth", 0) + 1
            try:
                units = sources(name)
            finally:
                _GENERATING.depth -= 1
            t_gen = time.perf_counter() - t0
            work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=d))
            try:
                built = _compile_units(cc, units, name, work, progress)
                info = {**(describe or {}), "key": key, "size": built.stat().st_size, "sha256": _sha256(built),
                        "generator": generator_hash(), "compiler": _compiler_id(cc), "flags": list(CFLAGS),
                        "units": len(units), "generation_s": round(t_gen, 3),
                        "compile_s": round(time.perf_counter() - t0 - t_gen, 3), "created": time.time()}
                for p in (meta, so):  # unpublish a bad entry first (its metadata, then the object)
                    if p.exists():
                        p.unlink()
                os.replace(built, so)  # atomic: readers see the old file, none, or the complete new one
                tmp_meta = work / "meta.json"
                tmp_meta.write_text(json.dumps(info, indent=1))
                os.replace(tmp_meta, meta)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    raise RuntimeError(f"cache entry {so} does not load after a rebuild")


def compile_c(source_for: Callable[[str], str], key: str | None = None) -> Any:
    """Compile (or load from the cache) a one-file extension module; returns the module.

    ``source_for(module_name)`` returns the C source; without ``key``, the hash of the source
    generated for a placeholder name (plus compiler and flags) is the key."""
    if key is None:
        cc = compiler()
        ident = f"{_compiler_id(cc) if cc else ''}{CFLAGS}{_host_tag()}"
        key = hashlib.sha256((source_for("rdgen") + ident).encode()).hexdigest()[:24]
    return build_module(key, lambda name: [source_for(name)])


# --------------------------------------------------------------- programs of a model
def generate_program(model: Any, kind: str, parameters: str = "base", simplified: bool = True,
                     progress: Callable[[str], None] | None = None) -> Any:
    """The customized program of ``kind``: ``id`` (with the end-effector wrench), ``gravity``,
    ``inertia``, ``regressor`` (standard parameters), ``fd`` (direct dynamics, with the wrench)."""
    from . import customized_model as cmod

    _check_generator_unchanged()

    if kind == "id":
        return cmod.customized_inverse_dynamics(model, parameters=parameters, simplified=simplified, wrench=True,
                                                progress=progress)
    if kind == "gravity":
        return cmod.customized_gravity_torques(model, parameters=parameters, simplified=simplified, progress=progress)
    if kind == "inertia":
        return cmod.customized_inertia_matrix(model, parameters=parameters, simplified=simplified, progress=progress)
    if kind == "regressor":
        return cmod.customized_regressor(model, progress=progress)
    if kind == "fd":
        fd = getattr(cmod, "customized_forward_dynamics", None)
        if fd is None:
            raise RuntimeError("no customized direct dynamic model in this version of customized_model")
        return fd(model, parameters=parameters, simplified=simplified, wrench=True, progress=progress)
    raise ValueError(f"unknown program kind {kind!r}")


def _options(kind: str, parameters: str, simplified: bool) -> dict[str, Any]:
    return {} if kind == "regressor" else {"parameters": parameters, "simplified": simplified}


def _units_for(cm: Any) -> int:
    """Translation units of a program (its parts compiled in parallel): one per core, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def _build_kind(model: Any, kind: str, key: str, parameters: str = "base", simplified: bool = True,
                progress: Callable[[str], None] | None = None,
                generate: Callable[[str], Any] | None = None, origin: str = "explicit") -> Any:
    """Load or build the module of ``kind`` for ``model`` under ``key``."""
    def sources(name: str) -> list[str]:
        if progress:
            progress(f"generating the customized {kind} program of {model.name!r} ({model.dof} joints)")
        cm = generate(kind) if generate else generate_program(model, kind, parameters, simplified, progress)
        if progress:
            progress(f"{len(cm.body)} statements; compiling")
        return module_sources(kind, {kind: cm}, name, units=_units_for(cm))

    return build_module(key, sources, describe={"robot": model.name, "dof": model.dof, "kind": kind, "origin": origin,
                                                **_options(kind, parameters, simplified)}, progress=progress)
