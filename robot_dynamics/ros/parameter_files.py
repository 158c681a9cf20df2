"""The nodes' parameter schemas as YAML files (``robot_dynamics/ros/schemas/<node>.yaml``), read into
:class:`~robot_dynamics.ros.parameters.Schema`.

The format follows ``generate_parameter_library``'s: a top-level key (the node), then one entry per parameter
(dotted names kept flat, in the order of the docs' tables) with ``type``, ``default_value``, ``description``,
``read_only`` and ``validation``, plus ``unit``.  Validators: ``bounds<>: [lo, hi]``, ``gt<>: [lo]``,
``gt_eq<>: [lo]``, ``lt_eq<>: [hi]``, ``one_of<>: [[...]]``; on arrays ``element_bounds<>: [lo, hi]``,
``lower_element_bounds<>: [lo]``, ``upper_element_bounds<>: [hi]`` and ``element_gt<>: [lo]`` (each element
strictly above: not in generate_parameter_library).  A file that does not follow it is refused with the file, the
parameter and the reason.  Per-joint parameters sit under ``__map_joints`` with ``<joint>`` in their names.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .parameters import KINDS, Param, Schema

SCHEMAS = "robot_dynamics.ros.schemas"
MAP_JOINTS = "__map_joints"
JOINT = "<joint>"
FIELDS = {"type", "default_value", "description", "read_only", "validation", "unit"}
VALIDATORS = {"bounds<>", "gt<>", "gt_eq<>", "lt_eq<>", "one_of<>", "element_bounds<>", "lower_element_bounds<>",
              "upper_element_bounds<>", "element_gt<>"}


class SchemaFileError(ValueError):
    """A schema file that does not follow the format (the message names the file and the parameter)."""


def param_to_entry(p: Param) -> dict[str, Any]:
    """One parameter as its YAML entry."""
    array = p.type.endswith("_array")
    validation: dict[str, Any] = {}
    lo, hi = p.lo, p.hi
    if lo is not None and p.open_lo:
        validation["element_gt<>" if array else "gt<>"] = [lo]
        if hi is not None:
            validation["upper_element_bounds<>" if array else "lt_eq<>"] = [hi]
    elif lo is not None and hi is not None:
        validation["element_bounds<>" if array else "bounds<>"] = [lo, hi]
    elif lo is not None:
        validation["lower_element_bounds<>" if array else "gt_eq<>"] = [lo]
    elif hi is not None:
        validation["upper_element_bounds<>" if array else "lt_eq<>"] = [hi]
    if p.choices:
        validation["one_of<>"] = [list(p.choices)]
    entry: dict[str, Any] = {"type": p.type, "default_value": p.default, "description": p.description,
                             "read_only": not p.live}
    if p.unit:
        entry["unit"] = p.unit
    if validation:
        entry["validation"] = validation
    return entry


def _bound(where: str, validation: dict[str, Any], key: str, size: int) -> list[float]:
    value = validation[key]
    if not isinstance(value, list) or len(value) != size or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise SchemaFileError(f"{where}: {key} takes a list of {size} number(s), got {value!r}")
    return list(value)


def entry_to_param(name: str, entry: Any, where: str = "") -> Param:
    """The :class:`Param` of one YAML entry (``SchemaFileError`` naming ``where`` and the parameter)."""
    where = f"{where}{name}"
    if not isinstance(entry, dict):
        raise SchemaFileError(f"{where}: expected a mapping of {sorted(FIELDS)}, got {entry!r}")
    unknown = set(entry) - FIELDS
    if unknown:
        raise SchemaFileError(f"{where}: unknown field(s) {sorted(unknown)} (known: {sorted(FIELDS)})")
    for field in ("type", "default_value", "description"):
        if field not in entry:
            raise SchemaFileError(f"{where}: '{field}' is required")
    kind = entry["type"]
    if kind not in KINDS:
        raise SchemaFileError(f"{where}: type {kind!r} is not one of {list(KINDS)}")
    validation = entry.get("validation") or {}
    if not isinstance(validation, dict) or set(validation) - VALIDATORS:
        raise SchemaFileError(f"{where}: unknown validator(s) {sorted(set(validation) - VALIDATORS)} "
                              f"(known: {sorted(VALIDATORS)})" if isinstance(validation, dict)
                              else f"{where}: validation must be a mapping")
    array = kind.endswith("_array")
    scalar_keys = {"bounds<>", "gt<>", "gt_eq<>", "lt_eq<>"}
    element_keys = {"element_bounds<>", "lower_element_bounds<>", "upper_element_bounds<>", "element_gt<>"}
    misplaced = set(validation) & (scalar_keys if array else element_keys)
    if misplaced:
        raise SchemaFileError(f"{where}: {sorted(misplaced)} do not apply to a {kind}")
    lo = hi = None
    open_lo = False
    if "bounds<>" in validation or "element_bounds<>" in validation:
        lo, hi = _bound(where, validation, "element_bounds<>" if array else "bounds<>", 2)
    for key in ("gt<>", "element_gt<>"):
        if key in validation:
            (lo,), open_lo = _bound(where, validation, key, 1), True
    for key in ("gt_eq<>", "lower_element_bounds<>"):
        if key in validation:
            (lo,) = _bound(where, validation, key, 1)
    for key in ("lt_eq<>", "upper_element_bounds<>"):
        if key in validation:
            (hi,) = _bound(where, validation, key, 1)
    choices: tuple[str, ...] = ()
    if "one_of<>" in validation:
        value = validation["one_of<>"]
        if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], list)
                and all(isinstance(c, str) for c in value[0])):
            raise SchemaFileError(f"{where}: one_of<> takes [[choice, ...]], got {value!r}")
        choices = tuple(value[0])
    read_only = entry.get("read_only", True)
    if not isinstance(read_only, bool):
        raise SchemaFileError(f"{where}: read_only is true or false, got {read_only!r}")
    default = entry["default_value"]
    if kind == "double" and isinstance(default, int) and not isinstance(default, bool):
        default = float(default)
    if array and default is None:
        default = []
    param = Param(name, default, str(entry["description"]), kind=kind, lo=lo, hi=hi, choices=choices,
                  live=not read_only, unit=str(entry.get("unit", "")), open_lo=open_lo)
    try:
        param.check(default)
    except ValueError as exc:
        raise SchemaFileError(f"{where}: default_value {default!r} fails its own validation: {exc}") from None
    return param


def schema_to_yaml(node: str, schema: Schema, per_joint: Schema | None = None) -> str:
    """``schema`` (and ``per_joint``, names with ``<joint>``) as the YAML text of ``node``'s file."""
    body: dict[str, Any] = {p.name: param_to_entry(p) for p in schema.params.values()}
    if per_joint is not None:
        body[MAP_JOINTS] = {p.name: param_to_entry(p) for p in per_joint.params.values()}
    return yaml.safe_dump({node: body}, sort_keys=False, width=120, allow_unicode=True, default_flow_style=None)


