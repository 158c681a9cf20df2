"""``robot-dynamics identify``: the chain options of ``dh`` (``--base``, ``--tip``, ``--lock``), ``--parameters``,
``--xacro-arg``, and the physical plausibility of every fit (issue 30).

Oracle of the efforts: Pinocchio's RNEA on the *whole* robot file (``pin.buildModelFromUrdf``, every joint of the
file), the joints off the identified chain held at their lock values, plus rotor inertia ``Ia q̈`` and friction
``Fc sign(q̇) + Fv q̇`` written out here (001 eqs. 7.27, 7.29), never this package's dynamics.  Every command goes
through the real entry point ``main(argv)``; the JSON output is checked field by field.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robot_dynamics.cli import main
from robot_dynamics.identification.data import IdentificationData, save_npz
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.robots import resolve_urdf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from example_robots import example_robot_data_dir  # noqa: E402

TIAGO = example_robot_data_dir() / "tiago_description" / "robots" / "tiago.urdf"  # mobile manipulator, 48 joints
BASE, TIP = "torso_lift_link", "arm_tool_link"
ARM = [f"arm_{k}_joint" for k in range(1, 8)]
# off-chain joints of the hand (lumped on arm link 7: they change its inertia) and of the head (no effect)
LOCKS = {"hand_thumb_abd_joint": 1.2, "hand_index_flex_1_joint": 0.7, "hand_middle_flex_1_joint": 0.6,
         "head_1_joint": 0.5}
IA = np.array([0.0, 0.0, 0.03, 0.02, 0.01, 0.008, 0.005])  # rotor inertias of the oracle, kg m^2 (Ia1, Ia2 grouped)
FC = np.array([0.4, 0.5, 0.3, 0.35, 0.1, 0.12, 0.08])  # N m
FV = np.array([0.6, 0.7, 0.4, 0.45, 0.2, 0.15, 0.1])  # N m s/rad
NOISE_FREE = ["--cutoff", "0", "--band", "0", "--decimate", "1"]


# ------------------------------------------------------------------ oracle
def trajectory(lower: np.ndarray, upper: np.ndarray, seed: int, duration: float = 6.0, fs: float = 500.0, *,
               sines: int = 3, fill: float = 0.8, band: tuple[float, float] = (0.2, 0.9)):
    """t, q, q̇, q̈ (analytic): ``sines`` sines per joint (frequencies in ``band``, Hz) inside ``fill`` of the
    joint range."""
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(lower, -2.5), np.minimum(upper, 2.5)
    c, half = 0.5 * (lo + hi), 0.5 * fill * (hi - lo)
    t = np.arange(int(duration * fs)) / fs
    n = lo.size
    w = 2 * np.pi * rng.uniform(*band, (sines, n))
    ph = rng.uniform(0, 2 * np.pi, (sines, n))
    amp = rng.uniform(0.5, 1.0, (sines, n))
    amp *= half / amp.sum(axis=0)
    arg = t[:, None, None] * w[None] + ph[None]
    q = c + (amp * np.sin(arg)).sum(axis=1)
    qd = (amp * w * np.cos(arg)).sum(axis=1)
    qdd = -(amp * w**2 * np.sin(arg)).sum(axis=1)
    return t, q, qd, qdd


def pin_efforts(urdf: Path | str, names: list[str], q, qd, qdd, locks: dict[str, float], ia, fc, fv) -> np.ndarray:
    """Efforts of the joints ``names`` of the whole robot file (Pinocchio RNEA, other joints at ``locks`` or
    their neutral position, at rest) + Ia q̈ + Fc sign(q̇) + Fv q̇."""
    pm = pin.buildModelFromUrdf(str(urdf))
    pd = pm.createData()
    qi = [pm.idx_qs[pm.getJointId(n)] for n in names]
    vi = [pm.idx_vs[pm.getJointId(n)] for n in names]
    q0 = pin.neutral(pm)
    for name, value in locks.items():
        q0[pm.idx_qs[pm.getJointId(name)]] = value
    out = np.empty(q.shape)
    qf, v, a = q0.copy(), np.zeros(pm.nv), np.zeros(pm.nv)
    for k in range(q.shape[0]):
        qf[qi], v[vi], a[vi] = q[k], qd[k], qdd[k]
        out[k] = pin.rnea(pm, pd, qf, v, a)[vi]
    return out + np.asarray(ia) * qdd + np.asarray(fc) * np.sign(qd) + np.asarray(fv) * qd


def tiago_limits() -> tuple[np.ndarray, np.ndarray]:
    pm = pin.buildModelFromUrdf(str(TIAGO))
    qi = [pm.idx_qs[pm.getJointId(n)] for n in ARM]
    return pm.lowerPositionLimit[qi], pm.upperPositionLimit[qi]


def arm_data(seed: int, names: list[str] = ARM, ia=IA) -> tuple[IdentificationData, tuple]:
    t, q, qd, qdd = trajectory(*tiago_limits(), seed=seed)
    tau = pin_efforts(TIAGO, ARM, q, qd, qdd, LOCKS, ia, FC, FV)
    keep = [ARM.index(n) for n in names]
    return IdentificationData(t, q[:, keep], tau[:, keep], joint_names=names), (q, qd, qdd, tau)


def planar_data(seed: int, fc, fv, ia=(0.0, 0.0), sign: float = 1.0, urdf: Path | str | None = None):
    urdf = resolve_urdf("planar2r") if urdf is None else urdf
    t, q, qd, qdd = trajectory(np.full(2, -2.5), np.full(2, 2.5), seed=seed, duration=8.0)
    tau = sign * pin_efforts(urdf, ["joint1", "joint2"], q, qd, qdd, {}, ia, fc, fv)
    return IdentificationData(t, q, tau, joint_names=["joint1", "joint2"])


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def by_name(res: dict, field: str = "values") -> dict[str, float]:
    return dict(zip(res["names"], res[field], strict=True))


@pytest.fixture(scope="module")
def arm_npz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("arm") / "arm.npz"
    save_npz(path, arm_data(seed=1)[0])
    return path


def arm_argv(data: Path) -> list[str]:
    locks = [x for name, value in LOCKS.items() for x in ("--lock", f"{name}={value}")]
    return ["identify", TIAGO, data, "--base", BASE, "--tip", TIP, *locks, *NOISE_FREE]


# ------------------------------------------------------------------ (1) an arm of a mobile manipulator
def test_arm_of_a_mobile_manipulator(arm_npz: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 7-joint arm of TIAGo (48 moving joints in the file), data of the arm joints only: the fit reproduces
    held-out efforts of Pinocchio's whole robot; the locks reach the model (link 7's nominal parameters, hand
    locked, are what the data gives); the friction is the oracle's; the fit is plausible (no warning)."""
    assert pin.buildModelFromUrdf(str(TIAGO)).nv >= 20
    out = tmp_path / "model.yaml"
    code, stdout, err = run([*arm_argv(arm_npz), "--model-output", out, "--json"], capsys)
    assert code == 0, err
    assert err == ""
    res = json.loads(stdout)
    assert res["joint_names"] == ARM
    assert res["base_link"] == BASE and res["tip_link"] == TIP
    assert {k: res["locked_joints"][k] for k in LOCKS} == LOCKS
    assert res["physically_plausible"] is True
    assert res["plausibility_warnings"] == []
    got, nominal = by_name(res), by_name(res, "nominal_values")
    for j in range(1, 8):
        assert got[f"Fc{j}"] == pytest.approx(FC[j - 1], rel=1e-4, abs=1e-5)
        assert got[f"Fv{j}"] == pytest.approx(FV[j - 1], rel=1e-4, abs=1e-5)
        assert nominal[f"Fc{j}"] == 1.0 and nominal[f"Fv{j}"] == 1.0  # the URDF's <dynamics>: replaced by the data
    for j in range(3, 8):
        assert got[f"Ia{j}"] == pytest.approx(IA[j - 1], rel=1e-2)
    # link 7 carries the locked hand: its nominal parameters (from --lock) are the data's, not the unlocked ones'
    link7 = [nm for nm in res["names"] if nm.endswith("7") and not nm.startswith(("Ia", "Fc", "Fv"))]
    assert len(link7) >= 5
    unlocked = RobotModel.from_urdf(str(TIAGO), base_link=BASE, tip_link=TIP).base_parameters()
    unlocked_value = dict(zip(unlocked.names, unlocked.values, strict=True))
    scale = max(abs(got[nm]) for nm in link7)
    assert max(abs(got[nm] - nominal[nm]) for nm in link7) < 1e-4 * scale
    assert max(abs(unlocked_value[nm] - got[nm]) for nm in link7) > 1e-2 * scale  # the locks matter
    # held-out data: another trajectory, the identified model against Pinocchio
    identified = RobotModel.from_yaml(out.read_text())
    assert identified.joint_names == ARM
    _, (q, qd, qdd, tau) = arm_data(seed=7)
    err_rms = np.sqrt(np.mean((identified.inverse_dynamics(q, qd, qdd) - tau) ** 2, axis=0))
    tau_rms = np.sqrt(np.mean(tau**2, axis=0))
    assert np.all(err_rms < 1e-4 * tau_rms.max()), (err_rms, tau_rms)


