"""Point the CMake exports of the PyPI ROS 2 wheels at this venv's Python.

The wheels are built in a manylinux container; some exported targets name its
include dirs (/opt/python/cp311-cp311/...), which do not exist here.  Rewrite
them inside the venv only (never on the system).  Idempotent.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

PREFIX = "/opt/python/cp311-cp311"


def main() -> int:
    venv = Path(sys.prefix)
    replacements = {
        f"{PREFIX}/lib/python3.11/site-packages": sysconfig.get_paths()["purelib"],
        f"{PREFIX}/include/python3.11": sysconfig.get_paths()["include"],
    }
    changed = 0
    for path in (venv / "share").glob("*/cmake/*.cmake"):
        text = path.read_text()
        if PREFIX not in text:
            continue
        for old, new in replacements.items():
            text = text.replace(old, new)
        path.write_text(text)
        changed += 1
    print(f"fix_cmake_exports: rewrote {changed} file(s) in {venv / 'share'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
