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
  (M > 0, I_c positive definite, triangle inequality).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..model.inertia import central_inertia
from ..model.robot_model import RobotModel
from .estimation import IdentificationResult
from .progress import report
from .update import model_with_base_parameters, updated_model

__all__ = [
    "MAX_REGRESSOR_ENTRIES",
    "check_identification_size",
    "identify_cli",
    "is_physically_consistent",
    "load_result_yaml",
    "model_with_base_parameters",
    "result_to_yaml",
    "write_model_urdf",
]


# identification builds the observation matrix of every sample on a uniform grid before it filters
# and decimates: N samples x n joints x b base parameters (b <= 13 n); the peak memory is about 66 bytes
# per entry (measured with rx90, 20,000 samples: 0.76 GB), so 3e7 entries ~ 2 GB
MAX_REGRESSOR_ENTRIES = 30_000_000
_FILTER_MIN_SAMPLES = 16  # sosfiltfilt of a 4th-order Butterworth needs more than 15 samples


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
    max_samples = int(min(MAX_REGRESSOR_ENTRIES // (13 * n * n), 1_000_000))
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


def identify_cli(args: Any) -> int:
    """``robot-dynamics identify URDF DATA [--topic T] [--json] ...``: base parameters from recorded data
    (a bag's JointStates of the model's joints, several publishers merged by name: :func:`~.data.load_bag`)."""
    import json

    from ..model.robots import load_model
    from .data import JOINT_STATES, load_data, preprocess
    from .estimation import identify, physically_consistent_estimate

    model = load_model(args.urdf)
    data = load_data(args.data, topic=getattr(args, "topic", JOINT_STATES), joints=model.joint_names)
    report(f"{data.samples} samples of {data.dof} joints over {data.t[-1] - data.t[0]:.4g} s")
    band = None if args.band <= 0 else args.band
    cutoff = None if args.cutoff <= 0 else args.cutoff
    check_identification_size(model, data, cutoff=cutoff, band=band,
                              decimate=args.decimate if args.urdf_output else 1)
    res = identify(model, data, method=args.method, cutoff=cutoff, band=band, decimate=args.decimate,
                   min_velocity=args.min_velocity, effort_delay=getattr(args, "effort_delay", 0.0),
                   friction=getattr(args, "friction", "coulomb_viscous"))
    if args.output:
        report(f"writing the estimates to {args.output}")
        Path(args.output).write_text(result_to_yaml(res))
    if args.model_output:
        report(f"writing the identified model to {args.model_output}")
        Path(args.model_output).write_text(updated_model(model, res.names, res.values).to_yaml())
    if args.urdf_output:
        report("fitting a physically consistent model (nonlinear least squares)")
        p = preprocess(data.reorder(model.joint_names), cutoff=cutoff, decimate=max(args.decimate, 1))
        consistent = physically_consistent_estimate(model, p.q, p.qd, p.qdd, p.effort)
        report(f"writing the physically consistent URDF to {args.urdf_output}")
        write_model_urdf(consistent, args.urdf_output)
    if args.json:
        print(json.dumps({"names": res.names, "values": res.values.tolist(),
                          "relative_std": [float(x) if np.isfinite(x) else None for x in res.relative_std],
                          "method": res.method, "condition_number": res.condition_number,
                          "residual_rms": res.residual_rms.tolist(), "samples": res.samples}))
    else:
        print(f"robot {model.name!r}: {res.samples} samples, {res.method.upper()}, cond(W_b) = {res.condition_number:.4g}")
        print(res.table())
        print(f"residual RMS per joint: {np.round(res.residual_rms, 6).tolist()}")
    return 0
