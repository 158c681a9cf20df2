"""The controller's modes (``robot_dynamics_interfaces/ControllerState``'s ``MODE_*``), the state machine of
:mod:`.core`."""

from __future__ import annotations

NO_MODEL, NO_STATE, STALE, HOLDING, TRACKING = "no_model", "no_state", "stale", "holding", "tracking"

__all__ = ["HOLDING", "NO_MODEL", "NO_STATE", "STALE", "TRACKING"]