def test_arm_text_output_and_extra_joints_in_the_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Data with more joints than the arm (a torso and a head column too): only the arm's are used; the text
    output says the fit is plausible."""
    data, (q, qd, qdd, tau) = arm_data(seed=3)
    rng = np.random.default_rng(0)
    extra = rng.normal(size=(data.samples, 2))
    wide = IdentificationData(data.t, np.hstack([extra, q]), np.hstack([extra, tau]),
                              joint_names=["torso_lift_joint", "head_2_joint", *ARM])
    save_npz(tmp_path / "wide.npz", wide)
    code, stdout, err = run(arm_argv(tmp_path / "wide.npz"), capsys)
    assert code == 0, err
    assert err == ""
    assert "physically plausible" in stdout.splitlines()[-1] and "NOT" not in stdout


# ------------------------------------------------------------------ (2) refusals
def _missing_joint(tmp: Path) -> Path:
    data = arm_data(seed=1, names=[n for n in ARM if n != "arm_4_joint"])[0]
    save_npz(tmp / "six.npz", data)
    return tmp / "six.npz"


def _motor_side_planar(tmp: Path) -> Path:
    d = planar_data(1, fc=[0.1, 0.1], fv=[0.1, 0.1])
    save_npz(tmp / "motor.npz", IdentificationData(d.t, d.q, d.effort, joint_names=["joint1_motor", "joint2_motor"]))
    return tmp / "motor.npz"


def _no_robot_parameters(tmp: Path) -> Path:
    (tmp / "empty_params.yaml").write_text("other_node:\n  ros__parameters:\n    rate: 10\n")
    return tmp / "empty_params.yaml"


REFUSED = [
    ("unknown-tip", lambda tmp, npz: ["identify", TIAGO, npz, "--tip", "no_such_link"], "no_such_link"),
    ("unknown-lock", lambda tmp, npz: [*arm_argv(npz), "--lock", "no_such_joint=0.1"], "--lock: 'no_such_joint'"),
    ("lock-on-the-chain", lambda tmp, npz: [*arm_argv(npz), "--lock", "arm_3_joint=0.1"], "--lock: joint 'arm_3_joint'"),
    ("lock-not-a-number", lambda tmp, npz: [*arm_argv(npz), "--lock", "head_2_joint=abc"], "JOINT=VALUE"),
    ("unknown-base", lambda tmp, npz: ["identify", TIAGO, npz, "--base", "no_base_link", "--tip", TIP], "no_base_link"),
    ("data-missing-an-arm-joint", lambda tmp, npz: arm_argv(_missing_joint(tmp)), "arm_4_joint"),
    ("parameters-missing", lambda tmp, npz: [*arm_argv(npz), "--parameters", tmp / "nofile.yaml"], "nofile.yaml"),
    ("parameters-without-robot-parameters",
     lambda tmp, npz: [*arm_argv(npz), "--parameters", _no_robot_parameters(tmp)], "no robot parameters"),
    ("parameters-wrong-length", lambda tmp, npz: [*arm_argv(npz), "--parameters", _params(tmp, rotor_inertia=[0.1, 0.2])],
     "rotor_inertia"),
    ("motor-side-data-without-transmission",
     lambda tmp, npz: ["identify", "planar2r", _motor_side_planar(tmp), *NOISE_FREE], "transmission"),
    ("xacro-arg-on-a-urdf", lambda tmp, npz: [*arm_argv(npz), "--xacro-arg", "a:=1"], "xacro"),
    ("xacro-arg-malformed", lambda tmp, npz: ["identify", "planar2r", npz, "--xacro-arg", "novalue"], "novalue"),
]


@pytest.mark.parametrize(("make", "keyword"), [pytest.param(m, k, id=i) for i, m, k in REFUSED])
def test_bad_input_is_one_error_line(make, keyword: str, arm_npz: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*make(tmp_path, arm_npz), "-o", tmp_path / "est.yaml", "--model-output", tmp_path / "model.yaml"]
    code, stdout, err = run(argv, capsys)
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("robot-dynamics identify: error:"), lines[0]
    assert "Traceback" not in err
    assert keyword.lower() in lines[0].lower(), (keyword, lines[0])
    assert not (tmp_path / "est.yaml").exists() and not (tmp_path / "model.yaml").exists()


# ------------------------------------------------------------------ (3) plausibility on every fit
def test_negative_friction_is_reported_without_urdf_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Efforts with a negative viscous friction on joint 2: one warning line naming Fv2, in the text and the
    JSON output, without --urdf-output; the other parameters are plausible (no other warning)."""
    save_npz(tmp_path / "d.npz", planar_data(2, fc=[0.3, 0.2], fv=[0.4, -0.5], ia=[0.0, 0.05]))
    argv = ["identify", "planar2r", tmp_path / "d.npz", *NOISE_FREE, "--min-velocity", "0.05"]
    code, stdout, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["physically_plausible"] is False
    assert len(res["plausibility_warnings"]) == 1
    w = res["plausibility_warnings"][0]
    assert w["kind"] == "negative" and w["parameter"] == "Fv2"
    assert w["value"] == pytest.approx(-0.5, rel=1e-3)
    assert by_name(res)["Fv2"] == w["value"]
    assert "viscous friction" in w["message"]
    lines = err.splitlines()
    assert lines == [f"robot-dynamics identify: warning: {w['message']}"]
    code, stdout, err = run(argv, capsys)  # text output: the same warning
    assert code == 0, err
    assert len(err.splitlines()) == 1 and "Fv2" in err and err.startswith("robot-dynamics identify: warning:")
    assert "NOT physically plausible: 1 warning(s)" in stdout


