"""Pinocchio oracle for whole kinematic trees and locked chains (issue 14 acceptance).

Shared by ``test/test_tree_pinocchio.py`` and ``bench/tree_table.py``.  For every URDF of
``example-robot-data`` that Pinocchio loads as a fixed-base model (``pin.buildModelFromUrdf(path)``, no
root joint: the root link is the base) with at least one moving joint, our whole-tree
:class:`~robot_dynamics.model.robot_model.RobotModel` is compared with Pinocchio's whole model at random states:

* inverse dynamics ``Γ − Fv q̇ − Fc sign(q̇)`` vs ``pin.rnea`` (Pinocchio has no friction; ``Ia`` is 0 from URDF);
* inertia matrix vs ``pin.crba`` (upper triangle, symmetrized); gravity vs ``pin.computeGeneralizedGravity``;
* forward dynamics (``method="cholesky"`` and ``"recursive"``) vs ``pin.aba`` with τ net of friction;
* regressor: ``W(q, q̇, q̈) @ standard_parameter_values`` vs ``pin.rnea`` + friction, and ``W @ p_rand`` vs
  ``pin.rnea`` of the same model with random physically consistent body inertias and random armature, ``p_rand``
  derived from Pinocchio's inertias (below).

Errors are relative (:func:`rel_error`): the larger of the whole-batch ``max|Δ| / max|ref|`` and the
issue's per-state ``max|Δ| / max(1, max|ref|)``; forward dynamics in torque space (:class:`Errors`).
Link poses of every URDF link are compared too (:func:`pose_error`).

Pinocchio's inertia of joint ``i`` is expressed in the frame of the joint's child link (fixed-joint children
merged into it); our standard parameters of link j are in R_j about O_j, and ``model.frames[link] =
(j, ^jT_link)`` places the child link of joint j in R_j, so the same body in our convention is
``pin.SE3(^jT_link).act(Y_i)``, whose ``toDynamicParameters()`` (m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz,
inertia about the frame origin, products as matrix entries) is reordered into XX XY XZ YY YZ ZZ MX MY MZ M
(001 eq. 7.3, XY = −∫xy dm: also a matrix entry).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from example_robots import example_robot_data_dir
from pinocchio_oracle import PinocchioURDF

from robot_dynamics.model.robot_model import RobotModel

TOL = 1e-9
N_STATES = 100

# URDF files (relative to example_robot_data_dir()) that are not compared, and why.  test_discovery checks
# that exactly these are excluded, so a new or newly loadable file cannot be skipped silently.
EXCLUDED: dict[str, str] = {
    "ur_description/urdf/ur3.urdf": "Pinocchio cannot load it: an empty <robot> (no name, no link; urdfdom: "
                                    "'No name given for the robot')",
    "hector_description/robots/quadrotor_base.urdf": "no moving joint (a single rigid body: Pinocchio nv = 0)",
    "iris_description/robots/iris_simple.urdf": "no moving joint (rotors are fixed joints: Pinocchio nv = 0)",
}

# Files whose URDF inertias are physically inconsistent on a link that moves (links fixed to the base are
# not checked by the converter), converted with allow_inconsistent_inertia=True: {file: (link named by the
# converter's ValueError without the flag, why)}.  test_inconsistent_inertia_list checks that the converter
# refuses each of them naming that link, and accepts every other file without the flag.
_DUMMY = "a dummy body, all six tensor entries 1e-6: principal moments (0, 0, 3e-6) break I1 + I2 >= I3"
INCONSISTENT_INERTIA: dict[str, tuple[str, str]] = {
    "alex_description/urdf/alex_psyonic_hands.urdf": (
        "LeftPsyonicAbilityBaseLink", "hand base and thumb base links (x2): principal moments 2.7e-4 + 1.0e-3 < 1.4e-3"),
    "allegro_hand_description/urdf/allegro_left_hand.urdf": (
        "link_11.0", "finger links 3/7/11 (2.3e-6 + 3.5e-6 < 7.3e-6) and thumb link 15 (8.2e-6 + 2.8e-5 < 4.4e-5)"),
    "allegro_hand_description/urdf/allegro_right_hand.urdf": (
        "link_3.0", "finger links 3/7/11 (2.3e-6 + 3.5e-6 < 7.3e-6) and thumb link 15 (8.2e-6 + 2.8e-5 < 4.4e-5)"),
    "bolt_description/robots/bolt.urdf": ("FL_FOOT", "feet FL_FOOT, FR_FOOT: mass 0 with a non-zero inertia tensor"),
    "hyq_description/robots/hyq_no_sensors.urdf": ("lf_foot", f"the 4 feet: {_DUMMY}"),
    "pr2_description/urdf/pr2.urdf": (
        "sensor_mount_link", "sensor_mount_link, double_stereo_link (on the torso lift): ixx + iyy = 0.002 < izz = 0.01"),
    "romeo_description/urdf/romeo_laas_small.urdf": (
        "LShoulderYaw_link", "LShoulderYaw, LElbowYaw break I1 + I2 >= I3; L/RHipPitch are not PSD (I1 = -2.7e-3)"),
    "romeo_description/urdf/romeo_small.urdf": (
        "RShoulderYawLink", "RShoulderYawLink (6.6e-4 + 6.8e-4 < 6.6e-3), RElbowYawLink (2.1e-4 + 3.5e-4 < 2.1e-3)"),
}


# Known differences beyond TOL, diagnosed (see the report of issue 14): {file id: (quantities, why)}.
# test_known_difference holds them to TOL as strict xfails (a fix turns them into failures: remove the
# entry); test_whole_tree checks every other quantity of those files as usual.
# none: Romeo's fingers (axes 4.4e-8 rad off parallel, common normal 75 km away) were one until the converter
# kept such frames near their joints (urdf_conversion._FAR_FOOT); keep the mechanism for a future file
KNOWN_DIFFERENCES: dict[str, tuple[tuple[str, ...], str]] = {}


# ---------------------------------------------------------------- discovery
@dataclass(frozen=True)
class RobotFile:
    """One example-robot-data URDF: path relative to the robots folder, test id, conversion flag."""

    rel: str
    path: Path
    id: str
    allow_inconsistent_inertia: bool


def all_urdf_files() -> list[Path]:
    """Every ``*.urdf`` under ``example_robot_data_dir()``, sorted."""
    return sorted(example_robot_data_dir().rglob("*.urdf"))


def _ids(rels: list[str]) -> dict[str, str]:
    """Test id of each file: its stem, prefixed with its package (minus ``_description``) when stems repeat."""
    stems = [Path(r).stem for r in rels]
    out = {}
    for r, s in zip(rels, stems, strict=True):
        pkg = Path(r).parts[0].removesuffix("_description")
        out[r] = s if stems.count(s) == 1 else f"{pkg}.{s}"
    return out


def robot_files() -> list[RobotFile]:
    """The files compared: all URDFs minus :data:`EXCLUDED` (cheap: no parsing, usable at collection time)."""
    root = example_robot_data_dir()
    rels = [p.relative_to(root).as_posix() for p in all_urdf_files()]
    ids = _ids(rels)
    return [RobotFile(r, root / r, ids[r], r in INCONSISTENT_INERTIA) for r in rels if r not in EXCLUDED]


def pinocchio_exclusion(path: Path) -> str | None:
    """Why Pinocchio's fixed-base model of ``path`` cannot be compared (None: it can)."""
    try:
        model = pin.buildModelFromUrdf(str(path))
    except (ValueError, RuntimeError) as exc:
        return f"Pinocchio cannot load it: {exc}"
    return None if model.nv > 0 else "no moving joint (Pinocchio nv = 0)"


