"""Layers of the package (issue 15, item 6), read from the source with ``ast`` and checked by importing.

Which modules are the **core**: every module of ``robot_dynamics`` except the ROS layer
``robot_dynamics.ros`` (rclpy nodes) and the application entry points that run the ROS node set
(:data:`ENTRY_POINTS`: ``cli``, ``demo``, ``__main__``).  Rules:

1. The core never imports ``robot_dynamics.ros`` — not at module level, not inside a function, not
   for type hints.  The entry points may import it, but only inside the commands that need it (lazily),
   so that ``robot-dynamics --help`` and every non-ROS command work without ROS.
2. The core imports with ``rclpy`` and ``mujoco`` unavailable (all of it but the MuJoCo plant
   :data:`MUJOCO_PLANT` itself), and identification runs end to end without MuJoCo (the inertial algebra it needs lives in :mod:`robot_dynamics.model.inertia`, not in the
   MuJoCo plant :mod:`robot_dynamics.sim.simulator`).
3. No import cycles.  The run-time import graph has an edge A -> B for every ``import`` of B in A,
   at module level **or inside a function** (a lazy import defers a cycle, it does not remove it),
   except under ``if TYPE_CHECKING:`` (never run); importing ``pkg.mod`` also runs ``pkg/__init__``,
   so it is an edge to every package on the way that A is not itself inside (the root package, which
   every module is inside, is only an edge when imported by name).  The one module allowed to import
   algorithm modules lazily from its methods is the facade :data:`FACADE` (``RobotModel.inverse_dynamics``
   -> ``inverse_dynamics.inverse_dynamics(model, ...)``, Pinocchio style); then

   a. the graph without the facade's lazy imports is acyclic (:func:`test_no_cycle_outside_the_facade`), and
   b. nothing the facade imports lazily reaches the facade at run time, directly or through other
      modules: an algorithm module receives a model, never builds one, so its ``RobotModel`` hints sit
      under ``TYPE_CHECKING`` (:func:`test_facade_targets_never_import_the_facade`).

   (a) and (b) together say that the whole graph, facade edges included, is acyclic.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "robot_dynamics"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
ROS = f"{PACKAGE}.ros"
ENTRY_POINTS = frozenset({f"{PACKAGE}.cli", f"{PACKAGE}.demo", f"{PACKAGE}.__main__"})
FACADE = f"{PACKAGE}.model.robot_model"
BLOCKED = ("rclpy", "mujoco")
MUJOCO_PLANT = frozenset({f"{PACKAGE}.sim.simulator"})  # the only core module that needs mujoco


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    lazy: bool  # inside a function body
    type_checking: bool  # under ``if TYPE_CHECKING:``

    def __str__(self) -> str:
        kind = "TYPE_CHECKING" if self.type_checking else ("lazy" if self.lazy else "module level")
        return f"{self.source} -> {self.target} ({self.source.replace('.', '/')}.py:{self.line}, {kind})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name), read from the file tree."""
    out: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


