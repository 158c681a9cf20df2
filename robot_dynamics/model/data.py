"""The data of a robot model: the MDH table, inertial parameters, friction, limits (no algorithm).

:class:`RobotData` holds what :class:`~robot_dynamics.model.robot_model.RobotModel` is made of — the fields,
their validation and immutability, the cached per-joint arrays — and the helpers that need no algorithm module
(joint mapping, transforms, forward kinematics, parameter vectors, friction, dict/YAML I/O).  It sits below the
algorithms: they take a ``RobotData`` (annotated so) and never import the facade ``RobotModel``, which adds the
compiled engine and the algorithm methods on top (Pinocchio's model/algorithm split).  The conventions (URDF vs
MDH coordinates, parameter names, optional friction, transmission) are in :mod:`robot_dynamics.model.robot_model`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple, Self

import numpy as np

from .mdh import PRISMATIC, REVOLUTE, MDHJoint, mdh_transform_batch
from .transmission import Transmission

INERTIAL_NAMES = ("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M")  # 001 eq. 7.3, in R_j about O_j
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
    """A read-only ``dict`` (``frames``, ``locked_joints`` of an immutable :class:`RobotData`)."""

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
class RobotData:
    """The data of a serial (or tree) robot in Khalil's modified-DH description (no algorithm behind it).

    Attributes
    ----------
    joints: the MDH rows of the moving joints, base to tip (``mdh`` is an alias).
    base_transform: constant pose of R0 in the ``base_link`` frame.
    frames: URDF link name -> (j, ^jT_link): the link is rigidly attached to
        frame R_j (j = 0: the base frame R0).  The tip link is in it.
    inertial: (n, 10) standard parameters XX..M of each link in R_j about O_j.
    Ia, Fc, Fv: (n,) rotor inertia, Coulomb and viscous friction.
    Foff, Fs, vs: (n,) optional effort offset, static friction and Stribeck velocity
        (:mod:`~robot_dynamics.model.robot_model`, 001 eq. 7.26); zero by default.
    gravity: gravity acceleration expressed in ``base_link``.
    locked_joints: URDF moving joints off the modelled chain that were locked (name -> position),
        their subtrees lumped like fixed joints (``from_urdf(..., tip_link=...)``); empty for a whole tree.
    transmission: optional actuator transmission over the model's joints in chain order
        (:mod:`~robot_dynamics.model.robot_model`; a :class:`Transmission` or its config mapping); its
        off-diagonal joint-side rotor inertia counts in the dynamics methods, ``Ia`` is left as given
        (:meth:`with_transmission` sets both).

    Immutable once built (:mod:`robot_dynamics.model.robot_model`): fields cannot be re-assigned, arrays are
    read-only, a change makes a new object (:meth:`replace`, :meth:`with_standard_parameters`) of the same class.
    The algorithms take this type; :class:`~robot_dynamics.model.robot_model.RobotModel` adds their methods.
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
        self._frozen = True  # from here on only private (``_``) attributes may be set, e.g. a subclass's engine

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and self.__dict__.get("_frozen"):
            raise AttributeError(
                f"{type(self).__name__} is immutable: cannot set {name!r}; make a modified copy with "
                f"model.with_standard_parameters(values) or model.replace({name}=...) (dataclasses.replace)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_construct, (type(self), {f.name: getattr(self, f.name) for f in fields(self) if f.init}))

    def replace(self, **changes: Any) -> Self:
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
        if not link:  # a whole tree has no single tip
            raise ValueError(f"this model is a tree with no tip_link: give link=, one of {sorted(self.frames)}")
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

    def with_standard_parameters(self, values: Any) -> Self:
        """A new model with the standard parameter vector (XX1..M1, Ia1, Fc1, Fv1, XX2, ...) replaced."""
        v = np.asarray(values, float).reshape(self.dof, 13)
        return self.replace(inertial=v[:, :10], Ia=v[:, 10], Fc=v[:, 11], Fv=v[:, 12])

    # ------------------------------------------------------------- transmission
    def with_transmission(self, transmission: Transmission | dict[str, Any] | None) -> Self:
        """A new model driven through ``transmission`` (a :class:`Transmission` or its config mapping, joint
        names defaulting to the model's); when it has motor inertias, ``Ia`` becomes the diagonal of its
        joint-side rotor inertia matrix (001 eq. 7.29 generalised, :mod:`~robot_dynamics.model.robot_model`).
        None: no transmission (``Ia`` unchanged)."""
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
    def from_dict(cls, data: dict[str, Any]) -> Self:
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
    def from_yaml(cls, text: str) -> Self:
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
