"""Code emitters for customized models, their compiled cache, and the engine behind the dynamics API.

This module is the entry point of the code generator; the code lives in one module per concern, and
every name of those modules that was defined here is importable from here:

* :func:`python_source` — a NumPy function evaluating a customized program on a batch of states;
  :func:`python_scalar_source` — the same program for one state in plain Python floats (``math.sin``,
  ``q[j]``; no NumPy per operation): the single-state engine when no C compiler is available
  (:mod:`~robot_dynamics.symbolic.codegen_python`).
* :func:`c_source` — a CPython extension module (C API + NumPy C API) evaluating it in C: one state
  per call of a dedicated scalar function, or four states at a time in SIMD registers for a batch
  (:mod:`~robot_dynamics.symbolic.codegen_cmodule`).  Large programs are split into functions of
  bounded size, spread over several translation units compiled in parallel
  (:mod:`~robot_dynamics.symbolic.codegen_c`); expressions are printed by
  :mod:`~robot_dynamics.symbolic.codegen_printing`.
* :class:`Engine` — what :class:`~robot_dynamics.model.robot_model.RobotModel` calls for
  ``inverse_dynamics``, ``nonlinear_effects``, ``gravity_torques``, ``inertia_matrix``, ``regressor``
  and ``forward_dynamics``: the compiled customized program of the model (001 §7.5, §7.6.2) once it
  is ready, the NumPy model (or the generated scalar Python program) until then, programs compiled in
  the background (:mod:`~robot_dynamics.symbolic.codegen_engine`, builds in a child process:
  :mod:`~robot_dynamics.symbolic.codegen_worker`).  Progress is reported by :mod:`logging` (logger
  ``robot_dynamics.symbolic.codegen``, never on stdout).
* :class:`GeneratedBackend` — the explicit, synchronous ``"generated"`` backend of
  :meth:`RobotModel.set_backend` (``lang="c"`` or ``"python"``, choice of parameters;
  :mod:`~robot_dynamics.symbolic.codegen_backend`).
* The compiled cache — compiler identity, generator hash, keys and entries, their format
  (:mod:`~robot_dynamics.symbolic.codegen_cache`); builds and the programs of a model
  (:mod:`~robot_dynamics.symbolic.codegen_build`); the settings below and the size limits of the C
  programs (:mod:`~robot_dynamics.symbolic.codegen_config`).
* :func:`codegen_cli` — ``robot-dynamics codegen`` (here).

Environment
-----------
``ROBOT_DYNAMICS_ENGINE``
    ``auto`` (default: background compilation as above), ``compiled`` (the first call of each
    function compiles or loads its program and waits for it: deterministic, the compiled code from
    the first call on), ``numpy`` (never compile unless asked by ``model.compile()`` or
    ``set_backend("generated")``: the NumPy model only), ``python`` (never compile unless asked: the
    generated scalar Python program of ``PYTHON_KINDS`` for single states, generated at the first call,
    the NumPy model otherwise; deterministic, no C compiler involved).
``ROBOT_DYNAMICS_COMPILE_AFTER``
    calls before a background build starts (``auto``), default 20; 0 builds at the first call.
``ROBOT_DYNAMICS_CACHE``
    the cache directory; default ``$XDG_CACHE_HOME/robot_dynamics/codegen`` (``~/.cache/...``).
``CC``
    the C compiler (default ``gcc``, else ``cc``); none found: the NumPy model is used.

Patching
--------
Assigning a name of this module (``monkeypatch.setattr(codegen, "compiler", f)``, ``codegen.compiler = f``)
also rebinds it in every module of the generator that holds the same object (:class:`_Codegen`), so the
code using it sees the new value, as when the generator was one module.
"""

from __future__ import annotations

import json
import logging
import sys
import types
from pathlib import Path
from typing import Any

