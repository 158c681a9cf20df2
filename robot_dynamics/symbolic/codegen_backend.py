"""The explicit, synchronous ``"generated"`` backend of :meth:`RobotModel.set_backend`.

:class:`GeneratedBackend` builds the generated programs of one model (``lang="c"``: compiled C extensions,
``lang="python"``: the vectorized NumPy functions of :func:`~robot_dynamics.symbolic.codegen_python.python_source`;
base or standard parameters), the inverse dynamics at once and the other programs at their first use.
:func:`_dispatch` runs a generated program when the wrench acts on link n only and gravity is the
model's, and the NumPy model otherwise (also used by the engine).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .codegen_build import _build_kind, _options, generate_program
from .codegen_cache import compiler, model_key
from .codegen_python import load_python, python_source

# --------------------------------------------------------------- explicit backend
_BACKEND_KINDS = {"inverse_dynamics": "id", "nonlinear_effects": "id", "gravity_torques": "gravity",
                  "inertia_matrix": "inertia", "regressor": "regressor", "forward_dynamics": "fd"}
_ALIASES = {"inertia_matrix": "inertia"}  # kind names of GeneratedBackend before issue 15


class _PythonModule:
    """Generated Python programs behind the C modules' entries (validation, one state or a batch)."""

    def __init__(self, model: Any, kind: str, f: Callable[..., np.ndarray]) -> None:
        self.raw = f
        self.evaluate = _python_entry(model, kind, f)
        if kind == "id":
            ev = self.evaluate
            self.nle = lambda q, qd, fe=None: ev(q, qd, np.zeros(np.shape(q)), fe)


