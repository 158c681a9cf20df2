"""Files stay readable: no file of robot_dynamics/ over 800 lines, no class over 400 (tools/check_sizes.py, which
also prints the largest five of each); the check itself finds a breach just past each limit and none at it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "tools" / "check_sizes.py")
check_sizes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_sizes)


def test_no_file_or_class_over_the_limits():
    files, classes = check_sizes.sizes()
    assert len(files) > 100 and classes
    assert files[0][0] <= check_sizes.FILE_LIMIT, files[:5]
    assert classes[0][0] <= check_sizes.CLASS_LIMIT, classes[:5]
    print("\nlargest files:", files[:5], "\nlargest classes:", classes[:5])


def test_the_check_finds_a_breach_just_past_each_limit(tmp_path):
    pkg = tmp_path / "robot_dynamics"
    pkg.mkdir()

    def write(name: str, lines: int, class_lines: int) -> None:
        body = ["class C:"] + ["    x = 1"] * (class_lines - 1) + ["y = 0"] * (lines - class_lines)
        (pkg / name).write_text("\n".join(body) + "\n")

    write("at.py", check_sizes.FILE_LIMIT, check_sizes.CLASS_LIMIT)
    files, classes = check_sizes.sizes(pkg)
    assert files == [(800, "robot_dynamics/at.py")] and classes == [(400, "robot_dynamics/at.py:C")]
    write("past.py", check_sizes.FILE_LIMIT + 1, check_sizes.CLASS_LIMIT + 1)
    files, classes = check_sizes.sizes(pkg)
    assert files[0] == (801, "robot_dynamics/past.py") and classes[0] == (401, "robot_dynamics/past.py:C")
