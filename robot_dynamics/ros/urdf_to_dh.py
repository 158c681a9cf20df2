"""Node ``urdf_to_dh``: URDF -> Khalil modified DH.

Takes the URDF from the ``robot_description`` parameter (or ``urdf_path``) or
the ``/robot_description`` topic, publishes the model latched on ``~/model``
(``robot_dynamics_interfaces/MDHModel``, transient local) and serves
``~/convert`` (``robot_dynamics_interfaces/srv/ConvertUrdf``) for any URDF.
"""

from __future__ import annotations

from rclpy.node import Node

from robot_dynamics_interfaces.msg import MDHModel
from robot_dynamics_interfaces.srv import ConvertUrdf

from ..robot_model import RobotModel
from .conversions import model_to_msg
from .description import DESCRIPTION_QOS, RobotDescription
from .runtime import run_node


class UrdfToDh(Node):
    def __init__(self) -> None:
        super().__init__("urdf_to_dh")
        self.model: RobotModel | None = None
        self.model_pub = self.create_publisher(MDHModel, "~/model", DESCRIPTION_QOS)
        self.create_service(ConvertUrdf, "~/convert", self.convert)
        self.description = RobotDescription(self, self._on_model)

    def _on_model(self, model: RobotModel, urdf: str) -> None:
        self.model = model
        self.model_pub.publish(model_to_msg(model))

    def convert(self, request: ConvertUrdf.Request, response: ConvertUrdf.Response) -> ConvertUrdf.Response:
        try:
            if request.urdf:
                model = RobotModel.from_urdf(
                    request.urdf, base_link=request.base_link or None, tip_link=request.tip_link or None
                )
            elif self.description.urdf and (request.base_link or request.tip_link):
                model = RobotModel.from_urdf(
                    self.description.urdf, base_link=request.base_link or None, tip_link=request.tip_link or None
                )
            elif self.model is not None:
                model = self.model
            else:
                raise ValueError("empty request.urdf and no robot_description received yet")
            response.yaml = model.to_yaml()
            response.table = model.table()
            response.model = model_to_msg(model)
            response.success = True
            response.message = f"{model.dof} joints, base {model.base_link!r}, tip {model.tip_link!r}"
        except Exception as exc:  # every bad request gets an answer, the node keeps serving
            response.success = False
            response.message = f"{type(exc).__name__}: {exc}"
        return response


def main(args: list[str] | None = None) -> int:
    return run_node(UrdfToDh, args)


if __name__ == "__main__":
    raise SystemExit(main())