def read_schema_text(text: str, node: str, where: str = "") -> tuple[Schema, Schema | None]:
    """(node-wide schema, per-joint schema or None) of ``node`` in the YAML ``text``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SchemaFileError(f"{where}not YAML: {exc}") from None
    if not isinstance(data, dict) or set(data) != {node} or not isinstance(data[node], dict):
        raise SchemaFileError(f"{where}expected one top-level key '{node}' holding the parameters")
    body = dict(data[node])
    joints = body.pop(MAP_JOINTS, None)
    params = [entry_to_param(str(name), entry, where) for name, entry in body.items()]
    per_joint = None
    if joints is not None:
        if not isinstance(joints, dict):
            raise SchemaFileError(f"{where}{MAP_JOINTS}: expected a mapping of parameters")
        per_joint_params = [entry_to_param(str(name), entry, f"{where}{MAP_JOINTS}.") for name, entry in joints.items()]
        for p in per_joint_params:
            if JOINT not in p.name:
                raise SchemaFileError(f"{where}{MAP_JOINTS}.{p.name}: a per-joint name holds '{JOINT}'")
        per_joint = Schema(*per_joint_params)
    return Schema(*params), per_joint


def schema_path(node: str) -> Path:
    """The schema file of ``node`` shipped with the package."""
    return Path(str(resources.files(SCHEMAS).joinpath(f"{node}.yaml")))


def load_schema(node: str) -> Schema:
    """The node-wide schema of ``node`` from ``robot_dynamics/ros/schemas/<node>.yaml``."""
    return _load(node)[0]


def load_joint_schema(node: str) -> Schema:
    """The per-joint template (names with ``<joint>``) of ``node``'s file (``SchemaFileError`` when it has none)."""
    joints = _load(node)[1]
    if joints is None:
        raise SchemaFileError(f"{node}.yaml: no {MAP_JOINTS} section")
    return joints


def _load(node: str) -> tuple[Schema, Schema | None]:
    text = resources.files(SCHEMAS).joinpath(f"{node}.yaml").read_text(encoding="utf-8")
    return read_schema_text(text, node, f"{node}.yaml: ")


def per_joint(template: Schema, joint: str) -> list[Param]:
    """The per-joint parameters of ``joint`` (``<joint>`` replaced in the template's names)."""
    return [Param(**{**p.__dict__, "name": p.name.replace(JOINT, joint)}) for p in template.params.values()]


__all__ = ["JOINT", "MAP_JOINTS", "SchemaFileError", "entry_to_param", "load_joint_schema", "load_schema", "param_to_entry", "per_joint",
           "read_schema_text", "schema_path", "schema_to_yaml"]