def test_every_violation_gets_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Efforts of the wrong sign: every friction term and the rotor inertia negative, and A(q) not positive
    definite — one warning each, in the order of the JSON field."""
    save_npz(tmp_path / "d.npz", planar_data(3, fc=[0.3, 0.2], fv=[0.4, 0.5], ia=[0.0, 0.05], sign=-1.0))
    code, stdout, err = run(["identify", "planar2r", tmp_path / "d.npz", *NOISE_FREE, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    warnings = res["plausibility_warnings"]
    negative = {w["parameter"]: w["value"] for w in warnings if w["kind"] == "negative"}
    assert set(negative) == {"Fc1", "Fv1", "Fc2", "Fv2", "Ia2"}
    assert negative["Fc1"] == pytest.approx(-0.3, rel=1e-3) and negative["Ia2"] == pytest.approx(-0.05, rel=1e-3)
    inertia = [w for w in warnings if w["kind"] == "inertia_matrix"]
    assert len(inertia) == 1 and inertia[0]["parameter"] is None and "not positive definite" in inertia[0]["message"]
    assert len(warnings) == 6
    assert err.splitlines() == [f"robot-dynamics identify: warning: {w['message']}" for w in warnings]


# ------------------------------------------------------------------ (4) --parameters
def _params(tmp: Path, **params) -> Path:
    import yaml

    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    return path


def test_parameters_rotor_inertia_reaches_the_model(arm_npz: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """--parameters FILE with rotor_inertia: the nominal Ia of the model are the file's (the estimates stay the
    data's); the model written with --model-output keeps the file's acceleration limits."""
    ia_file = [0.0, 0.0, 0.5, 0.6, 0.7, 0.8, 0.9]
    acc = [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    params = _params(tmp_path, rotor_inertia=ia_file, acceleration_limits=acc)
    out = tmp_path / "model.yaml"
    code, stdout, err = run([*arm_argv(arm_npz), "--parameters", params, "--model-output", out, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    got, nominal = by_name(res), by_name(res, "nominal_values")
    for j in range(3, 8):
        assert nominal[f"Ia{j}"] == ia_file[j - 1]
        assert got[f"Ia{j}"] == pytest.approx(IA[j - 1], rel=1e-2)
    np.testing.assert_array_equal(RobotModel.from_yaml(out.read_text()).limits["acceleration"], acc)
    code, stdout, err = run([*arm_argv(arm_npz), "--json"], capsys)  # without the file: no rotor inertia
    assert code == 0, err
    assert all(by_name(json.loads(stdout), "nominal_values")[f"Ia{j}"] == 0.0 for j in range(3, 8))


def test_parameters_transmission_motor_side_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Motor-side data (``<joint>_motor``: q_m = N q, τ_m = Γ / N) with the gear ratios of --parameters gives the
    joint-side estimates; the transmission's motor inertias give the nominal Ia = N² J_m."""
    ratio, jm = np.array([50.0, 30.0]), np.array([2e-5, 1e-5])
    joint = planar_data(4, fc=[0.3, 0.2], fv=[0.4, 0.5], ia=[0.0, 0.05])
    save_npz(tmp_path / "joint.npz", joint)
    motor = IdentificationData(joint.t, joint.q * ratio, joint.effort / ratio, joint_names=["joint1_motor", "joint2_motor"])
    save_npz(tmp_path / "motor.npz", motor)
    params = _params(tmp_path, transmissions={"gear_ratio": ratio.tolist(), "motor_inertia": jm.tolist()})
    code, stdout, err = run(["identify", "planar2r", tmp_path / "joint.npz", *NOISE_FREE, "--json"], capsys)
    assert code == 0, err
    ref = json.loads(stdout)
    code, stdout, err = run(["identify", "planar2r", tmp_path / "motor.npz", *NOISE_FREE, "--parameters", params,
                             "--json"], capsys)
    assert code == 0, err
    assert err == ""
    res = json.loads(stdout)
    assert res["names"] == ref["names"]
    np.testing.assert_allclose(res["values"], ref["values"], rtol=1e-6, atol=1e-9)
    assert by_name(res)["Ia2"] == pytest.approx(0.05, rel=1e-3)
    assert by_name(res, "nominal_values")["Ia2"] == pytest.approx(ratio[1] ** 2 * jm[1], rel=1e-12)
    assert by_name(ref, "nominal_values")["Ia2"] == 0.0  # config/planar2r.yaml


