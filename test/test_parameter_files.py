"""The nodes' parameter schemas as YAML files (robot_dynamics/ros/schemas, generate_parameter_library's format):
every shipped file loads and round-trips, the code's constants agree with what the files say, the validators read
from a file hold at their boundaries, and a malformed file is refused with the file, the parameter and the reason."""

from __future__ import annotations

import math

import pytest
import yaml

from robot_dynamics.control.task_space import NULL_SPACE_LAWS
from robot_dynamics.identification.friction import FRICTION_MODELS
from robot_dynamics.ros.controller import parameters as controller
from robot_dynamics.ros.description import MAX_DESCRIPTION_BYTES, description_schema
from robot_dynamics.ros.dynamics_server import MAX_POINTS
from robot_dynamics.ros.mujoco_sim import BEHAVIORS
from robot_dynamics.ros.parameter_files import (
    JOINT,
    SchemaFileError,
    load_joint_schema,
    load_schema,
    per_joint,
    read_schema_text,
    schema_path,
    schema_to_yaml,
)
from robot_dynamics.safety import JUMP_MARGIN, POSITION_MARGIN, VELOCITY_MARGIN

NODES = ("computed_torque_controller", "trajectory_generator", "dynamics_server", "identifier", "mujoco_sim",
         "robot_description")


def fields(schema):
    return [(p.name, p.default, type(p.default), p.type, p.lo, p.hi, p.choices, p.live, p.unit, p.open_lo,
             p.description) for p in schema.params.values()]


@pytest.mark.parametrize("node", NODES)
def test_every_shipped_file_loads_and_round_trips(node):
    schema = load_schema(node)
    assert schema.params and schema_path(node).name == f"{node}.yaml" and schema_path(node).is_file()
    joints = load_joint_schema(node) if node == "computed_torque_controller" else None
    back, back_joints = read_schema_text(schema_to_yaml(node, schema, joints), node)
    assert fields(back) == fields(schema)
    if joints is not None:
        assert fields(back_joints) == fields(joints)
    for p in schema.params.values():
        assert p.check(p.default) == p.default or p.default == []  # every default passes its own validation
        assert p.description and not p.description.endswith(" ")


def test_the_code_constants_agree_with_the_files():
    c = load_schema("computed_torque_controller").params
    assert c["law"].choices == controller.LAWS
    assert c["null_space"].choices == (*NULL_SPACE_LAWS, "none")
    assert c["state_position_margin"].default == POSITION_MARGIN
    assert c["state_velocity_margin"].default == VELOCITY_MARGIN
    assert c["state_velocity_margin"].lo == controller.MIN_VELOCITY_MARGIN
    assert c["state_jump_margin"].default == JUMP_MARGIN
    d = load_schema("dynamics_server").params["max_points"]
    assert d.default == d.hi == MAX_POINTS
    assert load_schema("identifier").params["friction"].choices == FRICTION_MODELS
    assert load_schema("mujoco_sim").params["timeout_behavior"].choices == BEHAVIORS
    assert load_schema("robot_description").params["max_description_bytes"].default == MAX_DESCRIPTION_BYTES
    assert "lock_from_joint_states" in description_schema(True).params
    assert "lock_from_joint_states" not in description_schema(False).params


def test_the_per_joint_template():
    names = [p.name for p in controller.joint_parameters("joint3")]
    assert names == ["gains.joint3.p", "gains.joint3.d", "gains.joint3.i", "gains.joint3.ff_velocity_scale",
                     "constraints.joint3.trajectory", "constraints.joint3.goal"]
    assert all(JOINT in p.name for p in controller.JOINT_PARAMETERS.params.values())
    p = per_joint(controller.JOINT_PARAMETERS, "j")[0]
    assert (p.lo, p.hi, p.live) == (0.0, 1e9, True)
    with pytest.raises(SchemaFileError, match="no __map_joints"):
        load_joint_schema("dynamics_server")


ONE = """
node:
  x:
    type: double
    default_value: 1.0
    description: a quantity
    read_only: false
    unit: m
    validation:
      {validation}
"""


def one(validation: str, kind: str = "double", default: str = "1.0"):
    text = ONE.format(validation=validation).replace("type: double", f"type: {kind}").replace(
        "default_value: 1.0", f"default_value: {default}")
    return read_schema_text(text, "node", "f.yaml: ")[0].params["x"]


