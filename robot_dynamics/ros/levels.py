"""The levels of ``diagnostic_msgs/DiagnosticStatus`` (its ``OK`` .. ``STALE`` constants), pure: the rules that
decide a level are tested without rclpy."""

from __future__ import annotations

OK, WARN, ERROR, STALE = 0, 1, 2, 3
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}
