"""No file under ``robot_dynamics/`` over 800 lines and no class over 400 (generated code excepted): prints the
largest five of each and exits 1 on a breach (run by test/test_sizes.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE_LIMIT, CLASS_LIMIT = 800, 400
GENERATED = ("_generated", "generated_")  # compiled-model sources written by codegen, none checked in


def sizes(package: Path = ROOT / "robot_dynamics") -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(lines, file) and (lines, file:class) of every Python file of ``package``, largest first."""
    files, classes = [], []
    for path in sorted(package.rglob("*.py")):
        if any(g in path.name for g in GENERATED):
            continue
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(package.parent))
        files.append((len(text.splitlines()), rel))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                classes.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
    return sorted(files, reverse=True), sorted(classes, reverse=True)


def main() -> int:
    files, classes = sizes()
    print("largest files:", ", ".join(f"{f} {n}" for n, f in files[:5]))
    print("largest classes:", ", ".join(f"{c} {n}" for n, c in classes[:5]))
    bad = [f"{f}: {n} lines > {FILE_LIMIT}" for n, f in files if n > FILE_LIMIT]
    bad += [f"{c}: {n} lines > {CLASS_LIMIT}" for n, c in classes if n > CLASS_LIMIT]
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
