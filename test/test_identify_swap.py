"""Identification that closes the loop (issue 19), as a user runs it: the simulated arm whose plant is off by 30 % in
every inertial parameter (``mujoco_sim model_error``) and has Stribeck friction and effort offsets the nominal model
lacks (``plant_static_friction``, ``plant_stribeck_velocity``, ``plant_friction_offset``), the controller and dynamics
server using the nominal model, and the ``identifier`` node, each in its own process over DDS, on sim time.  One
``~/identify`` call with ``swap`` records an exciting trajectory run through the controller's action, identifies
(``friction: stribeck``), validates on a held-out part and swaps the model into the dynamics server and the
controller.  Asserted on what the arm does: the tracking error of the same move before and after the swap.

The arm runs in lockstep (``mujoco_sim lockstep``, the controller's ``trigger: state``): it advances one control period
per command that answers its latest state, so what it does is a function of the model and the law, not of how busy
the host is (in real time a starved 2-core host left the drive 37 periods on one command and withheld states for
0.5 s in the project's CI, and the tracking error measured the host).  The swap beside a real-time loop is asserted
in ``test_follow_joint_trajectory.py`` (mock hardware) and its timing is measured in ``bench/bench_swap_jitter.py``;
a recording with real-time jitter is identified in ``test_identification_jitter.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState
from rclpy.action import ActionClient
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import call_service, wait_for_service
from ros_stack_harness import spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from test_follow_joint_trajectory import A, quintic

from robot_dynamics.identification.estimation import base_parameters_of
from robot_dynamics.model.robots import load_model
from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import NodeSpec, node_set
from robot_dynamics.sim.simulator import perturbed
from robot_dynamics_interfaces.msg import ControllerState
from robot_dynamics_interfaces.srv import BaseParameters, DynamicTerms, Identify

pytestmark = pytest.mark.ros
NS = "/ident"
MODEL = load_model("rx90")
NAMES = MODEL.joint_names
EFFORT = np.asarray(MODEL.limits["effort"], float)
MODEL_ERROR, SEED = 0.3, 3
PERIOD = 0.002  # s: the simulated drive's control period (mujoco_sim control_period)
DEEP = QoSProfile(depth=10000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


# the plant's extended friction (001 eq. 7.26 + an offset) in the stribeck case; the controllers' model has none
PLANT_FRICTION = {"plant_static_friction": (1.6 * MODEL.Fc).tolist(), "plant_stribeck_velocity": [0.1] * 6,
                  "plant_friction_offset": [0.5, -0.5, 0.3, 0.1, -0.1, 0.05]}


def stamp(m) -> float:
    """A message's header stamp, s."""
    return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec


