"""``trajectory_generator`` over DDS (a node process): feed-forward efforts, effort-limited plans, ``~/time_scale``
and ``execute`` through a FollowJointTrajectory action.

The robot is the RX-90 (friction, rotor inertias) with tight effort limits (joints 1 and 3 bind on a fast move).
Oracles: Pinocchio's RNEA on the same URDF (``armature`` = rotor inertias) plus Coulomb and viscous friction added
by hand (001 eq. 7.61); the optimal uniform scale (001 §8.3) found by bisection on k with the hand-derived scaling
Gamma(k) = G(q) + Fc sign(qd) + Fv qd / k + (rnea(q, qd, qdd) - G(q)) / k^2 on a grid 10x denser than the points;
a fake FollowJointTrajectory server in this process records the goals and answers as told.
"""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
import rclpy
from control_msgs.action import FollowJointTrajectory
from pinocchio_oracle import PinocchioURDF
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from ros_harness import call_service, node_process, wait_for_service
from scipy.spatial import cKDTree
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.model.robots import load_model, resolve_urdf
from robot_dynamics.trajectory import SampledTrajectory, through_waypoints
from robot_dynamics.trajectory.sampled import check_path_limits
from robot_dynamics_interfaces.srv import PlanTrajectory, TimeScale

pytestmark = pytest.mark.ros
BASE = load_model("rx90")
NAMES = BASE.joint_names
EFFORT = np.array([40.0, 120.0, 25.0, 40.0, 40.0, 20.0])  # tight: joints 1 and 3 bind on WAYPOINTS
ORDER = [3, 0, 5, 1, 4, 2]  # requests name the joints in this order (model index of each request position)
REQ_NAMES = [NAMES[i] for i in ORDER]
WAYPOINTS = np.array([[0.0, -0.5, 0.5, 0.0, 0.3, 0.0], [1.2, 0.4, -0.6, 1.5, -0.8, -1.6],
                      [-0.5, -0.2, 0.8, -0.5, 0.6, 1.0]])
CONTROLLER = "fake_controller"


def _tight_urdf() -> str:
    text = resolve_urdf("rx90").read_text()
    it = iter(EFFORT)
    return re.sub(r'effort="[^"]*"', lambda _m: f'effort="{next(it)}"', text)


