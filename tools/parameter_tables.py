"""The parameter tables of docs/ros2_interface.md, generated from the nodes' schemas (``robot_dynamics.ros.parameters``).

``python tools/parameter_tables.py`` prints them; ``--write`` replaces the block between the markers
``<!-- parameters: begin -->`` and ``<!-- parameters: end -->`` in docs/ros2_interface.md; ``--check`` exits 1
when that block is not what the schemas give (test_parameter_schema.py checks the same)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- parameters: begin -->", "<!-- parameters: end -->"
# the page that carries the tables between the markers
DOC = ROOT / "docs" / "ros2_interface.md"


def tables() -> str:
    from robot_dynamics.ros import (
        computed_torque_controller,
        dynamics_server,
        identifier,
        mujoco_sim,
        trajectory_generator,
    )
    from robot_dynamics.ros.description import description_schema

    parts = [
        ("`computed_torque_controller`", computed_torque_controller.PARAMETERS),
        ("`computed_torque_controller`, per joint of the model (JTC's names; declared when the robot description "
         "arrives, start values from the parameter files)", computed_torque_controller.JOINT_PARAMETERS),
        ("`trajectory_generator`", trajectory_generator.PARAMETERS),
        ("`dynamics_server`", dynamics_server.PARAMETERS),
        ("`identifier`", identifier.PARAMETERS),
        ("`mujoco_sim`", mujoco_sim.PARAMETERS),
        ("every node (robot description; `lock_from_joint_states`: controller and dynamics server)",
         description_schema(lock_from_joint_states=True)),
    ]
    return "\n\n".join(f"{title}:\n\n{schema.markdown()}" for title, schema in parts)


def block() -> str:
    return f"{BEGIN}\n{tables()}\n{END}"


def is_current(text: str | None = None) -> bool:
    """Whether DOC (or ``text``) carries the tables the schemas give, between the markers."""
    return block() in (DOC.read_text() if text is None else text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true",
                      help=f"replace the block between the markers in {DOC.relative_to(ROOT)}")
    mode.add_argument("--check", action="store_true",
                      help=f"exit 1 when the block in {DOC.relative_to(ROOT)} is stale (regenerate with --write)")
    args = ap.parse_args(argv)
    if args.write:
        text = DOC.read_text()
        i, j = text.index(BEGIN), text.index(END) + len(END)
        DOC.write_text(text[:i] + block() + text[j:])
    elif args.check:
        if not is_current():
            print(f"{DOC.relative_to(ROOT)}: the parameter tables are stale; run python tools/parameter_tables.py "
                  "--write", file=sys.stderr)
            return 1
        print(f"{DOC.relative_to(ROOT)}: the parameter tables are current")
    else:
        print(tables())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
