"""MuJoCo plant built from a RobotModel, checked against independent oracles.

Oracles: hand-derived dynamics of a planar 2R arm and of a slide joint, MuJoCo's own
URDF importer on a hand-written URDF, and (when available) the Newton–Euler model
of the package compared with ``mj_inverse``.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics import MDHJoint, RobotModel
from robot_dynamics.model.mdh import mdh_transform
from robot_dynamics.sim.simulator import (
    MIN_MASS,
    MujocoArm,
    central_inertia,
    model_to_mjcf,
    perturbed,
    physically_consistent,
    with_payload,
)

G = 9.81


def standard_from_central(m: float, c, ic) -> list[float]:
    """Hand form of the parallel-axis theorem, J_O = I_c + m(|c|^2 1 - c c^T)."""
    c = np.asarray(c, float)
    jo = np.asarray(ic, float) + m * (c @ c * np.eye(3) - np.outer(c, c))
    return [jo[0, 0], jo[0, 1], jo[0, 2], jo[1, 1], jo[1, 2], jo[2, 2], *(m * c), m]


# ------------------------------------------------------------- planar 2R arm
L1, LC1, LC2, M1, M2, I1, I2 = 0.7, 0.3, 0.25, 3.0, 2.0, 0.05, 0.03


def planar_2r(fv=(0.0, 0.0), ia=(0.0, 0.0), effort=math.inf) -> RobotModel:
    joints = [
        MDHJoint("j1", 0, 0, 0.0, 0.0, 0.0, 0.0, link="l1", effort=effort),
        MDHJoint("j2", 1, 0, 0.0, L1, 0.0, 0.0, link="l2", effort=effort),
    ]
    inertial = [
        standard_from_central(M1, [LC1, 0, 0], np.diag([0.01, I1, I1])),
        standard_from_central(M2, [LC2, 0, 0], np.diag([0.01, I2, I2])),
    ]
    return RobotModel(
        joints,
        tip_link="l2",
        frames={"base_link": (0, np.eye(4)), "l1": (1, np.eye(4)), "l2": (2, np.eye(4))},
        inertial=inertial,
        Fv=fv,
        Ia=ia,
        gravity=[0.0, -G, 0.0],
    )


def planar_2r_dynamics(q, qd, qdd, payload=0.0, l2=0.5):
    """Textbook 2R dynamics (gravity along -y, joint axes along z)."""
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    a11 = I1 + I2 + M1 * LC1**2 + M2 * (L1**2 + LC2**2 + 2 * L1 * LC2 * c2)
    a12 = I2 + M2 * (LC2**2 + L1 * LC2 * c2)
    a22 = I2 + M2 * LC2**2
    h = -M2 * L1 * LC2 * s2
    tau = np.array(
        [
            a11 * qdd[0] + a12 * qdd[1] + h * (2 * qd[0] * qd[1] + qd[1] ** 2),
            a12 * qdd[0] + a22 * qdd[1] - h * qd[0] ** 2,
        ]
    )
    c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
    tau += [(M1 * LC1 + M2 * L1) * G * c1 + M2 * LC2 * G * c12, M2 * LC2 * G * c12]
    if payload:
        # point mass at distance l2 along x2: an extra 2R arm with lc2 = l2 and no own inertia
        s12 = math.sin(q[0] + q[1])
        x = np.array([L1 * math.cos(q[0]) + l2 * c12, L1 * math.sin(q[0]) + l2 * s12])
        jac = np.array([[-L1 * math.sin(q[0]) - l2 * s12, -l2 * s12], [L1 * c1 + l2 * c12, l2 * c12]])
        jd = np.array(
            [
                [-L1 * c1 * qd[0] - l2 * c12 * (qd[0] + qd[1]), -l2 * c12 * (qd[0] + qd[1])],
                [-L1 * math.sin(q[0]) * qd[0] - l2 * s12 * (qd[0] + qd[1]), -l2 * s12 * (qd[0] + qd[1])],
            ]
        )
        acc = jac @ qdd + jd @ qd
        tau += jac.T @ (payload * (acc + [0.0, G]))
        assert x.shape == (2,)
    return tau


def test_planar_2r_matches_hand_derived_dynamics():
    arm = MujocoArm(planar_2r())
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, 2))
        np.testing.assert_allclose(arm.inverse_dynamics(q, qd, qdd), planar_2r_dynamics(q, qd, qdd), atol=1e-10)
        a = planar_2r_dynamics(q, np.zeros(2), np.eye(2)[0]) - planar_2r_dynamics(q, np.zeros(2), np.zeros(2))
        np.testing.assert_allclose(arm.mass_matrix(q)[:, 0], a, atol=1e-10)


def test_damping_and_armature_map_to_fv_and_ia():
    fv, ia = np.array([0.7, 0.2]), np.array([0.4, 0.1])
    arm = MujocoArm(planar_2r(fv=fv, ia=ia))
    q, qd, qdd = np.array([0.3, -0.5]), np.array([1.2, -0.4]), np.array([0.5, 2.0])
    expected = planar_2r_dynamics(q, qd, qdd) + fv * qd + ia * qdd  # 001 eq. 7.61 friction + rotor terms
    np.testing.assert_allclose(arm.inverse_dynamics(q, qd, qdd), expected, atol=1e-10)


def test_payload_is_a_point_mass_at_the_tip():
    model = planar_2r()
    model = model.replace(frames={**model.frames, "tool": (2, np.eye(4))})
    loaded = with_payload(model, 1.5, [0.5, 0.0, 0.0], link="tool")
    arm = MujocoArm(loaded)
    arm2 = MujocoArm(model, payload=(1.5, [0.5, 0.0, 0.0]))
    rng = np.random.default_rng(1)
    for _ in range(4):
        q, qd, qdd = rng.uniform(-2, 2, (3, 2))
        expected = planar_2r_dynamics(q, qd, qdd, payload=1.5, l2=0.5)
        np.testing.assert_allclose(arm.inverse_dynamics(q, qd, qdd), expected, atol=1e-9)
        np.testing.assert_allclose(arm2.inverse_dynamics(q, qd, qdd), expected, atol=1e-9)


# -------------------------------------------------------- slide joint, stepping
def slider(effort: float = math.inf, sign: float = 1.0, mass: float = 2.0) -> RobotModel:
    """One prismatic joint along base z (sign -1: URDF axis along -z)."""
    j = MDHJoint("s", 0, 1, 0.0, 0.0, 0.0, 0.0, sign=sign, link="cart", effort=effort)
    return RobotModel([j], tip_link="cart", frames={"cart": (1, np.eye(4))},
                      inertial=[standard_from_central(mass, [0, 0, 0], np.eye(3) * 0.01)])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_step_integrates_constant_force_exactly(sign):
    """q(t) = (F/m - sign g) t^2 / 2 for a slide joint along sign*z (RK4 is exact for it)."""
    arm = MujocoArm(slider(sign=sign), timestep=0.001)
    arm.reset([0.0], [0.0])
    arm.step([30.0], n_steps=500)
    t, q, qd, eff = arm.state()
    acc = 30.0 / 2.0 - sign * G
    assert t == pytest.approx(0.5)
    assert q[0] == pytest.approx(0.5 * acc * 0.25, rel=1e-9)
    assert qd[0] == pytest.approx(acc * 0.5, rel=1e-9)
    assert eff[0] == pytest.approx(30.0)


def test_effort_limit_saturates_the_input():
    arm = MujocoArm(slider(effort=5.0))
    arm.reset([0.0])
    arm.step([100.0], n_steps=100)
    _t, _q, qd, eff = arm.state()
    assert eff[0] == pytest.approx(5.0)
    assert qd[0] == pytest.approx((5.0 / 2.0 - G) * 0.1, rel=1e-9)
    assert 'ctrlrange="-5.0 5.0"' in arm.mjcf


def test_divergence_raises():
    from robot_dynamics.sim.simulator import PlantDiverged

    arm = MujocoArm(slider())
    arm.reset([0.0])
    with pytest.raises(PlantDiverged):
        arm.step([1e14])


def test_sensor_noise_statistics():
    arm = MujocoArm(slider(), noise_q=1e-3, noise_qd=2e-2, rng=3)
    arm.reset([0.1])
    qs = np.array([arm.state().q[0] for _ in range(4000)])
    qds = np.array([arm.state().qd[0] for _ in range(4000)])
    assert np.std(qs) == pytest.approx(1e-3, rel=0.1)
    assert np.std(qds) == pytest.approx(2e-2, rel=0.1)
    assert np.mean(qs) == pytest.approx(0.1, abs=1e-4)
    assert arm.state(noisy=False).q[0] == 0.1


def test_bad_input_raises():
    arm = MujocoArm(planar_2r())
    with pytest.raises(ValueError):
        arm.reset([0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        arm.step([np.nan, 0.0])
    with pytest.raises(ValueError):
        arm.step([0.0, 0.0], n_steps=0)
    with pytest.raises(ValueError):
        MujocoArm(planar_2r(), integrator="leapfrog")
    with pytest.raises(ValueError):
        MujocoArm(planar_2r(), noise_q=-1.0)
    with pytest.raises(ValueError):
        perturbed(planar_2r(), 1.5)
    with pytest.raises(ValueError):
        with_payload(planar_2r(), -1.0)


# ---------------------------------------- hand-written spatial URDF vs MuJoCo's importer
def _rpy(rot: np.ndarray) -> tuple[float, float, float]:
    """URDF rpy of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-rot[2, 0], math.hypot(rot[0, 0], rot[1, 0]))
    return math.atan2(rot[2, 1], rot[2, 2]), pitch, math.atan2(rot[1, 0], rot[0, 0])