def convert(rf: RobotFile, **kw: object) -> RobotModel:
    """Our whole-tree model of ``rf`` (inconsistent-inertia warnings silenced for the listed files)."""
    with warnings.catch_warnings():
        if rf.allow_inconsistent_inertia:
            warnings.filterwarnings("ignore", message=".*physically inconsistent.*")
        return RobotModel.from_urdf(str(rf.path), allow_inconsistent_inertia=rf.allow_inconsistent_inertia, **kw)


# ---------------------------------------------------------------- model pairs
def rel_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """Relative error of a batch (states first): the larger of

    * ``max|ours − ref| / max|ref|`` over the whole batch (absolute if ``ref`` is identically 0): scale-free,
      so a hand's 0.05 N·m torques are judged as strictly as a torso's 500 N·m, and an entry that is
      structurally ~0 (gravity on a vertical axis) does not turn round-off into a large ratio;
    * the per-state ``max|ours − ref| / max(1, max|ref|)`` of the issue's acceptance, max over states.
    """
    n = ref.shape[0]
    d = np.abs(np.asarray(ours) - ref).reshape(n, -1)
    r = np.abs(ref).reshape(n, -1)
    scale = float(r.max())
    whole = float(d.max()) / scale if scale > 0 else float(d.max())
    per_state = float((d.max(axis=1) / np.maximum(1.0, r.max(axis=1))).max())
    return max(whole, per_state)


