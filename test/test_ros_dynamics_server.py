"""Integration: the dynamics_server node in its own process, called over DDS, and fuzzed."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import rclpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ros_harness import call_service, node_process, wait_for_service
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.ros.node_set import config_dir
from robot_dynamics_interfaces.srv import BaseParameters, DynamicTerms, ForwardDynamics, InverseDynamics

pytestmark = pytest.mark.ros
RX90 = resolve_urdf("rx90")


@pytest.fixture(scope="module")
def model():
    # the node reads config/rx90.yaml (rotor inertias) like load_model does
    return load_model("rx90")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    rclpy.init()
    node = rclpy.create_node("test_dynamics_client")
    log_dir = tmp_path_factory.mktemp("dynamics_server")
    cfg = config_dir() / "rx90.yaml"
    with node_process("dynamics_server", log_dir, params={"urdf_path": str(RX90)}, param_files=[cfg]) as proc:
        clients = {
            "id": node.create_client(InverseDynamics, "/dynamics_server/inverse_dynamics"),
            "terms": node.create_client(DynamicTerms, "/dynamics_server/dynamic_terms"),
            "fd": node.create_client(ForwardDynamics, "/dynamics_server/forward_dynamics"),
            "base": node.create_client(BaseParameters, "/dynamics_server/base_parameters"),
        }
        for c in clients.values():
            wait_for_service(c)
        yield node, proc, clients
    node.destroy_node()
    rclpy.shutdown()


def _points(q, qd, qdd):
    return [
        JointTrajectoryPoint(positions=a.tolist(), velocities=b.tolist(), accelerations=c.tolist())
        for a, b, c in zip(q, qd, qdd, strict=True)
    ]


def test_inverse_dynamics_1000_points_equal_core(server, model):
    node, proc, clients = server
    rng = np.random.default_rng(1)
    q, qd, qdd = (rng.uniform(-2, 2, (1000, model.dof)) for _ in range(3))
    req = InverseDynamics.Request(joint_names=model.joint_names, points=_points(q, qd, qdd))
    t0 = time.perf_counter()
    resp = call_service(node, clients["id"], req, timeout=60)
    elapsed = time.perf_counter() - t0
    assert resp.success, resp.message
    tau = np.array([p.effort for p in resp.points])
    # core value computed here, in another process
    ref = model.inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(tau, ref, rtol=1e-12, atol=1e-12)
    print(f"inverse_dynamics round trip, 1000 points: {elapsed * 1e3:.1f} ms")


def test_inverse_dynamics_joint_order_by_name(server, model):
    node, _, clients = server
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.uniform(-1, 1, (3, model.dof)) for _ in range(3))
    perm = np.arange(model.dof)[::-1]
    names = [model.joint_names[i] for i in perm]
    resp = call_service(node, clients["id"], InverseDynamics.Request(joint_names=names, points=_points(q[:, perm], qd[:, perm], qdd[:, perm])))
    assert resp.success, resp.message
    assert list(resp.joint_names) == names
    np.testing.assert_allclose(np.array([p.effort for p in resp.points]), model.inverse_dynamics(q, qd, qdd)[:, perm], rtol=1e-12, atol=1e-12)


def test_dynamic_terms_and_forward_dynamics(server, model):
    node, _, clients = server
    q = np.linspace(-1, 1, model.dof)
    qd = np.linspace(0.5, -0.5, model.dof)
    resp = call_service(node, clients["terms"], DynamicTerms.Request(positions=q.tolist(), velocities=qd.tolist()))
    assert resp.success, resp.message
    a = np.array(resp.inertia_matrix).reshape(model.dof, model.dof)
    # independent relations: the NE model at qdd = e_i minus the bias gives column i of A (001 eq. 7.64)
    bias = model.inverse_dynamics(q, qd, np.zeros(model.dof))
    cols = model.inverse_dynamics(np.tile(q, (model.dof, 1)), np.tile(qd, (model.dof, 1)), np.eye(model.dof)) - bias
    np.testing.assert_allclose(a, cols.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.array(resp.coriolis) + np.array(resp.gravity) + np.array(resp.friction), bias, atol=1e-10)
    tau = bias + a @ np.ones(model.dof)
    for method in ("", "cholesky", "recursive"):  # "": the engine (customized O(n) model once compiled)
        r = call_service(node, clients["fd"], ForwardDynamics.Request(positions=q.tolist(), velocities=qd.tolist(), efforts=tau.tolist(), method=method))
        assert r.success, r.message
        np.testing.assert_allclose(r.accelerations, np.ones(model.dof), atol=1e-9)


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(math.nan), st.just(1e308))
names = st.one_of(st.just([]), st.lists(st.sampled_from(["joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "nope", ""]), max_size=8))


@st.composite
def bad_id_requests(draw):
    npts = draw(st.integers(0, 4))
    pts = []
    for _ in range(npts):
        pts.append(
            JointTrajectoryPoint(
                positions=draw(st.lists(floats, max_size=8)),
                velocities=draw(st.lists(floats, max_size=8)),
                accelerations=draw(st.lists(floats, max_size=8)),
            )
        )
    return InverseDynamics.Request(joint_names=draw(names), points=pts)


def _is_valid(req, model) -> bool:
    try:
        from robot_dynamics.ros.conversions import JointOrder

        order = JointOrder(model.joint_names, list(req.joint_names))
        if not req.points:
            return False
        for p in req.points:
            order.model_vector(p.positions, "q", model.dof)
            for f in (p.velocities, p.accelerations):
                if len(f):
                    order.model_vector(f, "x", model.dof)
        return True
    except ValueError:
        return False


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(req=bad_id_requests())
def test_fuzzed_requests_always_answered(server, model, req):
    node, proc, clients = server
    resp = call_service(node, clients["id"], req)
    expected = _is_valid(req, model)
    if resp.success:
        assert expected, "an invalid request was accepted"
        assert np.all(np.isfinite([p.effort for p in resp.points]))
    else:
        # refused: either invalid, or valid but with efforts out of float range (1e308 inputs)
        assert resp.message
        assert not resp.success and resp.message
    assert proc.poll() is None


def test_server_alive_after_fuzzing(server, model):
    node, proc, clients = server
    resp = call_service(node, clients["id"], InverseDynamics.Request(points=_points(np.zeros((1, 6)), np.zeros((1, 6)), np.zeros((1, 6)))))
    assert resp.success and proc.poll() is None
    # gravity only, at q = 0: equals the gravity torques of the core (an independent path: dynamic_terms composite)
    np.testing.assert_allclose(resp.points[0].effort, model.gravity_torques(np.zeros(6)), atol=1e-10)


def test_base_parameters_service(server, model):
    """The base model served reproduces the inverse dynamics (the oracle: the NE model of the core)."""
    node, _, clients = server
    resp = call_service(node, clients["base"], BaseParameters.Request(), timeout=60)
    assert resp.success, resp.message
    base = model.base_parameters()
    assert list(resp.names) == list(base.names)
    assert len(resp.relations) == len(resp.names) and "ZZR1" in resp.names
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1, 1, (20, model.dof)) for _ in range(3))
    tau = np.einsum("kij,j->ki", base.regressor(q, qd, qdd), np.array(resp.values))
    np.testing.assert_allclose(tau, model.inverse_dynamics(q, qd, qdd), rtol=1e-10, atol=1e-10)


def test_namespace_and_service_remaps_reach_every_service(server, model, tmp_path):
    """``~/inverse_dynamics`` runs on a hidden side node (its own executor thread): it must follow the node's
    namespace and the remaps of the node's own service names, like the services of the node itself."""
    node, _, _ = server
    cfg = config_dir() / "rx90.yaml"
    q = np.linspace(-1, 1, model.dof)
    with node_process("dynamics_server", tmp_path, params={"urdf_path": str(RX90)}, param_files=[cfg],
                      remaps={"__ns": "/arm1", "~/inverse_dynamics": "/arm1/feedforward"}):
        id_client = node.create_client(InverseDynamics, "/arm1/feedforward")
        terms = node.create_client(DynamicTerms, "/arm1/dynamics_server/dynamic_terms")
        default_id = node.create_client(InverseDynamics, "/arm1/dynamics_server/inverse_dynamics")
        try:
            wait_for_service(id_client)
            wait_for_service(terms)
            r = call_service(node, id_client, InverseDynamics.Request(points=_points(q[None], 0 * q[None], 0 * q[None])))
            assert r.success, r.message
            np.testing.assert_allclose(r.points[0].effort, model.gravity_torques(q), rtol=1e-10, atol=1e-10)
            t = call_service(node, terms, DynamicTerms.Request(positions=q.tolist(), velocities=[0.0] * model.dof))
            assert t.success, t.message
            np.testing.assert_allclose(t.gravity, model.gravity_torques(q), rtol=1e-10, atol=1e-10)
            # the remapped service is not also offered under its default name; the hidden node is in the namespace
            assert not default_id.wait_for_service(timeout_sec=1.0)
            names = {(ns, n) for n, ns in node.get_node_names_and_namespaces()}
            assert ("/arm1", "dynamics_server") in names
            assert ("/arm1", "_dynamics_server_inverse_dynamics") in names
        finally:
            for c in (id_client, terms, default_id):
                node.destroy_client(c)