SPATIAL_ROWS = [  # name, sigma, alpha, d, theta, r, sign
    ("j1", 0, 0.0, 0.0, 0.2, 0.3, 1.0),
    ("j2", 0, -math.pi / 2, 0.1, -0.4, 0.0, -1.0),
    ("j3", 1, math.pi / 2, 0.05, 0.3, 0.2, 1.0),
    ("j4", 0, -math.pi / 2, 0.0, 0.0, 0.35, -1.0),
]
SPATIAL_LINKS = [  # mass, com, central inertia (symmetric, with products)
    (4.0, [0.05, -0.02, 0.1], [[0.05, 0.002, -0.003], [0.002, 0.04, 0.001], [-0.003, 0.001, 0.03]]),
    (3.0, [0.2, 0.01, -0.03], [[0.02, -0.001, 0.002], [-0.001, 0.06, 0.0], [0.002, 0.0, 0.05]]),
    (1.5, [0.0, 0.03, 0.15], [[0.01, 0.0, 0.001], [0.0, 0.012, -0.002], [0.001, -0.002, 0.004]]),
    (0.8, [0.01, 0.0, 0.05], [[0.002, 0.0001, 0.0], [0.0001, 0.0025, 0.0], [0.0, 0.0, 0.0012]]),
]
BASE = np.array([[0.0, -1.0, 0.0, 0.1], [1.0, 0.0, 0.0, 0.2], [0.0, 0.0, 1.0, 0.05], [0.0, 0.0, 0.0, 1.0]])


