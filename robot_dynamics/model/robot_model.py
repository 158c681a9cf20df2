"""The robot model: a Khalil modified-DH table plus inertial parameters.

Public API is in URDF joint coordinates and names (what ``/joint_states``
carries).  MDH coordinates are internal; the mapping for joint j is::

    q_mdh_j = sign_j * q_urdf_j            (sign_j = -1 for an antiparallel axis)
    theta_j(q) = theta_j + (1 - sigma_j) * q_mdh_j
    r_j(q)     = r_j     + sigma_j       * q_mdh_j

so the ``theta`` (revolute) or ``r`` (prismatic) column holds the constant
offset of the joint variable.  Efforts map like velocities:
``tau_urdf_j = sign_j * tau_mdh_j``.

Inertial parameters are Khalil's standard parameters of link j expressed in
frame R_j about O_j (001 eq. 7.3, products of inertia XY = -∫xy dm):
``XX XY XZ YY YZ ZZ MX MY MZ M`` stored row-wise in ``inertial`` (n, 10), plus
``Ia`` (rotor inertia), ``Fc`` (Coulomb) and ``Fv`` (viscous friction).

Optional friction terms outside the 13 standard parameters of a joint (zero by default, and then
absent from every computation, file and program): ``Foff`` (a constant effort offset) and the
Stribeck term of 001 eq. 7.26 with ``Fs`` (static friction, F_st of 7.26, errata 15) and ``vs``
(Stribeck velocity, rad/s or m/s; 7.26's B = 1/vs)::

    Γ_f = Fc sign(q̇) + Fv q̇ + (Fs − Fc) sign(q̇) exp(−|q̇| / vs) + Foff      (vs = 0: no Stribeck term)

The dynamics methods (inverse dynamics, H, forward dynamics) of every engine add
:meth:`RobotModel.extra_friction` (the Stribeck and offset terms) to the engine's 7.61 result; the
regressor and the base parameters stay those of the 13 standard parameters (the identification
adds offset columns and fits the Stribeck term, :mod:`robot_dynamics.identification.friction`).

Optional actuator ``transmission`` (:class:`~robot_dynamics.model.transmission.Transmission`, 001 eqs. 7.29,
7.31–7.33): the motor <-> joint maps, and the rotors' inertia referred to the joint side
``I_a = J_qm⁻ᵀ diag(J_m) J_qm⁻¹``, which a coupled transmission (a wrist where motor 5 also turns joint 6) makes
non-diagonal.  ``Ia`` stays the diagonal of the joint-side rotor inertia (a standard parameter, identified
like the others; :meth:`RobotModel.with_transmission` sets it to diag(I_a)), the transmission adds the
off-diagonal terms ``I_c = I_a − diag(I_a)`` (:attr:`RobotModel.rotor_coupling`), which no standard parameter
carries.  The rotor inertia matrix of the model is :attr:`RobotModel.rotor_inertia_matrix` = diag(Ia) + I_c.
Like the extra friction, I_c is added by the methods of the model, whatever the engine: ``inverse_dynamics``
(+ I_c q̈), ``inertia_matrix`` (+ I_c), ``forward_dynamics`` (q̈ = (A + I_c)⁻¹ A q̈₀, q̈₀ the engine's answer:
A q̈₀ = Γ − H), ``kinetic_energy`` (+ ½ q̇ᵀ I_c q̇); H, Q and C do not depend on it (I_c is constant).  The free
functions ``algorithm(model, ...)`` of :mod:`robot_dynamics.dynamics`, the compiled programs, the regressor and
the base parameters are those of the 7.61 model (diagonal Ia); the identification adds one column per coupled motor,
its ``Iam<k>`` = N_k² J_mk (:mod:`robot_dynamics.dynamics.coupled_rotor`); the MuJoCo plant carries the diagonal only
(:mod:`robot_dynamics.sim.simulator`).  The motor friction of a transmission is not part of the model's
dynamics (the model's friction is Fc, Fv at the joints): :meth:`Transmission.friction_torques` maps it.

A model is immutable once built (the spirit of Pinocchio's model/data split): its fields cannot be
re-assigned, its arrays are read-only (backed by immutable memory), the joint rows are frozen and held
in a tuple, ``frames`` and ``locked_joints`` are read-only mappings.  A change makes a new model:
:meth:`RobotModel.with_standard_parameters`, :meth:`RobotModel.replace` (``dataclasses.replace``).  So
the compiled programs behind the dynamics methods (:mod:`robot_dynamics.symbolic.codegen`), which belong to the
model they were built from, can never be stale.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np

from .mdh import PRISMATIC, REVOLUTE, MDHJoint, mdh_transform, mdh_transform_batch
from .transmission import Transmission

INERTIAL_NAMES = ("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M")
EXTRA_FRICTION_NAMES = ("Foff", "Fs", "vs")  # optional per-joint friction terms (offset, 001 eq. 7.26)
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


class StandardParameters(NamedTuple):
    """Standard dynamic parameters: ``names`` (XX1 … M1, Ia1, Fc1, Fv1, XX2 …) and ``values``."""

    names: list[str]
    values: np.ndarray


def _as_transform(value: Any, what: str) -> np.ndarray:
    t = np.asarray(value, dtype=float)
    if t.shape != (4, 4) or not np.all(np.isfinite(t)):
        raise ValueError(f"{what} must be a finite 4x4 homogeneous transform")
    return _frozen_array(t)


def _frozen_array(value: Any, dtype: Any = float) -> np.ndarray:
    """A read-only copy whose memory is an immutable ``bytes`` object (its WRITEABLE flag cannot be set back)."""
    a = np.ascontiguousarray(value, dtype=dtype)
    out = np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape) if a.size else a.copy()
    out.setflags(write=False)
    return out


class FrozenDict(dict):  # type: ignore[type-arg]
    """A read-only ``dict`` (``frames``, ``locked_joints`` of an immutable :class:`RobotModel`)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("the mappings of a RobotModel are read-only: build a new model "
                        "(model.replace(frames=...) or dataclasses.replace)")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def copy(self) -> dict:  # type: ignore[override,type-arg]
        return dict(self)