class Oracle:
    """Pinocchio RNEA (rotor inertias as armature) + Coulomb and viscous friction, model joint order."""

    def __init__(self, urdf: str) -> None:
        self.pin = PinocchioURDF(urdf)
        self.iv = [self.pin.v_index(n) for n in NAMES]
        self.pin.model.armature[self.iv] = BASE.Ia
        self.data = self.pin.model.createData()

    def rnea(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        out = np.empty_like(q)
        for k in range(len(q)):
            v = np.zeros(self.pin.model.nv)
            a = np.zeros(self.pin.model.nv)
            v[self.iv], a[self.iv] = qd[k], qdd[k]
            out[k] = pin.rnea(self.pin.model, self.data, self.pin.q_vector(NAMES, q[k]), v, a)[self.iv]
        return out

    def efforts(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        return self.rnea(q, qd, qdd) + BASE.Fc * np.sign(qd) + BASE.Fv * qd

    def scaling_terms(self, q, qd, qdd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(static, 1/k part, 1/k^2 part) of Gamma(k) for the states played k times slower (001 §8.3)."""
        g = self.rnea(q, np.zeros_like(q), np.zeros_like(q))
        return g + BASE.Fc * np.sign(qd), BASE.Fv * qd, self.rnea(q, qd, qdd) - g

    def optimal_scale(self, q, qd, qdd, effort, lo=1e-3, hi=1e3) -> float:
        """Smallest k (every k' >= k feasible) with |Gamma(k)| <= effort on the states, by bisection in log k."""
        s, v, a = self.scaling_terms(q, qd, qdd)

        def ok(k: float) -> bool:
            return bool(np.all(np.abs(s + v / k + a / k**2) <= effort))

        assert ok(hi) and not ok(lo)
        for _ in range(80):
            mid = np.sqrt(lo * hi)
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return hi


def _times(msg: JointTrajectory) -> np.ndarray:
    return np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])


def _field(msg: JointTrajectory, attr: str) -> np.ndarray | None:
    """(m, n) field of the points in model order (None when empty)."""
    rows = [list(getattr(p, attr)) for p in msg.points]
    if not rows[0]:
        return None
    perm = [list(msg.joint_names).index(j) for j in NAMES]
    return np.array(rows)[:, perm]


def _sampled(msg: JointTrajectory) -> SampledTrajectory:
    """What a controller interpolates from ``msg`` (model order)."""
    return SampledTrajectory(_times(msg), _field(msg, "positions"), _field(msg, "velocities"),
                             _field(msg, "accelerations"))


def _dense(traj: SampledTrajectory, per: int = 10) -> np.ndarray:
    """``per`` evenly spaced times in every interval of the points, and the last point."""
    t = traj.times
    inner = (t[:-1, None] + np.diff(t)[:, None] * np.arange(per)[None, :] / per).ravel()
    return np.append(inner, t[-1])


def _message(times, q, qd=None, qdd=None) -> JointTrajectory:
    """A JointTrajectory in the request order REQ_NAMES from model-order arrays."""
    msg = JointTrajectory(joint_names=REQ_NAMES)
    for k, t in enumerate(times):
        ns = round(float(t) * 1e9)
        p = JointTrajectoryPoint(positions=q[k, ORDER].tolist())
        p.time_from_start.sec, p.time_from_start.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        if qd is not None:
            p.velocities = qd[k, ORDER].tolist()
        if qdd is not None:
            p.accelerations = qdd[k, ORDER].tolist()
        msg.points.append(p)
    return msg


class FakeController:
    """A FollowJointTrajectory server on its own executor thread: records goals, answers per ``mode``
    ("succeed", "abort", "reject" or "hang": until canceled)."""

    def __init__(self) -> None:
        self.node = rclpy.create_node("fake_follow_joint_trajectory")
        self.mode = "succeed"
        self.goals: list[FollowJointTrajectory.Goal] = []
        self.canceled = threading.Event()
        self.server = ActionServer(self.node, FollowJointTrajectory, f"/{CONTROLLER}/follow_joint_trajectory",
                                   execute_callback=self.execute, goal_callback=self.on_goal,
                                   cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        self.executor = MultiThreadedExecutor(num_threads=3)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def on_goal(self, goal: FollowJointTrajectory.Goal) -> GoalResponse:
        self.goals.append(goal)
        return GoalResponse.REJECT if self.mode == "reject" else GoalResponse.ACCEPT

    def execute(self, handle) -> FollowJointTrajectory.Result:
        result = FollowJointTrajectory.Result()
        if self.mode == "hang":
            while not handle.is_cancel_requested:
                time.sleep(0.01)
            self.canceled.set()
            handle.canceled()
            return result
        if self.mode == "abort":
            result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
            result.error_string = "joint3 left its path tolerance at t = 0.42 s"
            handle.abort()
            return result
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        handle.succeed()
        return result

    def close(self) -> None:
        self.executor.shutdown()
        self.server.destroy()
        self.node.destroy_node()


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trajectory_generator")
    urdf = tmp / "rx90_tight.urdf"
    urdf.write_text(_tight_urdf())
    params = {"urdf_path": str(urdf), "controller": CONTROLLER, "rotor_inertia": BASE.Ia.tolist(),
              "acceleration_limits": BASE.limits["acceleration"].tolist()}
    rclpy.init()
    node = rclpy.create_node("test_trajectory_generator")
    with node_process("trajectory_generator", tmp, params) as proc:
        plan = node.create_client(PlanTrajectory, "/trajectory_generator/plan")
        scale = node.create_client(TimeScale, "/trajectory_generator/time_scale")
        setp = node.create_client(SetParameters, "/trajectory_generator/set_parameters")
        for c in (plan, scale, setp):
            wait_for_service(c, 60)
        yield {"node": node, "plan": plan, "scale": scale, "setp": setp, "proc": proc, "oracle": Oracle(urdf.read_text()),
               "log": tmp / "trajectory_generator.log"}
        assert proc.poll() is None, "the node died"
    node.destroy_node()
    rclpy.shutdown()


def _plan(gen, waypoints=WAYPOINTS, **kw) -> PlanTrajectory.Response:
    req = PlanTrajectory.Request(joint_names=REQ_NAMES, profile=kw.pop("profile", "trapezoid"),
                                 waypoints=[JointTrajectoryPoint(positions=w[ORDER].tolist()) for w in waypoints], **kw)
    for _ in range(100):
        resp = call_service(gen["node"], gen["plan"], req, timeout=60)
        if resp.success or "no robot model" not in resp.message:
            return resp
        time.sleep(0.1)
    return resp


@pytest.mark.parametrize("profile", ["trapezoid", "quintic"])
def test_plan_fills_efforts_and_stretches_to_the_effort_limits(gen, profile):
    oracle = gen["oracle"]
    resp = _plan(gen, profile=profile)
    assert resp.success, resp.message
    msg = resp.trajectory
    assert list(msg.joint_names) == REQ_NAMES
    q, qd, qdd, eff = (_field(msg, a) for a in ("positions", "velocities", "accelerations", "effort"))
    # the feed-forward efforts are the model's, point by point (request order mapped back by name)
    ref = oracle.efforts(q, qd, qdd)
    np.testing.assert_allclose(eff, ref, rtol=1e-9, atol=1e-8)
    # the minimum-time plan of the velocity/acceleration limits needs more than the effort limits: stretched
    fast = through_waypoints(WAYPOINTS, BASE.limits["velocity"], BASE.limits["acceleration"], profile=profile)
    _, qf, qdf, qddf = fast.sample(0.002)
    assert np.max(np.abs(oracle.efforts(qf, qdf, qddf)) / EFFORT) > 1.2  # the premise: unscaled is infeasible
    assert resp.effort_scale > 1.0 and "stretched" in resp.message and f"x{resp.effort_scale:.6g}" in resp.message
    assert np.all(np.abs(eff) <= EFFORT), np.max(np.abs(eff) / EFFORT)
    # ... and no more than needed: 1 % faster, a point needs more than a limit (Hollerbach: qd k, qdd k^2)
    assert np.max(np.abs(oracle.efforts(q, qd * 1.01, qdd * 1.01**2)) / EFFORT) > 1.0
    assert resp.duration == pytest.approx(fast.duration * resp.effort_scale, rel=1e-9)
    print(f"\n{profile}: stretch x{resp.effort_scale:.4f}, {resp.duration:.3f} s, peak effort ratio at the points "
          f"{np.max(np.abs(eff) / EFFORT):.6f} (reported {resp.peak_effort_ratio:.6f})")


@pytest.mark.parametrize("profile", ["trapezoid", "smooth_trapezoid", "bang_bang", "cubic", "quintic", "linear"])
def test_plans_pass_the_controller_check(gen, profile):
    """Issue 29: what ~/plan returns passes the controller's acceptance, check_path_limits with its default tolerances
    on the path it interpolates through the points (here through three waypoints, the effort limits stretching)."""
    resp = _plan(gen, profile=profile)
    if profile == "linear":  # its velocity jumps at the waypoints: no arm can follow it, refused
        assert not resp.success and "profile linear through intermediate waypoints" in resp.message, resp.message
        return
    assert resp.success, resp.message
    played = _sampled(resp.trajectory)
    lim = BASE.limits
    check_path_limits(played, lim["lower"], lim["upper"], lim["velocity"])
    assert played.degree == 5, played.degree


def test_plan_duration_and_static_load(gen):
    fit = _plan(gen)
    assert fit.success, fit.message
    short = _plan(gen, duration=fit.duration * 0.99)
    assert not short.success and "shorter than the minimum" in short.message and "effort limits" in short.message
    slow = _plan(gen, duration=fit.duration * 1.5)
    assert slow.success, slow.message
    assert slow.duration == pytest.approx(fit.duration * 1.5, rel=1e-12)
    assert np.all(np.abs(_field(slow.trajectory, "effort")) <= EFFORT)
    # joint 3 holding the forearm horizontal (q2 = -1.5, q3 = 0) needs ~29 N m of gravity alone, beyond its 25 N m:
    # refused whatever the duration
    heavy = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, -1.5, 0.0, 0.0, 0.0, 0.0]])
    g = gen["oracle"].rnea(heavy, np.zeros_like(heavy), np.zeros_like(heavy))
    assert abs(g[1, 2]) > EFFORT[2], g  # the premise, from Pinocchio
    resp = _plan(gen, waypoints=heavy, duration=100.0)
    assert not resp.success and "static effort" in resp.message and NAMES[2] in resp.message, resp.message
    assert gen["proc"].poll() is None