def spatial_urdf() -> str:
    """URDF whose link frames are the MDH frames R_j (origins from 002 eq. 3.2 at q = 0)."""
    parts = ['<robot name="spatial">', '<link name="base_link"/>']
    parent = "base_link"
    for k, ((name, sigma, alpha, d, theta, r, sign), (m, c, ic)) in enumerate(zip(SPATIAL_ROWS, SPATIAL_LINKS, strict=True)):
        t = mdh_transform(alpha, d, theta, r)
        if k == 0:
            t = BASE @ t
        rpy = [float(v) for v in _rpy(t[:3, :3])]
        xyz = [float(v) for v in t[:3, 3]]
        ic = np.asarray(ic)
        kind = "prismatic" if sigma else "revolute"
        parts.append(
            f'<link name="l{k + 1}"><inertial><origin xyz="{c[0]} {c[1]} {c[2]}" rpy="0 0 0"/><mass value="{m}"/>'
            f'<inertia ixx="{ic[0, 0]}" ixy="{ic[0, 1]}" ixz="{ic[0, 2]}" iyy="{ic[1, 1]}" iyz="{ic[1, 2]}" '
            f'izz="{ic[2, 2]}"/></inertial></link>'
        )
        parts.append(
            f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="l{k + 1}"/>'
            f'<origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" rpy="{rpy[0]!r} {rpy[1]!r} {rpy[2]!r}"/>'
            f'<axis xyz="0 0 {sign:+.0f}"/><limit lower="-100" upper="100" effort="50" velocity="5"/></joint>'
        )
        parent = f"l{k + 1}"
    parts.append("</robot>")
    return "\n".join(parts)


