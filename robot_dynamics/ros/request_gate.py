"""Counting the points of a request before rclpy turns it into Python objects, and refusing it then.

rclpy has no serialized take for services and actions: it deserializes a request into rosidl's C structure,
then the message class's ``_CONVERT_TO_PY`` capsule (rosidl's C function) builds the Python message — for 10^6
trajectory points 6-10 s and ~1.2 GB, holding the GIL (every other thread of the node waits: other services, a
control loop) before any user code can look at the size.  A :class:`RequestGate` puts a function of its own
between the two: it reads the length of the points sequence in the C structure (a ctypes view of the structure's
head) and, above ``limit()``, returns an :class:`Oversize` marker instead of converting; otherwise it calls
rosidl's own conversion (the node sees the usual message class).  The C take itself remains (~0.3-0.5 s per
10^6 points).

It relies on rclpy 9.x internals (the executor and the action server pass the message class to
``take_request``/``take_goal_request``, which calls the metaclass's ``_CONVERT_TO_PY``) and on rosidl's C layout
of the message's head, so every gate is checked on a serialized probe message (the count read and the message
converted back equal) before use; when the probe fails, nothing is gated (the callback's own size check applies
after the conversion).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rclpy.serialization import deserialize_message, serialize_message

from .gil_free_take import GilFreeTake
from .gil_free_take import capsule_pointer as _capsule_pointer


class Oversize:
    """What a gate hands on instead of a request with more points than its limit (no Python message made)."""

    __slots__ = ("counted", "points")

    def __init__(self, points: int) -> None:
        self.points = points
        self.counted = time.perf_counter()

    def __repr__(self) -> str:
        return f"Oversize({self.points} points)"


class Sequence_(ctypes.Structure):  # noqa: N801 - rosidl's name for it
    """A rosidl C sequence (and ``rosidl_runtime_c__String``): data pointer, size, capacity."""

    _fields_ = (("data", ctypes.c_void_p), ("size", ctypes.c_size_t), ("capacity", ctypes.c_size_t))


class _Time(ctypes.Structure):
    _fields_ = (("sec", ctypes.c_int32), ("nanosec", ctypes.c_uint32))


class _Header(ctypes.Structure):
    _fields_ = (("stamp", _Time), ("frame_id", Sequence_))


class JointTrajectoryHead(ctypes.Structure):
    """``trajectory_msgs/JointTrajectory``: header, joint_names, points."""

    _fields_ = (("header", _Header), ("joint_names", Sequence_), ("points", Sequence_))


class _UUID(ctypes.Structure):
    _fields_ = (("uuid", ctypes.c_uint8 * 16),)


class NamesAndPoints(ctypes.Structure):
    """Requests that start with ``string[] joint_names`` and a point sequence (InverseDynamics, PlanTrajectory)."""

    _fields_ = (("joint_names", Sequence_), ("points", Sequence_))


class TrajectoryFirst(ctypes.Structure):
    """Requests whose first field is a ``trajectory_msgs/JointTrajectory`` (TimeScale)."""

    _fields_ = (("trajectory", JointTrajectoryHead),)


class GoalOfTrajectory(ctypes.Structure):
    """An action's SendGoal request whose goal starts with a JointTrajectory (FollowJointTrajectory)."""

    _fields_ = (("goal_id", _UUID), ("trajectory", JointTrajectoryHead))


_CONVERT_TO_PY = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p)  # PyObject *convert_to_py(void *ros_message)


def _new_capsule(pointer: int) -> Any:
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return new(pointer, None, None)


