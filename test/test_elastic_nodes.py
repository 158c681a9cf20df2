"""Issue 21: elastic joints on ROS.  ``mujoco_sim`` simulates a planar 2R whose joints are springs between motor and
link (001 §7.3.8, ``plant_joint_stiffness``: about 5 Hz per joint) and publishes the motors on ``~/motor_states``;
``computed_torque_controller`` drives it with law ``elastic`` (link computed torque + motor PD, Spong's composite
control).  Asserted on what the arm does (the link positions of
``joint_states`` against the planned move), in separate processes over DDS."""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from ros_harness import node_process, quintic_trajectory, send_trajectory
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics.model.robots import load_model

pytestmark = pytest.mark.ros
STIFFNESS = [910.0, 79.0]  # N m/rad: sqrt(k / I_a) = 2 pi 10.7 and 2 pi 10 rad/s; with the links ~5 Hz
MOTOR = [0.2, 0.02]  # kg m^2, joint side
MOVE = np.array([0.4, -0.5])
T = 2.0
OBSERVER_DEPTH = 10000  # > the states of the whole run (1 s hold + 1 s lead + 3 s window at 2 ms)
MAX_GAP = 0.02  # s of sim time between two observed states: a peak of the error cannot hide in a gap


def _reference(t: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    u = np.clip(t / T, 0.0, 1.0)[:, None]
    return q0 + (10 * u**3 - 15 * u**4 + 6 * u**5) * (q1 - q0)


def _run(tmp_path, law: str, ns: str) -> dict:
    """One bring-up: how far the arm drifts while the controller holds it for 1 s of sim time (from when it has
    taken over), then the move's tracking error (link positions vs the quintic, by sim-time stamp), the
    final error and the largest spring deflection |θ − q| seen."""
    names = list(load_model("planar2r").joint_names)
    (tmp_path / law).mkdir()
    node = rclpy.create_node(f"test_elastic_{law}")
    states: list[tuple[float, np.ndarray]] = []
    motors: list[tuple[float, np.ndarray]] = []
    commands: list[np.ndarray] = []
    # deep reader histories: in lockstep the sim publishes as fast as the controller answers, and a starved test
    # process taking them with spin_once lost up to 3/4 of them from a 100-deep history (404 of 1501 states)
    node.create_subscription(JointState, f"{ns}/joint_states", lambda m: states.append(
        (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, np.array(m.position))), OBSERVER_DEPTH)
    node.create_subscription(JointState, f"{ns}/mujoco_sim/motor_states", lambda m: motors.append(
        (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, np.array(m.position))), OBSERVER_DEPTH)
    node.create_subscription(Float64MultiArray, f"{ns}/effort_controller/commands",
                             lambda m: commands.append(np.array(m.data)), OBSERVER_DEPTH)
    # lockstep (the sim advances one control period per answering command, the controller cycles per state): what
    # the law does, whatever the host's load (in real time a starved loop left the elastic arm on one command for
    # 19-73 periods per move on a loaded host, and the tracking error then measured the host)
    sim = {"urdf_path": "planar2r", "plant_joint_stiffness": STIFFNESS, "plant_motor_inertia": MOTOR, "lockstep": True}
    ctl = {"urdf_path": "planar2r", "use_sim_time": True, "law": law, "omega": 20.0, "trigger": "state",
           "elastic.stiffness": STIFFNESS, "elastic.motor_inertia": MOTOR}
    out: dict = {}
    try:
        with node_process("mujoco_sim", tmp_path / law, params=sim, remaps={"__ns": ns}), \
                node_process("computed_torque_controller", tmp_path / law, params=ctl, remaps={"__ns": ns}):
            deadline = time.monotonic() + 60
            while len(commands) < 50 or not motors or not states:
                rclpy.spin_once(node, timeout_sec=0.05)
                assert time.monotonic() < deadline, (tmp_path / law / "computed_torque_controller.log").read_text()[-2000:]
            t_hold, q_hold = states[-1][0], states[-1][1].copy()
            deadline = time.monotonic() + 30  # a diverged plant is braked by its drive: sim time may stop
            while states[-1][0] < t_hold + 1.0 and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.02)
            held = [qk for tk, qk in states if t_hold <= tk <= t_hold + 1.0]
            out["hold_drift"] = float(np.abs(np.array(held) - q_hold).max())
            q0 = states[-1][1].copy()
            traj = quintic_trajectory(names, q0, q0 + MOVE, T, points=81)
            # start 1 s ahead in sim time (JTC: the header stamp), so the reference is known by stamp and a slow
            # host still delivers the trajectory before it starts
            t0 = states[-1][0] + 1.0
            traj.header.stamp.sec, traj.header.stamp.nanosec = int(t0), round((t0 - int(t0)) * 1e9)
            send_trajectory(node, traj, topic=f"{ns}/computed_torque_controller/joint_trajectory")
            deadline = time.monotonic() + 40
            while states[-1][0] < t0 + T + 1.0:
                rclpy.spin_once(node, timeout_sec=0.05)
                assert time.monotonic() < deadline, "the move never ended in sim time"
    finally:
        node.destroy_node()
    t = np.array([s[0] for s in states])
    q = np.array([s[1] for s in states])
    sel = (t >= t0) & (t <= t0 + T + 1.0)
    err = np.abs(q[sel] - _reference(t[sel] - t0, q0, q0 + MOVE))
    theta = dict(motors)
    defl = [np.abs(theta[tk] - qk).max() for tk, qk in zip(t[sel], q[sel], strict=True) if tk in theta]
    gap = float(np.diff(np.concatenate([[t0], t[sel], [t0 + T + 1.0]])).max())
    return {**out, "max": float(err.max()), "rms": float(np.sqrt(np.mean(err**2))), "final": float(err[-1].max()),
            "deflection": max(defl) if defl else float("nan"), "samples": int(sel.sum()), "gap": gap}


