"""Start, spin and stop one node cleanly, and keep it alive whatever its inputs.

* :func:`run_node`: SIGINT/SIGTERM/SIGHUP -> orderly shutdown; the node's ``on_shutdown()``
  runs while the context is still up.  A node that sets ``multithreaded = True`` is spun by a
  :class:`~rclpy.executors.MultiThreadedExecutor` (its callback groups decide what may overlap);
  one that sets ``executor_kind = "events"`` by rclpy's EventsExecutor (opt-in; falls back to the
  single-threaded executor where rclpy lacks it).
  An exception escaping a callback is logged and counted, never fatal.
* :class:`Refusals`: one log line per cause and period (our own rate limit: rclpy's
  ``throttle_duration_sec`` must never be mixed with unthrottled calls at one call site), and
  counters of every refusal by cause.
* :func:`guarded`: wraps a callback so that a bad message is refused with its cause and never
  raises into the executor.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import gc
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import ClockType
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg

from ..safety.refusal import Refused
from .cdr import CDRError, read_clock
from .gil_free_take import GilFreeExecutor, GilFreeSingleThreadedExecutor
from .request_gate import one_malloc_arena

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DUMP_SIGNAL = signal.SIGUSR1  # dumps the threads' stacks (faulthandler)


class Refusals:
    """Counts refusals by cause and logs each cause at most once per ``period`` seconds (steady clock)."""

    def __init__(self, node: Node, period: float = 5.0) -> None:
        self.node = node
        self.period = period
        self.counts: Counter[str] = Counter()
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self.latest: tuple[str, str] | None = None  # the last refusal (cause, text): a mode reason may cite it

    def refuse(self, cause: str, text: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.latest = (cause, text)
            self.counts[cause] += 1
            count = self.counts[cause]
            last = self._last.get(cause)
            if last is not None and now - last < self.period:
                return
            self._last[cause] = now
        suffix = f" ({count} so far)" if count > 1 else ""
        self.node.get_logger().warning(f"refused [{cause}]: {text}{suffix}")

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())


def guarded(refusals_attr: str = "refusals", cause: str = "callback") -> Callable:
    """Decorator for a node method used as a callback: :class:`Refused` and any other exception are
    logged through ``self.<refusals_attr>`` (rate-limited) and swallowed."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except Refused as exc:
                getattr(self, refusals_attr).refuse(exc.cause, str(exc))
            except Exception as exc:  # noqa: BLE001 - the node never dies on an input
                getattr(self, refusals_attr).refuse(f"{cause}_error", f"{fn.__name__}: {type(exc).__name__}: {exc}")
            return None

        return call

    return wrap


def _spin_until_stopped(executor: Any, node: Any, stop: threading.Event, prefix: str = "") -> None:
    """Spin ``executor`` until ``stop`` or shutdown; a callback's exception is logged (the first ten, then
    every thousandth) and never takes the node down."""
    failures = 0
    while rclpy.ok() and not stop.is_set():
        try:
            executor.spin_once(timeout_sec=0.05)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as exc:  # noqa: BLE001 - a callback's bug must not take the node down
            failures += 1
            if failures <= 10 or failures % 1000 == 0:
                node.get_logger().error(f"{prefix}callback raised {type(exc).__name__}: {exc} ({failures} so far)")


def own_participant() -> rclpy.Context:
    """A context of its own, so its own DDS participant, for a side node that takes huge requests: Fast DDS delivers
    a participant's traffic through shared receive resources, and a 10^6-point request arriving held up the
    process's other requests (and states) for 0.9-2.1 s in 2 of 6 runs (0 of 3 with a participant of its own,
    longest 30 ms).  :func:`run_node` spins a side node on it with an executor of that context and shuts it down
    after the node.  Its answers wait for discovery (:mod:`.late_answer`): a client that found the service through
    the node's participant may call before this one has matched the client's response reader."""
    context = rclpy.Context()
    rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
    return context


