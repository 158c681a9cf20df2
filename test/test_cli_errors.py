"""Bad command-line inputs (issue 13): each is refused with one line on stderr and exit code 2.

Every case goes through the real entry point: ``main(argv)`` in this process for the bulk, and
``python -m robot_dynamics`` in a subprocess for a representative subset.  The subprocesses run
with their address space limited to 2 GB (RLIMIT_AS), so an input that would make the command
allocate gigabytes (``plan --period 1e-9`` used to ask for 4.7 GiB) fails with a MemoryError
traceback instead of being refused: those must be refused from their sizes, before allocating.
"""

from __future__ import annotations

import io
import os
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics import cli
from robot_dynamics.cli import main
from robot_dynamics.identification.data import IdentificationData, save_csv, save_npz, write_bag
from robot_dynamics.model.robots import load_model, resolve_urdf

REPO = Path(__file__).resolve().parent.parent
ADDRESS_SPACE = 2 * 2**30  # bytes, for the subprocesses
RX90_GOAL = ["1", "1", "1", "1", "1", "1"]


# ------------------------------------------------------------------ input files
def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _planar2r_data(n: int = 3000, dt: float = 0.001) -> IdentificationData:
    model = load_model("planar2r")
    t = np.arange(n) * dt
    w = 2 * np.pi * np.array([0.7, 1.1])
    q = 0.8 * np.sin(np.outer(t, w))
    qd = 0.8 * np.cos(np.outer(t, w)) * w
    qdd = -q * w**2
    return IdentificationData(t, q, model.inverse_dynamics(q, qd, qdd), joint_names=model.joint_names)