class GeneratedBackend:
    """Generated inverse dynamics, regressor, inertia matrix, gravity, H and direct dynamics of one model,
    built synchronously (see :meth:`RobotModel.set_backend`).

    ``lang="c"`` compiles C extensions (falls back to Python with a warning when no compiler is
    available); ``lang="python"`` uses the vectorized NumPy functions.  Default parameters: base
    parameters with the zero values exploited (exact).  The inverse dynamics is built at once,
    the other programs at their first use."""

    name = "generated"

    def __init__(
        self, model: Any, lang: str = "c", parameters: str = "base", simplified: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if lang not in ("c", "python"):
            raise ValueError(f"lang must be 'c' or 'python', got {lang!r}")
        if lang == "c" and compiler() is None:
            warnings.warn("no C compiler found: the generated backend uses the NumPy code", RuntimeWarning, stacklevel=2)
            lang = "python"
        self.model = model
        self.lang = lang
        self.options = {"parameters": parameters, "simplified": simplified}
        self._progress = progress
        self._gravity = np.array(model.gravity, float)
        self._modules: dict[str, Any] = {}
        self._id = self._program("id")

    def _generate(self, kind: str, progress: Callable[[str], None] | None) -> Any:
        kind = _ALIASES.get(kind, kind)
        return generate_program(self.model, kind, progress=progress, **self.options)

    def _build(self, kind: str, progress: Callable[[str], None] | None) -> Any:
        """The module of ``kind``: a compiled extension, or the generated Python program behind the same entries."""
        kind = _ALIASES.get(kind, kind)
        if self.lang == "c":
            key = model_key(self.model, kind=kind, lang="c", **_options(kind, **self.options))
            return _build_kind(self.model, kind, key, progress=progress,
                               generate=lambda k: self._generate(k, progress), **self.options)
        f = load_python(python_source(self._generate(kind, progress), "generated"), "generated")
        return _PythonModule(self.model, kind, f)

    def _module(self, kind: str) -> Any:
        kind = _ALIASES.get(kind, kind)
        if kind not in self._modules:
            self._modules[kind] = self._build(kind, self._progress)
        return self._modules[kind]

    def _program(self, kind: str) -> Callable[..., np.ndarray]:
        return self._module(kind).evaluate

    def function(self, name: str) -> Callable[..., np.ndarray]:
        """The validated function behind ``RobotModel.<name>`` (``inverse_dynamics``, ``nonlinear_effects``,
        ``gravity_torques``, ``inertia_matrix``, ``regressor``, ``forward_dynamics``): positional states
        (and an optional wrench on link n for the first two and the last), shapes and finiteness checked."""
        mod = self._module(_BACKEND_KINDS[name])
        return mod.nle if name == "nonlinear_effects" else mod.evaluate

    # ---- API mirroring robot_dynamics.dynamics.inverse_dynamics
    def inverse_dynamics(
        self, q: Any, qd: Any, qdd: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base",
    ) -> np.ndarray:
        from ..dynamics.inverse_dynamics import inverse_dynamics

        return _dispatch(self.model, self._id, inverse_dynamics, (q, qd, qdd), ("q", "qd", "qdd"), f_ext, gravity,
                         f_ext_frame, self._gravity)

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        from ..dynamics.inverse_dynamics import regressor

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return regressor(self.model, q, qd, qdd, gravity=gravity)
        return self._program("regressor")(q, qd, qdd)

    def inertia_matrix(self, q: Any) -> np.ndarray:
        """A(q) incl. rotor inertias: (n, n) or (N, n, n)."""
        return self._program("inertia")(q)

    def gravity_torques(self, q: Any, gravity: Any = None) -> np.ndarray:
        """Q(q): (n,) or (N, n); another ``gravity`` than the model's uses the NumPy model."""
        from ..dynamics.dynamic_terms import gravity_torques

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return gravity_torques(self.model, q, gravity=gravity)
        return self._program("gravity")(q)

    def nonlinear_effects(self, q: Any, qd: Any, gravity: Any = None) -> np.ndarray:
        """H(q, qd) (001 eq. 7.62): the inverse dynamics at zero acceleration."""
        from ..dynamics.dynamic_terms import nonlinear_effects

        if gravity is not None and not _same_gravity(gravity, self._gravity):
            return nonlinear_effects(self.model, q, qd, gravity=gravity)
        return self.function("nonlinear_effects")(q, qd)

    def forward_dynamics(
        self, q: Any, qd: Any, tau: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base",
    ) -> np.ndarray:
        """q̈ by the customized O(n) direct dynamic model (001 §7.6.2)."""
        from ..dynamics.forward_dynamics import forward_dynamics

        return _dispatch(self.model, self._program("fd"), forward_dynamics, (q, qd, tau), ("q", "qd", "tau"), f_ext,
                         gravity, f_ext_frame, self._gravity)

    @property
    def evaluate(self) -> Callable[..., np.ndarray]:
        """The raw generated inverse dynamics ``f(q, qd, qdd[, fe])`` (C: checks shapes and finiteness;
        Python: float64 (N, n) arrays, no checks)."""
        return self._module("id").raw if self.lang == "python" else self._id


def _python_entry(model: Any, kind: str, f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A generated Python program behind the C entry's signature (validation, single state or batch)."""
    from ..dynamics.inverse_dynamics import check_states

    names = {"id": ("q", "qd", "qdd"), "regressor": ("q", "qd", "qdd"), "fd": ("q", "qd", "tau"),
             "gravity": ("q",), "inertia": ("q",)}[kind]
    wrench = kind in ("id", "fd")

    def entry(*args: Any) -> np.ndarray:
        if not len(names) <= len(args) <= len(names) + wrench:
            raise TypeError(f"expected ({', '.join(names)}{'[, fe]' if wrench else ''})")
        states, batch = check_states(model, *zip(args[: len(names)], names, strict=True))
        states = states + [states[0]] * (3 - len(states))
        fe = args[len(names)] if len(args) > len(names) else None
        if fe is not None:
            fe = np.ascontiguousarray(np.broadcast_to(np.asarray(fe, float), (states[0].shape[0], 6)))
        out = f(*states, fe) if wrench else f(*states)
        if kind == "fd" and not np.all(np.isfinite(out)):
            raise ValueError("non-finite accelerations: the inertia matrix is not positive definite "
                             "(check the inertial parameters) or the states overflow")
        return out if batch else out[0]

    return entry


def _same_gravity(gravity: Any, g: np.ndarray) -> bool:
    return np.array_equal(np.asarray(gravity, float), g)


def _dispatch(model: Any, fast: Callable[..., np.ndarray], slow: Callable[..., np.ndarray], states: tuple[Any, ...],
              names: tuple[str, ...], f_ext: Any, gravity: Any, f_ext_frame: str, g_model: np.ndarray) -> np.ndarray:
    """``fast(*states[, fe])`` when the wrench acts on link n only and gravity is the model's, else
    ``slow(model, *states, f_ext=..., gravity=..., f_ext_frame=...)`` (the NumPy model)."""
    if gravity is not None and not _same_gravity(gravity, g_model):
        return slow(model, *states, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
    if f_ext is None:
        return fast(*states)
    from ..dynamics.inverse_dynamics import check_states, external_wrenches

    (qb, *_), batch = check_states(model, *zip(states, names, strict=True))
    w = external_wrenches(model, qb, f_ext, f_ext_frame, batch)
    if w is None or np.any(w[:, :-1]):  # wrenches on inner links: not in the generated programs
        return slow(model, *states, f_ext=f_ext, gravity=gravity, f_ext_frame=f_ext_frame)
    fe = np.ascontiguousarray(w[:, -1])
    return fast(*states, fe if batch else fe[0])


def generated_backend(model: Any, lang: str = "c", **options: Any) -> GeneratedBackend:
    """The generated backend of ``model`` (compiled programs come from the cache when built before)."""
    return GeneratedBackend(model, lang=lang, **options)