from . import (
    codegen_backend,
    codegen_build,
    codegen_c,
    codegen_cache,
    codegen_cmodule,
    codegen_config,
    codegen_engine,
    codegen_printing,
    codegen_python,
    codegen_worker,
)
from .codegen_backend import _ALIASES as _ALIASES
from .codegen_backend import _BACKEND_KINDS as _BACKEND_KINDS
from .codegen_backend import GeneratedBackend, generated_backend
from .codegen_backend import _dispatch as _dispatch
from .codegen_backend import _python_entry as _python_entry
from .codegen_backend import _PythonModule as _PythonModule
from .codegen_backend import _same_gravity as _same_gravity
from .codegen_build import _GENERATING as _GENERATING
from .codegen_build import _LOCK as _LOCK
from .codegen_build import _build_kind as _build_kind
from .codegen_build import _compile_units as _compile_units
from .codegen_build import _FileLock as _FileLock
from .codegen_build import _options as _options
from .codegen_build import _units_for as _units_for
from .codegen_build import build_module, compile_c
from .codegen_build import generate_program as generate_program
from .codegen_c import _C_COMMON as _C_COMMON
from .codegen_c import _chunks as _chunks
from .codegen_c import _Item as _Item
from .codegen_c import _program_items as _program_items
from .codegen_c import _program_units as _program_units
from .codegen_cache import _EXT as _EXT
from .codegen_cache import _LOADED as _LOADED
from .codegen_cache import _RELATIVE_IMPORT as _RELATIVE_IMPORT
from .codegen_cache import PROGRAM_MODULE_PREFIX as PROGRAM_MODULE_PREFIX
from .codegen_cache import _check_generator_unchanged as _check_generator_unchanged
from .codegen_cache import _compiler_id as _compiler_id
from .codegen_cache import _generator_files as _generator_files
from .codegen_cache import _generator_sources as _generator_sources
from .codegen_cache import _hash_sources as _hash_sources
from .codegen_cache import _host_tag as _host_tag
from .codegen_cache import _load_extension as _load_extension
from .codegen_cache import _paths as _paths
from .codegen_cache import _sha256 as _sha256
from .codegen_cache import _valid_entry as _valid_entry
from .codegen_cache import cache_dir, compiler, generator_hash, model_key, release_buffers
from .codegen_cache import cache_load as cache_load
from .codegen_cmodule import _C_MODULE_HEAD as _C_MODULE_HEAD
from .codegen_cmodule import _C_RUNNER as _C_RUNNER
from .codegen_cmodule import _MODULE_ENTRIES as _MODULE_ENTRIES
from .codegen_cmodule import _module_unit as _module_unit
from .codegen_cmodule import c_source
from .codegen_cmodule import module_sources as module_sources
from .codegen_config import _STACK_BYTES as _STACK_BYTES
from .codegen_config import CACHE_ENV as CACHE_ENV
from .codegen_config import CFLAGS as CFLAGS
from .codegen_config import CHUNK_CHARS as CHUNK_CHARS
from .codegen_config import COMPILE_AFTER_ENV as COMPILE_AFTER_ENV
from .codegen_config import DEFAULT_COMPILE_AFTER as DEFAULT_COMPILE_AFTER
from .codegen_config import ENGINE_ENV
from .codegen_config import O1_MIN_CHARS as O1_MIN_CHARS
from .codegen_config import SIMD_MAX_CHARS as SIMD_MAX_CHARS
from .codegen_engine import _ATTRS as _ATTRS
from .codegen_engine import _BUILD_SLOT as _BUILD_SLOT
from .codegen_engine import _PUBLIC as _PUBLIC
from .codegen_engine import DEFAULT_COMPILE as DEFAULT_COMPILE
from .codegen_engine import Engine
from .codegen_engine import _bind as _bind
from .codegen_engine import _compile_after as _compile_after
from .codegen_engine import _instead as _instead
from .codegen_engine import _numpy_functions as _numpy_functions
from .codegen_engine import engine_mode as engine_mode
from .codegen_printing import _SIGN as _SIGN
from .codegen_printing import _WRENCH as _WRENCH
from .codegen_printing import _expr as _expr
from .codegen_printing import _factor as _factor
from .codegen_printing import _inputs as _inputs
from .codegen_printing import _num as _num
from .codegen_printing import _output_signs as _output_signs
from .codegen_printing import _signed as _signed
from .codegen_python import _SIGN_OF_NAME as _SIGN_OF_NAME
from .codegen_python import PYTHON_KINDS as PYTHON_KINDS
from .codegen_python import _scalar as _scalar
from .codegen_python import _scalar_id_entries as _scalar_id_entries
from .codegen_python import load_python, python_scalar_source, python_source
from .codegen_worker import _WORKERS as _WORKERS
from .codegen_worker import WORKER_NICE as WORKER_NICE
from .codegen_worker import _build_in_worker as _build_in_worker
from .codegen_worker import _stop_workers as _stop_workers
from .codegen_worker import _worker as _worker