def _construct(cls: type, kwargs: dict[str, Any]) -> Any:
    """Unpickling and copying: a model is rebuilt from its fields (and normalized again)."""
    return cls(**kwargs)


@dataclass
class RobotModel:
    """A serial (or tree) robot in Khalil's modified-DH description.

    Attributes
    ----------
    joints: the MDH rows of the moving joints, base to tip (``mdh`` is an alias).
    base_transform: constant pose of R0 in the ``base_link`` frame.
    frames: URDF link name -> (j, ^jT_link): the link is rigidly attached to
        frame R_j (j = 0: the base frame R0).  The tip link is in it.
    inertial: (n, 10) standard parameters XX..M of each link in R_j about O_j.
    Ia, Fc, Fv: (n,) rotor inertia, Coulomb and viscous friction.
    Foff, Fs, vs: (n,) optional effort offset, static friction and Stribeck velocity (module
        docstring, 001 eq. 7.26); zero by default.
    gravity: gravity acceleration expressed in ``base_link``.
    locked_joints: URDF moving joints off the modelled chain that were locked (name -> position),
        their subtrees lumped like fixed joints (``from_urdf(..., tip_link=...)``); empty for a whole tree.
    transmission: optional actuator transmission over the model's joints in chain order (module docstring;
        a :class:`Transmission` or its config mapping); its off-diagonal joint-side rotor inertia counts in
        the dynamics methods, ``Ia`` is left as given (:meth:`with_transmission` sets both).

    Immutable once built (see the module docstring); the dynamics methods run the model's compiled
    customized programs once they are ready (:mod:`robot_dynamics.symbolic.codegen`, :meth:`compile`,
    :meth:`set_backend`), the NumPy algorithms until then.
    """

    joints: Sequence[MDHJoint]
    base_link: str = "base_link"
    tip_link: str = ""
    name: str = "robot"
    base_transform: np.ndarray = field(default_factory=lambda: np.eye(4))
    frames: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)
    inertial: np.ndarray | None = None
    Ia: np.ndarray | None = None
    Fc: np.ndarray | None = None
    Fv: np.ndarray | None = None
    gravity: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_GRAVITY))
    locked_joints: dict[str, float] = field(default_factory=dict)
    Foff: np.ndarray | None = None
    Fs: np.ndarray | None = None
    vs: np.ndarray | None = None
    transmission: Transmission | None = None

    def __post_init__(self) -> None:
        self.joints = tuple(j if isinstance(j, MDHJoint) else MDHJoint(**vars(j)) for j in self.joints)
        n = len(self.joints)
        for j, jt in enumerate(self.joints, start=1):
            if not 0 <= jt.antecedent < j:
                raise ValueError(f"joint {jt.name!r}: antecedent {jt.antecedent} must be in [0, {j - 1}]")
            if jt.sign not in (1.0, -1.0):
                raise ValueError(f"joint {jt.name!r}: sign must be +1 or -1")
            for k in ("alpha", "d", "theta", "r", "gamma", "b"):
                if not math.isfinite(getattr(jt, k)):
                    raise ValueError(f"joint {jt.name!r}: {k} is not finite")
        self.base_transform = _as_transform(self.base_transform, "base_transform")
        inertial = np.zeros((n, 10)) if self.inertial is None else np.asarray(self.inertial, float).reshape(n, 10)
        self.inertial = _frozen_array(inertial)
        for k in ("Ia", "Fc", "Fv") + EXTRA_FRICTION_NAMES:
            v = getattr(self, k)
            setattr(self, k, _frozen_array(np.zeros(n) if v is None else np.asarray(v, float).reshape(n)))
        for k in EXTRA_FRICTION_NAMES:
            if not np.all(np.isfinite(getattr(self, k))):
                raise ValueError(f"{k} contains NaN or inf")
        if np.any(self.vs < 0):
            raise ValueError("vs (Stribeck velocity) must be >= 0 (0: no Stribeck term)")
        self.gravity = _frozen_array(np.asarray(self.gravity, float).reshape(3))
        self.frames = FrozenDict(
            {k: (int(j), _as_transform(t, f"frame of link {k!r}")) for k, (j, t) in self.frames.items()})
        self.locked_joints = FrozenDict({str(k): float(v) for k, v in self.locked_joints.items()})
        if self.tip_link and self.tip_link not in self.frames:
            raise ValueError(f"tip link {self.tip_link!r} has no frame")
        if self.transmission is not None:
            if not isinstance(self.transmission, Transmission):
                self.transmission = Transmission.from_config(self.transmission, self.joint_names)
            if list(self.transmission.joint_names) != self.joint_names:
                raise ValueError(f"transmission joints {list(self.transmission.joint_names)} differ from the model's "
                                 f"chain {self.joint_names}")
        self._refresh()
        from ..symbolic.codegen import Engine

        self._engine = Engine(self)
        self._frozen = True

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and self.__dict__.get("_frozen"):
            raise AttributeError(
                f"RobotModel is immutable: cannot set {name!r}; make a modified copy with "
                f"model.with_standard_parameters(values) or model.replace({name}=...) (dataclasses.replace)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"RobotModel is immutable: cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_construct, (type(self), {f.name: getattr(self, f.name) for f in fields(self) if f.init}))

    def replace(self, **changes: Any) -> RobotModel:
        """A new model with some fields changed (``dataclasses.replace``); its programs are its own."""
        return dataclasses.replace(self, **changes)

    def _refresh(self) -> None:
        """Cache per-joint arrays used by the vectorized algorithms."""
        j = self.joints
        self.sigma = _frozen_array([x.sigma for x in j], dtype=int)
        self.alpha = _frozen_array([x.alpha for x in j])
        self.d = _frozen_array([x.d for x in j])
        self.theta = _frozen_array([x.theta for x in j])
        self.r = _frozen_array([x.r for x in j])
        self.sign = _frozen_array([x.sign for x in j])
        self.antecedent = _frozen_array([x.antecedent for x in j], dtype=int)
        self.gamma = _frozen_array([x.gamma for x in j])
        self.b = _frozen_array([x.b for x in j])
        self.is_tree = bool(np.any(self.gamma != 0.0) or np.any(self.b != 0.0)
                            or np.any(self.antecedent != np.arange(len(j))))
        self._stribeck = self.vs > 0.0  # joints with a Stribeck term (vs = 0: none)
        self._fs_fc = _frozen_array(np.where(self._stribeck, self.Fs - self.Fc, 0.0))
        self._inv_vs = _frozen_array(np.where(self._stribeck, 1.0 / np.where(self._stribeck, self.vs, 1.0), 0.0))
        self.has_extra_friction = bool(np.any(self.Foff != 0.0) or np.any(self._fs_fc != 0.0))
        n = len(j)
        coupling = np.zeros((n, n))
        if self.transmission is not None:
            coupling = np.array(self.transmission.rotor_inertia_matrix())
            coupling[np.diag_indices(n)] = 0.0
        self.rotor_coupling = _frozen_array(coupling)
        self.has_rotor_coupling = bool(np.any(coupling != 0.0))

    # ------------------------------------------------------------------ basics
    @property
    def mdh(self) -> Sequence[MDHJoint]:
        return self.joints

    @property
    def dof(self) -> int:
        return len(self.joints)

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def tool_transform(self) -> np.ndarray:
        """Constant pose of the tip link in frame R_n."""
        j, t = self.frames[self.tip_link]
        if j != self.dof:
            raise ValueError(f"tip link {self.tip_link!r} is attached to frame {j}, not to the last frame")
        return t

    @property
    def limits(self) -> dict[str, np.ndarray]:
        """Joint limits in URDF coordinates: lower, upper, velocity, effort, acceleration."""
        return {k: np.array([getattr(j, k) for j in self.joints]) for k in ("lower", "upper", "velocity", "effort", "acceleration")}

    def check_joint_vector(self, q: Any, what: str = "q") -> np.ndarray:
        """Validate a joint vector or a batch of them: shape (n,) or (N, n), finite."""
        a = np.asarray(q, dtype=float)
        n = self.dof
        if a.ndim not in (1, 2) or a.shape[-1] != n:
            raise ValueError(f"{what} must have shape ({n},) or (N, {n}), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what} contains NaN or inf")
        return a

    def to_mdh(self, q: Any) -> np.ndarray:
        """URDF joint values (n,) or (N, n) -> MDH joint values theta_j or r_j (incl. offsets)."""
        q = self.check_joint_vector(q)
        return self.sign * q + np.where(self.sigma == PRISMATIC, self.r, self.theta)

    def joint_transforms(self, q: Any) -> np.ndarray:
        """^{a(j)}T_j for every joint: shape (n, 4, 4) or (N, n, 4, 4); q in URDF coordinates."""
        q = self.check_joint_vector(q)
        qv = self.sign * q
        prism = self.sigma == PRISMATIC
        theta = self.theta + np.where(prism, 0.0, qv)
        r = self.r + np.where(prism, qv, 0.0)
        out = np.empty(q.shape + (4, 4))
        for j in range(self.dof):
            out[..., j, :, :] = mdh_transform_batch(
                self.alpha[j], self.d[j], theta[..., j], r[..., j], self.gamma[j], self.b[j]
            )
        return out

    def link_frames(self, q: Any) -> np.ndarray:
        """^0T_j of every MDH frame R_0..R_n (index 0 = identity): (n+1, 4, 4) or (N, n+1, 4, 4)."""
        t = self.joint_transforms(q)
        out = np.empty(t.shape[:-3] + (self.dof + 1, 4, 4))
        out[..., 0, :, :] = np.eye(4)
        for j in range(self.dof):
            out[..., j + 1, :, :] = out[..., self.antecedent[j], :, :] @ t[..., j, :, :]
        return out

    def forward_kinematics(self, q: Any, link: str | None = None) -> np.ndarray:
        """Pose of URDF ``link`` (default the tip) in the ``base_link`` frame: (4, 4) or (N, 4, 4)."""
        link = link or self.tip_link
        if link not in self.frames:
            raise ValueError(f"unknown link {link!r}; known links: {sorted(self.frames)}")
        j, t = self.frames[link]
        return self.base_transform @ self.link_frames(q)[..., j, :, :] @ t

    # -------------------------------------------------------------- inertial
    @property
    def standard_parameter_names(self) -> list[str]:
        """Names of the standard parameters, link by link: XX1..M1, Ia1, Fc1, Fv1, XX2, ..."""
        return [f"{k}{j}" for j in range(1, self.dof + 1) for k in INERTIAL_NAMES + ("Ia", "Fc", "Fv")]

    @property
    def standard_parameter_values(self) -> np.ndarray:
        return np.column_stack([self.inertial, self.Ia, self.Fc, self.Fv]).ravel()

    @property
    def standard_parameters(self) -> StandardParameters:
        """Names and values of the standard parameters (columns of :meth:`regressor`)."""
        return StandardParameters(self.standard_parameter_names, self.standard_parameter_values)

    def with_standard_parameters(self, values: Any) -> RobotModel:
        """A new model with the standard parameter vector (XX1..M1, Ia1, Fc1, Fv1, XX2, ...) replaced."""
        v = np.asarray(values, float).reshape(self.dof, 13)
        return self.replace(inertial=v[:, :10], Ia=v[:, 10], Fc=v[:, 11], Fv=v[:, 12])

    # ------------------------------------------------------------- transmission
    def with_transmission(self, transmission: Transmission | dict[str, Any] | None) -> RobotModel:
        """A new model driven through ``transmission`` (a :class:`Transmission` or its config mapping, joint
        names defaulting to the model's); when it has motor inertias, ``Ia`` becomes the diagonal of its
        joint-side rotor inertia matrix (001 eq. 7.29 generalised, module docstring).  None: no transmission
        (``Ia`` unchanged)."""
        if transmission is None:
            return self.replace(transmission=None)
        if not isinstance(transmission, Transmission):
            transmission = Transmission.from_config(transmission, self.joint_names)
        if not transmission.has_motor_inertia:
            return self.replace(transmission=transmission)
        return self.replace(transmission=transmission, Ia=np.diag(transmission.rotor_inertia_matrix()).copy())

    @property
    def rotor_inertia_matrix(self) -> np.ndarray:
        """The joint-side rotor inertia matrix diag(Ia) + I_c (n, n), I_c = :attr:`rotor_coupling` the
        off-diagonal part of the transmission's (zero without a coupled transmission)."""
        return np.diag(self.Ia) + self.rotor_coupling

    # ------------------------------------------------------------- friction
    def extra_friction(self, qd: Any) -> np.ndarray:
        """The optional friction terms ``(Fs − Fc) sign(q̇) exp(−|q̇| / vs) + Foff`` (001 eq. 7.26 beyond
        7.27, plus the offset) for URDF velocities (n,) or (N, n); zeros when the model has none.  The
        dynamics methods add it to the engines' 7.61 efforts."""
        qd = self.check_joint_vector(qd, "qd")
        if not self.has_extra_friction:
            return np.zeros(qd.shape)
        return self._fs_fc * np.sign(qd) * np.exp(-np.abs(qd) * self._inv_vs) + self.Foff

    def friction_torques(self, qd: Any) -> np.ndarray:
        """The whole friction effort Γ_f = Fc sign(q̇) + Fv q̇ [+ (Fs − Fc) sign(q̇) exp(−|q̇|/vs) + Foff]
        (001 eqs. 7.26–7.28) for URDF velocities (n,) or (N, n)."""
        qd = self.check_joint_vector(qd, "qd")
        out = self.Fc * np.sign(qd) + self.Fv * qd
        return out + self.extra_friction(qd) if self.has_extra_friction else out

    # ------------------------------------------------------------- I/O
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base_link": self.base_link,
            "tip_link": self.tip_link,
            "gravity": self.gravity.tolist(),
            "base_transform": self.base_transform.tolist(),
            "joints": [
                {**j.as_dict(), **{k: float(v) for k, v in zip(INERTIAL_NAMES, self.inertial[i], strict=True)},
                 "Ia": float(self.Ia[i]), "Fc": float(self.Fc[i]), "Fv": float(self.Fv[i]),
                 **{k: float(getattr(self, k)[i]) for k in EXTRA_FRICTION_NAMES if np.any(getattr(self, k) != 0.0)}}
                for i, j in enumerate(self.joints)
            ],
            "frames": {k: {"frame": j, "transform": t.tolist()} for k, (j, t) in self.frames.items()},
            **({"locked_joints": {k: float(v) for k, v in self.locked_joints.items()}} if self.locked_joints else {}),
            **({"transmission": self.transmission.to_config()} if self.transmission is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RobotModel:
        try:
            rows = data["joints"]
            joints = [MDHJoint.from_dict(r) for r in rows]
            inertial = np.array([[float(r.get(k, 0.0)) for k in INERTIAL_NAMES] for r in rows]).reshape(len(rows), 10)
            extra = {k: np.array([float(r.get(k, 0.0)) for r in rows]) for k in ("Ia", "Fc", "Fv") + EXTRA_FRICTION_NAMES}
            frames = {k: (int(v["frame"]), np.array(v["transform"], float)) for k, v in data.get("frames", {}).items()}
            return cls(
                joints=joints,
                base_link=str(data.get("base_link", "base_link")),
                tip_link=str(data.get("tip_link", "")),
                name=str(data.get("name", "robot")),
                base_transform=np.array(data.get("base_transform", np.eye(4).tolist()), float),
                frames=frames,
                inertial=inertial,
                gravity=np.array(data.get("gravity", DEFAULT_GRAVITY), float),
                locked_joints={str(k): float(v) for k, v in (data.get("locked_joints") or {}).items()},
                transmission=data.get("transmission"),
                **extra,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed robot model description: {exc!r}") from exc

    def to_yaml(self) -> str:
        """Lossless YAML text (floats written with repr precision)."""
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> RobotModel:
        import yaml

        data = yaml.safe_load(text)
        if not isinstance(data, dict):
            raise ValueError("robot model YAML must be a mapping")
        return cls.from_dict(data)

    def table(self) -> str:
        """Khalil's table: j, a(j), sigma, alpha, d, theta, r (plus URDF name and sign); a tree adds
        the gamma and b columns (j, a(j), sigma, gamma, b, alpha, d, theta, r), and locked joints are listed."""
        tree = self.is_tree
        head = f"{'j':>3} {'a(j)':>4} {'sigma':>5} "
        if tree:
            head += f"{'gamma':>10} {'b':>10} "
        head += f"{'alpha':>10} {'d':>10} {'theta':>12} {'r':>12}  {'sign':>4}  joint"
        lines = [head, "-" * len(head)]
        for j, jt in enumerate(self.joints, start=1):
            th = f"q{j}" if jt.sigma == REVOLUTE else f"{jt.theta:.6g}"
            if jt.sigma == REVOLUTE and jt.theta != 0.0:
                th = f"q{j}{jt.theta:+.6g}"
            r = f"q{j}" if jt.sigma == PRISMATIC else f"{jt.r:.6g}"
            if jt.sigma == PRISMATIC and jt.r != 0.0:
                r = f"q{j}{jt.r:+.6g}"
            gb = f"{jt.gamma:>10.6g} {jt.b:>10.6g} " if tree else ""
            lines.append(
                f"{j:>3} {jt.antecedent:>4} {jt.sigma:>5} {gb}{jt.alpha:>10.6g} {jt.d:>10.6g} {th:>12} {r:>12}"
                f"  {int(jt.sign):>+4}  {jt.name}"
            )
        if self.locked_joints:
            lines.append("locked (off the chain, lumped like fixed joints): "
                         + ", ".join(f"{k}={v:.6g}" for k, v in self.locked_joints.items()))
        return "\n".join(lines)

    # ------------------------------------------------ constructors (issue 3)
    @classmethod
    def from_urdf(
        cls,
        source: str,
        base_link: str | None = None,
        tip_link: str | None = None,
        *,
        locked_positions: dict[str, float] | None = None,
        rotor_inertia: dict[str, float] | None = None,
        acceleration_limits: dict[str, float] | None = None,
        text_only: bool = False,
        xacro_args: dict[str, str] | list[str] | None = None,
        allow_inconsistent_inertia: bool = False,
    ) -> RobotModel:
        """Exact URDF -> MDH conversion of the whole tree under ``base_link``, or of the chain to ``tip_link``
        with every moving joint off it locked at ``locked_positions`` (default 0) and lumped (see
        :func:`~robot_dynamics.model.urdf_conversion.urdf_model_arguments`); ``source`` is a path or an XML string
        (``text_only=True``: XML text only, a path is refused without touching the file system).

        A ``.xacro`` path is expanded with ``xacro_args`` (``{name: value}`` or ``["name:=value"]``);
        ``allow_inconsistent_inertia=True``: a physically inconsistent inertia is a warning, not an error."""
        from .urdf_conversion import urdf_model_arguments

        return cls(**urdf_model_arguments(
            source, base_link=base_link, tip_link=tip_link, locked_positions=locked_positions,
            rotor_inertia=rotor_inertia, acceleration_limits=acceleration_limits, text_only=text_only,
            xacro_args=xacro_args, allow_inconsistent_inertia=allow_inconsistent_inertia,
        ))

    # ------------------------------------- geometric models (issue 3, geometric_model.py)
    def jacobian(self, q: Any, link: str | None = None) -> np.ndarray:
        """Kinematic Jacobian (6, n) [v; w] of ``link`` origin in base_link, URDF coordinates."""
        from ..kinematics.geometric_model import jacobian

        return jacobian(self, q, link=link)

    def inverse_kinematics(self, target: Any, q0: Any = None, link: str | None = None, **options: Any) -> np.ndarray:
        """Numeric IGM (002 §6.4-§6.6) honouring joint limits: damped least squares by default; with
        ``secondary=`` / ``weights=`` the redundancy-resolving iteration (see ``kinematics.redundancy.inverse_kinematics``);
        ``method="analytic"``: the closed-form IGM of a wrist-partitioned arm (``kinematics.analytic_ik``), the
        solution within the limits nearest ``q0``."""
        from ..kinematics.redundancy import inverse_kinematics

        return inverse_kinematics(self, target, q0=q0, link=link, **options)

    def to_urdf(self, **options: Any) -> str:
        """Export the model as URDF text (DH -> URDF)."""
        from .urdf_export import model_to_urdf

        return model_to_urdf(self, **options)

    # ------------------------------------------- dynamics (issues 4, 15; see codegen.Engine)
    def set_backend(self, name: str = "numpy", **options: Any) -> None:
        """Engine of the dynamics methods: ``"auto"`` (default: the compiled customized programs once
        built in the background or found in the cache, the NumPy model until then; without a C compiler,
        single states of the inverse dynamics and H run the customized program generated as scalar Python; see
        :mod:`robot_dynamics.symbolic.codegen`), ``"numpy"`` (the NumPy algorithms only) or ``"generated"``
        (customized programs built synchronously, each at its first call, the inverse dynamics at once;
        ``options`` go to :class:`~robot_dynamics.symbolic.codegen.GeneratedBackend`: ``lang``, ``parameters``,
        ``simplified``).  The programs belong to this (immutable) model."""
        from ..symbolic.codegen import Engine, generated_backend

        if name == "numpy":
            self._engine.set_generated(None)
        elif name == "generated":
            be = self._engine.generated
            opts = {"lang": "c", "parameters": "base", "simplified": True, **options}
            if be is None or be.lang != opts["lang"] or be.options != {k: opts[k] for k in ("parameters", "simplified")}:
                be = generated_backend(self, **options)
            self._engine.set_generated(be)
        elif name == "auto":
            self._engine = Engine(self, mode="auto")
        else:
            raise ValueError(f"unknown backend {name!r}; use 'auto', 'numpy' or 'generated'")

    @property
    def backend(self) -> str:
        """``auto``, ``compiled`` (``ROBOT_DYNAMICS_ENGINE=compiled``), ``python`` (``ROBOT_DYNAMICS_ENGINE=python``:
        the scalar Python customized programs, never a compiler), ``numpy`` or ``generated``."""
        return self._engine.mode

    def compile(self, *functions: str, wait: bool = True, isolated: bool = False) -> dict[str, str]:
        """Compile (or load from the cache) the programs behind ``functions`` (names of the dynamics
        methods; default all but ``regressor``; ``"all"``: all) and, with ``wait``, block until they
        are in use.  Returns the engine of each function (``compiled``, ``building``; without a C compiler
        or when the build failed, ``python`` for the single-state inverse dynamics and H (the customized
        program generated as scalar Python) and ``numpy`` for the rest).  ``isolated``: a program not in the cache
        is built in a child process while this thread waits (the other threads of the process keep the GIL)."""
        from ..symbolic.codegen import DEFAULT_COMPILE

        if functions == ("all",):
            functions = (*DEFAULT_COMPILE, "regressor")
        return self._engine.compile(functions or DEFAULT_COMPILE, wait=wait, isolated=isolated)

    @property
    def engine(self) -> dict[str, str]:
        """What runs each dynamics method now: ``compiled``, ``building``, ``python`` (scalar Python customized
        program, single states), ``numpy`` or ``generated``."""
        return self._engine.status()

    def inverse_dynamics(
        self, q: Any, qd: Any, qdd: Any, f_ext: Any = None, gravity: Any = None, f_ext_frame: str = "base"
    ) -> np.ndarray:
        """Joint efforts by Newton–Euler (001 §7.4.3; customized program 001 §7.5); batch-aware, URDF coordinates.
        A coupled transmission adds I_c q̈ (:attr:`rotor_coupling`, module docstring)."""
        if f_ext is None and gravity is None:
            tau = self._engine.id(q, qd, qdd)
        else:
            tau = self._engine.inverse_dynamics(q, qd, qdd, f_ext, gravity, f_ext_frame)
        if self.has_rotor_coupling:
            tau = tau + np.asarray(qdd, float) @ self.rotor_coupling  # I_c q̈ (I_c symmetric)
        return tau + self.extra_friction(qd) if self.has_extra_friction else tau

    def regressor(self, q: Any, qd: Any, qdd: Any, gravity: Any = None) -> np.ndarray:
        """Regressor W with ``W @ standard_parameter_values == inverse_dynamics`` (001 eq. 9.3) minus the
        optional friction terms (:meth:`extra_friction`: not linear in the standard parameters) and minus the
        coupled rotor inertia term I_c q̈ of a transmission (:attr:`rotor_coupling`: its columns, one per coupled
        motor, are :func:`~robot_dynamics.dynamics.coupled_rotor.coupled_rotor_regressor`)."""
        if gravity is None:
            return self._engine.regressor(q, qd, qdd)
        return self._engine.with_gravity("regressor", gravity, q, qd, qdd)

    def inertia_matrix(self, q: Any) -> np.ndarray:
        """A(q) including rotor inertias (001 §7.6.1): diag(Ia) and a coupled transmission's I_c."""
        a = self._engine.inertia(q)
        return a + self.rotor_coupling if self.has_rotor_coupling else a

    def gravity_torques(self, q: Any, gravity: Any = None) -> np.ndarray:
        """Q(q) (001 eq. 7.62)."""
        if gravity is None:
            return self._engine.gravity(q)
        return self._engine.with_gravity("gravity", gravity, q)

    def coriolis_matrix(self, q: Any, qd: Any) -> np.ndarray:
        """C(q, qd) from Christoffel symbols (001 eq. 7.7)."""
        from ..dynamics.dynamic_terms import coriolis_matrix

        return coriolis_matrix(self, q, qd)

    def nonlinear_effects(self, q: Any, qd: Any, gravity: Any = None) -> np.ndarray:
        """H(q, qd) = C qd + Q + friction (001 eq. 7.62)."""
        h = self._engine.nle(q, qd) if gravity is None else self._engine.with_gravity("nle", gravity, q, qd)
        return h + self.extra_friction(qd) if self.has_extra_friction else h

    def kinetic_energy(self, q: Any, qd: Any) -> np.ndarray:
        """E = ½ q̇ᵀ A(q) q̇ (001 eqs. 7.9–7.16, rotors included: ½ q̇ᵀ (diag(Ia) + I_c) q̇)."""
        from ..dynamics.dynamic_terms import kinetic_energy

        e = kinetic_energy(self, q, qd)
        if self.has_rotor_coupling:
            qd = self.check_joint_vector(qd, "qd")
            e = e + 0.5 * np.einsum("...i,ij,...j->...", qd, self.rotor_coupling, qd)
        return e

    def potential_energy(self, q: Any, gravity: Any = None) -> np.ndarray:
        from ..dynamics.dynamic_terms import potential_energy

        return potential_energy(self, q, gravity=gravity)

    def forward_dynamics(
        self, q: Any, qd: Any, tau: Any, f_ext: Any = None, method: str | None = None, gravity: Any = None,
        f_ext_frame: str = "base",
    ) -> np.ndarray:
        """Joint accelerations (001 §7.6).  ``method=None``: the engine (the customized O(n) program of
        001 §7.6.2 once compiled, NumPy's A⁻¹(Γ − H) until then); ``"cholesky"`` (A⁻¹(Γ − H)) or
        ``"recursive"`` (001 §7.6.2.1): that NumPy algorithm.  The optional friction terms
        (:meth:`extra_friction`) are taken off ``tau`` before the engine's 7.61 model runs.  With a coupled
        transmission the engine's q̈₀ (A q̈₀ = Γ − H, A with diag(Ia)) becomes q̈ = (A + I_c)⁻¹ A q̈₀, the
        solution of (A + I_c) q̈ = Γ − H (:attr:`rotor_coupling`; whatever ``method``, A is formed then)."""
        if self.has_extra_friction:
            tau = np.asarray(tau, float) - self.extra_friction(qd)
        if method is None and f_ext is None and gravity is None:
            qdd = self._engine.fd(q, qd, tau)
        else:
            qdd = self._engine.forward_dynamics(q, qd, tau, f_ext, method, gravity, f_ext_frame)
        if not self.has_rotor_coupling:
            return qdd
        a = np.asarray(self._engine.inertia(q), float)
        rhs = (a @ np.asarray(qdd, float)[..., None])[..., 0]
        return np.linalg.solve(a + self.rotor_coupling, rhs[..., None])[..., 0]

    # ------------------------------------------- base parameters (issue 5, base_parameters.py)
    def base_parameters(self, samples: int | None = None, seed: int = 0, tol: float | None = None) -> Any:
        """Base (minimum) parameters by the closed-form method of 000 with a numerical step (c)."""
        from ..dynamics.base_parameters import base_parameters

        return base_parameters(self, samples=samples, seed=seed, tol=tol)


__all__ = ["EXTRA_FRICTION_NAMES", "INERTIAL_NAMES", "MDHJoint", "RobotModel", "StandardParameters", "mdh_transform"]
