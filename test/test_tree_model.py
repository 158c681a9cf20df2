"""Kinematic trees (issue 14): Khalil–Kleinfinger rows (a(j), gamma_j, b_j) from URDF, locked branches, the
``dh`` table, and the malformed inputs of trees — each against Pinocchio or a hand-checked value."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pinocchio as pin
import pytest
from pinocchio_oracle import reduced

from robot_dynamics import RobotModel
from robot_dynamics.model.mdh import mdh_transform

ATOL = 1e-10


def _v(*x: float) -> str:
    return " ".join(repr(float(v)) for v in x)


def _link(name: str, rng: np.random.Generator | None) -> str:
    if rng is None:
        return f"<link name='{name}'/>"
    m = rng.uniform(0.5, 3.0)
    c = rng.uniform(-0.1, 0.1, 3)
    a = rng.uniform(0.01, 0.05, 3)  # box-like principal moments: always physical
    ixx, iyy, izz = (a[1] + a[2]) * m, (a[0] + a[2]) * m, (a[0] + a[1]) * m
    return (f"<link name='{name}'><inertial><origin xyz='{_v(*c)}' rpy='0.1 0.2 0.3'/>"
            f"<mass value='{_v(m)}'/><inertia ixx='{_v(ixx)}' iyy='{_v(iyy)}' izz='{_v(izz)}' ixy='0' ixz='0' iyz='0'/>"
            "</inertial></link>")


def _joint(name: str, parent: str, child: str, kind: str, xyz, rpy, axis, lim: float = 2.5) -> str:
    limit = f"<limit lower='{-lim}' upper='{lim}' effort='100' velocity='3'/>" if kind != "fixed" else ""
    return (f"<joint name='{name}' type='{kind}'><parent link='{parent}'/><child link='{child}'/>"
            f"<origin xyz='{_v(*xyz)}' rpy='{_v(*rpy)}'/><axis xyz='{_v(*axis)}'/>{limit}</joint>")


def random_tree_urdf(n: int, seed: int, prismatic: float = 0.2, fixed: float = 0.15) -> str:
    """A random tree of ``n`` moving joints (and some fixed ones): random parents, origins, axes, inertias."""
    rng = np.random.default_rng(seed)
    links, joints = [_link("base", None)], []
    names = ["base"]
    k = 0
    count = 0
    while count < n:
        parent = names[int(rng.integers(0, len(names)))] if rng.random() < 0.6 else names[-1]
        child = f"l{k}"
        kind = "fixed" if rng.random() < fixed else ("prismatic" if rng.random() < prismatic else "revolute")
        axis = rng.normal(size=3)
        if rng.random() < 0.5:  # many axes along the parent's frame axes, some exactly parallel / perpendicular
            axis = np.eye(3)[int(rng.integers(0, 3))] * rng.choice([-1.0, 1.0])
        xyz = rng.uniform(-0.3, 0.3, 3) * (rng.random() < 0.8)
        rpy = rng.uniform(-np.pi, np.pi, 3) if rng.random() < 0.5 else np.round(rng.uniform(-2, 2, 3)) * np.pi / 2
        links.append(_link(child, rng))
        joints.append(_joint(f"j{k}", parent, child, kind, xyz, rpy, axis))
        names.append(child)
        k += 1
        count += kind != "fixed"
    return f"<robot name='tree{seed}'>" + "".join(links) + "".join(joints) + "</robot>"


def _pin_model(text: str, locked: dict[str, float] | None = None) -> pin.Model:
    return reduced(pin.buildModelFromXML(text), locked)


def _compare(model: RobotModel, pm: pin.Model, states: int = 30, seed: int = 1) -> dict[str, float]:
    """Max abs errors of ID, A(q), g(q), FD (both methods) against Pinocchio, joints mapped by name."""
    data = pm.createData()
    idx = [pm.idx_vs[pm.getJointId(name)] for name in model.joint_names]
    assert sorted(idx) == list(range(pm.nv)) and pm.nq == pm.nv == model.dof
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (states, model.dof)) for _ in range(3))
    tau = model.inverse_dynamics(q, qd, qdd) - model.Fv * qd - model.Fc * np.sign(qd)
    a = model.inertia_matrix(q)
    g = model.gravity_torques(q)
    fd_c = model.forward_dynamics(q, qd, tau, method="cholesky")
    fd_r = model.forward_dynamics(q, qd, tau, method="recursive")
    err = dict.fromkeys(("id", "M", "g", "fd_cholesky", "fd_recursive"), 0.0)
    for k in range(states):
        qp, vp, ap = (np.zeros(pm.nv) for _ in range(3))
        qp[idx], vp[idx], ap[idx] = q[k], qd[k], qdd[k]
        err["id"] = max(err["id"], float(np.abs(tau[k] - pin.rnea(pm, data, qp, vp, ap)[idx]).max()))
        mp = pin.crba(pm, data, qp)
        mp = np.triu(mp) + np.triu(mp, 1).T
        err["M"] = max(err["M"], float(np.abs(a[k] - mp[np.ix_(idx, idx)]).max()))
        err["g"] = max(err["g"], float(np.abs(g[k] - pin.computeGeneralizedGravity(pm, data, qp)[idx]).max()))
        tp = np.zeros(pm.nv)
        tp[idx] = tau[k]
        acc = pin.aba(pm, data, qp, vp, tp)[idx]
        err["fd_cholesky"] = max(err["fd_cholesky"], float(np.abs(fd_c[k] - acc).max() / max(1.0, np.abs(acc).max())))
        err["fd_recursive"] = max(err["fd_recursive"], float(np.abs(fd_r[k] - acc).max() / max(1.0, np.abs(acc).max())))
    return err


# --------------------------------------------------------------------------- gamma, b
BRANCHED = (
    "<robot name='branched'>" + _link("base", None) + "".join(_link(f"l{k}", np.random.default_rng(k)) for k in range(5))
    + _joint("j0", "base", "l0", "revolute", (0, 0, 0.1), (0, 0, 0), (0, 0, 1))
    + _joint("j1", "l0", "l1", "revolute", (0.2, 0, 0.3), (0, 0, 0), (0, 1, 0))  # main successor: longest branch
    + _joint("j2", "l1", "l2", "revolute", (0, 0, 0.4), (0, 0, 0), (0, 1, 0))
    + _joint("j3", "l0", "l3", "revolute", (0, 0.15, 0.5), (0, 0, 0), (1, 0, 0))  # second successor of j0
    + _joint("j4", "l0", "l4", "prismatic", (0, 0, 0.7), (0, 0, 0), (1, 1, 0))  # third successor, prismatic
    + "</robot>"
)


def test_branches_get_gamma_and_b_exactly() -> None:
    """Hand-checked rows: x_1 is the common normal of z_1 (z) and z_2 (y, through (0.2, 0, 0.3)): x_1 = x,
    O_1 at height 0.3 - 0.1 = 0.2 above R0... R0 is aligned with R1, so heights are relative to O_1."""
    m = RobotModel.from_urdf(BRANCHED)
    assert m.joint_names == ["j0", "j1", "j2", "j3", "j4"] and list(m.antecedent) == [0, 1, 2, 1, 1]
    r1, r3, r4 = m.joints[1], m.joints[3], m.joints[4]
    assert (r1.gamma, r1.b) == (0.0, 0.0)  # the main successor of joint 1
    # joint j3 (axis x through (0, 0.15, 0.6) in base): common normal with z_1 (the z axis through the origin)
    # is the y direction at height 0.6; x_1 = +x, so gamma = +-pi/2 and b = 0.6 - 0.4 (O_1 is at z = 0.4,
    # the foot of the common normal of z_1 and z_2)
    assert abs(abs(r3.gamma) - math.pi / 2) < 1e-15 and abs(r3.b - 0.2) < 1e-15
    assert abs(r3.d - 0.15) < 1e-15 and abs(abs(r3.alpha) - math.pi / 2) < 1e-15
    # prismatic j4 along (1, 1, 0)/sqrt2 at height 0.8: gamma = angle of the common normal
    assert abs(r4.b - 0.4) < 1e-15 and r4.sigma == 1 and abs(r4.d) < 1e-15
    # the table reproduces the URDF poses of every link at random q (against Pinocchio's forward kinematics)
    pm = pin.buildModelFromXML(BRANCHED)
    data = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(-2, 2, 5)
        qp = np.zeros(5)
        qp[[pm.idx_qs[pm.getJointId(n)] for n in m.joint_names]] = q
        pin.forwardKinematics(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        for link in ("l2", "l3", "l4"):
            ref = data.oMf[pm.getFrameId(link)].homogeneous
            assert np.abs(m.forward_kinematics(q, link) - ref).max() < 1e-14
    # the tree row transform is Rot(z, gamma) Trans(z, b) (serial row)
    t = mdh_transform(r3.alpha, r3.d, 0.3, r3.r, r3.gamma, r3.b)
    rz = np.array([[math.cos(r3.gamma), -math.sin(r3.gamma), 0, 0], [math.sin(r3.gamma), math.cos(r3.gamma), 0, 0],
                   [0, 0, 1, r3.b], [0, 0, 0, 1]])
    assert np.abs(t - rz @ mdh_transform(r3.alpha, r3.d, 0.3, r3.r)).max() < 1e-15
    table = m.table()
    assert "gamma" in table.splitlines()[0] and len(table.splitlines()) == 2 + 5


def test_branched_dynamics_equal_pinocchio() -> None:
    err = _compare(RobotModel.from_urdf(BRANCHED), _pin_model(BRANCHED), states=50)
    assert max(err.values()) < ATOL, err


@pytest.mark.parametrize("seed", range(12))
def test_random_trees_equal_pinocchio(seed: int) -> None:
    text = random_tree_urdf(12, seed)
    m = RobotModel.from_urdf(text)
    assert m.dof == 12 and all(0 <= a < j for j, a in enumerate(m.antecedent, start=1))
    err = _compare(m, _pin_model(text), states=20, seed=seed)
    assert max(err.values()) < ATOL, err


@pytest.mark.parametrize("seed", range(6))
def test_random_chains_with_locked_branches_equal_reduced_pinocchio(seed: int) -> None:
    text = random_tree_urdf(10, 100 + seed)
    whole = RobotModel.from_urdf(text)
    tip = whole.joints[-1].link  # the chain to the last moving joint; everything else locked
    rng = np.random.default_rng(seed)
    chain_names = RobotModel.from_urdf(text, tip_link=tip, locked_positions=None).joint_names
    off = [n for n in whole.joint_names if n not in chain_names]
    given = {n: float(rng.uniform(-1, 1)) for n in off[::2]}  # half given, half default (0)
    m = RobotModel.from_urdf(text, tip_link=tip, locked_positions=given)
    assert set(m.locked_joints) == set(off) and all(m.locked_joints[k] == v for k, v in given.items())
    assert all(m.locked_joints[k] == 0.0 for k in off if k not in given)
    assert not m.is_tree or all(a == j - 1 for j, a in enumerate(m.antecedent, start=1))  # a chain
    err = _compare(m, _pin_model(text, m.locked_joints), states=20, seed=seed)
    assert max(err.values()) < ATOL, err


def test_forty_joint_tree_conversion_time() -> None:
    """Issue 14: a 40-joint tree converts in < 200 ms (reported, not asserted: the machine is shared)."""
    text = random_tree_urdf(40, 7)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        m = RobotModel.from_urdf(text)
        times.append(time.perf_counter() - t0)
    assert m.dof == 40
    print(f"40-joint tree conversion: min {min(times) * 1e3:.1f} ms, median {sorted(times)[2] * 1e3:.1f} ms")


# --------------------------------------------------------------------------- malformed trees
MALFORMED = [
    (dict(tip_link="l2", locked_positions={"nope": 0.1}), "locked_positions: 'nope' is not a moving joint"),
    (dict(tip_link="l2", locked_positions={"j1": 0.1}), "joint 'j1' is on the chain 'base' -> 'l2'; it cannot be locked"),
    (dict(tip_link="l2", locked_positions={"j3": 3.0}), r"locked_positions\['j3'\] = 3 is outside the joint limits \[-2.5, 2.5\]"),
    (dict(tip_link="l2", locked_positions={"j3": math.nan}), r"locked_positions\['j3'\] is not finite"),
    (dict(locked_positions=[("j3", 0.1)]), "locked_positions must be a mapping"),
    (dict(tip_link="nowhere"), "unknown tip link 'nowhere'"),
]


@pytest.mark.parametrize(("kw", "message"), MALFORMED, ids=[m[1][:30] for m in MALFORMED])
def test_malformed_locking_gives_one_clear_error(kw, message) -> None:
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf(BRANCHED, **kw)


def test_locked_fixed_joint_and_floating_joint() -> None:
    text = BRANCHED.replace("</robot>", "<link name='cam'/>" + _joint("jf", "l3", "cam", "fixed", (0, 0, 0), (0, 0, 0), (1, 0, 0))
                            + "<link name='free'/><joint name='fl' type='floating'><parent link='l4'/><child link='free'/>"
                            "</joint></robot>")
    with pytest.raises(ValueError, match="joint 'jf' is fixed, only moving joints can be locked"):
        RobotModel.from_urdf(text, tip_link="l2", locked_positions={"jf": 0.0})
    with pytest.raises(ValueError, match="joint 'fl' is floating: only revolute, continuous, prismatic and fixed"):
        RobotModel.from_urdf(text)
    m = RobotModel.from_urdf(text, tip_link="l2")  # off the chain, a floating joint is held at identity
    assert m.locked_joints == {"j3": 0.0, "j4": 0.0, "fl": 0.0}


def test_inconsistent_inertia_on_a_locked_branch_is_checked() -> None:
    """A locked branch's mass is lumped onto the chain, so its inertia is used and checked; a body fixed to the
    base never moves and is not."""
    bad = "<inertial><mass value='1'/><inertia ixx='0.1' iyy='0.1' izz='0.3' ixy='0' ixz='0' iyz='0'/></inertial>"
    text = BRANCHED.replace("<link name='l3'>", f"<link name='l3'>{bad}<!--", 1).replace(
        "</inertial></link><link name='l4'>", "--></link><link name='l4'>", 1)
    assert "<link name='l3'><inertial><mass value='1'/>" in text
    with pytest.raises(ValueError, match="link 'l3' inertial is physically inconsistent: triangle inequality"):
        RobotModel.from_urdf(text, tip_link="l2")
    on_base = BRANCHED.replace("<link name='base'/>", f"<link name='base'>{bad}</link>")
    assert RobotModel.from_urdf(on_base).dof == 5


def test_cli_dh_prints_the_tree_and_locks(tmp_path) -> None:
    path = tmp_path / "branched.urdf"
    path.write_text(BRANCHED)
    run = [sys.executable, "-m", "robot_dynamics", "dh", str(path)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "robot 'branched': whole tree under base 'base', 5 joints"
    assert lines[1].split()[:9] == ["j", "a(j)", "sigma", "gamma", "b", "alpha", "d", "theta", "r"]
    row = lines[6].split()  # j3: j=4, a(j)=1, revolute, gamma = +-pi/2, b = 0.2
    assert row[:3] == ["4", "1", "0"] and abs(abs(float(row[3])) - 1.5708) < 1e-4 and float(row[4]) == 0.2
    out = subprocess.run([*run, "--tip", "l2", "--lock", "j3=0.5"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "robot 'branched': base 'base' -> tip 'l2', 3 joints, 2 locked"
    assert out.stdout.splitlines()[-1] == "locked (off the chain, lumped like fixed joints): j3=0.5, j4=0"
    out = subprocess.run([*run, "--tip", "l2", "--lock", "j3=x"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "JOINT=VALUE" in out.stderr and "Traceback" not in out.stderr
