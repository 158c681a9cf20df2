"""Identification output: base-parameter YAML, a model carrying the estimates, a URDF.

* :func:`result_to_yaml` / :func:`load_result_yaml`: the estimates (names, values, std, relative std,
  method, robot and joint names) as YAML;
* :func:`model_with_base_parameters`: a :class:`RobotModel` whose base parameters equal the estimates
  — the standard parameters are the nominal ones corrected by the minimum-norm change
  ``x = x_nom + K⁺ (β̂ − K x_nom)`` (K: base-parameter matrix of 000, ``β = K x``), so its dynamics is
  the identified one (same inverse dynamics for every state) whatever the grouping.  Such a model is
  in general not a set of realizable rigid bodies (it is for the dynamic model, controller and
  dynamics server); use :func:`~.estimation.physically_consistent_estimate` for a URDF;
* :func:`write_model_urdf`: URDF of a model after checking it is physically consistent
  (M > 0, I_c positive definite, triangle inequality);
* :func:`plausibility_warnings`: what makes a fit describe no physical arm (negative Ia, Fc, Fv base parameters,
  A(q) not positive definite; the checks of :mod:`.update`), reported by ``identify`` on every fit;
* :func:`joint_side_data`: recorded data in the model's joint order, motor-side columns (``<joint>_motor``)
  converted through the model's transmission.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..model.inertia import central_inertia
from ..model.robot_model import RobotModel
from .data import MOTOR_SUFFIX, joint_side_data
from .estimation import IdentificationResult, base_parameters_of
from .progress import report
from .update import model_with_base_parameters, updated_model

__all__ = [
    "MAX_REGRESSOR_ENTRIES",
    "check_identification_size",
    "grid_samples",
    "identify_cli",
    "is_physically_consistent",
    "joint_side_data",
    "load_result_yaml",
    "max_identification_samples",
    "model_with_base_parameters",
    "nominal_values",
    "plausibility_warnings",
    "result_to_yaml",
    "write_model_urdf",
]


# identification builds the observation matrix of every sample on a uniform grid before it filters
# and decimates: N samples x n joints x b base parameters (b <= 13 n); the peak memory is about 66 bytes
# per entry (measured with rx90, 20,000 samples: 0.76 GB), so 3e7 entries ~ 2 GB
MAX_REGRESSOR_ENTRIES = 30_000_000
_FILTER_MIN_SAMPLES = 16  # sosfiltfilt of a 4th-order Butterworth needs more than 15 samples


def max_identification_samples(model: RobotModel) -> int:
    """Samples (on the uniform grid) that the in-memory identification of ``model`` accepts (memory)."""
    return int(min(MAX_REGRESSOR_ENTRIES // (13 * model.dof * model.dof), 1_000_000))


def grid_samples(data: Any) -> float:
    """Samples of ``data`` once resampled on a uniform grid (:func:`~.data.preprocess`)."""
    t = np.asarray(data.t, float)
    step = float(np.median(np.diff(t)))
    uniform = float(np.max(np.abs(np.diff(t) - step))) <= 1e-3 * step
    return float(t.size) if uniform else float(t[-1] - t[0]) / step + 1.0


def check_identification_size(model: RobotModel, data: Any, *, cutoff: float | None, band: float | None,
                              decimate: int = 1) -> None:
    """Refuse, before any per-sample work, data whose identification would exhaust memory or that
    is too short for the filters (ValueError naming the numbers).

    ``cutoff``, ``band``: the filters of :func:`~.estimation.identify` (Hz, None: off); ``decimate``:
    the data also goes through :func:`~.data.preprocess` with this decimation.
    """
    t = np.asarray(data.t, float)
    dt = np.diff(t)
    step = float(np.median(dt))
    uniform = float(np.max(np.abs(dt - step))) <= 1e-3 * step
    span = float(t[-1] - t[0])
    grid = float(t.size) if uniform else span / step + 1.0  # samples after resampling (see preprocess)
    n = model.dof
    max_samples = max_identification_samples(model)
    if not grid <= max_samples:
        how = "" if uniform else (f" (the {t.size} samples resampled on a uniform grid of their median "
                                  f"period {step:.3g} s over {span:.6g} s)")
        raise ValueError(f"the data gives {grid:.4g} samples{how}; identification of a {n}-joint arm is limited "
                         f"to {max_samples} samples (memory): use a shorter or resampled recording")
    fs = 1.0 / step
    active = [name for name, hz in (("--cutoff", cutoff), ("--band", band)) if hz is not None and hz < 0.5 * fs]
    if int(decimate) > 1:  # anti-aliasing filter of a parallel decimation (preprocess)
        active.append("--decimate")
    if active and grid < _FILTER_MIN_SAMPLES:
        raise ValueError(f"the data has {int(grid)} samples; the low-pass filters ({', '.join(active)}) need at "
                         f"least {_FILTER_MIN_SAMPLES} (or set {' and '.join(f'{a} 0' for a in active)})")


def result_to_yaml(result: IdentificationResult) -> str:
    import yaml

    return yaml.safe_dump(result.to_dict(), sort_keys=False)


def load_result_yaml(text_or_path: str | Path) -> dict[str, Any]:
    """The mapping written by :func:`result_to_yaml` (from text or a file path)."""
    import yaml

    p = Path(str(text_or_path))
    text = p.read_text() if "\n" not in str(text_or_path) and p.is_file() else str(text_or_path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"identification YAML is not valid YAML ({' '.join(str(exc).split())})") from exc
    if not isinstance(data, dict) or "names" not in data or "values" not in data:
        raise ValueError("identification YAML must be a mapping with 'names' and 'values'")
    if len(data["names"]) != len(data["values"]):
        raise ValueError("identification YAML: 'names' and 'values' differ in length")
    return data


def is_physically_consistent(model: RobotModel, tol: float = 0.0) -> bool:
    """Every link: M > 0 (or a massless link), I_c ⪰ 0 with the triangle inequality; Ia, Fc, Fv ≥ 0."""
    for j in range(model.dof):
        m, _, ic = central_inertia(model.inertial[j])
        if model.inertial[j, 9] < -tol:
            return False
        if m > 0:
            lam = np.linalg.eigvalsh(0.5 * (ic + ic.T))
            if lam[0] < -tol or lam[2] > lam[0] + lam[1] + tol:
                return False
    return bool(np.all(model.Ia >= -tol) and np.all(model.Fc >= -tol) and np.all(model.Fv >= -tol))


def write_model_urdf(model: RobotModel, path: str | Path, **options: Any) -> None:
    """Write ``model.to_urdf()`` to ``path``; refuses a physically inconsistent model."""
    if not is_physically_consistent(model, tol=1e-9):
        raise ValueError("the model is not physically consistent (negative mass or inertia): "
                         "use physically_consistent_estimate() before exporting a URDF")
    Path(path).write_text(model.to_urdf(**options))


def plausibility_warnings(model: RobotModel, res: IdentificationResult) -> list[dict[str, Any]]:
    """What makes the estimates of ``res`` describe no physical arm, one entry each: a negative rotor inertia,
    Coulomb or viscous friction, or mass that is a base parameter of its own (:func:`~.update.sign_violation`),
    and an inertia matrix A(q) not positive definite at the configurations :func:`~.update.check_inertia` tests
    (the nominal model with these base parameters, minimum-norm correction).  Entries: ``kind``
    (``negative`` | ``inertia_matrix``), ``parameter`` and ``value`` (None for the inertia matrix), ``message``."""
    from .update import check_inertia, sign_violation

    out: list[dict[str, Any]] = []
    std = dict(zip(res.names, np.asarray(res.std, float), strict=True))
    for name, value in zip(res.names, np.asarray(res.values, float), strict=True):
        why = sign_violation(name, float(value), model.dof)
        if why:
            s = std.get(name, np.nan)
            if np.isfinite(s) and s > 0:
                why += f" (std {s:.3g}{', within 2 std of 0' if abs(value) <= 2 * s else ''})"
            out.append({"kind": "negative", "parameter": name, "value": float(value), "message": why})
    try:
        check_inertia(updated_model(model, res.names, res.values, check=False))
    except ValueError as exc:
        out.append({"kind": "inertia_matrix", "parameter": None, "value": None, "message": str(exc)})
    return out


def nominal_values(model: RobotModel, names: list[str]) -> list[float | None]:
    """The nominal model's value of each base parameter (or extended friction term) of ``names``."""
    base = base_parameters_of(model)  # with the coupled rotor inertias Iam<k> of a coupled transmission
    known = dict(zip(base.names, np.asarray(base.values, float), strict=True))
    out: list[float | None] = []
    for name in names:
        m = re.fullmatch(r"(Foff|Fs|vs)([1-9][0-9]*)", name)
        if name in known:
            out.append(float(known[name]))
        elif m and int(m.group(2)) <= model.dof:
            v = float(np.asarray(getattr(model, m.group(1)), float)[int(m.group(2)) - 1])
            out.append(v if np.isfinite(v) else None)
        else:
            out.append(None)
    return out


