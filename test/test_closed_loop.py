"""Closed-loop experiments (MuJoCo plant + control laws of 001 ch. 9 + trajectories of ch. 8).

The oracle is the plant: MuJoCo integrates the true dynamics (built from the same
model, or a perturbed copy), and the tracking error is measured on its state.
Metrics are checked on hand-built series.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from robot_dynamics import RobotModel, seed_robots
from robot_dynamics.control import ComputedTorqueController, make_controller
from robot_dynamics.model.robots import resolve_urdf
from robot_dynamics.sim.closed_loop import (
    plot_closed_loop,
    reference_limits,
    run_closed_loop,
    run_simulation,
    simulate_cli,
    tracking_metrics,
)
from robot_dynamics.sim.simulator import MujocoArm, perturbed
from robot_dynamics.trajectory import point_to_point

OMEGA = 20.0
GOAL = np.array([1.2, -1.0, 1.3, 1.5, 1.1, -1.4])  # every joint moves >= 1 rad


@pytest.fixture(scope="module")
def rx90() -> RobotModel:
    """The bundled RX-90 (urdf/rx90.urdf) with its rotor inertias Ia, which a URDF cannot carry."""
    model = RobotModel.from_urdf(str(resolve_urdf("rx90")))
    seed = seed_robots.rx90()
    np.testing.assert_allclose(model.standard_parameter_values[np.arange(model.dof * 13) % 13 != 10],
                               seed.standard_parameter_values[np.arange(model.dof * 13) % 13 != 10], atol=1e-12)
    return seed


@pytest.fixture(scope="module")
def a_rx90(rx90) -> np.ndarray:
    from robot_dynamics.control import max_diagonal_inertia

    return max_diagonal_inertia(rx90, n_samples=500)


@pytest.fixture(scope="module")
def trapezoid(rx90):
    v, a = reference_limits(rx90)
    traj = point_to_point(np.zeros(6), GOAL, v, a, profile="trapezoid")
    assert np.all(np.abs(traj.q_end - traj.q_start) >= 1.0)
    return traj


@pytest.fixture(scope="module")
def exact_runs(rx90, a_rx90, trapezoid):
    return {name: run_closed_loop(rx90, MujocoArm(rx90), make_controller(name, rx90, OMEGA, a=a_rx90), trapezoid)
            for name in ("computed_torque", "predictive", "pd_gravity")}


def test_computed_torque_tracks_the_rx90_trapezoid(exact_runs):
    ct = exact_runs["computed_torque"].metrics
    pd = exact_runs["pd_gravity"].metrics
    assert ct["stable"] and pd["stable"]
    assert ct["max_tracking_error"] < 1e-3
    assert ct["saturation_time"] == 0.0 and ct["max_effort_ratio"] < 1.0
    # same bandwidth ω (K_p = a ω², K_d = 2 a ω for PD + gravity): at least 10x worse
    assert pd["max_tracking_error"] >= 10.0 * ct["max_tracking_error"]


def test_predictive_and_tracking_schemes_agree_with_an_exact_model(exact_runs):
    ct, pr = exact_runs["computed_torque"], exact_runs["predictive"]
    assert pr.metrics["max_tracking_error"] < 1e-3
    assert np.abs(ct.q - pr.q).max() < 1e-4


def test_position_scheme_converges_from_rest(rx90):
    """[9.29]/[9.30]: a constant set point 1+ rad away is reached to < 1e-4 rad."""
    hold = point_to_point(GOAL, GOAL, 1.0, 1.0)  # duration 0: q^d(t) = GOAL
    ctrl = make_controller("position", rx90, OMEGA)
    res = run_closed_loop(rx90, MujocoArm(rx90), ctrl, hold, q0=np.zeros(6), settle_time=1.5)
    assert res.metrics["stable"]
    assert res.metrics["final_error"] < 1e-4
    assert np.abs(res.qd[-1]).max() < 1e-3


@pytest.mark.parametrize("seed", [1, 2])
def test_twenty_percent_model_error_stable_and_better_than_pid(rx90, a_rx90, trapezoid, seed):
    plant_model = perturbed(rx90, 0.2, np.random.default_rng(seed))
    assert np.all(np.abs(plant_model.inertial[:, 9] / rx90.inertial[:, 9] - 1.0) == pytest.approx(0.2))
    ct = run_closed_loop(rx90, MujocoArm(plant_model), make_controller("computed_torque", rx90, OMEGA), trapezoid)
    pid = run_closed_loop(rx90, MujocoArm(plant_model), make_controller("pid", rx90, OMEGA, a=a_rx90), trapezoid)
    assert ct.metrics["stable"]
    assert ct.metrics["max_tracking_error"] < pid.metrics["max_tracking_error"]
    assert ct.metrics["rms_tracking_error"] < pid.metrics["rms_tracking_error"]
    assert ct.metrics["final_error"] < 1e-2  # no integral action: static error from the gravity error


def test_payload_and_sensor_noise_stay_stable(rx90, trapezoid):
    plant = MujocoArm(rx90, payload=(1.0, [0.0, 0.0, 0.05]), noise_q=1e-5, noise_qd=1e-3, rng=4)
    res = run_closed_loop(rx90, plant, make_controller("computed_torque", rx90, OMEGA), trapezoid)
    assert res.metrics["stable"]
    assert res.metrics["max_tracking_error"] < 0.1  # unknown 1 kg payload: static gravity error only
    assert np.abs(res.qd[-1]).max() < 0.05


def test_stanford_arm_with_a_prismatic_joint():
    model = seed_robots.stanford_arm()
    goal = np.array([1.0, -0.5, 0.1, 1.0, 0.8, -1.0])
    v, a = reference_limits(model)
    traj = point_to_point(np.zeros(6), goal, v, a, profile="quintic")
    res = run_closed_loop(model, MujocoArm(model), make_controller("computed_torque", model, OMEGA), traj)
    assert res.metrics["stable"] and res.metrics["max_tracking_error"] < 1e-3


def test_divergence_is_detected(rx90, trapezoid):
    """ω = 1000 rad/s sampled at 20 ms is far beyond the discrete stability limit."""
    ctrl = ComputedTorqueController.tuned(rx90, 1000.0, effort_limit=np.full(6, 1e9))
    res = run_closed_loop(rx90, MujocoArm(rx90), ctrl, trapezoid, control_period=0.02, settle_time=3.0,
                          divergence_bound=0.5)
    assert not res.metrics["stable"]
    assert res.t[-1] < trapezoid.duration + 3.0


def test_bad_arguments(rx90, trapezoid):
    ctrl = make_controller("computed_torque", rx90, OMEGA)
    with pytest.raises(ValueError):
        run_closed_loop(rx90, MujocoArm(rx90), ctrl, trapezoid, control_period=0.0015)
    with pytest.raises(ValueError):
        run_simulation(rx90, "bogus", goal=GOAL)
    with pytest.raises(ValueError):
        run_simulation(rx90, goal=GOAL[:5])


def test_metrics_hand_computed():
    t = np.array([0.0, 0.1, 0.2, 0.3])
    q_ref = np.zeros((4, 2))
    q = np.array([[0.0, 0.0], [0.1, -0.2], [0.0, 0.1], [0.05, 0.0]])
    tau = np.array([[1.0, 0.0], [5.0, -2.0], [10.0, 1.0], [0.0, 0.0]])
    sat = np.array([[False, False], [False, False], [True, False], [False, False]])
    m = tracking_metrics(t, q, q_ref, np.array([0.1, 0.0]), tau, np.array([10.0, 4.0]), sat, True)
    assert m["max_tracking_error"] == pytest.approx(0.2)
    assert m["rms_tracking_error"] == pytest.approx(np.sqrt((0.01 + 0.04 + 0.01 + 0.0025) / 8))
    assert m["final_error"] == pytest.approx(0.05)
    assert m["max_effort_ratio"] == pytest.approx(1.0)
    assert m["saturation_time"] == pytest.approx(0.1)
    assert m["max_tracking_error_per_joint"] == pytest.approx([0.1, 0.2])


def test_cli_json_and_plot(tmp_path, capsys):
    png = tmp_path / "run.png"
    code = simulate_cli(["planar2r", "--controller", "computed_torque", "--profile", "quintic", "--goal", "1.0",
                         "-1.0", "--json", "--plot", str(png), "--settle", "0.2"])
    assert code == 0
    metrics = json.loads(capsys.readouterr().out)
    for key in ("max_tracking_error", "rms_tracking_error", "final_error", "max_effort_ratio"):
        assert np.isfinite(metrics[key])
    assert metrics["max_tracking_error"] < 1e-3
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert simulate_cli(["planar2r", "--goal", "1.0"]) == 2  # wrong length


def test_run_simulation_with_model_error_and_plot_function(tmp_path):
    metrics, res = run_simulation("planar2r", "pd_gravity", "trapezoid", [0.8, -0.6], model_error=0.2, seed=3,
                                  return_result=True, settle_time=0.2)
    assert metrics["stable"] and metrics["model_error"] == 0.2
    assert res.q.shape == res.tau.shape == (res.t.size, 2)
    plot_closed_loop(res, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_cli_accepts_a_parsed_namespace(capsys):
    import argparse

    ns = argparse.Namespace(urdf="planar2r", controller="pid", profile="trapezoid", goal=[0.5, 0.5], start=None,
                            model_error=0.0, seed=0, json=True, plot=None)
    assert simulate_cli(ns) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["controller"] == "pid" and metrics["stable"]


def test_task_space_computed_torque_tracks_the_tip(rx90):
    """[9.33]–[9.35] with an exact model: the tip follows DGM(q^d(t)) (away from the wrist singularity q5 = 0)."""
    start = np.array([0.0, -0.3, 0.4, 0.2, 0.5, 0.0])
    goal = start + np.array([1.0, 0.6, -0.8, 1.0, 1.0, -1.0])
    v, a = reference_limits(rx90)
    traj = point_to_point(start, goal, v, a, profile="quintic")
    ctrl = make_controller("task_space", rx90, OMEGA)
    plant = MujocoArm(rx90)
    res = run_closed_loop(rx90, plant, ctrl, traj, settle_time=0.2)
    assert res.metrics["stable"]
    assert res.metrics["max_tracking_error"] < 1e-3
    # tip position error, MuJoCo's own pose of the last body vs the model's DGM of the reference
    tip = rx90.frames[rx90.tip_link][1]
    body = plant.mj_data.xmat[-1].reshape(3, 3), plant.mj_data.xpos[-1]
    p_tip = body[0] @ tip[:3, 3] + body[1]
    p_ref = rx90.forward_kinematics(traj.q_end)[:3, 3]
    assert np.linalg.norm(p_tip - p_ref) < 1e-4
