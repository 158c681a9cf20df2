"""Synchronized joint trajectories (001 §8.3): seed formulas 8.14, 8.22-8.35, 8.41-8.47 and properties."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robot_dynamics.trajectory import PROFILES, point_to_point, through_waypoints

SQ3 = math.sqrt(3.0)


def table_8_1(name, D, kv, ka):
    """Per-joint minimum time, written from Table 8.1 / 8.22 / 8.35 / 8.41-8.47 (independent of the code)."""
    out = []
    for d, v, a in zip(np.abs(D), kv, ka, strict=True):
        if d == 0:
            out.append(0.0)
        elif name == "linear":
            out.append(d / v)
        elif name == "cubic":
            out.append(max(3 * d / (2 * v), math.sqrt(6 * d / a)))
        elif name == "quintic":
            out.append(max(15 * d / (8 * v), math.sqrt(10 * d / (SQ3 * a))))
        elif name == "bang_bang":
            out.append(max(2 * d / v, 2 * math.sqrt(d / a)))
        elif name == "trapezoid":
            v = v if d > v * v / a else math.sqrt(d * a)  # 8.18, 8.35
            out.append(v / a + d / v)
        else:
            v = v if d > 1.5 * v * v / a else math.sqrt(2 / 3 * d * a)  # 8.46, 8.47
            out.append(1.5 * v / a + d / v)
    return np.array(out)


def seed_homothetic(D, kv, ka, smooth=False):
    """tau and t_f of the synchronized trapeze by 8.32-8.35 (reference joint 1), 8.41/8.45 if smooth."""
    D = np.abs(D)
    kv = np.array(kv, float).copy()
    for j in range(len(D)):  # 8.35 / 8.47: replace k_vj by the maximum achievable velocity
        lim = 1.5 * kv[j] ** 2 / ka[j] if smooth else kv[j] ** 2 / ka[j]
        if D[j] < lim:
            kv[j] = math.sqrt((2 / 3 if smooth else 1.0) * D[j] * ka[j])
    lam = min([1.0] + [kv[j] * D[0] / (kv[0] * D[j]) for j in range(1, len(D))])  # 8.34
    nu = min([1.0] + [ka[j] * D[0] / (ka[0] * D[j]) for j in range(1, len(D))])
    tau = lam * kv[0] / (nu * ka[0]) * (1.5 if smooth else 1.0)  # 8.33 / 8.41
    return tau, tau + D[0] / (lam * kv[0])  # 8.25 / 8.45


@pytest.mark.parametrize("smooth", [False, True])
@pytest.mark.parametrize("D,kv,ka", [
    ([1.0, -2.0, 0.5], [1.0, 1.5, 2.0], [2.0, 1.0, 4.0]),
    ([0.1, 3.0], [2.0, 1.0], [1.0, 10.0]),  # joint 1 cannot reach k_v1 (8.35)
    ([2.0, 0.01, -1.0], [0.5, 0.5, 3.0], [5.0, 0.2, 0.3]),
])
def test_homothetic_synchronization_matches_8_32_to_8_35(D, kv, ka, smooth):
    name = "smooth_trapezoid" if smooth else "trapezoid"
    traj = point_to_point(np.zeros(len(D)), D, kv, ka, name)
    tau, tf = seed_homothetic(np.array(D), kv, ka, smooth)
    assert traj.duration == pytest.approx(tf, rel=1e-12)
    assert traj.tau == pytest.approx(tau, rel=1e-12)
    assert traj.duration >= np.max(table_8_1(name, np.array(D), kv, ka)) * (1 - 1e-12)


def peak_times(traj):
    """Analytic peak times of |qd| and |qdd| from the seed (plus a dense grid)."""
    tf, tau = traj.duration, traj.tau
    base = {
        "linear": [0.0, tf / 2, tf],
        "cubic": [0.0, tf / 2, tf],
        "quintic": [tf / 2, tf / 2 - tf * SQ3 / 6, tf / 2 + tf * SQ3 / 6],
        "bang_bang": [0.0, tf / 2, tf],
        "trapezoid": [0.0, tf / 2, tf] + ([tau / 2] if tau else []),
        "smooth_trapezoid": [tf / 2] + ([tau / 2, tf - tau / 2] if tau else []),
    }[traj.profile]
    return np.concatenate([np.linspace(0, tf, 1501), base])


limits = st.floats(0.05, 20.0)
# physical displacements: 0 or at least 1e-9 (below 1e-200 the code treats a displacement as zero)
displacements = st.floats(-5.0, 5.0).map(lambda x: x if abs(x) >= 1e-9 else 0.0)


@st.composite
def motions(draw):
    n = draw(st.integers(1, 6))
    D = np.array(draw(st.lists(displacements, min_size=n, max_size=n)))
    zero = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    D[np.array(zero) & (np.arange(n) > 0)] = 0.0  # some joints do not move
    q0 = np.array(draw(st.lists(st.floats(-3.0, 3.0), min_size=n, max_size=n)))
    kv = np.array(draw(st.lists(limits, min_size=n, max_size=n)))
    ka = np.array(draw(st.lists(limits, min_size=n, max_size=n)))
    return q0, q0 + D, kv, ka


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(motions(), st.sampled_from(PROFILES))
def test_synchronized_point_to_point_properties(motion, name):
    q0, q1, kv, ka = motion
    D = q1 - q0
    traj = point_to_point(q0, q1, kv, ka, name)
    tf = traj.duration
    t = peak_times(traj)
    q, qd, qdd = traj.evaluate(t)
    assert q.shape == (t.size, q0.size)
    if not np.any(D):
        assert tf == 0.0 and np.allclose(q, q0)
        return
    # limits (relative 1e-9)
    assert np.all(np.abs(qd) <= kv * (1 + 1e-9))
    if name != "linear":
        assert np.all(np.abs(qdd) <= ka * (1 + 1e-9))
    # start and stop together, at rest
    qa, qda, qdda = traj.evaluate(np.array([0.0, tf]))
    assert np.allclose(qa, [q0, q1], atol=1e-12)
    if name != "linear":
        assert np.allclose(qda, 0.0, atol=1e-12)
    if name in ("quintic", "smooth_trapezoid"):
        assert np.allclose(qdda, 0.0, atol=1e-9 * np.max(ka))
    # straight line in joint space: q(t) - q0 parallel to D
    u = D / np.max(np.abs(D))
    u = u / np.linalg.norm(u)
    dev = (q - q0) - np.outer((q - q0) @ u, u)
    assert np.max(np.abs(dev)) <= 1e-9 * (1 + np.max(np.abs(D)))
    # minimum time: never below any joint's own minimum (8.14); polynomial profiles equal it
    tj = np.max(table_8_1(name, D, kv, ka))
    assert tf >= tj * (1 - 1e-12)
    if name in ("linear", "cubic", "quintic", "bang_bang"):
        assert tf == pytest.approx(tj, rel=1e-12)
    # ... and a limit is saturated: no joint could go faster without another exceeding its limit
    rv = np.max(np.abs(qd) / kv)
    ra = np.max(np.abs(qdd) / ka)
    if name == "linear":
        assert rv == pytest.approx(1.0, rel=1e-9)
    elif name in ("trapezoid", "smooth_trapezoid") and traj.tau < tf / 2 * (1 - 1e-9):
        assert rv == pytest.approx(1.0, rel=1e-9) and ra == pytest.approx(1.0, rel=1e-9)
    else:
        assert max(rv, ra) == pytest.approx(1.0, rel=1e-9)


def _breakpoints(traj):
    tf, tau = traj.duration, traj.tau
    return {"cubic": [], "quintic": [], "bang_bang": [tf / 2], "linear": [],
            "trapezoid": [tau, tf - tau] if tau else [], "smooth_trapezoid": [tau, tf - tau] if tau else []}[
        traj.profile]


@settings(max_examples=150, deadline=None)
@given(motions(), st.sampled_from(["cubic", "quintic", "bang_bang", "trapezoid", "smooth_trapezoid"]))
def test_continuity_class(motion, name):
    q0, q1, kv, ka = motion
    traj = point_to_point(q0, q1, kv, ka, name)
    if traj.duration == 0.0:
        return
    eps = 1e-9 * min(traj.duration, traj.tau or math.inf)  # well inside the shortest phase
    pts = np.array(_breakpoints(traj) + [0.0, traj.duration])
    left = traj.evaluate(pts - eps)
    right = traj.evaluate(pts + eps)
    scale_v, scale_a = np.max(kv), np.max(ka)
    assert np.allclose(left[0], right[0], atol=1e-6)
    assert np.allclose(left[1], right[1], atol=1e-6 * scale_a * traj.duration + 1e-12)  # C1
    if name in ("quintic", "smooth_trapezoid"):
        assert np.allclose(left[2], right[2], atol=1e-6 * scale_a + 1e-12)  # C2
    del scale_v


def test_duration_requests():
    q0, q1 = [0.0, 0.0], [1.0, -0.5]
    for name in PROFILES:
        tmin = point_to_point(q0, q1, 1.0, 2.0, name).duration
        with pytest.raises(ValueError, match="shorter"):
            point_to_point(q0, q1, 1.0, 2.0, name, duration=0.9 * tmin)
        traj = point_to_point(q0, q1, 1.0, 2.0, name, duration=2 * tmin)
        assert traj.duration == 2 * tmin
        q, _qd, _ = traj.evaluate(np.array([0.0, traj.duration]))
        assert np.allclose(q, [q0, q1])
        t = np.linspace(0, traj.duration, 3001)
        assert np.max(np.abs(traj.evaluate(t)[1])) <= 0.5 * 1.0 + 1e-12  # stretched by k = 2


def test_zero_displacement_and_evaluation_shapes():
    traj = point_to_point([0.3, 0.0], [0.3, 0.0], 1.0, 1.0)
    assert traj.duration == 0.0 and traj.n == 2 and traj.joint_count == 2
    times, q, qd, qdd = traj.sample(0.01)
    assert times.shape == (1,) and q.shape == (1, 2) and np.allclose(q, [0.3, 0.0]) and not qd.any()
    held = point_to_point([0.3, 0.0], [0.3, 0.0], 1.0, 1.0, duration=2.0)
    assert held.duration == 2.0 and np.allclose(held.evaluate([0.5, 1.5])[0], [[0.3, 0.0]] * 2)
    traj = point_to_point([0.0, 1.0, 2.0], [1.0, 1.0, 0.0], 1.0, 1.0, "quintic")
    q, qd, qdd = traj.evaluate(0.5)
    assert q.shape == qd.shape == qdd.shape == (3,)
    assert qd[1] == 0.0 and q[1] == 1.0
    q, qd, qdd = traj.evaluate([-1.0, 0.2, 100.0])
    assert q.shape == (3, 3) and np.allclose(q[0], [0, 1, 2]) and np.allclose(q[2], [1, 1, 0])
    assert not qd[[0, 2]].any() and not qdd[[0, 2]].any()
    times, q, qd, qdd = traj.sample(0.1)
    assert times[0] == 0.0 and times[-1] == traj.duration and np.all(np.diff(times) > 0)
    assert np.all(np.diff(times)[:-1] == pytest.approx(0.1))
    assert q.shape == (times.size, 3) and np.allclose(q[-1], [1, 1, 0])


@pytest.mark.parametrize("kwargs", [
    {"q_start": [0, 0], "q_goal": [1], "v_max": 1, "a_max": 1},
    {"q_start": [0, np.nan], "q_goal": [1, 1], "v_max": 1, "a_max": 1},
    {"q_start": [[0, 0]], "q_goal": [[1, 1]], "v_max": 1, "a_max": 1},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 0, "a_max": 1},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": [1, -1], "a_max": 1},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 1, "a_max": [1, 1, 1]},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 1, "a_max": np.nan},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 1, "a_max": np.inf},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 1, "a_max": 1, "profile": "spline"},
    {"q_start": [0, 0], "q_goal": [1, 1], "v_max": 1, "a_max": 1, "duration": np.nan},
])
def test_bad_input(kwargs):
    with pytest.raises(ValueError):
        point_to_point(**kwargs)


def test_bad_times_and_period():
    traj = point_to_point([0.0], [1.0], 1.0, 1.0)
    for bad in (np.nan, [0.0, np.inf], [[0.0]]):
        with pytest.raises(ValueError):
            traj.evaluate(bad)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError):
            traj.sample(bad)


# ------------------------------------------------------------------ waypoints
@st.composite
def waypoint_sets(draw):
    n = draw(st.integers(1, 4))
    m = draw(st.integers(2, 5))
    W = np.array(draw(st.lists(st.lists(st.floats(-3.0, 3.0), min_size=n, max_size=n), min_size=m, max_size=m)))
    kv = np.array(draw(st.lists(limits, min_size=n, max_size=n)))
    ka = np.array(draw(st.lists(limits, min_size=n, max_size=n)))
    return W, kv, ka


@settings(max_examples=120, deadline=None)
@given(waypoint_sets(), st.sampled_from(["cubic", "quintic"]), st.booleans())
def test_waypoints_respect_limits_and_pass_through(wp, name, auto):
    W, kv, ka = wp
    traj = through_waypoints(W, kv, ka, profile=name, via_velocities="auto" if auto else None)
    t = np.linspace(0, traj.duration, 4001)
    _q, qd, qdd = traj.evaluate(t)
    assert np.all(np.abs(qd) <= kv * (1 + 1e-9)) and np.all(np.abs(qdd) <= ka * (1 + 1e-9))
    # passes through every waypoint at the segment boundaries, in order
    if auto:
        starts = traj.starts
        reached = traj.evaluate(starts)[0]
        keep = [0] + [i + 1 for i in range(len(W) - 1)
                      if not (np.all(W[i] == W[i + 1]))]
        assert reached.shape[0] <= len(W)
        assert np.allclose(reached, W[keep][: reached.shape[0]], atol=1e-9)
    else:
        assert np.allclose(traj.evaluate(traj.starts)[0], W, atol=1e-9)
    # continuity at the joins: C1 always, C2 for quintic
    eps = 1e-9 * min(seg.duration for seg in traj.segments)
    left, right = traj.evaluate(traj.starts[1:-1] - eps), traj.evaluate(traj.starts[1:-1] + eps)
    assert np.allclose(left[0], right[0], atol=1e-6)
    assert np.allclose(left[1], right[1], atol=1e-6 * np.max(ka) + 1e-9)
    if name == "quintic":
        assert np.allclose(left[2], right[2], atol=1e-4 * np.max(ka) + 1e-9)


def test_waypoints_via_velocities_are_honoured_and_segments_minimal():
    W = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 0.0]])
    V = np.array([[0.8, 0.0]])
    kv, ka = np.array([1.0, 1.0]), np.array([2.0, 2.0])
    for name in ("cubic", "quintic"):
        traj = through_waypoints(W, kv, ka, profile=name, via_velocities=V)
        assert np.allclose(traj.evaluate(traj.starts[1])[1], V[0], atol=1e-12)
        # each segment duration is the smallest feasible: 0.1 % shorter breaks a limit (checked on a dense grid)
        for seg in traj.segments:
            t = np.linspace(0, seg.duration, 20001)
            _, qd, qdd = seg.evaluate(t)
            ratio = max(np.max(np.abs(qd) / kv), np.max(np.abs(qdd) / ka))
            assert ratio == pytest.approx(1.0, abs=1e-6)


def test_waypoints_stop_profiles_and_bad_input():
    W = np.array([[0.0, 0.0], [1.0, 0.5], [1.0, 0.5], [-1.0, 2.0]])
    for name in PROFILES:
        traj = through_waypoints(W, 1.0, 2.0, profile=name)
        assert traj.n == 2 and np.allclose(traj.evaluate(traj.starts)[0], W)
        expected = sum(np.max(table_8_1(name, W[i + 1] - W[i], [1.0, 1.0], [2.0, 2.0])) for i in range(3))
        assert traj.duration == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError):
        through_waypoints(W[:1], 1.0, 1.0)
    with pytest.raises(ValueError):
        through_waypoints(W, 1.0, 1.0, profile="trapezoid", via_velocities="auto")
    with pytest.raises(ValueError):
        through_waypoints(W, 1.0, 1.0, profile="cubic", via_velocities=np.zeros((3, 2)))
    with pytest.raises(ValueError):
        through_waypoints(W, 1.0, 1.0, profile="cubic", via_velocities=np.full((2, 2), 2.0))
    with pytest.raises(ValueError):
        through_waypoints(np.array([[0.0, np.nan], [1.0, 1.0]]), 1.0, 1.0)


def test_sampled_and_time_scaled_trajectories_validate_input():
    from robot_dynamics.trajectory import SampledTrajectory, TimeScaledTrajectory

    z = np.zeros((3, 2))
    with pytest.raises(ValueError):
        SampledTrajectory(np.array([0.0, 1.0, 1.0]), z, z, z)
    with pytest.raises(ValueError):
        SampledTrajectory(np.array([0.0, 1.0, 2.0]), z[:2], z, z)
    with pytest.raises(ValueError):
        SampledTrajectory(np.array([0.0, 1.0, 2.0]), np.full((3, 2), np.nan), z, z)
    base = point_to_point([0.0], [1.0], 1.0, 1.0)
    for k in (0.0, -2.0, np.inf):
        with pytest.raises(ValueError):
            TimeScaledTrajectory(base, k)
    # a quintic polynomial (8.11) is reproduced exactly by the quintic Hermite interpolation of its knots
    poly = point_to_point([0.0, 1.0], [1.0, -1.0], 1.0, 2.0, "quintic")
    t = np.linspace(0, poly.duration, 7)
    s = SampledTrajectory(t, *poly.evaluate(t))
    tt = np.linspace(0, poly.duration, 501)
    for a, b in zip(s.evaluate(tt), poly.evaluate(tt), strict=True):
        assert np.allclose(a, b, atol=1e-12)
