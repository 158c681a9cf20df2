"""The declarative parameter schema (``robot_dynamics.ros.parameters``) on an in-process node: descriptors, integer
overrides of doubles, start values refused with one reason, run-time changes validated and handed to the node."""

from __future__ import annotations

import pytest
import rclpy
from rclpy.parameter import Parameter

from robot_dynamics.ros.parameters import Param, Schema


def _schema() -> Schema:
    return Schema(
        Param("omega", 20.0, "bandwidth", lo=0.0, hi=1e4, live=True, unit="rad/s"),
        Param("law", "computed_torque", "law", choices=("computed_torque", "pid"), live=True),
        Param("kp", [], "gains", kind="double_array", lo=0.0, live=True),
        Param("rate", 500.0, "loop rate", lo=1.0, hi=1e4),
        Param("window", 3, "cycles", lo=1, hi=10),
    )


@pytest.fixture
def context():
    def make(*overrides: str):
        args = ["--ros-args"]
        for o in overrides:
            args += ["-p", o]
        ctx = rclpy.Context()
        rclpy.init(args=args, context=ctx)
        made.append(ctx)
        return rclpy.create_node("schema_test", context=ctx)

    made: list = []
    yield make
    for ctx in made:
        rclpy.shutdown(context=ctx)


def test_declare_coerces_and_describes(context):
    node = context("omega:=25", "kp:=[1, 2]", "window:=4.0")
    schema = _schema()
    values = schema.declare(node)
    assert values["omega"] == 25.0 and isinstance(values["omega"], float)  # an integer where a double is expected
    assert values["kp"] == [1.0, 2.0] and isinstance(values["kp"][0], float) and values["window"] == 4 and values["law"] == "computed_torque"
    d = node.describe_parameter("omega")
    assert "bandwidth [rad/s]" in d.description and not d.read_only and d.additional_constraints == "in [0, 10000]"
    assert node.describe_parameter("rate").read_only and "(read at start)" in node.describe_parameter("rate").description
    node.destroy_node()


@pytest.mark.parametrize(("override", "reason"), [
    ("omega:=-1.0", "omega: -1 is not in [0, 10000]"),
    ("law:=foo", "law: 'foo' is not one of ['computed_torque', 'pid']"),
    ("rate:=abc", "rate: expected a number, got 'abc'"),
    ("window:=2.5", "window: expected an integer, got 2.5"),
    ("kp:=[1.0, -2.0]", "kp: -2 is not each in [0, inf]"),
])
def test_bad_start_values_are_refused_with_the_reason(context, override, reason):
    node = context(override)
    with pytest.raises(ValueError) as exc:
        _schema().declare(node)
    assert str(exc.value) == reason
    node.destroy_node()


def test_run_time_changes_validated_and_applied(context):
    node = context()
    schema = _schema()
    schema.declare(node)
    applied: list[dict] = []

    def apply(changes: dict) -> None:
        if changes.get("law") == "pid" and schema.values["kp"]:
            raise ValueError("pid takes no kp")
        applied.append(changes)

    schema.attach(node, apply)
    ok = node.set_parameters([Parameter("omega", value=3)])[0]
    assert ok.successful and schema.values["omega"] == 3.0 and applied == [{"omega": 3.0}]
    bad = node.set_parameters([Parameter("omega", value=1e5)])[0]
    assert not bad.successful and bad.reason == "omega: 100000 is not in [0, 10000]"
    bad = node.set_parameters([Parameter("omega", value=100000)])[0]  # an integer: our check
    assert not bad.successful and bad.reason == "omega: 100000 is not in [0, 10000]"
    bad = node.set_parameters([Parameter("omega", value="fast")])[0]
    assert not bad.successful and bad.reason == "omega: expected a number, got 'fast'"
    assert schema.values["omega"] == 3.0 and node.get_parameter("omega").value == 3  # nothing changed
    ro = node.set_parameters([Parameter("rate", value=50.0)])[0]
    assert not ro.successful and "read-only" in ro.reason
    assert node.set_parameters([Parameter("kp", value=[1.0])])[0].successful
    refused = node.set_parameters([Parameter("law", value="pid")])[0]
    assert not refused.successful and refused.reason == "pid takes no kp" and schema.values["law"] == "computed_torque"
    assert applied[-1] == {"kp": [1.0]}
    node.destroy_node()


def test_markdown_table():
    table = _schema().markdown().splitlines()
    assert table[0].startswith("| parameter | default |")
    assert "| `omega` | `20.0` | live | in [0, 10000] | bandwidth [rad/s] |" in table
    assert "| `rate` | `500.0` | at start | in [1, 10000] | loop rate |" in table


def test_readme_tables_are_generated_from_the_schemas():
    """The parameter tables of docs/ros2_interface.md are those of the nodes' schemas (regenerate:
    tools/parameter_tables.py --write)."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("parameter_tables", root / "tools" / "parameter_tables.py")
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    doc = root / "docs" / "ros2_interface.md"
    assert doc == tables.DOC
    assert tables.block() in doc.read_text(), "stale parameter tables: run python tools/parameter_tables.py --write"
