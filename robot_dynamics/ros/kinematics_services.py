"""The dynamics server's kinematics services: ``~/kinematics`` (poses, Jacobians, velocities of links) and
``~/inverse_kinematics`` (the numeric or closed-form IGM within the limits)."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from robot_dynamics_interfaces.srv import (
    InverseKinematics,
    Kinematics,
)

from ..kinematics.analysis import jdot_qd, kinematic_analysis, link_velocity, manipulability
from ..kinematics.analytic_ik import analytic_inverse_geometry
from ..kinematics.redundancy import inverse_kinematics as solve_inverse_kinematics
from ..kinematics.redundancy import reach_bound
from ..model.robot_model import RobotModel
from .conversions import JointOrder, pose_from_msg, pose_to_msg, short
from .runtime import Refused

IK_TOLERANCE = 1e-10  # m and rad: ~/inverse_kinematics with tolerance 0
MIN_IK_TOLERANCE = 1e-12  # below, float64 round-off of the DGM: the solver would only run out its iterations
QUATERNION_TOLERANCE = 1e-6  # |norm - 1| accepted (then normalized)
SECONDARY = ("", "none", "joint_limits", "manipulability", "posture")
MAX_WEIGHT_RATIO = 1e12  # largest / smallest joint weight


class _Loaded:
    """One model and what is derived from it: replaced as a whole when a new description arrives."""

    def __init__(self, model: RobotModel) -> None:
        self.model = model
        self._base: Any = None
        self._lock = threading.Lock()

    def base_parameters(self) -> Any:
        with self._lock:  # computed on the first request (symbolic work stays off the hot paths)
            if self._base is None:
                self._base = self.model.base_parameters()
            return self._base


def _check_outputs(**outputs: np.ndarray) -> None:
    for name, value in outputs.items():
        if not np.all(np.isfinite(value)):
            raise Refused("overflow", f"{name} is not finite (inputs too large for float64)")

class KinematicsServices:
    """The dynamics server's kinematics services: ``~/kinematics`` (poses, Jacobians, velocities of links) and: a mixin of the node (its attributes)."""

    @staticmethod
    def _link(model: RobotModel, name: str) -> str:
        """The request's link (empty = the model's tip link), refused when the model has no such frame."""
        link = name or model.tip_link
        if not link:
            raise Refused("unknown_link", "no link given and the model has no tip link (name a link, or set the "
                          "tip_link parameter)")
        if link not in model.frames:
            raise Refused("unknown_link", f"unknown link {short(link)}; the model's links: {sorted(model.frames)}")
        return link

    def kinematics(self, loaded: _Loaded, request: Kinematics.Request, response: Kinematics.Response) -> None:
        """Kinematic analysis of a link at one state (002 ch. 5), outputs in the request's joint order."""
        model = loaded.model
        order, q, qd = self._state(model, request)
        link = self._link(model, request.link)
        perm = order.to_request
        with np.errstate(all="ignore"):
            pose = model.forward_kinematics(q, link)  # DGM (002 eq. 3.7)
            ka = kinematic_analysis(model, q, link)  # SVD of J (002 §5.8-5.9)
            twist = link_velocity(model, q, qd, link)  # J q̇ by the velocity recursion
            acc = jdot_qd(model, q, qd, link)  # J̇ q̇ (002 eq. 5.47, q̈ = 0)
        jac = ka.jacobian[:, perm]
        sigma = ka.singular_values[: min(6, model.dof)]
        _check_outputs(pose=pose, jacobian=jac, twist=twist, jdot_qd=acc, singular_values=ka.singular_values,
                       velocity_axes=ka.velocity_axes, manipulability=np.asarray(ka.manipulability))
        response.link, response.base_link = link, model.base_link
        response.pose = pose_to_msg(pose)
        response.joint_names = order.names
        response.jacobian = jac.ravel().tolist()
        response.twist = twist.tolist()
        response.jdot_qd = acc.tolist()
        response.singular_values = sigma.tolist()
        response.rank = int(ka.rank)
        response.manipulability = float(ka.manipulability)
        response.condition_number = float(ka.condition_number)
        response.velocity_axes = ka.velocity_axes.ravel().tolist()
        response.velocity_lengths = ka.velocity_lengths.tolist()
        response.force_lengths = ka.force_lengths.tolist()
        response.message = f"rank {ka.rank}, condition number {ka.condition_number:.6g}"

    def inverse_kinematics(self, loaded: _Loaded, request: InverseKinematics.Request,
                           response: InverseKinematics.Response) -> None:
        """Joint positions placing a link at a pose (002 ch. 6), within the URDF limits, in the request's joint order."""
        model = loaded.model
        n = model.dof
        order = JointOrder(model.joint_names, request.joint_names)
        link = self._link(model, request.link)
        frame = request.target.header.frame_id
        if frame not in ("", model.base_link):
            raise Refused("frame_id", f"target.header.frame_id {short(frame)} is not the model's base link "
                          f"{model.base_link!r} (or empty)")
        position_only = bool(request.position_only)
        target = pose_from_msg(request.target.pose, "target.pose", orientation=not position_only,
                               unit_tolerance=QUATERNION_TOLERANCE)
        tol = float(request.tolerance)
        if tol == 0.0:
            tol = IK_TOLERANCE
        if not (math.isfinite(tol) and tol >= MIN_IK_TOLERANCE):
            raise Refused("tolerance", f"tolerance {tol!r} must be finite and >= {MIN_IK_TOLERANCE:g} m/rad "
                          f"(0 = {IK_TOLERANCE:g})")
        secondary: Any = request.secondary
        if secondary not in SECONDARY:
            raise Refused("unknown_secondary", f"unknown secondary {short(secondary)}; use one of {list(SECONDARY)}")
        if secondary == "posture":
            secondary = order.model_vector(request.posture, "posture", n)
        elif len(request.posture):
            raise Refused("posture", f"posture given but secondary is {request.secondary!r} (use 'posture')")
        else:
            secondary = secondary or None  # "": damped least squares (unless weights are given)
        weights = None
        if len(request.weights):
            weights = order.model_vector(request.weights, "weights", n)
            if not (weights.min() > 0.0 and weights.max() <= MAX_WEIGHT_RATIO * weights.min()):
                raise Refused("weights", f"weights must be > 0 and within a ratio of {MAX_WEIGHT_RATIO:g} of each other")
        if len(request.initial_positions):
            q0, start = order.model_vector(request.initial_positions, "initial_positions", n), "initial_positions"
        else:
            q0 = self.joint_states.positions(model.joint_names)
            start = "/joint_states" if q0 is not None else "mid-range"
        center, radius = reach_bound(model, link)  # a far target is refused at once, not after every start
        dist = float(np.linalg.norm((target if position_only else target[:3, 3]) - center))
        if not dist <= radius * (1.0 + 1e-9) + 1e-12:
            raise Refused("unreachable", f"the target of {link!r} is outside the workspace: {dist:.6g} m from "
                          f"{np.round(center, 6).tolist()}, beyond the reach {radius:.6g} m of the arm")
        lim = model.limits
        solutions: list[np.ndarray] = []
        if request.all_solutions:
            if position_only or request.secondary or weights is not None:
                raise Refused("all_solutions", "all_solutions takes a full pose, without secondary or weights")
            if q0 is None:
                q0 = 0.5 * (lim["lower"] + lim["upper"])
            try:
                with np.errstate(all="ignore"):
                    solutions = analytic_inverse_geometry(model, target, link, q_ref=q0, within_limits=True,
                                                          tolerance=max(tol, 1e-9))
            except ValueError as exc:
                raise Refused("no_closed_form", f"no closed-form inverse geometry for {link!r}: {exc}") from None
            if not solutions:
                raise Refused("no_solution", "the closed-form inverse geometry has no solution within the joint limits")
            solutions.sort(key=lambda s: float(np.linalg.norm(s - q0)))
            q = solutions[0]
        else:
            try:
                with np.errstate(all="ignore"):
                    q = solve_inverse_kinematics(model, target, q0, link, position_only=position_only, tolerance=tol,
                                                 secondary=secondary, weights=weights)
            except ValueError as exc:  # the inputs were checked above: the core found no solution
                raise Refused("no_solution", str(exc)) from None
        q = np.clip(q, lim["lower"], lim["upper"])  # the core keeps its iterates inside: a no-op, as a guarantee
        # the errors of the answer, measured here through the DGM (not taken from the solver)
        pose = model.forward_kinematics(q, link)
        goal = target if position_only else target[:3, 3]
        position_error = float(np.linalg.norm(goal - pose[:3, 3]))
        orientation_error = 0.0 if position_only else float(Rotation.from_matrix(target[:3, :3].T @ pose[:3, :3]).magnitude())
        w = float(manipulability(model, q, link, rows="position" if position_only else "all"))
        _check_outputs(positions=q, manipulability=np.asarray(w))
        if max(position_error, orientation_error) > 2.0 * tol:  # the core bounds each component by tol: norm <= 1.74 tol
            raise Refused("no_solution", f"the solution misses the target by {position_error:.3g} m, "
                          f"{orientation_error:.3g} rad (tolerance {tol:g}), measured through the DGM")
        response.joint_names = order.names
        response.positions = q[order.to_request].tolist()
        if solutions:
            response.solutions = np.array(solutions)[:, order.to_request].ravel().tolist()
        response.position_error = position_error
        response.orientation_error = orientation_error
        response.manipulability = w
        response.message = (f"solved from {start}: position error {position_error:.3g} m, orientation error "
                            f"{orientation_error:.3g} rad")