def _time_scale(gen, msg, **kw) -> TimeScale.Response:
    return call_service(gen["node"], gen["scale"], TimeScale.Request(trajectory=msg, **kw), timeout=60)


def _inputs() -> dict[str, tuple[JointTrajectory, str]]:
    """Name -> (input trajectory, the constraint expected to bind)."""
    slow = through_waypoints(WAYPOINTS, BASE.limits["velocity"] / 3, BASE.limits["acceleration"] / 9, "quintic")
    t, q, qd, qdd = slow.sample(0.02)
    quintic = _message(t, q, qd, qdd)
    # a light wrist sweep, slower than needed: the velocity limits bind and the result is faster
    tw = np.linspace(0.0, 6.0, 61)
    qw = np.zeros((tw.size, 6))
    qw[:, 1], qw[:, 2] = -0.4, 0.6
    qw[:, 3], qw[:, 5] = 1.5 * np.sin(tw / 2), 2.0 * np.sin(tw / 3)
    vw = np.zeros_like(qw)
    vw[:, 3], vw[:, 5] = 0.75 * np.cos(tw / 2), 2.0 / 3 * np.cos(tw / 3)
    cubic = _message(tw, qw, vw)
    lin = _message(np.array([0.5, 2.0, 4.0, 5.0]), np.array([[0.0, -0.4, 0.6, 0.0, 0.0, 0.0], [0.3, -0.4, 0.6, 1.0, 0.5, 2.0],
                                                              [0.3, -0.3, 0.5, -1.0, 0.2, 0.0], [0.0, -0.4, 0.6, 0.0, 0.0, 0.0]]))
    return {"quintic": (quintic, "effort"), "cubic": (cubic, "velocity"), "linear": (lin, "velocity")}