def test_validators_read_from_a_file_hold_at_their_boundaries():
    gt = one("gt<>: [0.0]")
    assert gt.check(1e-300) == 1e-300
    with pytest.raises(ValueError, match=r"x: 0 is not in \(0, inf\]"):
        gt.check(0.0)
    b = one("bounds<>: [0.5, 2.0]")
    assert b.check(0.5) == 0.5 and b.check(2.0) == 2.0
    for bad in (math.nextafter(0.5, 0), math.nextafter(2.0, 3)):
        with pytest.raises(ValueError):
            b.check(bad)
    ge = one("gt_eq<>: [0.0]")
    assert ge.check(0.0) == 0.0
    with pytest.raises(ValueError):
        ge.check(-1e-300)
    le = one("lt_eq<>: [3.0]")
    assert le.check(3.0) == 3.0 and le.lo is None
    with pytest.raises(ValueError):
        le.check(math.nextafter(3.0, 4))
    arr = one("element_gt<>: [0.0]\n      upper_element_bounds<>: [5.0]", "double_array", "[1.0]")
    assert arr.check([1e-300, 5.0]) == [1e-300, 5.0]
    for bad in ([0.0], [5.000001]):
        with pytest.raises(ValueError):
            arr.check(bad)
    choice = one("one_of<>: [[a, b]]", "string", "a")
    assert choice.check("b") == "b"
    with pytest.raises(ValueError, match="not one of"):
        choice.check("c")
    integer = one("bounds<>: [1, 10]", "int", "1")
    assert integer.check(10) == 10 and isinstance(integer.lo, int)
    with pytest.raises(ValueError):
        integer.check(11)


@pytest.mark.parametrize(("text", "match"), [
    ("node: [1]", "one top-level key 'node'"),
    ("other: {}", "one top-level key 'node'"),
    ("node: {x: {type: double, default_value: 1.0}}", "x: 'description' is required"),
    ("node: {x: {default_value: 1.0, description: d}}", "x: 'type' is required"),
    ("node: {x: {type: float, default_value: 1.0, description: d}}", "x: type 'float' is not one of"),
    ("node: {x: {type: double, default_value: 1.0, description: d, colour: red}}", r"x: unknown field\(s\) \['colour'\]"),
    ("node: {x: {type: double, default_value: 1.0, description: d, validation: {positive<>: []}}}",
     r"x: unknown validator\(s\) \['positive<>'\]"),
    ("node: {x: {type: double, default_value: 1.0, description: d, validation: {element_bounds<>: [0, 1]}}}",
     "do not apply to a double"),
    ("node: {x: {type: double_array, default_value: [], description: d, validation: {bounds<>: [0, 1]}}}",
     "do not apply to a double_array"),
    ("node: {x: {type: double, default_value: 1.0, description: d, validation: {bounds<>: [0]}}}",
     "bounds<> takes a list of 2 number"),
    ("node: {x: {type: double, default_value: 1.0, description: d, validation: {bounds<>: [0, '1']}}}",
     "bounds<> takes a list of 2 number"),
    ("node: {x: {type: double, default_value: 5.0, description: d, validation: {bounds<>: [0, 1]}}}",
     "default_value 5.0 fails its own validation"),
    ("node: {x: {type: string, default_value: a, description: d, validation: {one_of<>: [a, b]}}}",
     r"one_of<> takes \[\[choice, ...\]\]"),
    ("node: {x: {type: bool, default_value: true, description: d, read_only: maybe}}", "read_only is true or false"),
    ("node: {__map_joints: {gains.p: {type: double, default_value: 0.0, description: d}}}",
     "a per-joint name holds '<joint>'"),
    ("node: {x: {type: double", "not YAML"),
])
def test_a_malformed_file_is_refused_with_the_file_and_the_parameter(text, match):
    with pytest.raises(SchemaFileError, match=match) as err:
        read_schema_text(text, "node", "f.yaml: ")
    assert str(err.value).startswith("f.yaml: ")


def test_the_files_are_generate_parameter_library_shaped():
    """One top-level key per file, each parameter a mapping with type/default_value/description/read_only."""
    for node in NODES:
        data = yaml.safe_load(schema_path(node).read_text())
        assert list(data) == [node]
        for name, entry in data[node].items():
            if name == "__map_joints":
                continue
            assert {"type", "default_value", "description", "read_only"} <= set(entry), name
