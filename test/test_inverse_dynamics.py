"""Newton–Euler inverse dynamics and regressor vs Pinocchio (independent oracle)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from hypothesis import given, settings
from hypothesis import strategies as st
from pinocchio_from_mdh import pinocchio_model, random_model, random_states
from pinocchio_oracle import reduced

from robot_dynamics.model.robot_model import RobotModel

RTOL = 1e-9


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def _friction(m: RobotModel, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Friction and rotor terms added to Pinocchio's RNEA by hand (001 eq. 7.61)."""
    return m.Fc * np.sign(qd) + m.Fv * qd + m.Ia * qdd


def _pin_rnea(pm: pin.Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, fext=None) -> np.ndarray:
    pd = pm.createData()
    if fext is None:
        return np.array([pin.rnea(pm, pd, a, b, c).copy() for a, b, c in zip(q, qd, qdd, strict=True)])
    return np.array([pin.rnea(pm, pd, a, b, c, f).copy() for a, b, c, f in zip(q, qd, qdd, fext, strict=True)])


@pytest.mark.parametrize("tree", [False, True])
def test_random_mdh_robots_match_pinocchio(tree: bool) -> None:
    """>= 500 random states over random MDH robots (prismatic joints, signs, base transform, friction)."""
    rng = np.random.default_rng(10 + tree)
    total = 0
    for k in range(12):
        m = random_model(rng, n=7 if k == 0 else None, tree=tree, friction=True)
        q, qd, qdd = random_states(rng, m.dof, 50)
        expect = _pin_rnea(pinocchio_model(m), q, qd, qdd) + _friction(m, qd, qdd)
        assert _rel(m.inverse_dynamics(q, qd, qdd), expect) < RTOL
        # single-state path
        assert _rel(m.inverse_dynamics(q[0], qd[0], qdd[0]), expect[0]) < RTOL
        total += len(q)
    assert total >= 500


def test_gravity_argument_is_in_base_link() -> None:
    rng = np.random.default_rng(3)
    m = random_model(rng, n=5)
    g = np.array([1.0, -2.0, -7.0])
    pm = pinocchio_model(m)
    pm.gravity = pin.Motion(np.r_[g, 0, 0, 0])
    q, qd, qdd = random_states(rng, m.dof, 20)
    assert _rel(m.inverse_dynamics(q, qd, qdd, gravity=g), _pin_rnea(pm, q, qd, qdd)) < RTOL


@pytest.mark.parametrize("frame", ["base", "local"])
def test_external_wrench_matches_pinocchio(frame: str) -> None:
    """f_ext is exerted BY the link on the environment: Pinocchio gets the opposite force on the body."""
    rng = np.random.default_rng(4)
    for _ in range(5):
        m = random_model(rng, tree=True)
        pm = pinocchio_model(m)
        pd = pm.createData()
        q, qd, qdd = random_states(rng, m.dof, 10)
        w_tip = rng.normal(size=(10, 6))
        w_1 = rng.normal(size=6)
        fext = []
        for a in q:
            pin.forwardKinematics(pm, pd, a)
            fs = [pin.Force.Zero() for _ in range(pm.njoints)]
            for link, w in (("tool", None), ("link1", w_1)):
                j, t = m.frames[link]
                w = w_tip[len(fext)] if w is None else w
                rot = pd.oMi[j].rotation.T if frame == "base" else t[:3, :3]  # ^jR_(frame of w)
                f = rot @ w[:3]
                mo = rot @ w[3:] + np.cross(t[:3, 3], f)
                fs[j] = fs[j] + pin.Force(-f, -mo)
            fext.append(fs)
        got = m.inverse_dynamics(q, qd, qdd, f_ext={"tool": w_tip, "link1": w_1}, f_ext_frame=frame)
        assert _rel(got, _pin_rnea(pm, q, qd, qdd, fext)) < RTOL
        # a bare (6,) array is the tip link wrench
        got1 = m.inverse_dynamics(q[0], qd[0], qdd[0], f_ext=w_tip[0], f_ext_frame=frame)
        got2 = m.inverse_dynamics(q[0], qd[0], qdd[0], f_ext={"tool": w_tip[0]}, f_ext_frame=frame)
        np.testing.assert_array_equal(got1, got2)