@pytest.mark.parametrize("case", ["quintic", "cubic", "linear"])
def test_time_scale_effort_and_velocity_limits(gen, case):
    """Issue acceptance: effort limits never exceeded (the model at 10x the sample rate), duration within 1 % of the
    optimal uniform time scaling (computed here independently)."""
    oracle = gen["oracle"]
    msg, expected = _inputs()[case]
    resp = _time_scale(gen, msg)
    assert resp.success, resp.message
    out = resp.trajectory
    assert list(out.joint_names) == REQ_NAMES and len(out.points) == len(msg.points)
    k = resp.scale
    t_in, t_out = _times(msg), _times(out)
    np.testing.assert_allclose(t_out, k * t_in, atol=1.5e-9)
    np.testing.assert_array_equal(_field(out, "positions"), _field(msg, "positions"))
    for attr, power in (("velocities", 1), ("accelerations", 2)):  # the same fields: the same path
        given = _field(msg, attr)
        assert (given is None) == (_field(out, attr) is None)
        if given is not None:
            np.testing.assert_allclose(_field(out, attr), given / k**power, rtol=1e-12, atol=1e-15)
    played = _sampled(out)
    # the efforts of the points are the model's at the points (the interpolated states there)
    pq, pqd, pqdd = played.evaluate(_times(out))
    np.testing.assert_allclose(_field(out, "effort"), oracle.efforts(pq, pqd, pqdd), rtol=1e-9, atol=1e-8)
    # effort limits never exceeded, 10 sub-samples per interval of the returned trajectory
    dense = _dense(played)
    q, qd, qdd = played.evaluate(dense)
    ratio = np.max(np.abs(oracle.efforts(q, qd, qdd)) / EFFORT)
    assert ratio <= 1.0, ratio
    # velocity (and position) limits on the whole interpolated path: what the controller checks
    lim = BASE.limits
    check_path_limits(played, lim["lower"], lim["upper"], lim["velocity"], rate_tolerance=0.0)
    # the optimal uniform scale, independently: bisection (effort, 10x grid of the input) and the peak velocity
    given = _sampled(msg)
    q0, qd0, qdd0 = given.evaluate(_dense(given, 10))
    k_eff = oracle.optimal_scale(q0, qd0, qdd0, EFFORT)
    tv = np.linspace(0.0, given.duration, 200_001)
    k_vel = np.max(np.max(np.abs(given.evaluate(tv)[1]), axis=0) / lim["velocity"])
    k_opt = max(k_eff, k_vel)
    assert resp.binding == expected and (k_eff > k_vel) == (expected == "effort"), (resp.binding, k_eff, k_vel)
    assert resp.duration == pytest.approx(k_opt * given.duration, rel=0.01)
    assert resp.duration == pytest.approx(t_out[-1], abs=1e-9)
    print(f"\n{case}: scale {k:.6f} ({resp.binding}) vs independent optimum {k_opt:.6f} (effort {k_eff:.6f}, velocity "
          f"{k_vel:.6f}); peak effort ratio (10x grid) {ratio:.7f}, reported {resp.peak_effort_ratio:.7f}; peak "
          f"velocity ratio {resp.peak_velocity_ratio:.7f}")


