"""Issue 14 acceptance: whole kinematic trees and locked chains of every example-robot-data URDF vs Pinocchio.

Per file (id = file stem): our whole-tree model (``RobotModel.from_urdf(path)``) against Pinocchio's fixed-base
model (``pin.buildModelFromUrdf(path)``) at 100 random states: link poses, inverse dynamics, inertia matrix,
gravity, forward dynamics (both methods) and the regressor (URDF and random consistent parameters), all to
1e-9 relative (see ``tree_oracle.rel_error``).  Chains with locked branches against ``pin.buildReducedModel``
with the same locked values.  The table with conversion times: ``.venv/bin/python bench/tree_table.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest
import tree_oracle as T

from robot_dynamics.model.robot_model import RobotModel

FILES = T.robot_files()
BY_ID = {rf.id: rf for rf in FILES}


@functools.cache
def _whole(rid: str) -> T.WholeResult:
    return T.whole_result(BY_ID[rid])


def _show(err: T.Errors) -> str:
    return ", ".join(f"{k} {v:.2e}" for k, v in err.checked().items())


def test_discovery() -> None:
    """Every *.urdf of example-robot-data is compared or excluded with Pinocchio's reason, none skipped."""
    root = T.example_robot_data_dir()
    every = {p.relative_to(root).as_posix(): p for p in T.all_urdf_files()}
    assert len(every) >= 69
    assert set(T.EXCLUDED) <= set(every), sorted(set(T.EXCLUDED) - set(every))
    assert {rf.rel for rf in FILES} == set(every) - set(T.EXCLUDED)
    assert len({rf.id for rf in FILES}) == len(FILES)
    for rel, path in every.items():
        reason = T.pinocchio_exclusion(path)
        if rel in T.EXCLUDED:
            assert reason is not None, f"{rel} is excluded but Pinocchio loads it with moving joints"
            category = reason.split(":")[0].split(" (")[0]  # "Pinocchio cannot load it" / "no moving joint"
            assert T.EXCLUDED[rel].startswith(category), (rel, reason)
        else:
            assert reason is None, (rel, reason)
    assert set(T.INCONSISTENT_INERTIA) <= {rf.rel for rf in FILES}
    assert set(T.KNOWN_DIFFERENCES) <= set(BY_ID)


@pytest.mark.parametrize("rf", FILES, ids=[rf.id for rf in FILES])
def test_whole_tree(rf: T.RobotFile) -> None:
    # conversion: refused without the flag exactly for the files listed as physically inconsistent
    if rf.allow_inconsistent_inertia:
        link = T.INCONSISTENT_INERTIA[rf.rel][0]
        with pytest.raises(ValueError, match=rf"link '{link}' inertial is physically inconsistent"):
            RobotModel.from_urdf(str(rf.path))
    else:
        RobotModel.from_urdf(str(rf.path))
    # structure: every moving joint of Pinocchio's model, same tree, nothing locked
    pair = T.whole_pair(rf)
    ours = pair.ours
    assert sorted(ours.joint_names) == sorted(pair.pin_joint_names())
    assert ours.dof == pair.model.nv
    assert ours.locked_joints == {}
    parents = ["" if a == 0 else ours.joint_names[a - 1] for a in ours.antecedent]
    assert parents == pair.pin_parent_names()
    assert np.all(ours.Ia == 0.0)
    # numbers
    result = _whole(rf.id)
    assert result.dof == ours.dof
    err = result.errors
    known = T.KNOWN_DIFFERENCES.get(rf.id, ((), ""))[0]
    bad = {k: v for k, v in err.checked().items() if k not in known and not v <= T.TOL}
    assert not bad, f"{rf.id}: beyond {T.TOL:g}: {bad} (all: {_show(err)})"
    # forward dynamics of a tree with massless joints (M singular) is refused with a clear error
    if err.fd_locked:
        q = np.zeros((1, ours.dof))
        with pytest.raises(ValueError, match="not positive definite"):
            ours.forward_dynamics(q, q, q)
        assert set(err.fd_locked) == set(T.massless_joints(pair))


@pytest.mark.parametrize("case", T.CHAINS, ids=[c.id for c in T.CHAINS])
def test_locked_chain(case: T.ChainCase) -> None:
    r = T.chain_result(case)
    assert r.joints == r.expected_chain
    assert set(r.locked) == set(r.expected_locked)
    for name, value in r.expected_locked.items():
        assert r.locked[name] == pytest.approx(value, rel=0, abs=1e-15), name
    assert set(r.given) <= set(r.locked)
    bad = {k: v for k, v in r.errors.checked().items() if not v <= T.TOL}
    assert not bad, f"{case.id}: beyond {T.TOL:g}: {bad} (all: {_show(r.errors)})"


def test_chain_cases_lock_something() -> None:
    """The chain cases exercise locking: all but the UR (no off-chain joint) lock >= 1 joint, and the
    named robots of the issue are covered."""
    stems = {c.rel.split("/")[-1].removesuffix(".urdf") for c in T.CHAINS}
    assert {"panda", "pr2", "tiago", "z1", "so100", "icub", "talos_full_v2", "baxter", "ur5_gripper"} <= stems
    for c in T.CHAINS:
        full = pin.buildModelFromUrdf(str(T.example_robot_data_dir() / c.rel))
        tip_joint = full.frames[full.getFrameId(c.tip, pin.BODY)].parentJoint
        n_off = full.njoints - 1 - (len(full.supports[tip_joint]) - 1)
        assert n_off >= (0 if "ur5" in c.rel else 1), c.id
