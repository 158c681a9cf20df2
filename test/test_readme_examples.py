"""The README is a short page whose examples work, and the documentation it points to holds together.

Fast, no ROS process: the README's length, no work-tracking words in README.md and docs/*.md, the README's Python
example run as written (its output checked against the RX-90's table in Khalil & Dombre (002 Table 3.1) and
against Pinocchio), every ``robot-dynamics <subcommand> ...`` written in the pages accepted by the command line's
own parser, every relative link resolving to a file (and heading), and the README's two commands being the
Makefile's and CI's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 250

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
# "issue 20", "issues 20", "stop 24", "issue #7": words of the work tracking, not of the documentation
TRACKING = re.compile(r"\b(?:issues?|stops?)\s+#?\d+", re.I)
# a subcommand: the word after robot-dynamics, as a whole (``robot-dynamics identify: warning`` is output, not a
# command)
COMMAND = re.compile(r"robot-dynamics[ \t]+(?P<sub>[a-z][\w-]*)(?![\w:-])")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)


def _python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _without_code_blocks(text: str) -> str:
    return FENCE.sub("", text)


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


# ------------------------------------------------------------------ length and words
def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; keep it at most {MAX_README_LINES} (details go to docs/)"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_work_tracking_words(page):
    hits = [f"{_rel(page)}:{i}: {line.strip()}" for i, line in enumerate(page.read_text().splitlines(), 1)
            if TRACKING.search(line)]
    assert not hits, "work-tracking references in user-facing text:\n" + "\n".join(hits)


# ------------------------------------------------------------------ the README's commands
def test_readme_two_commands_are_the_makefile_and_ci_ones():
    """The README's command block is ``make demo`` / ``make test`` (what .ci/run runs), both Makefile targets."""
    blocks = re.findall(r"^```bash\n(.*?)^```", README.read_text(), re.S | re.M)
    commands = []
    for block in blocks:
        lines = re.sub(r"\\\n", " ", block).splitlines()  # continuations joined
        commands.append([argv for argv in (shlex.split(line, comments=True) for line in lines) if argv])
    assert [["make", "demo"], ["make", "test"]] in commands, "README lost its `make demo` / `make test` block"
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no target {target!r}"
    assert re.search(r"^make test\b", (ROOT / ".ci" / "run").read_text(), re.M), ".ci/run no longer runs `make test`"


# ------------------------------------------------------------------ the README's Python example
def _readme_python_example() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) == 1, f"the README should have exactly one Python example, found {len(blocks)}"
    return blocks[0]


def _printed_array(out: str, label: str) -> np.ndarray:
    m = re.search(re.escape(label) + r"\s*\[([^\]]*)\]", out)
    assert m, f"the example no longer prints {label!r}:\n{out}"
    return np.array([float(x) for x in m.group(1).split()])