def test_time_scale_time_optimal_follows_the_same_path_faster(gen):
    """``timing: time_optimal`` on the effort-bound quintic: faster than the optimal uniform scale, the same path (every
    reply point on the input's interpolation), the reply's efforts the model's at its points and within the limits,
    its interpolation within the effort limits except within 0.2 ms of an acceleration switch (the guard samples,
    where a C^2 interpolation cannot jump), its velocity within the limits."""
    oracle = gen["oracle"]
    msg, _ = _inputs()["quintic"]
    uniform = _time_scale(gen, msg)
    fast = _time_scale(gen, msg, timing="time_optimal", sample_period=0.01)
    assert uniform.success and fast.success, (uniform.message, fast.message)
    assert fast.message.startswith("time-optimal") and fast.binding == "effort"
    assert fast.duration < 0.8 * uniform.duration, (fast.duration, uniform.duration)  # 1.73 vs 2.33 s
    out = fast.trajectory
    assert list(out.joint_names) == REQ_NAMES and fast.duration == pytest.approx(_times(out)[-1], abs=1e-9)
    given = _sampled(msg)
    path = given.evaluate(np.linspace(0.0, given.duration, 400_001))[0]
    q = _field(out, "positions")
    gap = cKDTree(path).query(q, p=np.inf)[0]
    assert gap.max() < 1e-4, gap.max()  # on the input's path (its dense sampling: 1.4e-5 s apart)
    np.testing.assert_allclose(q[[0, -1]], path[[0, -1]], atol=1e-12)
    qd, qdd, effort = (_field(out, a) for a in ("velocities", "accelerations", "effort"))
    np.testing.assert_allclose(effort, oracle.efforts(q, qd, qdd), rtol=1e-9, atol=1e-8)
    assert np.all(np.abs(effort) <= EFFORT)
    played = _sampled(out)
    t = _times(out)
    close = np.flatnonzero(np.diff(t) <= 2.1e-4)  # guard samples: around the time law's acceleration switches
    centres = np.unique(np.concatenate([t[close], t[close + 1]]))
    dense = np.linspace(0.0, t[-1], 60_001)  # ~40 per interval of the reply
    far = cKDTree(centres[:, None]).query(dense[:, None])[0] > 2e-4 if centres.size else np.ones(dense.size, bool)
    dq, dqd, dqdd = played.evaluate(dense[far])
    assert np.max(np.abs(oracle.efforts(dq, dqd, dqdd)) / EFFORT) <= 1.0 + 1e-6
    lim = BASE.limits
    check_path_limits(played, lim["lower"], lim["upper"], lim["velocity"])
    assert fast.peak_velocity_ratio <= 1.0 + 1e-6 and fast.peak_effort_ratio <= 1.0 + 1e-9
    refused = _time_scale(gen, msg, timing="time_optimal", only_stretch=True)
    assert not refused.success and "only_stretch" in refused.message
    refused = _time_scale(gen, msg, timing="fastest")
    assert not refused.success and "timing" in refused.message
    assert gen["proc"].poll() is None


