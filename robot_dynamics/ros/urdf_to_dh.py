"""Node ``urdf_to_dh``: URDF -> Khalil modified DH.

Takes the URDF from the ``robot_description`` parameter (or ``urdf_path``) or
the ``/robot_description`` topic, publishes the model latched on ``~/model``
(``robot_dynamics_interfaces/MDHModel``, transient local) and serves
``~/convert`` (``robot_dynamics_interfaces/srv/ConvertUrdf``) for any URDF.

``ConvertUrdf.urdf`` is URDF *text*: a request never makes the node open a file, and anything
that is not XML text gets one message whatever the file system holds.  Text longer than
``max_description_bytes`` is refused before parsing.  Refusals read ``"<cause>: <sentence>"``
(causes ``not_text``, ``too_large``, ``invalid_urdf``, ``no_model``, ``internal_error``).
``~/convert`` runs in its own callback group on a multithreaded executor, so converting a big
URDF does not hold up the description or the parameter services.
"""

from __future__ import annotations

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from robot_dynamics_interfaces.msg import MDHModel
from robot_dynamics_interfaces.srv import ConvertUrdf

from ..model.robot_model import RobotModel
from .conversions import model_to_msg
from .description import DESCRIPTION_QOS, RobotDescription, cut
from .runtime import Refusals, Refused, poll_sim_time, run_node

MAX_LINK_NAME = 1_000  # characters of request.base_link / tip_link
MAX_LOCKED = 10_000  # entries of request.locked_joints


class UrdfToDh(Node):
    multithreaded = True
    executor_threads = 3  # ~/convert, the description, the parameter services

    def __init__(self) -> None:
        super().__init__("urdf_to_dh")
        self.refusals = Refusals(self)
        self.model_pub = self.create_publisher(MDHModel, "~/model", DESCRIPTION_QOS)
        self.create_service(ConvertUrdf, "~/convert", self.convert, callback_group=MutuallyExclusiveCallbackGroup())
        self.description = RobotDescription(self, self._on_model, MutuallyExclusiveCallbackGroup())
        self.sim_time_thread = poll_sim_time(self)  # use_sim_time: /clock polled, not a callback per message

    @property
    def model(self) -> RobotModel | None:
        current = self.description.current if hasattr(self, "description") else None
        return current[0] if current is not None else None

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model_pub.publish(model_to_msg(model))

    def _model_for(self, request: ConvertUrdf.Request) -> RobotModel:
        base, tip = request.base_link, request.tip_link
        for what, name in (("base_link", base), ("tip_link", tip)):
            if len(name) > MAX_LINK_NAME:
                raise Refused("too_large", f"request.{what} is longer than {MAX_LINK_NAME} characters")
        if request.urdf:
            text, what = request.urdf, "request.urdf"
            refusal = self.description.check_text(text, what)
            if refusal is not None:
                raise refusal
        else:
            current = self.description.current  # read once: the model and its text belong together
            if current is None:
                raise Refused("no_model", "empty request.urdf and no robot_description received yet")
            if not (base or tip or request.locked_joints):
                return current[0]
            text, what = current[1], "robot_description"
        names, values = list(request.locked_joints), [float(v) for v in request.locked_positions]
        if len(names) != len(values):
            raise Refused("invalid_request", f"{len(names)} locked_joints but {len(values)} locked_positions")
        if len(names) > MAX_LOCKED:
            raise Refused("too_large", f"more than {MAX_LOCKED} locked_joints")
        allow = bool(self.get_parameter("allow_inconsistent_inertia").value)
        try:
            return RobotModel.from_urdf(text, base_link=base or None, tip_link=tip or None, text_only=True,
                                        locked_positions=dict(zip(names, values, strict=True)) or None,
                                        allow_inconsistent_inertia=allow)
        except (ValueError, TypeError, KeyError) as exc:
            raise Refused("invalid_urdf", f"{what}: {cut(str(exc))}") from None

    def convert(self, request: ConvertUrdf.Request, response: ConvertUrdf.Response) -> ConvertUrdf.Response:
        try:
            model = self._model_for(request)
            response.yaml = model.to_yaml()
            response.table = model.table()
            response.model = model_to_msg(model)
            response.success = True
            response.message = f"{model.dof} joints, base {model.base_link!r}, tip {model.tip_link!r}" + (
                f", locked {model.locked_joints}" if model.locked_joints else "")
            return response
        except Refused as exc:
            cause, text = exc.cause, str(exc)
        except Exception as exc:  # noqa: BLE001 - every bad request gets an answer, the node keeps serving
            cause, text = "internal_error", f"{type(exc).__name__}: {cut(str(exc))}"
        self.refusals.refuse(cause, text)
        return ConvertUrdf.Response(success=False, message=f"{cause}: {text}")


def main(args: list[str] | None = None) -> int:
    return run_node(UrdfToDh, args)


if __name__ == "__main__":
    raise SystemExit(main())
