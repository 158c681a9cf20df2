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

Layers: the fields, their validation and immutability and the helpers that need no algorithm are
:class:`~robot_dynamics.model.data.RobotData` (:mod:`robot_dynamics.model.data`), below the algorithms, which take
it; :class:`RobotModel` (a ``RobotData``) adds the engine and the algorithm methods, importing the algorithms
lazily, and no algorithm imports it back (``tools/check_import_cycles.py``).  Every model the package makes is a
``RobotModel``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import (
    DEFAULT_GRAVITY,
    EXTRA_FRICTION_NAMES,
    INERTIAL_NAMES,
    FrozenDict,
    RobotData,
    StandardParameters,
)
from .data import _construct as _construct  # pickles of earlier versions name robot_model._construct
from .mdh import MDHJoint, mdh_transform
from .transmission import Transmission


@dataclass
class RobotModel(RobotData):
    """A serial (or tree) robot in Khalil's modified-DH description: the data of :class:`RobotData` (fields,
    validation, immutability, kinematic and parameter helpers) plus the algorithm methods (facade).

    The dynamics methods run the model's compiled customized programs once they are ready
    (:mod:`robot_dynamics.symbolic.codegen`, :meth:`compile`, :meth:`set_backend`), the NumPy algorithms until
    then; the programs belong to this immutable model (a change makes a new model with its own engine).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        from ..symbolic.codegen import Engine

        self._engine = Engine(self)

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


__all__ = ["DEFAULT_GRAVITY", "EXTRA_FRICTION_NAMES", "INERTIAL_NAMES", "FrozenDict", "MDHJoint", "RobotData",
           "RobotModel", "StandardParameters", "Transmission", "mdh_transform"]
