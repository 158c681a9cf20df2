"""Issue 13, service side: dynamics_server and urdf_to_dh under huge, hostile and garbage requests.

Real node processes over DDS (test/ros_harness.py).  Figures (refusal time of a 10^6-point
request, latency of the other services meanwhile, fuzz throughput) are printed, never asserted.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
from example_robots import example_urdf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from ros_harness import call_service, node_process, wait_for_service
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics import RobotModel
from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.description import DESCRIPTION_QOS
from robot_dynamics.ros.node_set import config_dir
from robot_dynamics_interfaces.srv import BaseParameters, ConvertUrdf, DynamicTerms, ForwardDynamics, InverseDynamics

pytestmark = pytest.mark.ros

RX90 = resolve_urdf("rx90")
SERVER_CAUSES = {"no_model", "too_large", "empty", "joint_names", "ragged", "non_finite", "overflow",
                 "unknown_method", "singular_inertia", "invalid"}  # never "internal_error"
CONVERT_CAUSES = {"not_text", "too_large", "invalid_urdf", "no_model"}
FUZZ_COUNT: dict[str, int] = {}
FUZZ_TIME: dict[str, float] = {}


@pytest.fixture(scope="module")
def client():
    rclpy.init()
    node = rclpy.create_node("test_service_safety_client")
    yield node
    node.destroy_node()
    rclpy.shutdown()


@pytest.fixture(scope="module")
def model():
    return load_model("rx90")  # the node reads config/rx90.yaml (rotor inertias) like load_model does


@pytest.fixture(scope="module")
def server(tmp_path_factory, client):
    log_dir = tmp_path_factory.mktemp("dynamics_server")
    cfg = config_dir() / "rx90.yaml"
    with node_process("dynamics_server", log_dir, params={"urdf_path": str(RX90)}, param_files=[cfg]) as proc:
        clients = {
            "id": client.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics"),
            "terms": client.create_client(DynamicTerms, "/dynamics_server/dynamic_terms"),
            "fd": client.create_client(ForwardDynamics, "/dynamics_server/forward_dynamics"),
            "base": client.create_client(BaseParameters, "/dynamics_server/base_parameters"),
            "set": client.create_client(SetParameters, "/dynamics_server/set_parameters"),
        }
        for c in clients.values():
            wait_for_service(c)
        yield proc, clients, log_dir / "dynamics_server.log"
        for c in clients.values():
            client.destroy_client(c)


@pytest.fixture(scope="module")
def converter(tmp_path_factory, client):
    log_dir = tmp_path_factory.mktemp("urdf_to_dh")
    with node_process("urdf_to_dh", log_dir, params={"urdf_path": str(RX90)}) as proc:
        convert = client.create_client(ConvertUrdf, "/urdf_to_dh/convert")
        params = client.create_client(GetParameters, "/urdf_to_dh/get_parameters")
        wait_for_service(convert)
        wait_for_service(params)
        yield proc, convert, params
        client.destroy_client(convert)
        client.destroy_client(params)


def _cause(message: str) -> str:
    return message.split(":", 1)[0]


def _assert_refused(resp, causes: set[str]) -> None:
    assert not resp.success
    assert resp.message and _cause(resp.message) in causes, resp.message
    assert len(resp.message.split(":", 1)[1].strip()) > 5, resp.message


def _finite(*values) -> bool:
    return all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


def _point(q, qd=(), qdd=()) -> JointTrajectoryPoint:
    return JointTrajectoryPoint(positions=list(map(float, q)), velocities=list(map(float, qd)),
                                accelerations=list(map(float, qdd)))


# ----------------------------------------------------------------- core keyword
def test_text_only_never_opens_a_file(tmp_path):
    """RobotModel.from_urdf(..., text_only=True): one message for anything but XML text; default unchanged."""
    copy = tmp_path / "rx90.urdf"
    copy.write_text(RX90.read_text())
    messages = set()
    for source in ("/etc/passwd", "/no/such/file.urdf", str(copy), copy, "rx90", b"<robot/>", None, "", "/"):
        with pytest.raises(ValueError) as err:
            RobotModel.from_urdf(source, text_only=True)
        messages.add(str(err.value))
    assert len(messages) == 1, messages
    assert RobotModel.from_urdf(RX90.read_text(), text_only=True).dof == 6
    assert RobotModel.from_urdf(str(copy)).dof == 6  # paths still work for existing callers
    with pytest.raises(ValueError, match="neither XML text nor an existing file"):
        RobotModel.from_urdf("/no/such/file.urdf")


# ----------------------------------------------------------------- targeted cases
def test_named_refusals(server, client, model):
    """Each kind of bad request is refused with its cause (and one good request passes)."""
    _, c, _ = server
    z = [0.0] * 6
    names = model.joint_names
    cases = [
        (c["id"], InverseDynamics.Request(), "empty"),
        (c["id"], InverseDynamics.Request(joint_names=["nope"] * 6, points=[_point(z)]), "joint_names"),
        (c["id"], InverseDynamics.Request(joint_names=names[:5] + names[:1], points=[_point(z)]), "joint_names"),
        (c["id"], InverseDynamics.Request(joint_names=names * 1000, points=[_point(z)]), "joint_names"),
        (c["id"], InverseDynamics.Request(points=[_point(z), _point(z[:5])]), "ragged"),
        (c["id"], InverseDynamics.Request(points=[_point(z, z[:3])]), "ragged"),
        (c["id"], InverseDynamics.Request(points=[_point(z), _point([math.nan] + z[1:])]), "non_finite"),
        (c["id"], InverseDynamics.Request(points=[_point(z, [math.inf] + z[1:])]), "non_finite"),
        (c["id"], InverseDynamics.Request(points=[_point(z, [1e200] * 6)]), "overflow"),
        (c["id"], InverseDynamics.Request(points=[_point(z, z, [1e308] * 6)]), "overflow"),
        (c["terms"], DynamicTerms.Request(positions=z, velocities=[1e200] * 6), "overflow"),
        (c["terms"], DynamicTerms.Request(positions=z[:4]), "ragged"),
        (c["terms"], DynamicTerms.Request(positions=[math.nan] * 6), "non_finite"),
        (c["terms"], DynamicTerms.Request(positions=[0.0] * 10_000_000), "ragged"),
        (c["fd"], ForwardDynamics.Request(positions=z, velocities=[1e200] * 6, efforts=z), "overflow"),
        (c["fd"], ForwardDynamics.Request(positions=z, efforts=[1e308] * 6), "overflow"),
        (c["fd"], ForwardDynamics.Request(positions=z, efforts=z, method="nope" * 10_000), "unknown_method"),
        (c["fd"], ForwardDynamics.Request(positions=z, efforts=[math.inf] * 6), "non_finite"),
        (c["fd"], ForwardDynamics.Request(positions=z), "ragged"),
    ]
    for cl, req, cause in cases:
        resp = call_service(client, cl, req)
        assert not resp.success, (cause, resp.message)
        assert _cause(resp.message) == cause, resp.message
        assert len(resp.message) < 1000  # a message never echoes a huge input
    ok = call_service(client, c["terms"], DynamicTerms.Request(positions=z, velocities=[1e5] * 6))
    assert ok.success and _finite(ok.coriolis), ok.message


def _set_max_points(client, c, value) -> bool:
    p = Parameter(name="max_points", value=ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value))
    return call_service(client, c["set"], SetParameters.Request(parameters=[p])).results[0].successful


def test_max_points_parameter(server, client, model):
    _, c, _ = server
    assert not _set_max_points(client, c, 0)  # out of range: refused by the descriptor
    assert _set_max_points(client, c, 5)
    try:
        z = np.zeros(6)
        ok = call_service(client, c["id"], InverseDynamics.Request(points=[_point(z)] * 5))
        assert ok.success, ok.message
        np.testing.assert_allclose([p.effort for p in ok.points], np.tile(model.gravity_torques(z), (5, 1)), atol=1e-10)
        big = call_service(client, c["id"], InverseDynamics.Request(points=[_point(z)] * 6))
        _assert_refused(big, {"too_large"})
        assert "max_points=5" in big.message
    finally:
        assert _set_max_points(client, c, 100_000)


def test_mixed_empty_rows_are_zeros(server, client, model):
    """Per point, empty velocities/accelerations are zeros (vectorized path with mixed rows)."""
    _, c, _ = server
    rng = np.random.default_rng(5)
    q, qd, qdd = (rng.uniform(-1, 1, (4, 6)) for _ in range(3))
    pts = [_point(q[0], qd[0], qdd[0]), _point(q[1]), _point(q[2], qd[2]), _point(q[3], (), qdd[3])]
    resp = call_service(client, c["id"], InverseDynamics.Request(points=pts))
    assert resp.success, resp.message
    qd[1] = qdd[1] = qdd[2] = qd[3] = 0.0
    np.testing.assert_allclose([p.effort for p in resp.points], model.inverse_dynamics(q, qd, qdd), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------- the fuzz
BIG = [math.nan, math.inf, -math.inf, 1e300, -1e300, 1e308, -1e308, 1e200, 5e-324, 0.0, -0.0]
floats = st.one_of(st.floats(-3.0, 3.0), st.sampled_from(BIG), st.floats(allow_nan=True, allow_infinity=True))
RX_NAMES = [f"joint{i}" for i in range(1, 7)]
names = st.one_of(
    st.just([]), st.permutations(RX_NAMES),
    st.lists(st.sampled_from([*RX_NAMES, "nope", "", "joint1 ", "\u00e9"]), max_size=8),
)
vectors = st.one_of(st.lists(floats, min_size=6, max_size=6), st.lists(floats, max_size=8))
optional_vectors = st.one_of(st.just([]), vectors)


def _order(req_names):
    """Request order -> model order permutation, or None when the names are invalid."""
    req_names = list(req_names) or RX_NAMES
    if sorted(req_names) != sorted(RX_NAMES):
        return None
    return np.array([req_names.index(n) for n in RX_NAMES])


def _causes_of_vector(v, optional) -> set[str]:
    if optional and len(v) == 0:
        return set()
    if len(v) != 6:
        return {"ragged"}
    return set() if _finite(v) else {"non_finite"}


def _wire(text: str) -> str:
    """What a string field carries over DDS: ROS strings end at the first NUL."""
    return text.split("\x00", 1)[0]


def _count(name: str) -> None:
    FUZZ_COUNT[name] = FUZZ_COUNT.get(name, 0) + 1


@st.composite
def id_requests(draw):
    pts = [JointTrajectoryPoint(positions=draw(vectors), velocities=draw(optional_vectors),
                                accelerations=draw(optional_vectors)) for _ in range(draw(st.integers(0, 4)))]
    req = InverseDynamics.Request(joint_names=draw(names), points=pts)
    if draw(st.booleans()):
        req.use_tip_wrench = True
        w = draw(st.lists(floats, min_size=6, max_size=6))
        req.tip_wrench.force.x, req.tip_wrench.force.y, req.tip_wrench.force.z = w[:3]
        req.tip_wrench.torque.x, req.tip_wrench.torque.y, req.tip_wrench.torque.z = w[3:]
    return req


FUZZ = settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


@FUZZ
@given(req=id_requests())
def test_fuzz_inverse_dynamics(server, client, model, req):
    proc, c, _ = server
    t0 = time.perf_counter()
    resp = call_service(client, c["id"], req)
    FUZZ_TIME["id"] = FUZZ_TIME.get("id", 0.0) + time.perf_counter() - t0
    _count("id")
    causes: set[str] = set()
    perm = _order(req.joint_names)
    if not req.points:
        causes.add("empty")
    if perm is None:
        causes.add("joint_names")
    for p in req.points:
        causes |= _causes_of_vector(p.positions, False)
        causes |= _causes_of_vector(p.velocities, True) | _causes_of_vector(p.accelerations, True)
    if req.use_tip_wrench:
        w = req.tip_wrench
        if not _finite([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]):
            causes.add("non_finite")
    if causes:
        _assert_refused(resp, causes)
        return
    # a valid request: the oracle is the core model in this process
    def field(attr):
        return np.array([np.asarray(getattr(p, attr), float)[perm] if len(getattr(p, attr)) else np.zeros(6)
                         for p in req.points])

    w = req.tip_wrench
    f_ext = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]) if req.use_tip_wrench else None
    with np.errstate(all="ignore"):
        ref = model.inverse_dynamics(field("positions"), field("velocities"), field("accelerations"), f_ext=f_ext)
    if not _finite(ref):
        _assert_refused(resp, {"overflow"})
        return
    assert resp.success, resp.message
    tau = np.array([p.effort for p in resp.points])
    assert _finite(tau)
    inv = np.argsort(perm)
    np.testing.assert_allclose(tau, ref[:, inv], rtol=1e-9, atol=1e-9)


@st.composite
def state_requests(draw, with_efforts: bool):
    kw = {"joint_names": draw(names), "positions": draw(vectors), "velocities": draw(optional_vectors)}
    if with_efforts:
        kw["efforts"] = draw(vectors)
        kw["method"] = draw(st.one_of(st.sampled_from(["", "cholesky", "recursive", "CHOLESKY", "nope", "cholesky\x00"]),
                                      st.text(max_size=20)))
        return ForwardDynamics.Request(**kw)
    return DynamicTerms.Request(**kw)


def _state_causes(req) -> tuple[set[str], np.ndarray | None]:
    causes: set[str] = set()
    perm = _order(req.joint_names)
    if perm is None:
        causes.add("joint_names")
    causes |= _causes_of_vector(req.positions, False) | _causes_of_vector(req.velocities, True)
    return causes, perm


def _model_order(v, perm) -> np.ndarray:
    return np.asarray(v, float)[perm] if len(v) else np.zeros(6)


@FUZZ
@given(req=state_requests(False))
def test_fuzz_dynamic_terms(server, client, model, req):
    _, c, _ = server
    t0 = time.perf_counter()
    resp = call_service(client, c["terms"], req)
    FUZZ_TIME["terms"] = FUZZ_TIME.get("terms", 0.0) + time.perf_counter() - t0
    _count("terms")
    causes, perm = _state_causes(req)
    if causes:
        _assert_refused(resp, causes)
        return
    q, qd = _model_order(req.positions, perm), _model_order(req.velocities, perm)
    with np.errstate(all="ignore"):
        a = model.inertia_matrix(q)
        cor = model.coriolis_matrix(q, qd) @ qd
        grav = model.gravity_torques(q)
        fr = model.Fc * np.sign(qd) + model.Fv * qd
    if not _finite(a, cor, grav, fr):
        _assert_refused(resp, {"overflow"})
        return
    assert resp.success, resp.message
    assert _finite(resp.inertia_matrix, resp.coriolis, resp.gravity, resp.friction)
    inv = np.argsort(perm)
    np.testing.assert_allclose(np.reshape(resp.inertia_matrix, (6, 6)), a[np.ix_(inv, inv)], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(resp.coriolis, cor[inv], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(resp.gravity, grav[inv], rtol=1e-9, atol=1e-9)


@FUZZ
@given(req=state_requests(True))
def test_fuzz_forward_dynamics(server, client, model, req):
    _, c, _ = server
    t0 = time.perf_counter()
    resp = call_service(client, c["fd"], req)
    FUZZ_TIME["fd"] = FUZZ_TIME.get("fd", 0.0) + time.perf_counter() - t0
    _count("fd")
    causes, perm = _state_causes(req)
    causes |= _causes_of_vector(req.efforts, False)
    method = _wire(req.method) or None  # empty: the model's engine
    if method is not None and method not in ("cholesky", "recursive"):
        causes.add("unknown_method")
    if causes:
        _assert_refused(resp, causes)
        return
    q, qd, tau = (_model_order(v, perm) for v in (req.positions, req.velocities, req.efforts))
    with np.errstate(all="ignore"):
        ref = model.forward_dynamics(q, qd, tau, method=method)
    if not _finite(ref):
        _assert_refused(resp, {"overflow", "singular_inertia"})
        return
    assert resp.success, resp.message
    assert _finite(resp.accelerations)
    np.testing.assert_allclose(resp.accelerations, ref[np.argsort(perm)], rtol=1e-9, atol=1e-9)


RX90_TEXT = RX90.read_text()
PATHS = ["/etc/passwd", "/no/such/file.urdf", str(RX90), "rx90", "~/.bashrc", "../../../../etc/passwd",
         " /etc/passwd", "file:///etc/passwd", "/proc/self/environ", "/dev/zero", ".", "/"]
LAUGHS = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
          + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
          + ']><robot name="r">&i;</robot>')
XXE = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><robot name="r">&x;</robot>'


@st.composite
def urdf_texts(draw):
    kind = draw(st.sampled_from(["path", "text", "truncated", "mutated", "valid", "empty", "xml", "entity"]))
    if kind == "path":
        return draw(st.sampled_from(PATHS))
    if kind == "text":
        return draw(st.text(max_size=40))
    if kind == "truncated":
        return RX90_TEXT[: draw(st.integers(0, len(RX90_TEXT) - 1))]
    if kind == "mutated":
        k = draw(st.integers(0, len(RX90_TEXT) - 1))
        return RX90_TEXT[:k] + draw(st.sampled_from(["nan", "inf", "1e400", "-", "<", "\"", "</robot>", "\x00", "é"])) + RX90_TEXT[k + 1:]
    if kind == "valid":
        return RX90_TEXT
    if kind == "entity":
        return draw(st.sampled_from([LAUGHS, XXE]))
    if kind == "xml":
        return "<" + draw(st.text(max_size=40))
    return ""


link_names = st.one_of(st.just(""), st.sampled_from(["base_link", "link3", "link6", "nope", "/etc/passwd"]), st.text(max_size=10))


@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
@given(urdf=urdf_texts(), base=link_names, tip=link_names)
def test_fuzz_convert(converter, client, urdf, base, tip):
    proc, convert, _ = converter
    t0 = time.perf_counter()
    resp = call_service(client, convert, ConvertUrdf.Request(urdf=urdf, base_link=base, tip_link=tip))
    FUZZ_TIME["convert"] = FUZZ_TIME.get("convert", 0.0) + time.perf_counter() - t0
    _count("convert")
    urdf, base, tip = _wire(urdf), _wire(base), _wire(tip)
    if urdf and not urdf.lstrip().startswith("<"):
        assert not resp.success
        assert resp.message == NOT_TEXT, resp.message  # one message, whatever the file system holds
        return
    if not resp.success:
        _assert_refused(resp, CONVERT_CAUSES)
        return
    assert resp.yaml and resp.table and resp.model.joints
    assert _finite([[j.alpha, j.d, j.theta, j.r, j.m, j.xx, j.zz] for j in resp.model.joints])
    if urdf == RX90_TEXT or not urdf:
        core = RobotModel.from_urdf(RX90_TEXT, base_link=base or None, tip_link=tip or None)
        assert [j.name for j in resp.model.joints] == core.joint_names


NOT_TEXT = "not_text: request.urdf must be URDF XML text starting with '<' (a file path is accepted only from the urdf_path parameter)"


def test_paths_are_never_opened(converter, client):
    """/etc/passwd (exists), a missing path and a directory give the same answer (no file-existence oracle)."""
    _, convert, _ = converter
    answers = {p: call_service(client, convert, ConvertUrdf.Request(urdf=p)) for p in ("/etc/passwd", "/no/such/file", "/", str(RX90))}
    assert {(r.success, r.message) for r in answers.values()} == {(False, NOT_TEXT)}
    for text in (LAUGHS, XXE):  # entity expansion and external entities never resolve
        resp = call_service(client, convert, ConvertUrdf.Request(urdf=text))
        _assert_refused(resp, {"invalid_urdf"})
        assert "root:" not in resp.message


def test_convert_size_limit(converter, client):
    _, convert, _ = converter
    huge = RX90_TEXT.replace("</robot>", "<!--" + "x" * 11_000_000 + "--></robot>")
    resp = call_service(client, convert, ConvertUrdf.Request(urdf=huge), timeout=60)
    _assert_refused(resp, {"too_large"})
    assert "max_description_bytes" in resp.message


def _chain_urdf(n: int) -> str:
    inertial = '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    links = "".join(f'<link name="l{i}">{inertial}</link>' for i in range(n + 1))
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        '<origin xyz="0 0 0.1" rpy="0 0.3 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for i in range(n)
    )
    return f'<robot name="chain">{links}{joints}</robot>'


def test_big_conversion_does_not_block_the_node(converter, client):
    """~/convert of a long (allowed) URDF runs in its own callback group: the parameter services answer meanwhile."""
    proc, convert, params = converter
    future = convert.call_async(ConvertUrdf.Request(urdf=_chain_urdf(500)))
    t0 = time.perf_counter()
    latencies = []
    while not future.done() and time.perf_counter() - t0 < 120:
        s = time.perf_counter()
        r = call_service(client, params, GetParameters.Request(names=["max_description_bytes"]), timeout=10)
        if not future.done():
            latencies.append(time.perf_counter() - s)
        assert r.values[0].integer_value == 10_000_000
    resp = future.result()
    assert resp.success and len(resp.model.joints) == 500, resp.message
    assert latencies, "the conversion ended before any parameter call"
    print(f"\nconvert of a 500-joint URDF: {time.perf_counter() - t0:.2f} s; get_parameters meanwhile: "
          f"{len(latencies)} calls, median {1e3 * np.median(latencies):.1f} ms, max {1e3 * max(latencies):.1f} ms")
    assert proc.poll() is None


def test_fuzz_volume(server, converter):
    if set(FUZZ_COUNT) != {"id", "terms", "fd", "convert"}:
        pytest.skip("run with the four fuzz tests")
    total = sum(FUZZ_COUNT.values())
    spent = sum(FUZZ_TIME.values())
    print(f"\nfuzz: {FUZZ_COUNT} = {total} requests, {spent:.1f} s in calls, {total / max(spent, 1e-9):.0f} requests/s")
    assert total >= 3000, FUZZ_COUNT


# ----------------------------------------------------------------- huge request
def test_million_point_request_refused_while_others_answer(server, client, model):
    """Issue 29: points is bounded in InverseDynamics.srv, so a client of this interface cannot send 10^6 points
    (its serializer refuses them in call_async) and the server never sees them; the server keeps answering.  A
    client of another definition: test_service_bounds.py (refused before any Python object is made)."""
    _, c, _ = server
    p = JointTrajectoryPoint(positions=[0.1] * 6, velocities=[0.2] * 6, accelerations=[0.3] * 6)
    t0 = time.perf_counter()
    with pytest.raises(Exception, match="failed to send request"):
        c["id"].call_async(InverseDynamics.Request(points=[p] * 1_000_000))
    refused = time.perf_counter() - t0
    q = np.linspace(-1, 1, 6)
    r = call_service(client, c["terms"], DynamicTerms.Request(positions=q.tolist()))
    assert r.success
    np.testing.assert_allclose(r.gravity, model.gravity_torques(q), rtol=1e-12, atol=1e-12)
    after = call_service(client, c["id"], InverseDynamics.Request(points=[_point(np.zeros(6))]))
    assert after.success
    np.testing.assert_allclose(after.points[0].effort, model.gravity_torques(np.zeros(6)), atol=1e-10)
    print(f"\n10^6-point ~/inverse_dynamics: refused by the client's serializer after {refused:.2f} s (building "
          "the request included); nothing sent")


def test_server_alive_and_correct_at_the_end(server, client, model):
    proc, c, _ = server
    rng = np.random.default_rng(9)
    q, qd, qdd = (rng.uniform(-2, 2, (50, 6)) for _ in range(3))
    pts = [_point(a, b, d) for a, b, d in zip(q, qd, qdd, strict=True)]
    resp = call_service(client, c["id"], InverseDynamics.Request(joint_names=model.joint_names, points=pts))
    assert resp.success, resp.message
    np.testing.assert_allclose([p.effort for p in resp.points], model.inverse_dynamics(q, qd, qdd), rtol=1e-12, atol=1e-12)
    base = call_service(client, c["base"], BaseParameters.Request(), timeout=60)
    assert base.success and _finite(base.values), base.message
    assert proc.poll() is None


SINGULAR_URDF = """<robot name="singular">
  <link name="base"/>
  <link name="l1"><inertial><mass value="2"/><origin xyz="0.2 0 0"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="l2"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.4 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