def _bag_with(path: Path, topic: str, msgtype: str, payloads: list[bytes]) -> None:
    from rosbags.rosbag2 import Writer

    from robot_dynamics.identification.data import _typestore

    with Writer(path, version=9) as w:
        conn = w.add_connection(topic, msgtype, typestore=_typestore())
        for k, raw in enumerate(payloads):
            w.write(conn, k + 1, raw)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good and bad inputs, written once: name -> path."""
    d = tmp_path_factory.mktemp("cli_inputs")
    f: dict[str, Path] = {"dir": d}
    good = _planar2r_data()
    save_npz(d / "good.npz", good)
    save_csv(d / "good.csv", good)
    write_bag(d / "good_bag", good)
    f.update(good_npz=d / "good.npz", good_csv=d / "good.csv", good_bag=d / "good_bag")

    # NPZ
    raw = (d / "good.npz").read_bytes()
    (d / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    (d / "empty.npz").write_bytes(b"")
    with zipfile.ZipFile(d / "bomb.npz", "w") as z:  # headers claim 10^10 samples, no data
        for k, shape in (("t", (10**10,)), ("q", (10**10, 2)), ("effort", (10**10, 2))):
            z.writestr(f"{k}.npy", _npy_header(shape))
    t = np.concatenate([np.arange(50) * 1e-9, [1e6]])  # median step 1 ns over 10^6 s: 10^15 grid samples
    np.savez(d / "jitter.npz", t=t, q=np.zeros((51, 2)), effort=np.zeros((51, 2)))
    np.savez(d / "object.npz", t=np.arange(20.0), q=np.zeros((20, 2)), effort=np.array([None] * 20, dtype=object))
    np.save(d / "single.npy", np.zeros(5))
    shutil.copy(d / "single.npy", d / "single.npz")
    np.savez(d / "noeffort.npz", t=np.arange(20.0), q=np.zeros((20, 2)))
    np.savez(d / "nan.npz", t=np.arange(20.0), q=np.full((20, 2), np.nan), effort=np.zeros((20, 2)))
    np.savez(d / "short.npz", t=np.arange(10) * 0.01, q=np.zeros((10, 2)), effort=np.zeros((10, 2)),
             joint_names=np.array(good.joint_names))
    # CSV
    (d / "nojoints.csv").write_text("t,x,y\n0,1,2\n1,2,3\n")
    (d / "rowlength.csv").write_text("t,q_joint1,effort_joint1\n0,1,2\n1,2\n2,3,4\n")
    (d / "nonnumeric.csv").write_text("t,q_joint1,effort_joint1\n0,1,2\n1,abc,3\n2,3,4\n")
    (d / "duplicate.csv").write_text("t,q_joint1,q_joint1,effort_joint1\n0,1,1,2\n1,2,2,3\n")
    (d / "binary.csv").write_bytes(b"t,q_a,effort_a\n\xff\xfe\x00\x81garbage\n")
    (d / "empty.csv").write_text("")
    (d / "otherjoints.csv").write_text("t,q_a,q_b,effort_a,effort_b\n"
                                       + "".join(f"{k * 0.01},0,0,0,0\n" for k in range(100)))
    (d / "data.txt").write_text("1 2 3\n")
    # bags
    shutil.copytree(d / "good_bag", d / "bag_version")
    meta = d / "bag_version" / "metadata.yaml"
    meta.write_text(meta.read_text().replace("version: 9", "version: 99"))
    shutil.copytree(d / "good_bag", d / "bag_corrupt")
    db = d / "bag_corrupt" / "good_bag.db3"
    db.write_bytes(db.read_bytes()[:3000])
    shutil.copytree(d / "good_bag", d / "bag_yaml")
    (d / "bag_yaml" / "metadata.yaml").write_text("{{{: [\n")
    (d / "not_a_bag").mkdir()
    (d / "not_a_bag" / "x.txt").write_text("x")
    from robot_dynamics.identification.data import _typestore

    ts = _typestore()
    string = ts.types["std_msgs/msg/String"]
    _bag_with(d / "bag_type", "/joint_states", string.__msgtype__,
              [ts.serialize_cdr(string(data="x"), string.__msgtype__)])
    _bag_with(d / "bag_topic", "/chatter", string.__msgtype__, [ts.serialize_cdr(string(data="x"), string.__msgtype__)])
    _bag_with(d / "bag_garbage", "/joint_states", "sensor_msgs/msg/JointState",
              [b"\x00\x01\x00\x00" + bytes(range(200, 240))] * 20)
    # URDF
    (d / "empty.urdf").write_text("")
    (d / "html.urdf").write_text("<?xml version='1.0'?><html><body/></html>")
    (d / "garbage.urdf").write_bytes(bytes(range(256)) * 10)
    (d / "text.urdf").write_text("this is not XML\n")
    with open(d / "huge.urdf", "wb") as fh:  # sparse: 70 MB of zeros
        fh.truncate(70 * 2**20)
    (d / "inverted.urdf").write_text(
        '<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
        '<child link="b"/><limit lower="1" upper="-1" velocity="1" effort="1"/></joint></robot>')
    text = resolve_urdf("planar2r").read_text()
    (d / "slow").mkdir()  # planar2r (same config file: acceleration limits) with velocity limits of 1e-7
    (d / "slow" / "planar2r.urdf").write_text(text.replace('velocity="3.0"', 'velocity="1e-7"'))
    (d / "continuous").mkdir()
    (d / "continuous" / "planar2r.urdf").write_text(text.replace('type="revolute"', 'type="continuous"'))
    # others
    (d / "bad.yaml").write_text("a: [1\n")
    (d / "a_file").write_text("x")
    return f


def _argv(argv: list[str], files: dict[str, Path]) -> list[str]:
    """``@name`` -> the path of that input; ``@dir/x`` -> a path in the inputs' folder."""
    out = []
    for a in argv:
        if a.startswith("@"):
            key, _, rest = a[1:].partition("/")
            p = files.get(key, files["dir"] / key)
            a = str(p / rest) if rest else str(p)
        out.append(a)
    return out


