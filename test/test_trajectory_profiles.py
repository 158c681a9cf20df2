"""Interpolation functions of 001 chapter 8 against the seed's formulas (8.4-8.47, Table 8.1)."""

import math

import numpy as np
import pytest

from robot_dynamics.trajectory import PROFILES, minimum_time, point_to_point
from robot_dynamics.trajectory import profiles as P

SQ3 = math.sqrt(3.0)


def test_table_8_1_example_minimum_times():
    # D = 1, k_v = 1, k_a = 2, hand-evaluated from Table 8.1, 8.22 and 8.41/8.45:
    # linear 1/1; cubic max(1.5, sqrt 3); quintic max(15/8, sqrt(5/sqrt3)); bang-bang max(2, 2 sqrt(1/2));
    # trapezoid 1/2 + 1; smooth trapezoid 3/4 + 1.
    expected = {"linear": 1.0, "cubic": SQ3, "quintic": 1.875, "bang_bang": 2.0, "trapezoid": 1.5,
                "smooth_trapezoid": 1.75}
    for name, tf in expected.items():
        assert float(minimum_time(name, 1.0, 1.0, 2.0)) == pytest.approx(tf, abs=1e-12)
        assert point_to_point([0.0], [1.0], 1.0, 2.0, name).duration == pytest.approx(tf, abs=1e-12)


def _peak_table(tf, tau):
    """(peak-velocity time, |rd| max, peak-acceleration time, |rdd| max) from the seed for D = 1."""
    return {
        "linear": (0.3 * tf, 1.0 / tf, None, None),
        "cubic": (tf / 2, 1.5 / tf, 0.0, 6.0 / tf**2),  # 8.8, 8.9
        "quintic": (tf / 2, 15.0 / (8 * tf), tf / 2 - tf * SQ3 / 6, 10.0 / (SQ3 * tf**2)),  # 8.12, 8.13
        "bang_bang": (tf / 2, 2.0 / tf, 0.1 * tf, 4.0 / tf**2),  # 8.16, 8.17
    }


@pytest.mark.parametrize("D,kv,ka", [(1.0, 1.0, 2.0), (-2.3, 0.7, 5.0), (0.05, 3.0, 1.0), (4.0, 0.2, 0.01)])
@pytest.mark.parametrize("name", PROFILES)
def test_peaks_equal_seed_formulas(name, D, kv, ka):
    traj = point_to_point([0.0], [D], kv, ka, name)
    tf, a = traj.duration, abs(D)
    t = np.linspace(0.0, tf, 20001)
    _, qd, qdd = traj.evaluate(t)
    if name in ("trapezoid", "smooth_trapezoid"):
        tau = traj.tau
        vmax = a / (tf - tau)  # area under the velocity trapeze, 8.21/8.45
        if name == "trapezoid":
            t_v, t_a, amax = tf / 2, tau / 2, vmax / tau  # constant acceleration phase, 8.19
        else:
            t_v, t_a, amax = tf / 2, tau / 2, 1.5 * vmax / tau  # 8.40 at t = tau/2
    else:
        t_v, cv, t_a, ca = _peak_table(tf, None)[name]
        vmax, amax = a * cv, (a * ca if ca is not None else None)
    # exact value at the analytic peak time, and no sample above it
    assert abs(traj.evaluate(t_v)[1][0]) == pytest.approx(vmax, abs=1e-9)
    assert np.max(np.abs(qd)) <= vmax + 1e-9
    if amax is not None:
        assert abs(traj.evaluate(t_a)[2][0]) == pytest.approx(amax, abs=1e-9)
        assert np.max(np.abs(qdd)) <= amax + 1e-9
    # the minimum time saturates a limit: the peak equals k_v or k_a (Table 8.1 / 8.22 / 8.45)
    sat_v = math.isclose(vmax, kv, rel_tol=1e-9)
    sat_a = amax is not None and math.isclose(amax, ka, rel_tol=1e-9)
    assert sat_v or sat_a
    assert vmax <= kv * (1 + 1e-9) and (amax is None or amax <= ka * (1 + 1e-9))