def is_core(name: str) -> bool:
    return not (name == ROS or name.startswith(ROS + ".") or name in ENTRY_POINTS)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Modules of the package one import statement of module ``name`` loads by name."""
    mods = modules()
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    else:
        if node.level:
            base = name.split(".") if is_package(name) else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        # ``from pkg import sub``: the submodule if there is one, else a name defined in pkg
        found = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in mods else stem for a in node.names]
    out = []
    for t in found:
        if t != PACKAGE and not t.startswith(PACKAGE + "."):
            continue
        while t not in mods:  # ``import robot_dynamics.x.attr`` cannot happen, but be safe
            t = t.rsplit(".", 1)[0]
        out.append(t)
    return out


def _with_packages(source: str, target: str) -> list[str]:
    """``target`` and the packages importing it runs first, except the ones ``source`` is inside."""
    parts = target.split(".")
    out = [target]
    for k in range(2, len(parts)):  # robot_dynamics.x, robot_dynamics.x.y, ... (not the root)
        pkg = ".".join(parts[:k])
        if not (source == pkg or source.startswith(pkg + ".")):
            out.append(pkg)
    return out


def module_edges(name: str, source: str) -> list[Edge]:
    """The imports of package modules in the source text of module ``name``."""
    out: list[Edge] = []

    def visit(node: ast.AST, lazy: bool, tc: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(name, node):
                for t in _with_packages(name, target):
                    if t != name:
                        out.append(Edge(name, t, node.lineno, lazy, tc))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, lazy, True)
            for child in node.orelse:
                visit(child, lazy, tc)
            return
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner, tc)

    visit(ast.parse(source), False, False)
    return out


@cache
def edges() -> tuple[Edge, ...]:
    """Every import of a package module by a package module (see the module docstring)."""
    return tuple(e for name, path in modules().items() for e in module_edges(name, path.read_text(encoding="utf-8")))


def runtime_graph(skip_facade_lazy: bool = False) -> dict[str, dict[str, Edge]]:
    """{module: {imported module: first such import}} of the imports that run."""
    graph: dict[str, dict[str, Edge]] = {m: {} for m in modules()}
    for e in edges():
        if e.type_checking or (skip_facade_lazy and e.source == FACADE and e.lazy):
            continue
        graph[e.source].setdefault(e.target, e)
    return graph


def cycles(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def describe(graph: dict[str, dict[str, Edge]], comp: list[str]) -> str:
    """The imports inside one cycle, one per line, for the failure message."""
    inside = set(comp)
    lines = [str(e) for m in comp for t, e in sorted(graph[m].items()) if t in inside]
    return f"{len(comp)} modules in one cycle:\n  " + "\n  ".join(lines)


def reaches(graph: dict[str, dict[str, Edge]], start: str, goal: str) -> list[Edge] | None:
    """A path of imports start -> ... -> goal (breadth first), or None."""
    prev: dict[str, Edge | None] = {start: None}
    todo = [start]
    while todo:
        nxt = []
        for v in todo:
            for w, e in sorted(graph[v].items()):
                if w in prev:
                    continue
                prev[w] = e
                if w == goal:
                    path = []
                    while prev[w] is not None:
                        path.append(prev[w])
                        w = prev[w].source
                    return path[::-1]
                nxt.append(w)
        todo = nxt
    return None


# ------------------------------------------------------------------------------------------ tests
def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    """The reader itself, on a made-up module (else every rule below could pass vacuously)."""
    source = textwrap.dedent("""
        from typing import TYPE_CHECKING
        import numpy
        from .model.mdh import PRISMATIC
        from .identification import lin
        from .trajectory.base import Trajectory
        if TYPE_CHECKING:
            from .model.robot_model import RobotModel
        else:
            from .model import robots
        class Plant:
            from .model.inertia import perturbed  # runs when the class body runs: module level
            def step(self):
                from os import path  # not the package: ignored
                from .ros import node_set
                return lambda: __import__("x")
        """)
    got = {(e.target, e.lazy, e.type_checking) for e in module_edges(f"{PACKAGE}.demo", source)}  # parsed as a top-level module
    p = PACKAGE + "."
    assert got == {
        (p + "model.mdh", False, False), (p + "model", False, False),
        (p + "identification.lin", False, False), (p + "identification", False, False),
        (p + "trajectory.base", False, False), (p + "trajectory", False, False),
        (FACADE, False, True), (p + "model", False, True),
        (p + "model.robots", False, False),
        (p + "model.inertia", False, False),
        (ROS + ".node_set", True, False), (ROS, True, False),
    }, got
    # inside its own package, a module does not re-enter the package's __init__
    inner = module_edges(f"{PACKAGE}.trajectory.joint_space", "from .base import Trajectory\n")
    assert [(e.target, e.lazy) for e in inner] == [(p + "trajectory.base", False)]
    # the real tree: the facade exists and delegates lazily, and some hints are under TYPE_CHECKING
    assert FACADE in modules() and any(e.source == FACADE and e.lazy for e in edges())
    assert any(e.type_checking for e in edges())
    assert not is_core(ROS + ".node_set") and not is_core(f"{PACKAGE}.cli") and is_core(f"{PACKAGE}.sim.simulator")
    # a made-up cycle is found
    e = Edge("a", "b", 1, False, False)
    g = {"a": {"b": e}, "b": {"c": e}, "c": {"a": e}, "d": {"a": e}}
    assert cycles(g) == [["a", "b", "c"]]


def test_core_never_imports_ros() -> None:
    """Rule 1: no import of ``robot_dynamics.ros`` in the core, whatever its kind; entry points only lazily."""
    bad = [str(e) for e in edges() if is_core(e.source) and not is_core(e.target) and e.target not in ENTRY_POINTS]
    assert not bad, "the core imports the ROS layer:\n  " + "\n  ".join(bad)
    eager = [str(e) for e in edges() if e.source in ENTRY_POINTS and (e.target == ROS or e.target.startswith(ROS + "."))
             and not e.lazy]
    assert not eager, "entry points import the ROS layer at module level:\n  " + "\n  ".join(eager)
    to_apps = [str(e) for e in edges() if is_core(e.source) and e.target in ENTRY_POINTS]
    assert not to_apps, "the core imports an application entry point:\n  " + "\n  ".join(to_apps)


def test_no_cycle_outside_the_facade() -> None:
    """Rule 3a: without the facade's lazy imports, the run-time import graph is acyclic."""
    graph = runtime_graph(skip_facade_lazy=True)
    found = cycles(graph)
    assert not found, "\n".join(describe(graph, c) for c in found)


