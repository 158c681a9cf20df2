"""``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics`` for the nodes (what ``diagnostic_updater`` publishes).

A node builds a :class:`Report` (level, one-line message, figures) in a short callback; :class:`DiagnosticsPublisher`
calls it from a steady-clock timer of the node's executor every ``diagnostic_period`` s and publishes one
``DiagnosticStatus`` named ``"<node fully qualified name>: <task>"``, ``hardware_id`` = the robot's name, on the
absolute topic ``/diagnostics`` (header stamp: the node clock).  A callback that raises is published as ERROR with
the exception, never raised into the executor.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from .levels import ERROR, LEVEL_NAMES, OK, STALE, WARN  # noqa: F401 (the levels, re-exported)

TOPIC = "/diagnostics"
PERIOD_RANGE = (0.05, 60.0)  # s, of the parameter diagnostic_period


@dataclass
class Report:
    """What a node says about one task: level (``OK`` .. ``STALE``), a one-line message, named figures."""

    level: int
    message: str
    values: dict[str, object] = field(default_factory=dict)


def text(value: object) -> str:
    """A figure as the string of a ``KeyValue``: floats with 6 significant digits, bools true/false, lists joined."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value)
    return str(value)


def fill_status(status: DiagnosticStatus, name: str, hardware_id: str, level: int, message: str,
                values: Mapping[str, object]) -> DiagnosticStatus:
    """Fill ``status`` in place (message kept to one line, level to [OK, STALE]); its ``KeyValue`` objects are
    reused when the keys are those of the last fill (building them costs more than the figures)."""
    status.name, status.hardware_id = name, hardware_id
    status.message = " ".join(str(message).split())
    status.level = bytes([min(max(int(level), OK), STALE)])
    kvs = status.values
    if len(kvs) != len(values) or any(kv.key != key for kv, key in zip(kvs, values, strict=False)):
        status.values = kvs = [KeyValue(key=str(key)) for key in values]
    for kv, value in zip(kvs, values.values(), strict=True):
        kv.value = text(value)
    return status


def make_status(name: str, hardware_id: str, level: int, message: str,
                values: Mapping[str, object]) -> DiagnosticStatus:
    """A new ``DiagnosticStatus`` (see :func:`fill_status`)."""
    return fill_status(DiagnosticStatus(), name, hardware_id, level, message, values)


def declare_period(node: Node) -> float:
    """Declare ``diagnostic_period`` (s, read-only) and return it; ValueError outside ``PERIOD_RANGE``."""
    lo, hi = PERIOD_RANGE
    value = node.declare_parameter("diagnostic_period", 1.0, ParameterDescriptor(
        description=f"s between /diagnostics messages (steady clock), in [{lo}, {hi}]",
        floating_point_range=[FloatingPointRange(from_value=lo, to_value=hi, step=0.0)],
        read_only=True, dynamic_typing=True)).value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= float(value) <= hi:
        raise ValueError(f"diagnostic_period must be a number in [{lo}, {hi}] s, got {value!r}")
    return float(value)


class DiagnosticsPublisher:
    """Publishes ``report(dt)`` (``dt``: steady s since the previous report) as a ``DiagnosticArray`` on
    ``/diagnostics`` every ``diagnostic_period`` s, from a steady-clock timer of ``node``'s executor."""

    def __init__(self, node: Node, task: str, report: Callable[[float], Report],
                 hardware_id: Callable[[], str]) -> None:
        self.node = node
        self.name = f"{node.get_fully_qualified_name()}: {task}"
        self.report = report
        self.hardware_id = hardware_id
        self.period = declare_period(node)
        self.published = 0
        self._last = time.monotonic()
        self._msg = DiagnosticArray(status=[DiagnosticStatus()])
        self.pub = node.create_publisher(DiagnosticArray, TOPIC, 10)
        self.timer = node.create_timer(self.period, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def status(self) -> DiagnosticStatus:
        """The status of now, filled into the message kept for publishing (a failing report is an ERROR status
        saying why)."""
        now = time.monotonic()
        dt, self._last = now - self._last, now
        status = self._msg.status[0]
        try:
            hardware_id = str(self.hardware_id())
        except Exception:  # noqa: BLE001 - diagnostics never take a node down
            hardware_id = ""
        try:
            r = self.report(dt)
            return fill_status(status, self.name, hardware_id, r.level, r.message, r.values)
        except Exception as exc:  # noqa: BLE001
            return fill_status(status, self.name, hardware_id, ERROR,
                               f"diagnostics failed: {type(exc).__name__}: {exc}", {})

    def publish(self) -> None:
        """Timer callback: the ``DiagnosticArray`` with this node's status (one message, filled in place)."""
        self.status()
        msg = self._msg
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub.publish(msg)
        self.published += 1