def identify_cli(args: Any, model: RobotModel | None = None) -> int:
    """``robot-dynamics identify URDF DATA [--base L] [--tip L] [--lock J=V] [--parameters F] [--json] ...``: base
    parameters from recorded data (a bag's JointStates of the model's joints, several publishers merged by name:
    :func:`~.data.load_bag`) of ``model`` (the command line's: chain, locks, parameter file), else ``args.urdf``.
    Every fit is checked for physical plausibility (:func:`plausibility_warnings`): one warning line each on
    stderr, and the ``plausibility_warnings`` field of ``--json``.  Several DATA (``args.data`` a list), an NPZ of
    more than :data:`~.data.MAX_SAMPLES` samples, or one whose observation matrix exceeds the in-memory limit
    (:func:`max_identification_samples`): :func:`~.streaming.identify_streaming`, one estimate of every row.
    ``--physically-consistent`` (``args.physically_consistent``): :func:`~.consistent.physically_consistent_fit` on the
    same equations, reported next to the estimate (which parameters it changed, or that it equals it); -o, --model-output
    and --urdf-output then carry the constrained estimate."""
    import json
    import sys

    from ..model.robots import load_model
    from .data import JOINT_STATES, MAX_SAMPLES, load_data, preprocess
    from .estimation import identify, physically_consistent_estimate
    from .streaming import identify_streaming, npz_samples

    if model is None:
        model = load_model(args.urdf)
    topic = getattr(args, "topic", JOINT_STATES)
    motor_topic = model.transmission is not None and topic.rstrip("/").rsplit("/", 1)[-1] == "motor_states"
    joints = [n + MOTOR_SUFFIX for n in model.joint_names] if motor_topic else list(model.joint_names)
    paths = [args.data] if isinstance(args.data, str | Path) else list(args.data)
    band = None if args.band <= 0 else args.band
    cutoff = None if args.cutoff <= 0 else args.cutoff
    options = {"method": args.method, "cutoff": cutoff, "band": band, "decimate": args.decimate,
               "min_velocity": args.min_velocity, "effort_delay": getattr(args, "effort_delay", 0.0),
               "friction": getattr(args, "friction", "coulomb_viscous")}
    # one recording: in memory as before, unless its observation matrix would not fit (then streamed: an NPZ read
    # piece by piece); several recordings: streamed (identify_streaming).  The Stribeck fit and --urdf-output need
    # the data in memory: their recording is read whole (and refused as before when too long)
    data: Any = None
    whole = options["friction"] == "stribeck" or bool(args.urdf_output)
    pc = bool(getattr(args, "physically_consistent", False))  # refits the in-memory equations (.consistent)
    if pc and options["friction"] == "stribeck":
        raise ValueError("--physically-consistent constrains a linear fit: use it with --friction coulomb_viscous or "
                         "coulomb_viscous_offset")
    whole = whole or pc
    npz = (npz_samples(paths[0]) or 0) if str(paths[0]).endswith(".npz") else 0
    single = len(paths) == 1 and npz <= (MAX_SAMPLES if whole else max_identification_samples(model))
    dask = getattr(args, "dask", None)  # --dask: always streamed, the pieces reduced on Dask (.streaming_dask)
    if dask and pc:
        raise ValueError("--physically-consistent refits all the equations in memory: run it without --dask")
    if dask and whole:
        raise ValueError("--dask reduces the recordings piece by piece; the Stribeck fit and --urdf-output need all "
                         "the samples in memory: run them without --dask")
    single = single and not dask
    stream = not single
    if single:
        data = load_data(paths[0], topic=topic, joints=joints)
        data = joint_side_data(model, data, f"data {str(paths[0])!r}")
        report(f"{data.samples} samples of {data.dof} joints over {data.t[-1] - data.t[0]:.4g} s")
        stream = not whole and max_identification_samples(model) < grid_samples(data) <= MAX_SAMPLES
        paths = [data] if stream else paths
    if not stream:
        check_identification_size(model, data, cutoff=cutoff, band=band,
                                  decimate=args.decimate if args.urdf_output else 1)
        equations: dict[str, Any] = {}  # the equations fitted, refitted by --physically-consistent
        res = identify(model, data, equations=equations, **options)
    else:
        if args.urdf_output:
            raise ValueError("--urdf-output fits all the samples in memory: give one recording of at most "
                             f"{MAX_SAMPLES} samples ({max_identification_samples(model)} on a uniform grid)")
        if pc:
            raise ValueError("--physically-consistent refits all the equations in memory: give one recording of at "
                             f"most {max_identification_samples(model)} samples on a uniform grid")
        res = identify_streaming(model, paths, topic=topic, joints=joints, scheduler=dask or None, **options)
    report("checking the physical plausibility of the estimates")
    warnings = plausibility_warnings(model, res)
    for w in warnings:
        print(f"robot-dynamics identify: warning: {w['message']}", file=sys.stderr)
    fit = None
    if pc:
        from .consistent import physically_consistent_fit

        report("fitting the physically consistent estimate (nonlinear least squares on the same equations)")
        fit = physically_consistent_fit(model, equations, res)
    if args.output:
        report(f"writing the estimates to {args.output}")
        Path(args.output).write_text(result_to_yaml(res if fit is None else fit.result(res)))
    if args.model_output:
        report(f"writing the identified model to {args.model_output}")
        Path(args.model_output).write_text((updated_model(model, res.names, res.values) if fit is None
                                            else fit.model).to_yaml())
    if args.urdf_output and fit is not None:  # the constrained fit's realizable model
        report(f"writing the physically consistent URDF to {args.urdf_output}")
        write_model_urdf(fit.model, args.urdf_output)
    elif args.urdf_output:
        report("fitting a physically consistent model (nonlinear least squares)")
        p = preprocess(data.reorder(model.joint_names), cutoff=cutoff, decimate=max(args.decimate, 1))
        consistent = physically_consistent_estimate(model, p.q, p.qd, p.qdd, p.effort)
        report(f"writing the physically consistent URDF to {args.urdf_output}")
        write_model_urdf(consistent, args.urdf_output)
    if args.json:
        payload = {"names": res.names, "values": res.values.tolist(),
                   "relative_std": [float(x) if np.isfinite(x) else None for x in res.relative_std],
                   "method": res.method, "condition_number": res.condition_number,
                   "residual_rms": res.residual_rms.tolist(), "samples": res.samples,
                   "robot": model.name, "joint_names": list(model.joint_names), "base_link": model.base_link,
                   "tip_link": model.tip_link, "locked_joints": dict(model.locked_joints),
                   "nominal_values": nominal_values(model, list(res.names)),
                   "physically_plausible": not warnings, "plausibility_warnings": warnings}
        if fit is not None:
            payload["physically_consistent"] = fit.to_dict()
        print(json.dumps(payload))
    else:
        print(f"robot {model.name!r}: {res.samples} samples, {res.method.upper()}, cond(W_b) = {res.condition_number:.4g}")
        print(res.table())
        print(f"residual RMS per joint: {np.round(res.residual_rms, 6).tolist()}")
        print("physically plausible" if not warnings else f"NOT physically plausible: {len(warnings)} warning(s) "
              "on stderr" + ("" if pc else " (--physically-consistent constrains the fit)"))
        for line in [] if fit is None else fit.lines():
            print(line)
    return 0