# ------------------------------------------------------------------ (5) --xacro-arg
XACRO_HEAD = ('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="planar_2r">\n'
              '  <xacro:arg name="m2" default="1.5"/>\n')


def test_xacro_arg_reaches_xacro(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .xacro of the planar 2R with the mass of link 2 as an argument: ``--xacro-arg m2:=3.0`` gives the nominal
    MX2 = m2 * 0.2 m (default 1.5 kg: 0.3); data of the m2 = 3 arm is then fitted exactly, plausibly."""
    text = resolve_urdf("planar2r").read_text()
    assert text.count('<mass value="1.5"/>') == 1
    body = text[text.index("<robot"):]
    body = body[body.index(">") + 1:].replace('<mass value="1.5"/>', '<mass value="$(arg m2)"/>')
    xacro = tmp_path / "arm.urdf.xacro"
    xacro.write_text('<?xml version="1.0"?>\n' + XACRO_HEAD + body)
    heavy = tmp_path / "heavy.urdf"
    heavy.write_text(text.replace('<mass value="1.5"/>', '<mass value="3.0"/>'))
    save_npz(tmp_path / "d.npz", planar_data(5, fc=[0.3, 0.2], fv=[0.4, 0.5], ia=[0.0, 0.05], urdf=heavy))
    argv = ["identify", xacro, tmp_path / "d.npz", *NOISE_FREE, "--json"]
    code, stdout, err = run([*argv, "--xacro-arg", "m2:=3.0"], capsys)
    assert code == 0, err
    assert err == ""
    res = json.loads(stdout)
    assert res["robot"] == "planar_2r"
    assert by_name(res, "nominal_values")["MX2"] == pytest.approx(0.6, rel=1e-12)
    assert by_name(res)["MX2"] == pytest.approx(0.6, rel=1e-4)
    code, stdout, err = run(argv, capsys)  # default m2: nominal 0.3, the data still says 0.6
    assert code == 0, err
    res = json.loads(stdout)
    assert by_name(res, "nominal_values")["MX2"] == pytest.approx(0.3, rel=1e-12)
    assert by_name(res)["MX2"] == pytest.approx(0.6, rel=1e-4)


def test_allow_inconsistent_inertia(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link inertia breaking the triangle inequality: refused (one line), accepted with
    --allow-inconsistent-inertia (a warning, the fit runs)."""
    text = resolve_urdf("planar2r").read_text()
    bad = 'ixx="0.0008" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"'
    assert text.count(bad) == 1
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(text.replace(bad, 'ixx="0.0008" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.02"'))
    save_npz(tmp_path / "d.npz", planar_data(6, fc=[0.3, 0.2], fv=[0.4, 0.5], ia=[0.0, 0.05]))
    argv = ["identify", urdf, tmp_path / "d.npz", *NOISE_FREE, "--json"]
    code, stdout, err = run(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "triangle" in err.lower(), err
    with pytest.warns(UserWarning, match="(?i)triangle"):
        code, stdout, err = run([*argv, "--allow-inconsistent-inertia"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["names"][0] == "ZZR1"
