"""Service requests taken and answered with the GIL released: a huge request no longer stalls the node's other
threads (its other services, a loop) while rmw deserializes it.

rclpy's ``Service.service_take_request`` calls ``rcl_take_request_with_info`` holding the GIL: rmw deserializes
the request into rosidl's C structure meanwhile (~0.3-0.5 s per 10^6 trajectory points), and every other thread of
the process waits.  :class:`GilFreeTake` does the same steps through ctypes, which releases the GIL around a
foreign call: the request's C structure made by its type support (``_CREATE_ROS_MESSAGE``), the take
(``rcl_take_request_with_info``, GIL released), the conversion by the service's request class (a
:class:`~robot_dynamics.ros.request_gate.RequestGate`'s: the points counted first, an oversize request becomes an
``Oversize`` marker), and the answer (``_CONVERT_FROM_PY``, then ``rcl_send_response``, GIL released).
:class:`GilFreeExecutor` (a :class:`~rclpy.executors.MultiThreadedExecutor`) takes the services that carry one this
way, any other as rclpy does.  The take runs in the executor's worker thread (rclpy's handler task), so the wait
loop and the other workers go on.

It relies on rcl's C API (stable: ``rcl/service.h``, ``rmw/types.h``) and on rclpy internals (``Service.handle``'s
``pointer``, the executor's ``_take_service``); :meth:`GilFreeTake.attach` returns None where any piece is missing,
and the service is then taken as rclpy does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Coroutine
from typing import Any

from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor, await_or_execute
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from .late_answer import RETRIED, late_answer_log, send_or_retry

RCL_RET_OK = 0
RCL_RET_SERVICE_TAKE_FAILED = 601
ATTRIBUTE = "_robot_dynamics_gil_free_take"  # the service's GilFreeTake, read by GilFreeExecutor


class RequestId(ctypes.Structure):
    """``rmw_request_id_t`` (rmw/types.h): the writer's GUID (RMW_GID_STORAGE_SIZE = 16) and a sequence number."""

    _fields_ = (("writer_guid", ctypes.c_uint8 * 16), ("sequence_number", ctypes.c_int64))


class ServiceInfo(ctypes.Structure):
    """``rmw_service_info_t`` (rmw/types.h)."""

    _fields_ = (("source_timestamp", ctypes.c_int64), ("received_timestamp", ctypes.c_int64),
                ("request_id", RequestId))


_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p)  # void *create_ros_message(void)
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void destroy_ros_message(void *)
_TO_PY = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p)  # PyObject *convert_to_py(void *)
_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_bool, ctypes.py_object, ctypes.c_void_p)  # bool convert_from_py(PyObject *, void *)


def capsule_pointer(capsule: Any) -> int:
    """The pointer a PyCapsule holds (rosidl's type-support functions)."""
    get_name, get_pointer = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
    get_name.restype, get_name.argtypes = ctypes.c_char_p, (ctypes.py_object,)
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
    return int(get_pointer(capsule, get_name(capsule)))


def _loaded(name: str) -> ctypes.CDLL:
    """The library ``name`` (e.g. ``librcl``) rclpy loaded (its path from this process's maps; the name alone
    where that fails)."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.rsplit(None, 1)[-1]
                if path.endswith(f"/{name}.so") or f"/{name}.so." in path:
                    return ctypes.CDLL(path)
    except OSError:
        pass
    return ctypes.CDLL(f"{name}.so")


class _Support:
    """A message class's rosidl functions, as ctypes callables."""

    def __init__(self, message_type: Any) -> None:
        meta = type(message_type)
        meta.__import_type_support__()
        self.create = _CREATE(capsule_pointer(meta._CREATE_ROS_MESSAGE))
        self.destroy = _DESTROY(capsule_pointer(meta._DESTROY_ROS_MESSAGE))
        self.to_py = _TO_PY(capsule_pointer(meta._CONVERT_TO_PY))
        self.from_py = _FROM_PY(capsule_pointer(meta._CONVERT_FROM_PY))