def test_regressor_times_standard_parameters_is_inverse_dynamics() -> None:
    """W @ values equals Pinocchio's RNEA + friction (001 eq. 9.3); batch stacks to the observation matrix."""
    rng = np.random.default_rng(5)
    for k in range(8):
        m = random_model(rng, tree=k % 2 == 1, friction=True)
        q, qd, qdd = random_states(rng, m.dof, 40)
        w = m.regressor(q, qd, qdd)
        n = m.dof
        assert w.shape == (40, n, 13 * n)
        sp = m.standard_parameters
        assert sp.names[:13] == ["XX1", "XY1", "XZ1", "YY1", "YZ1", "ZZ1", "MX1", "MY1", "MZ1", "M1", "Ia1", "Fc1", "Fv1"]
        assert len(sp.names) == len(sp.values) == 13 * n
        expect = _pin_rnea(pinocchio_model(m), q, qd, qdd) + _friction(m, qd, qdd)
        assert _rel(w @ sp.values, expect) < RTOL
        obs = w.reshape(-1, 13 * n)
        assert _rel(obs @ sp.values, expect.ravel()) < RTOL
        assert _rel(m.regressor(q[3], qd[3], qdd[3]) @ sp.values, expect[3]) < RTOL


def _pin_urdf_cases():
    cases = [(str(example_urdf("ur5")), None, {})]
    cases.append((str(example_urdf("panda")), "panda_link8", {"panda_finger_joint1": 0.031, "panda_finger_joint2": 0.007}))
    cases.append((str(example_urdf("panda")), None, {}))  # the whole tree: 7 arm joints and the 2 fingers
    cases += [(str(p), None, {}) for p in sorted((Path(__file__).parents[1] / "urdf").glob("*.urdf"))]
    return cases


def urdf_pair(path: str, tip: str | None, locked: dict[str, float]):
    """(RobotModel, Pinocchio model, index of our joints in Pinocchio's v) — joints mapped by name.

    Moving joints off the chain (Panda fingers) are locked at ``locked`` in our model and in Pinocchio
    (``buildReducedModel`` with the same positions): their bodies stay, lumped on the hand.
    """
    m = RobotModel.from_urdf(path, tip_link=tip, locked_positions=locked or None)
    assert m.locked_joints == locked
    pm = reduced(pin.buildModelFromUrdf(path), locked)
    idx = [pm.idx_vs[pm.getJointId(name)] for name in m.joint_names]
    return m, pm, idx


def _embed(pm: pin.Model, idx: list[int], x: np.ndarray) -> np.ndarray:
    y = np.zeros((len(x), pm.nv))
    y[:, idx] = x
    return y


@pytest.mark.parametrize("case", _pin_urdf_cases(), ids=lambda c: c[0].split("/")[-1] + ("" if c[1] is None else f"-{c[1]}"))
def test_urdf_robots_match_pinocchio(case) -> None:
    m, pm, idx = urdf_pair(*case)
    rng = np.random.default_rng(6)
    q, qd, qdd = random_states(rng, m.dof, 500)
    got = m.inverse_dynamics(q, qd, qdd) - _friction(m, qd, qdd)
    expect = _pin_rnea(pm, _embed(pm, idx, q), _embed(pm, idx, qd), _embed(pm, idx, qdd))[:, idx]
    assert _rel(got, expect) < RTOL


# ------------------------------------------------------------------ bad input
_MODEL = random_model(np.random.default_rng(0), n=4)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.sampled_from([(3,), (5,), (2, 3), (4, 4, 1), (0,), (4, 1), ()]),
    which=st.integers(0, 2),
)
def test_wrong_shapes_raise(shape, which) -> None:
    args = [np.zeros(4), np.zeros(4), np.zeros(4)]
    args[which] = np.zeros(shape)
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(*args)
    with pytest.raises(ValueError):
        _MODEL.regressor(*args)


@settings(max_examples=30, deadline=None)
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), which=st.integers(0, 2), pos=st.integers(0, 3))
def test_non_finite_raise(bad, which, pos) -> None:
    args = [np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4))]
    args[which][1, pos] = bad
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(*args)


def test_mismatched_batches_and_bad_wrenches_raise() -> None:
    z = np.zeros((3, 4))
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, np.zeros((2, 4)), z)  # no silent broadcast
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, np.zeros(4), z)
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, f_ext=np.zeros(5))
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, f_ext=np.zeros((2, 6)))
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, f_ext={"nope": np.zeros(6)})
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, f_ext=np.full(6, np.nan))
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, f_ext=np.zeros(6), f_ext_frame="world")
    with pytest.raises(ValueError):
        _MODEL.inverse_dynamics(z, z, z, gravity=[0.0, 9.81])