def test_time_scale_options_and_refusals(gen):
    msg, _ = _inputs()["cubic"]
    resp = _time_scale(gen, msg, only_stretch=True)
    assert resp.success and resp.scale == 1.0 and resp.binding == "minimum", resp.message
    slower = _time_scale(gen, msg, max_velocity=(BASE.limits["velocity"][ORDER] / 2).tolist())
    fast = _time_scale(gen, msg)
    assert slower.success and slower.scale == pytest.approx(2 * fast.scale, rel=1e-5), (slower.scale, fast.scale)
    for bad, words in (
        (JointTrajectory(joint_names=REQ_NAMES), "without points"),
        (JointTrajectory(joint_names=REQ_NAMES[:5], points=msg.points[:2]), "wrong_joints"),
        (_message([0.0, 0.0], np.zeros((2, 6))), "strictly increasing"),
        (_message([0.0, 1.0], np.array([[0.0] * 6, [9.0] + [0.0] * 5])), "position limits"),
    ):
        r = _time_scale(gen, bad)
        assert not r.success and words in r.message, r.message
    r = _time_scale(gen, msg, max_effort=[1e6] * 6)
    assert not r.success and "above the robot's limit" in r.message
    # max_points, checked before any per-point work: just at the bound accepted, one more refused with the cause
    _set(gen, "max_points", len(msg.points))
    try:
        assert _time_scale(gen, msg).success
        more = _message(np.append(_times(msg), _times(msg)[-1] + 0.1), np.vstack([_field(msg, "positions")] * 2)[:len(msg.points) + 1])
        r = _time_scale(gen, more)
        assert not r.success and r.message.startswith("too_large: ") and f"max_points={len(msg.points)}" in r.message, r.message
    finally:
        _set(gen, "max_points", 20_000)
    nan = _message([0.0, 1.0], np.zeros((2, 6)))
    nan.points[1].positions[2] = float("nan")
    r = _time_scale(gen, nan)
    assert not r.success and "NaN" in r.message
    assert gen["proc"].poll() is None


def _set(gen, name: str, value: float) -> None:
    req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
    assert call_service(gen["node"], gen["setp"], req).results[0].successful


def test_execute_without_server_is_refused(gen):
    resp = _plan(gen, execute=True)
    assert not resp.success and resp.error_code == PlanTrajectory.Response.NOT_EXECUTED
    assert f"no FollowJointTrajectory action server /{CONTROLLER}/follow_joint_trajectory" in resp.message, resp.message
    assert len(resp.trajectory.points) > 10  # planned all the same; answered (call_service's cap), not hung


def test_execute_through_the_action(gen):
    fake = FakeController()
    try:
        plain = _plan(gen)
        resp = _plan(gen, execute=True)
        assert resp.success and resp.error_code == 0, resp.message
        assert "succeeded, SUCCESSFUL (0)" in resp.message
        # the goal carries the planned trajectory, efforts included, start now (stamp 0)
        assert len(fake.goals) == 1
        sent = fake.goals[0].trajectory
        assert sent.header.stamp.sec == 0 and sent.header.stamp.nanosec == 0
        assert sent == resp.trajectory and sent == plain.trajectory
        assert all(len(p.effort) == 6 for p in sent.points)
        # an abort: its code and string
        fake.mode = "abort"
        resp = _plan(gen, execute=True)
        assert not resp.success and resp.error_code == FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
        assert resp.error_string == "joint3 left its path tolerance at t = 0.42 s"
        assert "aborted, PATH_TOLERANCE_VIOLATED (-4): joint3 left" in resp.message, resp.message
        # a rejected goal
        fake.mode = "reject"
        resp = _plan(gen, execute=True)
        assert not resp.success and resp.error_code == PlanTrajectory.Response.GOAL_REJECTED and "rejected" in resp.message
        # no result within duration + margin: canceled and reported
        fake.mode = "hang"
        _set(gen, "execute_timeout_margin", 0.3)
        t0 = time.monotonic()
        resp = _plan(gen, execute=True)
        waited = time.monotonic() - t0
        assert not resp.success and resp.error_code == PlanTrajectory.Response.RESULT_TIMEOUT, resp.message
        assert "canceled" in resp.message and fake.canceled.wait(5.0)
        assert resp.duration + 0.3 <= waited < resp.duration + 10.0, (waited, resp.duration)
        _set(gen, "execute_timeout_margin", 5.0)
        # the node survived all of it
        fake.mode = "succeed"
        resp = _plan(gen, execute=True)
        assert resp.success, resp.message
        assert gen["proc"].poll() is None
    finally:
        fake.close()


