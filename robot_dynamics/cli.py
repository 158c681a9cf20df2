"""Command line: ``robot-dynamics <command> ...``.

Commands (names and flags are a contract):
  dh URDF [--base LINK] [--tip LINK] [--format table|yaml|json]
  simulate URDF --controller ... --profile ... --goal Q... [--model-error E] [--elastic K...] [--json] [--plot PNG]
  plan URDF --goal Q... [--start Q...] [--profile P] [--plot PNG] [--json]
  bringup --robot NAME --sim mujoco|none|mock
  demo [--output DIR]
  codegen URDF --lang python|c [--simplified] [--base-parameters|--standard-parameters] [-o FILE] [--json]
  base-params URDF [--base LINK] [--tip LINK] [--json]
  inertia-report ROBOT [--samples N] [--seed S] [--plot PNG] [--json] [--base LINK] [--tip LINK]
  identify URDF DATA... [--base LINK] [--tip LINK] [--lock JOINT=VALUE...] [--parameters FILE] [--method ols|wls]
           [--topic T] [--dask local|ADDRESS] [-o YAML] [--model-output YAML] [--urdf-output URDF]
           [--physically-consistent] [--json]
  identify-record --robot NAME --output DIR [--duration S] [--model-error E] [--json]

The long commands (identify, identify-record) print a progress line on stdout at every step (reading,
filtering, building the observation matrix, solving, writing; the excitation and the recording at least
every 5 s), except with ``--json``.

Every command that takes a URDF (or ``--robot``) also takes a ``.xacro`` / ``.urdf.xacro`` file, expanded
with ``--xacro-arg name:=value`` (repeatable); the commands that build a model in this process take
``--allow-inconsistent-inertia`` (a physically impossible link inertia is then a warning, not an error).

Errors: one line on stderr, ``robot-dynamics <command>: error: <cause>``, and exit code 2, never a
traceback (``--debug`` or ROBOT_DYNAMICS_DEBUG=1 shows it).  Numbers are checked (finite, in range),
goals against the joint limits, files before they are read, and sizes before anything is allocated.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

PROG = "robot-dynamics"
DEBUG_ENV = "ROBOT_DYNAMICS_DEBUG"  # =1: an error shows its Python traceback (like --debug)
# sizes checked before anything is allocated
MAX_PLAN_SAMPLES = 1_000_000  # samples of `plan` (times x joints x 3 arrays)
MAX_SIM_STEPS = 1_000_000  # control steps of `simulate` (1000 s at the 1 kHz plant step)
MAX_RECORD_SECONDS = 120.0  # sim time recorded by `identify-record` (500 Hz states: 60,000 samples)
MAX_URDF_BYTES = 64 * 2**20
MAX_PARAMS_BYTES = 16 * 2**20
MAX_SEED = 2**32 - 1
MAX_INERTIA_SAMPLES = 100_000  # configurations of `inertia-report` (memory: chunked; time ~0.5 ms each for 6 joints)


class CliError(ValueError):
    """A refused command-line input (printed as one line, exit code 2)."""


# ------------------------------------------------------------------ option types
def _number(kind: type = float, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
            hi_open: bool = False) -> Callable[[str], Any]:
    """argparse ``type``: a finite int/float in [lo, hi] (open ends with ``lo_open``/``hi_open``)."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if lo is not None and (value < lo or (lo_open and value == lo)):
            raise argparse.ArgumentTypeError(f"must be {'>' if lo_open else '>='} {lo:g}, got {text}")
        if hi is not None and (value > hi or (hi_open and value == hi)):
            raise argparse.ArgumentTypeError(f"must be {'<' if hi_open else '<='} {hi:g}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


FINITE = _number()


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(text: str, limit: int = 1000) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------ checks before any work
def _check_urdf(name: str, what: str = "URDF") -> None:
    """A URDF path must be a non-empty UTF-8 XML text file of a sane size (bundled names pass)."""
    from .model.robots import bundled_robots, resolve_urdf

    p = Path(name).expanduser()
    if not p.exists():
        resolve_urdf(name)  # a bundled robot name, else FileNotFoundError naming the known ones
        return
    if not p.is_file():
        try:
            resolve_urdf(name)
            return
        except FileNotFoundError:
            raise CliError(f"{what} {name!r} is {'a directory' if p.is_dir() else 'not a regular file'}; a URDF "
                           f"file or a bundled robot name {bundled_robots()} is expected") from None
    size = p.stat().st_size
    if size == 0:
        raise CliError(f"{what} {name!r} is an empty file")
    if size > MAX_URDF_BYTES:
        raise CliError(f"{what} {name!r} has {size} bytes; the maximum is {MAX_URDF_BYTES}")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{what} {name!r} is not a text file (not UTF-8); a URDF (XML) file is expected") from None
    if not text.lstrip("\ufeff \t\r\n").startswith("<"):
        raise CliError(f"{what} {name!r} is not XML; a URDF file is expected")


def _xacro_arg(text: str) -> str:
    """argparse ``type`` of ``--xacro-arg``: ``name:=value``."""
    from .model.urdf_conversion import xacro_mappings

    try:
        xacro_mappings([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _add_description_options(parser: argparse.ArgumentParser, inertia: bool = True) -> None:
    parser.add_argument("--xacro-arg", dest="xacro_arg", action="append", type=_xacro_arg, default=[],
                        metavar="NAME:=VALUE", help="argument of a .xacro robot description (repeatable)")
    if inertia:
        parser.add_argument("--allow-inconsistent-inertia", action="store_true",
                            help="accept physically inconsistent link inertias with a warning instead of an error")


# commands that hand the robot to node processes: a .xacro is expanded once into a temporary URDF file
_NODE_COMMANDS = ("bringup", "demo", "identify-record")


def _description_context(args: argparse.Namespace, stack: ExitStack) -> None:
    """Apply ``--xacro-arg`` / ``--allow-inconsistent-inertia`` to whatever the command loads."""
    from .model.robots import load_options, read_description, resolve_urdf, robot_stem
    from .model.urdf_conversion import is_xacro_path

    xacro_args = list(getattr(args, "xacro_arg", None) or [])
    options: dict[str, Any] = {}
    if getattr(args, "allow_inconsistent_inertia", False):
        options["allow_inconsistent_inertia"] = True
    attr = "urdf" if hasattr(args, "urdf") else "robot" if hasattr(args, "robot") else None
    name = getattr(args, attr) if attr else None
    path = None
    if name is not None:
        try:
            path = resolve_urdf(name)
        except FileNotFoundError:
            path = None  # reported by the command's own checks
    if path is not None and is_xacro_path(str(path)):
        if args.command in _NODE_COMMANDS:
            _, text = read_description(str(path), xacro_args)
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="robot_dynamics_xacro_")))
            expanded = tmp / f"{robot_stem(path)}.urdf"
            expanded.write_text(text, encoding="utf-8")
            setattr(args, attr, str(expanded))
        else:
            options["xacro_args"] = xacro_args
    elif xacro_args:
        option = "--robot" if attr == "robot" else "URDF"
        if path is None:  # a missing file is what to say, whatever its name
            raise CliError(f"{option} {name!r}: no such file (nor a bundled robot name)")
        raise CliError(f"--xacro-arg given but {option} {name!r} is not a .xacro file")
    stack.enter_context(load_options(**options))


