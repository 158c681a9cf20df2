"""Where a node gets its robot: the ``robot_description`` parameter, a URDF path, or the topic.

ROS 2 convention (robot_state_publisher): ``/robot_description`` is a
``std_msgs/String`` published with transient-local durability; nodes accept
both the parameter and the topic.  ``urdf_path`` (a file or a bundled robot
name such as ``rx90``) is the convenience used by the bring-up runner; it may be a
``.xacro`` / ``.urdf.xacro`` file, expanded with the ``xacro_args`` parameter
(``["name:=value", ...]``, read once at start-up).  Text (the topic, the parameter,
requests) is never expanded: xacro text is refused with a message naming xacro.

Safety: the topic and the ``robot_description`` parameter carry URDF *text* only (a file path
is accepted only from ``urdf_path``); a description longer than ``max_description_bytes`` is
refused before parsing; a bad description is refused with its cause (rate-limited log) and never
kills the node; a valid one replaces the current ``(model, urdf)`` pair in one assignment, so a
reader in another thread sees the old pair or the new one, never half of each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rcl_interfaces.msg import IntegerRange, ParameterDescriptor
from rclpy.callback_groups import CallbackGroup, MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..robot_model import RobotModel
from ..robots import by_joint, resolve_urdf
from ..urdf_conversion import expand_xacro, is_xacro_path
from .runtime import Refusals, Refused

DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
MAX_DESCRIPTION_BYTES = 10_000_000
MAX_MESSAGE_CHARS = 500  # refusal texts quote at most this much of a parser's error


def text_size_refusal(text: str, limit: int, what: str) -> Refused | None:
    """A :class:`Refused` (cause ``too_large``) when ``text`` is longer than ``limit`` UTF-8 bytes, else None.

    Cheap first: the character count bounds the byte count from below (and 4x from above)."""
    n = len(text)
    if n > limit or (4 * n > limit and len(text.encode("utf-8", "surrogatepass")) > limit):
        return Refused("too_large", f"{what} is longer than max_description_bytes={limit} bytes")
    return None


def cut(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters (refusal messages never echo a whole document)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RobotDescription:
    """Declares the description parameters of ``node`` and calls ``on_model(model, urdf)`` with each new model.

    The ``/robot_description`` subscription runs in ``callback_group`` (default: a mutually
    exclusive group of its own, so a multithreaded node keeps serving while a big URDF is parsed).
    """

    def __init__(
        self, node: Node, on_model: Callable[[RobotModel, str], None], callback_group: CallbackGroup | None = None
    ) -> None:
        self.node = node
        self.on_model = on_model
        shared = getattr(node, "refusals", None)  # the node's counters when it has them
        self.refusals = shared if isinstance(shared, Refusals) else Refusals(node)
        node.declare_parameter("robot_description", "")
        node.declare_parameter("urdf_path", "")
        node.declare_parameter(
            "xacro_args", Parameter.Type.STRING_ARRAY,
            ParameterDescriptor(
                description="arguments of a .xacro urdf_path, each 'name:=value' (e.g. ['l1:=0.4']); applied when "
                "urdf_path is loaded at start-up",
                read_only=True,
            ),
        )
        node.declare_parameter("base_link", "")
        node.declare_parameter("tip_link", "")
        # what a URDF cannot carry (config/<robot>.yaml): per joint, chain order; [0.0] = none
        node.declare_parameter("rotor_inertia", [0.0])
        node.declare_parameter("acceleration_limits", [0.0])
        node.declare_parameter(
            "max_description_bytes", MAX_DESCRIPTION_BYTES,
            ParameterDescriptor(
                description="longest URDF text accepted from /robot_description, requests and files (bytes); "
                "checked before parsing",
                integer_range=[IntegerRange(from_value=1_000, to_value=2_000_000_000, step=1)],
            ),
        )
        self.current: tuple[RobotModel, str] | None = None
        text = node.get_parameter("robot_description").value
        path = node.get_parameter("urdf_path").value
        if text:
            self.load(text, "parameter robot_description")
        elif path:
            self.load_path(path)
        if self.current is None:
            node.get_logger().info("waiting for the URDF on /robot_description (transient local)")
        self._sub = node.create_subscription(
            String, "/robot_description", self._on_topic, DESCRIPTION_QOS,
            callback_group=callback_group or MutuallyExclusiveCallbackGroup(),
        )

    @property
    def urdf(self) -> str:
        """URDF text of the current model ('' before the first one)."""
        current = self.current
        return current[1] if current is not None else ""

    @property
    def max_bytes(self) -> int:
        return int(self.node.get_parameter("max_description_bytes").value)

    @property
    def xacro_args(self) -> list[str]:
        """The ``xacro_args`` parameter ([] when unset)."""
        param = self.node.get_parameter_or("xacro_args", Parameter("xacro_args", Parameter.Type.STRING_ARRAY, []))
        return list(param.value or [])

    def load_path(self, path: str) -> RobotModel | None:
        """Load the URDF file ``path`` (or bundled robot name, or a ``.xacro`` file expanded with the
        ``xacro_args`` parameter): only from the ``urdf_path`` parameter / CLI."""
        xacro_args = self.xacro_args
        try:
            file = resolve_urdf(path)
            size = file.stat().st_size
            if size > self.max_bytes:
                raise Refused("too_large", f"urdf_path {path!r}: {size} bytes exceed max_description_bytes={self.max_bytes}")
            if is_xacro_path(str(file)):
                text = expand_xacro(file, xacro_args)
                too_large = text_size_refusal(text, self.max_bytes, f"urdf_path {path!r} expanded by xacro")
                if too_large is not None:
                    raise too_large
            elif xacro_args:
                raise ValueError(f"xacro_args {xacro_args} given but it is not a .xacro file")
            else:
                text = file.read_text(encoding="utf-8")
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
            return None
        except (OSError, ValueError) as exc:  # the operator's own parameter: name the file
            self.refusals.refuse("urdf_path", f"cannot read urdf_path {path!r}: {exc}")
            return None
        return self.load(text, f"urdf_path {path!r}")

    def check_text(self, urdf: Any, what: str) -> Refused | None:
        """Why ``urdf`` cannot be a description (not text, too large), or None; no file system access."""
        if not isinstance(urdf, str):
            return Refused("not_text", f"{what} must be URDF XML text")
        too_large = text_size_refusal(urdf, self.max_bytes, what)
        if too_large is not None:
            return too_large
        if not urdf.lstrip().startswith("<"):
            return Refused("not_text", f"{what} must be URDF XML text starting with '<' (a file path is accepted only from the urdf_path parameter)")
        return None

    def build(self, urdf: str, what: str, base: str | None = None, tip: str | None = None) -> RobotModel:
        """URDF text -> model with this node's base/tip and robot parameters; raises :class:`Refused`."""
        refusal = self.check_text(urdf, what)
        if refusal is not None:
            raise refusal
        try:
            model = RobotModel.from_urdf(urdf, base_link=base, tip_link=tip, text_only=True)
            ia = by_joint(model, self.node.get_parameter("rotor_inertia").value, "rotor_inertia")
            acc = by_joint(model, self.node.get_parameter("acceleration_limits").value, "acceleration_limits")
            if ia is not None or acc is not None:
                model = RobotModel.from_urdf(
                    urdf, base_link=base, tip_link=tip, rotor_inertia=ia, acceleration_limits=acc, text_only=True
                )
        except (ValueError, TypeError, KeyError) as exc:
            raise Refused("invalid_urdf", f"{what}: {cut(str(exc))}") from None
        return model

    def load(self, urdf: str, what: str = "/robot_description") -> RobotModel | None:
        """Build and install a new model from URDF text; a bad one is refused (logged) and the current one kept."""
        base = self.node.get_parameter("base_link").value or None
        tip = self.node.get_parameter("tip_link").value or None
        try:
            model = self.build(urdf, what, base, tip)
        except Refused as exc:
            self.refusals.refuse(exc.cause, str(exc))
            return None
        except Exception as exc:  # noqa: BLE001 - a bad description must not kill the node
            self.refusals.refuse("invalid_urdf", f"{what}: cannot use the robot description: {type(exc).__name__}: {cut(str(exc))}")
            return None
        self.current = (model, urdf)  # one assignment: readers see the old pair or the new one
        self.node.get_logger().info(f"robot {model.name!r}: {model.dof} joints {model.joint_names}")
        try:
            self.on_model(model, urdf)
        except Exception as exc:  # noqa: BLE001 - the node's hook must not kill it either
            self.refusals.refuse("on_model_error", f"installing the model failed: {type(exc).__name__}: {exc}")
        return model

    def _on_topic(self, msg: String) -> None:
        try:
            data = msg.data
            if data and data != self.urdf:
                self.load(data, "/robot_description")
        except Exception as exc:  # noqa: BLE001 - never raise into the executor
            self.refusals.refuse("description_error", f"/robot_description: {type(exc).__name__}: {exc}")
