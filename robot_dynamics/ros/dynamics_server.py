"""Node ``dynamics_server``: the dynamic models of the robot in ``robot_description`` as services.

Services (joint order by name; empty ``joint_names`` = model order):
  ``~/inverse_dynamics`` (InverseDynamics): efforts along any number of states, one vectorized call.
  ``~/dynamic_terms`` (DynamicTerms): A(q), C(q, qd) qd, Q(q) and friction at one state.
  ``~/forward_dynamics`` (ForwardDynamics): accelerations, method ``cholesky`` or ``recursive``.
  ``~/base_parameters`` (BaseParameters): names, values and relations of the base inertial parameters.
Every bad request is answered with ``success=false`` and a message; the node keeps serving.
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node

from robot_dynamics_interfaces.srv import BaseParameters, DynamicTerms, ForwardDynamics, InverseDynamics

from ..robot_model import RobotModel
from .conversions import JointOrder
from .description import RobotDescription
from .runtime import run_node

MAX_POINTS = 200_000


class DynamicsServer(Node):
    def __init__(self) -> None:
        super().__init__("dynamics_server")
        self.declare_parameter("max_points", MAX_POINTS)
        self.model: RobotModel | None = None
        self.create_service(InverseDynamics, "~/inverse_dynamics", self._guard(self.inverse_dynamics))
        self.create_service(DynamicTerms, "~/dynamic_terms", self._guard(self.dynamic_terms))
        self.create_service(ForwardDynamics, "~/forward_dynamics", self._guard(self.forward_dynamics))
        self.create_service(BaseParameters, "~/base_parameters", self._guard(self.base_parameters))
        self._base = None
        self.description = RobotDescription(self, self._on_model)

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model = model
        self._base = None  # computed on the first request (symbolic work stays off the hot paths)

    def _guard(self, handler):
        """Wrap a handler: any exception becomes ``success=false`` with the reason."""

        def call(request, response):
            try:
                if self.model is None:
                    raise ValueError("no robot model yet (robot_description not received)")
                handler(request, response)
                response.success = True
                if not response.message:
                    response.message = "ok"
            except Exception as exc:  # the node never dies on a bad request
                response.success = False
                response.message = f"{type(exc).__name__}: {exc}"
            return response

        return call

    def _order(self, names) -> JointOrder:
        return JointOrder(self.model.joint_names, list(names))

    def inverse_dynamics(self, request: InverseDynamics.Request, response: InverseDynamics.Response) -> None:
        model = self.model
        n = model.dof
        order = self._order(request.joint_names)
        npts = len(request.points)
        if npts == 0:
            raise ValueError("no points in the request")
        if npts > self.get_parameter("max_points").value:
            raise ValueError(f"{npts} points exceed max_points={self.get_parameter('max_points').value}")
        states = np.zeros((3, npts, n))
        for k, p in enumerate(request.points):
            for i, (field, what) in enumerate(
                ((p.positions, "positions"), (p.velocities, "velocities"), (p.accelerations, "accelerations"))
            ):
                if len(field) == 0 and i > 0:
                    continue  # velocities/accelerations default to zero
                states[i, k] = order.model_vector(field, f"points[{k}].{what}", n)
        f_ext = None
        if request.use_tip_wrench:
            w = request.tip_wrench
            f_ext = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
            if not np.all(np.isfinite(f_ext)):
                raise ValueError("tip_wrench contains NaN or inf")
        with np.errstate(all="ignore"):
            tau = model.inverse_dynamics(states[0], states[1], states[2], f_ext=f_ext)[:, order.to_request]
        if not np.all(np.isfinite(tau)):
            raise ValueError("the efforts overflow (inputs too large)")
        response.joint_names = order.names
        for p, t in zip(request.points, tau, strict=True):
            p.effort = t.tolist()
        response.points = request.points
        response.message = f"{npts} point(s)"

    def _state(self, request) -> tuple[JointOrder, np.ndarray, np.ndarray]:
        """Joint order, positions and velocities (empty = zeros) of a one-state request, in model order."""
        n = self.model.dof
        order = self._order(request.joint_names)
        q = order.model_vector(request.positions, "positions", n)
        qd = order.model_vector(request.velocities, "velocities", n) if len(request.velocities) else np.zeros(n)
        return order, q, qd

    def dynamic_terms(self, request: DynamicTerms.Request, response: DynamicTerms.Response) -> None:
        model = self.model
        order, q, qd = self._state(request)
        perm = order.to_request
        a = model.inertia_matrix(q)[np.ix_(perm, perm)]
        coriolis = model.coriolis_matrix(q, qd) @ qd
        gravity = model.gravity_torques(q)
        friction = model.Fc * np.sign(qd) + model.Fv * qd
        response.joint_names = order.names
        response.inertia_matrix = a.ravel().tolist()
        response.coriolis = coriolis[perm].tolist()
        response.gravity = gravity[perm].tolist()
        response.friction = friction[perm].tolist()

    def forward_dynamics(self, request: ForwardDynamics.Request, response: ForwardDynamics.Response) -> None:
        model = self.model
        order, q, qd = self._state(request)
        tau = order.model_vector(request.efforts, "efforts", model.dof)
        method = request.method or "cholesky"
        if method not in ("cholesky", "recursive"):
            raise ValueError(f"unknown method {method!r}; use 'cholesky' or 'recursive'")
        qdd = model.forward_dynamics(q, qd, tau, method=method)
        response.joint_names = order.names
        response.accelerations = qdd[order.to_request].tolist()


    def base_parameters(self, request: BaseParameters.Request, response: BaseParameters.Response) -> None:
        if self._base is None:
            self._base = self.model.base_parameters()
        b = self._base
        response.names = list(b.names)
        response.values = [float(v) for v in b.values]
        response.relations = [str(r) for r in b.relations]
        response.eliminated = list(b.eliminated)
        response.message = f"{len(b.names)} base parameters"


def main(args: list[str] | None = None) -> int:
    return run_node(DynamicsServer, args)


if __name__ == "__main__":
    raise SystemExit(main())