def spatial_model() -> RobotModel:
    """The same robot written by hand as an MDH table (q_urdf = 0 -> theta, r offsets)."""
    joints = [MDHJoint(n, k, s, a, d, th, r, sign=sg, link=f"l{k + 1}", effort=50.0)
              for k, (n, s, a, d, th, r, sg) in enumerate(SPATIAL_ROWS)]
    frames = {"base_link": (0, np.linalg.inv(BASE))} | {f"l{k}": (k, np.eye(4)) for k in range(1, 5)}
    frames["base_link"] = (0, np.eye(4))
    inertial = [standard_from_central(m, c, ic) for m, c, ic in SPATIAL_LINKS]
    return RobotModel(joints, tip_link="l4", base_transform=BASE, frames=frames, inertial=inertial)


def test_mjcf_matches_mujoco_urdf_import():
    ref_model = mujoco.MjModel.from_xml_string(spatial_urdf())
    ref = mujoco.MjData(ref_model)
    arm = MujocoArm(spatial_model())
    assert ref_model.nv == arm.dof == 4
    rng = np.random.default_rng(7)
    for _ in range(6):
        q, qd = rng.uniform(-1.5, 1.5, (2, 4))
        ref.qpos[:], ref.qvel[:] = q, qd
        mujoco.mj_forward(ref_model, ref)
        m_ref = np.zeros((4, 4))
        mujoco.mj_fullM(ref_model, ref, m_ref)
        np.testing.assert_allclose(arm.mass_matrix(q), m_ref, atol=1e-12)
        np.testing.assert_allclose(arm.bias_forces(q, qd), ref.qfrc_bias, atol=1e-11)
        # the tip body pose equals the model's forward kinematics (frame R_4)
        arm.reset(q, qd)
        pose = np.eye(4)
        pose[:3, :3] = arm.mj_data.xmat[-1].reshape(3, 3)
        pose[:3, 3] = arm.mj_data.xpos[-1]
        ref_pose = np.eye(4)
        ref_pose[:3, :3] = ref.xmat[-1].reshape(3, 3)
        ref_pose[:3, 3] = ref.xpos[-1]
        np.testing.assert_allclose(pose, ref_pose, atol=1e-12)


# ---------------------------------------------------------- model variants
def test_perturbed_scales_mass_and_first_moments_exactly():
    model = spatial_model()
    pert = perturbed(model, 0.2, rng=5)
    ratio = pert.inertial[:, 6:10] / np.where(model.inertial[:, 6:10] == 0, 1, model.inertial[:, 6:10])
    nz = model.inertial[:, 6:10] != 0
    np.testing.assert_allclose(np.abs(ratio[nz] - 1.0), 0.2, atol=1e-12)
    np.testing.assert_allclose(pert.Ia, model.Ia)
    # the plant can be built from it (MuJoCo validates positivity and the triangle inequality)
    MujocoArm(pert)
    assert not np.allclose(pert.inertial, model.inertial)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6), st.floats(0.0, 10.0))
def test_physically_consistent_returns_a_realizable_tensor(entries, mass):
    a = np.array(entries)
    ic = np.array([[a[0], a[1], a[2]], [a[1], a[3], a[4]], [a[2], a[4], a[5]]])
    lam, vec = physically_consistent(ic)
    assert np.all(lam > 0)
    assert np.all(lam <= lam.sum() - lam + 1e-15)
    np.testing.assert_allclose(vec.T @ vec, np.eye(3), atol=1e-12)
    assert np.linalg.det(vec) == pytest.approx(1.0)
    # a consistent tensor is untouched
    good = np.array([[2.0, 0.1, 0.0], [0.1, 1.5, 0.2], [0.0, 0.2, 1.0]])
    lam2, vec2 = physically_consistent(good)
    np.testing.assert_allclose(vec2 @ np.diag(lam2) @ vec2.T, good, atol=1e-12)
    _m, _c, icc = central_inertia(np.array(standard_from_central(mass + 1.0, [0.1, 0.2, 0.3], good)))
    np.testing.assert_allclose(icc, good, atol=1e-12)