def test_trapezoid_matches_8_19_per_joint():
    # single joint at its own minimum time: the seed's 8.19-8.22 literally
    for D, kv, ka in [(1.0, 1.0, 2.0), (-3.0, 1.5, 2.5)]:
        s = math.copysign(1.0, D)
        tau = kv / ka
        tfj = tau + abs(D) / kv
        t = np.linspace(0, tfj, 1001)
        ref = np.where(t <= tau, 0.5 * t**2 * ka * s,
                       np.where(t <= tfj - tau, (t - tau / 2) * kv * s, D - 0.5 * (tfj - t) ** 2 * ka * s))
        traj = point_to_point([0.0], [D], kv, ka, "trapezoid")
        assert traj.duration == pytest.approx(tfj, abs=1e-12)
        assert np.allclose(traj.evaluate(t)[0][:, 0], ref, atol=1e-12)


def test_smooth_trapezoid_matches_8_37_to_8_43():
    # the seed's per-joint equations with lambda_j k_vj = V and tau = 3/2 V / k_a (8.41), h = tf - 2 tau
    D, kv, ka = 2.0, 1.0, 2.0
    V, tau = kv, 1.5 * kv / ka
    tf = tau + D / V
    h = tf - 2 * tau
    t = np.linspace(0, tf, 2001)
    a, m, _d = t <= tau, (t > tau) & (t <= tau + h), t > tau + h
    q_tau = -(1 / tau**3) * V * (0.5 * tau - tau) * tau**3
    q = np.where(a, -(1 / tau**3) * V * (0.5 * t - tau) * t**3,  # 8.37
                 np.where(m, q_tau + (t - tau) * V,  # 8.42
                          D + 0.5 * ((t - 3 * tau - h) * (t - tau - h) ** 3 / tau**3 + (2 * t - 3 * tau - 2 * h)) * V))
    qd = np.where(a, -(1 / tau**3) * V * (2 * t - 3 * tau) * t**2,  # 8.38
                  np.where(m, V, ((2 * t - 5 * tau - 2 * h) * (t - tau - h) ** 2 / tau**3 + 1) * V))
    qdd = np.where(a, -(6 / tau**3) * V * (t - tau) * t,  # 8.39
                   np.where(m, 0.0, 6 / tau**3 * (t - 2 * tau - h) * (t - tau - h) * V))  # "[13.43]" = 8.43
    assert q_tau == pytest.approx(0.75 * V**2 / ka)  # 8.44
    traj = point_to_point([0.0], [D], kv, ka, "smooth_trapezoid")
    assert traj.duration == pytest.approx(tf, abs=1e-12)
    got = traj.evaluate(t)
    for x, ref in zip(got, (q, qd, qdd), strict=True):
        assert np.allclose(x[:, 0], ref, atol=1e-12)


@pytest.mark.parametrize("name", PROFILES)
def test_derivatives_match_finite_differences(name):
    tf = 1.3
    fn = P.profile_function(name)
    args = (tf, 0.4) if "trapezoid" in name else (tf,)
    t = np.linspace(0.01, tf - 0.01, 397)
    h = 1e-6
    _r, rd, rdd = fn(t, *args)
    rp, rdp, _ = fn(t + h, *args)
    rm, rdm, _ = fn(t - h, *args)
    assert np.allclose((rp - rm) / (2 * h), rd, atol=1e-6)
    if name not in ("bang_bang", "trapezoid"):  # acceleration jumps are at sample-free points otherwise
        assert np.allclose((rdp - rdm) / (2 * h), rdd, atol=1e-5)
    r0, _, _ = fn(np.array([0.0, tf]), *args)
    assert np.allclose(r0, [0.0, 1.0], atol=1e-15)


def test_profile_input_validation():
    with pytest.raises(ValueError):
        P.cubic(0.5, 0.0)
    with pytest.raises(ValueError):
        P.cubic(np.nan, 1.0)
    with pytest.raises(ValueError):
        P.trapezoid(0.5, 1.0, 0.7)
    with pytest.raises(ValueError):
        P.profile_function("spline")
    with pytest.raises(ValueError):
        minimum_time("spline", 1.0, 1.0, 1.0)


def test_outside_interval_is_at_rest():
    r, rd, rdd = P.quintic(np.array([-1.0, 5.0]), 2.0)
    assert np.array_equal(r, [0.0, 1.0]) and not rd.any() and not rdd.any()
