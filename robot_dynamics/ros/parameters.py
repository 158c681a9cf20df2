"""One declarative parameter schema per node, in the spirit of ``generate_parameter_library``.

A node lists its parameters once (:class:`Param`: name, default, description, range or choices, and whether it may
change at run time); :class:`Schema` then

* declares them with a ``ParameterDescriptor`` each (description with the unit, ``read_only`` for what cannot
  change while running, the range or choices as ``additional_constraints`` for ``ros2 param describe``);
* accepts an integer where a double is expected (``-p omega:=25``) and a list of integers for a list of doubles;
* validates the start values (one clear ``ValueError`` naming the parameter and the reason: the node does not
  start) and every run-time change (``ros2 param set`` is answered ``successful=False`` with the reason, and the
  node keeps its values);
* hands accepted run-time changes to the node (``apply``), which applies them at a safe point (the controller:
  at a cycle boundary) and logs them;
* renders the README's parameter tables (:meth:`Schema.markdown`).

The values the node uses are :attr:`Schema.values` (coerced: a double is a ``float``, an unset array ``[]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult

if TYPE_CHECKING:  # the schema is data: importing it needs no rclpy (the controller's pure core reads it)
    from rclpy.node import Node
    from rclpy.parameter import Parameter

KINDS = ("bool", "int", "double", "string", "double_array", "int_array", "string_array")


def _kind_of(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "double"
    if isinstance(default, str):
        return "string"
    raise TypeError(f"give the kind of a parameter whose default is {default!r}")


def _number(x: Any, integer: bool) -> float | int:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"expected a number, got {x!r}")
    if integer:
        if isinstance(x, float) and not x.is_integer():
            raise ValueError(f"expected an integer, got {x!r}")
        return int(x)
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {x!r}")
    return float(x)


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is inferred from ``default`` unless given (arrays: ``double_array``, ...);
    ``lo``/``hi`` bound a number or every element of a numeric array (inclusive); ``choices`` the strings allowed;
    ``live``: may change at run time (else read-only); ``unit`` is shown in the description."""

    name: str
    default: Any
    description: str
    kind: str = ""
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    live: bool = False
    unit: str = ""
    open_lo: bool = False  # ``lo`` itself excluded (a strictly positive quantity: lo=0, open_lo=True)

    @property
    def type(self) -> str:
        return self.kind or _kind_of(self.default)

    def constraint(self) -> str:
        parts = []
        if self.lo is not None or self.hi is not None:
            lo = "-inf" if self.lo is None else f"{self.lo:g}"
            hi = "inf" if self.hi is None else f"{self.hi:g}"
            bracket = "(" if self.open_lo or self.lo is None else "["
            parts.append(f"{'each ' if self.type.endswith('_array') else ''}in {bracket}{lo}, {hi}]")
        if self.choices:
            parts.append("one of " + ", ".join(c or "''" for c in self.choices))
        return "; ".join(parts)

    def check(self, value: Any) -> Any:
        """The value coerced to the parameter's kind, or ``ValueError`` with the reason."""
        kind = self.type
        if kind.endswith("_array"):
            if value is None:
                return []
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise ValueError(f"{self.name}: expected a list, got {value!r}")
            return [self._scalar(kind[:-6], v) for v in value]
        if value is None:
            raise ValueError(f"{self.name}: a value is required")
        return self._scalar(kind, value)

    def _scalar(self, kind: str, value: Any) -> Any:
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{self.name}: expected true or false, got {value!r}")
            return value
        if kind == "string":
            if not isinstance(value, str):
                raise ValueError(f"{self.name}: expected a string, got {value!r}")
            if self.choices and value not in self.choices:
                raise ValueError(f"{self.name}: {value!r} is not one of {list(self.choices)}")
            return value
        try:
            x = _number(value, kind == "int")
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None
        if (self.lo is not None and (x < self.lo or (self.open_lo and x == self.lo))) or (
                self.hi is not None and x > self.hi):
            raise ValueError(f"{self.name}: {x:g} is not {self.constraint()}")
        return x

    def descriptor(self) -> ParameterDescriptor:
        text = self.description + (f" [{self.unit}]" if self.unit else "")
        if not self.live:
            text += " (read at start)"
        # the range goes in the text, not in floating_point_range: rclpy would check a double against it before
        # us with another message (and an integer not at all); one check, one wording
        return ParameterDescriptor(description=text, read_only=not self.live, dynamic_typing=True,
                                   additional_constraints=self.constraint())