class RequestGate:
    """A message class like ``message_type`` whose conversion from C counts the points first (see the module
    docstring): ``head`` is the ctypes layout of the C structure's head, ``path`` the field names down to the
    point sequence (e.g. ``("trajectory", "points")``), ``limit()`` the largest count converted."""

    def __init__(self, message_type: Any, head: type[ctypes.Structure], path: Sequence[str],
                 limit: Callable[[], int]) -> None:
        meta = type(message_type)
        meta.__import_type_support__()
        convert = _CONVERT_TO_PY(_capsule_pointer(meta._CONVERT_TO_PY))
        self.limit = limit
        self.last_count = -1
        self.refused = 0
        self.message_type = message_type

        def gate(message: int) -> Any:
            try:
                node: Any = head.from_address(message)
                for name in path:
                    node = getattr(node, name)
                count = int(node.size)
                self.last_count = count
                if count > self.limit():
                    self.refused += 1
                    return Oversize(count)
                return convert(message)
            except BaseException as exc:  # noqa: BLE001 - an exception must never cross the C boundary
                return exc

        self._gate = _CONVERT_TO_PY(gate)  # kept alive as long as the gate
        capsule = _new_capsule(ctypes.cast(self._gate, ctypes.c_void_p).value)

        class GatedMeta(meta):  # type: ignore[misc, valid-type]
            _CONVERT_TO_PY = capsule

            @classmethod
            def __import_type_support__(cls) -> None:  # the capsule above, not rosidl's
                return None

        class Gated(message_type, metaclass=GatedMeta):  # type: ignore[misc, valid-type]
            __slots__ = ()

        self.gated_type = Gated

    def probe(self, message: Any, points: int) -> bool:
        """True when the gate reads ``points`` in the serialized ``message`` and converts it back equal to it."""
        try:
            back = deserialize_message(serialize_message(message), self.gated_type)
        except Exception:  # noqa: BLE001
            return False
        return self.last_count == points and type(back) is self.message_type and back == message

    @classmethod
    def make(cls, message_type: Any, head: type[ctypes.Structure], path: Sequence[str], limit: Callable[[], int],
             probe: Any, points: int) -> RequestGate | None:
        """A checked gate (its probe ``probe`` holds ``points`` points), or None when this rclpy/rosidl differs."""
        try:
            gate = cls(message_type, head, path, limit)
        except Exception:  # noqa: BLE001 - rclpy or rosidl internals differ: no gate
            return None
        return gate if gate.probe(probe, points) else None

    @classmethod
    def install(cls, service: Any, head: type[ctypes.Structure], path: Sequence[str], limit: Callable[[], int],
                probe: Any, points: int) -> RequestGate | None:
        """Gate an rclpy ``service``: the executor then takes its requests with the gated class (an oversize one
        reaches the callback as an :class:`Oversize`, a convertible-but-failing one as the exception)."""
        srv_type = service.srv_type
        gate = cls.make(srv_type.Request, head, path, limit, probe, points)
        if gate is not None:
            service.srv_type = type(srv_type.__name__, (), {"Request": gate.gated_type, "Response": srv_type.Response,
                                                             "Event": getattr(srv_type, "Event", None)})
        GilFreeTake.attach(service, srv_type.Request)  # the C take without the GIL, under runtime's executors
        return gate


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere)."""
    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None).malloc_trim(0)



M_ARENA_MAX = -8  # glibc malloc.h


def one_malloc_arena() -> bool:
    """Limit this process to glibc's main malloc arena from now on (``mallopt(M_ARENA_MAX, 1)``; True when set).
    A fallback only: arenas made before the call (imports start threads) stay and new threads may be given one of
    them, whose freed top ``malloc_trim`` never returns; the nodes get ``MALLOC_ARENA_MAX=1`` at exec
    (``node_set.NODE_ENVIRONMENT``), which leaves one arena from the start."""
    try:
        return bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1))
    except (AttributeError, OSError):
        return False


READER_MEMORY_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com"><profiles>
  <data_reader profile_name="robot_dynamics_readers" is_default_profile="true">
    <historyMemoryPolicy>DYNAMIC</historyMemoryPolicy>
  </data_reader>
</profiles></dds>
"""


def reader_memory_profile(environ: dict[str, str] | Any = os.environ) -> str | None:
    """Fast DDS readers of this process that free each sample's buffer once taken (``DYNAMIC`` history memory),
    not rmw_fastrtps's default that keeps the largest one for reuse (+164 MB after one 10^6-point request, for
    good).  Set through an XML profile file (a temporary file, removed at exit) and
    ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` (the QoS set in code still apply); nothing is changed when the
    environment already names a profile file or another RMW.  Returns the file written, or None."""
    if (environ.get("RMW_IMPLEMENTATION") or "rmw_fastrtps_cpp") != "rmw_fastrtps_cpp" or any(
            environ.get(k) for k in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE",
                                     "RMW_FASTRTPS_USE_QOS_FROM_XML")):
        return None
    fd, path = tempfile.mkstemp(prefix="robot_dynamics_readers_", suffix=".xml")
    with os.fdopen(fd, "w") as fh:
        fh.write(READER_MEMORY_PROFILE)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    environ["FASTDDS_DEFAULT_PROFILES_FILE"] = path
    environ["RMW_FASTRTPS_USE_QOS_FROM_XML"] = "1"
    return path


_TRIM_LOCK = threading.Lock()
_trim_until = 0.0  # steady time the running trim thread stops at (0: none running)


def trim_for(seconds: float = 2.0, period: float = 0.25) -> bool:
    """Trim the heap every ``period`` for ``seconds`` in a daemon thread (after a refused huge request: the DDS
    layer frees the sample's buffers shortly after the take).  One thread at most: a call while it runs extends
    its end (a flood of refused messages starts no thread per message).  True when a thread was started."""
    global _trim_until
    with _TRIM_LOCK:
        running = _trim_until > 0.0
        _trim_until = max(_trim_until, time.monotonic() + seconds)
        if running:
            return False

    def run() -> None:
        global _trim_until
        while True:
            trim_heap()
            time.sleep(period)
            with _TRIM_LOCK:
                if time.monotonic() >= _trim_until:
                    _trim_until = 0.0
                    return

    threading.Thread(target=run, name="trim_heap", daemon=True).start()
    return True


__all__ = ["GoalOfTrajectory", "JointTrajectoryHead", "NamesAndPoints", "Oversize", "RequestGate", "TrajectoryFirst",
           "one_malloc_arena", "reader_memory_profile", "trim_for", "trim_heap"]
