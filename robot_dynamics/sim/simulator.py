"""A MuJoCo plant built from a :class:`RobotModel` (the only core module importing mujoco).

The MJCF is generated from the MDH table itself, so the simulated arm has exactly
the model's geometry and standard inertial parameters:

* body j is nested in body a(j) with the constant part of ^{a(j)}T_j
  (002 eq. 3.2: Rot(x, alpha) Trans(x, d) Rot(z, theta) Trans(z, r) at q = 0, preceded
  by Rot(z, gamma) Trans(z, b) for a tree row), so a kinematic tree nests its bodies by antecedent;
  its frame is the MDH frame R_j.  Because Rot(z) and Trans(z) commute, the hinge
  (slide) joint along ``(0, 0, sign_j)`` at the body origin reproduces
  ^{a(j)}T_j(q) with MuJoCo ``qpos`` equal to the URDF joint value.  MuJoCo numbers the
  joints in the depth-first order of the nested bodies; :class:`MujocoArm` maps its vectors
  to the model's joint order by joint name (the identity for a chain or a tree numbered in
  depth-first pre-order, as ``RobotModel.from_urdf`` does);
* the inertial of body j comes from the standard parameters (001 eq. 7.3):
  ``c = MS / M`` and ``I_c = J_O - M (|c|^2 I - c c^T)``, diagonalised into
  ``diaginertia`` + ``quat``.  MuJoCo rejects moving bodies without mass: a
  massless link gets ``MIN_MASS`` kg and ``MIN_INERTIA`` kg m^2 (documented model
  error ~1e-9, far below the oracle tolerances); principal inertias are clamped to
  ``MIN_INERTIA`` and the triangle inequality is enforced (``physically_consistent``; these
  inertial helpers live in :mod:`robot_dynamics.model.inertia` and are re-exported here);
* ``damping = Fv`` (viscous), ``armature = Ia`` (rotor inertia, 001 §7.3.3); the rotor inertia matrix of a
  coupled transmission (:mod:`robot_dynamics.model.transmission`; the model's diag(Ia) + I_c) is exact in
  the plant too: each motor k with J_mk > 0 is a fixed tendon of length q_mk = Σ_j (J_qm⁻¹)_kj q_j with
  ``armature = J_mk`` (kinetic energy ½ J_mk q̇_mk², i.e. J_mk r_k r_kᵀ in the joint-space inertia, r_k the row k
  of J_qm⁻¹: together J_qm⁻ᵀ diag(J_m) J_qm⁻¹), and the joints keep ``armature = Ia − diag(J_qm⁻ᵀ diag(J_m) J_qm⁻¹)``
  (zero when ``Ia`` came from the transmission, :meth:`RobotModel.with_transmission`); the
  Coulomb friction ``Fc`` is either the exact model law ``−Fc sign(q̇)`` of 001
  eq. 7.61, applied as a generalized force refreshed at every step
  (``coulomb="sign"``, default: plant and model agree), or MuJoCo's soft dry-friction
  constraint ``frictionloss = Fc`` (``coulomb="frictionloss"``: stiction, no chattering);
* the optional friction terms of the model (``Foff``, Stribeck ``Fs``/``vs``, 001 eq. 7.26, see
  :mod:`robot_dynamics.model.robot_model`) are applied as a generalized force refreshed at every step:
  ``coulomb="sign"``: −[Fc sign(q̇) + (Fs − Fc) sign(q̇) exp(−|q̇|/vs) + Foff], and a joint with a
  Stribeck term sticks (Karnopp): while ``|q̇| < stiction_velocity`` its friction is the effort, bounded
  by ``|Fs|``, that brings q̇ to zero at the end of the step (through the joint-space inertia of the
  stuck joints), so an effort below Fs does not move it; ``coulomb="frictionloss"``: MuJoCo's
  ``frictionloss = Fs`` (stiction up to Fs) and the applied rest
  −[(Fc − Fs) sign(q̇)(1 − exp(−|q̇|/vs)) + Foff], the same law in motion.  Without these terms the
  plant is exactly what it was (no extra computation per step);
* a ``motor`` actuator per joint with gear 1 and ``ctrlrange`` = effort limits, so the
  control input is the URDF joint effort, saturated by the plant;
* gravity = ``model.gravity`` (expressed in base_link = the MuJoCo world frame),
  contacts disabled, joint limits not enforced, timestep 1 ms by default.

Elastic joints (``elastic=ElasticJoints(...)``, 001 §7.3.8 eqs. 7.34–7.35, see
:mod:`robot_dynamics.dynamics.elastic`): each link joint gets a motor, a separate body attached to the
world with a hinge ``<name>_motor`` whose coordinate is the rotor position q_M reflected to the joint
side (URDF units; a hinge even for a prismatic link joint, its centre of mass on the axis, so no gravity
acts on it), inertia I_a = ``motor_inertia`` about its axis (``diaginertia``, no armature), viscous
``damping = motor_damping`` and Coulomb ``motor_coulomb`` (as the link's Fc: ``coulomb="sign"`` applied
per step, ``"frictionloss"`` MuJoCo's constraint).  The spring is a fixed tendon of length q − q_M with
``stiffness = k`` and rest length 0: MuJoCo's passive force −k (q − q_M) on the link and +k (q − q_M) on
the motor (7.34), evaluated at every integrator stage like the rest of the dynamics.  The link joints keep
their friction (7.35a) and lose their armature (the rotor inertia is on the motor side); the actuators
drive the motor joints.  Without ``elastic`` the MJCF is exactly the rigid one.  :class:`MujocoArm`
refuses a spring whose frequency against the motor, sqrt(k / I_a), times the time step exceeds
``MAX_SPRING_STEP`` (the explicit integrators would be unstable or far off).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import mujoco
import numpy as np

from ..dynamics.elastic import ElasticJoints
from ..model.inertia import (  # the inertial algebra lives with the model; re-exported here for existing callers
    MIN_INERTIA,
    central_inertia,
    inertia_tensor,
    perturbed,
    physically_consistent,
    standard_row,
    with_payload,
)
from ..model.mdh import PRISMATIC, mdh_transform
from ..model.robot_model import RobotModel

MIN_MASS = 1e-9
MAX_SPRING_STEP = 2.0  # largest sqrt(k / I_a) * timestep of an elastic plant (module docstring)
COULOMB_MODES = ("sign", "frictionloss")
INTEGRATORS = {"RK4": "RK4", "implicitfast": "implicitfast", "implicit": "implicit", "Euler": "Euler"}


# ----------------------------------------------------------------------- MJCF
def _fmt(v: Any) -> str:
    return " ".join(repr(float(x)) for x in np.ravel(v))


def _quat(rot: np.ndarray) -> np.ndarray:
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot, float).ravel())
    return q


def model_to_mjcf(
    model: RobotModel,
    *,
    timestep: float = 0.001,
    integrator: str = "RK4",
    friction: bool = True,
    armature: bool = True,
    effort_limits: bool = True,
    coulomb: str = "sign",
    elastic: ElasticJoints | None = None,
) -> str:
    """MJCF text of ``model`` (see the module docstring for the mapping); ``elastic``: the elastic-joint plant
    (``armature`` then does not apply: the rotor inertia is the motor's)."""
    if coulomb not in COULOMB_MODES:
        raise ValueError(f"coulomb must be one of {COULOMB_MODES}, got {coulomb!r}")
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {sorted(INTEGRATORS)}, got {integrator!r}")
    if not (np.isfinite(timestep) and timestep > 0.0):
        raise ValueError(f"timestep must be > 0, got {timestep}")
    n = model.dof
    ela = None if elastic is None else elastic.resolve(model)
    names = set(model.joint_names)
    if ela is not None and any(motor_joint_name(nm) in names for nm in names):
        raise ValueError("a model joint is named like a motor joint (<joint>_motor): rename it to simulate elastic joints")
    children: dict[int, list[int]] = {j: [] for j in range(n + 1)}
    for j in range(1, n + 1):
        children[int(model.antecedent[j - 1])].append(j)
    lim = model.limits
    # a coupled transmission: its rotors as fixed tendons with armature (module docstring), the joints the rest
    rotors = model.transmission if armature and model.has_rotor_coupling else None
    if rotors is not None and ela is not None:
        raise ValueError("an elastic-joint plant with a coupled transmission is not supported (the motors of 7.34 "
                         "drive one joint each): give the elastic plant uncoupled rotor inertias")
    joint_armature = np.asarray(model.Ia, float)
    if rotors is not None:
        joint_armature = joint_armature - np.diag(rotors.rotor_inertia_matrix())

    def body(j: int, indent: str) -> list[str]:
        jt = model.joints[j - 1]
        t0 = mdh_transform(jt.alpha, jt.d, jt.theta, jt.r, jt.gamma, jt.b)
        m, c, ic = central_inertia(model.inertial[j - 1])
        if m < MIN_MASS:
            m, c, ic = MIN_MASS, np.zeros(3), np.eye(3) * MIN_INERTIA
        lam, vec = physically_consistent(ic)
        kind = "slide" if jt.sigma == PRISMATIC else "hinge"
        jattr = [f'name="{jt.name}"', f'type="{kind}"', f'axis="0 0 {jt.sign:+.0f}"', 'limited="false"']
        if friction:
            jattr.append(f'damping="{float(model.Fv[j - 1])!r}"')
            if coulomb == "frictionloss":
                # static friction Fs of a Stribeck joint (001 eq. 7.26), else Fc
                loss = model.Fs[j - 1] if model.vs[j - 1] > 0.0 else model.Fc[j - 1]
                jattr.append(f'frictionloss="{float(loss)!r}"')
        if armature and ela is None:
            jattr.append(f'armature="{float(joint_armature[j - 1])!r}"')
        lines = [
            f'{indent}<body name="link{j}_{jt.link or jt.name}" pos="{_fmt(t0[:3, 3])}" quat="{_fmt(_quat(t0[:3, :3]))}">',
            f'{indent}  <joint {" ".join(jattr)}/>',
            f'{indent}  <inertial pos="{_fmt(c)}" quat="{_fmt(_quat(vec))}" mass="{m!r}" diaginertia="{_fmt(lam)}"/>',
        ]
        for k in children[j]:
            lines += body(k, indent + "  ")
        lines.append(f"{indent}</body>")
        return lines

    bt = model.base_transform
    out = [
        f'<mujoco model="{model.name}">',
        '  <compiler angle="radian" autolimits="true"/>',
        f'  <option timestep="{timestep!r}" integrator="{INTEGRATORS[integrator]}" gravity="{_fmt(model.gravity)}">',
        '    <flag contact="disable"/>',
        "  </option>",
        "  <worldbody>",
        f'    <body name="R0" pos="{_fmt(bt[:3, 3])}" quat="{_fmt(_quat(bt[:3, :3]))}">',
    ]
    for k in children[0]:
        out += body(k, "      ")
    out.append("    </body>")
    if ela is not None:  # one motor body per joint, attached to the world (module docstring)
        for j, jt in enumerate(model.joints):
            mattr = [f'name="{motor_joint_name(jt.name)}"', 'type="hinge"', 'axis="0 0 1"', 'limited="false"']
            if friction:
                mattr.append(f'damping="{float(ela.motor_damping[j])!r}"')
                if coulomb == "frictionloss":
                    mattr.append(f'frictionloss="{float(ela.motor_coulomb[j])!r}"')
            jm = float(ela.motor_inertia[j])
            out += [f'    <body name="motor{j + 1}_{jt.name}">', f'      <joint {" ".join(mattr)}/>',
                    f'      <inertial pos="0 0 0" mass="1.0" diaginertia="{jm!r} {jm!r} {jm!r}"/>', "    </body>"]
    out.append("  </worldbody>")
    if rotors is not None or ela is not None:
        out.append("  <tendon>")
    if rotors is not None:
        for k, jm in enumerate(rotors.motor_inertia):
            if jm > 0.0:
                r = rotors.inverse_jacobian[k]
                out.append(f'    <fixed name="rotor{k + 1}" armature="{float(jm)!r}">')
                out += [f'      <joint joint="{jt.name}" coef="{float(r[j])!r}"/>'
                        for j, jt in enumerate(model.joints) if r[j] != 0.0]
                out.append("    </fixed>")
    if ela is not None:  # the springs of 7.34: tendon length q − q_M, force −k (q − q_M)
        for j, jt in enumerate(model.joints):
            out += [f'    <fixed name="{jt.name}_spring" stiffness="{float(ela.stiffness[j])!r}" springlength="0">',
                    f'      <joint joint="{jt.name}" coef="1"/>',
                    f'      <joint joint="{motor_joint_name(jt.name)}" coef="-1"/>', "    </fixed>"]
    if rotors is not None or ela is not None:
        out.append("  </tendon>")
    out.append("  <actuator>")
    for j, jt in enumerate(model.joints):
        e = float(lim["effort"][j])
        rng = f' ctrlrange="{-e!r} {e!r}"' if effort_limits and np.isfinite(e) and e > 0 else ' ctrllimited="false"'
        target = jt.name if ela is None else motor_joint_name(jt.name)
        out.append(f'    <motor name="{jt.name}" joint="{target}" gear="1"{rng}/>')
    out += ["  </actuator>", "</mujoco>"]
    return "\n".join(out)


def motor_joint_name(joint: str) -> str:
    """Name of the MuJoCo motor joint of ``joint`` in an elastic plant."""
    return f"{joint}_motor"


# ----------------------------------------------------------------------- plant
class PlantDiverged(RuntimeError):
    """MuJoCo flagged a non-finite or huge control, acceleration, velocity or position (it then resets or
    zeroes it): the closed loop is unstable."""


_BAD = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQPOS,
        mujoco.mjtWarning.mjWARN_BADCTRL)


