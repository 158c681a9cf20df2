"""Action goal requests taken and answered with the GIL released: a huge FollowJointTrajectory goal no longer stalls
the controller's other threads (its control loop, its services) while rmw deserializes it.

rclpy's ``ActionServer.take_goal_request`` calls ``rcl_action_take_goal_request`` holding the GIL (~0.3-0.5 s per
10^6 trajectory points): the control loop thread of the controller waited that long, and a drive's watchdog braked
the arm.  :class:`GilFreeGoalTake` does the same steps through ctypes (which releases the GIL around a foreign call),
like :class:`~robot_dynamics.ros.gil_free_take.GilFreeTake` does for services: the request's C structure made by its
type support, the take (GIL released), the conversion by a
:class:`~robot_dynamics.ros.request_gate.RequestGate`'s class (an oversize goal becomes an ``Oversize`` marker).

The goal's header is then a :class:`GoalRequestId` (the C ``rmw_request_id_t``), not rclpy's pybind one, which has
no Python constructor; rclpy answers a goal with ``ActionServer.send_goal_response(header, response)`` (the pybind
class's method, called by rclpy's goal handling).  :func:`route_goal_responses` wraps that method once per process:
a :class:`GoalRequestId` is answered through its take (``rcl_action_send_goal_response``, GIL released), any other
header by rclpy's own method, unchanged.

It relies on rcl_action's C API (``rcl_action/action_server.h``, stable since Foxy) and on rclpy internals (the
action server's ``_handle.pointer``); :meth:`GilFreeGoalTake.attach` returns None where a piece is missing, and the
goals are then taken as rclpy does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from .gil_free_take import _TO_PY, RCL_RET_OK, RequestId, _loaded, _Support, capsule_pointer
from .late_answer import RETRIED, late_answer_log, send_or_retry

RCL_RET_ACTION_SERVER_TAKE_FAILED = (4201, 2201)  # no request: rcl/types.h (Kilted); rcl_action/types.h before


class GoalRequestId(RequestId):
    """The ``rmw_request_id_t`` of a goal taken by a :class:`GilFreeGoalTake` (``take`` answers it)."""

    take: GilFreeGoalTake


class GilFreeGoalTake:
    """Take and answer the goal requests of one rclpy ``ActionServer`` with the GIL released (module docstring):
    ``original_request`` is the action's own SendGoal request class (makes and frees the C structure),
    ``converting_request`` the class whose conversion makes the Python goal (a gate's: the points counted first)."""

    def __init__(self, server: Any, original_request: Any, converting_request: Any) -> None:
        lib = _loaded("librcl_action")
        self._take = lib.rcl_action_take_goal_request
        self._take.restype, self._take.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        self._send = lib.rcl_action_send_goal_response
        self._send.restype, self._send.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        self._reset = _loaded("librcutils").rcutils_reset_error
        self._reset.restype, self._reset.argtypes = None, ()
        self.handle = server._handle
        self.request = _Support(original_request)
        meta = type(converting_request)
        meta.__import_type_support__()
        self.request_to_py = _TO_PY(capsule_pointer(meta._CONVERT_TO_PY))
        self.response = _Support(server._action_type.Impl.SendGoalService.Response)
        self.taken = 0

    def take(self) -> tuple[GoalRequestId | None, Any]:
        """(header, request) of the next goal, (None, None) when there is none; the request may be the gate's
        ``Oversize`` or the exception its conversion raised."""
        message = self.request.create()
        if not message:
            raise MemoryError("could not allocate a goal request")
        try:
            header = GoalRequestId()
            with self.handle:
                ret = self._take(self.handle.pointer, ctypes.addressof(header), message)  # GIL released
            if ret in RCL_RET_ACTION_SERVER_TAKE_FAILED:
                self._reset()
                return None, None
            if ret != RCL_RET_OK:
                self._reset()
                raise RuntimeError(f"rcl_action_take_goal_request failed ({ret})")
            self.taken += 1
            header.take = self
            return header, self.request_to_py(message)
        finally:
            self.request.destroy(message)

    def send(self, header: GoalRequestId, response: Any) -> None:
        """Answer the goal ``header`` came with (rclpy's ``RCLError`` on failure, as rclpy's own method raises); an
        answer the client cannot receive yet goes again from a thread of its own (:mod:`.late_answer`)."""
        ret = send_or_retry(lambda: self._send_once(header, response), late_answer_log("goal service"))
        if ret not in (RCL_RET_OK, *RETRIED):
            raise _rclpy.RCLError(f"rcl_action_send_goal_response failed ({ret})")

    def _send_once(self, header: GoalRequestId, response: Any) -> int:
        message = self.response.create()
        if not message:
            raise MemoryError("could not allocate a goal response")
        try:
            if not self.response.from_py(response, message):
                raise TypeError(f"could not convert the goal response {type(response).__name__}")
            with self.handle:
                ret = self._send(self.handle.pointer, ctypes.addressof(header), message)  # GIL released
            if ret != RCL_RET_OK:
                self._reset()
            return ret
        finally:
            self.response.destroy(message)

    @classmethod
    def attach(cls, server: Any, original_request: Any, converting_request: Any) -> GilFreeGoalTake | None:
        """A take for ``server``'s goals (rclpy's goal answers routed, :func:`route_goal_responses`), or None where
        this rclpy/rcl_action differs (its goals are then taken as rclpy does)."""
        try:
            handle = getattr(server, "_handle", None)
            if not isinstance(handle, _rclpy.ActionServer) or not isinstance(handle.pointer, int):
                return None
            take = cls(server, original_request, converting_request)
            route_goal_responses()
        except (AttributeError, OSError, TypeError, ValueError):
            return None
        return take


def answered_late(original: Callable[[Any, Any, Any], None], what: str) -> Callable[[Any, Any, Any], None]:
    """``original(server, header, response)`` (an rclpy answer that raises ``RCLError`` when it cannot be sent)
    made to go again from a thread until the client can receive it (:mod:`.late_answer`)."""
    def send(self: Any, header: Any, response: Any) -> None:
        def once() -> int:
            try:
                original(self, header, response)
            except _rclpy.RCLError:
                return RETRIED[0]
            return RCL_RET_OK

        send_or_retry(once, late_answer_log(what))

    send.answered_late = True  # type: ignore[attr-defined]
    send.__doc__ = original.__doc__
    return send


def route_goal_responses() -> None:
    """Wrap rclpy's ``ActionServer.send_goal_response`` once per process: a :class:`GoalRequestId` is answered
    through its :class:`GilFreeGoalTake`, any other header by rclpy's own method; the result and cancel answers go
    again until the client can receive them (:func:`answered_late`: an action server on a participant of its own
    may answer before discovery has matched the client's readers)."""
    cls = _rclpy.ActionServer
    original = cls.send_goal_response
    if getattr(original, "routes_gil_free_goals", False):
        return

    def send_goal_response(self: Any, header: Any, response: Any) -> None:
        if isinstance(header, GoalRequestId):
            header.take.send(header, response)
        else:
            original(self, header, response)

    send_goal_response.routes_gil_free_goals = True  # type: ignore[attr-defined]
    send_goal_response.__doc__ = original.__doc__
    cls.send_goal_response = send_goal_response
    cls.send_result_response = answered_late(cls.send_result_response, "result service")
    cls.send_cancel_response = answered_late(cls.send_cancel_response, "cancel service")


__all__ = ["GilFreeGoalTake", "answered_late", "GoalRequestId", "RCL_RET_ACTION_SERVER_TAKE_FAILED", "route_goal_responses"]