def _load_model(name: str, **kw: Any) -> Any:
    from .model.robots import load_model

    _check_urdf(name)
    return load_model(name, **kw)


def _check_output_file(path: str | None, option: str) -> None:
    """An output file must be creatable: not a directory, in an existing writable directory."""
    if not path:
        return
    p = Path(path).expanduser()
    if p.is_dir():
        raise CliError(f"{option} {path!r} is a directory; a file name is expected")
    parent = p.parent
    if not parent.is_dir():
        raise CliError(f"{option} {path!r}: the directory {str(parent)!r} does not exist")
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"{option} {path!r} is not writable")


def _check_output_dir(path: str, option: str) -> None:
    """An output folder must be a directory, or creatable in an existing writable one."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise CliError(f"{option} {path!r} exists and is not a directory")
    anc = p
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise CliError(f"{option} {path!r}: {str(anc)!r} is not a directory")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise CliError(f"{option} {path!r}: {str(anc)!r} is not writable")


def _check_plot(path: str | None) -> None:
    if not path:
        return
    _check_output_file(path, "--plot")
    ext = Path(path).suffix.lower().lstrip(".")
    if ext:
        from matplotlib.backend_bases import FigureCanvasBase

        formats = FigureCanvasBase.get_supported_filetypes()
        if ext not in formats:
            raise CliError(f"--plot {path!r}: unknown image format {ext!r} (use one of {sorted(formats)})")


def _configuration(model: Any, values: Sequence[float] | None, option: str) -> Any:
    """Joint values of the model's length, inside its position limits (CliError naming the joint)."""
    import numpy as np

    default = values is None
    q = np.zeros(model.dof) if default else np.asarray(values, float)
    what = f"{option} (default: zeros)" if default else option
    if q.shape != (model.dof,):
        raise CliError(f"{option} has {q.size} value(s); robot {model.name!r} has {model.dof} joints "
                       f"({', '.join(model.joint_names)})")
    if not np.all(np.isfinite(q)):
        raise CliError(f"{option} must be finite numbers, got {q.tolist()}")
    lim = model.limits
    for name, v, lo, hi in zip(model.joint_names, q, lim["lower"], lim["upper"], strict=True):
        if not lo <= v <= hi:
            raise CliError(f"{what}: joint {name!r} = {v:g} is outside its limits [{lo:g}, {hi:g}]")
    return q


