"""The compiled cache of the code generator: compiler identity, generator hash, cache keys and entries.

Cache
-----
One entry per compiled module: ``rdgen_<key><EXT_SUFFIX>`` and ``rdgen_<key>.json``.  The key
(:func:`model_key`) hashes the model description (:meth:`RobotModel.to_dict`), the program kind and
options, the generator's own source (the modules of the :mod:`robot_dynamics.symbolic` package —
``customized_model.py``, ``codegen.py`` and the modules they are split into — and the package modules
they import, see :func:`generator_hash`), the compiler (path, version, size and date of the binary), the
flags, the CPU (``-march=native``), Python and NumPy versions.  A build
(:func:`~robot_dynamics.symbolic.codegen_build.build_module`) runs under an exclusive lock file
(``rdgen_<key>.lock``, so concurrent processes build once), writes into a temporary directory and
publishes by atomic renames, the shared object first, then the metadata holding its SHA-256.  An entry
is used only if its metadata parse, name its key and match the checksum of the shared object
(:func:`_valid_entry`); otherwise — or when loading fails — it is rebuilt once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .codegen_config import _STACK_BYTES, CACHE_ENV, CFLAGS, CHUNK_CHARS, O1_MIN_CHARS, SIMD_MAX_CHARS

log = logging.getLogger("robot_dynamics.symbolic.codegen")  # one logger for the whole generator


def cache_dir() -> Path:
    """``$ROBOT_DYNAMICS_CACHE``, else ``$XDG_CACHE_HOME/robot_dynamics/codegen`` (default ``~/.cache/...``)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "robot_dynamics" / "codegen"


# --------------------------------------------------------------- compiler and cache key
def compiler() -> str | None:
    """Path of the C compiler (``$CC`` or gcc/cc) or None."""
    cc = os.environ.get("CC")
    if cc and shutil.which(cc):
        return shutil.which(cc)
    return shutil.which("gcc") or shutil.which("cc")


@lru_cache(maxsize=8)
def _compiler_id(cc: str) -> str:
    """Compiler identity: resolved path, size and date of the binary, and its version."""
    real = os.path.realpath(cc)
    st = os.stat(real)
    try:
        ver = subprocess.run([cc, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        ver = "?"
    return f"{real}:{st.st_size}:{st.st_mtime_ns}:{ver}"


@lru_cache(maxsize=1)
def _host_tag() -> str:
    """Machine and CPU flags (the extension is built with -march=native), Python and NumPy versions."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return (f"{platform.machine()}:{sys.implementation.cache_tag}:{sysconfig.get_config_var('EXT_SUFFIX')}:"
            f"numpy {np.__version__}:{hashlib.sha256(flags.encode()).hexdigest()[:12]}")


# from .x import a, b  /  from .x import (a,\n b)  ->  dots, module, names in parentheses, names on one line
_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(?:\(([\w,\s]+)|([\w, \t]+))",
                              re.MULTILINE)


def _generator_files() -> list[Path]:
    """The modules of this package (codegen.py, customized_model.py and the modules they are split into) and
    the package modules they import (at module level or inside functions, e.g. the base parameters), read
    from their ``from .x import`` statements."""
    here = Path(__file__).resolve().parent
    roots = sorted({*here.glob("*.py"), here / "codegen.py", here / "customized_model.py"})
    files = set(roots)
    for f in roots:
        try:
            text = f.read_text()
        except OSError:
            continue
        for dots, mod, in_parentheses, on_one_line in _RELATIVE_IMPORT.findall(text):
            names = in_parentheses or on_one_line
            base = f.parent
            for _ in range(len(dots) - 1):
                base = base.parent
            cands = [base.joinpath(*mod.split(".")).with_suffix(".py")] if mod else \
                [base / f"{n.strip().split()[0]}.py" for n in names.split(",") if n.strip()]
            files.update(c for c in cands if c.is_file())
    return sorted(files)


def _generator_sources() -> list[tuple[str, bytes]]:
    """(file name, content) of the generator's source files (:func:`_generator_files`)."""
    out = []
    for f in _generator_files():
        try:
            out.append((f.name, f.read_bytes()))
        except OSError:  # no source next to the bytecode: the file name alone
            out.append((f.name, b""))
    return out


def _hash_sources() -> str:
    h = hashlib.sha256()
    for name, data in _generator_sources():
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def generator_hash() -> str:
    """SHA-256 of the generator's source files (:func:`_generator_sources`) as this process imported
    them (computed once, when this module is imported): part of every cache key."""
    return _hash_sources()


def _check_generator_unchanged() -> None:
    """Refuse to build when the generator's files changed on disk since they were hashed: the code
    running here would be published under the key of another source."""
    if _hash_sources() != generator_hash():
        raise RuntimeError("the generator's source files changed since this process imported them: "
                           "restart it to compile programs")


def model_key(model: Any, **options: Any) -> str:
    """Cache key: the model description, the options (kind, language, parameters), the generator's
    source, the compiler and flags, the host."""
    cc = compiler()
    desc = json.dumps({
        "model": model.to_dict(), "options": options, "generator": generator_hash(),
        "compiler": _compiler_id(cc) if cc else None, "flags": CFLAGS, "host": _host_tag(),
        "split": (CHUNK_CHARS, SIMD_MAX_CHARS, O1_MIN_CHARS, _STACK_BYTES),
    }, sort_keys=True, default=str)
    return hashlib.sha256(desc.encode()).hexdigest()[:24]


# --------------------------------------------------------------- cache entries
_EXT = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
PROGRAM_MODULE_PREFIX = "rdgen_"  # the module name of a compiled program: the prefix and its key
_LOADED: dict[str, Any] = {}


def _paths(key: str, d: Path | None = None) -> tuple[Path, Path, Path]:
    d = cache_dir() if d is None else d
    name = f"{PROGRAM_MODULE_PREFIX}{key}"
    return d / f"{name}{_EXT}", d / f"{name}.json", d / f"{name}.lock"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _valid_entry(key: str, d: Path | None = None) -> bool:
    """The entry's metadata parse, name its key, and match the shared object's size and checksum."""
    so, meta, _ = _paths(key, d)
    try:
        info = json.loads(meta.read_text())
        return (isinstance(info, dict) and info.get("key") == key and so.stat().st_size == info.get("size")
                and _sha256(so) == info.get("sha256"))
    except (OSError, ValueError):
        return False


def _load_extension(name: str, path: Path) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def cache_load(key: str) -> Any | None:
    """The module of a valid cache entry (loaded once per process), else None."""
    mod = _LOADED.get(key)
    if mod is not None:
        return mod
    if not _valid_entry(key):
        return None
    so, _, _ = _paths(key)
    try:
        mod = _load_extension(f"{PROGRAM_MODULE_PREFIX}{key}", so)
    except (ImportError, OSError) as exc:
        log.warning("cache entry %s does not load (%s): rebuilding it", so.name, exc)
        return None
    _LOADED[key] = mod
    return mod


def release_buffers() -> None:
    """Drop the big batch outputs (4–256 MB) the loaded programs keep for reuse.

    A compiled program hands its last big output out again once nothing references it any more (the
    caller dropped the result and every view of it): a fresh array of that size costs more in page faults
    and page zeroing than the program costs to fill it.  Each program entry keeps at most one such array."""
    for mod in list(_LOADED.values()):
        release = getattr(mod, "release", None)
        if release is not None:
            release()


generator_hash()  # the generator's source as imported now (see _check_generator_unchanged)