class PlantState(NamedTuple):
    """Measured plant state in URDF coordinates (unpacks as ``t, q, qd, effort``)."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray


class MotorState(NamedTuple):
    """Measured motor state of an elastic plant, joint side, URDF coordinates: θ = q_M and θ̇ = q̇_M."""

    theta: np.ndarray
    thetad: np.ndarray


class MujocoArm:
    """MuJoCo simulation of a :class:`RobotModel` driven by joint efforts (URDF coordinates).

    ``model`` is the true plant (pass :func:`perturbed` / :func:`with_payload` copies to
    simulate model error); ``noise_q``/``noise_qd`` are the standard deviations of the
    Gaussian noise added by :meth:`state` (and :meth:`motor_state`).

    ``elastic``: the elastic-joint plant of 001 §7.3.8 (module docstring): :meth:`state` gives the link
    state, :meth:`motor_state` the motor state (θ, θ̇), :meth:`step` drives the motors.
    """

    def __init__(
        self,
        model: RobotModel,
        *,
        timestep: float = 0.001,
        integrator: str = "RK4",
        friction: bool = True,
        armature: bool = True,
        coulomb: str = "sign",
        payload: tuple[float, Any] | None = None,
        noise_q: float = 0.0,
        noise_qd: float = 0.0,
        rng: np.random.Generator | int | None = None,
        stiction_velocity: float = 1e-4,
        elastic: ElasticJoints | None = None,
    ) -> None:
        if payload is not None:
            model = with_payload(model, float(payload[0]), payload[1])
        if not (noise_q >= 0.0 and noise_qd >= 0.0 and np.isfinite(noise_q) and np.isfinite(noise_qd)):
            raise ValueError("noise standard deviations must be finite and >= 0")
        self.model = model
        self.elastic = None if elastic is None else elastic.resolve(model)
        if self.elastic is not None:  # explicit integrators lose an oscillator beyond ω h ≈ 2 (RK4: 2.8)
            w = self.elastic.natural_frequencies  # sqrt(k / I_a) <= the joint's two-mass frequency
            if np.any(w * timestep > MAX_SPRING_STEP):
                j = int(np.argmax(w))
                raise ValueError(f"joint {model.joint_names[j]!r}: the motor-spring frequency sqrt(k / I_a) = {w[j]:.4g} rad/s "
                                 f"is too high for the time step {timestep:g} s (ω h = {w[j] * timestep:.3g} > "
                                 f"{MAX_SPRING_STEP:g}): lower the stiffness, raise the motor inertia or shorten the step")
        self.mjcf = model_to_mjcf(model, timestep=timestep, integrator=integrator, friction=friction,
                                  armature=armature, coulomb=coulomb, elastic=self.elastic)
        # Coulomb friction applied by step() as −Fc sign(q̇) (001 eq. 7.61)
        self._fc = model.Fc.copy() if friction and coulomb == "sign" and np.any(model.Fc != 0) else None
        # the optional terms (offset, Stribeck) applied by step(), and the joints that stick (module docstring)
        self._extra = friction and model.has_extra_friction
        self._coulomb = coulomb
        self._stick = model._stribeck & (model.Fs != 0.0) if self._extra and coulomb == "sign" else None
        if not (np.isfinite(stiction_velocity) and stiction_velocity >= 0.0):
            raise ValueError("stiction_velocity must be finite and >= 0")
        self.stiction_velocity = float(stiction_velocity)
        self.mj_model = mujoco.MjModel.from_xml_string(self.mjcf)
        self.mj_data = mujoco.MjData(self.mj_model)
        # MuJoCo dof (= qpos, hinge/slide only) index of each model joint: v_model = v_mj[_idx]
        self._idx = np.array([self.mj_model.jnt_dofadr[mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_JOINT,
                                                                          jt.name)] for jt in model.joints], dtype=int)
        self._midx = None if self.elastic is None else np.array(
            [self.mj_model.jnt_dofadr[mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_JOINT, motor_joint_name(jt.name))]
             for jt in model.joints], dtype=int)  # motor dofs (elastic plant)
        # motor Coulomb friction applied by step() as −F_cm sign(q̇_M) (7.35b)
        self._mfc = (self.elastic.motor_coulomb.copy() if self.elastic is not None and friction and coulomb == "sign"
                     and np.any(self.elastic.motor_coulomb != 0) else None)
        self.noise_q = float(noise_q)
        self.noise_qd = float(noise_qd)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        lim = model.limits["effort"]
        self.effort_limit = np.where(np.isfinite(lim) & (lim > 0), lim, np.inf)
        mujoco.mj_forward(self.mj_model, self.mj_data)

    @property
    def dof(self) -> int:
        return self.model.dof

    @property
    def timestep(self) -> float:
        return float(self.mj_model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.mj_data.time)

    def reset(self, q: Any, qd: Any = None, *, time: float = 0.0, theta: Any = None, thetad: Any = None) -> None:
        """Set the state (URDF coordinates) and the time (default 0), zero control.

        Elastic plant: the motor state ``theta``, ``thetad`` (default: θ = q + k⁻¹ Q(q), the motor positions
        holding the links at rest against gravity, and θ̇ = q̇); a rigid plant refuses them."""
        q = self._vec(q, "q")
        qd = np.zeros(self.dof) if qd is None else self._vec(qd, "qd")
        if not np.isfinite(time):
            raise ValueError("time must be finite")
        if self.elastic is None and (theta is not None or thetad is not None):
            raise ValueError("theta/thetad are the motor state of an elastic plant (MujocoArm(..., elastic=...))")
        m, d = self.mj_model, self.mj_data
        mujoco.mj_resetData(m, d)
        d.qpos[self._idx] = q
        if self.elastic is not None:
            if theta is None:  # at rest, the spring torque k (θ − q) balances gravity Q(q) (7.35a)
                d.qpos[self._midx] = q
                mujoco.mj_forward(m, d)
                theta = q + d.qfrc_bias[self._idx] / self.elastic.stiffness
            d.qpos[self._midx] = self._vec(theta, "theta")
            d.qvel[self._midx] = qd if thetad is None else self._vec(thetad, "thetad")
        d.qvel[self._idx] = qd
        d.time = float(time)
        mujoco.mj_forward(m, d)

    def hold(self, n_steps: int = 1) -> None:
        """Holding brake for ``n_steps`` steps: the position is kept exactly, the velocity is zero, the
        control is zero; only time advances (by the same increments as :meth:`step`)."""
        if int(n_steps) < 1:
            raise ValueError("n_steps must be >= 1")
        d = self.mj_data
        d.qvel[:] = 0.0
        d.ctrl[:] = 0.0
        d.qfrc_applied[:] = 0.0
        for _ in range(int(n_steps)):
            d.time += self.mj_model.opt.timestep
        mujoco.mj_forward(self.mj_model, d)

    def holding_effort(self) -> np.ndarray:
        """Joint efforts that keep the arm still at its current position (q̇ = q̈ = 0: gravity), i.e. what a
        holding brake exerts."""
        return self.inverse_dynamics(self.mj_data.qpos[self._idx], np.zeros(self.dof), np.zeros(self.dof))

    def step(self, tau: Any, n_steps: int = 1) -> None:
        """Apply joint efforts ``tau`` (held constant, clipped to the effort limits) for ``n_steps`` steps.

        Raises :class:`PlantDiverged` when MuJoCo flags a bad acceleration/velocity/position.
        """
        tau = self._vec(tau, "tau")
        if int(n_steps) < 1:
            raise ValueError("n_steps must be >= 1")
        self.mj_data.ctrl[:] = np.clip(tau, -self.effort_limit, self.effort_limit)
        before = self._bad_count()
        if self._mfc is not None:  # elastic plant with motor Coulomb friction: forces refreshed at every step
            d = self.mj_data
            for _ in range(int(n_steps)):
                if self._extra:
                    d.qfrc_applied[self._idx] = self._friction_force()
                elif self._fc is not None:
                    d.qfrc_applied[self._idx] = -self._fc * np.sign(d.qvel[self._idx])
                d.qfrc_applied[self._midx] = -self._mfc * np.sign(d.qvel[self._midx])
                mujoco.mj_step(self.mj_model, d)
        elif self._extra:
            for _ in range(int(n_steps)):
                self.mj_data.qfrc_applied[self._idx] = self._friction_force()
                mujoco.mj_step(self.mj_model, self.mj_data)
        elif self._fc is None:
            mujoco.mj_step(self.mj_model, self.mj_data, nstep=int(n_steps))
        else:
            for _ in range(int(n_steps)):
                self.mj_data.qfrc_applied[self._idx] = -self._fc * np.sign(self.mj_data.qvel[self._idx])
                mujoco.mj_step(self.mj_model, self.mj_data)
        if self._bad_count() > before:
            raise PlantDiverged(f"simulation diverged at t = {self.time:.4f} s (MuJoCo reset the state)")

    def servo_step(self, q_cmd: Any, qd_cmd: Any, tau_ff: Any, kp: float, kd: float,
                   n_steps: int = 1, *, bias: bool = True, velocity_limit: Any = np.inf) -> None:
        """``n_steps`` steps under the drive's position/velocity servo (:mod:`robot_dynamics.sim.servo`), its effort
        recomputed at every step from the joint state and the plant's inertia matrix, plus (``bias``) its bias efforts
        h(q, q̇) or else the feed-forward ``tau_ff`` alone (MuJoCo's ``qfrc_bias`` of the step before, one step late;
        its mass matrix at the call's first step)."""
        from .servo import servo_torque

        if self.elastic is not None:
            raise ValueError("a servo drive needs rigid joints (the elastic plant takes motor torques)")
        d, m = self.mj_data, self.mj_model
        full = np.zeros((m.nv, m.nv))
        rows = np.ix_(self._idx, self._idx)
        mujoco.mj_fullM(m, d, full)  # once per call (a control period): the inertia changes slowly
        inertia = full[rows]
        for _ in range(int(n_steps)):
            h = d.qfrc_bias[self._idx] if bias else 0.0
            tau = servo_torque(d.qpos[self._idx], d.qvel[self._idx], q_cmd, qd_cmd, inertia, h, tau_ff, kp, kd,
                               self.effort_limit, velocity_limit)
            self.step(tau, 1)

    def _applied_friction(self, v: np.ndarray) -> np.ndarray:
        """The friction effort (model order) applied as a force in motion: Fc sign(q̇) in ``sign`` mode plus the
        optional terms (001 eq. 7.26 + offset); in ``frictionloss`` mode what MuJoCo's ``frictionloss`` lacks."""
        m = self.model
        out = m.extra_friction(v)
        if self._coulomb == "frictionloss":  # frictionloss = Fs already: (Fs−Fc) sign(q̇) → −(Fs−Fc) sign(q̇)(1 − e)
            out = out - m._fs_fc * np.sign(v)
        elif self._fc is not None:
            out = out + self._fc * np.sign(v)
        return out

    def _friction_force(self) -> np.ndarray:
        """Generalized friction force of this step (model order), with the stuck joints held (Karnopp)."""
        d, mm = self.mj_data, self.mj_model
        v = d.qvel[self._idx]
        f = -self._applied_friction(v)
        if self._stick is None:
            return f
        stuck = self._stick & (np.abs(v) < self.stiction_velocity)
        if not stuck.any():
            return f
        k = np.flatnonzero(stuck)
        f[k] = -self.model.Foff[k]  # the offset acts; the static friction holds against it and the rest
        d.qfrc_applied[self._idx] = f
        mujoco.mj_forward(mm, d)
        dofs = self._idx[k]
        e = np.zeros((k.size, mm.nv))  # one right-hand side per stuck joint (rows: mj_solveM takes [m, nv])
        e[np.arange(k.size), dofs] = 1.0
        x = np.empty_like(e)
        mujoco.mj_solveM(mm, d, x, e)
        minv = x[:, dofs].T  # the stuck joints' block of M^-1
        hold = np.linalg.solve(minv, -v[k] / mm.opt.timestep - d.qacc[dofs])  # q̇(t + h) = 0
        fs = np.abs(self.model.Fs[k])
        f[k] += np.clip(hold, -fs, fs)
        return f

    def _bad_count(self) -> int:
        return sum(int(self.mj_data.warning[w].number) for w in _BAD)

    def state(self, noisy: bool = True) -> PlantState:
        """(t, q, qd, effort); Gaussian measurement noise on q and qd if configured and ``noisy``."""
        q = self.mj_data.qpos[self._idx]
        qd = self.mj_data.qvel[self._idx]
        if noisy and self.noise_q > 0.0:
            q += self.rng.normal(0.0, self.noise_q, self.dof)
        if noisy and self.noise_qd > 0.0:
            qd += self.rng.normal(0.0, self.noise_qd, self.dof)
        return PlantState(self.time, q, qd, self.mj_data.actuator_force.copy())

    def motor_state(self, noisy: bool = True) -> MotorState:
        """(θ, θ̇) = (q_M, q̇_M) of an elastic plant (joint side, URDF coordinates); Gaussian noise of the same
        standard deviations as :meth:`state` if configured and ``noisy``."""
        if self._midx is None:
            raise ValueError("motor_state: this plant has rigid joints (MujocoArm(..., elastic=...))")
        th = self.mj_data.qpos[self._midx]
        thd = self.mj_data.qvel[self._midx]
        if noisy and self.noise_q > 0.0:
            th += self.rng.normal(0.0, self.noise_q, self.dof)
        if noisy and self.noise_qd > 0.0:
            thd += self.rng.normal(0.0, self.noise_qd, self.dof)
        return MotorState(th, thd)

    def accelerations(self, q: Any, qd: Any, tau: Any, theta: Any = None,
                      thetad: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """(q̈, q̈_M) by ``mj_forward`` at a state, under the motor efforts ``tau`` (clipped like :meth:`step`) and the
        friction forces :meth:`step` applies in motion; q̈_M is None for a rigid plant (``theta`` refused)."""
        m = self.mj_model
        d = mujoco.MjData(m)
        qd = self._vec(qd, "qd")
        d.qpos[self._idx] = self._vec(q, "q")
        d.qvel[self._idx] = qd
        if self._midx is None:
            if theta is not None or thetad is not None:
                raise ValueError("theta/thetad are the motor state of an elastic plant (MujocoArm(..., elastic=...))")
        else:
            if theta is None or thetad is None:
                raise ValueError("an elastic plant needs the motor state theta and thetad")
            d.qpos[self._midx] = self._vec(theta, "theta")
            d.qvel[self._midx] = self._vec(thetad, "thetad")
            if self._mfc is not None:
                d.qfrc_applied[self._midx] = -self._mfc * np.sign(d.qvel[self._midx])
        if self._extra or self._fc is not None:
            d.qfrc_applied[self._idx] = -self._applied_friction(qd)
        d.ctrl[:] = np.clip(self._vec(tau, "tau"), -self.effort_limit, self.effort_limit)
        mujoco.mj_forward(m, d)
        return d.qacc[self._idx].copy(), None if self._midx is None else d.qacc[self._midx].copy()

    # ---------------------------------------------------------- oracles
    def inverse_dynamics(self, q: Any, qd: Any, qdd: Any) -> np.ndarray:
        """Joint efforts by ``mj_inverse`` (armature, damping) plus ``Fc sign(q̇)`` in ``coulomb="sign"`` mode and the
        optional friction terms applied by :meth:`step` (in motion).  Elastic plant: the link-side efforts
        (the spring torque τ_J of 7.35a, no rotor inertia), the motors moving with the links."""
        d = mujoco.MjData(self.mj_model)
        qd = self._vec(qd, "qd")
        d.qpos[self._idx] = self._vec(q, "q")
        d.qvel[self._idx] = qd
        d.qacc[self._idx] = self._vec(qdd, "qdd")
        if self._midx is not None:  # no spring deflection: the tendon force is zero
            d.qpos[self._midx] = d.qpos[self._idx]
            d.qvel[self._midx] = qd
            d.qacc[self._midx] = d.qacc[self._idx]
        mujoco.mj_inverse(self.mj_model, d)
        out = d.qfrc_inverse[self._idx]
        if self._extra:
            out += self._applied_friction(qd)
        elif self._fc is not None:
            out += self._fc * np.sign(qd)
        return out

    def mass_matrix(self, q: Any) -> np.ndarray:
        """Joint-space inertia matrix by ``mj_fullM`` (includes armature); the links' block for an elastic plant."""
        d = mujoco.MjData(self.mj_model)
        d.qpos[self._idx] = self._vec(q, "q")
        mujoco.mj_forward(self.mj_model, d)
        nv = self.mj_model.nv
        out = np.zeros((nv, nv))
        mujoco.mj_fullM(self.mj_model, d, out)
        return out[np.ix_(self._idx, self._idx)]

    def bias_forces(self, q: Any, qd: Any) -> np.ndarray:
        """Coriolis, centrifugal and gravity efforts (``qfrc_bias``), without friction."""
        d = mujoco.MjData(self.mj_model)
        d.qpos[self._idx] = self._vec(q, "q")
        d.qvel[self._idx] = self._vec(qd, "qd")
        mujoco.mj_forward(self.mj_model, d)
        return d.qfrc_bias[self._idx]

    def _vec(self, v: Any, what: str) -> np.ndarray:
        a = np.asarray(v, dtype=float)
        if a.shape != (self.dof,):
            raise ValueError(f"{what} must have shape ({self.dof},), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what} contains NaN or inf")
        return a


__all__ = [
    "MIN_INERTIA",
    "MAX_SPRING_STEP",
    "MIN_MASS",
    "MotorState",
    "MujocoArm",
    "PlantDiverged",
    "PlantState",
    "central_inertia",
    "inertia_tensor",
    "model_to_mjcf",
    "motor_joint_name",
    "perturbed",
    "physically_consistent",
    "standard_row",
    "with_payload",
]
