"""Node ``dynamics_server``: the dynamic models of the robot in ``robot_description`` as services.

Services (joint order by name; empty ``joint_names`` = model order):
  ``~/inverse_dynamics`` (InverseDynamics): efforts along any number of states, one vectorized call.
  ``~/dynamic_terms`` (DynamicTerms): A(q), C(q, qd) qd, Q(q) and friction at one state.
  ``~/forward_dynamics`` (ForwardDynamics): accelerations; ``method`` empty = the model's engine (the
  customized O(n) program of 001 §7.6.2 once compiled, A⁻¹(Γ − H) until then), or the NumPy algorithm
  ``cholesky`` or ``recursive``.
  ``~/base_parameters`` (BaseParameters): names, values and relations of the base inertial parameters.
  ``~/kinematics`` (Kinematics): pose (DGM), kinematic Jacobian, twist J q̇, J̇ q̇ (002 eq. 5.47, q̈ = 0), SVD,
  manipulability, condition number and velocity/force ellipsoids (002 §5.8-5.9) of a link at one state.
  ``~/inertial_characteristics`` (InertialCharacteristics): the inertial coefficients d_ij, coupling
  k_ij = LF x KF and gravitational coefficients of seed 004 at one configuration and, with ``samples``, their
  ranges over the workspace, the counts of 004 Tables 2-3 and a verdict (decentralized PID or computed torque).
  ``~/inverse_kinematics`` (InverseKinematics): joint positions placing a link at a pose, within the URDF
  limits (002 ch. 6): damped least squares, or with ``secondary``/``weights`` the pseudo-inverse iteration
  with a secondary criterion (joint limits, manipulability, a posture) and joint weights (002 eq. 6.30).
  The start is ``initial_positions``, else the latest ``/joint_states`` naming every joint (taken when a
  request needs it, see :class:`_JointStates`), else mid-range.  The errors reported are measured through
  the DGM at the returned positions; the manipulability is that of the task rows (3 with ``position_only``).

Every bad request is answered with ``success=false`` and a message ``"<cause>: <sentence>"``
(causes: ``no_model``, ``too_large``, ``empty``, ``joint_names``, ``ragged``, ``non_finite``,
``overflow``, ``samples``, ``busy``, ``unknown_method``, ``singular_inertia``, ``unknown_link``, ``frame_id``, ``quaternion``,
``tolerance``, ``unknown_secondary``, ``all_solutions``, ``no_closed_form``, ``posture``, ``weights``, ``unreachable``, ``no_solution``,
``invalid``, ``internal_error``); every output is checked finite (but a condition number or force
ellipsoid length, infinite at a singularity); the node keeps serving.

Bounded work: each service has its own callback group (so a slow ``~/inverse_kinematics``, at most the
core's iterations times its starts, never blocks the others) and the node runs a multithreaded
executor (``~/inverse_dynamics`` runs on a hidden side node with its own single-threaded executor thread,
see ``__init__``).  Huge requests (issue 29):

* ``~/inverse_dynamics``: ``points`` is bounded in ``InverseDynamics.srv`` (``[<=100000]``, = ``MAX_POINTS``;
  ``max_points`` can only lower it), so a client of this interface cannot send more: rosidl's C serializer refuses
  it in ``call_async`` (and the Python setter, with ``ROS_PYTHON_CHECK_FIELDS=1``), nothing reaches the node.  A
  client of another definition of the service (unbounded) is not even matched by Fast DDS (the type information
  differs) — unless its participant sends none (``fastdds.type_propagation`` disabled, or another DDS stack):
  then rclpy, which has no serialized take for services, would turn the request into C structures and then Python
  objects (6-10 s and ~1.2 GB for 10^6 points) before any user code runs.  :class:`RequestGate` counts the points in
  the C structure, between the two: a request above ``max_points`` reaches the callback as a marker and is refused
  (``too_large``) without a single Python object.  What remains is the C take itself (~0.3-0.5 s for 10^6 points,
  GIL held by rclpy: a call of another service arriving then waits that long; the others answer as when idle).
  The heap is trimmed afterwards (``malloc_trim``) and the DDS readers of this process free a sample's buffer once
  taken (:func:`reader_memory_profile`), so the RSS comes back (figures: test/test_service_bounds.py).
* ``~/inertial_characteristics``: every check (``samples`` first) runs before the report, in a reentrant
  callback group: a request arriving while a workspace report runs is answered at once (refused, answered at
  one configuration, or refused ``busy`` when it asks for a second report), never queued behind it.

Two things would still hold the GIL for seconds: CPython's automatic full collections while a big (accepted)
request is being turned into objects (each one walks every object made so far) and freeing a refused request at
once.  So this process collects garbage on its own schedule (young generations four times a second, a full
collection every minute, from a housekeeping thread) and frees big refused requests in slices.
"""

