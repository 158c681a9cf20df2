"""Plots of joint trajectories: q, qd, qdd per joint with the limits (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .base import Trajectory


def _limits(x: Any, n: int, what: str) -> np.ndarray | None:
    if x is None:
        return None
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,) or np.any(np.isnan(a)):
        raise ValueError(f"{what} must be a scalar or have shape ({n},)")
    return a


def plot_trajectory(traj: Trajectory, path: str | Path, v_max: Any = None, a_max: Any = None,
                    period: float | None = None, joint_names: list[str] | None = None) -> Path:
    """Write a PNG (or any matplotlib format by extension) with three panels q, qd, qdd.

    Each joint has its colour; ``v_max``/``a_max`` (scalar or (n,)) are drawn as
    dashed +/- lines in the joint's colour.  Returns the written path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = traj.n
    kv, ka = _limits(v_max, n, "v_max"), _limits(a_max, n, "a_max")
    names = list(joint_names) if joint_names is not None else [f"joint {j + 1}" for j in range(n)]
    if len(names) != n:
        raise ValueError(f"joint_names must have {n} entries")
    period = period or max(traj.duration, 1e-9) / 1000.0
    t, q, qd, qdd = traj.sample(period)
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(9, 8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j in range(n):
        c = colors[j % len(colors)]
        for ax, y, lim in ((axes[0], q, None), (axes[1], qd, kv), (axes[2], qdd, ka)):
            ax.plot(t, y[:, j], color=c, label=names[j] if ax is axes[0] else None)
            if lim is not None and np.isfinite(lim[j]):
                ax.axhline(lim[j], color=c, ls="--", lw=0.8)
                ax.axhline(-lim[j], color=c, ls="--", lw=0.8)
    for ax, lab in zip(axes, ("q", "qd", "qdd"), strict=True):
        ax.set_ylabel(lab)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    axes[2].set_xlabel("t [s]")
    axes[0].set_title(f"trajectory: {traj.duration:.4g} s")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