def _spin_side_nodes(node: Any, stop: threading.Event) -> list[tuple[threading.Thread, SingleThreadedExecutor, Any]]:
    """Spin each of ``node.side_nodes`` (helper nodes of the same process that carry one latency-critical
    entity each) with a single-threaded executor in its own thread: a call to that entity costs the
    executor's wait and dispatch only (about 0.1 ms), not the multithreaded executor's hand-off to its
    pool (about 1 ms per call measured with ``bench/bench_service.py``).  A side node with an ``executor_threads``
    attribute gets a multithreaded executor of that many threads instead (callbacks that wait, e.g. an action's
    execute callback following its goal)."""
    out = []
    for side_node in getattr(node, "side_nodes", ()):
        threads = getattr(side_node, "executor_threads", 0)
        side_executor = (GilFreeExecutor(num_threads=threads, context=side_node.context) if threads
                         else GilFreeSingleThreadedExecutor(context=side_node.context))
        side_executor.add_node(side_node)

        def spin(ex: SingleThreadedExecutor = side_executor, n: Any = side_node) -> None:
            try:
                _spin_until_stopped(ex, node, stop, f"{n.get_name()}: ")
            except (KeyboardInterrupt, ExternalShutdownException):
                return

        thread = threading.Thread(target=spin, name=f"spin {side_node.get_name()}", daemon=True)
        thread.start()
        out.append((thread, side_executor, side_node))
    return out