class GilFreeTake:
    """Take and answer the requests of one rclpy service with the GIL released (module docstring)."""

    def __init__(self, service: Any, original_request: Any) -> None:
        lib = _loaded("librcl")
        self._take = lib.rcl_take_request_with_info
        self._take.restype, self._take.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        self._send = lib.rcl_send_response
        self._send.restype, self._send.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        self._reset = _loaded("librcutils").rcutils_reset_error  # rcl_reset_error is a macro of it
        self._reset.restype, self._reset.argtypes = None, ()
        self.service = service
        self.request = _Support(original_request)  # makes and frees the C structure
        meta = type(service.srv_type.Request)  # converts it: a gate's class counts the points first
        meta.__import_type_support__()
        self.request_to_py = _TO_PY(capsule_pointer(meta._CONVERT_TO_PY))
        self.response = _Support(service.srv_type.Response)
        self.taken = 0

    def take(self) -> tuple[Any, ServiceInfo | None]:
        """(request, info) of the next request, (None, None) when there is none; the request may be the gate's
        ``Oversize`` or the exception its conversion raised (the callback answers those)."""
        message = self.request.create()
        if not message:
            raise MemoryError("could not allocate a request")
        try:
            info = ServiceInfo()
            with self.service.handle:
                ret = self._take(self.service.handle.pointer, ctypes.addressof(info), message)  # GIL released
            if ret == RCL_RET_SERVICE_TAKE_FAILED:
                self._reset()
                return None, None
            if ret != RCL_RET_OK:
                self._reset()
                raise RuntimeError(f"rcl_take_request_with_info failed ({ret})")
            self.taken += 1
            return self.request_to_py(message), info
        finally:
            self.request.destroy(message)

    def send(self, response: Any, info: ServiceInfo) -> None:
        """Answer the request ``info`` came with (the conversion with the GIL, the send without); an answer the
        client cannot receive yet (discovery still matching its reader) goes again from a thread of its own
        (:mod:`.late_answer`)."""
        ret = send_or_retry(lambda: self._send_once(response, info), late_answer_log(self.service.srv_name))
        if ret not in (RCL_RET_OK, *RETRIED):
            raise RuntimeError(f"rcl_send_response failed ({ret})")

    def _send_once(self, response: Any, info: ServiceInfo) -> int:
        message = self.response.create()
        if not message:
            raise MemoryError("could not allocate a response")
        try:
            if not self.response.from_py(response, message):
                raise TypeError(f"could not convert the response {type(response).__name__}")
            with self.service.handle:
                ret = self._send(self.service.handle.pointer, ctypes.addressof(info.request_id), message)
            if ret != RCL_RET_OK:
                self._reset()
            return ret
        finally:
            self.response.destroy(message)

    @classmethod
    def attach(cls, service: Any, original_request: Any) -> GilFreeTake | None:
        """Take ``service``'s requests this way from now on (under :class:`GilFreeExecutor`); ``original_request``
        the service type's own Request class (a gate's class converts).  None where this rclpy/rcl differs (the
        service is then taken as rclpy does)."""
        try:
            if not isinstance(service.handle, _rclpy.Service) or not isinstance(service.handle.pointer, int):
                return None
            take = cls(service, original_request)
        except (AttributeError, OSError, TypeError, ValueError):
            return None
        setattr(service, ATTRIBUTE, take)
        return take


def _take_service(srv: Any, rclpy_take: Callable[[Any], Any]) -> Callable[[], Coroutine[None, None, None]] | None:
    take: GilFreeTake | None = getattr(srv, ATTRIBUTE, None)
    if take is None:
        return rclpy_take(srv)
    request, info = take.take()

    async def _execute() -> None:
        if info is None:
            return
        response = await await_or_execute(srv.callback, request, srv.srv_type.Response())
        take.send(response, info)

    return _execute


class GilFreeExecutor(MultiThreadedExecutor):
    """rclpy's multithreaded executor that takes a service carrying a :class:`GilFreeTake` through it."""

    def _take_service(self, srv: Any) -> Callable[[], Coroutine[None, None, None]] | None:
        return _take_service(srv, super()._take_service)


class GilFreeSingleThreadedExecutor(SingleThreadedExecutor):
    """rclpy's single-threaded executor that takes a service carrying a :class:`GilFreeTake` through it (the
    GIL released meanwhile for the process's other threads)."""

    def _take_service(self, srv: Any) -> Callable[[], Coroutine[None, None, None]] | None:
        return _take_service(srv, super()._take_service)


__all__ = ["capsule_pointer", "GilFreeExecutor", "GilFreeSingleThreadedExecutor", "GilFreeTake", "RequestId", "ServiceInfo"]
