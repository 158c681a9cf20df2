"""The engine behind the dynamics API.

:class:`Engine` is what :class:`~robot_dynamics.model.robot_model.RobotModel` calls for
``inverse_dynamics``, ``nonlinear_effects``, ``gravity_torques``, ``inertia_matrix``, ``regressor``
and ``forward_dynamics``: the compiled customized program of the model (001 §7.5, §7.6.2) once it
is ready, the NumPy model until then.  Once a function has been called ``ROBOT_DYNAMICS_COMPILE_AFTER``
times (default 20; a batch of N states counts 1 + N/256; one-off calls never start anything), a
background thread loads its program from the cache, or has it generated and compiled in a background
process (:mod:`~robot_dynamics.symbolic.codegen_worker`, one build at a time), progress reported by
:mod:`logging` (logger ``robot_dynamics.symbolic.codegen``, never on stdout).  No caller ever waits for a
compiler: until the program is loaded, calls use NumPy.  A failed build is logged (warning) and NumPy
stays in use.  Without a C compiler, or when the build failed, the inverse dynamics and H
(``PYTHON_KINDS``) get the generated scalar Python program instead
(:func:`~robot_dynamics.symbolic.codegen_python.python_scalar_source`, generated in a background thread,
or in the caller's thread by ``model.compile(wait=True)``): single states run it (6 joints: ~8 µs per call
vs 0.2-0.5 ms for NumPy), batches stay on NumPy; ``model.engine`` reports ``python``.  The generator's own
calls of the API (e.g. the numerical base parameters) never start builds.  The compiled programs and the
NumPy model agree to round-off (about 1e-15 relative), not bit for bit: where a run must be bitwise
repeatable, choose the engine (``ROBOT_DYNAMICS_ENGINE``, :meth:`RobotModel.compile`,
:meth:`RobotModel.set_backend`; the modes are described in :mod:`robot_dynamics.symbolic.codegen`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .codegen_backend import GeneratedBackend, _dispatch, _same_gravity
from .codegen_build import _GENERATING, _build_kind, _options
from .codegen_cache import cache_load, compiler, model_key
from .codegen_config import COMPILE_AFTER_ENV, DEFAULT_COMPILE_AFTER, ENGINE_ENV
from .codegen_python import PYTHON_KINDS, _scalar_id_entries, load_python, python_scalar_source
from .codegen_worker import _build_in_worker

log = logging.getLogger("robot_dynamics.symbolic.codegen")  # one logger for the whole generator


# --------------------------------------------------------------- the engine behind RobotModel
# engine attribute -> (module kind, entry in the module, public name)
_ATTRS = {
    "id": ("id", "evaluate", "inverse_dynamics"),
    "nle": ("id", "nle", "nonlinear_effects"),
    "gravity": ("gravity", "evaluate", "gravity_torques"),
    "inertia": ("inertia", "evaluate", "inertia_matrix"),
    "regressor": ("regressor", "evaluate", "regressor"),
    "fd": ("fd", "evaluate", "forward_dynamics"),
}
_PUBLIC = {pub: attr for attr, (_, _, pub) in _ATTRS.items()}
DEFAULT_COMPILE = ("inverse_dynamics", "nonlinear_effects", "gravity_torques", "inertia_matrix", "forward_dynamics")


def engine_mode() -> str:
    """``$ROBOT_DYNAMICS_ENGINE``: ``auto`` (default), ``compiled``, ``numpy`` or ``python``."""
    mode = (os.environ.get(ENGINE_ENV) or "auto").strip().lower()
    if mode not in ("auto", "compiled", "numpy", "python"):
        warnings.warn(f"{ENGINE_ENV}={mode!r} is not auto, compiled, numpy or python: using auto", RuntimeWarning,
                      stacklevel=3)
        mode = "auto"
    return mode


def _compile_after() -> int:
    try:
        return max(0, int(os.environ.get(COMPILE_AFTER_ENV, DEFAULT_COMPILE_AFTER)))
    except ValueError:
        return DEFAULT_COMPILE_AFTER


def _numpy_functions() -> dict[str, Callable[..., np.ndarray]]:
    from ..dynamics.dynamic_terms import gravity_torques, inertia_matrix, nonlinear_effects
    from ..dynamics.forward_dynamics import forward_dynamics
    from ..dynamics.inverse_dynamics import inverse_dynamics, regressor

    return {"id": inverse_dynamics, "nle": nonlinear_effects, "gravity": gravity_torques,
            "inertia": inertia_matrix, "regressor": regressor, "fd": forward_dynamics}


_BUILD_SLOT = threading.Semaphore(1)  # one background build at a time (each uses every core)


def _instead(kind: str) -> str:
    """What runs ``kind`` when it has no compiled program (log messages)."""
    return "the generated scalar Python program takes over" if kind in PYTHON_KINDS else "the NumPy model stays in use"


class Engine:
    """The functions behind the dynamics methods of one (immutable) model.

    Attributes ``id, nle, gravity, inertia, regressor, fd`` are callables taking the states
    positionally (``id``, ``nle``, ``fd`` also an optional wrench on link n): the compiled program of
    the model once loaded, the NumPy model until then (see the module docstring for the modes)."""

    def __init__(self, model: Any, mode: str | None = None) -> None:
        self.model = model
        self.mode = mode or engine_mode()
        self.generated: GeneratedBackend | None = None
        self._numpy = _numpy_functions()
        self._lock = threading.Lock()
        self._state: dict[str, str] = {}  # kind -> new | building | ready | failed | unavailable
        self._score: dict[str, int] = {}
        self._done: dict[str, threading.Event] = {}
        self._pinned = False  # set_backend("numpy" | "generated"): programs built later are not put in use
        self._modules: dict[str, Any] = {}
        self._keys: dict[str, str] = {}
        self._python: dict[str, Callable[..., list[float]]] = {}  # kind -> generated scalar Python program in use
        self._python_done: dict[str, threading.Event] = {}
        self._python_lock = threading.Lock()
        self._threshold = _compile_after()
        self._install_fallbacks()

    # ---- dispatch tables
    def _install_fallbacks(self) -> None:
        model = self.model
        for attr, f in self._numpy.items():
            if self.mode == "numpy":
                setattr(self, attr, _bind(f, model))
            else:
                setattr(self, attr, self._fallback(attr, f))

    def _fallback(self, attr: str, f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        kind = _ATTRS[attr][0]
        model = self.model

        def fallback(*args: Any) -> np.ndarray:
            if self._touch(kind, args[0] if args else None):
                return getattr(self, attr)(*args)  # compiled synchronously ("compiled" mode)
            return f(model, *args)

        return fallback

    def _install(self, kind: str, mod: Any) -> None:
        """(lock held) Put a loaded program in use — unless the backend was chosen explicitly since the
        build started (``set_backend("numpy" | "generated")``): a late build never overrides that choice."""
        self._modules[kind] = mod
        if self._pinned:
            return
        for attr, (k, entry, _) in _ATTRS.items():
            if k == kind:
                setattr(self, attr, getattr(mod, entry))

    def set_generated(self, backend: GeneratedBackend | None) -> None:
        """Explicit backends: a :class:`GeneratedBackend` (built synchronously, function by function at its
        first call), or None for the NumPy model only."""
        self.generated = backend
        self._pinned = True
        if backend is None:
            self.mode = "numpy"
            self._install_fallbacks()
            return
        self.mode = "generated"
        for attr, (_, _, pub) in _ATTRS.items():
            setattr(self, attr, self._lazy_generated(attr, pub))

    def _lazy_generated(self, attr: str, pub: str) -> Callable[..., np.ndarray]:
        def first_call(*args: Any) -> np.ndarray:
            be = self.generated
            assert be is not None
            f = be.function(pub)
            setattr(self, attr, f)
            return f(*args)

        if pub == "inverse_dynamics" and self.generated is not None:
            return self.generated.function(pub)
        return first_call

    # ---- state machine of the automatic engine
    def _touch(self, kind: str, q: Any) -> bool:
        """Count a fallback call; past the threshold, load or build the program in the background.
        True: compiled now (``compiled`` mode)."""
        if getattr(_GENERATING, "depth", 0):
            return False  # a call made by the generator itself
        if self.mode == "python":  # the scalar Python program from the first call on, never a compiler
            return kind in PYTHON_KINDS and kind not in self._python_done and self._python_start(kind, wait=True)
        if self.mode == "compiled":
            if self._state.get(kind, "new") == "new":
                return self._ensure(kind) or self._python_start(kind, wait=True)
            return False
        if self.mode != "auto":
            return False
        w = 1
        if getattr(q, "ndim", None) == 2:
            w += len(q) // 256
        with self._lock:
            score = self._score[kind] = self._score.get(kind, 0) + w
            if score >= self._threshold and self._state.get(kind, "new") == "new":
                if compiler() is None:
                    self._state[kind] = "unavailable"
                    self._python_start(kind, wait=False)
                else:
                    self._start_build(kind)
        return False

    def _key(self, kind: str) -> str:
        if kind not in self._keys:
            self._keys[kind] = model_key(self.model, kind=kind, lang="c", **_options(kind, "base", True))
        return self._keys[kind]

    def _start_build(self, kind: str) -> None:
        """(lock held) Load ``kind`` from the cache, or build it in a background process."""
        self._state[kind] = "building"
        self._done[kind] = threading.Event()
        threading.Thread(target=self._background_build, args=(kind,), name=f"rd-build-{kind}", daemon=True).start()

    def _background_build(self, kind: str) -> None:
        name = self.model.name
        t0 = time.perf_counter()
        try:
            mod = cache_load(self._key(kind))
            if mod is None:
                with _BUILD_SLOT:
                    mod = cache_load(self._key(kind))  # built meanwhile by another model of the same description
                    if mod is None:
                        log.info("%s: compiling the customized %s program in the background", name, kind)
                        _build_in_worker(self.model, kind, self._key(kind),
                                         lambda msg: log.debug("%s %s: %s", name, kind, msg))
                        mod = cache_load(self._key(kind))
                        if mod is None:
                            raise RuntimeError("the built cache entry does not load")
                log.info("%s: compiled %s ready after %.1f s", name, kind, time.perf_counter() - t0)
            else:
                log.debug("%s: compiled %s loaded from the cache", name, kind)
        except Exception as exc:  # noqa: BLE001 - never let a background thread fail silently
            log.warning("%s: compiling %s failed, %s: %s", name, kind, _instead(kind), exc)
            with self._lock:
                self._state[kind] = "failed"
                self._done[kind].set()
            self._python_start(kind, wait=False)
            return
        with self._lock:
            self._install(kind, mod)
            self._state[kind] = "ready"
            self._done[kind].set()

    def _ensure(self, kind: str) -> bool:
        """Load or build ``kind`` in this thread (waits for a running background build).  True if compiled."""
        with self._lock:
            st = self._state.get(kind, "new")
            if st == "ready":
                return True
            if compiler() is None:
                self._state[kind] = "unavailable"
                return False
            ev = self._done.get(kind)
            running = st == "building" and ev is not None
            if not running:
                self._state[kind] = "building"
                ev = self._done[kind] = threading.Event()
        if running:
            assert ev is not None
            ev.wait()
            return self._state.get(kind) == "ready"
        try:
            mod = _build_kind(self.model, kind, self._key(kind), origin=f"engine ({self.mode})",
                              progress=lambda msg: log.debug("%s %s: %s", self.model.name, kind, msg))
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: compiling %s failed, %s: %s", self.model.name, kind, _instead(kind), exc)
            with self._lock:
                self._state[kind] = "failed"
                ev.set()
            return False
        with self._lock:
            self._install(kind, mod)
            self._state[kind] = "ready"
            ev.set()
        return True

    # ---- the generated scalar Python program (no C compiler, or its build failed)
    def _python_start(self, kind: str, wait: bool) -> bool:
        """Generate the scalar Python program of ``kind`` (:func:`python_scalar_source`) and run it for single
        states (batches stay on NumPy): in a background thread, or in this one with ``wait`` (a generation
        already running is waited for).  True once it is in use; kinds outside ``PYTHON_KINDS``: False."""
        if kind not in PYTHON_KINDS:
            return False
        with self._python_lock:
            done = self._python_done.get(kind)
            first = done is None
            if first:
                done = self._python_done[kind] = threading.Event()
        assert done is not None
        if first and wait:
            self._python_generate(kind, done)
        elif first:
            threading.Thread(target=self._python_generate, args=(kind, done), name=f"rd-python-{kind}",
                             daemon=True).start()
        if wait:
            done.wait()
        return kind in self._python

    def _python_generate(self, kind: str, done: threading.Event) -> None:
        name, t0 = self.model.name, time.perf_counter()
        f = None
        _GENERATING.depth = getattr(_GENERATING, "depth", 0) + 1  # the generator's own calls stay on NumPy
        try:
            from .customized_model import customized_inverse_dynamics

            cm = customized_inverse_dynamics(self.model, parameters="base", simplified=True, wrench=True)
            f = load_python(python_scalar_source(cm, "generated"), "generated")
        except Exception as exc:  # noqa: BLE001 - never let a background thread fail silently
            log.warning("%s: generating the scalar Python %s failed, the NumPy model stays in use: %s", name, kind, exc)
        finally:
            _GENERATING.depth -= 1
        if f is not None:
            entries = _scalar_id_entries(self.model, f, self._numpy)
            with self._lock:
                # a compiled program loaded meanwhile stays in use; an explicit backend chosen since, too
                if self._state.get(kind) != "ready" and not self._pinned:
                    self._python[kind] = f
                    for attr, (k, entry, _) in _ATTRS.items():
                        if k == kind:
                            setattr(self, attr, entries[entry])
                    log.info("%s: generated scalar Python %s in use for single states after %.2f s", name, kind,
                             time.perf_counter() - t0)
        done.set()

    # ---- public helpers
    def compile(self, functions: tuple[str, ...] = DEFAULT_COMPILE, wait: bool = True,
                isolated: bool = False) -> dict[str, str]:
        """Compile (or load) the programs of ``functions`` now; ``wait``: block until they are ready.  Without a
        C compiler (or when the build fails) the kinds of ``PYTHON_KINDS`` get the generated scalar Python
        program instead (``python``), generated in this thread with ``wait``, in a background thread without.
        ``isolated`` (with ``wait``): a program not in the cache is generated and compiled in a child process,
        as background builds are, so this process's other threads (a control loop) never wait for the GIL
        while the generator runs (~1 s of pure Python for a 6-joint arm)."""
        kinds = []
        for f in functions:
            if f not in _PUBLIC:
                raise ValueError(f"unknown function {f!r}; known: {sorted(_PUBLIC)}")
            k = _ATTRS[_PUBLIC[f]][0]
            if k not in kinds:
                kinds.append(k)
        if self.mode == "generated":
            assert self.generated is not None
            for f in functions:
                setattr(self, _PUBLIC[f], self.generated.function(f))
            return {f: "generated" for f in functions}
        if self._pinned:  # compile() after set_backend("numpy"): the latest explicit request wins
            self._pinned = False
            for k in kinds:
                if k in self._modules:
                    self._install(k, self._modules[k])
        for k in kinds:
            if wait and isolated and compiler() is not None:
                with self._lock:
                    if self._state.get(k, "new") in ("new", "failed"):
                        self._start_build(k)
                    ev = self._done.get(k)
                if ev is not None:
                    ev.wait()
                if self._state.get(k) != "ready" and k not in self._python:  # failed: as below, in this thread
                    self._python_start(k, wait=True)
            elif wait:
                if not self._ensure(k):  # no compiler or a failed build: the generated scalar Python program
                    self._python_start(k, wait=True)
            else:
                with self._lock:
                    if self._state.get(k, "new") == "new" and compiler() is not None:
                        self._start_build(k)
                    elif compiler() is None:
                        self._state.setdefault(k, "unavailable")
                        self._python_start(k, wait=False)
        return {f: s for f, s in self.status().items() if f in functions}

    def status(self) -> dict[str, str]:
        """Per public function: ``compiled`` (the compiled customized program), ``building``, ``python`` (no
        C compiler, or its build failed: the generated scalar Python program runs single states, NumPy
        batches) or ``numpy`` (the NumPy model)."""
        out = {}
        for kind, _, pub in _ATTRS.values():
            if self.mode == "generated" or self._pinned:  # an explicit backend: what runs, whatever was built
                out[pub] = self.mode
                continue
            st = self._state.get(kind, "new")
            out[pub] = ("compiled" if st == "ready" else "building" if st == "building"
                        else "python" if kind in self._python else "numpy")
        return out

    # ---- calls with options (wrench, other gravity, method)
    def inverse_dynamics(self, q: Any, qd: Any, qdd: Any, f_ext: Any, gravity: Any, f_ext_frame: str) -> np.ndarray:
        if f_ext is None and (gravity is None or _same_gravity(gravity, self.model.gravity)):
            return self.id(q, qd, qdd)
        if "id" not in self._modules and self.generated is None:
            return self._numpy["id"](self.model, q, qd, qdd, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
        return _dispatch(self.model, self.id, self._numpy["id"], (q, qd, qdd), ("q", "qd", "qdd"), f_ext, gravity,
                         f_ext_frame, self.model.gravity)

    def forward_dynamics(self, q: Any, qd: Any, tau: Any, f_ext: Any, method: str | None, gravity: Any,
                         f_ext_frame: str) -> np.ndarray:
        fd = self._numpy["fd"]
        if method is not None:
            return fd(self.model, q, qd, tau, f_ext=f_ext, method=method, gravity=gravity, f_ext_frame=f_ext_frame)
        if f_ext is None and (gravity is None or _same_gravity(gravity, self.model.gravity)):
            return self.fd(q, qd, tau)
        if "fd" not in self._modules and self.generated is None:
            return fd(self.model, q, qd, tau, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
        return _dispatch(self.model, self.fd, fd, (q, qd, tau), ("q", "qd", "tau"), f_ext, gravity, f_ext_frame,
                         self.model.gravity)

    def with_gravity(self, attr: str, gravity: Any, *states: Any) -> np.ndarray:
        """``attr`` (nle, gravity, regressor) with a gravity vector: the model's → the engine, else NumPy."""
        if _same_gravity(gravity, self.model.gravity):
            return getattr(self, attr)(*states)
        return self._numpy[attr](self.model, *states, gravity=gravity)


def _bind(f: Callable[..., np.ndarray], model: Any) -> Callable[..., np.ndarray]:
    def call(*args: Any) -> np.ndarray:
        return f(model, *args)

    return call