def test_identify_and_swap_on_the_running_arm(tmp_path):
    """The plant off by 30 % in every inertial parameter, with static friction 1.6 Fc, Stribeck velocity 0.1 rad/s
    and effort offsets the nominal model lacks, identified with ``friction: stribeck``."""
    friction = "stribeck"
    # the simulated arm (lockstep) publishing /clock: every node on sim time, the states stamped with the time of
    # their physics (system-clock stamps are taken at publication, up to a period off the physics they describe)
    nodes = [n for n in node_set("rx90", "mujoco", namespace=NS)
             if n.name in ("mujoco_sim", "computed_torque_controller", "dynamics_server")]
    spec = next(n for n in nodes if n.name == "dynamics_server")
    nodes.append(NodeSpec("identifier", "identifier", "identifier", spec.parameter_files,
                          {**spec.parameters, "effort_delay": 0.001, "maxiter": 20, "friction": friction,
                           "output_root": str(tmp_path)},
                          namespace=NS))
    for n in nodes:
        if n.name == "mujoco_sim":
            n.parameters.update({"model_error": MODEL_ERROR, "seed": SEED, "lockstep": True, **PLANT_FRICTION})
        elif n.name == "computed_torque_controller":
            # one cycle per state (lockstep); the test pauses the arm between moves (states withheld on purpose: a
            # state timeout of a minute, never stale here)
            n.parameters.update({"trigger": "state", "state_timeout": 60.0})
    rclpy.init()
    node = rclpy.create_node("test_identify_swap")
    states: list[np.ndarray] = []
    stamped: list[tuple[float, np.ndarray]] = []  # (stamp, q) of every state: the arm's own record
    jtc: list[JointTrajectoryControllerState] = []
    status: list[ControllerState] = []
    def on_state(m: JointState) -> None:
        if list(m.name) == NAMES:
            states.append(np.array(m.position))
            stamped.append((stamp(m), states[-1]))

    # in lockstep the arm runs as fast as the loop answers: 500+ states, reports and statuses a second, more than
    # this process reads on a busy host.  The sim is paused after each move and this process reads the backlog
    # (at most a move's worth: 10000 deep); never KEEP_ALL: a reader that falls behind would block the controller's
    # publishers ("cannot publish data", seen under a CPU hog)
    node.create_subscription(JointState, f"{NS}/joint_states", on_state, DEEP)
    sim_stats = node.create_client(Trigger, f"{NS}/mujoco_sim/statistics")
    ctl_stats = node.create_client(Trigger, f"{NS}/computed_torque_controller/statistics")
    node.create_subscription(JointTrajectoryControllerState, f"{NS}/computed_torque_controller/controller_state",
                             jtc.append, DEEP)
    node.create_subscription(ControllerState, f"{NS}/computed_torque_controller/status", status.append, DEEP)
    pause = node.create_client(SetBool, f"{NS}/mujoco_sim/pause")

    def paused(on: bool) -> None:
        """Pause (and read every state and report published until then) or resume the simulated arm."""
        assert call_service(node, pause, SetBool.Request(data=on)).success
        if on:
            t = json.loads(call_service(node, sim_stats, Trigger.Request()).message)["sim_time"]
            spin_until(node, lambda: stamped[-1][0] >= t - 1e-6 and stamp(jtc[-1]) >= t - PERIOD - 1e-6, 120,
                       "this process reading the states and reports published before the pause")
    action = ActionClient(node, FollowJointTrajectory, f"{NS}/computed_torque_controller/follow_joint_trajectory")
    ident = node.create_client(Identify, f"{NS}/identifier/identify")
    base_srv = node.create_client(BaseParameters, f"{NS}/dynamics_server/base_parameters")
    terms_srv = node.create_client(DynamicTerms, f"{NS}/dynamics_server/dynamic_terms")

    def move(q1: np.ndarray) -> float:
        """The same move each time (from where the arm is to q1 in 6 s): the RMS of its tracking errors (all joints;
        the largest per joint is printed) — its states (exact stamps) against the reference the controller reports
        (``~/controller_state``, stamped with the control time) interpolated at those stamps.  The loop's latency (a
        state is ~1 period old when used) makes the arm lead the reference by about velocity x 3 ms whatever the
        model: a slow move keeps that floor (~2e-4 rad) below the model's part."""
        k, ks = len(jtc), len(stamped)
        paused(False)
        fut = action.send_goal_async(FollowJointTrajectory.Goal(trajectory=quintic(states[-1].copy(), q1, 6.0)))
        spin_until(node, fut.done, 60, "goal response")
        res = fut.result().get_result_async()
        spin_until(node, res.done, 60, "goal result")
        outcome = res.result()
        assert outcome.status == GoalStatus.STATUS_SUCCEEDED, outcome.result.error_string
        paused(True)  # the result may overtake the backlog of this (busy) process: read it all
        assert np.allclose(jtc[-1].reference.positions, q1, rtol=0.0, atol=1e-9), "the goal's end not reported"
        t_ref = np.array([stamp(m) for m in jtc[k:]])
        ref = np.array([m.reference.positions for m in jtc[k:]])
        ts = np.array([t for t, _ in stamped[ks:]])
        qs = np.array([q for _, q in stamped[ks:]])
        # the states with the controller's reference on both sides within 2 periods (one cycle per state: the
        # neighbours are one period apart unless a report was lost)
        i = np.clip(np.searchsorted(t_ref, ts), 1, t_ref.size - 1)
        inside = (ts >= t_ref[0]) & (ts <= t_ref[-1]) & (t_ref[i] - t_ref[i - 1] <= 2.0 * PERIOD + 1e-9)
        assert inside.sum() >= 0.9 * 6.0 / PERIOD, f"{inside.sum()} states of the 6 s move with the reference beside them"
        ref_at = np.column_stack([np.interp(ts[inside], t_ref, ref[:, j]) for j in range(6)])
        e = ref_at - qs[inside]
        print(f"move to {np.round(q1, 2).tolist()}: largest tracking error per joint "
              f"{np.abs(e).max(axis=0).round(5).tolist()}, RMS {np.sqrt(np.mean(e**2)):.3e}")
        return float(np.sqrt(np.mean(e**2)))

    def measured() -> float:
        """The RMS tracking error of the move from home to A, the smaller of two (each followed by the move back):
        the same measure before and after the swap (the two differ by where the previous move left the arm and how
        the goal's start falls between control periods: 1.9e-4 and 2.4e-4 rad seen with the same identified model)."""
        rms = []
        for _ in range(2):
            rms.append(move(A))
            move(home)
        return min(rms)

    try:
        with Bringup(nodes, log_dir=tmp_path / "logs") as bringup:
            assert action.wait_for_server(timeout_sec=60)
            wait_for_service(ident, 60)
            wait_for_service(base_srv, 60)
            wait_for_service(terms_srv, 60)
            wait_for_service(sim_stats, 60)
            wait_for_service(pause, 60)
            spin_until(node, lambda: len(jtc) > 3 and len(states) > 3, 120, "controller running")
            paused(True)
            home = states[-1].copy()
            move(A)  # once to settle (the first move after start-up), then measured
            move(home)
            before = measured()
            # one call: record (through the action), identify, validate, write, swap
            paused(False)
            fut = ident.call_async(Identify.Request(duration=8.0, swap=True, output_dir="id"))
            spin_until(node, fut.done, 600, "identify")
            paused(True)
            resp = fut.result()
            assert resp.success, resp.message
            assert resp.swapped and resp.samples > 2000, resp.message
            print(f"identify: {resp.message}")
            # the identified base parameters are close to the plant's (the oracle: the perturbed model itself)
            true = base_parameters_of(perturbed(MODEL, MODEL_ERROR, SEED))
            plant = {f"{k}{j + 1}": PLANT_FRICTION[p][j] for k, p in (("Fs", "plant_static_friction"),
                     ("vs", "plant_stribeck_velocity"), ("Foff", "plant_friction_offset")) for j in range(6)}
            tv = np.array([true.values[list(true.names).index(nm)] if nm in true.names else plant[nm]
                           for nm in resp.names])
            if friction == "stribeck":  # (issue 19: within 5 % on noise-free data offline, test_friction_models)
                fr = [(nm, v, t) for nm, v, t in zip(resp.names, resp.values, tv, strict=True) if nm in plant]
                print("extended friction (identified / plant): " + ", ".join(f"{nm} {v:.3g}/{t:.3g}" for nm, v, t in fr))
            err = np.abs(np.array(resp.values) - tv)
            scale = np.abs(tv).max()
            well = np.array(resp.relative_std) < 5.0
            print(f"{well.sum()}/{len(tv)} well-excited base parameters (%std < 5): max error "
                  f"{err[well].max() / scale:.2e} of the largest")
            # validation on the held-out part: the identified model explains the efforts better, joint by joint
            rms_b, rms_a = np.array(resp.holdout_rms_before), np.array(resp.holdout_rms_after)
            assert rms_b.shape == rms_a.shape == (6,)
            assert np.sqrt(np.mean(rms_a**2)) < 0.5 * np.sqrt(np.mean(rms_b**2)), (rms_b, rms_a)
            assert {"estimates.yaml", "model.yaml", "validation.json"} <= {p.split("/")[-1] for p in resp.files}
            # the dynamics server serves the identified model: its base parameters are the estimates, and its
            # friction torques follow the identified extended law (001 eq. 7.26 + offset) written out here
            bp = call_service(node, base_srv, BaseParameters.Request())
            served = dict(zip(bp.names, bp.values, strict=True))
            est = dict(zip(resp.names, resp.values, strict=True))
            rigid = [nm for nm in resp.names if nm in served]
            assert len(rigid) == len(served) == len(resp.names) - 18, (len(rigid), len(served))
            np.testing.assert_allclose([served[nm] for nm in rigid], [est[nm] for nm in rigid], rtol=1e-6, atol=1e-9)
            qd = np.array([0.05, -0.2, 0.3, -0.02, 1.0, -0.5])
            terms = call_service(node, terms_srv, DynamicTerms.Request(joint_names=NAMES, positions=[0.0] * 6,
                                                                       velocities=qd.tolist()))
            fc, fv, fs, vs, foff = (np.array([est[f"{k}{j}"] for j in range(1, 7)]) for k in ("Fc", "Fv", "Fs", "vs", "Foff"))
            expected = fc * np.sign(qd) + fv * qd + (fs - fc) * np.sign(qd) * np.exp(-np.abs(qd) / vs) + foff
            np.testing.assert_allclose(terms.friction, expected, rtol=1e-9, atol=1e-12)
            # the controller said so, and kept the arm driven
            assert any("dynamic parameters from identifier" in s.mode_reason for s in status), \
                [s.mode_reason for s in status[-5:]]
            stats = json.loads(call_service(node, sim_stats, Trigger.Request()).message)
            assert stats["drive_state"] == "running", stats
            loop = json.loads(call_service(node, ctl_stats, Trigger.Request()).message)
            print("controller loop: " + ", ".join(f"{k} {loop.get(k)}" for k in (
                "cycles", "period_error_p99_ms", "period_error_max_ms", "imported_while_running")))
            # nothing the swap ran in the controller imported a module beside the loop (an import holds the GIL:
            # the first swap's base-parameter code, sympy, once held the loop 45-64 periods three times)
            assert loop["imported_while_running"] == [], loop["imported_while_running"]
            # the same move with the identified model: RMS tracking error at least 3x smaller
            move(home)
            after = measured()
            print(f"RMS tracking error of the same move: {before:.3e} rad before, {after:.3e} after ({before / after:.1f}x)")
            assert before >= 3.0 * after, (before, after)
            assert not bringup.dead(), bringup.dead()
    finally:
        node.destroy_node()
        rclpy.shutdown()