from __future__ import annotations

import gc
import json
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics_interfaces.srv import (
    BaseParameters,
    DynamicTerms,
    ForwardDynamics,
    InertialCharacteristics,
    InverseDynamics,
    InverseKinematics,
    Kinematics,
    SetDynamicParameters,
)

from ..dynamics.inertial_characteristics import MAX_REPORT_SAMPLES, inertia_report, inertial_characteristics
from ..identification.update import updated_model
from ..model.robot_model import RobotModel
from .conversions import JointOrder, float_rows, short
from .description import RobotDescription
from .kinematics_services import KinematicsServices, _check_outputs, _Loaded
from .parameter_files import load_schema
from .request_gate import NamesAndPoints, Oversize, RequestGate, reader_memory_profile, trim_heap
from .runtime import Refusals, Refused, own_participant, poll_sim_time, run_node

MAX_POINTS = 100_000  # = the bound of InverseDynamics.srv's points[<=100000] (test_service_bounds checks both agree)
REAP_ABOVE = 10_000  # a refused request with more points is freed by a background thread, in slices
REAP_SLICE = 2_000
YOUNG_GC_PERIOD = 0.25  # s: collection of the young generations (cost ~ objects made since the last one)
FULL_GC_PERIOD = 60.0  # s: full collection
TRIM_FOR = 2.0  # s: the heap is trimmed at each housekeeping round this long after a big refused request
MIN_INERTIA_RCOND = 1e-12  # forward dynamics refuses A(q) with lambda_min <= this * lambda_max
METHODS = ("cholesky", "recursive")
JOINT_STATE_QUEUE = 10  # /joint_states messages kept between two requests that need them
MAX_JOINT_STATE_BYTES = 1_000_000  # a bigger /joint_states message is skipped unread


def _first_bad(a: np.ndarray) -> int:
    """Index of the first row of ``a`` (m, ...) with a non-finite value."""
    return int(np.flatnonzero(~np.isfinite(a.reshape(len(a), -1)).all(axis=1))[0])


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays in a report (``json.dumps`` default)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _never_called(msg: object) -> None:
    """Callback of the /joint_states subscription: no executor spins its node (a request takes the messages)."""