def _check_count(count: float, maximum: int, what: str, hint: str, unit: str = "samples") -> None:
    if not count <= maximum:  # also NaN
        raise CliError(f"{what} would give {count:.4g} {unit}; the maximum is {maximum} ({hint})")


# ------------------------------------------------------------------ commands
def _lock_arg(text: str) -> tuple[str, float]:
    """argparse ``type`` of ``--lock``: ``joint=value`` (a finite number, SI units)."""
    name, sep, value = text.partition("=")
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not sep or not name.strip() or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"--lock {text[:80]!r} must read JOINT=VALUE with a finite value (rad or m)")
    return name.strip(), v


def _add_chain_options(parser: argparse.ArgumentParser) -> None:
    """``--base``, ``--tip``, ``--lock`` (``dh``, ``identify``): which chain of the robot is modelled."""
    parser.add_argument("--base", default=None, help="base link (default: the URDF root)")
    parser.add_argument("--tip", default=None, help="tip link: model the chain base -> tip, lock every other moving "
                        "joint (default: the whole tree)")
    parser.add_argument("--lock", action="append", type=_lock_arg, default=[], metavar="JOINT=VALUE",
                        help="lock a moving joint at VALUE (rad or m; repeatable); with --tip, unlisted off-chain "
                             "joints lock at 0")


def _chain_model(args: argparse.Namespace, **kw: Any) -> Any:
    """The model of ``args.urdf`` with the chain options of :func:`_add_chain_options` (``dh``, ``identify``)."""
    locked = dict(args.lock) if args.lock else None
    try:
        return _load_model(args.urdf, base_link=args.base, tip_link=args.tip, locked_positions=locked, **kw)
    except ValueError as exc:  # the loader names its argument: say the option
        if str(exc).startswith("locked_positions"):
            raise CliError("--lock" + str(exc)[len("locked_positions"):].replace("[", " [", 1)) from None
        raise


def _cmd_dh(args: argparse.Namespace) -> int:
    model = _chain_model(args)
    if args.format == "yaml":
        print(model.to_yaml(), end="")
    elif args.format == "json":
        print(json.dumps(model.to_dict(), indent=2))
    else:
        if args.tip is None:
            kind = "tree" if model.is_tree else "chain"
            print(f"robot {model.name!r}: whole {kind} under base {model.base_link!r}, {model.dof} joints")
        else:
            print(f"robot {model.name!r}: base {model.base_link!r} -> tip {model.tip_link!r}, {model.dof} joints, "
                  f"{len(model.locked_joints)} locked")
        print(model.table())
    return 0