class Schema:
    """A node's parameters (see the module docstring)."""

    def __init__(self, *params: Param) -> None:
        self.params = {p.name: p for p in params}
        self.values: dict[str, Any] = {}
        self._declaring = False
        for p in params:
            if p.type not in KINDS:
                raise TypeError(f"{p.name}: unknown kind {p.type!r}")

    def copy(self) -> Schema:
        """The same parameters with values of their own (one per node instance; the module-level schema is the spec)."""
        return Schema(*self.params.values())

    def declare(self, node: Node) -> dict[str, Any]:
        """Declare every parameter on ``node`` and validate the start values (``ValueError``: the first bad one)."""
        for p in self.params.values():
            node.declare_parameter(p.name, p.default, p.descriptor())
        for p in self.params.values():
            self.values[p.name] = p.check(node.get_parameter(p.name).value)
        return self.values

    def extend(self, node: Node, params: list[Param]) -> dict[str, Any]:
        """Add and declare ``params`` not declared yet (per-joint parameters, known once the model is), with their
        start values from the node's overrides validated (``ValueError``: the first bad one, nothing added);
        run-time changes go through :meth:`attach`'s callback like the others.  Returns the values."""
        new = [p for p in params if p.name not in self.params]
        for p in new:
            self.values[p.name] = p.check(node.get_parameter(p.name).value if node.has_parameter(p.name)
                                          else _override(node, p))
        self._declaring = True  # rclpy runs the on-set callbacks for a declaration: checked above, nothing to apply
        try:
            for p in new:
                self.params[p.name] = p
                if not node.has_parameter(p.name):
                    node.declare_parameter(p.name, self.values[p.name], p.descriptor())
        finally:
            self._declaring = False
        return {p.name: self.values[p.name] for p in params}

    def attach(self, node: Node, apply: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Validate run-time changes of the schema's parameters; ``apply(changes)`` (coerced values) may refuse
        them by raising ``ValueError`` (its text is the reason); the values change only when it returns."""

        def on_set(params: list[Parameter]) -> SetParametersResult:
            if self._declaring:
                return SetParametersResult(successful=True)
            changes: dict[str, Any] = {}
            try:
                for prm in params:
                    spec = self.params.get(prm.name)
                    if spec is None:
                        continue
                    if not spec.live:  # rclpy refuses read-only ones first; a guard should a descriptor be replaced
                        raise ValueError(f"{prm.name} is read at start: restart the node to change it")
                    changes[prm.name] = spec.check(prm.value)
                if changes and apply is not None:
                    apply(changes)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            except Exception as exc:  # noqa: BLE001 - a set-parameters call is always answered
                return SetParametersResult(successful=False, reason=f"{type(exc).__name__}: {exc}")
            self.values.update(changes)
            return SetParametersResult(successful=True)

        node.add_on_set_parameters_callback(on_set)

    def markdown(self) -> str:
        """The parameter table of the README: name, default, live or at start, constraint, description."""
        rows = ["| parameter | default | changes | constraint | description |", "|---|---|---|---|---|"]
        for p in self.params.values():
            default = "" if p.default in ([], "") else f"`{p.default}`"
            unit = f" [{p.unit}]" if p.unit else ""
            cells = [f"`{p.name}`", default, "live" if p.live else "at start", p.constraint(), p.description + unit]
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(rows)


def _override(node: Node, p: Param) -> Any:
    """The start value of ``p`` given to the node (``--ros-args -p``, a parameters file), else its default."""
    override = node._parameter_overrides.get(p.name)  # rclpy keeps them until a declaration uses them
    return p.default if override is None else override.value


__all__ = ["Param", "Schema"]
