"""Trajectory generation (001 chapter 8): profiles, joint space, task space, time scaling, plots.

Every generator returns a :class:`Trajectory` with ``.n``/``.joint_count``,
``.duration``, ``.evaluate(t) -> (q, qd, qdd)`` and ``.sample(period)``.
"""

from .base import PiecewiseTrajectory, TimeScaledTrajectory, Trajectory
from .joint_space import (
    HermiteSegment,
    PointToPointTrajectory,
    point_to_point,
    synchronized_timing,
    through_waypoints,
)
from .optimal_timing import InfeasiblePath, PathTimeLaw, TimeOptimalResult, time_optimal
from .paths import GeometricPath, as_path, line_path, spline_path
from .planning import PlannedSamples, plan_joint_trajectory, plan_samples
from .playback import PlaybackSamples, message_times, playback_samples
from .plot import plot_trajectory
from .profiles import (
    PROFILES,
    bang_bang,
    cubic,
    linear,
    minimum_time,
    quintic,
    smooth_trapezoid,
    trapezoid,
)
from .sampled import PATH_POSITION_TOLERANCE, PATH_RATE_TOLERANCE, SampledTrajectory, check_path_limits, peak_rates
from .task_space import TaskSpaceLine, axis_angle, task_space_line
from .time_scaling import (
    FittedSamples,
    TimeScalingResult,
    efforts_along,
    fit_samples_to_effort_limits,
    retime_points,
    retime_to_limits,
    scale_to_effort_limits,
)

__all__ = [
    "PATH_POSITION_TOLERANCE",
    "PATH_RATE_TOLERANCE",
    "PROFILES",
    "PlannedSamples",
    "PlaybackSamples",
    "FittedSamples",
    "GeometricPath",
    "InfeasiblePath",
    "PathTimeLaw",
    "TimeOptimalResult",
    "HermiteSegment",
    "PiecewiseTrajectory",
    "PointToPointTrajectory",
    "TimeScaledTrajectory",
    "SampledTrajectory",
    "TaskSpaceLine",
    "TimeScalingResult",
    "Trajectory",
    "as_path",
    "axis_angle",
    "bang_bang",
    "check_path_limits",
    "cubic",
    "efforts_along",
    "fit_samples_to_effort_limits",
    "line_path",
    "linear",
    "message_times",
    "minimum_time",
    "peak_rates",
    "plan_joint_trajectory",
    "plan_samples",
    "playback_samples",
    "plot_trajectory",
    "point_to_point",
    "quintic",
    "retime_points",
    "retime_to_limits",
    "scale_to_effort_limits",
    "smooth_trapezoid",
    "spline_path",
    "synchronized_timing",
    "task_space_line",
    "through_waypoints",
    "time_optimal",
    "trapezoid",
]
