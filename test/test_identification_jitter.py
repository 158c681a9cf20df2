"""Recorded joint states have jittered stamps and measured velocities (a joint_state_broadcaster's): preprocessing
resamples them on a uniform grid, measured velocities included (a bug once interpolated those against the grid)."""

from __future__ import annotations

import numpy as np

from robot_dynamics.identification.data import IdentificationData, preprocess


def test_jittered_stamps_with_measured_velocities():
    rng = np.random.default_rng(0)
    t = np.arange(0.0, 4.0, 0.002) + rng.normal(0.0, 2e-5, 2000)
    w = np.arange(1, 4) * 0.7
    q = np.sin(np.outer(t, w))
    qd = np.cos(np.outer(t, w)) * w  # the exact derivative: the oracle
    data = IdentificationData(t, q, np.zeros_like(q), qd, None, ["a", "b", "c"])
    p = preprocess(data, cutoff=None, trim=0.0, use_measured_derivatives=True)
    assert np.ptp(np.diff(p.t)) < 1e-12 and abs(np.diff(p.t)[0] - 0.002) < 1e-5  # a uniform grid
    np.testing.assert_allclose(p.qd, np.cos(np.outer(p.t, w)) * w, atol=1e-4)
    np.testing.assert_allclose(p.q, np.sin(np.outer(p.t, w)), atol=1e-4)
