"""Node ``dynamics_server``: the dynamic models of the robot in ``robot_description`` as services.

Services (joint order by name; empty ``joint_names`` = model order):
  ``~/inverse_dynamics`` (InverseDynamics): efforts along any number of states, one vectorized call.
  ``~/dynamic_terms`` (DynamicTerms): A(q), C(q, qd) qd, Q(q) and friction at one state.
  ``~/forward_dynamics`` (ForwardDynamics): accelerations; ``method`` empty = the model's engine (the
  customized O(n) program of 001 §7.6.2 once compiled, A⁻¹(Γ − H) until then), or the NumPy algorithm
  ``cholesky`` or ``recursive``.
  ``~/base_parameters`` (BaseParameters): names, values and relations of the base inertial parameters.

Every bad request is answered with ``success=false`` and a message ``"<cause>: <sentence>"``
(causes: ``no_model``, ``too_large``, ``empty``, ``joint_names``, ``ragged``, ``non_finite``,
``overflow``, ``unknown_method``, ``singular_inertia``, ``invalid``, ``internal_error``); every
output is checked finite; the node keeps serving.

Bounded work: each service has its own callback group and the node runs a multithreaded
executor (``~/inverse_dynamics`` runs on a hidden side node with its own single-threaded executor thread,
see ``__init__``), so one huge request (rclpy turns it into Python objects before any of our code runs)
never blocks the other services; the size (``max_points``) is checked first, before any
per-point work, and the unpacking/packing is one array operation per field.  Two things would
still hold the GIL for seconds: CPython's automatic full collections while a huge request is
being turned into objects (each one walks every object made so far) and freeing a refused
request at once.  So this process collects garbage on its own schedule (young generations four
times a second, a full collection every minute, from a housekeeping thread) and frees big refused
requests in slices.  What remains is rclpy's own take of the request into C structures, which holds
the GIL (about a second per 10^6 points).
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from robot_dynamics_interfaces.srv import (
    BaseParameters,
    DynamicTerms,
    ForwardDynamics,
    InverseDynamics,
    SetDynamicParameters,
)

from ..identification.update import updated_model
from ..model.robot_model import RobotModel
from .conversions import JointOrder, float_rows, short
from .description import RobotDescription
from .parameters import Param, Schema
from .runtime import Refusals, Refused, run_node

MAX_POINTS = 100_000
REAP_ABOVE = 10_000  # a refused request with more points is freed by a background thread, in slices
REAP_SLICE = 2_000
YOUNG_GC_PERIOD = 0.25  # s: collection of the young generations (cost ~ objects made since the last one)
FULL_GC_PERIOD = 60.0  # s: full collection
MIN_INERTIA_RCOND = 1e-12  # forward dynamics refuses A(q) with lambda_min <= this * lambda_max
METHODS = ("cholesky", "recursive")


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


def _first_bad(a: np.ndarray) -> int:
    """Index of the first row of ``a`` (m, ...) with a non-finite value."""
    return int(np.flatnonzero(~np.isfinite(a.reshape(len(a), -1)).all(axis=1))[0])


def _check_outputs(**outputs: np.ndarray) -> None:
    for name, value in outputs.items():
        if not np.all(np.isfinite(value)):
            raise Refused("overflow", f"{name} is not finite (inputs too large for float64)")


PARAMETERS = Schema(
    Param("max_points", MAX_POINTS, "most points accepted in one ~/inverse_dynamics request (checked before any "
          "per-point work)", lo=1, hi=10_000_000, live=True),
)


class DynamicsServer(Node):
    multithreaded = True
    executor_threads = 6  # four services, the description, the parameter services

    def __init__(self) -> None:
        super().__init__("dynamics_server")
        self.params = PARAMETERS.copy()
        self.params.declare(self)
        self.params.attach(self)
        self.refusals = Refusals(self)
        self._loaded: _Loaded | None = None
        self._reap_queue: queue.SimpleQueue[list] = queue.SimpleQueue()
        gc.disable()  # collections on our schedule: see the module docstring
        threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()
        services: tuple[tuple[Any, str, Callable], ...] = (
            (DynamicTerms, "~/dynamic_terms", self.dynamic_terms),
            (ForwardDynamics, "~/forward_dynamics", self.forward_dynamics),
            (BaseParameters, "~/base_parameters", self.base_parameters),
            (SetDynamicParameters, "~/set_dynamic_parameters", self.set_dynamic_parameters),
        )
        for srv_type, name, handler in services:
            self.create_service(srv_type, name, self._serve(handler), callback_group=MutuallyExclusiveCallbackGroup())
        # ~/inverse_dynamics, the hot path of clients (e.g. feed-forward for each planned trajectory), lives on a
        # hidden side node of this process spun by its own single-threaded executor (runtime.run_node): the
        # multithreaded executor's hand-off costs about 1 ms per call.  Same resolved name (remaps of this node
        # applied), no parameters or rosout of its own; a huge request blocks only this service's thread.
        side = Node(f"_{self.get_name()}_inverse_dynamics", namespace=self.get_namespace(), context=self.context,
                    use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
        side.create_service(InverseDynamics, self.resolve_service_name("~/inverse_dynamics"),
                            self._serve(self.inverse_dynamics))
        self.side_nodes = (side,)
        self.description = RobotDescription(self, self._on_model, MutuallyExclusiveCallbackGroup(), lock_from_joint_states=True)

    @property
    def model(self) -> RobotModel | None:
        loaded = self._loaded
        return loaded.model if loaded is not None else None

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self._loaded = _Loaded(model)  # one assignment: a request uses the old model or the new one

    def _serve(self, handler: Callable[[_Loaded, Any, Any], None]) -> Callable[[Any, Any], Any]:
        """Wrap a handler: every refusal or error becomes ``success=false`` with ``"<cause>: <why>"``."""

        def call(request: Any, response: Any) -> Any:
            received = time.perf_counter()
            try:
                loaded = self._loaded  # read once: the whole request sees one model
                if loaded is None:
                    raise Refused("no_model", "no robot model yet (robot_description not received)")
                handler(loaded, request, response)
                response.success = True
                if not response.message:
                    response.message = "ok"
                return response
            except Refused as exc:
                cause, text = exc.cause, str(exc)
                if cause == "too_large":
                    text += f" (refused {1e3 * (time.perf_counter() - received):.3f} ms after the callback received it)"
            except ValueError as exc:  # the core's own checks of the inputs
                cause, text = "invalid", str(exc)
            except Exception as exc:  # noqa: BLE001 - the node never dies on a bad request
                cause, text = "internal_error", f"{type(exc).__name__}: {exc}"
            self.refusals.refuse(cause, text)
            self._release(request)
            return type(response)(success=False, message=f"{cause}: {text}")

        return call

    def _release(self, request: Any) -> None:
        """Hand a refused request's big point list to the reaper: freeing 10^6 points at once would
        hold the GIL for a second or more and stall the other services."""
        points = getattr(request, "points", None)
        if points is not None and len(points) > REAP_ABOVE:
            request.points = []
            self._reap_queue.put(points)

    def _housekeeping(self) -> None:
        """Free refused requests in slices; collect garbage (young generations often, all rarely)."""
        last_full = time.monotonic()
        while True:
            try:
                items = self._reap_queue.get(timeout=YOUNG_GC_PERIOD)
            except queue.Empty:
                items = []
            while items:
                del items[-REAP_SLICE:]
                time.sleep(0.001)  # let the other callbacks take the GIL between slices
            if time.monotonic() - last_full > FULL_GC_PERIOD:
                gc.collect()
                last_full = time.monotonic()
            else:
                gc.collect(1)

    # ------------------------------------------------------------------ services
    def inverse_dynamics(self, loaded: _Loaded, request: InverseDynamics.Request, response: InverseDynamics.Response) -> None:
        npts = len(request.points)  # first, before any per-point work
        limit = self.params.values["max_points"]
        if npts > limit:
            raise Refused("too_large", f"{npts} points exceed max_points={limit}")
        if npts == 0:
            raise Refused("empty", "no points in the request")
        model = loaded.model
        n = model.dof
        order = JointOrder(model.joint_names, request.joint_names)
        pts = request.points
        q = order.points_field(pts, "positions", n, optional=False)
        qd = order.points_field(pts, "velocities", n, optional=True)
        qdd = order.points_field(pts, "accelerations", n, optional=True)
        f_ext = None
        if request.use_tip_wrench:
            w = request.tip_wrench
            f_ext = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
            if not np.all(np.isfinite(f_ext)):
                raise Refused("non_finite", "tip_wrench contains NaN or inf")
        with np.errstate(all="ignore"):
            tau = model.inverse_dynamics(q, qd, qdd, f_ext=f_ext)
        if not np.all(np.isfinite(tau)):
            raise Refused("overflow", f"the efforts of points[{_first_bad(tau)}] are not finite (inputs too large for float64)")
        for p, row in zip(pts, float_rows(tau[:, order.to_request]), strict=True):
            p.effort = row
        response.joint_names = order.names
        response.points = pts
        response.message = f"{npts} point(s)"

    @staticmethod
    def _state(model: RobotModel, request: Any) -> tuple[JointOrder, np.ndarray, np.ndarray]:
        """Joint order, positions and velocities (empty = zeros) of a one-state request, in model order."""
        n = model.dof
        order = JointOrder(model.joint_names, request.joint_names)
        q = order.model_vector(request.positions, "positions", n)
        qd = order.model_vector(request.velocities, "velocities", n) if len(request.velocities) else np.zeros(n)
        return order, q, qd

    def dynamic_terms(self, loaded: _Loaded, request: DynamicTerms.Request, response: DynamicTerms.Response) -> None:
        model = loaded.model
        order, q, qd = self._state(model, request)
        perm = order.to_request
        with np.errstate(all="ignore"):
            a = model.inertia_matrix(q)[np.ix_(perm, perm)]
            coriolis = model.coriolis_matrix(q, qd) @ qd
            gravity = model.gravity_torques(q)
            friction = model.friction_torques(qd)  # 001 eq. 7.26/7.28 (+ offset, Stribeck when set)
        _check_outputs(inertia_matrix=a, coriolis=coriolis, gravity=gravity, friction=friction)
        response.joint_names = order.names
        response.inertia_matrix = a.ravel().tolist()
        response.coriolis = coriolis[perm].tolist()
        response.gravity = gravity[perm].tolist()
        response.friction = friction[perm].tolist()

    def forward_dynamics(self, loaded: _Loaded, request: ForwardDynamics.Request, response: ForwardDynamics.Response) -> None:
        model = loaded.model
        method = request.method or None  # empty: the engine (compiled customized model)
        if method is not None and method not in METHODS:
            raise Refused("unknown_method", f"unknown method {short(method)}; use 'cholesky' or 'recursive'")
        order, q, qd = self._state(model, request)
        tau = order.model_vector(request.efforts, "efforts", model.dof)
        with np.errstate(all="ignore"):
            a = model.inertia_matrix(q)
        eig = np.linalg.eigvalsh(a) if np.all(np.isfinite(a)) else np.array([np.nan])
        if not (np.all(np.isfinite(eig)) and eig[0] > MIN_INERTIA_RCOND * max(float(eig[-1]), 0.0)):
            raise Refused("singular_inertia", "the inertia matrix at this state is not positive definite "
                          "(check the model's masses, inertias and rotor inertias)")
        with np.errstate(all="ignore"):
            qdd = model.forward_dynamics(q, qd, tau, method=method)
        _check_outputs(accelerations=qdd)
        response.joint_names = order.names
        response.accelerations = qdd[order.to_request].tolist()

    def set_dynamic_parameters(self, loaded: _Loaded, request: SetDynamicParameters.Request,
                               response: SetDynamicParameters.Response) -> None:
        """Identified parameters into the running model (:func:`~robot_dynamics.identification.update.updated_model`):
        every later request uses the new model (one assignment; a request under way finishes with the old one)."""
        model = updated_model(loaded.model, list(request.names), np.asarray(request.values, dtype=float))
        self._loaded = _Loaded(model)
        source = request.source or "a client"
        response.message = f"{len(request.names)} dynamic parameters from {source} in use"
        self.get_logger().info(f"model swapped: {response.message}")

    def base_parameters(self, loaded: _Loaded, request: BaseParameters.Request, response: BaseParameters.Response) -> None:
        b = loaded.base_parameters()
        values = np.asarray(b.values, dtype=float)
        _check_outputs(values=values)
        response.names = list(b.names)
        response.values = values.tolist()
        response.relations = [str(r) for r in b.relations]
        response.eliminated = list(b.eliminated)
        response.message = f"{len(b.names)} base parameters"


def main(args: list[str] | None = None) -> int:
    return run_node(DynamicsServer, args)


if __name__ == "__main__":
    raise SystemExit(main())
