"""One Newton–Euler (issue 15, item 4): the NumPy model and the symbolic generator run the same recursion.

These are structural tests, not correctness tests (Pinocchio is the oracle of the dynamics elsewhere): every
NumPy dynamics entry point and every customized program goes through :mod:`robot_dynamics.dynamics.recursion`,
a mutation of that one file changes the NumPy model and the generated program alike, and the file is part of
the generator's source hash (a changed recursion invalidates compiled programs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pinocchio_from_mdh import random_model

from robot_dynamics.dynamics import recursion
from robot_dynamics.dynamics.dynamic_terms import gravity_torques, nonlinear_effects
from robot_dynamics.dynamics.forward_dynamics import forward_dynamics
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics, regressor
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.symbolic import codegen
from robot_dynamics.symbolic.customized_model import (
    customized_forward_dynamics,
    customized_gravity_torques,
    customized_inverse_dynamics,
    customized_regressor,
)

ROOT = Path(__file__).resolve().parents[1]
RECURSION = Path(recursion.__file__).resolve()


@pytest.fixture(scope="module")
def model() -> RobotModel:
    """A random 5-joint tree with prismatic joints, rotor inertia and friction."""
    rng = np.random.default_rng(3)
    while True:
        m = random_model(rng, 5, tree=True, friction=True)
        if 0 < int(np.sum(m.sigma)) < 5 and len(set(m.antecedent.tolist())) < 5:  # prismatic and a branch
            return m


def _recursion_functions_run(f: Callable[[], object]) -> set[str]:
    """Names of the functions of recursion.py called while f() runs."""
    seen: set[str] = set()

    def profile(frame, event, arg) -> None:  # noqa: ANN001
        if event == "call" and frame.f_code.co_filename == str(RECURSION):
            seen.add(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        f()
    finally:
        sys.setprofile(None)
    return seen


_STATES = {"q": np.linspace(-1.0, 1.0, 5), "qd": np.linspace(0.5, -0.7, 5), "qdd": np.linspace(0.3, 0.9, 5)}

ENTRY_POINTS: dict[str, tuple[Callable[[RobotModel], object], set[str]]] = {
    "numpy inverse_dynamics": (lambda m: inverse_dynamics(m, *_STATES.values()), {"newton_euler", "forward", "backward"}),
    "numpy gravity_torques": (lambda m: gravity_torques(m, _STATES["q"]), {"newton_euler"}),
    "numpy nonlinear_effects": (lambda m: nonlinear_effects(m, _STATES["q"], _STATES["qd"]), {"newton_euler"}),
    "numpy regressor": (lambda m: regressor(m, *_STATES.values()), {"forward"}),
    "numpy forward_dynamics[cholesky]": (lambda m: forward_dynamics(m, *_STATES.values()), {"newton_euler"}),
    "numpy forward_dynamics[recursive]": (
        lambda m: forward_dynamics(m, *_STATES.values(), method="recursive"), {"forward"}),
    "symbolic inverse dynamics": (lambda m: customized_inverse_dynamics(m, "standard"), {"newton_euler"}),
    "symbolic gravity": (lambda m: customized_gravity_torques(m, "standard"), {"newton_euler"}),
    "symbolic regressor": (customized_regressor, {"forward"}),
    "symbolic direct dynamics": (lambda m: customized_forward_dynamics(m, "standard"), {"forward"}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_every_entry_point_runs_the_shared_recursion(model: RobotModel, name: str) -> None:
    f, expected = ENTRY_POINTS[name]
    ran = _recursion_functions_run(lambda: f(model))
    assert expected <= ran, f"{name} did not run {sorted(expected - ran)} of recursion.py"


def test_the_recursion_is_part_of_the_generator_hash() -> None:
    """A changed recursion.py changes the cache key of every compiled program (issue 15, item 3)."""
    assert RECURSION in [Path(p).resolve() for p in codegen._generator_files()]


# The program run before and after a mutation: NumPy inverse dynamics and the customized program (its
# generated Python, no C compiler needed) of the same model at the same states, URDF coordinates.
_EVALUATE = """
import json, sys
import numpy as np
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.symbolic import codegen
from robot_dynamics.symbolic.customized_model import customized_inverse_dynamics

def evaluate(model_dict):
    model = RobotModel.from_dict(model_dict)
    rng = np.random.default_rng(11)
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (8, model.dof)) for _ in range(3))
    ours = inverse_dynamics(model, q, qd, qdd)
    program = codegen.load_python(codegen.python_source(customized_inverse_dynamics(model, "standard", wrench=False)))
    return {"numpy": ours.tolist(), "symbolic": np.asarray(program(q, qd, qdd)).tolist(),
            "generator": codegen.generator_hash()}
"""

MUTATIONS = {  # name: (text of recursion.py, its replacement)
    "7.53 without the term ω_{a(j)} × q̇_j a_j": ("ar.add_axis(ar.add(wd, ar.cross_axis(wi, qd)), qdd)",
                                                 "ar.add_axis(wd, qdd)"),
    "7.60 without P_k × f_k": ('ar.add(ar.to_antecedent(k, m_tot[k], "N"), ar.position_cross(k, f_ant[k]))',
                               'ar.to_antecedent(k, m_tot[k], "N")'),
}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_mutation_of_the_recursion_changes_numpy_and_symbolic_models_alike(
    model: RobotModel, mutation: str, tmp_path: Path
) -> None:
    namespace: dict[str, object] = {}
    exec(_EVALUATE, namespace)  # noqa: S102 - the same code as in the mutated copy
    before = namespace["evaluate"](model.to_dict())
    generator = before.pop("generator")
    before = {k: np.array(v) for k, v in before.items()}
    assert _rel(before["numpy"], before["symbolic"]) < 1e-10
    old, new = MUTATIONS[mutation]
    shutil.copytree(ROOT / "robot_dynamics", tmp_path / "robot_dynamics", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "robot_dynamics" / "dynamics" / "recursion.py"
    text = target.read_text()
    assert text.count(old) == 1, f"recursion.py no longer contains {old!r}: update the mutation"
    target.write_text(text.replace(old, new))
    script = _EVALUATE + "\nprint(json.dumps(evaluate(json.loads(sys.stdin.read()))))\n"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "ROBOT_DYNAMICS_CACHE": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", script], input=json.dumps(model.to_dict()), capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    after = json.loads(run.stdout.strip().splitlines()[-1])
    assert after.pop("generator") != generator, "a changed recursion.py must change the codegen cache key"
    after = {k: np.array(v) for k, v in after.items()}
    assert _rel(after["numpy"], before["numpy"]) > 1e-3, "the mutation did not reach the NumPy model"
    assert _rel(after["symbolic"], before["symbolic"]) > 1e-3, "the mutation did not reach the generated program"
    assert _rel(after["numpy"], after["symbolic"]) < 1e-10, "the two models no longer share the recursion"