def test_plan_from_the_controllers_reference(gen):
    """start_from_reference: the first waypoint after the start segment from the reference a controller publishes
    on <controller>/controller_state (its duration the pure start_segment's, on the generator's own model); a
    reference stamped 5 s before the node's clock is refused as stale (REFERENCE_MAX_AGE 1 s: its age said), one
    stamped now is used; with start_from_current too, refused."""
    from control_msgs.msg import JointTrajectoryControllerState

    from robot_dynamics.model.robot_model import RobotModel
    from robot_dynamics.trajectory.planning import start_segment

    node = gen["node"]
    resp = _plan(gen, start_from_reference=True, start_from_current=True)
    assert not resp.success and "exclude each other" in resp.message, resp.message
    pub = node.create_publisher(JointTrajectoryControllerState, f"/{CONTROLLER}/controller_state", 10)
    q, qd, qdd = WAYPOINTS[0] + 0.05, np.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.6]), np.array([1.0, 0, 0, -1.0, 0, 0])
    model = RobotModel.from_urdf(_tight_urdf(), rotor_inertia=dict(zip(NAMES, BASE.Ia, strict=True)),
                                 acceleration_limits=dict(zip(NAMES, BASE.limits["acceleration"], strict=True)))

    def plan_after(age: float, until) -> PlanTrajectory.Response:
        """The plan from a reference stamped ``age`` s before the node's clock, published again until the answer
        says ``until`` (the generator takes its topics every 0.05 s; a busy host later: no fixed wait)."""
        resp = None
        for _ in range(200):
            msg = JointTrajectoryControllerState(joint_names=REQ_NAMES)
            now = node.get_clock().now().nanoseconds * 1e-9 - age
            msg.header.stamp.sec, msg.header.stamp.nanosec = int(now), int((now % 1) * 1e9)
            msg.reference.positions, msg.reference.velocities = q[ORDER].tolist(), qd[ORDER].tolist()
            msg.reference.accelerations = qdd[ORDER].tolist()
            pub.publish(msg)
            resp = _plan(gen, waypoints=WAYPOINTS[1:], start_from_reference=True)
            if until(resp):
                return resp
        raise AssertionError(f"precondition: the generator never answered as expected: {resp.message}")

    resp = plan_after(5.0, lambda r: "s old, beyond 1 s" in r.message)  # taken, and refused as stale
    assert not resp.success
    resp = plan_after(0.0, lambda r: r.success)
    first = resp.trajectory.points[0]
    t_first = first.time_from_start.sec + 1e-9 * first.time_from_start.nanosec
    np.testing.assert_allclose(np.array(first.positions), WAYPOINTS[1][ORDER], atol=1e-12)
    lim = model.limits  # the generator's model: the same URDF, rotor inertias and acceleration limits
    seg = start_segment(q, qd, qdd, WAYPOINTS[1], lim["lower"], lim["upper"], lim["velocity"], lim["acceleration"],
                        model)
    assert t_first == pytest.approx(float(seg.times[-1]), abs=1e-9)
    assert t_first > 0.05 and "from the controller's reference" in resp.message, resp.message
    node.destroy_publisher(pub)