def _events_executor(node: Node) -> Any:
    """rclpy's EventsExecutor (rclpy.experimental), or a SingleThreadedExecutor where it is missing."""
    try:
        from rclpy.experimental.events_executor import EventsExecutor
    except ImportError:
        node.get_logger().warning("EventsExecutor not available in this rclpy: single-threaded executor instead")
        return SingleThreadedExecutor()
    return EventsExecutor()


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Create the node with ``factory`` and spin it until SIGINT/SIGTERM/SIGHUP; returns an exit code."""
    stop = threading.Event()
    side: list[tuple[threading.Thread, SingleThreadedExecutor, Any]] = []
    one_malloc_arena()  # before any thread: a huge request's freed buffers can be given back to the system
    # ``kill -USR1 <pid>``: every thread's Python stack to stderr (the node's log), the node going on: what a node that
    # does not answer is doing
    faulthandler.register(DUMP_SIGNAL, all_threads=True, chain=False)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    node = None
    code = 0
    executor = None
    try:
        node = factory()
        if getattr(node, "multithreaded", False):
            executor = GilFreeExecutor(num_threads=int(getattr(node, "executor_threads", 4)))
        elif getattr(node, "executor_kind", None) == "events":
            executor = _events_executor(node)
        else:
            executor = GilFreeSingleThreadedExecutor()
        executor.add_node(node)
        side = _spin_side_nodes(node, stop)
        # objects made at start-up never need the cyclic collector again: fewer, shorter GC pauses
        gc.collect()
        gc.freeze()
        _spin_until_stopped(executor, node, stop)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        print(f"node failed to start: {type(exc).__name__}: {exc}", flush=True)
        code = 1
    finally:
        if node is not None:
            hook = getattr(node, "on_shutdown", None)
            if hook is not None and rclpy.ok():
                try:
                    hook()
                except Exception as exc:  # shutdown must go on
                    node.get_logger().error(f"on_shutdown failed: {exc}")
            if executor is not None:
                executor.shutdown(timeout_sec=1.0)
            stop.set()
            for thread, side_executor, side_node in side if executor is not None else ():
                thread.join(timeout=1.0)
                side_executor.shutdown(timeout_sec=1.0)
                side_node.destroy_node()
                if side_node.context is not node.context:  # its own participant (own_participant)
                    side_node.context.try_shutdown()
            node.destroy_node()
        rclpy.try_shutdown()
    return code


class LatestWorker:
    """A daemon thread that runs ``fn`` on the latest item put; an item still waiting when a newer
    one arrives is superseded (counted in ``superseded``).  Keeps heavy input processing (trajectory
    checks, model builds) off the executor thread, with bounded memory whatever the input rate."""

    def __init__(self, fn: Callable[[Any], None], name: str) -> None:
        self.fn = fn
        self.superseded = 0
        self._item: Any = None
        self._has_item = False
        self._running = False
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._stop = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def put(self, item: Any) -> None:
        with self._lock:
            if self._has_item:
                self.superseded += 1
            self._item, self._has_item = item, True
        self._event.set()

    def busy(self) -> bool:
        """An item is waiting or being processed."""
        return self._has_item or self._running

    def _call(self, item: Any) -> None:
        self._running = True
        try:
            with contextlib.suppress(Exception):  # fn reports its own errors; the worker never dies
                self.fn(item)
        finally:
            self._running = False

    def _run(self) -> None:
        while not self._stop:
            if not self._event.wait(0.2):
                continue
            with self._lock:
                item, has_item = self._item, self._has_item
                self._item, self._has_item = None, False
                self._event.clear()
            if has_item and not self._stop:
                self._call(item)

    def stop(self) -> None:
        self._stop = True
        self._event.set()


SIM_TIME_POLL = 0.01  # s between two reads of /clock by a node that serves requests (not a control loop)


def poll_sim_time(node: Node, period: float = SIM_TIME_POLL) -> threading.Thread | None:
    """Sim time for a node that only needs it for stamps, timers and logs (the dynamics server): with
    ``use_sim_time``, rclpy's own /clock subscription is dropped (every /clock message cost a wake-up and a
    dispatch of the node's executor: a 500 Hz /clock took ~50 % of a core per idle node, measured with ``top``
    beside the MuJoCo arm) and a daemon thread takes the latest /clock every ``period`` s instead, as raw bytes on
    a hidden node no executor spins (depth 1, best effort), and sets the node clock from it (time advances in
    steps of ``period`` at most).  ``use_sim_time`` is then fixed at start (a change is refused with the reason).
    Returns the thread, or None without ``use_sim_time`` (or where rclpy's time source cannot be detached)."""
    if not bool(node.get_parameter("use_sim_time").value):
        return None
    time_source = getattr(node, "_time_source", None)
    if time_source is None or not hasattr(time_source, "detach_node"):
        return None
    time_source.detach_node()  # its /clock subscription; the node clock keeps ROS time override on
    clock = node.get_clock()

    def refuse(params: list) -> SetParametersResult:
        for p in params:
            if p.name == "use_sim_time" and not bool(p.value):
                return SetParametersResult(successful=False, reason="use_sim_time is fixed at start (restart the node)")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(refuse)

    def on_clock(raw: bytes) -> None:
        with contextlib.suppress(CDRError):  # not a clock: the next one
            clock.set_ros_time_override(Time(nanoseconds=read_clock(raw), clock_type=ClockType.ROS_TIME))

    polled = PolledSubscription(node, ClockMsg, "/clock", QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
                                on_clock, period, raw=True)
    node._sim_time_node = polled.node  # kept alive with the node
    node._sim_time_poll = polled  # its ``period`` may be changed while it runs (read before every wait)
    return polled.thread


class PolledSubscription:
    """A topic a node needs now and then (the arm's position when a plan starts from it), taken by a thread of its
    own every ``period`` s and on demand (:meth:`drain`), from a hidden node no executor spins: a 500 Hz
    ``joint_states`` dispatched by the executor message by message cost an idle trajectory_generator ~0.5 of a
    core, taken in batches a few per cent.  ``on_message`` gets every message taken, oldest first; the reader's
    history (``depth``) holds what arrives between two takes."""

    def __init__(self, node: Node, msg_type: Any, topic: str, qos: QoSProfile, on_message: Callable[[Any], None],
                 period: float, *, raw: bool = False) -> None:
        """``raw``: ``on_message`` gets the serialized bytes (no Python message is built)."""
        self.msg_type, self.on_message, self.period, self.raw = msg_type, on_message, period, raw
        self.node = Node(f"_{node.get_name()}_{topic.strip('/~').replace('/', '_')}", namespace=node.get_namespace(),
                         context=node.context, use_global_arguments=False, start_parameter_services=False,
                         enable_rosout=False)
        self.sub = self.node.create_subscription(msg_type, node.resolve_topic_name(topic), lambda _m: None, qos,
                                                 raw=raw)
        self._lock = threading.Lock()
        self._context = node.context
        self.thread = threading.Thread(target=self._run, name=f"poll_{topic}", daemon=True)
        self.thread.start()

    def drain(self) -> int:
        """Take every message waiting, hand each to ``on_message``; their count."""
        taken = 0
        with self._lock:
            while True:
                with self.sub.handle:
                    got = self.sub.handle.take_message(self.msg_type, self.raw)
                if got is None:
                    return taken
                taken += 1
                self.on_message(got[0])

    def _run(self) -> None:
        while self._context.ok():
            try:
                self.drain()
            except Exception:  # noqa: BLE001 - the node is shutting down (its handles destroyed)
                if not self._context.ok():
                    return
            time.sleep(self.period)