__all__ = [
    "ENGINE_ENV",
    "Engine",
    "GeneratedBackend",
    "build_module",
    "c_source",
    "cache_dir",
    "compile_c",
    "compiler",
    "generated_backend",
    "generator_hash",
    "load_python",
    "model_key",
    "python_scalar_source",
    "python_source",
    "release_buffers",
]

log = logging.getLogger(__name__)


# --------------------------------------------------------------- CLI
def codegen_cli(args: Any, model: Any) -> int:
    """``robot-dynamics codegen URDF --lang python|c [--simplified] [--base-parameters|--standard-parameters]
    [-o FILE] [--json]``: generate the customized model of ``model`` (loaded by the CLI from ``args.urdf``),
    print its operation counts."""
    from .customized_model import customized_inverse_dynamics

    def progress(msg: str) -> None:
        print(f"codegen: {msg}", file=sys.stderr, flush=True)

    cm = customized_inverse_dynamics(
        model, parameters=args.parameters, simplified=args.simplified, wrench=True, progress=progress,
    )
    source = python_source(cm, "inverse_dynamics") if args.lang == "python" else c_source(cm, "rdgen")
    if args.output:
        Path(args.output).write_text(source)
    counts = cm.counts()
    info = {
        **counts, "robot": model.name, "parameters": args.parameters, "simplified": args.simplified,
        "lang": args.lang, "statements": len(cm.body), "constants": len(cm.constants),
        "generation_time_s": round(cm.generation_time, 3), "output": args.output,
    }
    if args.json:
        print(json.dumps(info))
    else:
        print(f"{model.name}: {model.dof} dof, {args.parameters} parameters{' (simplified)' if args.simplified else ''}")
        print(f"{counts['multiplications']} multiplications, {counts['additions']} additions, "
              f"{counts['sin_cos']} sin/cos, {counts['sign']} sign")
        if args.output:
            print(f"{args.lang} code written to {args.output}")
    return 0


# --------------------------------------------------------------- one module for patches
_PARTS = (codegen_backend, codegen_build, codegen_c, codegen_cache, codegen_cmodule, codegen_config, codegen_engine,
          codegen_printing, codegen_python, codegen_worker)
_UNSET = object()


class _Codegen(types.ModuleType):
    """The type of this module: assigning one of its names also rebinds the name in each module of
    :data:`_PARTS` that holds the same object (where the code using it lives now), so that a patch of
    ``codegen.<name>`` — and its undoing, an assignment too — reaches that code as when it was one module."""

    def __setattr__(self, name: str, value: Any) -> None:
        if not (name.startswith("__") and name.endswith("__")):
            old = self.__dict__.get(name, _UNSET)
            if old is not _UNSET:
                for part in _PARTS:
                    if vars(part).get(name, _UNSET) is old:
                        setattr(part, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Codegen