# (id, argv, keyword of the cause that the error line must contain)
NUMBERS = [
    ("plan-period-tiny", ["plan", "rx90", "--goal", *RX90_GOAL, "--period", "1e-9"], "samples"),
    ("plan-duration-huge", ["plan", "rx90", "--goal", *RX90_GOAL, "--duration", "1e9"], "samples"),
    ("plan-period-nan", ["plan", "rx90", "--goal", *RX90_GOAL, "--period", "nan"], "--period"),
    ("plan-period-negative", ["plan", "rx90", "--goal", *RX90_GOAL, "--period", "-1"], "--period"),
    ("plan-period-zero", ["plan", "rx90", "--goal", *RX90_GOAL, "--period", "0"], "--period"),
    ("plan-period-text", ["plan", "rx90", "--goal", *RX90_GOAL, "--period", "abc"], "--period"),
    ("plan-duration-negative", ["plan", "rx90", "--goal", *RX90_GOAL, "--duration", "-5"], "--duration"),
    ("plan-duration-inf", ["plan", "rx90", "--goal", *RX90_GOAL, "--duration", "inf"], "--duration"),
    ("plan-duration-too-short", ["plan", "rx90", "--goal", *RX90_GOAL, "--duration", "0.1"], "minimum"),
    ("plan-goal-inf", ["plan", "rx90", "--goal", "1", "inf", "1", "1", "1", "1"], "--goal"),
    ("simulate-model-error-negative", ["simulate", "planar2r", "--goal", "1", "1", "--model-error", "-5"],
     "--model-error"),
    ("simulate-model-error-one", ["simulate", "planar2r", "--goal", "1", "1", "--model-error", "1.5"], "--model-error"),
    ("simulate-seed-negative", ["simulate", "planar2r", "--goal", "1", "1", "--seed", "-1"], "--seed"),
    ("identify-cutoff-negative", ["identify", "planar2r", "@good_npz", "--cutoff", "-5"], "--cutoff"),
    ("identify-band-inf", ["identify", "planar2r", "@good_npz", "--band", "inf"], "--band"),
    ("identify-decimate-zero", ["identify", "planar2r", "@good_npz", "--decimate", "0"], "--decimate"),
    ("identify-min-velocity-nan", ["identify", "planar2r", "@good_npz", "--min-velocity", "nan"], "--min-velocity"),
    ("record-duration-huge", ["identify-record", "--duration", "1e9"], "--duration"),
    ("record-duration-zero", ["identify-record", "--duration", "0"], "--duration"),
    ("record-total-too-long", ["identify-record", "--duration", "100", "--periods", "100"], "recording"),
    ("record-periods-zero", ["identify-record", "--periods", "0"], "--periods"),
    ("record-harmonics-one", ["identify-record", "--harmonics", "1"], "--harmonics"),
    ("record-model-error-one", ["identify-record", "--model-error", "1"], "--model-error"),
    ("bringup-duration-negative", ["bringup", "--duration", "-1"], "--duration"),
    ("bringup-sim-unknown", ["bringup", "--sim", "bogus"], "--sim"),
    ("no-command", [], "command"),
    ("unknown-option", ["plan", "rx90", "--goal", *RX90_GOAL, "--bogus"], "--bogus"),
]
GOALS = [
    ("plan-goal-beyond-limit", ["plan", "rx90", "--goal", "9", "0", "0", "0", "0", "0"], "joint1"),
    ("plan-start-beyond-limit", ["plan", "rx90", "--goal", *RX90_GOAL, "--start", "0", "0", "3", "0", "0", "0"],
     "joint3"),
    ("plan-goal-wrong-length", ["plan", "rx90", "--goal", "1"], "6 joints"),
    ("plan-start-wrong-length", ["plan", "rx90", "--goal", *RX90_GOAL, "--start", "0", "0"], "--start"),
    ("simulate-goal-beyond-limit", ["simulate", "rx90", "--goal", "0", "0", "0", "0", "0", "9"], "joint6"),
    ("simulate-goal-wrong-length", ["simulate", "rx90", "--goal", "1", "1"], "6 joints"),
    ("plan-slow-robot", ["plan", "@slow/planar2r.urdf", "--goal", "1", "1"], "samples"),
    ("simulate-slow-robot", ["simulate", "@slow/planar2r.urdf", "--goal", "1", "1"], "steps"),
    ("plan-continuous-far-goal", ["plan", "@continuous/planar2r.urdf", "--goal", "1e5", "0"], "samples"),
]
FILES = [
    ("npz-truncated", ["identify", "planar2r", "@truncated.npz"], "truncated"),
    ("npz-empty", ["identify", "planar2r", "@empty.npz"], "empty"),
    ("npz-header-bomb", ["identify", "planar2r", "@bomb.npz"], "maximum"),
    ("npz-jittered-huge-grid", ["identify", "planar2r", "@jitter.npz"], "samples"),
    ("npz-object-array", ["identify", "planar2r", "@object.npz"], "dtype"),
    ("npz-is-npy", ["identify", "planar2r", "@single.npz"], ".npy"),
    ("npz-no-effort", ["identify", "planar2r", "@noeffort.npz"], "effort"),
    ("npz-nan", ["identify", "planar2r", "@nan.npz"], "NaN"),
    ("npz-too-short-for-filters", ["identify", "planar2r", "@short.npz"], "samples"),
    ("bag-unknown-version", ["identify", "planar2r", "@bag_version"], "version 99"),
    ("bag-corrupt-database", ["identify", "planar2r", "@bag_corrupt"], "bag_corrupt"),
    ("bag-bad-metadata-yaml", ["identify", "planar2r", "@bag_yaml"], "bag_yaml"),
    ("bag-no-metadata", ["identify", "planar2r", "@not_a_bag"], "metadata.yaml"),
    ("bag-wrong-message-type", ["identify", "planar2r", "@bag_type"], "std_msgs/msg/String"),
    ("bag-no-joint-states", ["identify", "planar2r", "@bag_topic"], "/joint_states"),
    ("bag-garbage-messages", ["identify", "planar2r", "@bag_garbage"], "bag_garbage"),
    ("csv-no-joint-columns", ["identify", "planar2r", "@nojoints.csv"], "q_<joint>"),
    ("csv-row-length", ["identify", "planar2r", "@rowlength.csv"], "line 3"),
    ("csv-non-numeric", ["identify", "planar2r", "@nonnumeric.csv"], "abc"),
    ("csv-duplicate-columns", ["identify", "planar2r", "@duplicate.csv"], "duplicate"),
    ("csv-binary", ["identify", "planar2r", "@binary.csv"], "UTF-8"),
    ("csv-empty", ["identify", "planar2r", "@empty.csv"], "empty"),
    ("data-other-joints", ["identify", "planar2r", "@otherjoints.csv"], "joint1"),
    ("data-missing", ["identify", "planar2r", "@dir/missing.npz"], "missing.npz"),
    ("data-unknown-format", ["identify", "planar2r", "@data.txt"], "format"),
    ("identify-output-directory", ["identify", "planar2r", "@good_npz", "-o", "@dir"], "directory"),
    ("identify-output-missing-dir", ["identify", "planar2r", "@good_npz", "-o", "@dir/nodir/est.yaml"],
     "does not exist"),
    ("identify-outputs-same", ["identify", "planar2r", "@good_npz", "-o", "@dir/e.yaml", "--model-output",
                               "@dir/e.yaml"], "different"),
    ("urdf-missing", ["dh", "@dir/missing.urdf"], "missing.urdf"),
    ("urdf-directory", ["dh", "@dir"], "directory"),
    ("urdf-empty", ["dh", "@empty.urdf"], "empty"),
    ("urdf-not-robot-xml", ["dh", "@html.urdf"], "<robot>"),
    ("urdf-binary-garbage", ["dh", "@garbage.urdf"], "UTF-8"),
    ("urdf-huge", ["base-params", "@huge.urdf"], "maximum"),
    ("urdf-not-xml", ["dh", "@text.urdf"], "XML"),
    ("urdf-inverted-limits", ["dh", "@inverted.urdf"], "lower limit"),
    ("urdf-unknown-tip", ["dh", "rx90", "--tip", "nolink"], "nolink"),
    ("urdf-unknown-base", ["base-params", "rx90", "--base", "nolink"], "nolink"),
    ("codegen-output-directory", ["codegen", "planar2r", "-o", "@dir"], "directory"),
    ("plan-plot-directory", ["plan", "rx90", "--goal", *RX90_GOAL, "--plot", "@dir"], "directory"),
    ("plan-plot-format", ["plan", "rx90", "--goal", *RX90_GOAL, "--plot", "@dir/p.xyz"], "xyz"),
    ("bringup-unknown-robot", ["bringup", "--robot", "nosuch"], "nosuch"),
    ("bringup-params-missing", ["bringup", "--params", "@dir/missing.yaml"], "missing.yaml"),
    ("bringup-params-bad-yaml", ["bringup", "--params", "@bad.yaml"], "YAML"),
    ("demo-output-is-file", ["demo", "--output", "@a_file"], "not a directory"),
    ("demo-robot-garbage", ["demo", "--robot", "@garbage.urdf"], "UTF-8"),
    ("record-output-is-file", ["identify-record", "--output", "@a_file"], "not a directory"),
]
CASES = NUMBERS + GOALS + FILES