def test_facade_targets_never_import_the_facade() -> None:
    """Rule 3b: no module the facade imports lazily imports the facade back at run time (even indirectly)."""
    graph = runtime_graph()
    targets = sorted({e.target for e in edges() if e.source == FACADE and e.lazy and not e.type_checking})
    assert targets, f"{FACADE} imports nothing lazily: is FACADE still the facade module?"
    back = {}
    for t in targets:
        path = reaches(graph, t, FACADE)
        if path:
            back[t] = path
    assert not back, "modules the facade imports lazily import it back at run time:\n" + "\n".join(
        f"  {t}:\n    " + "\n    ".join(map(str, p)) for t, p in back.items()
    )


def test_whole_runtime_graph_is_acyclic() -> None:
    """3a and 3b together: every import that runs, facade included, forms no cycle."""
    graph = runtime_graph()
    found = cycles(graph)
    assert not found, "\n".join(describe(graph, c) for c in found)


# ------------------------------------------------------------- importing with ROS and MuJoCo blocked
_SCRIPT = r"""
import importlib, json, math, pkgutil, sys

BLOCKED = {blocked!r}


class Block:
    # a meta path finder refusing the blocked distributions, as if they were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked in this test")
        return None


sys.meta_path.insert(0, Block())
for name in list(sys.modules):
    if name.split(".")[0] in BLOCKED:
        del sys.modules[name]

import robot_dynamics

ROS = "robot_dynamics.ros"
ENTRY = {entry!r}
core, failed = [], {{}}


def walk(path, prefix):
    for info in pkgutil.iter_modules(path, prefix):
        if info.name == ROS or info.name in ENTRY:
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001
            failed[info.name] = f"{{type(exc).__name__}}: {{exc}}"
            continue
        core.append(info.name)
        if info.ispkg:
            walk(mod.__path__, info.name + ".")


walk(robot_dynamics.__path__, "robot_dynamics.")
loaded_by_core = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED or m == ROS or m.startswith(ROS + "."))
entry_failed = {{}}
for name in sorted(ENTRY):
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        entry_failed[name] = f"{{type(exc).__name__}}: {{exc}}"

# identification end to end on synthetic data, no MuJoCo: a perturbed "true" RX-90 moved along an
# exciting Fourier trajectory, its efforts from its own inverse dynamics, sampled at 1 kHz
import numpy as np

from robot_dynamics.identification import (
    FourierTrajectory, IdentificationData, base_parameters_of, estimate, identify, inertia_constants,
    is_physically_consistent, physically_consistent_estimate,
)
from robot_dynamics.model.inertia import perturbed
from robot_dynamics.model.robots import load_model
from robot_dynamics.model.seed_robots import stanford_arm

model = load_model("rx90")
truth = perturbed(model, 0.3, np.random.default_rng(7), friction=True)
rng = np.random.default_rng(11)
n = model.dof


def fourier():
    return FourierTrajectory(np.zeros(n), 0.15 * rng.normal(size=(n, 4)), 0.15 * rng.normal(size=(n, 4)),
                             2 * math.pi / 4.0, periods=1)


traj, val = fourier(), fourier()
t = np.arange(0.0, 4.0, 1e-3)
q, qd, qdd = traj.evaluate(t)
data = IdentificationData(t, q, truth.inverse_dynamics(q, qd, qdd), joint_names=model.joint_names)
true_beta = base_parameters_of(truth).values
nominal_beta = base_parameters_of(model).values
scale = np.maximum(np.abs(true_beta), 1e-3 * np.abs(true_beta).max())
nominal_err = float(np.max(np.abs(nominal_beta - true_beta) / scale))
# exact q, qd, qdd: least squares returns the truth to round-off
exact = estimate(model, q, qd, qdd, data.effort, method="ols")
exact_err = float(np.max(np.abs(exact.values - true_beta) / scale))
# the whole pipeline from positions and efforts (derivatives by differences): the truth's torques on
# another trajectory (the poorly excited parameters are off by the differentiation error only)
res = identify(model, data, method="wls", cutoff=None, band=None, decimate=5, trim=0.05, min_velocity=1e-3)
ident_err = float(np.max(np.abs(res.values - true_beta) / scale))
qv, qdv, qddv = val.evaluate(t[::10])
tau_v = truth.inverse_dynamics(qv, qdv, qddv)
val_err = float(np.linalg.norm(base_parameters_of(model).regressor(qv, qdv, qddv) @ res.values - tau_v)
                / np.linalg.norm(tau_v))
nominal_val_err = float(np.linalg.norm(model.inverse_dynamics(qv, qdv, qddv) - tau_v) / np.linalg.norm(tau_v))

sub = slice(None, None, 100)
fitted = physically_consistent_estimate(model, q[sub], qd[sub], qdd[sub], data.effort[sub], max_nfev=20)
tau = data.effort[sub]
fit_err = float(np.linalg.norm(fitted.inverse_dynamics(q[sub], qd[sub], qdd[sub]) - tau) / np.linalg.norm(tau))
nominal_fit_err = float(np.linalg.norm(model.inverse_dynamics(q[sub], qd[sub], qdd[sub]) - tau) / np.linalg.norm(tau))

arm = stanford_arm()
lin = inertia_constants(arm)

print(json.dumps({{
    "core": core, "failed": failed, "loaded_by_core": loaded_by_core, "entry_failed": entry_failed,
    "exact_err": exact_err, "ident_err": ident_err, "nominal_err": nominal_err,
    "val_err": val_err, "nominal_val_err": nominal_val_err,
    "fit_consistent": bool(is_physically_consistent(fitted)), "truth_consistent": bool(is_physically_consistent(truth)),
    "fit_err": fit_err, "nominal_fit_err": nominal_fit_err,
    "lin_m": [float(x) for x in lin.m],
    "masses": [float(x) for x in arm.inertial[:, 9]],
    "blocked_at_end": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
}}))
"""


