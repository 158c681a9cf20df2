"""Identification that closes the loop (issue 19), as a user runs it: the simulated arm whose plant is off by 30 % in
every inertial parameter (``mujoco_sim model_error``) and has Stribeck friction and effort offsets the nominal model
lacks (``plant_static_friction``, ``plant_stribeck_velocity``, ``plant_friction_offset``), the controller and dynamics
server using the nominal model, and the ``identifier`` node, each in its own process over DDS, on sim time (the arm
in real time).  One ``~/identify`` call with ``swap`` records an exciting trajectory run through the controller's
action, identifies (``friction: stribeck``), validates on a held-out part and swaps the model into the dynamics
server and the controller.  Asserted on what the arm does and gets: the tracking error of the same move before and
after the swap, and the commands the arm received all along the call (the simulated drive counts the control periods
it ran on one command; its watchdog, at its default 50 ms, never tripped)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState
from rclpy.action import ActionClient
from ros_harness import call_service, wait_for_service
from ros_stack_harness import spin, spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
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
PERIOD = 0.002  # s: the simulated drive's control period (mujoco_sim control_period)
SETTLE = 0.3  # s after a stall of the drive left out of a tracking error: 7.5 time constants at omega 25 rad/s
MODEL = load_model("rx90")
NAMES = MODEL.joint_names
EFFORT = np.asarray(MODEL.limits["effort"], float)
MODEL_ERROR, SEED = 0.3, 3


# the plant's extended friction (001 eq. 7.26 + an offset) in the stribeck case; the controllers' model has none
PLANT_FRICTION = {"plant_static_friction": (1.6 * MODEL.Fc).tolist(), "plant_stribeck_velocity": [0.1] * 6,
                  "plant_friction_offset": [0.5, -0.5, 0.3, 0.1, -0.1, 0.05]}


def test_identify_and_swap_on_the_running_arm(tmp_path):
    friction = "stribeck"
    """The plant off by 30 % in every inertial parameter, with static friction 1.6 Fc, Stribeck velocity 0.1 rad/s
    and effort offsets the nominal model lacks, identified with ``friction: stribeck``."""
    # the simulated arm in real time, publishing /clock: every node on sim time, the states stamped with the time of
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
            n.parameters.update({"model_error": MODEL_ERROR, "seed": SEED, **PLANT_FRICTION})
        elif n.name == "computed_torque_controller":
            # the loop at SCHED_FIFO where the host allows it (a real arm's setting; logged when refused)
            n.parameters.update({"state_timeout": 0.5, "realtime_priority": 50})
    rclpy.init()
    node = rclpy.create_node("test_identify_swap")
    states: list[np.ndarray] = []
    stamped: list[tuple[float, np.ndarray]] = []  # (stamp, q) of every state: the arm's own record
    jtc: list[JointTrajectoryControllerState] = []
    status: list[ControllerState] = []
    def on_state(m: JointState) -> None:
        if list(m.name) == NAMES:
            states.append(np.array(m.position))
            stamped.append((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, states[-1]))

    node.create_subscription(JointState, f"{NS}/joint_states", on_state, 1000)
    sim_stats = node.create_client(Trigger, f"{NS}/mujoco_sim/statistics")
    ctl_stats = node.create_client(Trigger, f"{NS}/computed_torque_controller/statistics")
    node.create_subscription(JointTrajectoryControllerState, f"{NS}/computed_torque_controller/controller_state",
                             jtc.append, 1000)
    node.create_subscription(ControllerState, f"{NS}/computed_torque_controller/status", status.append, 1000)
    action = ActionClient(node, FollowJointTrajectory, f"{NS}/computed_torque_controller/follow_joint_trajectory")
    ident = node.create_client(Identify, f"{NS}/identifier/identify")
    base_srv = node.create_client(BaseParameters, f"{NS}/dynamics_server/base_parameters")
    terms_srv = node.create_client(DynamicTerms, f"{NS}/dynamics_server/dynamic_terms")

    def move(q1: np.ndarray) -> float:
        """:func:`move_once`, again (up to 3 times) when the drive ran 25 control periods or more on one command
        during the move: the arm was then left without commands by a starved host (the drive's own count, sim
        time), which is not what the model does; or when the goal was aborted for stale states (a starved host
        delivered none for state_timeout: safe, and not what the model does either).  The RMS tracking error
        leaves out the drive's shorter runs on one command (5-24 periods, each with the SETTLE s after it): seen
        under a CPU hog, one such stall made joint5's error 10x that of the move beside it and the model's 3x
        improvement read 2.5x; at least half the move is kept, or it is run again."""
        longest, missed, late = [], [], []
        for _ in range(3):
            json.loads(call_service(node, sim_stats, Trigger.Request()).message)  # opens the window
            got = move_once(q1)
            if got is None:  # aborted, stale: said by move_once
                longest.append(None)
                missed.append(None)
                late.append(None)
                continue
            runs = json.loads(call_service(node, sim_stats, Trigger.Request()).message)["long_runs_on_one_command"]
            ts, e = got
            calm = np.ones(ts.size, dtype=bool)
            for t_end, n in runs:  # the stall and the settling after it
                calm &= ~((ts >= t_end - (n + 1) * PERIOD) & (ts <= t_end + SETTLE))
            if all(n < 25 for _, n in runs) and calm.mean() >= 0.5:
                rms = float(np.sqrt(np.mean(e[calm] ** 2)))
                print(f"  RMS {rms:.3e} over {calm.sum()} of {ts.size} states (the drive's runs on one command "
                      f"{[n for _, n in runs]} left out with {SETTLE} s after each)")
                return rms
            longest.append(max((n for _, n in runs), default=0))
            loop = json.loads(call_service(node, ctl_stats, Trigger.Request()).message)
            missed.append(loop.get("missed_pct"))
            late.append(loop.get("period_error_max_ms"))
            print(f"  (the drive ran {longest[-1]} periods on one command during that move, the controller missed "
                  f"{missed[-1]} % of its cycles, its latest cycle {late[-1]} ms late: again)")
        # starved: the loop missed many cycles, or its own longest stall spans most of the drive's run on one command
        # (one 260 ms stall of the whole process is 0.3 % of the cycles of a minute)
        starved = all(n is None or (m is not None and m >= 1.0) or (d is not None and d >= 0.8 * 2.0 * (n - 1))
                      for m, d, n in zip(missed, late, longest, strict=True))
        raise AssertionError(("precondition: a starved host left the arm without commands in three moves in a row"
                              if starved else "the arm was left without commands in three moves in a row") +
                             f" (the drive's longest run on one command: {longest} periods; the controller's missed "
                             f"cycles: {missed} %, its longest period error: {late} ms)")

    def move_once(q1: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The same move each time (from where the arm is to q1 in 6 s): the stamps of the arm's states on the way
        and their tracking errors (all joints; the largest per joint and the RMS are printed) — its states (exact stamps) against the reference the controller reports (``~/controller_state``,
        stamped with the control time) interpolated at those stamps: what the arm did, not how late a state
        arrived on a loaded 2-core host.  The loop's latency (a state is ~1 period old when used) makes the arm
        lead the reference by about velocity x 3 ms whatever the model: a slow move keeps that floor (~2e-4 rad)
        below the model's part."""
        k, ks = len(jtc), len(stamped)
        fut = action.send_goal_async(FollowJointTrajectory.Goal(trajectory=quintic(states[-1].copy(), q1, 6.0)))
        spin_until(node, fut.done, 60, "goal response")
        res = fut.result().get_result_async()
        spin_until(node, res.done, 60, "goal result")
        outcome = res.result()
        if outcome.status == GoalStatus.STATUS_ABORTED and "no valid joint state" in outcome.result.error_string:
            print(f"  (goal aborted: {outcome.result.error_string[:200]}: a starved host; again)")
            return None
        assert outcome.status == GoalStatus.STATUS_SUCCEEDED, outcome.result.error_string
        spin(node, 0.5)
        t_ref = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in jtc[k:]])
        ref = np.array([m.reference.positions for m in jtc[k:]])
        ts = np.array([t for t, _ in stamped[ks:]])
        qs = np.array([q for _, q in stamped[ks:]])
        inside = (ts >= t_ref[0]) & (ts <= t_ref[-1])
        ref_at = np.column_stack([np.interp(ts[inside], t_ref, ref[:, j]) for j in range(6)])
        e = ref_at - qs[inside]
        print(f"move to {np.round(q1, 2).tolist()}: largest tracking error per joint "
              f"{np.abs(e).max(axis=0).round(5).tolist()}, RMS {np.sqrt(np.mean(e**2)):.3e}")
        return ts[inside], e

    def identify() -> tuple[dict, Identify.Response, dict]:
        """One call: record (through the action), identify, validate, write, swap; with the drive's statistics
        before and after it (its window).  Called again (up to 3 times) when the identification was refused and
        the drive shows why: it ran 25 control periods or more on one command, or braked, during the call (a
        starved host left it without commands: the recording is disturbed, and the identifier's refusal to swap
        is its gate working); three in a row is reported as a starved precondition."""
        seen = []
        for attempt in range(3):
            before = json.loads(call_service(node, sim_stats, Trigger.Request()).message)  # opens the window
            fut = ident.call_async(Identify.Request(duration=8.0, swap=True, output_dir=f"id{attempt or ''}"))
            spin_until(node, fut.done, 300, "identify")
            resp = fut.result()
            after = json.loads(call_service(node, sim_stats, Trigger.Request()).message)
            longest = max((n for _, n in after["long_runs_on_one_command"]), default=0)
            braked = after["drive_transitions"] != before["drive_transitions"]
            if resp.success or (longest < 25 and not braked):
                return before, resp, after
            seen.append((longest, braked, resp.message[:160]))
            print(f"  (identification refused with the drive disturbed during the call: its longest run on one "
                  f"command {longest} periods, braked {braked}: {resp.message[:160]}; again)")
        raise AssertionError(f"precondition: a starved host disturbed the drive during three identifications in a "
                             f"row: {seen}")

    def measured() -> float:
        """The RMS tracking error of the move from home to A, the smaller of two (each followed by the move back):
        the model's, less the load of the host (the breakaway of joint5 from its static friction at the start of a
        move varies from move to move on a busy host: 1.3e-3 to 1.3e-2 rad seen with the same identified model);
        the same measure before and after the swap."""
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
            spin_until(node, lambda: len(jtc) > 3 and len(states) > 3, 120, "controller running")
            home = states[-1].copy()
            move(A)  # once to settle (the first move after start-up), then measured
            move(home)
            before = measured()
            stats0, resp, stats = identify()  # record (through the action), identify, validate, write, swap
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
            # the controller said so, and never stopped commanding during the call (swap included)
            assert any("dynamic parameters from identifier" in s.mode_reason for s in status), \
                [s.mode_reason for s in status[-5:]]
            # what the arm got, counted by the drive in its own time (sim time): the runs of 5 periods or more on one
            # command are printed, around the swap (from 3 s before the controller said the new model is in use,
            # while the model was built beside the loop, to 0.5 s after) and over the whole call (recording,
            # identification, swap); the drive is still running at the end.  A loaded 2-core host may starve the
            # loop now and then whatever it does (seen: 436 ms during the excitation's optimization, 64 periods near
            # a swap in CI): the defect that held the loop (an import under the GIL) is asserted below, the timing
            # is the bench's
            swap = next(s for s in status if "dynamic parameters from identifier" in s.mode_reason)
            t_swap = swap.header.stamp.sec + 1e-9 * swap.header.stamp.nanosec
            runs = stats["long_runs_on_one_command"]
            near = [(t, n) for t, n in runs if t_swap - 3.0 <= t <= t_swap + 0.5]
            longest = stats["periods_on_one_command"]["since_last_call"]
            print(f"the swap at sim time {t_swap:.3f} s; runs of >= 5 periods on one command around it: {near}; over "
                  f"the whole call {len(runs)} such runs, the longest {longest['periods']} periods (ended at sim time "
                  f"{longest['ended_at_sim_time']:.2f} s); drive transitions {stats0['drive_transitions']} -> "
                  f"{stats['drive_transitions']}")
            loop = json.loads(call_service(node, ctl_stats, Trigger.Request()).message)
            print("controller loop: " + ", ".join(f"{k} {loop.get(k)}" for k in (
                "cycles", "missed_cycles", "period_error_p99_ms", "period_error_max_ms", "scheduling",
                "imported_while_running")))
            assert stats["drive_state"] == "running", stats
            # nothing the swap ran in the controller imported a module beside the loop (an import holds the GIL:
            # the first swap's base-parameter code, sympy, once held the loop 45-64 periods three times)
            assert loop["imported_while_running"] == [], loop["imported_while_running"]
            # how long the swap holds the loop is a real-time property of the host: measured against a reference in
            # bench/bench_swap_jitter.py, printed here (``near``), never asserted (a starved 2-core host gives 60+)
            # the same move with the identified model: RMS tracking error at least 3x smaller
            spin(node, 1.0)
            move(home)
            after = measured()
            print(f"RMS tracking error of the same move: {before:.3e} rad before, {after:.3e} after ({before / after:.1f}x)")
            assert before >= 3.0 * after, (before, after)
            assert not bringup.dead(), bringup.dead()
    finally:
        node.destroy_node()
        rclpy.shutdown()