# inputs that would make the command allocate gigabytes if they were not refused from their sizes:
# only run in a subprocess with a memory limit (a regression then fails there, not in the test process)
MEMORY = [
    "plan-period-tiny", "plan-duration-huge", "plan-slow-robot", "simulate-slow-robot", "plan-continuous-far-goal",
    "npz-header-bomb", "npz-jittered-huge-grid", "record-duration-huge", "record-total-too-long",
]
# run as users do (python -m robot_dynamics, 2 GB of address space): those and a few of each kind
SUBPROCESS = [
    *MEMORY, "npz-truncated", "bag-unknown-version", "identify-output-directory", "urdf-binary-garbage",
    "plan-goal-beyond-limit", "simulate-goal-beyond-limit", "simulate-model-error-negative", "identify-cutoff-negative",
    "csv-row-length", "no-command",
]


def test_case_list() -> None:
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids) >= 35
    assert set(SUBPROCESS) <= set(ids) and set(MEMORY) <= set(SUBPROCESS)


def _run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run_cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **(env or {})}
    environ.pop("ROBOT_DYNAMICS_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "robot_dynamics", *argv], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300, preexec_fn=_limit_memory)


def _assert_refused(code: int, out: str, err: str, keyword: str) -> None:
    assert "Traceback" not in out + err, err
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].strip(), err
    assert lines[0].startswith("robot-dynamics") and "error:" in lines[0], lines[0]
    assert keyword.lower() in lines[0].lower(), (keyword, lines[0])


