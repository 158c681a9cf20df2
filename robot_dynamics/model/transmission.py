"""Actuator transmissions: motor variables <-> joint variables, gear ratios, couplings, rotor inertias
(001 §7.3.5, eq. 7.29, and §7.3.7, eqs. 7.31–7.33).

A linear transmission between the motor (rotor) positions q_m and the joint positions q (URDF
coordinates, both zero together)::

    q = J_qm q_m,   J_qm = K diag(N)⁻¹                                   (001 eq. 7.31, J_qm = ∂q/∂q_m)

``N_j`` is the gear ratio of motor j (rotor turns per turn of its gear output: N_j = q̇_mj / q̇_j for a
simple transmission, as in 7.29; negative when the output turns the other way) and ``K`` the coupling
matrix, joints from gear outputs: ``K_ij`` is the rate of joint i per unit rate of the output of gear j
(``K = I``: each motor drives its own joint).  A coupled wrist (RX-90, PUMA) where motor 5 also turns
joint 6::

    q5 = q_m5 / N5,   q6 = q_m6 / N6 + c q_m5 / N5      (K: row of joint 6 = [.. c 1], c in column 5)

Torques follow from the virtual work Γᵀ dq = τ_mᵀ dq_m (7.32): τ_m = J_qmᵀ Γ (7.33) and Γ = J_qm⁻ᵀ τ_m, so the
power τ_mᵀ q̇_m = Γᵀ q̇ is the same on both sides.  The kinetic energy of the rotors ½ q̇_mᵀ diag(J_m) q̇_m
with q̇_m = J_qm⁻¹ q̇ gives the rotor inertia referred to the joint side::

    I_a = J_qm⁻ᵀ diag(J_m) J_qm⁻¹          (K = I: diagonal, I_aj = N_j² J_mj, 001 eq. 7.29)

For a coupled transmission I_a is not diagonal (coupled wrist: I_a,56 = −c N6² J_m6).  Like 7.29 it
neglects the gyroscopic effects of the rotors (001 §7.3.5).  Motor friction (viscous ``motor_viscous``,
Coulomb ``motor_coulomb``, motor side) maps to the joint side the same way:
Γ_f = J_qm⁻ᵀ (F_vm q̇_m + F_cm sign(q̇_m)).

Units: N_j rad/rad (rad/m for a prismatic joint driven by a rotary motor), J_mj kg m² (I_aj is then kg m², or
kg for a prismatic joint), motor torques N m.

Config (:meth:`Transmission.from_config` / :meth:`Transmission.to_config`; the ``transmissions`` section of
a ROS parameter file ``config/<robot>.yaml``, see :mod:`robot_dynamics.model.robots`)::

    transmissions:
      joint_names: [j1, ..., jn]      # optional (the model's chain order when attached to a model)
      gear_ratio: [N1, ..., Nn]       # required, non-zero
      coupling: [K11, K12, ..., Knn]  # optional, row-major n×n (n² numbers; a list of n rows is accepted too); default I
      motor_inertia: [Jm1, ..., Jmn]  # optional, >= 0, default 0
      motor_viscous: [...]            # optional, >= 0, default 0 (N m s/rad, motor side)
      motor_coulomb: [...]            # optional, >= 0, default 0 (N m, motor side)

(in a ROS parameter file write every number as a float, ``1.0`` not ``1``: a ROS array has one type.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CONFIG_KEYS", "Transmission"]

CONFIG_KEYS = ("joint_names", "gear_ratio", "coupling", "motor_inertia", "motor_viscous", "motor_coulomb")
SINGULAR_CONDITION = 1e12
"""A coupling matrix whose 2-norm condition number exceeds this is refused as singular."""


def _read_only(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def _vector(value: Any, n: int, what: str, default: float | None = None, nonneg: bool = False) -> np.ndarray:
    if value is None or (default is not None and isinstance(value, Sequence) and len(value) == 0):
        if default is None:
            raise ValueError(f"transmission: {what} is required")
        return np.full(n, float(default))
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"transmission: {what} must be a list of {n} numbers, got {value!r}") from None
    if a.shape != (n,):
        raise ValueError(f"transmission: {what} must have {n} values (one per joint), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"transmission: {what} contains NaN or inf")
    if nonneg and np.any(a < 0):
        raise ValueError(f"transmission: {what} must be >= 0, got {a.tolist()}")
    return a


@dataclass(frozen=True, eq=False)
class Transmission:
    """A linear actuator transmission q = J_qm q_m with J_qm = coupling · diag(gear_ratio)⁻¹ (module docstring).

    Attributes: ``joint_names`` (n,), ``gear_ratio`` N (n,) non-zero, ``coupling`` K (n, n) invertible
    (default identity), ``motor_inertia`` J_m (n,) >= 0, ``motor_viscous`` F_vm and ``motor_coulomb`` F_cm
    (n,) >= 0 (motor side).  Immutable; a bad value raises one ``ValueError`` saying which and why.
    Every map takes a vector (n,) or a batch (N, n)."""

    joint_names: tuple[str, ...]
    gear_ratio: np.ndarray
    coupling: np.ndarray | None = None
    motor_inertia: np.ndarray | None = None
    motor_viscous: np.ndarray | None = None
    motor_coulomb: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = self.joint_names
        if isinstance(names, str) or not isinstance(names, Sequence) or not all(isinstance(x, str) for x in names):
            raise ValueError(f"transmission: joint_names must be a list of joint names, got {names!r}")
        names = tuple(names)
        n = len(names)
        if n == 0:
            raise ValueError("transmission: no joints")
        if len(set(names)) != n:
            raise ValueError(f"transmission: joint_names has duplicates: {list(names)}")
        gear = _vector(self.gear_ratio, n, "gear_ratio")
        if np.any(gear == 0.0):
            raise ValueError(f"transmission: gear_ratio must be non-zero, got {gear.tolist()}")
        k = self._coupling_matrix(self.coupling, n)
        cond = float(np.linalg.cond(k))
        if not cond < SINGULAR_CONDITION:
            raise ValueError(f"transmission: the coupling matrix is singular (condition number {cond:.3g}): "
                             "the motor positions would not determine the joint positions")
        values = {"joint_names": names, "gear_ratio": gear, "coupling": k}
        for key in ("motor_inertia", "motor_viscous", "motor_coulomb"):
            values[key] = _vector(getattr(self, key), n, key, default=0.0, nonneg=True)
        for key, v in values.items():
            object.__setattr__(self, key, v if key == "joint_names" else _read_only(v))
        j = k / gear[None, :]  # J_qm = K diag(N)⁻¹ (7.31)
        jinv = np.linalg.solve(k, np.eye(n)) * gear[:, None]  # J_qm⁻¹ = diag(N) K⁻¹
        object.__setattr__(self, "_j", _read_only(j))
        object.__setattr__(self, "_jinv", _read_only(jinv))
        ia = jinv.T @ (self.motor_inertia[:, None] * jinv)
        object.__setattr__(self, "_ia", _read_only(0.5 * (ia + ia.T)))

    @staticmethod
    def _coupling_matrix(value: Any, n: int) -> np.ndarray:
        if value is None or (isinstance(value, Sequence) and len(value) == 0):
            return np.eye(n)
        try:
            k = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"transmission: coupling must be {n}x{n} numbers, got {value!r}") from None
        if k.shape == (n * n,):
            k = k.reshape(n, n)
        if k.shape != (n, n):
            raise ValueError(f"transmission: coupling must be {n}x{n} ({n * n} numbers row-major, or {n} rows of {n}), "
                             f"got shape {k.shape}")
        if not np.all(np.isfinite(k)):
            raise ValueError("transmission: coupling contains NaN or inf")
        return k

    # ------------------------------------------------------------ construction
    @classmethod
    def identity(cls, n: int | Sequence[str], joint_names: Sequence[str] | None = None) -> Transmission:
        """Direct drive: N = 1, K = I, no motor inertia or friction (q_m = q, τ_m = Γ).  ``n``: the number of
        joints (names ``joint1`` .. unless ``joint_names``) or the joint names themselves."""
        if not isinstance(n, int):
            joint_names, n = list(n), len(list(n))
        names = list(joint_names) if joint_names is not None else [f"joint{j}" for j in range(1, n + 1)]
        if len(names) != n:
            raise ValueError(f"transmission: {len(names)} joint names for {n} joints")
        return cls(tuple(names), np.ones(n))

    @classmethod
    def from_config(cls, config: Mapping[str, Any], joint_names: Sequence[str] | None = None) -> Transmission:
        """From the config mapping of the module docstring; ``joint_names`` (e.g. a model's) fills or must equal
        the config's ``joint_names``.  Unknown keys are refused."""
        if not isinstance(config, Mapping):
            raise ValueError(f"transmission config must be a mapping, got {type(config).__name__}")
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise ValueError(f"transmission config: unknown keys {unknown} (known: {list(CONFIG_KEYS)})")
        names = config.get("joint_names") or None
        if names is not None and joint_names is not None and list(names) != list(joint_names):
            raise ValueError(f"transmission config: joint_names {list(names)} differ from the model's chain "
                             f"{list(joint_names)}")
        names = names if names is not None else joint_names
        if names is None:
            raise ValueError("transmission config: joint_names missing (and no model to take them from)")
        return cls(tuple(str(x) for x in names), config.get("gear_ratio"), config.get("coupling"),
                   config.get("motor_inertia"), config.get("motor_viscous"), config.get("motor_coulomb"))

    def to_config(self) -> dict[str, Any]:
        """The config mapping (plain lists of floats, coupling row-major): :meth:`from_config` gives this back."""
        return {
            "joint_names": list(self.joint_names),
            "gear_ratio": self.gear_ratio.tolist(),
            "coupling": self.coupling.ravel().tolist(),
            "motor_inertia": self.motor_inertia.tolist(),
            "motor_viscous": self.motor_viscous.tolist(),
            "motor_coulomb": self.motor_coulomb.tolist(),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transmission):
            return NotImplemented
        return self.joint_names == other.joint_names and all(
            np.array_equal(getattr(self, k), getattr(other, k)) for k in CONFIG_KEYS[1:])

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Transmission.from_config, (self.to_config(),))

    # ------------------------------------------------------------ properties
    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def jacobian(self) -> np.ndarray:
        """J_qm = ∂q/∂q_m = K diag(N)⁻¹ (001 eq. 7.31), read-only (n, n)."""
        return self._j  # type: ignore[attr-defined, no-any-return]

    @property
    def inverse_jacobian(self) -> np.ndarray:
        """J_qm⁻¹ = ∂q_m/∂q = diag(N) K⁻¹, read-only (n, n): row k gives q̇_mk = Σ_j (J_qm⁻¹)_kj q̇_j."""
        return self._jinv  # type: ignore[attr-defined, no-any-return]

    @property
    def is_coupled(self) -> bool:
        """True when J_qm is not diagonal (a motor moves several joints)."""
        j = self._j  # type: ignore[attr-defined]
        return bool(np.any(j[~np.eye(self.dof, dtype=bool)] != 0.0))

    @property
    def has_motor_inertia(self) -> bool:
        return bool(np.any(self.motor_inertia != 0.0))

    @property
    def has_motor_friction(self) -> bool:
        return bool(np.any(self.motor_viscous != 0.0) or np.any(self.motor_coulomb != 0.0))

    # ------------------------------------------------------------ maps
    def _check(self, x: Any, what: str) -> np.ndarray:
        a = np.asarray(x, dtype=float)
        if a.ndim not in (1, 2) or a.shape[-1] != self.dof:
            raise ValueError(f"{what} must have shape ({self.dof},) or (N, {self.dof}), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what} contains NaN or inf")
        return a

    def motor_positions(self, q: Any) -> np.ndarray:
        """q_m = J_qm⁻¹ q = diag(N) K⁻¹ q (7.31 inverted)."""
        return self._check(q, "q") @ self._jinv.T  # type: ignore[attr-defined, no-any-return]

    def joint_positions(self, q_m: Any) -> np.ndarray:
        """q = J_qm q_m (7.31)."""
        return self._check(q_m, "q_m") @ self._j.T  # type: ignore[attr-defined, no-any-return]

    def motor_velocities(self, qd: Any) -> np.ndarray:
        """q̇_m = J_qm⁻¹ q̇."""
        return self._check(qd, "qd") @ self._jinv.T  # type: ignore[attr-defined, no-any-return]

    def joint_velocities(self, qd_m: Any) -> np.ndarray:
        """q̇ = J_qm q̇_m."""
        return self._check(qd_m, "qd_m") @ self._j.T  # type: ignore[attr-defined, no-any-return]

    def motor_torques(self, tau: Any) -> np.ndarray:
        """τ_m = J_qmᵀ Γ (001 eq. 7.33): the motor torques producing the joint efforts Γ."""
        return self._check(tau, "tau") @ self._j  # type: ignore[attr-defined, no-any-return]

    def joint_torques(self, tau_m: Any) -> np.ndarray:
        """Γ = J_qm⁻ᵀ τ_m (7.33 inverted): the joint efforts the motor torques produce."""
        return self._check(tau_m, "tau_m") @ self._jinv  # type: ignore[attr-defined, no-any-return]

    def rotor_inertia_matrix(self) -> np.ndarray:
        """I_a = J_qm⁻ᵀ diag(J_m) J_qm⁻¹ (n, n): the rotors' inertia referred to the joint side (7.29 for K = I:
        diag(N² J_m)); read-only, symmetric positive semi-definite."""
        return self._ia  # type: ignore[attr-defined, no-any-return]

    def motor_friction_torques(self, qd_m: Any) -> np.ndarray:
        """F_vm q̇_m + F_cm sign(q̇_m): the friction torques of the motors (motor side, 001 eq. 7.27 per motor)."""
        qd_m = self._check(qd_m, "qd_m")
        return self.motor_viscous * qd_m + self.motor_coulomb * np.sign(qd_m)

    def friction_torques(self, qd: Any) -> np.ndarray:
        """The motor friction referred to the joint side, J_qm⁻ᵀ (F_vm q̇_m + F_cm sign(q̇_m)), q̇_m = J_qm⁻¹ q̇."""
        return self.motor_friction_torques(self.motor_velocities(qd)) @ self._jinv  # type: ignore[attr-defined]
