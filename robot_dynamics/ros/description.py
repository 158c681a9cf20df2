"""Where a node gets its robot: the ``robot_description`` parameter, a URDF path, or the topic.

ROS 2 convention (robot_state_publisher): ``/robot_description`` is a
``std_msgs/String`` published with transient-local durability; nodes accept
both the parameter and the topic.  ``urdf_path`` (a file or a bundled robot
name such as ``rx90``) is the convenience used by the bring-up runner; it may be a
``.xacro`` / ``.urdf.xacro`` file, expanded with the ``xacro_args`` parameter
(``["name:=value", ...]``, read once at start-up).  Text (the topic, the parameter,
requests) is never expanded: xacro text is refused with a message naming xacro.

Trees (issue 14): without ``tip_link`` the node models the whole tree; with it, the chain
``base_link`` -> ``tip_link`` and every other moving joint locked and lumped.  A locked joint is held
at the position given by the parameters ``locked_joints`` / ``locked_positions`` (parallel arrays),
else — when the node was built with ``lock_from_joint_states`` and that parameter is true — at its
position in the first ``/joint_states`` message that names it (the model is rebuilt once, logged),
else 0 (clipped into its limits).  ``allow_inconsistent_inertia`` turns the inertia consistency
errors into warnings.

Safety: the topic and the ``robot_description`` parameter carry URDF *text* only (a file path
is accepted only from ``urdf_path``); a description longer than ``max_description_bytes`` is
refused before parsing; a bad description is refused with its cause (rate-limited log) and never
kills the node; a valid one replaces the current ``(model, urdf)`` pair in one assignment, so a
reader in another thread sees the old pair or the new one, never half of each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rclpy.callback_groups import CallbackGroup, MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..model.robot_model import RobotModel
from ..model.robots import by_joint, resolve_urdf, transmission_config
from ..model.urdf_conversion import expand_xacro, is_xacro_path
from .parameter_files import load_schema
from .parameters import Schema
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


def description_schema(lock_from_joint_states: bool = False) -> Schema:
    """The robot description parameters every node declares (read at start; ``schemas/robot_description.yaml``);
    ``lock_from_joint_states`` only where the node reads /joint_states (controller and dynamics server)."""
    schema = load_schema("robot_description")
    return schema if lock_from_joint_states else Schema(
        *(p for p in schema.params.values() if p.name != "lock_from_joint_states"))


class RobotDescription:
    """Declares the description parameters of ``node`` and calls ``on_model(model, urdf)`` with each new model.

    The ``/robot_description`` subscription runs in ``callback_group`` (default: a mutually
    exclusive group of its own, so a multithreaded node keeps serving while a big URDF is parsed).
    """

    def __init__(
        self, node: Node, on_model: Callable[[RobotModel, str], None], callback_group: CallbackGroup | None = None,
        lock_from_joint_states: bool = False,
    ) -> None:
        self.node = node
        self.on_model = on_model
        self._group = callback_group
        self._from_states: dict[str, float] = {}  # locked positions read from /joint_states
        self._states_sub: Any = None
        self._pending: list[str] = []
        self._lock_from_states = lock_from_joint_states
        shared = getattr(node, "refusals", None)  # the node's counters when it has them
        self.refusals = shared if isinstance(shared, Refusals) else Refusals(node)
        self.params = description_schema(lock_from_joint_states)
        self.params.declare(node)
        self.current: tuple[RobotModel, str] | None = None
        text = self.params.values["robot_description"]
        path = self.params.values["urdf_path"]
        if text:
            self.load(text, "parameter robot_description")
        elif path:
            self.load_path(path)
        if self.current is None:
            node.get_logger().info("waiting for the URDF on /robot_description (transient local)")
        self._sub = node.create_subscription(
            String, "robot_description", self._on_topic, DESCRIPTION_QOS,
            callback_group=callback_group or MutuallyExclusiveCallbackGroup(),
        )

    @property
    def urdf(self) -> str:
        """URDF text of the current model ('' before the first one)."""
        current = self.current
        return current[1] if current is not None else ""

    @property
    def max_bytes(self) -> int:
        return int(self.params.values["max_description_bytes"])

    @property
    def xacro_args(self) -> list[str]:
        """The ``xacro_args`` parameter ([] when unset)."""
        return list(self.params.values["xacro_args"])

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

    def _param_list(self, name: str) -> list[Any]:
        return list(self.params.values[name])

    def locked_positions(self) -> dict[str, float]:
        """Locked positions from the parameters, then those read from /joint_states (parameters win)."""
        names = [str(n) for n in self._param_list("locked_joints")]
        values = [float(v) for v in self._param_list("locked_positions")]
        if len(names) != len(values):
            raise Refused("invalid_parameter", f"locked_joints has {len(names)} names but locked_positions has "
                          f"{len(values)} values")
        return {**self._from_states, **dict(zip(names, values, strict=True))}

    def build(self, urdf: str, what: str, base: str | None = None, tip: str | None = None) -> RobotModel:
        """URDF text -> model with this node's base/tip and robot parameters; raises :class:`Refused`."""
        refusal = self.check_text(urdf, what)
        if refusal is not None:
            raise refusal
        locked = self.locked_positions()
        allow = bool(self.params.values["allow_inconsistent_inertia"])
        kw: dict[str, Any] = {"base_link": base, "tip_link": tip, "text_only": True,
                              "allow_inconsistent_inertia": allow}
        try:
            model = RobotModel.from_urdf(urdf, locked_positions=locked or None, **kw)
            ia = by_joint(model, self.params.values["rotor_inertia"], "rotor_inertia")
            acc = by_joint(model, self.params.values["acceleration_limits"], "acceleration_limits")
            if ia is not None or acc is not None:
                model = RobotModel.from_urdf(
                    urdf, locked_positions=locked or None, rotor_inertia=ia, acceleration_limits=acc, **kw
                )
            transmission = self.transmission_config()
            if transmission is not None:
                if ia is not None and transmission.get("motor_inertia"):
                    raise ValueError("rotor inertia given twice: rotor_inertia and transmissions.motor_inertia "
                                     "(give one of them)")
                model = model.with_transmission(transmission)
        except (ValueError, TypeError, KeyError) as exc:
            raise Refused("invalid_urdf", f"{what}: {cut(str(exc))}") from None
        return model

    def transmission_config(self) -> dict[str, Any] | None:
        """The ``transmissions.*`` parameters as a :class:`~robot_dynamics.model.transmission.Transmission`
        config (None: none given, the joints are driven directly; without gear_ratio the model refuses it)."""
        given = {k: list(v) for k, v in self.params.values.items() if k.startswith("transmissions.") and v}
        return transmission_config(given)  # the parser of the robot parameter files (config/<robot>.yaml)

    def _watch_locked(self, model: RobotModel) -> None:
        """Subscribe /joint_states once when locked joints still wait for their measured position."""
        given = set(self._param_list("locked_joints")) | set(self._from_states)
        pending = [k for k in model.locked_joints if k not in given]
        use = self._lock_from_states and bool(self.params.values["lock_from_joint_states"])
        if not pending or not use or self._states_sub is not None:
            return
        self._pending = pending
        self._states_sub = self.node.create_subscription(
            JointState, "joint_states", self._on_states, qos_profile_sensor_data,
            callback_group=self._group or MutuallyExclusiveCallbackGroup(),
        )
        self.node.get_logger().info(f"locked joints {pending} at 0 until /joint_states gives their positions")

    def _on_states(self, msg: JointState) -> None:
        """The first /joint_states naming the pending locked joints: rebuild the model with their positions."""
        try:
            pos = dict(zip(msg.name, msg.position, strict=False))
            found = {k: float(pos[k]) for k in self._pending if k in pos and math.isfinite(float(pos[k]))}
            if not found:
                return
            model = self.current[0] if self.current is not None else None
            sub, self._states_sub = self._states_sub, None
            if sub is not None:
                self.node.destroy_subscription(sub)
            if model is not None:  # clip into the limits: a measured position may overshoot by noise
                for k in found:
                    lo, up = model_limits(self.urdf, k)
                    found[k] = min(max(found[k], lo), up)
            self._from_states.update(found)
            self.node.get_logger().info(f"locked joints at their /joint_states positions: {found}")
            if self.urdf:
                self.load(self.urdf, "/robot_description (locked joints from /joint_states)")
        except Exception as exc:  # noqa: BLE001 - never raise into the executor
            self.refusals.refuse("description_error", f"/joint_states for locked joints: {type(exc).__name__}: {exc}")

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
        if model.locked_joints:
            self.node.get_logger().info(
                f"locked (lumped like fixed joints): {', '.join(f'{k}={v:g}' for k, v in model.locked_joints.items())}")
        self._watch_locked(model)
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


def model_limits(urdf: str, joint: str) -> tuple[float, float]:
    """(lower, upper) of a URDF joint (-inf, inf when unbounded or continuous)."""
    from ..model.urdf_conversion import parse_urdf

    jt = parse_urdf(urdf, text_only=True).joints[joint]
    if jt.type == "continuous":
        return -math.inf, math.inf
    return jt.lower, jt.upper
