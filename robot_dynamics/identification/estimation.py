"""Least-squares estimation of the base dynamic parameters (inertial, rotor inertia, friction).

The inverse dynamic model is linear in the base parameters (001 eq. 9.3 with the regrouping of
000): ``Γ = W_b(q, q̇, q̈) β``.  Stacking the N samples of the n joints gives the
overdetermined system ``Y = W β + ρ`` solved by

* ordinary least squares (``method="ols"``): ``β̂ = W⁺ Y``, ``σ²_ρ = ‖Y − W β̂‖² / (r − b)``,
  ``C_β = σ²_ρ (WᵀW)⁻¹``, relative standard deviation ``%σ_βi = 100 σ_βi / |β̂_i|``;
* weighted least squares (``method="wls"``, Gautier): the rows of joint j are divided by the
  standard deviation σ_ρj of the OLS residual of that joint's equations, then OLS again.

Physically consistent estimates (:func:`physically_consistent_estimate`): the standard
parameters of each link are parametrized so that M > 0 and the inertia about the centre of
mass is that of a rigid body (second moment ``Σ_c = L Lᵀ + ε 1`` with L lower-triangular,
``I_c = tr(Σ_c) 1 − Σ_c``: positive definite with the triangle inequality), Ia, Fv ≥ 0, Fc ≥ 0
(squares), and fitted with :func:`scipy.optimize.least_squares` to the same data, with a small
pull towards the a-priori (URDF) values so that the non-identifiable directions are defined.
This is a non-convex parametrization of the convex set (no cvxpy dependency); started from the
nominal model it converges in practice, and the result is a realizable model (URDF export).

Friction models (``friction=``): Coulomb + viscous (default, 7.27), + an offset per joint (linear: one
column more per joint), + the Stribeck term of 7.26 (nonlinear least squares around the linear solution);
see :mod:`robot_dynamics.identification.friction`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.inertia import central_inertia, physically_consistent
from ..model.robot_model import RobotModel
from .friction import FRICTION_MODELS, estimate_stribeck, with_friction
from .progress import report

__all__ = [
    "IdentificationResult",
    "base_parameters_of",
    "estimate",
    "estimate_from_matrix",
    "filtered_observation",
    "gap_samples",
    "identify",
    "observation_matrix",
    "physically_consistent_estimate",
]

METHODS = ("ols", "wls")


OBSERVATION_BLOCK = 4096  # samples of the regressor evaluated at once (filtered_observation)
GAP_PERIODS = 4.5  # an interval between recorded samples longer than this many periods is a gap (messages lost)


def base_parameters_of(model: RobotModel) -> Any:
    """The base parameters of ``model`` (issue 5): ``names``, ``values``, ``matrix`` (values = matrix @
    standard values), ``regressor(q, qd, qdd)``.  A coupled transmission adds its coupled rotor inertias ``Iam<k>``
    (:func:`~robot_dynamics.dynamics.coupled_rotor.coupled_base_parameters`; ``matrix`` then over the standard
    parameters and the Iam); any other model gets the base parameters of 000 unchanged."""
    from ..dynamics.coupled_rotor import coupled_base_parameters

    if hasattr(model, "base_parameters"):
        return coupled_base_parameters(model, model.base_parameters())
    from ..dynamics.base_parameters import base_parameters

    return coupled_base_parameters(model, base_parameters(model))


def observation_matrix(base: Any, q: Any, qd: Any, qdd: Any) -> np.ndarray:
    """Base regressor of N samples: (N, n, b)."""
    w = base.regressor(q, qd, qdd)
    return w[None] if w.ndim == 2 else w


@dataclass
class IdentificationResult:
    """Estimated base parameters and their statistics (base-parameter order)."""

    names: list[str]
    values: np.ndarray
    std: np.ndarray
    relative_std: np.ndarray
    method: str
    residual_rms: np.ndarray  # per joint
    condition_number: float
    samples: int
    joint_names: list[str] = field(default_factory=list)
    robot: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "robot": self.robot,
            "method": self.method,
            "samples": self.samples,
            "condition_number": self.condition_number,
            "joint_names": list(self.joint_names),
            "residual_rms": self.residual_rms.tolist(),
            "names": list(self.names),
            "values": self.values.tolist(),
            "std": self.std.tolist(),
            "relative_std": self.relative_std.tolist(),
        }

    def table(self) -> str:
        w = max([4] + [len(n) for n in self.names])
        lines = [f"{'name':<{w}}  {'value':>14}  {'std':>11}  {'%std':>8}", "-" * (w + 40)]
        lines += [f"{n:<{w}}  {v:>14.6g}  {s:>11.3g}  {p:>8.3g}"
                  for n, v, s, p in zip(self.names, self.values, self.std, self.relative_std, strict=True)]
        return "\n".join(lines)


def _null_directions(s: np.ndarray, vt: np.ndarray, names: list[str] | None, base: Any = None) -> str:
    """The parameters of each null direction of the fit (σ ≤ 1e-12 σ_max) and whether any data could
    separate them: a direction also null for ``base.regressor`` of random states (1e-9 of σ_max) is a
    property of the model (e.g. a URDF right angle written 1.57079632679 before issue 30), not of the data."""
    if not names or len(names) != vt.shape[1]:
        return "the trajectory does not excite every base parameter"
    null = vt[s <= 1e-12 * s[0]]
    structural = np.zeros(len(null), bool)
    if base is not None and hasattr(base, "regressor") and hasattr(base, "model"):
        try:
            n = base.model.dof
            rng = np.random.default_rng(0)
            states = (rng.uniform(-np.pi, np.pi, (32, n)), rng.uniform(-2, 2, (32, n)), rng.uniform(-2, 2, (32, n)))
            wr = np.asarray(base.regressor(*states)).reshape(32 * n, -1)
            structural = np.linalg.norm(wr @ null.T, axis=0) <= 1e-9 * np.linalg.norm(wr, 2)
        except Exception:  # noqa: BLE001 - the message must not hide the rank deficiency
            pass
    out = []
    for v, fixed in zip(null, structural, strict=True):
        idx = [int(i) for i in np.argsort(-np.abs(v)) if abs(v[i]) >= 0.1 * np.abs(v).max()][:6]
        who = ", ".join(names[i] for i in idx[:-1]) + (" and " if len(idx) > 1 else "") + names[idx[-1]]
        combo = " ".join(f"{v[i]:+.3g}·{names[i]}" for i in idx)
        out.append(f"{who} cannot be separated by any data (null direction {combo} of the model's base "
                   "regressor: recompute the base parameters)" if fixed else
                   (f"{who} are not separated by these data (null direction {combo})" if len(idx) > 1 else
                    f"{who} is not determined by these data") + ": the trajectory does not excite them")
    return "; ".join(out)


def _lstsq(w: np.ndarray, y: np.ndarray, names: list[str] | None = None,
           base: Any = None) -> tuple[np.ndarray, np.ndarray, float]:
    """β̂, covariance and σ²_ρ of ``y = w β``; raises when w is rank deficient, naming the parameters
    of the null direction(s) when ``names`` are given (:func:`_null_directions`)."""
    r, b = w.shape
    if r <= b:
        raise ValueError(f"{r} equations for {b} base parameters: record more samples")
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    if s[-1] <= 1e-12 * s[0]:
        raise ValueError(f"the observation matrix is rank deficient (cond = {s[0] / max(s[-1], 1e-300):.3g}): "
                         + _null_directions(s, vt, names, base))
    beta = vt.T @ ((u.T @ y) / s)
    res = y - w @ beta
    sigma2 = float(res @ res) / (r - b)
    cov = sigma2 * (vt.T / s**2) @ vt
    return beta, cov, sigma2


def estimate(
    model: RobotModel,
    q: Any,
    qd: Any,
    qdd: Any,
    effort: Any,
    *,
    method: str = "wls",
    base: Any = None,
    friction: str = "coulomb_viscous",
    refine: str = "all",
) -> IdentificationResult:
    """Base parameters from samples (N, n) of positions, velocities, accelerations and efforts (URDF);
    ``friction``/``refine``: the friction model (:mod:`~robot_dynamics.identification.friction`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    n = model.dof
    arrays = []
    for a, what in ((q, "q"), (qd, "qd"), (qdd, "qdd"), (effort, "effort")):
        x = np.asarray(a, float)
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{what} must have shape (N, {n}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{what} contains NaN or inf")
        arrays.append(x)
    if len({x.shape[0] for x in arrays}) != 1:
        raise ValueError("q, qd, qdd and effort must have the same number of samples")
    q, qd, qdd, tau = arrays
    base = with_friction(base_parameters_of(model) if base is None else base, model, friction)
    return estimate_from_matrix(model, base, observation_matrix(base, q, qd, qdd), tau, method=method,
                                friction=friction, qd=qd, refine=refine)


# ----------------------------------------------------------- physically consistent
def _unpack(x: np.ndarray, n: int, eps: float) -> np.ndarray:
    """Parameter vector (13 per link) -> standard parameters, realizable by construction."""
    p = x.reshape(n, 13)
    out = np.empty((n, 13))
    for j in range(n):
        lm, c, l6 = p[j, 0], p[j, 1:4], p[j, 4:10]
        m = np.exp(lm)
        low = np.array([[l6[0], 0, 0], [l6[1], l6[2], 0], [l6[3], l6[4], l6[5]]])
        sig = low @ low.T + eps * np.eye(3)  # second moment about the COM, Σ_c ⪰ 0
        ic = np.trace(sig) * np.eye(3) - sig  # I_c = tr(Σ_c) 1 − Σ_c: positive with the triangle inequality
        jo = ic + m * (c @ c * np.eye(3) - np.outer(c, c))
        out[j, :10] = [jo[0, 0], jo[0, 1], jo[0, 2], jo[1, 1], jo[1, 2], jo[2, 2], *(m * c), m]
        out[j, 10:] = p[j, 10:] ** 2
    return out.ravel()


def _pack(values: np.ndarray, n: int, eps: float) -> np.ndarray:
    v = np.asarray(values, float).reshape(n, 13)
    out = np.empty((n, 13))
    for j in range(n):
        m, c, ic = central_inertia(v[j, :10])
        m = max(m, 1e-3)
        lam, vec = physically_consistent(ic, floor=4 * eps)
        sig = 0.5 * np.sum(lam) - lam  # principal second moments (> 0 by the triangle inequality)
        low = np.linalg.cholesky(vec @ np.diag(np.maximum(sig - eps, 1e-12)) @ vec.T)
        out[j, :10] = [np.log(m), *c, low[0, 0], low[1, 0], low[1, 1], low[2, 0], low[2, 1], low[2, 2]]
        out[j, 10:] = np.sqrt(np.maximum(v[j, 10:], 0.0))
    return out.ravel()


def physically_consistent_estimate(
    model: RobotModel,
    q: Any,
    qd: Any,
    qdd: Any,
    effort: Any,
    *,
    prior_weight: float = 1e-3,
    eps: float = 1e-6,
    max_nfev: int = 200,
) -> RobotModel:
    """A realizable model (M > 0, I_c ≻ 0, Ia, Fc, Fv ≥ 0) fitted to the data, started from ``model``.

    Minimizes ``‖W x − Y‖² / ‖Y‖² + prior_weight ‖x − x_nominal‖² / ‖x_nominal‖²`` over the
    parametrization of the module docstring (W: standard regressor of the samples; Y: the efforts minus the
    coupled rotor term I_c q̈ of ``model``'s transmission, which the returned model keeps).
    """
    import scipy.optimize

    n = model.dof
    q, qd, qdd, tau = (np.asarray(a, float) for a in (q, qd, qdd, effort))
    if getattr(model, "has_rotor_coupling", False):  # the model's (and the result's) known term I_c q̈, not in W
        tau = tau - qdd @ model.rotor_coupling
    w = model.regressor(q, qd, qdd).reshape(-1, 13 * n)
    y = tau.reshape(-1)
    x_nom = model.standard_parameter_values
    sy = float(np.linalg.norm(y)) or 1.0
    sx = float(np.linalg.norm(x_nom)) or 1.0
    k = np.sqrt(prior_weight)

    def residual(z: np.ndarray) -> np.ndarray:
        x = _unpack(z, n, eps)
        return np.concatenate([(w @ x - y) / sy, k * (x - x_nom) / sx])

    z0 = _pack(x_nom, n, eps)
    sol = scipy.optimize.least_squares(residual, z0, method="trf", max_nfev=int(max_nfev), x_scale="jac")
    return model.with_standard_parameters(_unpack(sol.x, n, eps))


def identify(
    model: RobotModel,
    data: Any,
    *,
    method: str = "wls",
    cutoff: float | None = 20.0,
    band: float | None = 10.0,
    decimate: int = 10,
    trim: float = 0.1,
    min_velocity: float = 0.02,
    effort_delay: float = 0.0,
    base: Any = None,
    friction: str = "coulomb_viscous",
    refine: str = "all",
    equations: dict[str, Any] | None = None,
) -> IdentificationResult:
    """The whole pipeline on recorded data (:class:`~robot_dynamics.identification.data.IdentificationData`).

    1. joints reordered to the model's chain; q low-pass filtered forward-backward at ``cutoff`` Hz,
       q̇ and q̈ by central differences (zero phase, :func:`~.data.preprocess`);
    2. parallel filtering (Gautier): every column of the base observation matrix W_b(q, q̇, q̈) and
       the efforts go through the same zero-phase low-pass filter (``band`` Hz), so that the
       high-frequency content that the model does not explain (zero-order-hold torque steps,
       Coulomb switching, noise) is removed from both sides alike; then both are decimated
       by ``decimate``;
    3. the equation of joint j is dropped at samples where ``|q̇_j| < min_velocity`` (the Coulomb
       law ``Fc sign(q̇)`` does not hold while the joint sticks or chatters around zero velocity);
    4. OLS or WLS (:func:`estimate` statistics) on the samples left after dropping at both ends
       ``trim`` seconds, and at least the filter transients (3/``cutoff`` + 3/``band`` s and two
       samples, :func:`~.data.filter_transient_samples`: the position filter's start-up and the
       one-sided differences of the end samples give wrong q̇, q̈ there, which the parallel filter
       spreads over 3/``band`` s; unlike the filtering itself, they bias noise-free data); where
       messages were lost (gaps in the stamps), the samples interpolated by :func:`~.data.preprocess`
       and the same transients around them are dropped too.

    ``effort_delay`` (s): the efforts lag the positions by this much and are read at t + delay
    (linear interpolation); e.g. half a control period when the effort stamped t_k is the command
    held over [t_k − h, t_k] (ros2_control effort interfaces, ``mujoco_sim``).

    ``friction``: ``"coulomb_viscous"`` (7.27), ``"coulomb_viscous_offset"`` (+ Foff) or ``"stribeck"``
    (+ Foff and the Stribeck term of 7.26, nonlinear least squares, ``refine``; its columns go through the
    parallel filter too), see :mod:`robot_dynamics.identification.friction`.

    ``equations``: a dict filled with the equations fitted (``base``, ``w3``, ``tau``, ``keep``), e.g. for
    :func:`~.consistent.physically_consistent_fit`.
    """
    if not (np.isfinite(effort_delay) and effort_delay >= 0.0):
        raise ValueError(f"effort_delay must be finite and >= 0, got {effort_delay}")
    from .data import _lowpass, filter_transient_samples, preprocess

    d = data.reorder(model.joint_names)
    report(f"{'filtering the positions at ' + format(cutoff, 'g') + ' Hz and ' if cutoff else ''}differentiating")
    full = preprocess(d, cutoff=cutoff, decimate=1, trim=0.0)
    base = with_friction(base_parameters_of(model) if base is None else base, model, friction)
    fs = 1.0 / float(np.median(np.diff(full.t)))
    w3, tau = filtered_observation(base, full, fs, band=band, effort_delay=effort_delay)
    filt = (lambda x: _lowpass(x, band, fs)[sl]) if band is not None and friction == "stribeck" else None
    # the ends: the transients of the position filter (q̇, q̈ of its start-up, and the one-sided
    # differences of the first and last samples) spread by the parallel filter bias the estimate
    # (UR10, noise-free, 7.4 s cut from a trajectory in motion: 24 % with 0.1 s dropped, 0.1 % with
    # 0.45 s); they are dropped whatever ``trim``
    m = max(int(round(trim * fs)), filter_transient_samples(fs, cutoff, band))
    k = max(int(decimate), 1)
    if tau.shape[0] - 2 * m < 2:
        raise ValueError(f"the recording ({full.t[-1] - full.t[0]:.3g} s) is shorter than the {m / fs:.3g} s dropped "
                         "at each end (trim and the filter transients): record longer, or raise --cutoff/--band (0: off)")
    sl = slice(m, tau.shape[0] - m, k)
    keep = np.abs(full.qd[sl]) >= min_velocity
    # samples rebuilt by interpolation over gaps of the recording (more than GAP_PERIODS periods without a message),
    # and the filter transients around them, take no part in the estimate; stamp jitter and a few lost messages are
    # bridged by the cubic resampling of :func:`~.data.preprocess` (a real driver's timing)
    gap = gap_samples(d.t, full.t, fs, filter_transient_samples(fs, cutoff, band))
    if gap is not None:
        keep &= ~gap[sl][:, None]
    if int(keep.sum()) <= len(base.names):
        raise ValueError(f"{int(keep.sum())} joint equations left for {len(base.names)} base parameters (|q̇| >= "
                         f"{min_velocity:g} on {int(keep.sum())} of {keep.size}, largest |q̇| "
                         f"{float(np.abs(full.qd).max()):.3g}): did the arm follow the exciting trajectory? Record "
                         "longer or lower --min-velocity")
    if equations is not None:  # the equations fitted (``base``, ``w3``, ``tau``, ``keep``): .consistent refits them
        equations.update(base=base, w3=w3[sl], tau=tau[sl], keep=keep)
    return estimate_from_matrix(model, base, w3[sl], tau[sl], method=method, keep=keep, friction=friction,
                                qd=full.qd if filt is not None else full.qd[sl], refine=refine,
                                filt=filt)


def filtered_observation(base: Any, full: Any, fs: float, *, band: float | None,
                         effort_delay: float = 0.0, quiet: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Step 2 of :func:`identify` on preprocessed samples ``full`` (uniform, rate ``fs``): the observation
    matrix (N, n, b) and the efforts (N, n) (read ``effort_delay`` s later), both through the parallel filter
    (``band`` Hz, None: off).  Every sample depends on its neighbours within the filter's decay only, so a piece
    of a recording with enough samples around it gives the same rows (:mod:`.streaming`, ``quiet``: no progress
    lines)."""
    from .data import _lowpass

    say = (lambda text: None) if quiet else report
    say(f"building the observation matrix ({full.samples} samples x {full.dof} joints x {len(base.names)} "
           "base parameters)")
    # built and filtered by blocks of samples, then of joints (every row and column on its own): the temporaries of
    # the regressor and of the filter stay small next to W itself
    w3 = np.empty((full.samples, full.dof, len(base.names)))
    for a in range(0, full.samples, OBSERVATION_BLOCK):
        sl = slice(a, a + OBSERVATION_BLOCK)
        w3[sl] = observation_matrix(base, full.q[sl], full.qd[sl], full.qdd[sl])
    tau = full.effort
    if effort_delay > 0.0:
        tau = np.column_stack([np.interp(full.t + effort_delay, full.t, tau[:, j]) for j in range(tau.shape[1])])
    if band is not None:
        say(f"parallel filtering of the observation matrix and the efforts at {band:g} Hz")
        for j in range(full.dof):
            w3[:, j] = _lowpass(w3[:, j], band, fs)
        tau = _lowpass(tau, band, fs)
    return w3, tau


def gap_samples(stamps: np.ndarray, grid: np.ndarray, fs: float, pad: int) -> np.ndarray | None:
    """Samples of the uniform ``grid`` rebuilt by interpolation over a gap of the recorded ``stamps`` (more than
    :data:`GAP_PERIODS` periods without a message), with ``pad`` samples around them; None when there is no gap."""
    idx = np.clip(np.searchsorted(stamps, grid), 1, stamps.size - 1)
    gap = (stamps[idx] - stamps[idx - 1]) > GAP_PERIODS / fs
    if not gap.any():
        return None
    return np.convolve(gap.astype(float), np.ones(2 * pad + 1), mode="same") > 0.5


def estimate_from_matrix(model: RobotModel, base: Any, w3: np.ndarray, tau: np.ndarray, *,
                         method: str = "wls", keep: np.ndarray | None = None, friction: str = "coulomb_viscous",
                         qd: np.ndarray | None = None, refine: str = "all", filt: Any = None) -> IdentificationResult:
    """OLS / WLS on an observation matrix (N, n, b) and efforts (N, n) (see the module docstring);
    ``keep`` (N, n) selects the joint equations used.  ``friction="stribeck"``: ``w3`` is the offset model's
    (:class:`~.friction.OffsetBase`), ``qd`` the velocities of the samples (before ``filt``, the parallel
    filter, which also selects the samples of ``w3``), :func:`~.friction.estimate_stribeck`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if friction not in FRICTION_MODELS:
        raise ValueError(f"friction must be one of {FRICTION_MODELS}, got {friction!r}")
    if friction == "stribeck":
        if qd is None:
            raise ValueError("friction='stribeck' needs the velocities qd of the samples")
        report(f"Stribeck friction: nonlinear least squares ({refine}) around the linear solution")
        fit = estimate_stribeck(list(base.names), w3, tau, np.asarray(qd, float), keep=keep, method=method,
                                refine=refine, filt=filt)
        values, std = fit["values"], fit["std"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(np.abs(values) > 0, 100.0 * std / np.abs(values), np.inf)
        return IdentificationResult(
            names=fit["names"], values=values, std=std, relative_std=rel, method=f"{method}+stribeck",
            residual_rms=np.sqrt(np.mean(fit["residual"] ** 2, axis=0)),
            condition_number=float(np.linalg.cond(fit["matrix"])), samples=int(tau.shape[0]),
            joint_names=model.joint_names, robot=model.name,
        )
    nb = w3.shape[-1]
    keep = np.ones(tau.shape, bool) if keep is None else np.asarray(keep, bool)
    rows = keep.reshape(-1)
    report(f"solving {method.upper()}: {int(rows.sum())} equations, {nb} base parameters")
    joint = np.tile(np.arange(tau.shape[1]), tau.shape[0])[rows]
    w = w3.reshape(-1, nb)[rows]
    y = tau.reshape(-1)[rows]
    beta, cov, _ = _lstsq(w, y, list(base.names), base)
    if method == "wls":
        res = y - w @ beta
        cnt = np.maximum(np.bincount(joint, minlength=tau.shape[1]) - 1, 1)
        sig = np.sqrt(np.bincount(joint, res**2, minlength=tau.shape[1]) / cnt)
        sig = np.where(sig > 0, sig, max(float(sig.max()), 1e-12))
        wt = 1.0 / sig[joint]
        beta, cov, _ = _lstsq(w * wt[:, None], y * wt, list(base.names), base)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(beta) > 0, 100.0 * std / np.abs(beta), np.inf)
    resid = tau - w3 @ beta
    return IdentificationResult(
        names=list(base.names), values=beta, std=std, relative_std=rel, method=method,
        residual_rms=np.sqrt(np.mean(resid**2, axis=0)), condition_number=float(np.linalg.cond(w)),
        samples=int(tau.shape[0]), joint_names=model.joint_names, robot=model.name,
    )