def symmetrized_upper(m: np.ndarray) -> np.ndarray:
    """Full symmetric matrix from the upper triangle that ``pin.crba`` fills."""
    u = np.triu(m)
    return u + np.triu(u, 1).T


class TreePair:
    """Our model and a Pinocchio model of the same robot, joints matched by URDF name.

    Pinocchio's ``q`` holds a continuous joint as (cos, sin) at ``idx_q``; velocities and efforts are at
    ``idx_v``.  ``iv[k]`` is the Pinocchio velocity index of our joint k."""

    def __init__(self, ours: RobotModel, model: pin.Model) -> None:
        self.ours, self.model = ours, model
        names = ours.joint_names
        self.jid = np.array([model.getJointId(n) for n in names], dtype=int)
        missing = [n for n, i in zip(names, self.jid, strict=True) if i >= model.njoints]
        if missing:
            raise AssertionError(f"joints of ours not in Pinocchio's model: {missing}")
        joints = [model.joints[int(i)] for i in self.jid]
        self.iq = np.array([j.idx_q for j in joints], dtype=int)
        self.iv = np.array([j.idx_v for j in joints], dtype=int)
        self.unbounded = np.array([j.nq == 2 for j in joints], dtype=bool)
        self.data = model.createData()

    def pin_joint_names(self) -> list[str]:
        """Pinocchio's moving joints (its joint 0 is the universe)."""
        return [self.model.names[i] for i in range(1, self.model.njoints) if self.model.joints[i].nv > 0]

    def pin_parent_names(self) -> list[str]:
        """Pinocchio's parent joint of each of our joints ('' for the base): the tree topology."""
        par = [self.model.parents[int(i)] for i in self.jid]
        return ["" if p == 0 else self.model.names[p] for p in par]

    def pin_q(self, q: np.ndarray) -> np.ndarray:
        """(N, n) URDF joint values -> (N, nq) Pinocchio configurations."""
        out = np.tile(pin.neutral(self.model), (q.shape[0], 1))
        b = self.unbounded
        out[:, self.iq[~b]] = q[:, ~b]
        out[:, self.iq[b]] = np.cos(q[:, b])
        out[:, self.iq[b] + 1] = np.sin(q[:, b])
        return out

    def pin_v(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros((v.shape[0], self.model.nv))
        out[:, self.iv] = v
        return out

    def from_pin_v(self, v: np.ndarray) -> np.ndarray:
        """(N, nv) Pinocchio velocity-space vectors (efforts, accelerations) -> (N, n) in our joint order."""
        return v[:, self.iv]

    def random_states(self, rng: np.random.Generator, n_states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q uniform within the URDF limits where both are finite (else in [-π, π]); q̇, q̈ uniform in [-2, 2]."""
        lim = self.ours.limits
        lo, up = lim["lower"].copy(), lim["upper"].copy()
        free = ~(np.isfinite(lo) & np.isfinite(up))
        lo[free], up[free] = -math.pi, math.pi
        n = self.ours.dof
        q = lo + (up - lo) * rng.random((n_states, n))
        return q, rng.uniform(-2.0, 2.0, (n_states, n)), rng.uniform(-2.0, 2.0, (n_states, n))


def friction(model: RobotModel, qd: np.ndarray) -> np.ndarray:
    """Fv q̇ + Fc sign(q̇): the URDF damping/friction terms of our model, absent from Pinocchio's rnea."""
    return model.Fv * qd + model.Fc * np.sign(qd)


def random_consistent_inertia(rng: np.random.Generator) -> pin.Inertia:
    """A physically consistent body: mass in [0.1, 5], COM in [-0.3, 0.3]^3, principal moments in
    [0.005, 0.5] satisfying the triangle inequality, principal axes a random rotation."""
    a, b = rng.uniform(0.005, 0.5, 2)
    c = rng.uniform(abs(a - b), a + b)
    rot = pin.Quaternion(*rng.normal(size=4)).normalized().toRotationMatrix()
    inertia = rot @ np.diag([a, b, c]) @ rot.T
    return pin.Inertia(float(rng.uniform(0.1, 5.0)), rng.uniform(-0.3, 0.3, 3), inertia)


def standard_row(body: pin.Inertia, link_in_frame: np.ndarray) -> np.ndarray:
    """Our XX XY XZ YY YZ ZZ MX MY MZ M of a Pinocchio body (expressed in its link frame) moved to R_j."""
    t = link_in_frame
    m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = pin.SE3(t[:3, :3], t[:3, 3]).act(body).toDynamicParameters()
    return np.array([ixx, ixy, ixz, iyy, iyz, izz, mx, my, mz, m])


@dataclass
class Errors:
    """Max relative errors of one comparison (:func:`rel_error`); NaN where not computed.

    ``pose``: poses of every URDF link (:func:`pose_error`), the kinematics everything else rests on.
    ``fd_cholesky``/``fd_recursive`` are in torque space: ``M_pin (q̈_ours − q̈_pin)`` against the applied
    τ net of friction (the backward error of forward dynamics, what round-off can guarantee whatever κ(M));
    ``fd_forward`` is the plain relative error of q̈ (both methods), bounded by about κ(M) times the former,
    reported with ``cond`` = max κ(M) over the states.  ``fd_locked``: joints locked (massless subtrees:
    M singular, forward dynamics undefined) in the forward-dynamics comparison."""

    pose: float = math.nan
    tau: float = math.nan
    mass: float = math.nan
    grav: float = math.nan
    fd_cholesky: float = math.nan
    fd_recursive: float = math.nan
    regressor: float = math.nan
    regressor_random: float = math.nan
    fd_forward: float = math.nan
    cond: float = math.nan
    fd_locked: list[str] = field(default_factory=list)

    CHECKED = ("pose", "tau", "mass", "grav", "fd_cholesky", "fd_recursive", "regressor", "regressor_random")

    def checked(self) -> dict[str, float]:
        """The errors held to :data:`TOL` (NaN: not computed)."""
        return {k: getattr(self, k) for k in self.CHECKED}

    def worst(self) -> float:
        v = [x for x in self.checked().values() if not math.isnan(x)]
        return max(v) if v else math.nan


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


def _pin_batch(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """``fn`` (a Pinocchio call on one state) over the states of ``arrays``, stacked."""
    return np.array([np.array(fn(*(a[s] for a in arrays))) for s in range(arrays[0].shape[0])])


def massless_joints(pair: TreePair, n_states: int = 3, seed: int = 0) -> list[str]:
    """Our joints whose diagonal of Pinocchio's M(q) is 0 (nothing with mass moves with them)."""
    rng = np.random.default_rng(seed)
    q, _, _ = pair.random_states(rng, n_states)
    qp = pair.pin_q(q)
    diag = np.array([np.diag(pin.crba(pair.model, pair.data, x)) for x in qp])
    diag = pair.from_pin_v(np.abs(diag)).max(axis=0)
    return [n for n, d in zip(pair.ours.joint_names, diag, strict=True) if d <= 1e-15 * diag.max()]


def pose_error(pair: TreePair, q: np.ndarray) -> float:
    """Max over states and URDF links of max(|ΔR|, |Δp| / L) between our link poses and Pinocchio's
    body frames, L the largest link distance from the base over the batch (the robot's size)."""
    ours, model, data = pair.ours, pair.model, pair.data
    links = [k for k in ours.frames if model.existFrame(k, pin.BODY)]
    fids = [model.getFrameId(k, pin.BODY) for k in links]
    frames = ours.link_frames(q)
    mine = np.stack([ours.base_transform @ frames[:, j] @ t for j, t in (ours.frames[k] for k in links)], axis=1)
    ref = np.empty_like(mine)
    for s, x in enumerate(pair.pin_q(q)):
        pin.framesForwardKinematics(model, data, x)
        ref[s] = [data.oMf[f].homogeneous for f in fids]
    size = float(np.linalg.norm(ref[..., :3, 3], axis=-1).max()) or 1.0
    d = np.abs(mine - ref)
    return max(float(d[..., :3, :3].max()), float(d[..., :3, 3].max()) / size)


def compare(pair: TreePair, n_states: int = N_STATES, seed: int = 0, chunk: int = 25) -> Errors:
    """Our model vs Pinocchio's at ``n_states`` random states: τ, M, gravity, the regressor with the URDF
    parameters and with random consistent ones, and (see :func:`compare_fd`) forward dynamics.  Our calls
    are batched (``chunk`` states at a time for the regressor, an (N, n, 13n) array)."""
    ours, model, data = pair.ours, pair.model, pair.data
    rng = np.random.default_rng(seed)
    q, qd, qdd = pair.random_states(rng, n_states)
    qp, vp, ap = pair.pin_q(q), pair.pin_v(qd), pair.pin_v(qdd)
    fr = friction(ours, qd)
    tau_ref = pair.from_pin_v(_pin_batch(lambda a, b, c: pin.rnea(model, data, a, b, c), qp, vp, ap))
    m_ref = _pin_batch(lambda a: symmetrized_upper(pin.crba(model, data, a)), qp)[:, pair.iv][:, :, pair.iv]
    g_ref = pair.from_pin_v(_pin_batch(lambda a: pin.computeGeneralizedGravity(model, data, a), qp))
    err = Errors(
        pose=pose_error(pair, q),
        tau=rel_error(ours.inverse_dynamics(q, qd, qdd) - fr, tau_ref),
        mass=rel_error(ours.inertia_matrix(q), m_ref),
        grav=rel_error(ours.gravity_torques(q), g_ref),
    )
    # regressor: the URDF parameters, and random consistent inertias + armature given to every Pinocchio body
    rmodel = model.copy()
    p_rand = ours.standard_parameter_values.reshape(ours.dof, 13).copy()
    for k, (jt, i) in enumerate(zip(ours.joints, pair.jid, strict=True)):
        body = random_consistent_inertia(rng)
        rmodel.inertias[int(i)] = body
        p_rand[k, :10] = standard_row(body, ours.frames[jt.link][1])
    arm = rng.uniform(0.0, 0.5, ours.dof)
    rmodel.armature[pair.iv] = arm
    p_rand[:, 10] = arm
    rdata = rmodel.createData()
    rt_ref = pair.from_pin_v(_pin_batch(lambda a, b, c: pin.rnea(rmodel, rdata, a, b, c), qp, vp, ap))
    p_urdf = ours.standard_parameter_values
    w_urdf, w_rand = np.empty_like(tau_ref), np.empty_like(tau_ref)
    for s in range(0, n_states, chunk):
        w = ours.regressor(q[s : s + chunk], qd[s : s + chunk], qdd[s : s + chunk])
        w_urdf[s : s + chunk] = w @ p_urdf
        w_rand[s : s + chunk] = w @ p_rand.ravel()
    err.regressor = rel_error(w_urdf, tau_ref + fr)
    err.regressor_random = rel_error(w_rand, rt_ref + fr)
    return err


def compare_fd(pair: TreePair, err: Errors, n_states: int = N_STATES, seed: int = 0) -> Errors:
    """Forward dynamics of both methods vs ``pin.aba`` into ``err``: τ = ``pin.rnea(q, q̇, q̈)`` + friction
    is applied to ours, τ net of friction to Pinocchio's (so both should return q̈)."""
    ours, model, data = pair.ours, pair.model, pair.data
    q, qd, qdd = pair.random_states(np.random.default_rng(seed + 1), n_states)
    qp, vp, ap = pair.pin_q(q), pair.pin_v(qd), pair.pin_v(qdd)
    tp = _pin_batch(lambda a, b, c: pin.rnea(model, data, a, b, c), qp, vp, ap)
    a_ref = pair.from_pin_v(_pin_batch(lambda a, b, c: pin.aba(model, data, a, b, c), qp, vp, tp))
    m_ref = _pin_batch(lambda a: symmetrized_upper(pin.crba(model, data, a)), qp)[:, pair.iv][:, :, pair.iv]
    tau_net = pair.from_pin_v(tp)
    tau = tau_net + friction(ours, qd)
    fwd = []
    for method in ("cholesky", "recursive"):
        a = ours.forward_dynamics(q, qd, tau, method=method)
        setattr(err, f"fd_{method}", rel_error(tau_net + np.einsum("sij,sj->si", m_ref, a - a_ref), tau_net))
        fwd.append(rel_error(a, a_ref))
    err.fd_forward = max(fwd)
    err.cond = float(np.linalg.cond(m_ref).max())
    return err


@dataclass
class WholeResult:
    rf: RobotFile
    dof: int
    errors: Errors
    convert_ms: tuple[float, float] = (math.nan, math.nan)


def whole_pair(rf: RobotFile) -> TreePair:
    return TreePair(convert(rf), pin.buildModelFromUrdf(str(rf.path)))


def fd_pair(rf: RobotFile, pair: TreePair) -> TreePair:
    """The pair forward dynamics is compared on: the whole tree, or, when some joints carry no mass (M
    singular), the tree with those joints locked at 0 (clipped into the limits) on both sides."""
    massless = massless_joints(pair)
    if not massless:
        return pair
    lim = pair.ours.limits
    idx = {n: k for k, n in enumerate(pair.ours.joint_names)}
    lock = {n: float(np.clip(0.0, lim["lower"][idx[n]], lim["upper"][idx[n]])) for n in massless}
    ours = convert(rf, locked_positions=lock)
    return TreePair(ours, reduced_reference(rf.path, ours.locked_joints))


def whole_result(rf: RobotFile, n_states: int = N_STATES) -> WholeResult:
    """All comparisons of one file's whole tree (see :func:`compare`, :func:`compare_fd`)."""
    pair = whole_pair(rf)
    err = compare(pair, n_states=n_states, seed=seed_of(rf.id))
    fdp = fd_pair(rf, pair)
    err.fd_locked = sorted(fdp.ours.locked_joints)
    compare_fd(fdp, err, n_states=n_states, seed=seed_of(rf.id))
    return WholeResult(rf, pair.ours.dof, err)


def conversion_ms(rf: RobotFile, repeats: int = 5) -> tuple[float, float]:
    """(min, median) wall time of ``from_urdf`` in ms over ``repeats`` runs (file read and parse included)."""
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        convert(rf)
        ts.append(1e3 * (time.perf_counter() - t0))
    return min(ts), statistics.median(ts)


# ---------------------------------------------------------------- chains with locked branches
@dataclass(frozen=True)
class ChainCase:
    """A chain base -> ``tip`` of one file; every other off-chain moving joint gets a random lock value."""

    rel: str
    tip: str

    @property
    def id(self) -> str:
        return f"{Path(self.rel).stem}->{self.tip}"


CHAINS: list[ChainCase] = [
    ChainCase("panda_description/urdf/panda.urdf", "panda_hand"),
    ChainCase("pr2_description/urdf/pr2.urdf", "r_gripper_palm_link"),
    ChainCase("pr2_description/urdf/pr2.urdf", "l_wrist_roll_link"),
    ChainCase("tiago_description/robots/tiago.urdf", "arm_tool_link"),
    ChainCase("tiago_pro_description/robots/tiago_pro.urdf", "arm_left_tool_link"),
    ChainCase("z1_description/urdf/z1.urdf", "gripperStator"),
    ChainCase("so_arm_description/urdf/so100.urdf", "gripper"),
    ChainCase("so_arm_description/urdf/so101.urdf", "gripper_link"),
    ChainCase("icub_description/robots/icub.urdf", "l_hand"),
    ChainCase("talos_data/robots/talos_full_v2.urdf", "gripper_left_base_link"),
    ChainCase("baxter_description/urdf/baxter.urdf", "right_gripper"),
    ChainCase("ur_description/urdf/ur5_gripper.urdf", "tool0"),
    ChainCase("b1_description/urdf/b1-z1.urdf", "gripperStator"),
    ChainCase("anymal_b_simple_description/robots/anymal-kinova.urdf", "j2s6s200_end_effector"),
    ChainCase("centauro_description/urdf/centauro.urdf", "arm1_8"),
]


@dataclass
class ChainResult:
    """Our chain (``joints``, ``locked``) against what Pinocchio's whole model implies (``expected_*``)."""

    case: ChainCase
    joints: list[str]
    locked: dict[str, float]
    expected_chain: list[str]
    expected_locked: dict[str, float]
    given: dict[str, float]
    errors: Errors


def _file(rel: str) -> RobotFile:
    return next(rf for rf in robot_files() if rf.rel == rel)


def reduced_reference(path: Path, locked: dict[str, float]) -> pin.Model:
    """``PinocchioURDF(path, locked=locked).model`` (``pin.buildReducedModel``).

    Pinocchio 4.1's ``buildReducedModel`` looks a locked joint's frame up by name alone and fails
    ("Several frames match the filter") when a link has the same name as the joint (SO-100: joint and
    link 'gripper'); for those files the link's BODY frame is renamed during the reduction, then restored."""
    try:
        return PinocchioURDF(path, locked=locked).model
    except ValueError as exc:
        if "Several frames match" not in str(exc):
            raise
    full = pin.buildModelFromUrdf(str(path))
    clash = {i: f.name for i, f in enumerate(full.frames) if f.type == pin.BODY and f.name in set(full.names)}
    for i, name in clash.items():
        f = full.frames[i]
        f.name = f"{name}#body"
        full.frames[i] = f
    q_ref = pin.neutral(full)
    for name, v in locked.items():
        jm = full.joints[full.getJointId(name)]
        q_ref[jm.idx_q : jm.idx_q + jm.nq] = (np.cos(v), np.sin(v)) if jm.nq == 2 else v
    model = pin.buildReducedModel(full, [full.getJointId(k) for k in locked], q_ref)
    for i, f in enumerate(model.frames):
        if f.type == pin.BODY and f.name.endswith("#body"):
            f.name = f.name.removesuffix("#body")
            model.frames[i] = f
    return model


def chain_result(case: ChainCase, n_states: int = N_STATES) -> ChainResult:
    """Our chain model with locked branches vs ``PinocchioURDF(path, locked=model.locked_joints)``.

    The expected chain (Pinocchio's joints supporting the tip link's parent joint) and the expected
    locked joints and values (Pinocchio's other moving joints, at the given value or 0 clipped into
    Pinocchio's limits) come from Pinocchio's whole model; every other off-chain joint, in Pinocchio's
    order, is given a random value within its limits (continuous, unlimited: [-π, π])."""
    rf = _file(case.rel)
    full = pin.buildModelFromUrdf(str(rf.path))
    frame = full.frames[full.getFrameId(case.tip, pin.BODY)]
    chain_ids = [i for i in full.supports[frame.parentJoint] if i > 0]
    off_chain = [full.names[i] for i in range(1, full.njoints) if i not in chain_ids]
    rng = np.random.default_rng(seed_of(case.id))
    given = {}
    for name in off_chain[::2]:
        lo, up = _pin_limits(full, name)
        if not (math.isfinite(lo) and math.isfinite(up)):
            lo, up = -math.pi, math.pi
        given[name] = float(rng.uniform(lo, up))
    expected_locked = {}
    for name in off_chain:
        lo, up = _pin_limits(full, name)
        expected_locked[name] = given.get(name, min(max(0.0, lo), up))
    ours = convert(rf, tip_link=case.tip, locked_positions=given)
    pair = TreePair(ours, reduced_reference(rf.path, ours.locked_joints))
    errors = compare(pair, n_states=n_states, seed=seed_of(case.id))
    compare_fd(pair, errors, n_states=n_states, seed=seed_of(case.id))
    return ChainResult(case, ours.joint_names, dict(ours.locked_joints), [full.names[i] for i in chain_ids],
                       expected_locked, given, errors)


def _pin_limits(model: pin.Model, name: str) -> tuple[float, float]:
    """Position limits of a joint in Pinocchio's model ((-inf, inf) for a continuous joint)."""
    jm = model.joints[model.getJointId(name)]
    if jm.nq == 2:
        return -math.inf, math.inf
    return float(model.lowerPositionLimit[jm.idx_q]), float(model.upperPositionLimit[jm.idx_q])