@cache
def blocked_run() -> dict:
    """Run :data:`_SCRIPT` in a fresh interpreter where ``rclpy`` and ``mujoco`` cannot be imported."""
    script = _SCRIPT.format(blocked=set(BLOCKED), entry=sorted(ENTRY_POINTS))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          env=env, cwd=ROOT.parent, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_blocking_works() -> None:
    """The blocker itself: with it installed, importing rclpy / mujoco fails (else the test below proves nothing)."""
    code = _SCRIPT.split("import robot_dynamics\n")[0].format(blocked=set(BLOCKED), entry=[]) + textwrap.dedent("""
        for name in BLOCKED:
            try:
                __import__(name)
            except ImportError:
                continue
            raise SystemExit(f"{name} imported through the blocker")
        import robot_dynamics.sim.simulator  # needs mujoco: must fail
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT.parent, timeout=120)
    assert proc.returncode != 0 and "mujoco is blocked in this test" in proc.stderr, proc.stderr[-2000:]


def test_core_imports_without_rclpy_and_mujoco() -> None:
    """Rule 2: every core module except the MuJoCo plant imports with rclpy and mujoco blocked; none of them
    loads ``robot_dynamics.ros``; the entry points import too (they load ROS only inside their commands)."""
    out = blocked_run()
    expected = sorted(m for m in modules() if is_core(m) and m != PACKAGE)
    assert sorted(out["core"]) == sorted(set(expected) - MUJOCO_PLANT), (sorted(set(expected) - set(out["core"])),
                                                                         out["failed"])
    assert set(out["failed"]) == MUJOCO_PLANT, out["failed"]
    assert all("mujoco is blocked" in why for why in out["failed"].values()), out["failed"]
    assert out["loaded_by_core"] == [], out["loaded_by_core"]
    assert out["entry_failed"] == {}, out["entry_failed"]


def test_identification_runs_without_mujoco() -> None:
    """Rule 2: identification end to end (WLS, physically consistent fit, Lin's constants) with mujoco blocked.

    Oracles: the base parameters and the torques of the true model that generated the efforts (30 % off
    the nominal ones); a physically consistent fit explains the efforts better than the nominal model; Lin's
    m̂_i (001 Lemma 1, eq. 5) is the mass of links i..n, summed here directly from the table."""
    out = blocked_run()
    assert out["blocked_at_end"] == []
    assert out["nominal_err"] > 0.1 and out["nominal_val_err"] > 0.01, out  # the data is far from the nominal model
    assert out["exact_err"] < 1e-8, out  # exact derivatives: the truth to round-off
    assert out["ident_err"] < 0.02, out  # from positions only: the truth up to the differentiation error
    assert out["val_err"] < 1e-4, out  # ... which leaves the torques of a validation trajectory exact to 1e-4
    assert out["truth_consistent"] and out["fit_consistent"]
    assert out["fit_err"] < 0.5 * out["nominal_fit_err"], out
    masses = out["masses"]
    assert out["lin_m"] == pytest.approx([sum(masses[i:]) for i in range(len(masses))], rel=1e-12), out["lin_m"]