@pytest.mark.parametrize(("argv", "keyword"), [pytest.param(a, k, id=i) for i, a, k in CASES if i not in MEMORY])
def test_bad_input_in_process(argv: list[str], keyword: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(files["dir"])
    monkeypatch.delenv("ROBOT_DYNAMICS_DEBUG", raising=False)
    before = sorted(p.name for p in files["dir"].iterdir())
    _assert_refused(*_run_main(_argv(argv, files), capsys), keyword)
    assert sorted(p.name for p in files["dir"].iterdir()) == before  # a refused command writes nothing


@pytest.mark.parametrize(("argv", "keyword"), [pytest.param(a, k, id=i) for i, a, k in CASES if i in SUBPROCESS])
def test_bad_input_subprocess_2gb(argv: list[str], keyword: str, files: dict[str, Path]) -> None:
    res = _run_cli(_argv(argv, files), files["dir"])
    assert "MemoryError" not in res.stderr, res.stderr
    _assert_refused(res.returncode, res.stdout, res.stderr, keyword)


def test_the_memory_limit_is_effective(tmp_path: Path) -> None:
    """Control: under the same limit an allocation of 4.8 GB fails, so the refusals above are not luck."""
    res = subprocess.run([sys.executable, "-c", "import numpy; numpy.ones(600_000_000)"], capture_output=True,
                         text=True, timeout=120, preexec_fn=_limit_memory, cwd=tmp_path,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert res.returncode != 0 and "MemoryError" in res.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        argv = ["identify", "planar2r", str(files["good_npz"]), "-o", str(ro / "est.yaml")]
        _assert_refused(*_run_main(argv, capsys), "not writable")
    finally:
        ro.chmod(0o755)


# ------------------------------------------------------------------ the wrapper itself
@pytest.mark.parametrize(("exc", "keyword"), [
    (MemoryError(), "out of memory"),
    (KeyError("q"), "missing key 'q'"),
    (IsADirectoryError(21, "Is a directory", "/x"), "/x: Is a directory"),
    (ValueError("first line\n  second line\n"), "first line second line"),
    (RuntimeError("boom"), "internal error (RuntimeError: boom)"),
])
def test_any_exception_is_one_line(exc: BaseException, keyword: str, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    def fail(args: object) -> int:
        raise exc

    monkeypatch.delenv("ROBOT_DYNAMICS_DEBUG", raising=False)
    monkeypatch.setattr(cli, "_cmd_dh", fail)
    _assert_refused(*_run_main(["dh", "planar2r"], capsys), keyword)


def test_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(args: object) -> int:
        raise ValueError("boom")

    monkeypatch.setattr(cli, "_cmd_dh", fail)
    monkeypatch.delenv("ROBOT_DYNAMICS_DEBUG", raising=False)
    with pytest.raises(ValueError, match="boom"):
        main(["--debug", "dh", "planar2r"])
    with pytest.raises(ValueError, match="boom"):
        main(["dh", "planar2r", "--debug"])
    monkeypatch.setenv("ROBOT_DYNAMICS_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        main(["dh", "planar2r"])


# ------------------------------------------------------------------ good inputs still work
def test_good_plan_subprocess(files: dict[str, Path]) -> None:
    res = _run_cli(["plan", "rx90", "--goal", *RX90_GOAL, "--profile", "quintic"], files["dir"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("quintic: ") and "samples at 0.01 s" in res.stdout


@pytest.mark.parametrize("argv", [
    pytest.param(["dh", "planar2r"], id="dh"),
    pytest.param(["base-params", "planar2r", "--json"], id="base-params"),
    # goals exactly at the limits are accepted
    pytest.param(["plan", "planar2r", "--goal", "2.9670597283903604", "-2.9670597283903604", "--json"], id="plan-at-limits"),
    # a big plan below the maximum: 500,002 samples
    pytest.param(["plan", "planar2r", "--goal", "1", "1", "--duration", "10", "--period", "2e-5"], id="plan-500k-samples"),
    pytest.param(["plan", "@continuous/planar2r.urdf", "--goal", "10", "0"], id="plan-continuous-joint"),
    pytest.param(["simulate", "planar2r", "--goal", "0.5", "0.5", "--json", "--model-error", "0.2"], id="simulate"),
    pytest.param(["identify", "planar2r", "@good_npz", "--json", "-o", "est.yaml"], id="identify-npz"),
    pytest.param(["identify", "planar2r", "@good_csv", "--method", "ols", "--cutoff", "0"], id="identify-csv"),
    pytest.param(["identify", "planar2r", "@good_bag", "--band", "0", "--decimate", "1"], id="identify-bag"),
])
def test_good_inputs_still_work(argv: list[str], files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _run_main(_argv(argv, files), capsys)
    assert code == 0, err
    assert out.strip() and "error" not in err.lower()
    if "-o" in argv:
        from robot_dynamics.identification.io import load_result_yaml

        assert load_result_yaml(tmp_path / "est.yaml")["robot"] == "planar_2r"