</robot>"""


def test_forward_dynamics_refuses_a_singular_inertia_matrix(tmp_path, client):
    """A valid URDF with a massless last link and no rotor inertia: A(q) is singular, so forward
    dynamics is refused with its cause (both methods) while the other services still answer."""
    import yaml

    params = tmp_path / "singular.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"robot_description": SINGULAR_URDF}}}))
    with node_process("dynamics_server", tmp_path, param_files=[params], remaps={"__node": "dynamics_singular"}) as proc:
        fd = client.create_client(ForwardDynamics, "/dynamics_singular/forward_dynamics")
        terms = client.create_client(DynamicTerms, "/dynamics_singular/dynamic_terms")
        wait_for_service(fd)
        wait_for_service(terms)
        for method in ("cholesky", "recursive"):
            r = call_service(client, fd, ForwardDynamics.Request(positions=[0.1, 0.2], efforts=[1.0, 1.0], method=method))
            _assert_refused(r, {"singular_inertia"})
        t = call_service(client, terms, DynamicTerms.Request(positions=[0.1, 0.2]))
        assert t.success and np.allclose(np.reshape(t.inertia_matrix, (2, 2))[1], 0.0), t.message
        assert proc.poll() is None
        client.destroy_client(fd)
        client.destroy_client(terms)


# ----------------------------------------------------------------- description swaps
def test_description_swaps_are_atomic_and_bad_ones_harmless(tmp_path, client):
    """Alternate rx90, garbage, a path, an oversized text and ur5 on /robot_description while calling
    ~/dynamic_terms: every answer is one model's, whole (names and values of the same robot)."""
    ur5_text = Path(example_urdf("ur5")).read_text()
    models = {"rx90": RobotModel.from_urdf(RX90_TEXT), "ur5": RobotModel.from_urdf(ur5_text)}
    q, qd = np.linspace(-1, 1, 6), np.linspace(0.3, -0.3, 6)
    expected = {tuple(m.joint_names): (m.inertia_matrix(q), m.gravity_torques(q)) for m in models.values()}
    bad = ["/etc/passwd", "no such file", "<robot", "", "<robot><!--" + "x" * 10_100_000 + "--></robot>", XXE]
    sequence = [ur5_text, *bad, RX90_TEXT, *bad[:3], ur5_text, RX90_TEXT, ur5_text]
    topic = "/service_safety/robot_description"  # remapped: no other node in the domain hears these
    pub = client.create_publisher(String, topic, DESCRIPTION_QOS)
    seen: dict[tuple, int] = {}
    with node_process("dynamics_server", tmp_path, params={"urdf_path": str(RX90)},
                      remaps={"/robot_description": topic, "__node": "dynamics_swap"}) as proc:
        terms = client.create_client(DynamicTerms, "/dynamics_swap/dynamic_terms")
        wait_for_service(terms)
        req = DynamicTerms.Request(positions=q.tolist(), velocities=qd.tolist())
        calls = 0
        for text in sequence:
            pub.publish(String(data=text))
            t_end = time.monotonic() + 0.4
            while time.monotonic() < t_end:
                r = call_service(client, terms, req)
                calls += 1
                assert r.success, r.message
                key = tuple(r.joint_names)
                assert key in expected, key
                a, g = expected[key]
                np.testing.assert_allclose(np.reshape(r.inertia_matrix, (6, 6)), a, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(r.gravity, g, rtol=1e-12, atol=1e-12)
                seen[key] = seen.get(key, 0) + 1
        # the last one published was ur5: it is the model in use
        deadline = time.monotonic() + 10
        while tuple(call_service(client, terms, req).joint_names) != tuple(models["ur5"].joint_names):
            assert time.monotonic() < deadline, "the last valid description was not applied"
        assert proc.poll() is None
        client.destroy_client(terms)
    client.destroy_publisher(pub)
    log = (tmp_path / "dynamics_server.log").read_text()
    for cause in ("not_text", "too_large", "invalid_urdf"):
        assert f"refused [{cause}]" in log, cause
    assert len(seen) == 2, seen  # both robots were served
    print(f"\ndescription swaps: {calls} dynamic_terms calls answered across {len(sequence)} descriptions: {seen}")