def _check_params_file(path: str, option: str = "--params") -> Any:
    """A ROS parameter file: an existing YAML file holding a mapping (returned)."""
    import yaml

    p = Path(path).expanduser()
    if not p.exists():
        raise CliError(f"{option} {path!r}: no such file")
    if not p.is_file():
        raise CliError(f"{option} {path!r} is not a regular file")
    if p.stat().st_size > MAX_PARAMS_BYTES:
        raise CliError(f"{option} {path!r} has {p.stat().st_size} bytes; the maximum is {MAX_PARAMS_BYTES}")
    try:
        data = yaml.safe_load(p.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise CliError(f"{option} {path!r} is not a UTF-8 text file") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{option} {path!r} is not valid YAML ({_one_line(exc, 300)})") from None
    if not isinstance(data, dict):
        raise CliError(f"{option} {path!r} must hold a YAML mapping (node name: ros__parameters: ...)")
    return data


_ROBOT_PARAMETERS = ("rotor_inertia", "acceleration_limits", "transmissions")  # what load_model(parameters=) reads


def _check_robot_parameters(path: str | None) -> None:
    """``--parameters FILE``: a ROS parameter file whose ``/**: ros__parameters:`` section holds robot parameters."""
    if not path:
        return
    data = _check_params_file(path, "--parameters")
    section = data.get("/**")
    params = section.get("ros__parameters") if isinstance(section, dict) else None
    keys = [k for k in (params or {}) if str(k).split(".")[0] in _ROBOT_PARAMETERS] if isinstance(params, dict) else []
    if not keys:
        raise CliError(f"--parameters {path!r} has no robot parameters: expected '/**: ros__parameters:' with "
                       f"{', '.join(_ROBOT_PARAMETERS)}")


def _cmd_bringup(args: argparse.Namespace) -> int:
    _check_urdf(args.robot, "--robot")
    if args.params:
        _check_params_file(args.params)
    from .ros.bringup import run_bringup

    return run_bringup(robot=args.robot, sim=args.sim, params_file=args.params, duration=args.duration,
                       namespace=args.namespace)


def _cmd_demo(args: argparse.Namespace) -> int:
    _check_urdf(args.robot, "--robot")
    _check_output_dir(args.output, "--output")
    from .demo import run_demo

    return run_demo(output=args.output, robot=args.robot)


def _cmd_simulate(args: argparse.Namespace) -> int:
    import inspect

    from .sim.closed_loop import add_simulate_arguments, reference_limits, run_simulation, simulate_cli
    from .trajectory import point_to_point

    _check_plot(args.plot)
    model = _load_model(args.urdf)
    start = _configuration(model, args.start, "--start")
    goal = _configuration(model, args.goal, "--goal")
    # the run's size, from the defaults simulate_cli applies to the options this command does not expose
    defaults = add_simulate_arguments(argparse.ArgumentParser()).parse_args(["x", "--goal", "0"])
    speed_scale = getattr(args, "speed_scale", defaults.speed_scale)
    settle = getattr(args, "settle", defaults.settle)
    timestep = inspect.signature(run_simulation).parameters["timestep"].default
    traj = point_to_point(start, goal, *reference_limits(model, speed_scale), profile=args.profile)
    steps = math.ceil((traj.duration + settle) / timestep - 1e-9) + 1
    _check_count(steps, MAX_SIM_STEPS, f"simulating {traj.duration:.6g} s of motion + {settle:g} s at a {timestep:g} s "
                 "step", "closer goals or a robot with higher velocity limits", unit="steps")
    return simulate_cli(args)


def _print_json(obj: dict[str, Any], chunk: int = 4096) -> None:
    """``print(json.dumps(obj))`` with numpy arrays as nested lists, written piece by piece (the same
    text, without holding it, or the arrays as Python lists, in memory at once)."""
    import numpy as np

    write = sys.stdout.write
    write("{")
    for k, (key, value) in enumerate(obj.items()):
        write((", " if k else "") + json.dumps(key) + ": ")
        if not isinstance(value, np.ndarray):
            write(json.dumps(value))
            continue
        write("[")
        for i in range(0, len(value), chunk):
            write((", " if i else "") + json.dumps(value[i:i + chunk].tolist())[1:-1])
        write("]")
    write("}\n")


def _cmd_plan(args: argparse.Namespace) -> int:
    import numpy as np

    from .trajectory import point_to_point
    from .trajectory.plot import plot_trajectory

    _check_plot(args.plot)
    model = _load_model(args.urdf)
    lim = model.limits
    start = _configuration(model, args.start, "--start")
    goal = _configuration(model, args.goal, "--goal")
    traj = point_to_point(start, goal, lim["velocity"], lim["acceleration"], args.profile, duration=args.duration)
    timed = None
    if args.time_optimal:
        if args.duration is not None:
            raise CliError("--duration and --time-optimal exclude each other: the time-optimal motion has its own "
                           "duration")
        from .trajectory.optimal_timing import time_optimal

        if traj.duration > 0:
            timed = time_optimal(traj, model, acceleration_limits=lim["acceleration"], names=model.joint_names)
            traj = timed.trajectory
    _check_count(traj.duration / args.period + 2.0, MAX_PLAN_SAMPLES,
                 f"--period {args.period:g} s over {traj.duration:.6g} s",
                 "use a larger --period" + (" or a shorter --duration" if args.duration is not None else ""))
    times, q, qd, qdd = traj.sample(args.period)
    if args.plot:
        plot_trajectory(traj, args.plot, v_max=lim["velocity"], a_max=lim["acceleration"], joint_names=model.joint_names)
    label = args.profile + (", time-optimal" if args.time_optimal else "")
    if args.json:
        extra = {} if timed is None else {"binding": timed.binding, "peak_effort_ratio": timed.effort_ratio}
        _print_json({
            "joint_names": model.joint_names, "profile": args.profile, "time_optimal": bool(args.time_optimal),
            "duration": traj.duration, **extra,
            "times": times, "positions": q, "velocities": qd, "accelerations": qdd,
        })
    else:
        print(f"{label}: {traj.duration:.6g} s, {len(times)} samples at {args.period} s")
        print(f"peak |qd| / limit: {np.round(np.abs(qd).max(axis=0) / lim['velocity'], 4).tolist()}")
        print(f"peak |qdd| / limit: {np.round(np.abs(qdd).max(axis=0) / lim['acceleration'], 4).tolist()}")
        if timed is not None:
            print(f"peak |effort| / limit: {timed.effort_ratio:.9f} (bound by {timed.binding})")
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def _cmd_codegen(args: argparse.Namespace) -> int:
    from .symbolic.codegen import codegen_cli

    _check_urdf(args.urdf)
    _check_output_file(args.output, "-o/--output")
    return codegen_cli(args, _load_model(args.urdf))


def _cmd_identify(args: argparse.Namespace) -> int:
    from .identification.io import identify_cli

    _check_urdf(args.urdf)
    _check_robot_parameters(args.parameters)
    for path, option in ((args.output, "-o/--output"), (args.model_output, "--model-output"),
                         (args.urdf_output, "--urdf-output")):
        _check_output_file(path, option)
    outputs = [Path(x).expanduser().resolve() for x in (args.output, args.model_output, args.urdf_output) if x]
    if len(set(outputs)) != len(outputs):
        raise CliError("-o, --model-output and --urdf-output must be different files")
    model = _chain_model(args, parameters=args.parameters)  # the same loading as dh (+ the parameter file)
    with _progress(args):
        return identify_cli(args, model)


def _cmd_identify_record(args: argparse.Namespace) -> int:  # issue 10, robot_dynamics/ros/recorder.py
    total = args.duration * args.periods
    if total > MAX_RECORD_SECONDS:
        raise CliError(f"--duration {args.duration:g} s x --periods {args.periods} = {total:g} s of recording; the "
                       f"maximum is {MAX_RECORD_SECONDS:g} s (memory of the identification)")
    _check_urdf(args.robot, "--robot")
    _check_output_dir(args.output, "--output")
    from .ros.recorder import identify_record_cli

    # after the excitation, the recorder brings up the simulated arm and records in other processes:
    # the heartbeat names that step
    after = {"exciting trajectory ready": f"running the simulated arm and recording /joint_states "
                                          f"({total:g} s of sim time, then the bag is written)"}
    with _progress(args, after=after):
        return identify_record_cli(args)


def _progress(args: argparse.Namespace, after: dict[str, str] | None = None) -> Any:
    """Progress lines of a long command on stdout, flushed (``<command>: [elapsed] step``, a heartbeat every
    5 s); none with ``--json`` (stdout is then one JSON object, stderr only an error line)."""
    from contextlib import nullcontext

    from .identification.progress import progress_to

    return nullcontext() if args.json else progress_to(sys.stdout, args.command, after=after)


def _cmd_base_params(args: argparse.Namespace) -> int:  # issue 5, robot_dynamics/dynamics/base_parameters.py
    from .dynamics.base_parameters import base_params_cli

    model = _load_model(args.urdf, base_link=getattr(args, "base", None), tip_link=getattr(args, "tip", None))
    return base_params_cli(args, model)


def _cmd_inertia_report(args: argparse.Namespace) -> int:  # seed 004, dynamics/inertial_characteristics.py
    from .dynamics.inertial_characteristics import inertia_report_cli

    _check_plot(args.plot)
    model = _load_model(args.urdf, base_link=args.base, tip_link=args.tip)
    return inertia_report_cli(args, model)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help=f"show the Python traceback of an error (or {DEBUG_ENV}=1)")
    sub = p.add_subparsers(dest="command", required=True)

    dh = sub.add_parser("dh", help="convert a URDF chain to Khalil's modified DH")
    dh.add_argument("urdf", help="URDF path or bundled robot name (rx90, stanford, scara, planar2r)")
    _add_chain_options(dh)
    dh.add_argument("--format", choices=("table", "yaml", "json"), default="table")
    _add_description_options(dh)
    dh.set_defaults(func=_cmd_dh)

    sim = sub.add_parser("simulate", help="closed-loop simulation in MuJoCo (no ROS)")
    sim.add_argument("urdf")
    sim.add_argument("--controller", choices=("computed_torque", "position", "predictive", "pd_gravity", "pid", "elastic"),
                     default=None, help="control law (default: elastic with --elastic, else computed_torque)")
    sim.add_argument("--profile", choices=("trapezoid", "quintic"), default="trapezoid")
    sim.add_argument("--goal", type=FINITE, nargs="+", required=True, help="goal joint positions (URDF order)")
    sim.add_argument("--start", type=FINITE, nargs="+", default=None, help="start joint positions (default zeros)")
    sim.add_argument("--model-error", type=_number(lo=0.0, hi=1.0, hi_open=True), default=0.0,
                     help="relative error on the controller's inertial parameters, in [0, 1)")
    sim.add_argument("--elastic", type=_number(lo=0.0, lo_open=True), nargs="+", default=None, metavar="K",
                     help="elastic joints of stiffness K, N m/rad (one value, or one per joint; 001 §7.3.8): the "
                          "plant gets a motor behind a spring at every joint")
    sim.add_argument("--motor-inertia", type=_number(lo=0.0, lo_open=True), nargs="+", default=None, metavar="J",
                     help="with --elastic: motor inertia on the joint side (default: the model's Ia, else 0.1 A_jj)")
    sim.add_argument("--motor-damping", type=_number(lo=0.0), nargs="+", default=[0.0], metavar="F",
                     help="with --elastic: motor viscous friction, N m s/rad")
    sim.add_argument("--seed", type=_number(int, lo=0, hi=MAX_SEED), default=0)
    sim.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    sim.add_argument("--plot", default=None, help="write reference/actual/error/torque plots to this PNG")
    _add_description_options(sim)
    sim.set_defaults(func=_cmd_simulate)

    plan = sub.add_parser("plan", help="plan a synchronized joint trajectory (001 ch. 8)")
    plan.add_argument("urdf")
    plan.add_argument("--start", type=FINITE, nargs="+", default=None)
    plan.add_argument("--goal", type=FINITE, nargs="+", required=True)
    plan.add_argument(
        "--profile", choices=("linear", "cubic", "quintic", "bang_bang", "trapezoid", "smooth_trapezoid"), default="trapezoid"
    )
    plan.add_argument("--duration", type=_number(lo=0.0), default=None, help="s (default: the minimum time)")
    plan.add_argument("--time-optimal", action="store_true",
                      help="retime the profile's path to the fastest motion within the velocity, acceleration and "
                           "effort limits together (the model's dynamics, friction and rotor inertia included)")
    plan.add_argument("--period", type=_number(lo=0.0, lo_open=True), default=0.01,
                      help=f"sampling period, s (at most {MAX_PLAN_SAMPLES} samples)")
    plan.add_argument("--plot", default=None)
    plan.add_argument("--json", action="store_true")
    _add_description_options(plan)
    plan.set_defaults(func=_cmd_plan)

    br = sub.add_parser("bringup", help="start the node set without launch_ros (until SIGINT/SIGTERM)")
    br.add_argument("--robot", default="rx90", help="bundled robot name or URDF path")
    br.add_argument("--sim", choices=("mujoco", "none", "mock"), default="mujoco",
                    help="mock: the MuJoCo arm as hardware on the system clock (no /clock)")
    br.add_argument("--params", default=None, help="extra ROS parameter file for every node")
    br.add_argument("--namespace", default="", help="namespace of the whole robot (e.g. /arm1): topics and services move "
                    "with it, no remap needed")
    br.add_argument("--duration", type=_number(lo=0.0, lo_open=True), default=None, help="stop after this many seconds")
    _add_description_options(br, inertia=False)
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
    _add_description_options(cg)
    cg.set_defaults(func=_cmd_codegen)

    idf = sub.add_parser("identify", help="identify the base dynamic parameters from recorded data (NPZ, CSV, ROS 2 bag)")
    idf.add_argument("urdf", help="URDF path or bundled robot name (the nominal model)")
    idf.add_argument("data", nargs="+", help="NPZ / CSV file or ROS 2 bag (directory, .db3, .mcap) with /joint_states: "
                     "positions rad or m, efforts N m or N joint side (or <joint>_motor columns: motor side, with a "
                     "transmission); several: one estimate of all, each filtered on its own (long NPZ: streamed)")
    _add_chain_options(idf)
    idf.add_argument("--parameters", default=None, metavar="FILE",
                     help="ROS parameter file of the robot ('/**: ros__parameters:' rotor_inertia, acceleration_limits, "
                          "transmissions), instead of config/<robot>.yaml")
    idf.add_argument("--method", choices=("ols", "wls"), default="wls")
    idf.add_argument("--cutoff", type=_number(lo=0.0), default=20.0, help="position filter cutoff in Hz (0: none)")
    idf.add_argument("--band", type=_number(lo=0.0), default=10.0, help="parallel filter band in Hz (0: none)")
    idf.add_argument("--decimate", type=_number(int, lo=1, hi=10_000), default=10)
    idf.add_argument("--min-velocity", type=_number(lo=0.0), default=0.02, help="drop joint equations below this speed")
    idf.add_argument("--friction", choices=("coulomb_viscous", "coulomb_viscous_offset", "stribeck"),
                     default="coulomb_viscous",
                     help="friction model: Fc, Fv (001 eq. 7.27); + an offset Foff per joint; + Stribeck Fs, vs "
                          "(001 eq. 7.26, nonlinear least squares around the linear solution)")
    idf.add_argument("--topic", default="/joint_states",
                     help="JointState topic of a bag (e.g. /arm1/joint_states); publishers merged by joint name")
    idf.add_argument("--effort-delay", type=_number(lo=0.0, hi=1.0), default=0.0,
                     help="s: the efforts lag the positions by this much (e.g. half a control period for a held "
                          "effort command; identify-record's bags: 0.001)")
    idf.add_argument("--dask", default=None, metavar="ADDRESS",
                     help="reduce the pieces of the recordings on Dask: 'local' (a local cluster sized to this machine) "
                          "or a scheduler's address (tcp://HOST:PORT); needs the packages dask and distributed")
    idf.add_argument("-o", "--output", default=None, help="write the estimates as YAML")
    idf.add_argument("--model-output", default=None, help="write the identified model (robot model YAML)")
    idf.add_argument("--urdf-output", default=None, help="write a physically consistent identified URDF")
    idf.add_argument("--physically-consistent", action="store_true",
                     help="also fit the estimate constrained to a physical arm (M > 0, inertias positive definite "
                          "with the triangle inequality, Ia, Fc, Fv >= 0), report what it changed; outputs carry it")
    idf.add_argument("--json", action="store_true", help="print names, values, relative_std as one JSON object")
    _add_description_options(idf)
    idf.set_defaults(func=_cmd_identify)

    # identify-record (issue 10, ROS path): simulated arm over ROS 2, exciting trajectory, /joint_states bag, identify
    idr = sub.add_parser("identify-record", help="record the simulated arm on an exciting trajectory over ROS 2, then identify")
    idr.add_argument("--robot", default="rx90", help="bundled robot name or URDF path")
    idr.add_argument("--output", default="out/identify_record", help="folder for the bag, estimates and node logs")
    idr.add_argument("--duration", type=_number(lo=0.0, lo_open=True, hi=MAX_RECORD_SECONDS), default=10.0,
                     help="period of the exciting trajectory (s, sim time)")
    idr.add_argument("--periods", type=_number(int, lo=1, hi=1000), default=1, help="repetitions of the period")
    idr.add_argument("--harmonics", type=_number(int, lo=2, hi=20), default=5)
    idr.add_argument("--maxiter", type=_number(int, lo=1, hi=10_000), default=30,
                     help="iterations of the excitation optimization")
    idr.add_argument("--model-error", type=_number(lo=0.0, hi=1.0, hi_open=True), default=0.3,
                     help="relative error of the simulated arm's parameters, in [0, 1)")
    idr.add_argument("--seed", type=_number(int, lo=0, hi=MAX_SEED), default=0)
    idr.add_argument("--method", choices=("ols", "wls"), default="wls")
    idr.add_argument("--json", action="store_true", help="print names, values, true_values, relative_std as JSON")
    _add_description_options(idr, inertia=False)
    idr.set_defaults(func=_cmd_identify_record)

    # base-params (issue 5): base inertial parameters by the closed-form method of 000
    bpp = sub.add_parser("base-params", help="base (minimum) inertial parameters: name, value, relation (000)")
    bpp.add_argument("urdf", help="URDF path or bundled robot name (rx90, stanford, scara, planar2r)")
    bpp.add_argument("--base", default=None, help="base link (default: the URDF root)")
    bpp.add_argument("--tip", default=None, help="tip link (default: the unique leaf)")
    bpp.add_argument("--json", action="store_true", help="print names, relations, values as one JSON object")
    _add_description_options(bpp)
    bpp.set_defaults(func=_cmd_base_params)

    # inertia-report (seed 004): inertial characteristics over the workspace, Tables 2-3, coupling verdict
    irp = sub.add_parser("inertia-report", help="inertial characteristics (Tourassis & Neuman): d_ij, coupling k_ij, "
                         "independent coefficients and sparsity, PID or computed torque")
    irp.add_argument("urdf", metavar="ROBOT", help="bundled robot name (rx90, stanford, scara, planar2r) or URDF path")
    irp.add_argument("--samples", type=_number(int, lo=2, hi=MAX_INERTIA_SAMPLES), default=1000,
                     help="configurations sampled uniformly within the joint limits")
    irp.add_argument("--seed", type=_number(int, lo=0, hi=MAX_SEED), default=0, help="seed of the sampling")
    irp.add_argument("--plot", default=None, help="write heat maps of max k_ij and of the d_ij ranges to this PNG")
    irp.add_argument("--json", action="store_true", help="print the report as one JSON object")
    irp.add_argument("--base", default=None, help="base link (default: the URDF root)")
    irp.add_argument("--tip", default=None, help="tip link: the chain base -> tip (default: the whole tree)")
    _add_description_options(irp)
    irp.set_defaults(func=_cmd_inertia_report)

    demo = sub.add_parser("demo", help="the main job: simulated arm driven by the full stack, with a report")
    demo.add_argument("--robot", default="rx90", help="bundled robot name, URDF or .xacro path")
    demo.add_argument("--output", default="out/demo")
    _add_description_options(demo, inertia=False)
    demo.set_defaults(func=_cmd_demo)
    for sp in sub.choices.values():  # --debug also after the command name
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


