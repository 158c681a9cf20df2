"""The README's parameter tables, generated from the nodes' schemas (``robot_dynamics.ros.parameters``).

``python tools/parameter_tables.py`` prints them; ``--write`` replaces the block between the markers
``<!-- parameters: begin -->`` and ``<!-- parameters: end -->`` in README.md (test_parameter_schema.py checks that
the README is up to date)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- parameters: begin -->", "<!-- parameters: end -->"


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


def main() -> int:
    if "--write" in sys.argv:
        readme = ROOT / "README.md"
        text = readme.read_text()
        i, j = text.index(BEGIN), text.index(END) + len(END)
        readme.write_text(text[:i] + block() + text[j:])
    else:
        print(tables())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