@pytest.fixture(scope="module")
def ros():
    rclpy.init()
    yield
    rclpy.shutdown()


def test_elastic_law_tracks_the_elastic_arm(ros, tmp_path):
    """The law elastic holds and tracks the elastic arm.  (Rigid computed torque on this plant is unstable: compared
    deterministically in test_elastic_joints.py; over ROS a starved host may brake the drive and hide it.)"""
    elastic = _run(tmp_path, "elastic", "/elastic_law")
    print(f"\nelastic planar 2R (k {STIFFNESS} N m/rad, I_a {MOTOR} kg m^2), omega 20:"
          f"\n  law elastic: holding 1 s, drift {elastic['hold_drift']:.3g} rad; 2 s quintic of {MOVE.tolist()} rad: "
          f"max {elastic['max']:.3g} rad, rms {elastic['rms']:.3g}, final {elastic['final']:.3g}, largest spring "
          f"deflection {elastic['deflection']:.3g} rad ({elastic['samples']} states)")
    # a precondition of the test's own observer, not of the arm: every part of the move seen
    assert elastic["gap"] <= MAX_GAP, (f"the test's observer was starved: {elastic['samples']} states with a gap of "
                                       f"{elastic['gap']:.3f} s of sim time (the arm is not judged on that)")
    assert elastic["deflection"] > 1e-3  # the springs do deflect
    assert elastic["max"] < 0.02 and elastic["final"] < 2e-3 and elastic["hold_drift"] < 1e-3, elastic


def test_elastic_law_without_valid_motor_states_holds_gravity(ros, tmp_path):
    """Law elastic reading a motor-state topic that carries only hostile messages (NaN, missing motors, ragged
    arrays, names of another robot): every one refused, the controller keeps commanding the gravity hold (finite,
    within the effort limits) and the elastic arm stays where it is."""
    model = load_model("planar2r")
    ns = "/elastic_hostile"
    node = rclpy.create_node("test_elastic_hostile")
    states: list[np.ndarray] = []
    commands: list[np.ndarray] = []
    node.create_subscription(JointState, f"{ns}/joint_states", lambda m: states.append(np.array(m.position)), 100)
    node.create_subscription(Float64MultiArray, f"{ns}/effort_controller/commands",
                             lambda m: commands.append(np.array(m.data)), 100)
    pub = node.create_publisher(JointState, f"{ns}/fake_motor_states", 10)
    names = [f"{j}_motor" for j in model.joint_names]
    hostile = [JointState(name=names, position=[float("nan"), 0.0], velocity=[0.0, 0.0]),
               JointState(name=names[:1], position=[0.0], velocity=[0.0]),
               JointState(name=names, position=[0.0], velocity=[0.0, 0.0]),
               JointState(name=["a_motor", "b_motor"], position=[0.0, 0.0], velocity=[0.0, 0.0])]
    sim = {"urdf_path": "planar2r", "plant_joint_stiffness": STIFFNESS, "plant_motor_inertia": MOTOR}
    ctl = {"urdf_path": "planar2r", "use_sim_time": True, "law": "elastic", "elastic.stiffness": STIFFNESS,
           "elastic.motor_inertia": MOTOR, "motor_states_topic": "fake_motor_states"}
    log = tmp_path / "computed_torque_controller.log"
    try:
        with node_process("mujoco_sim", tmp_path, params=sim, remaps={"__ns": ns}), \
                node_process("computed_torque_controller", tmp_path, params=ctl, remaps={"__ns": ns}) as proc:
            deadline = time.monotonic() + 60
            while len(commands) < 50 or not states:
                rclpy.spin_once(node, timeout_sec=0.05)
                assert time.monotonic() < deadline, log.read_text()[-2000:]
            q_start = states[-1].copy()
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                for m in hostile:
                    pub.publish(m)
                rclpy.spin_once(node, timeout_sec=0.02)
            assert proc.poll() is None, log.read_text()[-2000:]
    finally:
        node.destroy_node()
    tau = np.array(commands)
    effort = np.asarray(model.limits["effort"], float)
    assert np.all(np.isfinite(tau)) and np.all(np.abs(tau) <= effort * (1 + 1e-9))
    drift = np.abs(np.array(states[-50:]) - q_start).max()
    text = log.read_text()
    for cause in ("motor_state_nonfinite", "motor_state_names", "motor_state_ragged", "law_failed"):
        assert cause in text, (cause, text[-2000:])
    print(f"hostile motor states: arm drift {drift:.2e} rad over 3 s of gravity hold; {len(tau)} commands")
    assert drift < 5e-3, drift