# errors of bad input (files, data, numbers): one line, no traceback
def _expected_errors() -> tuple[type[BaseException], ...]:
    import csv
    import sqlite3
    import struct
    import zipfile
    import zlib
    from xml.etree.ElementTree import ParseError

    return (ValueError, OSError, KeyError, IndexError, EOFError, ImportError, MemoryError, zipfile.BadZipFile,
            zlib.error, struct.error, csv.Error, sqlite3.Error, ParseError)


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong (no traceback)."""
    if isinstance(exc, MemoryError):
        return f"out of memory{': ' + str(exc) if str(exc) else ''}"
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return _one_line(f"{exc.filename}: {exc.strerror}")
    if isinstance(exc, KeyError) and exc.args:
        return _one_line(f"missing key {exc.args[0]!r}")
    if isinstance(exc, ImportError):
        return _one_line(f"a required package is missing ({exc})")
    text = _one_line(str(exc))
    expected = isinstance(exc, _expected_errors()) or type(exc).__module__.split(".")[0] in ("yaml", "rosbags")
    if not expected:
        return _one_line(f"internal error ({type(exc).__name__}: {text}); run with --debug or {DEBUG_ENV}=1 "
                         "for the traceback")
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """``robot-dynamics``: every error is one line ``robot-dynamics <command>: error: <cause>``, exit code 2."""
    args = build_parser().parse_args(argv)
    debug = bool(args.debug) or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")
    try:
        with ExitStack() as stack:
            _description_context(args, stack)
            return int(args.func(args) or 0)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (| head): no error line, no "Exception ignored"
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except BaseException as exc:  # noqa: BLE001 - the command line never prints a traceback
        if debug:
            raise
        print(f"{PROG} {args.command}: error: {describe_error(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
