"""Measure the acceptance figures of issue 10 (identification of the base dynamic parameters).

Usage: ``python bench/bench_identification.py [--robot rx90] [--ros] [--json]``.

Setting (as in ``test/test_identification_estimation.py``): the true plant is the nominal model with
every inertial parameter and friction off by ±30 % (``perturbed(model, 0.3, rng(1), friction=True)``),
simulated in MuJoCo under computed torque on the nominal model along an optimized 5-harmonic
Fourier trajectory of 10 s (two periods).  Prints:

* the excitation optimization: cond(W_b) before/after, evaluations, wall time (target < 1 min for 6 dof);
* noise-free data, OLS: largest relative error of the base parameters (target < 1 %);
* 16-bit encoders and 1 % effort noise, WLS: largest relative error of the well-excited parameters
  (%σ < 2 %, target < 5 %);
* validation on another trajectory: torque prediction error, % RMS (target < 5 %; nominal model for reference);
* computed-torque tracking on a point-to-point move: max error nominal / identified (target >= 3x);
* Lin's sequential method on the Stanford arm: largest deviation from 003 Table II (target 1e-3);
* with ``--ros``: the ROS path (``identify-record``) on the robot, wall time and largest error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from robot_dynamics.control import make_controller  # noqa: E402
from robot_dynamics.identification import (  # noqa: E402
    TABLE_II,
    FourierTrajectory,
    base_parameters_of,
    identify,
    lin_stanford_example,
    model_with_base_parameters,
    optimize_excitation,
    preprocess,
)
from robot_dynamics.identification.experiment import simulate_experiment  # noqa: E402
from robot_dynamics.model.robots import load_model  # noqa: E402
from robot_dynamics.sim.closed_loop import reference_limits, run_closed_loop  # noqa: E402
from robot_dynamics.sim.simulator import MujocoArm, perturbed  # noqa: E402
from robot_dynamics.trajectory import point_to_point  # noqa: E402


def _max_rel(est: np.ndarray, true: np.ndarray, mask: np.ndarray) -> float:
    return float((np.abs(est - true)[mask] / np.abs(true[mask])).max())


def measure(robot: str = "rx90") -> dict:
    fig: dict = {"robot": robot}
    model = load_model(robot)
    truth = perturbed(model, 0.3, np.random.default_rng(1), friction=True)
    true = base_parameters_of(truth).values
    big = np.abs(true) > 1e-6

    t0 = time.perf_counter()
    ex = optimize_excitation(model, harmonics=5, period=10.0, samples=100, maxiter=30, time_budget=math.inf, seed=0)
    fig["excitation"] = {"dof": model.dof, "base_parameters": int(true.size),
                         "cond_initial": ex.initial_condition_number, "cond": ex.condition_number,
                         "evaluations": ex.evaluations, "seconds": time.perf_counter() - t0}
    traj = FourierTrajectory(ex.trajectory.center, ex.trajectory.a, ex.trajectory.b, ex.trajectory.omega, periods=2)

    t0 = time.perf_counter()
    clean = simulate_experiment(model, truth, traj)
    noisy = simulate_experiment(model, truth, traj, encoder_bits=16, effort_noise=0.01, seed=3)
    fig["simulation_seconds"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    res = identify(model, clean, method="ols", cutoff=None, band=None, decimate=1)
    fig["noise_free"] = {"max_rel_error": _max_rel(res.values, true, big),
                         "max_abs_error_zero_parameters": float(np.abs(res.values - true)[~big].max(initial=0.0)),
                         "cond_W": res.condition_number, "seconds": time.perf_counter() - t0}

    res = identify(model, noisy, method="wls")
    well = res.relative_std < 2.0
    fig["noisy"] = {"well_excited": int(well.sum()), "of": int(well.size),
                    "max_rel_error_well_excited": _max_rel(res.values, true, well & big),
                    "max_relative_std_well_excited": float(res.relative_std[well].max())}

    val = optimize_excitation(model, harmonics=3, period=5.0, samples=40, maxiter=1, seed=9).trajectory
    data = preprocess(simulate_experiment(model, truth, val, encoder_bits=16, effort_noise=0.01, seed=5), cutoff=20.0)
    pred = base_parameters_of(model).regressor(data.q, data.qd, data.qdd) @ res.values
    nominal = model.inverse_dynamics(data.q, data.qd, data.qdd)
    norm = np.linalg.norm(data.effort)
    fig["validation"] = {"identified_rms_percent": 100 * float(np.linalg.norm(data.effort - pred) / norm),
                         "nominal_rms_percent": 100 * float(np.linalg.norm(data.effort - nominal) / norm)}

    ident = model_with_base_parameters(model, res.names, res.values)
    v, a = reference_limits(model)
    lo, hi = np.nan_to_num(model.limits["lower"], neginf=-2.0), np.nan_to_num(model.limits["upper"], posinf=2.0)
    goal = [1.0, -0.8, 1.2, 1.5, 1.0, 2.0] if robot == "rx90" else (0.5 * (lo + hi) + 0.4 * (hi - lo)).tolist()
    move = point_to_point(np.zeros(model.dof), goal, v, a, profile="trapezoid")
    errs = {}
    for name, m in (("nominal", model), ("identified", ident)):
        out = run_closed_loop(model, MujocoArm(truth), make_controller("computed_torque", m, 20.0, 1.0), move)
        errs[name] = float(out.metrics["max_tracking_error"])
    fig["tracking"] = {"max_error_nominal_rad": errs["nominal"], "max_error_identified_rad": errs["identified"],
                       "ratio": errs["nominal"] / errs["identified"]}

    table = lin_stanford_example().table()
    fig["lin_table_ii_max_deviation"] = max(abs(table[b][k] - val) for b, c in TABLE_II.items() for k, val in c.items())
    return fig


def measure_ros(robot: str) -> dict:
    from robot_dynamics.ros.recorder import record_identification_experiment

    with tempfile.TemporaryDirectory() as tmp:
        rep = record_identification_experiment(robot, tmp, duration=10.0, model_error=0.3, seed=1)
    res, true = rep["result"], rep["true_values"]
    big = np.abs(true) > 1e-6
    well = res.relative_std < 2.0
    return {"wall_time_s": rep["wall_time_s"], "samples": rep["samples"],
            "sim_time_per_wall_second": rep["sim_time_per_wall_second"],
            "excitation_cond": rep["excitation_condition_number"],
            "max_rel_error_well_excited": _max_rel(res.values, true, well & big),
            "max_rel_error_all_nonzero": _max_rel(res.values, true, big), "node_exit_codes": rep["node_exit_codes"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", default="rx90")
    ap.add_argument("--ros", action="store_true", help="also run the ROS record-then-identify path")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    fig = measure(args.robot)
    if args.ros:
        fig["ros"] = measure_ros(args.robot)
    if args.json:
        print(json.dumps(fig, indent=2))
        return
    e, nf, nz, va, tr = fig["excitation"], fig["noise_free"], fig["noisy"], fig["validation"], fig["tracking"]
    print(f"robot {args.robot}: {e['dof']} dof, {e['base_parameters']} base parameters")
    print(f"excitation: cond(W_b) {e['cond_initial']:.4g} -> {e['cond']:.4g}, {e['evaluations']} evaluations, "
          f"{e['seconds']:.1f} s (target < 60 s)")
    print(f"noise-free (OLS): max relative error {100 * nf['max_rel_error']:.3g} % (target < 1 %), "
          f"zero parameters within {nf['max_abs_error_zero_parameters']:.2g}; cond(W) {nf['cond_W']:.4g}")
    print(f"noisy (16-bit encoders, 1 % effort noise, WLS): {nz['well_excited']}/{nz['of']} well excited (%std < 2), "
          f"max relative error {100 * nz['max_rel_error_well_excited']:.3g} % (target < 5 %)")
    print(f"validation torque error: {va['identified_rms_percent']:.3g} % RMS (target < 5 %; nominal model "
          f"{va['nominal_rms_percent']:.3g} %)")
    print(f"computed-torque tracking: max error {1e3 * tr['max_error_nominal_rad']:.3g} mrad nominal, "
          f"{1e3 * tr['max_error_identified_rad']:.3g} mrad identified: {tr['ratio']:.3g}x better (target >= 3x)")
    print(f"Lin (003) Table II: max deviation {fig['lin_table_ii_max_deviation']:.2g} (target 1e-3)")
    if "ros" in fig:
        r = fig["ros"]
        print(f"ROS path (identify-record, 10 s excitation): {r['samples']} samples, sim {r['sim_time_per_wall_second']:.2f}x "
              f"real time, wall {r['wall_time_s']:.1f} s; max relative error {100 * r['max_rel_error_well_excited']:.3g} % "
              f"(well excited), {100 * r['max_rel_error_all_nonzero']:.3g} % (all nonzero); nodes {r['node_exit_codes']}")


if __name__ == "__main__":
    main()
