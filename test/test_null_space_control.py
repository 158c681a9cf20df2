"""Task-space control of redundant arms: null-space term of task-space computed torque (001 §9.4.3 note,
002 eqs 6.31–6.39) and task-space PID (001 eq. 9.17).

Oracles: Pinocchio on the Panda URDF (fingers locked, lumped on the hand: pose, Jacobian, J̇q̇ as the
classical frame acceleration, RNEA, CRBA, gravity), numpy.linalg.pinv, pin.log3; MuJoCo plants.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from example_robots import example_urdf
from pinocchio_oracle import reduced

from robot_dynamics import RobotModel
from robot_dynamics.control import (
    TASK_SPACE_CONTROLLERS,
    TaskSpaceComputedTorque,
    TaskSpacePID,
    make_controller,
)
from robot_dynamics.model.robots import load_model
from robot_dynamics.sim.closed_loop import run_closed_loop
from robot_dynamics.sim.simulator import MujocoArm
from robot_dynamics.trajectory import point_to_point

TIP = "panda_hand_tcp"
LOCKED = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
PANDA = RobotModel.from_urdf(str(example_urdf("panda")), tip_link=TIP, locked_positions=LOCKED)
Q_HOLD = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])  # the Panda's "ready" posture
KICK = 0.2  # rad/s, norm of the null-space joint velocity added at t0
OMEGA = 20.0
RX90 = load_model("rx90")
Q_RX90 = np.array([0.0, -0.3, 0.4, 0.2, 0.5, 0.0])  # away from the wrist singularity q5 = 0


class PinPanda:
    """Independent kinematics and dynamics of the Panda URDF (fingers locked at LOCKED)."""

    def __init__(self) -> None:
        self.model = reduced(pin.buildModelFromUrdf(str(example_urdf("panda"))), LOCKED)
        self.data = self.model.createData()
        self.idx = [self.model.idx_vs[self.model.getJointId(n)] for n in PANDA.joint_names]
        assert self.idx == list(range(7)) and self.model.nq == 7
        self.frame = self.model.getFrameId(TIP, pin.BODY)
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()

    def kinematics(self, q: np.ndarray, qd: np.ndarray | None = None) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        """(tip pose in panda_link0 = world, J [v; ω] world-aligned, J̇ q̇ = classical acceleration at q̈ = 0)."""
        qd = np.zeros(7) if qd is None else qd
        m, d = self.model, self.data
        pin.forwardKinematics(m, d, q, qd, np.zeros(7))
        pin.updateFramePlacements(m, d)
        pin.computeJointJacobians(m, d, q)
        jac = pin.getFrameJacobian(m, d, self.frame, pin.LOCAL_WORLD_ALIGNED).copy()
        acc = pin.getFrameClassicalAcceleration(m, d, self.frame, pin.LOCAL_WORLD_ALIGNED).vector.copy()
        return d.oMf[self.frame].copy(), jac, acc

    def rnea(self, q, qd, qdd) -> np.ndarray:
        return pin.rnea(self.model, self.data, q, qd, qdd).copy() + PANDA.Fv * qd + PANDA.Ia * qdd

    def inertia(self, q) -> np.ndarray:
        a = pin.crba(self.model, self.data, q).copy()
        return np.triu(a) + np.triu(a, 1).T + np.diag(PANDA.Ia)

    def gravity(self, q) -> np.ndarray:
        return pin.computeGeneralizedGravity(self.model, self.data, q).copy()


PIN = PinPanda()


def _error(xd: pin.SE3, x: pin.SE3) -> np.ndarray:
    return np.concatenate([xd.translation - x.translation, pin.log3(xd.rotation @ x.rotation.T)])


def _null_projector(jac: np.ndarray) -> np.ndarray:
    return np.eye(jac.shape[1]) - np.linalg.pinv(jac) @ jac


def _random_states(rng: np.random.Generator, count: int):
    lo, hi = PIN.lower, PIN.upper
    mid, half = 0.5 * (lo + hi), 0.4 * (hi - lo)
    for _ in range(count):
        q = rng.uniform(mid - half, mid + half)
        yield (q, rng.normal(0, 0.5, 7), q + rng.normal(0, 0.05, 7), rng.normal(0, 0.3, 7), rng.normal(0, 1.0, 7))


# ------------------------------------------------------------------ the laws against the oracle
KP, KD, KI = np.array([400.0] * 3 + [300.0] * 3), np.array([40.0] * 3 + [35.0] * 3), np.array([900.0] * 3 + [50.0] * 3)
KPN, KDN = np.linspace(20.0, 30.0, 7), np.linspace(9.0, 11.0, 7)


@pytest.mark.parametrize(("null_space", "metric", "p"), [("posture", "identity", 2.0), ("posture", "inertia", 2.0),
                                                          ("joint_limits", "identity", 6.0), (None, "identity", 2.0)])
def test_task_space_computed_torque_equals_the_pinocchio_oracle(null_space, metric, p) -> None:
    """Γ = NE(q, q̇, q̈), q̈ = J^#(w − J̇q̇) + (I − J^#J) q̈_0 with w of [9.35] (J^# = J⁺ or A^{-1}J^T(JA^{-1}J^T)^{-1},
    002 eqs 6.29–6.31), q̈_0 the posture law on the joint reference or the damped joint-limit gradient (6.34–6.39)."""
    ctrl = TaskSpaceComputedTorque(PANDA, KP, KD, null_space=null_space, null_space_kp=KPN, null_space_kd=KDN,
                                   null_space_metric=metric, joint_limit_exponent=p, effort_limit=np.inf)
    worst = 0.0
    for q, qd, qr, qdr, qddr in _random_states(np.random.default_rng(11), 20):
        xd, jd, jdqd_d = PIN.kinematics(qr, qdr)
        x, jac, jdqd = PIN.kinematics(q, qd)
        w = jd @ qddr + jdqd_d + KD * (jd @ qdr - jac @ qd) + KP * _error(xd, x)
        if metric == "identity":
            jp = np.linalg.pinv(jac)
        else:
            aij = np.linalg.solve(PIN.inertia(q), jac.T)
            jp = aij @ np.linalg.inv(jac @ aij)
        if null_space == "posture":
            qdd0 = qddr + KDN * (qdr - qd) + KPN * (qr - q)
        else:
            h = 0.5 * (PIN.upper - PIN.lower)
            u = (q - 0.5 * (PIN.upper + PIN.lower)) / h
            qdd0 = -KPN * h * np.sign(u) * np.abs(u) ** (p - 1) - KDN * qd
        qdd = jp @ (w - jdqd) + (0.0 if null_space is None else (np.eye(7) - jp @ jac) @ qdd0)
        expect = PIN.rnea(q, qd, qdd)
        got = ctrl.compute(0.0, q, qd, qr, qdr, qddr)
        worst = max(worst, float(np.abs(got - expect).max() / max(1.0, np.abs(expect).max())))
    print(f"\n{null_space}/{metric}: max relative deviation from the oracle {worst:.1e}")
    assert worst < 1e-6


@pytest.mark.parametrize("metric", ["inertia", "identity"])
def test_task_space_pid_equals_the_pinocchio_oracle(metric: str) -> None:
    """[9.17] + Q(q) + (I − J^T J^{#T}) A q̈_0 (posture law on the joint reference; J^# = A^{-1}J^T(JA^{-1}J^T)^{-1}
    or J⁺), integral by the rectangle rule."""
    ctrl = TaskSpacePID(PANDA, KP, KD, KI, gravity=True, null_space="posture", null_space_kp=KPN,
                        null_space_kd=KDN, null_space_metric=metric, effort_limit=np.inf)
    worst = 0.0
    for q, qd, qr, qdr, qddr in _random_states(np.random.default_rng(12), 20):
        ctrl.reset()
        ctrl.compute(1.0, q, qd, qr, qdr, qddr)
        got = ctrl.compute(1.01, q, qd, qr, qdr, qddr)  # integral = e * 0.01
        xd, jd, _ = PIN.kinematics(qr)
        x, jac, _ = PIN.kinematics(q)
        e = _error(xd, x)
        wrench = KP * e + KD * (jd @ qdr - jac @ qd) + KI * e * 0.01
        a = PIN.inertia(q)
        if metric == "identity":
            jp = np.linalg.pinv(jac)
        else:
            aij = np.linalg.solve(a, jac.T)
            jp = aij @ np.linalg.inv(jac @ aij)
        gamma0 = a @ (qddr + KDN * (qdr - qd) + KPN * (qr - q))
        expect = jac.T @ wrench + PIN.gravity(q) + (np.eye(7) - jac.T @ jp.T) @ gamma0
        worst = max(worst, float(np.abs(got - expect).max() / max(1.0, np.abs(expect).max())))
    print(f"\ntask-space PID, {metric}: max relative deviation from the oracle {worst:.1e}")
    assert worst < 1e-6


# ------------------------------------------------------------------ the users' case: a null-space kick
def _null_space_kick(q: np.ndarray, seed: int = 3) -> np.ndarray:
    """A joint velocity of norm KICK in the null space of J(q): a random unit vector projected by I − J⁺J."""
    _, jac, _ = PIN.kinematics(q)
    v = _null_projector(jac) @ np.random.default_rng(seed).standard_normal(7)
    v *= KICK / np.linalg.norm(v)
    assert np.linalg.norm(jac @ v) < 1e-12 and np.isclose(np.linalg.norm(_null_projector(jac) @ v), KICK)
    return v


def _hold_after_kick(ctrl, duration: float, q0: np.ndarray = Q_HOLD) -> dict[str, np.ndarray]:
    """Hold the tip pose of ``q0`` (constant joint reference q0) from q0 with a null-space kick at t0 = 0 (the
    plant starts at rest at the held pose, so a hold phase before the kick would add nothing)."""
    hold = point_to_point(q0, q0, 1.0, 1.0)
    res = run_closed_loop(PANDA, MujocoArm(PANDA), ctrl, hold, settle_time=duration, q0=q0, qd0=_null_space_kick(q0))
    assert res.metrics["stable"]
    x0, _, _ = PIN.kinematics(q0)
    k = np.arange(0, len(res.t), 10)  # every 10 ms
    tip, nsv = np.empty(len(k)), np.empty(len(k))
    for i, j in enumerate(k):
        x, jac, _ = PIN.kinematics(res.q[j])
        tip[i] = np.linalg.norm(_error(x0, x))
        nsv[i] = np.linalg.norm(_null_projector(jac) @ res.qd[j])
    return {"t": res.t[k], "drift": np.linalg.norm(res.q[k] - q0, axis=1), "nsv": nsv, "tip": tip, "q": res.q[k]}


def _report(label: str, r: dict[str, np.ndarray]) -> None:
    late = r["t"] >= 1.0
    print(f"\n{label}: joint drift max {r['drift'].max():.4f} rad, at {r['t'][-1]:.1f} s {r['drift'][-1]:.4f} rad; "
          f"null-space velocity at {r['t'][-1]:.1f} s {r['nsv'][-1]:.2e} rad/s, max over t >= 1 s "
          f"{r['nsv'][late].max():.2e} rad/s; tip error max {r['tip'].max():.2e}")


@pytest.mark.parametrize("law", TASK_SPACE_CONTROLLERS)
def test_null_space_term_stops_the_drift_after_a_kick(law: str) -> None:
    """Users' case on the 7-joint Panda: without the null-space term the joints keep drifting (J⁺ has no homogeneous
    term, 001 §9.4.3 note); with the damped posture law the drift stays < 0.02 rad and the null-space velocity is
    < 1e-3 rad/s from 1 s after the kick, the tip error unchanged."""
    # PID: gains [9.10] on the task inertia at the held posture (the median one vibrates there, see task_pid)
    extra = {"gravity": True, "q": Q_HOLD} if law == "task_space_pid" else {}
    duration = 3.0 if law == "task_space_computed_torque" else 2.0
    free = _hold_after_kick(make_controller(law, PANDA, OMEGA, null_space=None, **extra), duration)
    held = _hold_after_kick(make_controller(law, PANDA, OMEGA, **extra), duration)
    _report(f"{law} without null-space term", free)
    _report(f"{law} with posture null-space term", held)
    assert free["drift"][-1] > 0.15 * duration and free["nsv"][-1] > 0.1  # the users' drift, reproduced
    assert held["drift"].max() < 0.02
    assert held["nsv"][held["t"] >= 1.0].max() < 1e-3
    assert held["tip"].max() <= max(2.0 * free["tip"].max(), 1e-5)


@pytest.mark.parametrize("options", [{"null_space": "joint_limits"}, {"null_space_metric": "inertia"}],
                         ids=["joint_limits", "inertia_weighted"])
def test_null_space_variants_damp_the_kick(options) -> None:
    """Joint-limit gradient (002 eq. 6.36, p = 2): the self-motion goes to the best mid-range posture that keeps the
    tip and stops; inertia-weighted
    inverse (002 eq. 6.30, E = A): same as the posture law with J⁺."""
    r = _hold_after_kick(make_controller("task_space_computed_torque", PANDA, OMEGA, **options), 1.5)
    _report(f"task space computed torque {options}", r)
    assert r["nsv"][r["t"] >= 1.0].max() < 1e-3
    # the joint-limit law moves the arm 0.26 rad through the null space at up to ~2 rad/s: the sampled tip error
    # is larger during that self-motion than while holding (posture)
    assert r["tip"].max() < (5e-5 if options.get("null_space") == "joint_limits" else 1e-5)
    if options.get("null_space") == "joint_limits":
        # the self-motion descends φ on the manifold of the held tip pose: φ decreases and its gradient ends
        # orthogonal to the null space (D ∇φ = q − q_moy for p = 2)
        mid, half = 0.5 * (PIN.upper + PIN.lower), 0.5 * (PIN.upper - PIN.lower)
        phi = [float(np.sum(((q - mid) / half) ** 2)) for q in (Q_HOLD, r["q"][-1])]
        grad = [np.linalg.norm(_null_projector(PIN.kinematics(q)[1]) @ (q - mid)) for q in (Q_HOLD, r["q"][-1])]
        print(f"joint-limit criterion (normalized 6.36) {phi[0]:.4f} -> {phi[1]:.4f}, "
              f"null-space part of its gradient {grad[0]:.2e} -> {grad[1]:.2e}")
        assert phi[1] < phi[0] and grad[1] < 1e-4 * grad[0]
    else:
        assert r["drift"].max() < 0.02


# ------------------------------------------------------------------ square Jacobian: no null space
def test_square_jacobian_null_space_option_changes_nothing() -> None:
    """RX-90 (6 joints): N = 0, every null-space option gives bit-identical efforts, also at the wrist singularity."""
    rng = np.random.default_rng(5)
    states = [(rng.uniform(-2, 2, 6), rng.normal(0, 1, 6), rng.uniform(-2, 2, 6), rng.normal(0, 1, 6),
               rng.normal(0, 2, 6)) for _ in range(30)]
    states[0][0][4] = states[0][2][4] = 0.0  # q5 = 0: damped least squares
    for cls in (TaskSpaceComputedTorque, TaskSpacePID):
        laws = [cls.tuned(RX90, OMEGA, null_space=ns, posture=np.zeros(6)) for ns in (None, "posture", "joint_limits")]
        assert not any(law.null_space_active for law in laws)
        for k, (q, qd, qr, qdr, qddr) in enumerate(states):
            out = [law.compute(0.001 * k, q, qd, qr, qdr, qddr) for law in laws]
            task = [law.compute_task(0.001 * k, q, qd, RX90.forward_kinematics(qr), np.ones(6)) for law in laws]
            assert all(np.array_equal(out[0], o) for o in out[1:])
            assert all(np.array_equal(task[0], o) for o in task[1:])


# ------------------------------------------------------------------ task-space PID: integral action
def _hold_rx90(ctrl, duration: float) -> tuple[float, float]:
    """Hold DGM(Q_RX90) with an unknown 2 kg payload on the plant; (position, orientation) error at the end."""
    hold = point_to_point(Q_RX90, Q_RX90, 1.0, 1.0)
    plant = MujocoArm(RX90, payload=(2.0, [0.0, 0.0, 0.05]))
    res = run_closed_loop(RX90, plant, ctrl, hold, settle_time=duration, q0=Q_RX90)
    assert res.metrics["stable"]
    x0 = RX90.forward_kinematics(Q_RX90)
    body = plant.mj_data.xmat[-1].reshape(3, 3), plant.mj_data.xpos[-1]  # MuJoCo's own tip pose
    tip = RX90.frames[RX90.tip_link][1]
    p, rot = body[0] @ tip[:3, 3] + body[1], body[0] @ tip[:3, :3]
    return float(np.linalg.norm(x0[:3, 3] - p)), float(np.linalg.norm(pin.log3(x0[:3, :3] @ rot.T)))


def test_task_space_pid_integral_removes_a_payload() -> None:
    """[9.17] (+ Q(q) of the nominal model) holds a pose on the RX-90 carrying an unknown payload: the integral
    term removes the static error that PD leaves; [9.17] alone (integral takes up gravity and payload) holds too
    (bounded hunting from the plant's Coulomb friction)."""
    pid = make_controller("task_space_pid", RX90, OMEGA, gravity=True)
    pd = TaskSpacePID(RX90, pid.kp, pid.kd, 0.0, gravity=True)
    bare = make_controller("task_space_pid", RX90, OMEGA)
    e_pid, e_pd, e_bare = _hold_rx90(pid, 4.0), _hold_rx90(pd, 2.0), _hold_rx90(bare, 2.0)
    print(f"\nRX-90, 2 kg payload, tip error (m, rad): PID + Q {e_pid[0]:.1e}, {e_pid[1]:.1e} after 4 s; "
          f"after 2 s: "
          f"PD + Q {e_pd[0]:.1e}, {e_pd[1]:.1e}; [9.17] alone {e_bare[0]:.1e}, {e_bare[1]:.1e}")
    assert e_pid[0] < 1e-5 and e_pid[1] < 1e-4
    assert e_pd[0] > 1e-4 and e_pd[0] > 100 * e_pid[0]
    assert e_bare[0] < 5e-4 and e_bare[1] < 1e-3


# ------------------------------------------------------------------ names and bad input
def test_laws_by_name_and_bad_options() -> None:
    assert type(make_controller("task_space_computed_torque", RX90)) is TaskSpaceComputedTorque
    assert type(make_controller("task_space", RX90)) is TaskSpaceComputedTorque
    pid = make_controller("task_space_pid", RX90)
    assert type(pid) is TaskSpacePID and pid.name == "task_space_pid"
    assert make_controller("task_space", PANDA).null_space_active  # default: posture law on a redundant arm
    with pytest.raises(ValueError, match="task_space_pid"):
        make_controller("task_space_lqr", RX90)
    for bad in ({"null_space": "elbow"}, {"null_space_metric": "kinetic"}, {"joint_limit_exponent": 1.0},
                {"null_space_kp": -1.0}, {"posture": np.zeros(6)}):
        with pytest.raises(ValueError):
            TaskSpaceComputedTorque(PANDA, 1.0, 1.0, **bad)
    with pytest.raises(ValueError, match="null_space_kp"):
        TaskSpacePID(PANDA, 1.0, 1.0, 1.0, null_space="posture")
    with pytest.raises(ValueError):
        TaskSpacePID(RX90, 1.0, 1.0, 1.0, integral_limit=0.0)