def test_readme_python_example_runs_as_written():
    code = _readme_python_example()
    env = {k: v for k, v in os.environ.items() if k != "ROBOT_DYNAMICS_ENGINE"}  # the user's default engine
    proc = subprocess.run([_python(), "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout

    # the MDH table is the RX-90's of Khalil & Dombre part I (002) Table 3.1: alpha, d, r (D3 = RL4 = 0.45 m)
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*[1-6]\s+\d+\s+[01]\s", line)]
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5", "6"], out
    h = np.pi / 2
    np.testing.assert_allclose([float(r[3]) for r in rows], [0, h, 0, -h, h, -h], atol=1e-4)
    np.testing.assert_allclose([float(r[4]) for r in rows], [0, 0, 0.45, 0, 0, 0], atol=1e-9)
    np.testing.assert_allclose([float(r[6]) for r in rows], [0, 0, 0, 0.45, 0, 0], atol=1e-9)
    assert [r[5] for r in rows] == [f"q{j}" for j in range(1, 7)]

    # tip position and gravity torques: Pinocchio on the same URDF at the example's q
    pin = pytest.importorskip("pinocchio")
    m = re.search(r"^q = np\.array\(\[([^\]]*)\]\)", code, re.M)
    assert m, "the example no longer sets q = np.array([...])"
    q = np.array([float(x) for x in m.group(1).split(",")])
    model = pin.buildModelFromUrdf(str(ROOT / "urdf" / "rx90.urdf"))
    data = model.createData()
    q_pin = pin.neutral(model)
    for j, name in enumerate(f"joint{k}" for k in range(1, 7)):
        q_pin[model.joints[model.getJointId(name)].idx_q] = q[j]
    pin.framesForwardKinematics(model, data, q_pin)
    tip = data.oMf[model.getFrameId("tool")].translation
    g = pin.computeGeneralizedGravity(model, data, q_pin)
    g = np.array([g[model.joints[model.getJointId(f"joint{k}")].idx_v] for k in range(1, 7)])

    np.testing.assert_allclose(_printed_array(out, "tip position [m]:"), tip, atol=1e-4)
    np.testing.assert_allclose(_printed_array(out, "gravity torques [N m]:"), g, rtol=1e-5, atol=1e-3)
    assert np.abs(g).max() > 1.0  # a pose where gravity loads the arm: the comparison means something
    # held by its gravity torques, the arm at rest does not accelerate
    np.testing.assert_allclose(_printed_array(out, "acceleration under them:"), np.zeros(6), atol=1e-4)


# ------------------------------------------------------------------ robot-dynamics command lines
def _command_texts(page: Path) -> list[str]:
    """Every ``robot-dynamics <subcommand> ...`` written in ``page``: a code-block line (continuations joined), or a
    code span; the text from ``robot-dynamics`` on."""
    text = page.read_text()
    found: list[str] = []
    for block in FENCE.findall(text):
        for line in re.sub(r"\\\n", " ", block).splitlines():
            found += [line[m.start():] for m in COMMAND.finditer(line)]
    for span in re.findall(r"`([^`\n]+)`", _without_code_blocks(text)):
        found += [span[m.start():] for m in COMMAND.finditer(span)]
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _check_command(text: str) -> list[str]:
    """What is wrong with one written command line (empty: nothing)."""
    from robot_dynamics.cli import build_parser

    parser = build_parser()
    subs = _subparsers(parser)
    argv = shlex.split(text, comments=True)
    sub = argv[1]
    if sub not in subs:
        return [f"no subcommand {sub!r} (known: {', '.join(subs)})"]
    known = {s for a in subs[sub]._actions for s in a.option_strings}
    known |= {s for a in parser._actions for s in a.option_strings}
    errors = []
    # a synopsis (``[--opt X]``, ``a|b``, ``DATA...``) or a bare name (``robot-dynamics identify`` in a sentence):
    # only its option names are checked
    synopsis = len(argv) == 2 or any(mark in tok for tok in argv for mark in ("[", "]", "|", "...", "…"))
    for tok in argv[2:]:
        for piece in tok.strip("[]").split("|"):
            piece = piece.strip("[]")
            if not piece.startswith("-") or re.fullmatch(r"-\.?\d.*", piece):  # a value or a negative number
                continue
            option = piece.split("=", 1)[0]
            if option not in known:
                errors.append(f"{sub}: unknown option {option}")
    if not synopsis and not errors:  # a concrete command: the parser must accept it whole
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(argv[1:])
        except SystemExit as exc:
            if exc.code:
                errors.append(f"refused by the parser: {err.getvalue().strip()}")
    return errors


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_command_lines_are_accepted_by_the_cli(page):
    problems = [f"{_rel(page)}: {text.strip()}\n    {e}" for text in _command_texts(page) for e in _check_command(text)]
    assert not problems, "\n".join(problems)


def test_command_lines_are_found():
    """The extraction sees the commands it must check (the README's, cli.md's list, a code span)."""
    readme = _command_texts(README)
    assert any(t.startswith("robot-dynamics simulate rx90") and "--plot sim.png" in t for t in readme), readme
    cli = _command_texts(ROOT / "docs" / "cli.md")
    assert {shlex.split(t, comments=True)[1] for t in cli} >= {"dh", "plan", "simulate", "identify", "bringup"}
    assert _check_command("robot-dynamics simulate rx90 --goal 1 --no-such-option") == [
        "simulate: unknown option --no-such-option"]
    assert _check_command("robot-dynamics plan rx90")[0].startswith("refused by the parser")  # --goal is required
    assert _check_command("robot-dynamics frobnicate rx90")[0].startswith("no subcommand 'frobnicate'")


# ------------------------------------------------------------------ links
def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", _without_code_blocks(page.read_text()), re.M):
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page):
    text = _without_code_blocks(page.read_text())
    targets = LINK.findall(text) + REF_LINK.findall(text)
    bad = []
    for target in targets:
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            bad.append(f"{target}: no heading #{fragment} in {dest.name}")
    assert not bad, f"{_rel(page)}: broken links:\n" + "\n".join(bad)


# ------------------------------------------------------------------ the docs' examples on the shipped files
def test_python_api_example_runs_as_written(monkeypatch):
    """docs/python_api.md's first Python block, on the example files the repository ships (examples/)."""
    text = (ROOT / "docs" / "python_api.md").read_text()
    block = next(b for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M) if "examples/" in b)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, "docs/python_api.md", "exec"), scope)  # noqa: S102 - the documentation's own code
    model, arm, T = scope["model"], scope["arm"], scope["T"]
    assert model.dof == 5 and arm.dof == 3 and "finger_joint" in arm.locked_joints
    assert T.shape == (4, 4) and np.allclose(T[3], [0, 0, 0, 1]) and "joint1" in out.getvalue()
    np.testing.assert_allclose(scope["W"] @ model.standard_parameters.values, scope["tau"], atol=1e-10)
    with pytest.raises(ValueError, match="a tree with no tip_link: give link="):
        model.forward_kinematics(scope["q"])  # a tree without link=: one clear error


DH_LINES = [line.split("#")[0].split()[1:] for line in (ROOT / "docs" / "cli.md").read_text().splitlines()
            if line.startswith(".venv/bin/robot-dynamics dh ")]


@pytest.mark.parametrize("argv", DH_LINES, ids=[" ".join(a) for a in DH_LINES])
def test_cli_dh_examples_run_as_written(argv, monkeypatch, capsys):
    from robot_dynamics.cli import main

    monkeypatch.chdir(ROOT)
    assert main(argv) == 0
    assert "joint" in capsys.readouterr().out


def test_cli_dh_examples_cover_the_shipped_files():
    used = {a[1] for a in DH_LINES}
    assert {"examples/gripper_arm.urdf", "examples/arm.urdf.xacro"} <= used
    assert all((ROOT / f).is_file() for f in used if "/" in f)


def test_a_missing_xacro_file_is_said_missing(capsys):
    from robot_dynamics.cli import main

    assert main(["dh", "missing.urdf.xacro", "--xacro-arg", "l1:=0.4"]) != 0
    assert "'missing.urdf.xacro': no such file" in capsys.readouterr().err