def test_massless_link_gets_a_tiny_mass():
    model = planar_2r()
    inertial = model.inertial.copy()
    inertial[0] = 0.0
    model = model.replace(inertial=inertial)
    xml = model_to_mjcf(model)
    arm = MujocoArm(model)
    assert arm.mj_model.body_mass[2] == pytest.approx(MIN_MASS)
    assert f'mass="{MIN_MASS!r}"' in xml


# ------------------------------------------- bundled robots: mj_inverse oracle
BUNDLED = ["rx90", "stanford", "scara", "planar2r"]


def _bundled(name: str) -> RobotModel:
    from robot_dynamics.model.robots import resolve_urdf

    return RobotModel.from_urdf(str(resolve_urdf(name)))


@pytest.mark.parametrize("name", BUNDLED)
def test_mj_inverse_equals_newton_euler_on_bundled_robots(name):
    """MuJoCo's inverse dynamics (RK4, contacts off) equals model.inverse_dynamics (001 §7.4.3).

    Measured agreement: below 1e-11 N m on all bundled robots; the tolerance is 1e-9 relative.
    """
    model = _bundled(name)
    arm = MujocoArm(model)
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 16, model.dof))
    ours = model.inverse_dynamics(q, qd, qdd)
    for k in range(16):
        ref = arm.inverse_dynamics(q[k], qd[k], qdd[k])
        np.testing.assert_allclose(ours[k], ref, rtol=1e-9, atol=1e-9 * (1.0 + np.abs(ref).max()))


def test_mj_inverse_includes_rotor_inertia_and_friction():
    from robot_dynamics import seed_robots

    model = seed_robots.rx90()
    assert np.all(model.Ia > 0) and np.all(model.Fc > 0) and np.all(model.Fv > 0)
    arm = MujocoArm(model)
    rng = np.random.default_rng(12)
    for _ in range(8):
        q, qd, qdd = rng.uniform(-2, 2, (3, 6))
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), arm.inverse_dynamics(q, qd, qdd),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.inertia_matrix(q), arm.mass_matrix(q), atol=1e-10)


@pytest.mark.parametrize("name", ["stanford", "planar2r"])
def test_mjcf_matches_mujoco_import_of_bundled_urdf(name):
    """Our MJCF (from the MDH model) and MuJoCo's own URDF importer give the same M(q) and bias."""
    from robot_dynamics.model.robots import resolve_urdf

    text = resolve_urdf(name).read_text()
    ref_model = mujoco.MjModel.from_xml_string(text)
    ref = mujoco.MjData(ref_model)
    model = _bundled(name)
    arm = MujocoArm(model, friction=False)
    ref_model.opt.gravity[:] = model.gravity
    ref_model.dof_damping[:] = 0.0
    ref_model.dof_frictionloss[:] = 0.0
    ref_model.dof_armature[:] = 0.0
    rng = np.random.default_rng(13)
    for _ in range(5):
        q, qd = rng.uniform(-1, 1, (2, model.dof))
        ref.qpos[:], ref.qvel[:] = q, qd
        mujoco.mj_forward(ref_model, ref)
        m_ref = np.zeros((model.dof, model.dof))
        mujoco.mj_fullM(ref_model, ref, m_ref)
        np.testing.assert_allclose(arm.mass_matrix(q), m_ref, atol=1e-10)
        np.testing.assert_allclose(arm.bias_forces(q, qd), ref.qfrc_bias, atol=1e-9)


def test_frictionloss_mode_is_mujoco_dry_friction():
    """coulomb='frictionloss': a joint at rest stays put under |tau| < Fc (stiction), unlike the sign law."""
    model = slider()
    model = model.replace(gravity=np.zeros(3), Fc=np.full(model.dof, 5.0))
    arm = MujocoArm(model, coulomb="frictionloss")
    assert 'frictionloss="5.0"' in arm.mjcf
    arm.reset([0.0])
    arm.step([3.0], n_steps=200)
    assert abs(arm.state().q[0]) < 1e-3
    arm2 = MujocoArm(model)  # sign law: moves with (F - Fc)/m once moving, here sign(0) = 0 at start
    arm2.reset([0.0], [0.1])
    arm2.step([8.0], n_steps=100)
    assert arm2.state().qd[0] == pytest.approx(0.1 + (8.0 - 5.0) / 2.0 * 0.1, rel=1e-9)
