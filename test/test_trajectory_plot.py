"""plot_trajectory writes a readable image; bad limits are rejected."""

import matplotlib.image as mpimg
import numpy as np
import pytest

from robot_dynamics.trajectory import plot_trajectory, point_to_point


def test_plot_writes_png(tmp_path):
    traj = point_to_point([0.0, 1.0], [1.0, -0.5], [1.0, 2.0], [2.0, 3.0], "smooth_trapezoid")
    out = plot_trajectory(traj, tmp_path / "traj.png", v_max=[1.0, 2.0], a_max=[2.0, 3.0], joint_names=["a", "b"])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 100 and np.ptp(img) > 0  # not blank
    with pytest.raises(ValueError):
        plot_trajectory(traj, tmp_path / "bad.png", v_max=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        plot_trajectory(traj, tmp_path / "bad.png", joint_names=["a"])
