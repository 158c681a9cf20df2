"""Command line: ``robot-dynamics <command> ...``.

Commands (names and flags are a contract):
  dh URDF [--base LINK] [--tip LINK] [--format table|yaml|json]
  simulate URDF --controller ... --profile ... --goal Q... [--model-error E] [--json] [--plot PNG]
  plan URDF --goal Q... [--start Q...] [--profile P] [--plot PNG] [--json]
  bringup --robot NAME --sim mujoco|none
  demo [--output DIR]
  codegen URDF --lang python|c [--simplified] [--base-parameters|--standard-parameters] [-o FILE] [--json]
  base-params URDF [--base LINK] [--tip LINK] [--json]
  identify URDF DATA [--method ols|wls] [-o YAML] [--model-output YAML] [--urdf-output URDF] [--json]
  identify-record --robot NAME --output DIR [--duration S] [--model-error E] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def _cmd_dh(args: argparse.Namespace) -> int:
    from .robots import load_model

    model = load_model(args.urdf, base_link=args.base, tip_link=args.tip)
    if args.format == "yaml":
        print(model.to_yaml(), end="")
    elif args.format == "json":
        print(json.dumps(model.to_dict(), indent=2))
    else:
        print(f"robot {model.name!r}: base {model.base_link!r} -> tip {model.tip_link!r}, {model.dof} joints")
        print(model.table())
    return 0


def _cmd_bringup(args: argparse.Namespace) -> int:
    from .ros.bringup import run_bringup

    return run_bringup(robot=args.robot, sim=args.sim, params_file=args.params, duration=args.duration)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(output=args.output, robot=args.robot)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from .closed_loop import simulate_cli

    return simulate_cli(args)


def _cmd_plan(args: argparse.Namespace) -> int:
    import numpy as np

    from .robots import load_model
    from .trajectory import point_to_point
    from .trajectory.plot import plot_trajectory

    model = load_model(args.urdf)
    lim = model.limits
    start = np.zeros(model.dof) if args.start is None else np.asarray(args.start, float)
    traj = point_to_point(start, args.goal, lim["velocity"], lim["acceleration"], args.profile, duration=args.duration)
    times, q, qd, qdd = traj.sample(args.period)
    if args.plot:
        plot_trajectory(traj, args.plot, v_max=lim["velocity"], a_max=lim["acceleration"], joint_names=model.joint_names)
    if args.json:
        print(json.dumps({
            "joint_names": model.joint_names, "profile": args.profile, "duration": traj.duration,
            "times": times.tolist(), "positions": q.tolist(), "velocities": qd.tolist(), "accelerations": qdd.tolist(),
        }))
    else:
        print(f"{args.profile}: {traj.duration:.6g} s, {len(times)} samples at {args.period} s")
        print(f"peak |qd| / limit: {np.round(np.abs(qd).max(axis=0) / lim['velocity'], 4).tolist()}")
        print(f"peak |qdd| / limit: {np.round(np.abs(qdd).max(axis=0) / lim['acceleration'], 4).tolist()}")
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def _cmd_codegen(args: argparse.Namespace) -> int:
    from .codegen import codegen_cli

    return codegen_cli(args)


def _cmd_identify(args: argparse.Namespace) -> int:
    from .identification.io import identify_cli

    return identify_cli(args)


def _cmd_identify_record(args: argparse.Namespace) -> int:  # issue 10, robot_dynamics/ros/recorder.py
    from .ros.recorder import identify_record_cli

    return identify_record_cli(args)


def _cmd_base_params(args: argparse.Namespace) -> int:  # issue 5, robot_dynamics/base_parameters.py
    from .base_parameters import base_params_cli

    return base_params_cli(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="robot-dynamics", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    dh = sub.add_parser("dh", help="convert a URDF chain to Khalil's modified DH")
    dh.add_argument("urdf", help="URDF path or bundled robot name (rx90, stanford, scara, planar2r)")
    dh.add_argument("--base", default=None, help="base link (default: the URDF root)")
    dh.add_argument("--tip", default=None, help="tip link (default: the unique leaf)")
    dh.add_argument("--format", choices=("table", "yaml", "json"), default="table")
    dh.set_defaults(func=_cmd_dh)

    sim = sub.add_parser("simulate", help="closed-loop simulation in MuJoCo (no ROS)")
    sim.add_argument("urdf")
    sim.add_argument("--controller", choices=("computed_torque", "position", "predictive", "pd_gravity", "pid"), default="computed_torque")
    sim.add_argument("--profile", choices=("trapezoid", "quintic"), default="trapezoid")
    sim.add_argument("--goal", type=float, nargs="+", required=True, help="goal joint positions (URDF order)")
    sim.add_argument("--start", type=float, nargs="+", default=None, help="start joint positions (default zeros)")
    sim.add_argument("--model-error", type=float, default=0.0, help="relative error on the controller's inertial parameters")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    sim.add_argument("--plot", default=None, help="write reference/actual/error/torque plots to this PNG")
    sim.set_defaults(func=_cmd_simulate)

    plan = sub.add_parser("plan", help="plan a synchronized joint trajectory (001 ch. 8)")
    plan.add_argument("urdf")
    plan.add_argument("--start", type=float, nargs="+", default=None)
    plan.add_argument("--goal", type=float, nargs="+", required=True)
    plan.add_argument(
        "--profile", choices=("linear", "cubic", "quintic", "bang_bang", "trapezoid", "smooth_trapezoid"), default="trapezoid"
    )
    plan.add_argument("--duration", type=float, default=None)
    plan.add_argument("--period", type=float, default=0.01)
    plan.add_argument("--plot", default=None)
    plan.add_argument("--json", action="store_true")
    plan.set_defaults(func=_cmd_plan)

    br = sub.add_parser("bringup", help="start the node set without launch_ros (until SIGINT/SIGTERM)")
    br.add_argument("--robot", default="rx90", help="bundled robot name or URDF path")
    br.add_argument("--sim", choices=("mujoco", "none"), default="mujoco")
    br.add_argument("--params", default=None, help="extra ROS parameter file for every node")
    br.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    br.set_defaults(func=_cmd_bringup)

    cg = sub.add_parser("codegen", help="customized symbolic inverse dynamic model: code and operation counts")
    cg.add_argument("urdf", help="URDF path or bundled robot name")
    cg.add_argument("--lang", choices=("python", "c"), default="python")
    cg.add_argument("--simplified", action="store_true", help="zero-valued inertial parameters as structural zeros")
    cgp = cg.add_mutually_exclusive_group()
    cgp.add_argument("--base-parameters", dest="parameters", action="store_const", const="base", default="base")
    cgp.add_argument("--standard-parameters", dest="parameters", action="store_const", const="standard")
    cg.add_argument("-o", "--output", default=None, help="write the generated code to this file")
    cg.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    cg.set_defaults(func=_cmd_codegen)

    idf = sub.add_parser("identify", help="identify the base dynamic parameters from recorded data (NPZ, CSV, ROS 2 bag)")
    idf.add_argument("urdf", help="URDF path or bundled robot name (the nominal model)")
    idf.add_argument("data", help="NPZ / CSV file or ROS 2 bag (directory, .db3, .mcap) with /joint_states")
    idf.add_argument("--method", choices=("ols", "wls"), default="wls")
    idf.add_argument("--cutoff", type=float, default=20.0, help="position filter cutoff in Hz (0: none)")
    idf.add_argument("--band", type=float, default=10.0, help="parallel filter band in Hz (0: none)")
    idf.add_argument("--decimate", type=int, default=10)
    idf.add_argument("--min-velocity", type=float, default=0.02, help="drop joint equations below this speed")
    idf.add_argument("-o", "--output", default=None, help="write the estimates as YAML")
    idf.add_argument("--model-output", default=None, help="write the identified model (robot model YAML)")
    idf.add_argument("--urdf-output", default=None, help="write a physically consistent identified URDF")
    idf.add_argument("--json", action="store_true", help="print names, values, relative_std as one JSON object")
    idf.set_defaults(func=_cmd_identify)

    # identify-record (issue 10, ROS path): simulated arm over ROS 2, exciting trajectory, /joint_states bag, identify
    idr = sub.add_parser("identify-record", help="record the simulated arm on an exciting trajectory over ROS 2, then identify")
    idr.add_argument("--robot", default="rx90", help="bundled robot name or URDF path")
    idr.add_argument("--output", default="out/identify_record", help="folder for the bag, estimates and node logs")
    idr.add_argument("--duration", type=float, default=10.0, help="period of the exciting trajectory (s, sim time)")
    idr.add_argument("--periods", type=int, default=1, help="repetitions of the period")
    idr.add_argument("--harmonics", type=int, default=5)
    idr.add_argument("--maxiter", type=int, default=30, help="iterations of the excitation optimization")
    idr.add_argument("--model-error", type=float, default=0.3, help="relative error of the simulated arm's parameters")
    idr.add_argument("--seed", type=int, default=0)
    idr.add_argument("--method", choices=("ols", "wls"), default="wls")
    idr.add_argument("--json", action="store_true", help="print names, values, true_values, relative_std as JSON")
    idr.set_defaults(func=_cmd_identify_record)

    # base-params (issue 5): base inertial parameters by the closed-form method of 000
    bpp = sub.add_parser("base-params", help="base (minimum) inertial parameters: name, value, relation (000)")
    bpp.add_argument("urdf", help="URDF path or bundled robot name (rx90, stanford, scara, planar2r)")
    bpp.add_argument("--base", default=None, help="base link (default: the URDF root)")
    bpp.add_argument("--tip", default=None, help="tip link (default: the unique leaf)")
    bpp.add_argument("--json", action="store_true", help="print names, relations, values as one JSON object")
    bpp.set_defaults(func=_cmd_base_params)

    demo = sub.add_parser("demo", help="the main job: simulated arm driven by the full stack, with a report")
    demo.add_argument("--robot", default="rx90")
    demo.add_argument("--output", default="out/demo")
    demo.set_defaults(func=_cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        print(f"robot-dynamics {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