class _JointStates:
    """The latest ``/joint_states`` position of each joint, merged by name over every publisher: the start of
    ``~/inverse_kinematics`` requests without ``initial_positions``.

    Subscribed as raw bytes (best effort, the last ``JOINT_STATE_QUEUE`` messages) on a hidden node of this
    process that no executor spins, so a 1 kHz state stream costs the server nothing; a request that needs
    the state takes and deserializes what arrived since the last one.  Non-finite positions are skipped."""

    def __init__(self, node: Node) -> None:
        self.node = Node(f"_{node.get_name()}_joint_states", namespace=node.get_namespace(), context=node.context,
                         use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
        sensor = qos_profile_sensor_data
        qos = QoSProfile(history=sensor.history, depth=JOINT_STATE_QUEUE, reliability=sensor.reliability,
                         durability=sensor.durability)
        self._sub = self.node.create_subscription(JointState, node.resolve_topic_name("joint_states"),
                                                  _never_called, qos, raw=True)
        self._known: dict[str, float] = {}
        self._lock = threading.Lock()

    def positions(self, names: Sequence[str]) -> np.ndarray | None:
        """The latest positions of ``names`` (in that order), or None when some joint was never seen."""
        wanted = set(names)
        with self._lock:
            for _ in range(JOINT_STATE_QUEUE):
                with self._sub.handle:
                    got = self._sub.handle.take_message(JointState, True)
                if got is None:
                    break
                if len(got[0]) > MAX_JOINT_STATE_BYTES:
                    continue
                try:
                    msg = deserialize_message(got[0], JointState)
                except Exception:  # noqa: BLE001 - a malformed message is skipped
                    continue
                for name, value in zip(msg.name, msg.position, strict=False):
                    if name in wanted and math.isfinite(value):
                        self._known[name] = float(value)
            if not wanted <= self._known.keys():
                return None
            return np.array([self._known[n] for n in names])

    def destroy(self) -> None:
        self.node.destroy_node()


PARAMETERS = load_schema("dynamics_server")  # dynamics_server.yaml in robot_dynamics/ros/schemas (types, defaults, ranges, units)


class DynamicsServer(KinematicsServices, Node):
    multithreaded = True
    executor_threads = 8  # six services, the description, the parameter services

    def __init__(self) -> None:
        super().__init__("dynamics_server")
        self.sim_time_thread = poll_sim_time(self)  # use_sim_time: /clock polled, not an executor wake-up per message
        self.params = PARAMETERS.copy()
        self.params.declare(self)
        self.params.attach(self)
        self.refusals = Refusals(self)
        self._loaded: _Loaded | None = None
        self._reap_queue: queue.SimpleQueue[list] = queue.SimpleQueue()
        self._trim = threading.Event()  # set after a big refused request: the housekeeping thread trims the heap
        gc.disable()  # collections on our schedule: see the module docstring
        threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()
        services: tuple[tuple[Any, str, Callable], ...] = (
            (DynamicTerms, "~/dynamic_terms", self.dynamic_terms),
            (ForwardDynamics, "~/forward_dynamics", self.forward_dynamics),
            (BaseParameters, "~/base_parameters", self.base_parameters),
            (SetDynamicParameters, "~/set_dynamic_parameters", self.set_dynamic_parameters),
            (Kinematics, "~/kinematics", self.kinematics),
            # iterative, up to seconds for a target it cannot reach: its own group, like every service here
            (InverseKinematics, "~/inverse_kinematics", self.inverse_kinematics),
        )
        for srv_type, name, handler in services:
            self.create_service(srv_type, name, self._serve(handler), callback_group=MutuallyExclusiveCallbackGroup())
        # a workspace report of 10^5 samples takes seconds: reentrant, so a request arriving meanwhile is checked
        # (and refused, or answered at one configuration) at once; one report at a time (the others: "busy")
        self._report_lock = threading.Lock()
        self.create_service(InertialCharacteristics, "~/inertial_characteristics",
                            self._serve(self.inertial_characteristics), callback_group=ReentrantCallbackGroup())
        # ~/inverse_dynamics, the hot path of clients (e.g. feed-forward for each planned trajectory), lives on a
        # hidden side node of this process spun by its own single-threaded executor (runtime.run_node): the
        # multithreaded executor's hand-off costs about 1 ms per call.  Same resolved name (remaps of this node
        # applied), no parameters or rosout of its own; a huge request blocks only this service's thread, and its
        # transfer only this node's participant (own_participant: the other services' traffic goes on meanwhile).
        side = Node(f"_{self.get_name()}_inverse_dynamics", namespace=self.get_namespace(), context=own_participant(),
                    use_global_arguments=False, start_parameter_services=False, enable_rosout=False)
        service = side.create_service(InverseDynamics, self.resolve_service_name("~/inverse_dynamics"),
                                      self._serve(self.inverse_dynamics))
        # the size of a request counted in rclpy's C structure, before any Python object is made (RequestGate)
        probe = InverseDynamics.Request(joint_names=["a", "b", "c"], points=[JointTrajectoryPoint(positions=[1.0])] * 2)
        self.gate = RequestGate.install(service, NamesAndPoints, ("points",), self._max_points, probe, 2)
        if self.gate is None:
            self.get_logger().warning("~/inverse_dynamics: this rclpy does not allow counting the points of a request "
                                      "before converting it: max_points is checked after the conversion")
        self.side_nodes = (side,)
        self.joint_states = _JointStates(self)
        self.description = RobotDescription(self, self._on_model, MutuallyExclusiveCallbackGroup(), lock_from_joint_states=True)

    def destroy_node(self) -> None:
        self.joint_states.destroy()
        super().destroy_node()

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
                if isinstance(request, Oversize):  # counted by the RequestGate: no Python object was made
                    self._trim.set()
                    raise Refused("too_large", f"{request.points} points exceed max_points={self._max_points()} "
                                  f"(counted before conversion to Python objects; refused "
                                  f"{1e3 * (time.perf_counter() - request.counted):.3f} ms after)")
                if isinstance(request, BaseException):
                    raise Refused("invalid", f"the request could not be converted: {type(request).__name__}: "
                                  f"{short(str(request))}")
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
                if cause == "too_large" and not isinstance(request, Oversize):
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
        if isinstance(points, list) and len(points) > REAP_ABOVE:
            request.points = []
            self._reap_queue.put(points)

    def _max_points(self) -> int:
        return min(int(self.params.values["max_points"]), MAX_POINTS)

    def _housekeeping(self) -> None:
        """Free refused requests in slices; collect garbage (young generations often, all rarely); give the
        heap back to the system after a big refused request."""
        last_full = time.monotonic()
        trim_until = 0.0
        while True:
            try:
                items = self._reap_queue.get(timeout=YOUNG_GC_PERIOD)
            except queue.Empty:
                items = []
            if items:
                self._trim.set()
            while items:
                del items[-REAP_SLICE:]
                time.sleep(0.001)  # let the other callbacks take the GIL between slices
            if time.monotonic() - last_full > FULL_GC_PERIOD:
                gc.collect()
                last_full = time.monotonic()
            else:
                gc.collect(1)
            if self._trim.is_set():  # for TRIM_FOR s: DDS frees the sample's buffers after the take
                self._trim.clear()
                trim_until = time.monotonic() + TRIM_FOR
            if time.monotonic() < trim_until:
                trim_heap()  # (ctypes releases the GIL meanwhile)

    # ------------------------------------------------------------------ services
    def inverse_dynamics(self, loaded: _Loaded, request: InverseDynamics.Request, response: InverseDynamics.Response) -> None:
        npts = len(request.points)  # first, before any per-point work (the RequestGate counted it already)
        limit = self._max_points()
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

    # ------------------------------------------------------------------ kinematics

    def inertial_characteristics(self, loaded: _Loaded, request: InertialCharacteristics.Request,
                                 response: InertialCharacteristics.Response) -> None:
        """Seed 004 at one configuration and/or over the workspace, matrices in the request's joint order."""
        model = loaded.model
        n = model.dof
        samples = int(request.samples)
        if samples > MAX_REPORT_SAMPLES or samples == 1:
            raise Refused("samples", f"samples must be 0 (no workspace report) or in [2, {MAX_REPORT_SAMPLES}], "
                                     f"got {samples}")
        if not len(request.positions) and not samples:
            raise Refused("empty", "give positions (one configuration), samples > 0 (the workspace), or both")
        order = JointOrder(model.joint_names, request.joint_names)
        perm = order.to_request
        rotor = not request.exclude_rotor_inertia
        response.joint_names = order.names

        def square(a: np.ndarray) -> list[float]:
            return np.asarray(a, float)[np.ix_(perm, perm)].ravel().tolist()

        if len(request.positions):
            q = order.model_vector(request.positions, "positions", n)
            with np.errstate(all="ignore"):
                ic = inertial_characteristics(model, q, rotor_inertia=rotor)
            _check_outputs(inertia=ic.d, coupling=ic.k, kinematic_factor=ic.KF, gravity=ic.G)
            response.inertia, response.coupling = square(ic.d), square(ic.k)
            response.loading_factor, response.kinematic_factor = square(ic.LF), square(ic.KF)
            response.gravity = ic.G[perm].tolist()
        if samples:
            if not self._report_lock.acquire(blocking=False):
                raise Refused("busy", "a workspace report is being computed: ask again when it is done "
                                      "(one at a time; requests without samples are answered meanwhile)")
            try:
                report = inertia_report(model, samples, int(request.seed), rotor_inertia=rotor)
            finally:
                self._report_lock.release()
            response.inertia_min, response.inertia_max = square(report.d_min), square(report.d_max)
            response.coupling_max = square(report.k_max)
            response.max_coupling = float(report.max_coupling)
            response.max_coupling_joints = [model.joint_names[i] for i in report.max_pair]
            response.max_coupling_positions = report.max_configuration[perm].tolist()
            response.nonzero_coefficients = int(report.nonzero_total)
            response.general_coefficients = int(report.general_total)
            response.sparsity = float(report.sparsity)
            response.verdict = response.message = report.verdict
            response.report_json = json.dumps(report.to_dict(), allow_nan=False, default=_json_default)



def main(args: list[str] | None = None) -> int:
    reader_memory_profile()  # before rclpy creates the participant
    return run_node(DynamicsServer, args)


if __name__ == "__main__":
    raise SystemExit(main())
